//! The recorder's certificate authority: made once and kept in a directory the user chooses to
//! trust (so trusting it once lasts), and a certificate minted per host on the fly for the
//! HTTPS a client sends through `CONNECT`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose,
};
use rustls::ServerConfig;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

use crate::error::RecordError;

/// File name of the CA certificate (PEM), the one to trust.
pub const CA_CERT_FILE: &str = "belier-recorder-ca.pem";
/// File name of the CA key (PEM, readable by its owner only).
pub const CA_KEY_FILE: &str = "belier-recorder-ca.key";

/// The CA and the TLS settings minted so far, by host.
pub(crate) struct Authority {
    issuer: Issuer<'static, KeyPair>,
    cert_path: PathBuf,
    minted: Mutex<HashMap<String, Arc<ServerConfig>>>,
}

fn ca_params() -> CertificateParams {
    let mut params = CertificateParams::default();
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, "belier recorder CA");
    dn.push(DnType::OrganizationName, "belier");
    params.distinguished_name = dn;
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    params
}

fn tls_error(e: impl std::fmt::Display) -> RecordError {
    RecordError::Tls(e.to_string())
}

impl Authority {
    /// The CA in `dir`: read if its files are there, else made and written there.
    pub(crate) fn load_or_create(dir: &Path) -> Result<Authority, RecordError> {
        let cert_path = dir.join(CA_CERT_FILE);
        let key_path = dir.join(CA_KEY_FILE);
        let io = |path: &Path, e: std::io::Error| RecordError::Ca {
            path: path.to_path_buf(),
            why: e.to_string(),
        };
        let key = if key_path.exists() && cert_path.exists() {
            let pem = std::fs::read_to_string(&key_path).map_err(|e| io(&key_path, e))?;
            KeyPair::from_pem(&pem).map_err(|e| RecordError::Ca {
                path: key_path.clone(),
                why: e.to_string(),
            })?
        } else {
            std::fs::create_dir_all(dir).map_err(|e| io(dir, e))?;
            let key = KeyPair::generate().map_err(tls_error)?;
            let cert = ca_params().self_signed(&key).map_err(tls_error)?;
            write_private(&key_path, key.serialize_pem().as_bytes())
                .map_err(|e| io(&key_path, e))?;
            std::fs::write(&cert_path, cert.pem()).map_err(|e| io(&cert_path, e))?;
            key
        };
        // Signing needs only the CA's name and key: the same name as the certificate the user
        // trusts, so the certificates minted chain to it.
        Ok(Authority {
            issuer: Issuer::new(ca_params(), key),
            cert_path,
            minted: Mutex::new(HashMap::new()),
        })
    }

    /// Where the CA certificate is.
    pub(crate) fn cert_path(&self) -> &Path {
        &self.cert_path
    }

    /// TLS settings presenting a certificate for `host`, signed by the CA (made once per host).
    pub(crate) fn server_config(&self, host: &str) -> Result<Arc<ServerConfig>, RecordError> {
        let mut minted = self.minted.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(config) = minted.get(host) {
            return Ok(Arc::clone(config));
        }
        let mut params = CertificateParams::new(vec![host.to_string()]).map_err(tls_error)?;
        let mut dn = DistinguishedName::new();
        dn.push(DnType::CommonName, host);
        params.distinguished_name = dn;
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        params.use_authority_key_identifier_extension = true;
        let key = KeyPair::generate().map_err(tls_error)?;
        let cert = params.signed_by(&key, &self.issuer).map_err(tls_error)?;
        let chain = vec![CertificateDer::from(cert.der().to_vec())];
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(tls_error)?
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .map_err(tls_error)?;
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        let config = Arc::new(config);
        minted.insert(host.to_string(), Arc::clone(&config));
        Ok(config)
    }
}

/// Writes a file only its owner can read (the CA key signs for any host).
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write as _;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(0o600);
    }
    options.open(path)?.write_all(bytes)
}
