//! Sending a request on to its origin: a new connection per request (a recorder carries one
//! person's clicks, not load), over TLS for HTTPS origins.

use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper_util::rt::TokioIo;
use rustls::{ClientConfig, RootCertStore};
use rustls_pki_types::{CertificateDer, ServerName};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

use crate::error::RecordError;

/// Longest response body forwarded.
const MAX_BODY: usize = 64 << 20;

pub(crate) struct Upstream {
    tls: TlsConnector,
}

/// A response read whole.
pub(crate) type Answer = (http::response::Parts, Bytes);

impl Upstream {
    /// Verifies origins against `ca_pem` (PEM certificates), or the system's roots.
    pub(crate) fn new(ca_pem: Option<&[u8]>) -> Result<Upstream, RecordError> {
        let mut roots = RootCertStore::empty();
        match ca_pem {
            Some(pem) => {
                use rustls_pki_types::pem::PemObject as _;
                for cert in CertificateDer::pem_slice_iter(pem) {
                    let cert = cert.map_err(|e| RecordError::Tls(format!("upstream CA: {e}")))?;
                    roots
                        .add(cert)
                        .map_err(|e| RecordError::Tls(format!("upstream CA: {e}")))?;
                }
            }
            None => {
                roots.add_parsable_certificates(rustls_native_certs::load_native_certs().certs);
            }
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| RecordError::Tls(e.to_string()))?
            .with_root_certificates(roots)
            .with_no_client_auth();
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(Upstream {
            tls: TlsConnector::from(Arc::new(config)),
        })
    }

    /// Sends `request` (origin-form target, `Host` set) to `host:port` and reads the answer.
    pub(crate) async fn send(
        &self,
        https: bool,
        host: &str,
        port: u16,
        request: http::Request<Full<Bytes>>,
    ) -> Result<Answer, String> {
        let bare = host.trim_start_matches('[').trim_end_matches(']');
        let tcp = TcpStream::connect((bare, port))
            .await
            .map_err(|e| format!("cannot connect to {host}:{port}: {e}"))?;
        let _ = tcp.set_nodelay(true);
        if https {
            let name = ServerName::try_from(bare.to_string())
                .map_err(|e| format!("`{host}` is not a TLS server name: {e}"))?;
            let tls = self
                .tls
                .connect(name, tcp)
                .await
                .map_err(|e| format!("TLS with {host}:{port}: {e}"))?;
            exchange(tls, request).await
        } else {
            exchange(tcp, request).await
        }
    }
}

async fn exchange<S>(stream: S, request: http::Request<Full<Bytes>>) -> Result<Answer, String>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| format!("HTTP handshake: {e}"))?;
    tokio::spawn(connection);
    let response = sender
        .send_request(request)
        .await
        .map_err(|e| format!("the origin did not answer: {e}"))?;
    let (parts, body) = response.into_parts();
    let body = http_body_util::Limited::new(body, MAX_BODY)
        .collect()
        .await
        .map_err(|e| format!("reading the origin's answer: {e}"))?
        .to_bytes();
    Ok((parts, body))
}
