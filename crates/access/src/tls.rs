//! TLS for source and replica sessions, with libpq's `sslmode` meanings.
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
//! `allow` (plaintext first) is refused: rust-postgres cannot retry a refused plaintext
//! login over TLS, and an audit should not silently downgrade.

use std::path::PathBuf;
use std::sync::OnceLock;

use datadiff_diff_core::SslMode;
use openssl::error::ErrorStack;
use openssl::ssl::{SslConnector, SslMethod, SslVerifyMode};
use openssl::x509::X509;
use openssl::x509::store::X509StoreBuilder;
use postgres_openssl::MakeTlsConnector;

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

/// A session's TLS settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsSettings {
    /// The mode.
    pub mode: SslMode,
    /// The root certificates.
    pub roots: RootCertificates,
}

impl TlsSettings {
    /// Whether the server certificate is verified (the verifying modes, or `require` with a
    /// root certificate configured).
    pub fn verifies(&self) -> bool {
        match self.mode {
            SslMode::Disable | SslMode::Allow | SslMode::Prefer => false,
            SslMode::Require => self.roots != RootCertificates::Unset,
            SslMode::VerifyCa | SslMode::VerifyFull => true,
        }
    }

    /// The connector for these settings; `None` for `disable`.
    pub(crate) fn connector(&self, role: &str) -> Result<Option<MakeTlsConnector>, Error> {
        if self.mode == SslMode::Disable {
            return Ok(None);
        }
        if !self.verifies() {
            return unverified_tls()
                .map(|connector| Some(MakeTlsConnector::new(connector)))
                .map_err(|source| Error::Tls { role: role.to_owned(), source });
        }
        let verify = if self.mode == SslMode::VerifyFull { Verify::ChainAndHost } else { Verify::Chain };
        verifying_tls(&self.roots, verify).map(Some).map_err(|error| match error {
            TlsSetupError::OpenSsl(source) => Error::Tls { role: role.to_owned(), source },
            TlsSetupError::Roots { path, source } => Error::RootCertificate { role: role.to_owned(), path, source },
        })
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
}

/// The verifying connector every verifying connection uses (backend, sides, audit): it
/// trusts exactly the certificates of a root file ([`RootCertificates::File`]), else the
/// system's trust store, and checks the host name only for [`Verify::ChainAndHost`].
pub fn verifying_tls(roots: &RootCertificates, verify: Verify) -> Result<MakeTlsConnector, TlsSetupError> {
    // `SslConnector::builder` starts from the system's trust store.
    let mut builder = SslConnector::builder(SslMethod::tls_client()).map_err(TlsSetupError::OpenSsl)?;
    if let RootCertificates::File(path) = roots {
        let roots_error =
            |source: Box<dyn std::error::Error + Send + Sync>| TlsSetupError::Roots { path: path.clone(), source };
        let pem = std::fs::read(path).map_err(|error| roots_error(Box::new(error)))?;
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
    builder.set_verify(SslVerifyMode::PEER);
    let mut connector = MakeTlsConnector::new(builder.build());
    // postgres-openssl checks the host name by default: only verify-full wants it.
    let check_host = verify == Verify::ChainAndHost;
    connector.set_callback(move |configuration, _domain| {
        configuration.set_verify_hostname(check_host);
        Ok(())
    });
    Ok(connector)
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

/// [`unverified_tls`] as the driver takes it, for [`crate::LazyTls`] (the error as text).
pub fn unverified_connector() -> Result<MakeTlsConnector, String> {
    unverified_tls().map(MakeTlsConnector::new).map_err(|error| error.to_string())
}
