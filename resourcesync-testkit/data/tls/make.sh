#!/bin/sh
# How the test certificates here were made (once; they are valid for a hundred years):
# a CA, and a certificate it signs for 127.0.0.1 and localhost, with ECDSA P-256 keys.
# Tests trust ca.pem through SSL_CERT_FILE; a server presents server.pem with server.key.
set -e
cd "$(dirname "$0")"
openssl ecparam -name prime256v1 -genkey -noout -out ca.key.sec1
openssl pkcs8 -topk8 -nocrypt -in ca.key.sec1 -out ca.key
rm ca.key.sec1
openssl req -x509 -new -key ca.key -sha256 -days 36500 -subj "/CN=resourcesync-rs test CA" \
  -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
  -out ca.pem
openssl ecparam -name prime256v1 -genkey -noout -out server.key.sec1
openssl pkcs8 -topk8 -nocrypt -in server.key.sec1 -out server.key
rm server.key.sec1
openssl req -new -key server.key -subj "/CN=127.0.0.1" -out server.csr
printf '%s\n' "basicConstraints=critical,CA:FALSE" "keyUsage=critical,digitalSignature" \
  "extendedKeyUsage=serverAuth" "subjectAltName=IP:127.0.0.1,DNS:localhost" > server.ext
openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -sha256 \
  -days 36500 -extfile server.ext -out server.pem
rm server.csr server.ext ca.srl ca.key
