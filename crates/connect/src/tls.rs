//! TLS for PostgreSQL connections, with libpq's `sslmode` meanings.
//!
//! | `sslmode` | TLS | server certificate | host name |
//! |---|---|---|---|
//! | `disable` | never | — | — |
//! | `prefer` (default) | when the server offers it | not checked | not checked |
//! | `require` | always | not checked, unless a root certificate is configured: then as `verify-ca` (libpq's rule) | not checked |
//! | `verify-ca` | always | must chain to the root certificates | not checked |
//! | `verify-full` | always | must chain to the root certificates | must match the host connected to |
//!
//! Root certificates: the `sslrootcert` file (or `PGSSLROOTCERT`); `sslrootcert=system` for
//! the system's trust store; else `~/.postgresql/root.crt` when it exists, as libpq; else, for
//! the verifying modes, the system's trust store (libpq would refuse to connect; this is
//! libpq 16's `sslrootcert=system`, the same decision as the backend store's).
//!
//! A client certificate (`sslcert` and `sslkey`, or `PGSSLCERT` and `PGSSLKEY`; else
//! `~/.postgresql/postgresql.crt` and `.key` when the certificate exists, as libpq) is sent in
//! every mode that encrypts, whenever the server asks for one.
//!
//! `allow` (plaintext first) is refused: rust-postgres cannot retry a refused plaintext
//! login over TLS, and an audit should not silently downgrade.
//!
//! **Why a verification failed.** OpenSSL reports every rejected server certificate as the
//! same internal error (`error:0A000086:SSL routines:…:certificate verify failed`). A
//! verifying context records what its verification found, and a connection it rejects fails
//! with a [`CertificateRejected`] (the driver's TLS error's cause, or a row stream's, through
//! [`CertificateRejected::of_handshake`]) that names the cause as psql does: `server certificate for "localhost" does not match host
//! name "127.0.0.1"`; `certificate verify failed: unable to get local issuer certificate`
//! with which root certificates were used (a file, the system's store, or none configured);
//! and a root certificate file that does not exist is `root certificate file "…" does not
//! exist`.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use openssl::ex_data::Index;
use openssl::ssl::{SslContext, SslRef};

use datadiff_diff_core::definition::SslMode;
use openssl::error::ErrorStack;
use openssl::ssl::{SslConnector, SslFiletype, SslMethod, SslVerifyMode};
use openssl::x509::X509;
use openssl::x509::store::X509StoreBuilder;
use postgres_openssl::MakeTlsConnector;

use crate::LazyTls;
use crate::error::Error;

/// Where trusted root certificates come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RootCertificates {
    /// None configured (`prefer` and `require` then do not verify).
    Unset,
    /// A PEM file: only its certificates are trusted.
    File(PathBuf),
    /// The system's trust store.
    System,
}

/// A client certificate and its private key (PEM files), for servers that ask for one
/// (`pg_hba.conf`'s `cert` method or `clientcert=verify-ca|verify-full`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientCertificate {
    /// The certificate (`sslcert`), possibly followed by intermediate certificates.
    pub certificate: PathBuf,
    /// Its private key (`sslkey`), unencrypted.
    pub key: PathBuf,
}

/// A session's TLS settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsSettings {
    /// The mode.
    pub mode: SslMode,
    /// The root certificates.
    pub roots: RootCertificates,
    /// The client certificate, when one is configured.
    pub client: Option<ClientCertificate>,
}

impl TlsSettings {
    /// libpq's default for a connection that says nothing: `prefer`, no root certificates, no
    /// client certificate.
    pub fn prefer() -> TlsSettings {
        TlsSettings { mode: SslMode::Prefer, roots: RootCertificates::Unset, client: None }
    }

    /// Whether the server certificate is verified (the verifying modes, or `require` with a
    /// root certificate configured).
    pub fn verifies(&self) -> bool {
        self.verify().is_some()
    }

    /// What is checked about the server's certificate; `None` when nothing is.
    pub fn verify(&self) -> Option<Verify> {
        match self.mode {
            SslMode::Disable | SslMode::Allow | SslMode::Prefer => None,
            SslMode::Require => (self.roots != RootCertificates::Unset).then_some(Verify::Chain),
            SslMode::VerifyCa => Some(Verify::Chain),
            SslMode::VerifyFull => Some(Verify::ChainAndHost),
        }
    }

    /// The driver's `sslmode` for these settings: the verifying modes are `require` to the
    /// driver, the verification being the connector's.
    pub fn driver_mode(&self) -> postgres::config::SslMode {
        match self.mode {
            SslMode::Disable => postgres::config::SslMode::Disable,
            SslMode::Allow | SslMode::Prefer => postgres::config::SslMode::Prefer,
            SslMode::Require | SslMode::VerifyCa | SslMode::VerifyFull => postgres::config::SslMode::Require,
        }
    }

    /// The TLS of a connection with these settings ([`ClientTls`]); `disable` gets the
    /// unverified context, which the driver then never uses.
    pub fn client_tls(&self) -> Result<ClientTls, TlsSetupError> {
        if self.mode == SslMode::Disable {
            return Ok(ClientTls::unverified());
        }
        ClientTls::new(&self.roots, self.verify(), self.client.as_ref())
    }

    /// The driver's connector for these settings, for the connection called `role` (used in
    /// messages); `None` for `disable`. It builds an unverified context only when the server
    /// accepts TLS, and names a rejected server certificate's cause ([`ClientTls::lazy`]).
    pub fn connector(&self, role: &str) -> Result<Option<LazyTls>, Error> {
        if self.mode == SslMode::Disable {
            return Ok(None);
        }
        let tls = self.client_tls().map_err(|error| error.for_role(role))?;
        Ok(Some(tls.lazy()))
    }
}

/// What a verifying connector checks about the server's certificate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verify {
    /// The chain to a trusted root (`verify-ca`, and `require` with a root file).
    Chain,
    /// The chain and the host name (`verify-full`).
    ChainAndHost,
}

/// Why a TLS connector could not be built.
#[derive(Debug, thiserror::Error)]
pub enum TlsSetupError {
    /// OpenSSL refused the set-up.
    #[error("cannot set up TLS")]
    OpenSsl(#[source] ErrorStack),
    /// The root certificate file could not be read, or holds no PEM certificate.
    #[error("cannot load the root certificates {}", path.display())]
    Roots {
        /// The file.
        path: PathBuf,
        /// What was wrong.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The client certificate or its key could not be read, or they do not match.
    #[error("cannot load the client certificate {}", path.display())]
    ClientCertificate {
        /// The `sslcert` or `sslkey` file.
        path: PathBuf,
        /// What was wrong.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

impl TlsSetupError {
    /// The error of the connection called `role` (used in messages).
    pub fn for_role(self, role: &str) -> Error {
        let role = role.to_owned();
        match self {
            TlsSetupError::OpenSsl(source) => Error::Tls { role, source },
            TlsSetupError::Roots { path, source } => Error::RootCertificate { role, path, source },
            TlsSetupError::ClientCertificate { path, source } => Error::ClientCertificate { role, path, source },
        }
    }
}

/// A connection's TLS, ready to use: the shared unverified context ([`unverified_tls`],
/// built only when a server accepts TLS), or a context of its own that verifies the server
/// and/or presents a client certificate. Cloning shares the context.
///
/// A connection whose server certificate its verification rejects fails with a
/// [`CertificateRejected`] as the handshake error's cause, in psql's words.
#[derive(Clone)]
pub struct ClientTls {
    /// `None`: the shared unverified context.
    context: Option<SslConnector>,
    /// Whether the host name is checked (`verify-full`).
    check_host: bool,
}

/// A server certificate a connection's verification rejected, named as psql names it: a host
/// name the certificate does not hold (`server certificate for "localhost" does not match
/// host name "127.0.0.1"`), or a chain no trusted root signed (`certificate verify failed:
/// unable to get local issuer certificate: …`, with the root certificates that were used: a
/// file, the system's store, or none configured).
///
/// It is the cause of the driver's TLS error ([`CertificateRejected::find`] finds it in an
/// error's chain) and of a row stream's failed handshake
/// ([`CertificateRejected::of_handshake`]); OpenSSL's internal error text never shows.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.explain())]
pub struct CertificateRejected {
    /// `X509_V_ERR_*`.
    code: i32,
    /// OpenSSL's text for it (`unable to get local issuer certificate`).
    reason: String,
    /// The host connected to.
    host: String,
    /// The names of the server's certificate: DNS and IP subject alternative names, else
    /// the subject's common name.
    names: Vec<String>,
    /// The root certificates the context trusts.
    roots: RootCertificates,
}

impl std::fmt::Debug for ClientTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientTls")
            .field("own_context", &self.context.is_some())
            .field("check_host", &self.check_host)
            .finish()
    }
}

impl Default for ClientTls {
    fn default() -> Self {
        ClientTls::unverified()
    }
}

/// OpenSSL's verification results meaning "no trusted root signed this chain".
const UNKNOWN_ISSUER: [i32; 5] = [
    2,  // X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT
    18, // X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT
    19, // X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN
    20, // X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY
    21, // X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE
];

impl CertificateRejected {
    /// The rejected certificate among `error` and its causes (the driver's TLS error carries
    /// it as its cause); `None` when the connection failed otherwise.
    pub fn find<'a>(error: &'a (dyn std::error::Error + 'static)) -> Option<&'a CertificateRejected> {
        let mut current = Some(error);
        while let Some(error) = current {
            if let Some(rejected) = error.downcast_ref::<CertificateRejected>() {
                return Some(rejected);
            }
            current = error.source();
        }
        None
    }

    /// Why the handshake of `ssl` (a connection to `host` from a context of
    /// [`tls_context`] that verifies the server) failed, when its verification rejected the
    /// server's certificate: for connections made outside the driver, such as row streams.
    /// `None` for a context that verifies nothing or a handshake that failed otherwise.
    pub fn of_handshake(ssl: &SslRef, host: &str) -> Option<CertificateRejected> {
        let roots = ssl.ssl_context().ex_data(roots_index()?)?.clone();
        let result = ssl.verify_result();
        if result == openssl::x509::X509VerifyResult::OK {
            return None;
        }
        // On the client side the chain starts with the server's own certificate.
        let names = ssl
            .peer_cert_chain()
            .and_then(|chain| chain.iter().next().map(certificate_names))
            .or_else(|| ssl.peer_certificate().map(|certificate| certificate_names(&certificate)))
            .unwrap_or_default();
        Some(CertificateRejected {
            code: result.as_raw(),
            reason: result.error_string().to_owned(),
            host: host.to_owned(),
            names,
            roots,
        })
    }

    /// The host name the connection asked for.
    pub fn host(&self) -> &str {
        &self.host
    }

    /// Whether the certificate was rejected for not naming the host (else: its chain).
    pub fn is_name_mismatch(&self) -> bool {
        NAME_MISMATCHES.contains(&self.code)
    }

    /// The cause in psql's words, with the roots that were used.
    fn explain(&self) -> String {
        let roots = &self.roots;
        if NAME_MISMATCHES.contains(&self.code) {
            let first = self.names.first().map_or("", String::as_str);
            let others = match self.names.len().saturating_sub(1) {
                0 => String::new(),
                1 => " (and 1 other name)".to_owned(),
                n => format!(" (and {n} other names)"),
            };
            return format!("server certificate for \"{first}\"{others} does not match host name \"{}\"", self.host);
        }
        if UNKNOWN_ISSUER.contains(&self.code) {
            let roots = match roots {
                RootCertificates::File(path) => {
                    format!("no root certificate in {} signed the server's certificate", path.display())
                }
                RootCertificates::System => {
                    "no CA of the system's trust store (sslrootcert=system) signed the server's certificate".to_owned()
                }
                RootCertificates::Unset => "no root certificate is configured (sslrootcert), and no CA of the \
                     system's trust store signed the server's certificate: set sslrootcert to the CA that signed it, \
                     or use sslmode=require to encrypt without verifying"
                    .to_owned(),
            };
            return format!("certificate verify failed: {}: {roots}", self.reason);
        }
        format!("certificate verify failed: {}", self.reason)
    }
}

impl ClientTls {
    /// libpq's `prefer` and `require` without root or client certificates: encrypted, the
    /// certificate not verified, the context built once per process when first needed.
    pub fn unverified() -> ClientTls {
        ClientTls { context: None, check_host: false }
    }

    /// The TLS of a connection that checks `verify` about the server's certificate against
    /// `roots` (`None`: nothing) and presents `client` when the server asks; without either,
    /// [`ClientTls::unverified`].
    pub fn new(
        roots: &RootCertificates,
        verify: Option<Verify>,
        client: Option<&ClientCertificate>,
    ) -> Result<ClientTls, TlsSetupError> {
        if verify.is_none() && client.is_none() {
            return Ok(ClientTls::unverified());
        }
        let context = tls_context(roots, verify, client)?;
        Ok(ClientTls { context: Some(context), check_host: verify == Some(Verify::ChainAndHost) })
    }

    /// Whether the server's certificate is verified or a client certificate is presented.
    pub fn is_configured(&self) -> bool {
        self.context.is_some()
    }

    /// The OpenSSL context (for connections made outside the driver, such as row streams):
    /// it carries the whole policy, host-name check included — `verify-ca` tolerates a host
    /// name mismatch, `verify-full` does not, when the caller names the host.
    pub fn ssl_connector(&self) -> Result<SslConnector, ErrorStack> {
        match &self.context {
            Some(context) => Ok(context.clone()),
            None => unverified_tls(),
        }
    }

    /// The driver's connector, built now. A certificate it rejects fails with OpenSSL's
    /// error; [`ClientTls::lazy`] names the cause instead.
    pub fn connector(&self) -> Result<MakeTlsConnector, ErrorStack> {
        Ok(make_connector(self.ssl_connector()?, self.check_host, None))
    }

    /// The driver's connector, built only when a server accepts TLS for the shared unverified
    /// context ([`LazyTls`]); a context of its own is ready already, and a server certificate
    /// it rejects fails the handshake with a [`CertificateRejected`].
    pub fn lazy(&self) -> LazyTls {
        match &self.context {
            None => LazyTls::new(unverified_connector),
            Some(context) => LazyTls::verifying(context.clone(), self.check_host),
        }
    }
}

/// OpenSSL's verification results for a certificate that does not name the host connected
/// to (`X509_V_ERR_HOSTNAME_MISMATCH`, `_EMAIL_MISMATCH`, `_IP_ADDRESS_MISMATCH`).
const NAME_MISMATCHES: [i32; 3] = [62, 63, 64];

/// The TLS context for `roots`, `verify` (`None`: the server certificate is not checked) and
/// an optional client certificate.
///
/// A `Verify::Chain` context accepts a certificate that does not name the host, whoever asks
/// it to check the name; `Verify::ChainAndHost` leaves the check to the connection, which
/// names the host ([`ClientTls::connector`] always asks for it).
pub fn tls_context(
    roots: &RootCertificates,
    verify: Option<Verify>,
    client: Option<&ClientCertificate>,
) -> Result<SslConnector, TlsSetupError> {
    // `SslConnector::builder` starts from the system's trust store.
    let mut builder = SslConnector::builder(SslMethod::tls_client()).map_err(TlsSetupError::OpenSsl)?;
    match verify {
        None => builder.set_verify(SslVerifyMode::NONE),
        Some(verify) => {
            if let RootCertificates::File(path) = roots {
                let roots_error = |source: Box<dyn std::error::Error + Send + Sync>| TlsSetupError::Roots {
                    path: path.clone(),
                    source,
                };
                let pem = std::fs::read(path).map_err(|error| match error.kind() {
                    // psql's words.
                    std::io::ErrorKind::NotFound => roots_error(
                        format!(
                            "root certificate file \"{}\" does not exist; either provide the file, use the system's \
                             trusted roots with sslrootcert=system, or change sslmode to disable server certificate \
                             verification",
                            path.display()
                        )
                        .into(),
                    ),
                    _ => roots_error(Box::new(error)),
                })?;
                let certificates = X509::stack_from_pem(&pem).map_err(|error| roots_error(Box::new(error)))?;
                if certificates.is_empty() {
                    return Err(roots_error("the file holds no PEM certificate".into()));
                }
                let mut store = X509StoreBuilder::new().map_err(TlsSetupError::OpenSsl)?;
                for certificate in certificates {
                    store.add_cert(certificate).map_err(|error| roots_error(Box::new(error)))?;
                }
                builder.set_cert_store(store.build());
            }
            if let Some(index) = roots_index() {
                builder.set_ex_data(index, roots.clone());
            }
            match verify {
                Verify::ChainAndHost => builder.set_verify(SslVerifyMode::PEER),
                Verify::Chain => builder.set_verify_callback(SslVerifyMode::PEER, |verified, context| {
                    verified || NAME_MISMATCHES.contains(&context.error().as_raw())
                }),
            }
        }
    }
    if let Some(client) = client {
        load_client_certificate(&mut builder, client)?;
    }
    Ok(builder.build())
}

fn load_client_certificate(
    builder: &mut openssl::ssl::SslConnectorBuilder,
    client: &ClientCertificate,
) -> Result<(), TlsSetupError> {
    let failed = |path: &Path, source: Box<dyn std::error::Error + Send + Sync>| TlsSetupError::ClientCertificate {
        path: path.to_path_buf(),
        source,
    };
    for path in [&client.certificate, &client.key] {
        // OpenSSL's "no such file" is a bare error code: say it plainly.
        std::fs::metadata(path).map_err(|error| failed(path, Box::new(error)))?;
    }
    key_permissions(&client.key).map_err(|problem| failed(&client.key, problem))?;
    builder
        .set_certificate_chain_file(&client.certificate)
        .map_err(|error| failed(&client.certificate, error.into()))?;
    builder.set_private_key_file(&client.key, SslFiletype::PEM).map_err(|error| failed(&client.key, error.into()))?;
    builder
        .check_private_key()
        .map_err(|_| failed(&client.key, "the key does not belong to the certificate".into()))?;
    Ok(())
}

/// libpq's rule for a private key file, which it refuses otherwise: a regular file without
/// group or world access (0600 or less), or — owned by root — at most readable by its group
/// (0640 or less). datadiff refuses what libpq refuses, so a key works or fails the same with
/// psql.
fn key_permissions(path: &Path) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    use std::os::unix::fs::MetadataExt as _;
    let metadata = std::fs::metadata(path)?;
    if !metadata.is_file() {
        return Err("the private key is not a regular file".into());
    }
    let forbidden = if metadata.uid() == 0 { 0o037 } else { 0o077 };
    if metadata.mode() & forbidden != 0 {
        return Err(format!(
            "the private key file has group or world access (mode {:04o}); as libpq, datadiff uses it only with \
             permissions u=rw (0600) or less, or u=rw,g=r (0640) or less when root owns it: chmod 0600 it",
            metadata.mode() & 0o7777
        )
        .into());
    }
    Ok(())
}

/// Where a connection's verification leaves the certificate it rejected.
pub(crate) type RejectionSlot = Arc<Mutex<Option<CertificateRejected>>>;

/// The driver's connector for `context`; with `rejected`, a certificate its verification
/// rejects is recorded there, in psql's words, for the handshake's error.
pub(crate) fn make_connector(
    context: SslConnector,
    check_host: bool,
    rejected: Option<RejectionSlot>,
) -> MakeTlsConnector {
    let roots = roots_index().and_then(|index| context.context().ex_data(index).cloned());
    let mut connector = MakeTlsConnector::new(context);
    // postgres-openssl checks the host name by default: only verify-full wants it.
    connector.set_callback(move |configuration, domain| {
        configuration.set_verify_hostname(check_host);
        if let (Some(slot), Some(roots)) = (&rejected, &roots) {
            // The context's policy again (a chain-only context tolerates a name mismatch),
            // recording why a certificate is rejected.
            let slot = Arc::clone(slot);
            let roots = roots.clone();
            let host = domain.to_owned();
            configuration.set_verify_callback(SslVerifyMode::PEER, move |verified, context| {
                let code = context.error().as_raw();
                let accepted = verified || (!check_host && NAME_MISMATCHES.contains(&code));
                if !accepted {
                    let names = context.current_cert().map(certificate_names).unwrap_or_default();
                    let rejected = CertificateRejected {
                        code,
                        reason: context.error().error_string().to_owned(),
                        host: host.clone(),
                        names,
                        roots: roots.clone(),
                    };
                    *slot.lock().unwrap_or_else(PoisonError::into_inner) = Some(rejected);
                }
                accepted
            });
        }
        Ok(())
    });
    connector
}

/// The index under which a verifying context keeps the root certificates it trusts (for
/// [`CertificateRejected`]); `None` when OpenSSL could not make one.
fn roots_index() -> Option<Index<SslContext, RootCertificates>> {
    static INDEX: OnceLock<Option<Index<SslContext, RootCertificates>>> = OnceLock::new();
    *INDEX.get_or_init(|| SslContext::new_ex_index().ok())
}

/// A certificate's names as libpq reads them for its message: the DNS and IP subject
/// alternative names, else the subject's common name.
fn certificate_names(certificate: &openssl::x509::X509Ref) -> Vec<String> {
    let mut names = Vec::new();
    if let Some(alternatives) = certificate.subject_alt_names() {
        for name in &alternatives {
            if let Some(dns) = name.dnsname() {
                names.push(dns.to_owned());
            } else if let Some(ip) = name.ipaddress() {
                let address = match ip.len() {
                    4 => <[u8; 4]>::try_from(ip).map(|octets| std::net::IpAddr::from(octets).to_string()).ok(),
                    16 => <[u8; 16]>::try_from(ip).map(|octets| std::net::IpAddr::from(octets).to_string()).ok(),
                    _ => None,
                };
                names.extend(address);
            }
        }
    }
    if names.is_empty() {
        for entry in certificate.subject_name().entries_by_nid(openssl::nid::Nid::COMMONNAME) {
            if let Ok(text) = entry.data().to_string() {
                names.push(text);
            }
        }
    }
    names
}

/// A verifying connector without a client certificate: it trusts exactly the certificates of
/// a root file ([`RootCertificates::File`]), else the system's trust store, and checks the
/// host name only for [`Verify::ChainAndHost`]. A certificate it rejects fails with OpenSSL's
/// error; [`ClientTls::new`] and [`ClientTls::lazy`] name the cause instead.
pub fn verifying_tls(roots: &RootCertificates, verify: Verify) -> Result<MakeTlsConnector, TlsSetupError> {
    Ok(make_connector(tls_context(roots, Some(verify), None)?, verify == Verify::ChainAndHost, None))
}

/// The TLS context of libpq's `prefer` and `require` without a root file (encrypted, the
/// certificate not verified), made once per process and only when first asked — building one
/// loads the system's CA bundle, 20–35 ms of CPU. The context is immutable; each connection
/// still has its own TLS session. Servers that decline TLS never cost it ([`crate::LazyTls`]).
pub fn unverified_tls() -> Result<SslConnector, ErrorStack> {
    static TLS: OnceLock<Result<SslConnector, ErrorStack>> = OnceLock::new();
    TLS.get_or_init(|| {
        let mut builder = SslConnector::builder(SslMethod::tls_client())?;
        builder.set_verify(SslVerifyMode::NONE);
        Ok(builder.build())
    })
    .clone()
}

/// [`unverified_tls`] as the driver takes it, for [`crate::LazyTls`].
pub fn unverified_connector() -> Result<MakeTlsConnector, ErrorStack> {
    unverified_tls().map(MakeTlsConnector::new)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_verify_as_libpq() {
        let with = |mode, roots| TlsSettings { mode, roots, client: None };
        assert_eq!(with(SslMode::Prefer, RootCertificates::System).verify(), None);
        assert_eq!(with(SslMode::Require, RootCertificates::Unset).verify(), None);
        assert_eq!(with(SslMode::Require, RootCertificates::System).verify(), Some(Verify::Chain));
        assert_eq!(with(SslMode::VerifyCa, RootCertificates::Unset).verify(), Some(Verify::Chain));
        assert_eq!(with(SslMode::VerifyFull, RootCertificates::Unset).verify(), Some(Verify::ChainAndHost));
        assert!(!with(SslMode::Require, RootCertificates::Unset).client_tls().unwrap().is_configured());
        assert!(with(SslMode::VerifyCa, RootCertificates::System).client_tls().unwrap().is_configured());
    }

    #[test]
    fn a_missing_client_certificate_is_named() {
        let settings = TlsSettings {
            mode: SslMode::Require,
            roots: RootCertificates::Unset,
            client: Some(ClientCertificate {
                certificate: PathBuf::from("/nonexistent/dd/client.crt"),
                key: PathBuf::from("/nonexistent/dd/client.key"),
            }),
        };
        let error = settings.client_tls().unwrap_err();
        assert!(
            matches!(&error, TlsSetupError::ClientCertificate { path, .. } if path == Path::new("/nonexistent/dd/client.crt")),
            "{error:?}"
        );
        let error = error.for_role("source");
        assert_eq!(
            error.to_string(),
            "cannot load the client certificate /nonexistent/dd/client.crt for the source connection"
        );
    }
}
