//! TLS: certificates, the rustls server configuration, and the handshake before a connection's
//! HTTP/1.1 handling.
//!
//! rustls runs on the ring provider, chosen explicitly rather than through the process-wide
//! default, so the server works whichever other providers the build happens to enable.

use std::fmt;
use std::io;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose,
};
use rustls::server::WebPkiClientVerifier;
use rustls::{RootCertStore, ServerConfig};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use tokio::io::AsyncWriteExt;
use tokio_rustls::server::TlsStream;
use tokio_rustls::TlsAcceptor;

use crate::connection::{self, Connection, OpenGuard, Transport, LINGER};
use crate::shared::Shared;
use crate::socket::Socket;

/// Buffer for draining a connection whose handshake failed.
const DRAIN_BUFFER_BYTES: usize = 4 * 1024;

/// How to serve HTTPS: see [`Config::tls`](crate::Config::tls).
#[derive(Clone, PartialEq, Eq)]
pub struct TlsConfig {
    /// The server's certificate chain in PEM, leaf first.
    pub cert_chain_pem: String,
    /// The leaf certificate's private key in PEM (PKCS#8, PKCS#1 or SEC1).
    pub key_pem: String,
    /// ALPN protocols the server accepts, most preferred first, e.g. `[b"http/1.1"]`. A client
    /// that offers ALPN but none of these fails the handshake; one that offers none is served.
    /// Empty: the server ignores ALPN.
    pub alpn: Vec<Vec<u8>>,
    /// When set, clients must present a certificate that chains to one of these CA
    /// certificates (PEM); the handshake fails for those that do not.
    pub client_ca_pem: Option<String>,
}

impl fmt::Debug for TlsConfig {
    /// Everything but the private key.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let alpn: Vec<_> = self
            .alpn
            .iter()
            .map(|p| String::from_utf8_lossy(p))
            .collect();
        f.debug_struct("TlsConfig")
            .field("cert_chain_pem", &self.cert_chain_pem)
            .field("key_pem", &"<redacted>")
            .field("alpn", &alpn)
            .field("client_ca_pem", &self.client_ca_pem)
            .finish()
    }
}

impl TlsConfig {
    /// A fresh CA and a leaf certificate for `names` signed by it, with ALPN `http/1.1` and no
    /// client certificates. Returns the configuration and the CA certificate (PEM) that clients
    /// should trust.
    ///
    /// Each name that parses as an IP address (`"127.0.0.1"`, `"::1"`) becomes an IP address
    /// subject alternative name, any other a DNS name (`"localhost"`). Keys are ECDSA P-256,
    /// generated anew on every call, so a client trusting one call's CA does not trust
    /// another's.
    ///
    /// # Panics
    /// If a name is neither an IP address nor an ASCII DNS name, or if the system's random
    /// number generator fails.
    pub fn self_signed(names: &[&str]) -> (TlsConfig, String) {
        let ca_key = KeyPair::generate().expect("generate the CA key");
        let mut ca_params = CertificateParams::default();
        ca_params.distinguished_name = common_name("belier test CA");
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let ca_cert = ca_params
            .self_signed(&ca_key)
            .expect("self-sign the CA certificate");
        let ca = Issuer::new(ca_params, ca_key);

        let names: Vec<String> = names.iter().map(|&name| name.to_owned()).collect();
        let mut params =
            CertificateParams::new(names).expect("names are IP addresses or DNS names");
        // Distinct from the CA's, or the leaf would look self-issued to path building.
        params.distinguished_name = common_name("belier test server");
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        params.use_authority_key_identifier_extension = true;
        let key = KeyPair::generate().expect("generate the server key");
        let cert = params
            .signed_by(&key, &ca)
            .expect("sign the server certificate");

        let config = TlsConfig {
            cert_chain_pem: cert.pem(),
            key_pem: key.serialize_pem(),
            alpn: vec![b"http/1.1".to_vec()],
            client_ca_pem: None,
        };
        (config, ca_cert.pem())
    }

    /// The SHA-256 fingerprint of the leaf certificate, as `openssl x509 -fingerprint -sha256`
    /// and browsers show it (`AB:CD:…`, 32 pairs); `None` when the chain holds no certificate.
    pub fn fingerprint_sha256(&self) -> Option<String> {
        let leaf = certificates(&self.cert_chain_pem, "cert_chain_pem")
            .ok()?
            .into_iter()
            .next()?;
        let digest = ring::digest::digest(&ring::digest::SHA256, leaf.as_ref());
        Some(
            digest
                .as_ref()
                .iter()
                .map(|b| format!("{b:02X}"))
                .collect::<Vec<_>>()
                .join(":"),
        )
    }

    /// The rustls acceptor for this configuration. With `http2`, `h2` is offered first.
    ///
    /// # Errors
    /// As [`TlsConfig::server_config`].
    pub(crate) fn acceptor(&self, http2: bool) -> io::Result<TlsAcceptor> {
        let mut config = self.server_config()?;
        config.alpn_protocols.clone_from(&self.alpn);
        if http2 && !config.alpn_protocols.iter().any(|p| p == b"h2") {
            config.alpn_protocols.insert(0, b"h2".to_vec());
        }
        Ok(TlsAcceptor::from(Arc::new(config)))
    }

    /// The rustls server configuration of the certificate, key and client CA, without ALPN
    /// (each transport sets its own: TCP's [`TlsConfig::alpn`], QUIC's `h3`).
    ///
    /// # Errors
    /// `InvalidInput`, saying what is wrong, for PEM that holds no usable certificate or key, a
    /// key that does not match the certificate, or an unusable client CA.
    pub(crate) fn server_config(&self) -> io::Result<ServerConfig> {
        let chain = certificates(&self.cert_chain_pem, "cert_chain_pem")?;
        let key = PrivateKeyDer::from_pem_slice(self.key_pem.as_bytes())
            .map_err(|err| invalid("key_pem", err))?;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = ServerConfig::builder_with_provider(Arc::clone(&provider))
            .with_safe_default_protocol_versions()
            .map_err(|err| invalid("protocol versions", err))?;
        let builder = match &self.client_ca_pem {
            None => builder.with_no_client_auth(),
            Some(pem) => {
                let mut roots = RootCertStore::empty();
                for cert in certificates(pem, "client_ca_pem")? {
                    roots
                        .add(cert)
                        .map_err(|err| invalid("client_ca_pem", err))?;
                }
                let verifier = WebPkiClientVerifier::builder_with_provider(roots.into(), provider)
                    .build()
                    .map_err(|err| invalid("client_ca_pem", err))?;
                builder.with_client_cert_verifier(verifier)
            }
        };
        builder
            .with_single_cert(chain, key)
            .map_err(|err| invalid("cert_chain_pem and key_pem", err))
    }
}

impl<S: Socket> Transport for TlsStream<S> {
    type Raw = S;
    fn raw(&mut self) -> &mut S {
        self.get_mut().0
    }
}

/// Runs the server side of the handshake on an accepted socket, then serves it as any other
/// connection.
pub(crate) async fn serve<S: Socket>(
    acceptor: TlsAcceptor,
    stream: S,
    shared: Arc<Shared>,
    seq: u64,
    open: OpenGuard,
) {
    match acceptor.accept(stream).into_fallible().await {
        Ok(tls) => {
            shared.counters.tls_handshakes.fetch_add(1, Relaxed);
            if tls.get_ref().1.alpn_protocol() == Some(b"h2") {
                crate::http2::serve(tls, shared, seq, open).await;
            } else {
                Connection::new(tls, shared, seq, open).run().await;
            }
        }
        Err((_, mut tcp)) => {
            shared.counters.tls_failures.fetch_add(1, Relaxed);
            // rustls has already tried to send its alert. Close with FIN and drain, as for
            // plain connections: dropping a socket with unread input (a plain HTTP request,
            // say) would send RST, and the client might lose the alert.
            if tcp.shutdown().await.is_ok() {
                let mut buf = vec![0; DRAIN_BUFFER_BYTES];
                let drain = connection::discard_until_eof(&mut tcp, &mut buf);
                let _ = tokio::time::timeout(LINGER, drain).await;
            }
            drop(tcp);
            drop(open);
        }
    }
}

/// Every certificate in `pem`; at least one.
fn certificates(pem: &str, field: &str) -> io::Result<Vec<CertificateDer<'static>>> {
    let certs = CertificateDer::pem_slice_iter(pem.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|err| invalid(field, err))?;
    if certs.is_empty() {
        return Err(invalid(field, "no CERTIFICATE section"));
    }
    Ok(certs)
}

pub(crate) fn invalid(field: &str, err: impl fmt::Display) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("invalid TLS configuration: {field}: {err}"),
    )
}

fn common_name(name: &str) -> DistinguishedName {
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, name);
    dn
}
