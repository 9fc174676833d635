//! What the PEM files and texts a project names must hold, checked when the project loads so
//! that a wrong file is a load error naming its key path, not an ERROR at every attempt:
//! certificates where certificates go (`sslrootcert`, `sslcert`, MySQL's `ssl_ca` and
//! `ssl_cert`), an unencrypted private key where a key goes (`sslkey`, `ssl_key`), a key that
//! belongs to its certificate, and — for libpq's `sslkey` — libpq's rule on the key file's
//! permissions.

use std::path::Path;

use openssl::pkey::{PKey, Private};
use openssl::x509::X509;

/// What a PEM value must hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PemKind {
    /// One or more certificates (a CA bundle, or a client certificate and its chain).
    Certificates,
    /// One unencrypted private key.
    PrivateKey,
}

/// What is wrong with a PEM value or a key file, in a few words that follow its name
/// (`sslkey file k.pem: holds no PEM private key`); never its contents.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum PemProblem {
    #[error("holds a private key, not a PEM certificate")]
    KeyForCertificate,
    #[error("holds no PEM certificate")]
    NoCertificate,
    #[error("holds a certificate, not a private key")]
    CertificateForKey,
    #[error("holds an encrypted private key: datadiff reads only unencrypted keys")]
    EncryptedKey,
    #[error("holds no PEM private key")]
    NoKey,
    #[error("the key does not belong to the certificate")]
    Mismatch,
    #[error("cannot be read: {0}")]
    Unreadable(String),
    #[error("is not a regular file")]
    NotAFile,
    #[error(
        "has group or world access (mode {0:04o}); as libpq, datadiff uses a key file only with permissions u=rw \
         (0600) or less, or u=rw,g=r (0640) or less when root owns it: chmod 0600 it"
    )]
    KeyPermissions(u32),
}

/// Checks that `pem` holds what `kind` says.
pub(crate) fn check_pem(pem: &[u8], kind: PemKind) -> Result<(), PemProblem> {
    match kind {
        PemKind::Certificates => match X509::stack_from_pem(pem) {
            Ok(certificates) if !certificates.is_empty() => Ok(()),
            _ if looks_like_a_key(pem) => Err(PemProblem::KeyForCertificate),
            _ => Err(PemProblem::NoCertificate),
        },
        PemKind::PrivateKey => private_key(pem).map(drop),
    }
}

/// The unencrypted private key in `pem`.
fn private_key(pem: &[u8]) -> Result<PKey<Private>, PemProblem> {
    // A callback that supplies no passphrase: an encrypted key fails here instead of OpenSSL
    // asking for its passphrase on the terminal.
    PKey::private_key_from_pem_callback(pem, |_| Ok(0)).map_err(|_| {
        let text = String::from_utf8_lossy(pem);
        if text.contains("-----BEGIN CERTIFICATE-----") {
            PemProblem::CertificateForKey
        } else if text.contains("ENCRYPTED") {
            PemProblem::EncryptedKey
        } else {
            PemProblem::NoKey
        }
    })
}

fn looks_like_a_key(pem: &[u8]) -> bool {
    String::from_utf8_lossy(pem).contains("PRIVATE KEY-----")
}

/// Checks that the private key in `key` belongs to the first certificate in `certificate`.
pub(crate) fn check_pair(certificate: &[u8], key: &[u8]) -> Result<(), PemProblem> {
    let (Ok(certificates), Ok(key)) = (X509::stack_from_pem(certificate), private_key(key)) else {
        // Either is reported on its own.
        return Ok(());
    };
    let Some(first) = certificates.first() else { return Ok(()) };
    match first.public_key() {
        Ok(public) if public.public_eq(&key) => Ok(()),
        _ => Err(PemProblem::Mismatch),
    }
}

/// libpq's rule for a private key file (`sslkey`), which it refuses to load otherwise: a
/// regular file without group or world access (mode 0600 or less), or — owned by root — at
/// most readable by its group (0640 or less).
pub(crate) fn check_key_permissions(path: &Path) -> Result<(), PemProblem> {
    use std::os::unix::fs::MetadataExt as _;
    let metadata = std::fs::metadata(path).map_err(|error| PemProblem::Unreadable(error.to_string()))?;
    if !metadata.is_file() {
        return Err(PemProblem::NotAFile);
    }
    let mode = metadata.mode();
    let forbidden = if metadata.uid() == 0 { 0o037 } else { 0o077 };
    if mode & forbidden != 0 {
        return Err(PemProblem::KeyPermissions(mode & 0o7777));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt as _;

    use openssl::{asn1::Asn1Time, ec::EcGroup, ec::EcKey, hash::MessageDigest, nid::Nid, x509::X509Name};

    use super::*;

    fn key() -> PKey<Private> {
        PKey::from_ec_key(EcKey::generate(&EcGroup::from_curve_name(Nid::X9_62_PRIME256V1).unwrap()).unwrap()).unwrap()
    }

    fn certificate(key: &PKey<Private>) -> Vec<u8> {
        let mut name = X509Name::builder().unwrap();
        name.append_entry_by_text("CN", "datadiff").unwrap();
        let name = name.build();
        let mut builder = X509::builder().unwrap();
        builder.set_subject_name(&name).unwrap();
        builder.set_issuer_name(&name).unwrap();
        builder.set_pubkey(key).unwrap();
        builder.set_not_before(&Asn1Time::days_from_now(0).unwrap()).unwrap();
        builder.set_not_after(&Asn1Time::days_from_now(1).unwrap()).unwrap();
        builder.sign(key, MessageDigest::sha256()).unwrap();
        builder.build().to_pem().unwrap()
    }

    #[test]
    fn certificates_and_keys_are_told_apart_and_garbage_is_refused() {
        let key = key();
        let (key_pem, certificate_pem) = (key.private_key_to_pem_pkcs8().unwrap(), certificate(&key));
        assert_eq!(check_pem(&certificate_pem, PemKind::Certificates), Ok(()));
        assert_eq!(check_pem(&key_pem, PemKind::PrivateKey), Ok(()));
        let certificate_as_key = check_pem(&certificate_pem, PemKind::PrivateKey).unwrap_err().to_string();
        assert_eq!(certificate_as_key, "holds a certificate, not a private key");
        let key_as_certificate = check_pem(&key_pem, PemKind::Certificates).unwrap_err().to_string();
        assert_eq!(key_as_certificate, "holds a private key, not a PEM certificate");
        let garbage = b"-----BEGIN CERTIFICATE-----\nnot base64 at all\n-----END CERTIFICATE-----\n";
        assert_eq!(check_pem(garbage, PemKind::Certificates).unwrap_err().to_string(), "holds no PEM certificate");
        assert_eq!(check_pem(b"hello", PemKind::PrivateKey).unwrap_err().to_string(), "holds no PEM private key");
        assert_eq!(check_pair(&certificate_pem, &key_pem), Ok(()));
        let other = self::key().private_key_to_pem_pkcs8().unwrap();
        assert_eq!(
            check_pair(&certificate_pem, &other).unwrap_err().to_string(),
            "the key does not belong to the certificate"
        );
    }

    #[test]
    fn key_files_follow_libpqs_permission_rule() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("client.key");
        std::fs::write(&path, "key").unwrap();
        let owned_by_root = {
            use std::os::unix::fs::MetadataExt as _;
            std::fs::metadata(&path).unwrap().uid() == 0
        };
        for (mode, allowed) in [(0o600, true), (0o400, true), (0o640, owned_by_root), (0o644, false), (0o660, false)] {
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
            assert_eq!(check_key_permissions(&path).is_ok(), allowed, "mode {mode:o}");
        }
        assert!(check_key_permissions(dir.path()).unwrap_err().to_string().contains("not a regular file"));
    }
}
