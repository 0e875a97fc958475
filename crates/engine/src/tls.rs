//! TLS for connections: the client configuration built once per run, and how handshake
//! failures are classified.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use belier_stats::ErrorKind;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::{Resumption, WebPkiServerVerifier};
use rustls::crypto::{ring, WebPkiSupportedAlgorithms};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};

/// TLS settings of a run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TlsOptions {
    /// Skip certificate verification (self-signed test servers). The handshake still runs in
    /// full, so its cost is measured.
    pub insecure: bool,
    /// PEM certificates to trust instead of the system's roots.
    pub ca_pem: Option<Vec<u8>>,
    /// Client certificate chain and private key, PEM.
    pub client_cert_pem: Option<(Vec<u8>, Vec<u8>)>,
    /// Name to send in SNI and verify the certificate against, if not the URL's host.
    pub server_name: Option<String>,
    /// ALPN protocols to offer, in order of preference.
    pub alpn: Vec<Vec<u8>>,
    /// Let connections resume earlier TLS sessions (tickets, session ids). Off, every
    /// connection pays a full handshake, which is what a connection per request measures.
    pub resume: bool,
}

impl TlsOptions {
    /// The connector and server name of one connection of the caller's own to `host`, made
    /// as a run's connections are (trust, client certificate, SNI, ALPN): for what a command
    /// asks a server once before its run, such as a gRPC server's schema over reflection.
    pub fn connector(
        &self,
        host: &str,
    ) -> Result<(tokio_rustls::TlsConnector, ServerName<'static>), TlsSetupError> {
        let tls = Tls::new(self, host)?;
        Ok((tls.connector, tls.server_name))
    }
}

/// Why the TLS settings cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum TlsSetupError {
    /// A PEM input holds no usable item.
    #[error("{what}: {why}")]
    Pem {
        /// Which input.
        what: &'static str,
        /// What is wrong.
        why: String,
    },
    /// The name is not a valid DNS name or IP address.
    #[error("invalid TLS server name '{0}'")]
    ServerName(String),
    /// rustls refused the configuration.
    #[error("TLS configuration: {0}")]
    Config(#[from] rustls::Error),
    /// The certificate verifier could not be built from the trusted certificates.
    #[error("--cacert: {0}")]
    Verifier(String),
}

/// What a connection needs to start TLS.
#[derive(Clone)]
pub(crate) struct Tls {
    pub connector: tokio_rustls::TlsConnector,
    pub server_name: ServerName<'static>,
    /// Through an HTTP proxy: the `CONNECT` request that opens the tunnel to the origin.
    pub tunnel: Option<Vec<u8>>,
    /// Set once a server certificate was accepted as pinned.
    pinned: Arc<AtomicBool>,
}

impl TlsOptions {
    /// The client configuration these options make (trust, client certificate, ALPN,
    /// resumption), for a client of the caller's own that is not a run's connection (the run
    /// history's PostgreSQL connection).
    pub fn client_config(&self) -> Result<ClientConfig, TlsSetupError> {
        self.config().map(|(config, _)| config)
    }

    /// The client configuration, and the flag it sets once a server certificate was accepted
    /// as pinned (see [`PinnedOrChain`]).
    fn config(&self) -> Result<(ClientConfig, Arc<AtomicBool>), TlsSetupError> {
        let options = self;
        let provider = Arc::new(ring::default_provider());
        let builder = ClientConfig::builder_with_provider(Arc::clone(&provider))
            .with_safe_default_protocol_versions()?;
        let pinned = Arc::new(AtomicBool::new(false));
        let builder = if options.insecure {
            builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(AcceptAnyCertificate(
                    provider.signature_verification_algorithms,
                )))
        } else {
            let roots = Arc::new(roots(options.ca_pem.as_deref())?);
            let webpki = WebPkiServerVerifier::builder_with_provider(roots, Arc::clone(&provider))
                .build()
                .map_err(|e| TlsSetupError::Verifier(e.to_string()))?;
            match options.ca_pem.as_deref() {
                // Certificates given with --cacert may be the server's own, self-signed.
                Some(pem) => builder
                    .dangerous()
                    .with_custom_certificate_verifier(Arc::new(PinnedOrChain {
                        chain: webpki,
                        pinned: certificates(pem, "CA certificates")?,
                        used: Arc::clone(&pinned),
                    })),
                None => builder.with_webpki_verifier(webpki),
            }
        };
        let mut config = match &options.client_cert_pem {
            Some((cert, key)) => {
                let chain = certificates(cert, "client certificate")?;
                let key = PrivateKeyDer::from_pem_slice(key).map_err(|e| TlsSetupError::Pem {
                    what: "client key",
                    why: e.to_string(),
                })?;
                builder.with_client_auth_cert(chain, key)?
            }
            None => builder.with_no_client_auth(),
        };
        config.alpn_protocols.clone_from(&options.alpn);
        if !options.resume {
            config.resumption = Resumption::disabled();
        }
        Ok((config, pinned))
    }
}

impl Tls {
    /// Builds the client configuration for connections to `host`.
    pub(crate) fn new(options: &TlsOptions, host: &str) -> Result<Tls, TlsSetupError> {
        let (config, pinned) = options.config()?;
        let name = options.server_name.as_deref().unwrap_or(host);
        let server_name = ServerName::try_from(name.to_string())
            .map_err(|_| TlsSetupError::ServerName(name.to_string()))?;
        Ok(Tls {
            connector: tokio_rustls::TlsConnector::from(Arc::new(config)),
            server_name,
            tunnel: None,
            pinned,
        })
    }

    /// Connections reach `host:port` through the proxy they connect to, with `CONNECT`.
    pub(crate) fn through(
        mut self,
        tunnel: &crate::connection::tunnel::Tunnel,
        host: &str,
        port: u16,
    ) -> Tls {
        let host = if host.contains(':') {
            format!("[{host}]")
        } else {
            host.to_string()
        };
        self.tunnel = Some(crate::connection::tunnel::connect_request(
            &format!("{host}:{port}"),
            tunnel.proxy_authorization.as_deref(),
        ));
        self
    }

    /// Whether a server certificate was accepted as pinned by `--cacert` (see
    /// [`PinnedOrChain`]).
    pub(crate) fn pinned(&self) -> bool {
        self.pinned.load(Ordering::Relaxed)
    }
}

fn roots(ca_pem: Option<&[u8]>) -> Result<RootCertStore, TlsSetupError> {
    let mut roots = RootCertStore::empty();
    match ca_pem {
        Some(pem) => {
            for cert in certificates(pem, "CA certificates")? {
                roots.add(cert)?;
            }
        }
        None => {
            // System roots; unreadable ones are skipped, as every TLS client does.
            let found = rustls_native_certs::load_native_certs();
            roots.add_parsable_certificates(found.certs);
        }
    }
    Ok(roots)
}

fn certificates(
    pem: &[u8],
    what: &'static str,
) -> Result<Vec<CertificateDer<'static>>, TlsSetupError> {
    let certs = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| TlsSetupError::Pem {
            what,
            why: e.to_string(),
        })?;
    if certs.is_empty() {
        return Err(TlsSetupError::Pem {
            what,
            why: "no PEM certificate found".into(),
        });
    }
    Ok(certs)
}

/// `--insecure`: accepts any certificate but still checks the handshake signatures, so the
/// connection is encrypted and its cost is the real one.
#[derive(Debug)]
struct AcceptAnyCertificate(WebPkiSupportedAlgorithms);

impl ServerCertVerifier for AcceptAnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.0)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.0)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_schemes()
    }
}

/// `--cacert`: full verification of the server's chain against the given certificates, and,
/// when that fails, a server certificate that is byte for byte one of them (the usual
/// self-signed certificate, made with `openssl req -x509`, is a CA certificate used as the
/// server's own, which chain verification rightly refuses) accepted as pinned, provided it is
/// valid for the server's name. The handshake's signatures are checked either way. A pin is
/// an exact match, so it proves the server holds that certificate's key; its validity dates
/// are not checked, as with any pinned certificate.
#[derive(Debug)]
struct PinnedOrChain {
    chain: Arc<WebPkiServerVerifier>,
    pinned: Vec<CertificateDer<'static>>,
    used: Arc<AtomicBool>,
}

impl ServerCertVerifier for PinnedOrChain {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let refused = match self.chain.verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            now,
        ) {
            Ok(verified) => return Ok(verified),
            Err(e) => e,
        };
        if !self
            .pinned
            .iter()
            .any(|p| p.as_ref() == end_entity.as_ref())
        {
            return Err(refused);
        }
        let parsed = rustls::server::ParsedCertificate::try_from(end_entity)?;
        rustls::client::verify_server_name(&parsed, server_name)?;
        self.used.store(true, Ordering::Relaxed);
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.chain.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.chain.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.chain.supported_verify_schemes()
    }
}

/// Whether the connection's handshake resumed an earlier session.
pub(crate) fn resumed(conn: &rustls::ClientConnection) -> bool {
    conn.handshake_kind() == Some(rustls::HandshakeKind::Resumed)
}

/// The error kind of a failed handshake, if `e` carries a TLS error.
pub(crate) fn handshake_error_kind(e: &std::io::Error) -> Option<ErrorKind> {
    let tls = e.get_ref()?.downcast_ref::<rustls::Error>()?;
    Some(match tls {
        rustls::Error::InvalidCertificate(_) | rustls::Error::NoCertificatesPresented => {
            ErrorKind::TlsCertificate
        }
        rustls::Error::AlertReceived(_) => ErrorKind::TlsAlert,
        _ => ErrorKind::TlsProtocol,
    })
}

/// A description of the session: version, cipher suite and negotiated ALPN protocol, and
/// whether the certificate was accepted as pinned.
pub(crate) fn describe(conn: &rustls::ClientConnection, pinned: bool) -> String {
    let version = conn
        .protocol_version()
        .map_or("unknown version".to_string(), |v| {
            format!("{v:?}").replace("TLSv1_", "TLSv1.")
        });
    let cipher = conn
        .negotiated_cipher_suite()
        .map_or("unknown cipher".to_string(), |c| format!("{:?}", c.suite()));
    let alpn = conn.alpn_protocol().map_or("none".to_string(), |p| {
        String::from_utf8_lossy(p).into_owned()
    });
    let pin = if pinned {
        ", certificate pinned by --cacert (self-signed)"
    } else {
        ""
    };
    format!("{version}, {cipher}, ALPN {alpn}{pin}")
}
