//! The TLS test server's certificates, generated with rcgen: a CA that signs
//! the server's certificate (for `localhost`) and the client's (CN
//! [`CERT_ROLE`]), an unrelated CA, and two revocation lists; written (PEM)
//! into a temp dir the client side reads.

use super::CERT_ROLE;
use rcgen::{
    BasicConstraints, Certificate, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair, KeyUsagePurpose,
};
use std::path::PathBuf;

/// The serial number of the test server's certificate.
pub const SERVER_CERT_SERIAL: u64 = 0x5e_01;
/// The serial number of the test client's certificate.
pub const CLIENT_CERT_SERIAL: u64 = 0xc1_01;
/// A serial number no test certificate has (revoked by `crl-other-revoked.pem`).
pub const UNUSED_SERIAL: u64 = 0x0d_ead;

/// Certificates for a TLS test server, generated with rcgen, written (PEM)
/// into a temp dir the client side reads: `ca.crt` (signed the server's and
/// the client's), `other-ca.crt` (an unrelated CA), `client.crt` and
/// `client.key` (0600; CN [`CERT_ROLE`]).
pub struct TlsFiles {
    /// The temp dir holding the files.
    pub dir: tempfile::TempDir,
    /// The CA's certificate (also `ca.crt` in the dir).
    pub ca_cert_pem: String,
    pub(super) server_cert_pem: String,
    pub(super) server_key_pem: String,
}

fn err(e: rcgen::Error) -> String {
    format!("generating test certificates: {e}")
}

/// A self-signed CA named `name`.
fn ca(name: &str) -> Result<(Certificate, KeyPair), String> {
    let key = KeyPair::generate().map_err(err)?;
    let mut params = CertificateParams::new(Vec::<String>::new()).map_err(err)?;
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.distinguished_name.push(DnType::CommonName, name);
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    Ok((params.self_signed(&key).map_err(err)?, key))
}

/// A certificate (PEM) and its key (PEM) signed by `issuer`.
fn leaf(
    issuer: (&Certificate, &KeyPair),
    sans: Vec<String>,
    cn: &str,
    usage: ExtendedKeyUsagePurpose,
    serial: u64,
) -> Result<(String, String), String> {
    let key = KeyPair::generate().map_err(err)?;
    let mut params = CertificateParams::new(sans).map_err(err)?;
    params.serial_number = Some(serial.into());
    params.distinguished_name.push(DnType::CommonName, cn);
    params.extended_key_usages = vec![usage];
    let cert = params.signed_by(&key, issuer.0, issuer.1).map_err(err)?;
    Ok((cert.pem(), key.serialize_pem()))
}

/// A revocation list from `issuer` (PEM) revoking the serial `revoked`.
fn crl(issuer: (&Certificate, &KeyPair), revoked: u64) -> Result<String, String> {
    rcgen::CertificateRevocationListParams {
        this_update: rcgen::date_time_ymd(2025, 1, 1),
        next_update: rcgen::date_time_ymd(2100, 1, 1),
        crl_number: 1.into(),
        issuing_distribution_point: None,
        revoked_certs: vec![rcgen::RevokedCertParams {
            serial_number: revoked.into(),
            revocation_time: rcgen::date_time_ymd(2025, 1, 1),
            reason_code: Some(rcgen::RevocationReason::KeyCompromise),
            invalidity_date: None,
        }],
        key_identifier_method: rcgen::KeyIdMethod::Sha256,
    }
    .signed_by(issuer.0, issuer.1)
    .and_then(|c| c.pem())
    .map_err(err)
}

impl TlsFiles {
    pub(super) fn generate() -> Result<TlsFiles, String> {
        let (ca_cert, ca_key) = ca("clockscope test CA")?;
        let (other_ca, _) = ca("clockscope untrusted CA")?;
        let issuer = (&ca_cert, &ca_key);
        let (server_cert_pem, server_key_pem) = leaf(
            issuer,
            vec!["localhost".into()],
            "localhost",
            ExtendedKeyUsagePurpose::ServerAuth,
            SERVER_CERT_SERIAL,
        )?;
        let (client_cert, client_key) = leaf(
            issuer,
            vec![],
            CERT_ROLE,
            ExtendedKeyUsagePurpose::ClientAuth,
            CLIENT_CERT_SERIAL,
        )?;
        // Revocation lists from the CA: one revoking the server's
        // certificate, one revoking only a serial nobody holds.
        let (crl_server_revoked, crl_other_revoked) = (crl(issuer, SERVER_CERT_SERIAL)?, crl(issuer, UNUSED_SERIAL)?);
        let dir = tempfile::Builder::new()
            .prefix("clockscope-tls-")
            .tempdir()
            .map_err(|e| format!("temp dir: {e}"))?;
        let write = |name: &str, text: &str, mode: u32| -> Result<(), String> {
            use std::os::unix::fs::PermissionsExt;
            let path = dir.path().join(name);
            std::fs::write(&path, text).map_err(|e| format!("{}: {e}", path.display()))?;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode))
                .map_err(|e| format!("{}: {e}", path.display()))
        };
        write("ca.crt", &ca_cert.pem(), 0o644)?;
        write("other-ca.crt", &other_ca.pem(), 0o644)?;
        write("client.crt", &client_cert, 0o644)?;
        write("client.key", &client_key, 0o600)?;
        write("crl-server-revoked.pem", &crl_server_revoked, 0o644)?;
        write("crl-other-revoked.pem", &crl_other_revoked, 0o644)?;
        Ok(TlsFiles {
            ca_cert_pem: ca_cert.pem(),
            dir,
            server_cert_pem,
            server_key_pem,
        })
    }

    /// A file in the dir: `ca.crt`, `other-ca.crt`, `client.crt`, `client.key`,
    /// `crl-server-revoked.pem`, `crl-other-revoked.pem`.
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
}
