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

use openssl::ssl::{SslConnector, SslMethod, SslVerifyMode};
use postgres_openssl::MakeTlsConnector;

use crate::error::Error;

use datadiff_diff_core::SslMode;

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
        let wrap = |source| Error::Tls { role: role.to_owned(), source };
        let mut builder = SslConnector::builder(SslMethod::tls_client()).map_err(wrap)?;
        if !self.verifies() {
            builder.set_verify(SslVerifyMode::NONE);
        } else {
            builder.set_verify(SslVerifyMode::PEER);
            match &self.roots {
                RootCertificates::File(path) => {
                    // Only the configured roots: a fresh store, not the system's.
                    let store = openssl::x509::store::X509StoreBuilder::new().map_err(wrap)?;
                    builder.set_cert_store(store.build());
                    builder.set_ca_file(path).map_err(|source| Error::RootCertificate {
                        role: role.to_owned(),
                        path: path.clone(),
                        source,
                    })?;
                }
                RootCertificates::System | RootCertificates::Unset => {
                    builder.set_default_verify_paths().map_err(wrap)?
                }
            }
        }
        let mut connector = MakeTlsConnector::new(builder.build());
        // postgres-openssl checks the host name by default: only verify-full wants it.
        let check_host = self.mode == SslMode::VerifyFull;
        connector.set_callback(move |config, _domain| {
            config.set_verify_hostname(check_host);
            Ok(())
        });
        Ok(Some(connector))
    }
}
