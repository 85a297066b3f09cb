//! TLS 1.3 only, rustls with the `ring` provider (no cmake, no aws-lc build).

use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::{ClientConfig, RootCertStore, ServerConfig};

use crate::{Error, Result};

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// A server configuration from a PEM certificate chain and PEM private key: TLS 1.3 only.
pub fn server_config(cert_pem: &[u8], key_pem: &[u8]) -> Result<Arc<ServerConfig>> {
    let certs = CertificateDer::pem_slice_iter(cert_pem)
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|e| Error::Tls(format!("certificate PEM: {e}")))?;
    if certs.is_empty() {
        return Err(Error::Tls("no certificate in the PEM file".into()));
    }
    let key = PrivateKeyDer::from_pem_slice(key_pem)
        .map_err(|e| Error::Tls(format!("private key PEM: {e}")))?;
    let mut config = ServerConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| Error::Tls(e.to_string()))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| Error::Tls(e.to_string()))?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// A client configuration trusting exactly the CA certificates in `ca_pem`: TLS 1.3 only.
pub fn client_config(ca_pem: &[u8]) -> Result<ClientConfig> {
    let mut roots = RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(ca_pem) {
        let cert = cert.map_err(|e| Error::Tls(format!("CA PEM: {e}")))?;
        roots.add(cert).map_err(|e| Error::Tls(e.to_string()))?;
    }
    if roots.is_empty() {
        return Err(Error::Tls("no CA certificate in the PEM file".into()));
    }
    let mut config = ClientConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| Error::Tls(e.to_string()))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(config)
}

/// An HTTP client over [`client_config`], with `pool` idle connections per host and a
/// per-request timeout.
pub fn http_client(
    ca_pem: &[u8],
    pool: usize,
    timeout: std::time::Duration,
) -> Result<reqwest::Client> {
    reqwest::Client::builder()
        .use_preconfigured_tls(client_config(ca_pem)?)
        .pool_max_idle_per_host(pool)
        // Below the servers' default idle limit (30 s): a pooled connection is dropped here
        // before the server closes it, never reused as it closes.
        .pool_idle_timeout(std::time::Duration::from_secs(20))
        .timeout(timeout)
        .http1_only()
        .build()
        .map_err(|e| Error::Tls(e.to_string()))
}
