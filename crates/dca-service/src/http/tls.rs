//! TLS 1.3 only, rustls with the `ring` provider (no cmake, no aws-lc build).

use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::{ClientConfig, RootCertStore, ServerConfig};

pub use crate::error::cause_chain;
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
        return Err(Error::Tls(format!(
            "the certificate file holds no PEM certificate (`-----BEGIN CERTIFICATE-----`){}",
            if contains(cert_pem, b"PRIVATE KEY-----") {
                ": it is a private key; pass it as --key and the certificate as --cert"
            } else {
                ""
            }
        )));
    }
    let key = PrivateKeyDer::from_pem_slice(key_pem).map_err(|e| {
        let what = if contains(key_pem, b"-----BEGIN CERTIFICATE-----") {
            "it is a certificate; pass it as --cert and the private key as --key".to_string()
        } else if !contains(key_pem, b"-----BEGIN") {
            format!(
                "it is not PEM at all ({} bytes) — the node's HPKE key (hpke-x25519.key in --data-dir) is \
                 not the TLS key; the TLS key is the PEM `PRIVATE KEY` made with the certificate \
                 (scripts/make-dev-certs.sh)",
                key_pem.len()
            )
        } else {
            e.to_string()
        };
        Error::Tls(format!("the TLS private key file: {what}"))
    })?;
    let mut config = ServerConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| Error::Tls(e.to_string()))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| Error::Tls(e.to_string()))?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
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

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair, SanType};

    /// (CA PEM, leaf certificate PEM, leaf key PEM) with the leaf valid for `ip`.
    pub(crate) fn pki(ip: &str) -> (String, String, String) {
        pki_named(ip, "dpdist test CA")
    }

    fn pki_named(ip: &str, ca_name: &str) -> (String, String, String) {
        let ca_key = KeyPair::generate().unwrap();
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca_params
            .distinguished_name
            .push(rcgen::DnType::CommonName, ca_name);
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let ca = ca_params.self_signed(&ca_key).unwrap();
        let key = KeyPair::generate().unwrap();
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params
            .subject_alt_names
            .push(SanType::IpAddress(ip.parse().unwrap()));
        let cert = params.signed_by(&key, &ca, &ca_key).unwrap();
        (ca.pem(), cert.pem(), key.serialize_pem())
    }

    /// A TLS server on 127.0.0.1 that only handshakes; returns its URL.
    async fn tls_server(cert: &str, key: &str) -> String {
        let config = server_config(cert.as_bytes(), key.as_bytes()).unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("https://{}/", listener.local_addr().unwrap());
        let acceptor = tokio_rustls::TlsAcceptor::from(config);
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                let _ = acceptor.accept(tcp).await;
            }
        });
        url
    }

    async fn error_of(ca: &str, url: &str) -> String {
        let http = http_client(ca.as_bytes(), 1, std::time::Duration::from_secs(10)).unwrap();
        let e = http.get(url).send().await.unwrap_err();
        crate::Error::from(e).to_string()
    }

    #[tokio::test]
    async fn connection_errors_carry_their_cause_not_only_the_url() {
        let (ca, cert, key) = pki("127.0.0.1");
        let url = tls_server(&cert, &key).await;
        // Another CA: by another name (unknown issuer) and by the same name (bad signature).
        for other_name in ["another CA", "dpdist test CA"] {
            let (other_ca, _, _) = pki_named("127.0.0.1", other_name);
            let e = error_of(&other_ca, &url).await;
            assert!(e.contains("invalid peer certificate"), "{e}");
            assert!(e.contains("does not chain to the --ca certificate"), "{e}");
        }

        let (ca2, cert2, key2) = pki("127.0.0.2");
        let url2 = tls_server(&cert2, &key2).await;
        let e = error_of(&ca2, &url2).await;
        assert!(
            e.contains("not valid for name") && e.contains("make-dev-certs"),
            "{e}"
        );

        let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = closed.local_addr().unwrap().port();
        drop(closed);
        let e = error_of(&ca, &format!("https://127.0.0.1:{port}/")).await;
        assert!(e.to_lowercase().contains("connection refused"), "{e}");

        let plain = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let plain_url = format!("https://{}/", plain.local_addr().unwrap());
        tokio::spawn(async move {
            use tokio::io::{AsyncReadExt, AsyncWriteExt};
            while let Ok((mut tcp, _)) = plain.accept().await {
                let mut buf = [0u8; 512];
                let _ = tcp.read(&mut buf).await;
                let _ = tcp
                    .write_all(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n")
                    .await;
            }
        });
        let e = error_of(&ca, &plain_url).await;
        assert!(e.contains("plain HTTP"), "{e}");
    }

    #[test]
    fn a_key_file_that_is_not_a_tls_key_says_what_it_is() {
        let (_, cert, key) = pki("127.0.0.1");
        // hpke-x25519.key: the node's HPKE secret key, 64 hex digits.
        let hpke_key = "07".repeat(32);
        let e = server_config(cert.as_bytes(), hpke_key.as_bytes())
            .unwrap_err()
            .to_string();
        assert!(e.contains("HPKE") && e.contains("not PEM"), "{e}");
        let e = server_config(cert.as_bytes(), cert.as_bytes())
            .unwrap_err()
            .to_string();
        assert!(e.contains("it is a certificate"), "{e}");
        let e = server_config(key.as_bytes(), key.as_bytes())
            .unwrap_err()
            .to_string();
        assert!(e.contains("it is a private key"), "{e}");
    }

    #[tokio::test]
    async fn make_dev_certs_gives_a_pki_valid_for_127_0_0_1_and_localhost() {
        let dir = std::env::temp_dir().join(format!("dpdist-dev-certs-{}", std::process::id()));
        let script = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../scripts/make-dev-certs.sh"
        );
        let out = std::process::Command::new(script)
            .arg(&dir)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let read = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap();
        let (ca, cert, key) = (read("ca.pem"), read("server.pem"), read("server.key"));
        let url = tls_server(&cert, &key).await;
        let addr = url
            .trim_start_matches("https://")
            .trim_end_matches('/')
            .to_string();
        let connector =
            tokio_rustls::TlsConnector::from(Arc::new(client_config(ca.as_bytes()).unwrap()));
        for host in ["127.0.0.1", "localhost"] {
            let tcp = tokio::net::TcpStream::connect(&addr).await.unwrap();
            let name = rustls::pki_types::ServerName::try_from(host.to_string()).unwrap();
            let tls = connector.connect(name, tcp).await;
            assert!(tls.is_ok(), "{host}: {:?}", tls.err());
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
