#!/bin/sh
# How the test certificates here were made (once): a CA, and a certificate it signs for
# 127.0.0.1 and localhost, ECDSA P-256 keys, valid from 2000 to 2126 (a start long past,
# so that a machine whose clock is behind the day they were made still takes them).
# Tests trust ca.pem through SSL_CERT_FILE; a server presents server.pem with server.key.
# The CA's key is not kept. `openssl ca`, for its -startdate (OpenSSL 3.0 has no other
# way to set a certificate's start).
set -e
cd "$(dirname "$0")"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat > "$work/ca.cnf" <<CNF
[ca]
default_ca = test
[test]
dir = $work
database = $work/index.txt
new_certs_dir = $work
serial = $work/serial
default_md = sha256
policy = any
copy_extensions = none
[any]
commonName = supplied
[ca_ext]
basicConstraints = critical,CA:TRUE
keyUsage = critical,keyCertSign,cRLSign
subjectKeyIdentifier = hash
[server_ext]
basicConstraints = critical,CA:FALSE
keyUsage = critical,digitalSignature
extendedKeyUsage = serverAuth
subjectAltName = IP:127.0.0.1,DNS:localhost
authorityKeyIdentifier = keyid
subjectKeyIdentifier = hash
CNF
: > "$work/index.txt"
echo 01 > "$work/serial"
key() {
  openssl ecparam -name prime256v1 -genkey -noout -out "$work/sec1"
  openssl pkcs8 -topk8 -nocrypt -in "$work/sec1" -out "$1"
}
key "$work/ca.key"
openssl req -new -key "$work/ca.key" -subj "/CN=resourcesync-rs test CA" -out "$work/ca.csr"
openssl ca -batch -config "$work/ca.cnf" -selfsign -keyfile "$work/ca.key" -in "$work/ca.csr" \
  -startdate 20000101000000Z -enddate 21260101000000Z -extensions ca_ext -notext -out ca.pem
key server.key
openssl req -new -key server.key -subj "/CN=127.0.0.1" -out "$work/server.csr"
openssl ca -batch -config "$work/ca.cnf" -cert ca.pem -keyfile "$work/ca.key" -in "$work/server.csr" \
  -startdate 20000101000000Z -enddate 21260101000000Z -extensions server_ext -notext -out server.pem
