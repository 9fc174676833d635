//! A certificate authority and a server certificate made when a TLS cluster starts, and
//! client certificates it signs for clusters that require them.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use openssl::asn1::Asn1Time;
use openssl::bn::{BigNum, MsbOption};
use openssl::ec::{EcGroup, EcKey};
use openssl::hash::MessageDigest;
use openssl::nid::Nid;
use openssl::pkey::{PKey, Private};
use openssl::x509::extension::{BasicConstraints, ExtendedKeyUsage, KeyUsage, SubjectAlternativeName};
use openssl::x509::{X509, X509NameBuilder};

use crate::error::Error;

/// A freshly generated certificate authority.
pub(crate) struct Authority {
    pub(crate) certificate: X509,
    key: PKey<Private>,
}

fn new_key() -> Result<PKey<Private>, Error> {
    let group = EcGroup::from_curve_name(Nid::X9_62_PRIME256V1)?;
    Ok(PKey::from_ec_key(EcKey::generate(&group)?)?)
}

fn serial() -> Result<openssl::asn1::Asn1Integer, Error> {
    let mut serial = BigNum::new()?;
    serial.rand(127, MsbOption::MAYBE_ZERO, false)?;
    Ok(serial.to_asn1_integer()?)
}

impl Authority {
    /// A self-signed CA certificate named `common_name`, valid for a year.
    pub(crate) fn generate(common_name: &str) -> Result<Authority, Error> {
        let key = new_key()?;
        let mut name = X509NameBuilder::new()?;
        name.append_entry_by_nid(Nid::COMMONNAME, common_name)?;
        let name = name.build();
        let mut builder = X509::builder()?;
        builder.set_version(2)?;
        let serial = serial()?;
        builder.set_serial_number(&serial)?;
        builder.set_subject_name(&name)?;
        builder.set_issuer_name(&name)?;
        builder.set_pubkey(&key)?;
        let not_before = Asn1Time::days_from_now(0)?;
        builder.set_not_before(&not_before)?;
        let not_after = Asn1Time::days_from_now(365)?;
        builder.set_not_after(&not_after)?;
        builder.append_extension(BasicConstraints::new().critical().ca().build()?)?;
        builder.append_extension(KeyUsage::new().critical().key_cert_sign().crl_sign().build()?)?;
        builder.sign(&key, MessageDigest::sha256())?;
        Ok(Authority { certificate: builder.build(), key })
    }

    /// A server certificate signed by this CA, valid for the given DNS names and IP addresses.
    pub(crate) fn issue_server(
        &self,
        dns_names: &[String],
        ip_addresses: &[String],
    ) -> Result<(X509, PKey<Private>), Error> {
        let common_name = dns_names.first().or(ip_addresses.first()).map_or("datadiff-testkit", String::as_str);
        self.issue(common_name, ExtendedKeyUsage::new().server_auth(), |builder, authority| {
            let mut alt_names = SubjectAlternativeName::new();
            for dns in dns_names {
                alt_names.dns(dns);
            }
            for ip in ip_addresses {
                alt_names.ip(ip);
            }
            builder.append_extension(alt_names.build(&builder.x509v3_context(Some(authority), None))?)
        })
    }

    /// A certificate for `common_name` with `usage`, signed by this CA; `extend` adds more
    /// extensions before signing.
    fn issue(
        &self,
        common_name: &str,
        usage: &mut ExtendedKeyUsage,
        extend: impl FnOnce(&mut openssl::x509::X509Builder, &X509) -> Result<(), openssl::error::ErrorStack>,
    ) -> Result<(X509, PKey<Private>), Error> {
        let key = new_key()?;
        let mut name = X509NameBuilder::new()?;
        name.append_entry_by_nid(Nid::COMMONNAME, common_name)?;
        let name = name.build();
        let mut builder = X509::builder()?;
        builder.set_version(2)?;
        let serial = serial()?;
        builder.set_serial_number(&serial)?;
        builder.set_subject_name(&name)?;
        builder.set_issuer_name(self.certificate.subject_name())?;
        builder.set_pubkey(&key)?;
        let not_before = Asn1Time::days_from_now(0)?;
        builder.set_not_before(&not_before)?;
        let not_after = Asn1Time::days_from_now(365)?;
        builder.set_not_after(&not_after)?;
        builder.append_extension(BasicConstraints::new().build()?)?;
        builder.append_extension(usage.build()?)?;
        extend(&mut builder, &self.certificate)?;
        builder.sign(&self.key, MessageDigest::sha256())?;
        Ok((builder.build(), key))
    }
}

impl Authority {
    /// A client certificate signed by this CA for the user `common_name` (PostgreSQL's
    /// `clientcert=verify-full` and `cert` compare the CN with the user name).
    pub(crate) fn issue_client(&self, common_name: &str) -> Result<(X509, PKey<Private>), Error> {
        self.issue(common_name, ExtendedKeyUsage::new().client_auth(), |_, _| Ok(()))
    }

    /// Writes a client certificate for `user` and its key (mode 0600, as libpq wants) into
    /// `dir` as `<user>.crt` and `<user>.key`.
    pub(crate) fn write_client(&self, user: &str, dir: &Path) -> Result<ClientCertificateFiles, Error> {
        let (certificate, key) = self.issue_client(user)?;
        let files = ClientCertificateFiles {
            certificate: dir.join(format!("{user}.crt")),
            key: dir.join(format!("{user}.key")),
        };
        let write = |path: &Path, bytes: &[u8]| -> Result<(), Error> {
            std::fs::write(path, bytes).map_err(Error::io(format!("writing {}", path.display())))
        };
        write(&files.certificate, &certificate.to_pem()?)?;
        write(&files.key, &key.private_key_to_pem_pkcs8()?)?;
        std::fs::set_permissions(&files.key, std::fs::Permissions::from_mode(0o600))
            .map_err(Error::io(format!("restricting {}", files.key.display())))?;
        Ok(files)
    }
}

/// A client certificate and its private key, as PEM files.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientCertificateFiles {
    /// The certificate.
    pub certificate: PathBuf,
    /// Its unencrypted private key (mode 0600).
    pub key: PathBuf,
}

/// Writes into `dir` a client certificate for `user` signed by a fresh CA that no cluster
/// trusts: a "wrong client certificate" for tests of servers that require one.
pub fn write_unrelated_client_certificate(user: &str, dir: &Path) -> Result<ClientCertificateFiles, Error> {
    Authority::generate("datadiff-testkit unrelated client CA")?.write_client(user, dir)
}

/// Writes a fresh CA certificate, trusted by nothing, to `path`: a "wrong CA" for tests that
/// check a client refuses a server whose certificate it cannot verify.
pub fn write_unrelated_ca(path: &Path) -> Result<(), Error> {
    let authority = Authority::generate("datadiff-testkit unrelated CA")?;
    std::fs::write(path, authority.certificate.to_pem()?).map_err(Error::io(format!("writing {}", path.display())))
}
