//! A test CA and a certificate it signs for 127.0.0.1 and `localhost` (ECDSA P-256, valid
//! until 2126), in `data/tls/` (`make.sh` says how they were made): a server presents
//! the certificate ([`server_config`]); a client made to trust [`ca_file`] (a
//! `SSL_CERT_FILE` of it, for a client that reads the system's roots) accepts it, and
//! any other client refuses it.

use std::path::PathBuf;
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// The CA's certificate (PEM), which signed the server's.
pub fn ca_file() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("data/tls/ca.pem")
}

/// A server's TLS configuration (ring) with the certificate for 127.0.0.1, offering the
/// protocols `alpn` (`h2`, `http/1.1`) in that order of preference.
pub fn server_config(alpn: &[&[u8]]) -> rustls::ServerConfig {
    let certs: Vec<CertificateDer<'static>> =
        CertificateDer::pem_slice_iter(include_bytes!("../data/tls/server.pem"))
            .collect::<Result<_, _>>()
            .unwrap();
    let key = PrivateKeyDer::from_pem_slice(include_bytes!("../data/tls/server.key")).unwrap();
    let mut config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(certs, key)
    .unwrap();
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    config
}
