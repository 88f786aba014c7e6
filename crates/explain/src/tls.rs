//! TLS to the server as libpq does it, with rustls (pure Rust, so a static
//! binary stays possible; see docs/prediction.md).
//!
//! - `sslmode`: disable, allow (plain first, TLS if the server refuses
//!   that), prefer (libpq's default: TLS if the server offers it), require,
//!   verify-ca (the certificate chain, not the host name), verify-full (both).
//! - `sslrootcert` (default `~/.postgresql/root.crt`): as in libpq, when the
//!   file exists the server's chain is verified in every TLS mode; verify-ca
//!   and verify-full refuse to connect without it. `sslrootcert=system` uses
//!   no file and is refused (this build carries no system trust store).
//! - `sslcert`/`sslkey` (default `~/.postgresql/postgresql.crt` and
//!   `.key`): a client certificate, sent when the certificate file exists;
//!   the key file must not be readable by group or others (libpq's rule).
//! - `sslcrl` (default `~/.postgresql/root.crl`, read when it exists): a PEM
//!   file of revocation lists checked with the chain.
//! - A default file whose path cannot be looked at (HOME missing, not a
//!   directory such as `/dev/null`, not searchable) is absent, as in libpq
//!   (`crate::pgfiles::default_file_absent`). On a unix socket nothing here
//!   is read: libpq never uses TLS there ([`not_used`]).
//!
//! Stricter than libpq, on purpose: a file named explicitly (in the DSN, a
//! `PGSSL*` variable or the service file) that is missing is an error, not
//! silently skipped. Every file is read bounded ([`clockscope_system::input`]).

use crate::error::Error;
use crate::pgfiles::path_text;
use clockscope_system::escape::escape_untrusted;
use clockscope_system::input::{self, InputLimit};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::{CryptoProvider, WebPkiSupportedAlgorithms};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, CertificateRevocationListDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio_postgres_rustls::MakeRustlsConnect;

/// A PEM file (certificates, a key, revocation lists): 1 MiB, far above
/// any real chain or CRL a client is handed.
pub(crate) const PEM_FILE: InputLimit = InputLimit {
    kind: "PEM file",
    max_bytes: 1 << 20,
};

/// libpq's `sslmode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SslMode {
    Disable,
    Allow,
    Prefer,
    Require,
    VerifyCa,
    VerifyFull,
}

impl SslMode {
    /// Reads a libpq `sslmode` value given by `source`.
    pub fn parse(source: &str, value: &str) -> Result<SslMode, Error> {
        use SslMode::{Allow, Disable, Prefer, Require, VerifyCa, VerifyFull};
        [Disable, Allow, Prefer, Require, VerifyCa, VerifyFull]
            .into_iter()
            .find(|m| m.as_str() == value)
            .ok_or_else(|| {
                Error::Settings(format!(
                    "{source}: '{}' is not one of disable, allow, prefer, require, verify-ca, verify-full",
                    escape_untrusted(value)
                ))
            })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            SslMode::Disable => "disable",
            SslMode::Allow => "allow",
            SslMode::Prefer => "prefer",
            SslMode::Require => "require",
            SslMode::VerifyCa => "verify-ca",
            SslMode::VerifyFull => "verify-full",
        }
    }

    /// The client library's mode for the first attempt (allow starts
    /// without TLS).
    pub(crate) fn first_attempt(self) -> tokio_postgres::config::SslMode {
        use tokio_postgres::config::SslMode as M;
        match self {
            SslMode::Disable | SslMode::Allow => M::Disable,
            SslMode::Prefer => M::Prefer,
            SslMode::Require | SslMode::VerifyCa | SslMode::VerifyFull => M::Require,
        }
    }
}

/// A TLS file setting and where it came from (for messages).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Setting {
    pub value: String,
    /// `--dsn sslrootcert`, `PGSSLROOTCERT`, `service file ... sslrootcert`.
    pub source: String,
}

/// The TLS settings gathered from the DSN, the environment and the service.
#[derive(Clone, Debug, Default)]
pub(crate) struct TlsSettings {
    pub mode: Option<SslMode>,
    pub root_cert: Option<Setting>,
    pub cert: Option<Setting>,
    pub key: Option<Setting>,
    pub crl: Option<Setting>,
}

/// How the server's certificate is checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verification {
    /// Encryption only (no root certificate file).
    None,
    /// The chain up to `sslrootcert`, not the host name.
    Chain,
    /// The chain and the host name.
    ChainAndName,
}

/// The resolved TLS plan for a connection.
#[derive(Clone)]
pub struct Tls {
    pub mode: SslMode,
    pub verification: Verification,
    /// The root certificate file used, if any.
    pub root_cert: Option<PathBuf>,
    /// The client certificate file sent, if any.
    pub client_cert: Option<PathBuf>,
    /// The revocation list file checked with the server's chain, if any.
    pub crl: Option<PathBuf>,
    connector: MakeRustlsConnect,
}

impl std::fmt::Debug for Tls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tls")
            .field("mode", &self.mode)
            .field("verification", &self.verification)
            .field("root_cert", &self.root_cert)
            .field("client_cert", &self.client_cert)
            .field("crl", &self.crl)
            .finish()
    }
}

impl Tls {
    /// The connector handed to the client library (cheap to clone).
    pub(crate) fn connector(&self) -> MakeRustlsConnect {
        self.connector.clone()
    }

    /// `sslmode=... (...)` for the report's server line.
    pub fn describe(&self) -> String {
        let check = match self.verification {
            Verification::None => "no certificate check",
            Verification::Chain => "certificate chain checked",
            Verification::ChainAndName => "certificate chain and host name checked",
        };
        format!("sslmode={} ({check})", self.mode.as_str())
    }
}

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// `home`/.postgresql/`name`, libpq's default location.
fn default_path(home: Option<&Path>, name: &str) -> Option<PathBuf> {
    home.map(|h| h.join(".postgresql").join(name))
}

/// Reads a file named by `setting` (or the default path): `None` when the
/// default file does not exist; an error naming the setting otherwise.
fn read_pem(
    setting: Option<&Setting>,
    default: Option<PathBuf>,
    what: &str,
) -> Result<Option<(PathBuf, Vec<u8>)>, Error> {
    let (path, source) = match setting {
        Some(s) => (PathBuf::from(&s.value), s.source.clone()),
        None => match default {
            // A default whose path cannot be looked at (HOME=/dev/null,
            // missing, not searchable) is absent, as in libpq.
            Some(p) if crate::pgfiles::default_file_absent(&p).unwrap_or(false) => return Ok(None),
            Some(p) => (p, format!("{what} (default)")),
            None => return Ok(None),
        },
    };
    match input::read_bytes(&path, &PEM_FILE) {
        Ok(bytes) => Ok(Some((path, bytes))),
        Err(e) if e.is_not_found() && setting.is_none() => Ok(None),
        Err(e) => Err(Error::Settings(format!("{source}: {e}"))),
    }
}

fn bad_pem(source: &str, path: &Path, what: &str) -> Error {
    Error::Settings(format!("{source}: {}: no {what} in it (PEM expected)", path_text(path)))
}

fn source_of(setting: Option<&Setting>, what: &str) -> String {
    setting
        .map(|s| s.source.clone())
        .unwrap_or_else(|| format!("{what} (default)"))
}

/// libpq's rule for a private key file: no group or world access (0640 is
/// allowed when root owns it).
fn check_key_permissions(path: &Path, source: &str) -> Result<(), Error> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(path).map_err(|e| Error::Settings(format!("{source}: {}: {e}", path_text(path))))?;
    let forbidden = if meta.uid() == 0 { 0o037 } else { 0o077 };
    if meta.mode() & forbidden == 0 {
        return Ok(());
    }
    Err(Error::Settings(format!(
        "{source}: private key file \"{}\" has group or world access; file must have permissions u=rw (0600) or \
         less if owned by the current user, or permissions u=rw,g=r (0640) or less if owned by root",
        path_text(path)
    )))
}

/// The plan for a connection that never uses TLS (every host a unix
/// socket: libpq never negotiates TLS there, whatever `mode` says, and
/// reads none of its files): `mode` kept for the record, nothing read.
pub(crate) fn not_used(mode: Option<SslMode>) -> Result<Tls, Error> {
    let mut tls = plan(
        &TlsSettings {
            mode: Some(SslMode::Disable),
            ..TlsSettings::default()
        },
        None,
    )?;
    tls.mode = mode.unwrap_or(SslMode::Prefer);
    Ok(tls)
}

/// Builds the TLS plan: reads the root certificate, CRL and client
/// certificate files (bounded), checks the key's permissions. `home` is
/// where `~/.postgresql` is looked for.
pub(crate) fn plan(settings: &TlsSettings, home: Option<&Path>) -> Result<Tls, Error> {
    let mode = settings.mode.unwrap_or(SslMode::Prefer);
    let provider = provider();
    let builder = ClientConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()
        .map_err(|e| Error::Settings(format!("TLS: {e}")))?;
    let chain = if mode == SslMode::Disable {
        None
    } else {
        chain_check(settings, mode, home, &provider)?
    };
    let verification = match (&chain, mode) {
        (None, _) => Verification::None,
        (Some(_), SslMode::VerifyFull) => Verification::ChainAndName,
        (Some(_), _) => Verification::Chain,
    };
    let (root_cert, crl_file) = chain
        .as_ref()
        .map_or((None, None), |c| (Some(c.root_cert.clone()), c.crl.clone()));
    let verifier = ServerCheck {
        algorithms: provider.signature_verification_algorithms,
        chain: chain.map(|c| c.webpki),
        check_name: mode == SslMode::VerifyFull,
    };
    let builder = builder.dangerous().with_custom_certificate_verifier(Arc::new(verifier));
    let (config, client_cert) = match client_auth(settings, mode, home)? {
        Some((cert_path, certs, key)) => {
            let config = builder.with_client_auth_cert(certs, key).map_err(|e| {
                Error::Settings(format!(
                    "{}: {}: {e}",
                    source_of(settings.cert.as_ref(), "sslcert"),
                    path_text(&cert_path)
                ))
            })?;
            (config, Some(cert_path))
        }
        None => (builder.with_no_client_auth(), None),
    };
    Ok(Tls {
        mode,
        verification,
        root_cert,
        client_cert,
        crl: crl_file,
        connector: MakeRustlsConnect::new(config),
    })
}

/// The server's chain as `sslrootcert` (and `sslcrl`) check it, and the
/// files read.
struct Chain {
    webpki: Arc<WebPkiServerVerifier>,
    root_cert: PathBuf,
    crl: Option<PathBuf>,
}

/// The chain check for a mode other than disable: `None` (encryption only)
/// when there is no root certificate file and the mode does not verify;
/// an error when it does, or when `sslrootcert=system`.
fn chain_check(
    settings: &TlsSettings,
    mode: SslMode,
    home: Option<&Path>,
    provider: &Arc<CryptoProvider>,
) -> Result<Option<Chain>, Error> {
    if let Some(s) = settings.root_cert.as_ref().filter(|s| s.value == "system") {
        return Err(Error::Settings(format!(
            "{}=system: this build has no system trust store; name a root certificate file",
            s.source
        )));
    }
    let root_source = source_of(settings.root_cert.as_ref(), "sslrootcert");
    let Some((path, bytes)) = read_pem(
        settings.root_cert.as_ref(),
        default_path(home, "root.crt"),
        "sslrootcert",
    )?
    else {
        if matches!(mode, SslMode::VerifyCa | SslMode::VerifyFull) {
            let path = default_path(home, "root.crt")
                .map(|p| p.display().to_string())
                .unwrap_or_else(|| "~/.postgresql/root.crt".into());
            return Err(Error::Settings(format!(
                "sslmode={}: root certificate file \"{}\" does not exist; provide it (sslrootcert) \
                 or choose an sslmode that does not verify the server's certificate",
                mode.as_str(),
                escape_untrusted(&path)
            )));
        }
        return Ok(None);
    };
    let mut roots = RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(&bytes) {
        let cert = cert.map_err(|_| bad_pem(&root_source, &path, "certificate"))?;
        roots
            .add(cert)
            .map_err(|e| Error::Settings(format!("{root_source}: {}: {e}", path_text(&path))))?;
    }
    if roots.is_empty() {
        return Err(bad_pem(&root_source, &path, "certificate"));
    }
    let (crls, crl) = read_crls(settings, home)?;
    let webpki = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), Arc::clone(provider))
        .with_crls(crls)
        .build()
        .map_err(|e| Error::Settings(format!("{root_source}: {e}")))?;
    Ok(Some(Chain {
        webpki,
        root_cert: path,
        crl,
    }))
}

/// The revocation lists of `sslcrl` (default `~/.postgresql/root.crl`,
/// when it exists, as in libpq), and the file read.
fn read_crls(
    settings: &TlsSettings,
    home: Option<&Path>,
) -> Result<(Vec<CertificateRevocationListDer<'static>>, Option<PathBuf>), Error> {
    let crl_source = source_of(settings.crl.as_ref(), "sslcrl");
    let Some((crl_path, crl_bytes)) = read_pem(settings.crl.as_ref(), default_path(home, "root.crl"), "sslcrl")? else {
        return Ok((Vec::new(), None));
    };
    let crls = CertificateRevocationListDer::pem_slice_iter(&crl_bytes)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|_| bad_pem(&crl_source, &crl_path, "revocation list"))?;
    if crls.is_empty() {
        return Err(bad_pem(&crl_source, &crl_path, "revocation list"));
    }
    Ok((crls, Some(crl_path)))
}

/// The client certificate file, its certificates and its key, when the
/// certificate file exists (named, or at its default path).
type ClientAuth = (PathBuf, Vec<CertificateDer<'static>>, PrivateKeyDer<'static>);

/// The client certificate (`sslcert`, sent when its file exists, unless
/// `mode` is disable) and its key (`sslkey`, no group or world access).
fn client_auth(settings: &TlsSettings, mode: SslMode, home: Option<&Path>) -> Result<Option<ClientAuth>, Error> {
    let Some((cert_path, cert_bytes)) =
        read_pem(settings.cert.as_ref(), default_path(home, "postgresql.crt"), "sslcert")?
    else {
        return Ok(None);
    };
    if mode == SslMode::Disable {
        return Ok(None);
    }
    let cert_source = source_of(settings.cert.as_ref(), "sslcert");
    let certs = CertificateDer::pem_slice_iter(&cert_bytes)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|_| bad_pem(&cert_source, &cert_path, "certificate"))?;
    if certs.is_empty() {
        return Err(bad_pem(&cert_source, &cert_path, "certificate"));
    }
    let key_source = source_of(settings.key.as_ref(), "sslkey");
    let key_path = match &settings.key {
        Some(s) => PathBuf::from(&s.value),
        None => default_path(home, "postgresql.key").unwrap_or_default(),
    };
    let key_bytes =
        input::read_bytes(&key_path, &PEM_FILE).map_err(|e| Error::Settings(format!("{key_source}: {e}")))?;
    check_key_permissions(&key_path, &key_source)?;
    let key = PrivateKeyDer::from_pem_slice(&key_bytes).map_err(|_| bad_pem(&key_source, &key_path, "private key"))?;
    Ok(Some((cert_path, certs, key)))
}

/// How the server's certificate is checked: the webpki chain (with its
/// host-name check dropped for verify-ca, and for require/prefer/allow with
/// a root file, as libpq), or nothing (prefer/require/allow with no root
/// certificate file, as libpq). Either way the handshake's signatures are
/// verified with the provider's algorithms (as webpki's own verifier does),
/// so the peer holds the certificate's key. webpki checks the name only
/// after the chain (and the CRLs) verified, so a name error means the chain
/// was good.
#[derive(Debug)]
struct ServerCheck {
    algorithms: WebPkiSupportedAlgorithms,
    /// `None`: encryption only, no certificate check.
    chain: Option<Arc<WebPkiServerVerifier>>,
    check_name: bool,
}

impl ServerCertVerifier for ServerCheck {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let Some(webpki) = &self.chain else {
            return Ok(ServerCertVerified::assertion());
        };
        match webpki.verify_server_cert(end_entity, intermediates, server_name, ocsp, now) {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) if !self.check_name => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setting(value: &str, source: &str) -> Option<Setting> {
        Some(Setting {
            value: value.into(),
            source: source.into(),
        })
    }

    #[test]
    fn verify_modes_need_a_root_certificate() {
        let home = tempfile::tempdir().unwrap();
        for mode in [SslMode::VerifyCa, SslMode::VerifyFull] {
            let e = plan(
                &TlsSettings {
                    mode: Some(mode),
                    ..Default::default()
                },
                Some(home.path()),
            )
            .unwrap_err()
            .to_string();
            assert!(
                e.contains("root certificate file") && e.contains(".postgresql/root.crt"),
                "{e}"
            );
            assert!(e.starts_with(&format!("sslmode={}", mode.as_str())), "{e}");
        }
        // The others encrypt without a check.
        for mode in [SslMode::Allow, SslMode::Prefer, SslMode::Require] {
            let t = plan(
                &TlsSettings {
                    mode: Some(mode),
                    ..Default::default()
                },
                Some(home.path()),
            )
            .unwrap();
            assert_eq!(t.verification, Verification::None);
        }
    }

    #[test]
    fn named_files_that_are_missing_or_not_pem_are_one_line_errors() {
        let home = tempfile::tempdir().unwrap();
        let junk = home.path().join("junk.pem");
        std::fs::write(&junk, "not a certificate\n").unwrap();
        let cases = [
            (
                TlsSettings {
                    mode: Some(SslMode::Require),
                    root_cert: setting("/nonexistent/root.crt", "--dsn sslrootcert"),
                    ..Default::default()
                },
                "--dsn sslrootcert: /nonexistent/root.crt: No such file",
            ),
            (
                TlsSettings {
                    mode: Some(SslMode::VerifyFull),
                    root_cert: setting(junk.to_str().unwrap(), "PGSSLROOTCERT"),
                    ..Default::default()
                },
                "PGSSLROOTCERT: ",
            ),
            (
                TlsSettings {
                    mode: Some(SslMode::Prefer),
                    cert: setting("/nonexistent/client.crt", "PGSSLCERT"),
                    ..Default::default()
                },
                "PGSSLCERT: /nonexistent/client.crt: No such file",
            ),
            (
                TlsSettings {
                    mode: Some(SslMode::Prefer),
                    root_cert: setting("system", "--dsn sslrootcert"),
                    ..Default::default()
                },
                "--dsn sslrootcert=system: ",
            ),
        ];
        for (settings, want) in cases {
            let e = plan(&settings, Some(home.path())).unwrap_err().to_string();
            assert!(e.starts_with(want), "{e}");
            assert!(!e.contains('\n'), "{e}");
        }
    }

    #[test]
    fn sslmode_values_are_libpqs() {
        for v in ["disable", "allow", "prefer", "require", "verify-ca", "verify-full"] {
            assert_eq!(SslMode::parse("x", v).unwrap().as_str(), v);
        }
        assert_eq!(
            SslMode::parse("PGSSLMODE", "sometimes").unwrap_err().to_string(),
            "PGSSLMODE: 'sometimes' is not one of disable, allow, prefer, require, verify-ca, verify-full"
        );
    }
}
