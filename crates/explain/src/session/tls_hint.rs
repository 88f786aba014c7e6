//! A TLS hint: a certificate failure at connect, said in libpq's terms.

use crate::connect::Target;
use crate::error::Error;
use crate::pgfiles::path_text;

/// A certificate failure, said in libpq's terms: which file did not vouch
/// for the server, or which sslmode checks the host name.
pub(super) fn tls_hint(err: Error, target: &Target) -> Error {
    let Error::Connect {
        target: at,
        mut message,
        sqlstate,
    } = err
    else {
        return err;
    };
    if message.contains("UnknownIssuer") {
        let root = target.tls.root_cert.as_deref().map(path_text).unwrap_or_default();
        message = format!(
            "the server's certificate is not signed by a CA in the root certificate file {root} (sslrootcert; \
             TLS: UnknownIssuer)"
        );
    } else if message.contains("Revoked") {
        let crl = target.tls.crl.as_deref().map(path_text).unwrap_or_default();
        message =
            format!("the server's certificate is revoked by the revocation list file {crl} (sslcrl; TLS: Revoked)");
    } else if message.contains("not valid for name") || message.contains("NotValidForName") {
        message.push_str(" (sslmode=verify-full checks the host name; verify-ca checks only the chain)");
    }
    Error::Connect {
        target: at,
        message,
        sqlstate,
    }
}
