//! The crate's one error type.

use std::path::PathBuf;

use crate::catalog::CatalogDifference;
use crate::connection::Role;
use crate::migrate::{Step, Target};

/// Everything that can go wrong opening, gating or migrating a backend.
///
/// `Display` says one layer, and never contains a password; the cause (a PostgreSQL, TLS or
/// pool error) is reachable through [`std::error::Error::source`]. Messages about the
/// backend start with "backend".
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Required `backend_db` settings are empty (the names, in upstream's order).
    #[error("backend_db is missing required fields: {}", .0.join(", "))]
    MissingFields(Vec<&'static str>),

    /// An `sslmode` that libpq does not know.
    #[error("backend sslmode {0:?} is not one of disable, allow, prefer, require, verify-ca, verify-full")]
    InvalidSslMode(String),

    /// A migration target that is not `base`, `001`–`004` or `head`.
    #[error("backend migration target {0:?} is not one of base, 001, 002, 003, 004, head")]
    InvalidTarget(String),

    /// The `sslrootcert` file could not be read or holds no certificate.
    #[error("backend sslrootcert {} could not be loaded", .path.display())]
    RootCertificate {
        /// The configured file.
        path: PathBuf,
        /// Why.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },

    /// Setting up TLS failed before connecting.
    #[error("backend TLS could not be set up")]
    Tls(#[source] openssl::error::ErrorStack),

    /// Connecting (TCP, TLS or authentication) failed.
    #[error("backend connection failed for the {role} role {user:?} at {host}:{port}/{dbname}")]
    Connect {
        /// Which of the two roles.
        role: Role,
        /// The role's user name.
        user: String,
        /// The configured host.
        host: String,
        /// The configured port.
        port: u16,
        /// The configured database.
        dbname: String,
        /// The driver's error (it never carries the password).
        #[source]
        source: postgres::Error,
    },

    /// No pooled application connection could be had.
    #[error("backend connection pool has no connection available")]
    Pool(#[source] r2d2::Error),

    /// A query against the backend failed.
    #[error("backend query failed while {context}")]
    Query {
        /// What was being done.
        context: &'static str,
        /// The driver's error.
        #[source]
        source: postgres::Error,
    },

    /// A migration step's SQL failed (the transaction was rolled back: nothing changed).
    #[error("backend migration step {step} failed")]
    MigrationStep {
        /// The step.
        step: Step,
        /// The driver's error.
        #[source]
        source: postgres::Error,
    },

    /// Upstream's 003 → 002 guard refused the downgrade (nothing changed).
    #[error("backend refused the downgrade from 003 to 002: {message}")]
    DowngradeRefused {
        /// The guard's message, as PipelineWise words it.
        message: String,
    },

    /// `alembic_version` holds a revision this datadiff does not know.
    #[error("backend schema is at unknown PipelineWise revision {0:?}")]
    UnknownRevision(String),

    /// The backend has an extension migration this datadiff does not embed (a newer
    /// datadiff migrated it).
    #[error("backend has datadiff extension migration {version} ({name}) that this datadiff does not know")]
    UnknownExtension {
        /// Its version.
        version: i32,
        /// Its recorded name.
        name: String,
    },

    /// An applied extension migration differs from the embedded one.
    #[error(
        "backend extension migration {version} ({name}) was changed after it was applied: its checksum differs from this datadiff's"
    )]
    ExtensionChecksumMismatch {
        /// Its version.
        version: i32,
        /// Its name.
        name: String,
    },

    /// Applied extension versions are not a prefix of the embedded chain.
    #[error("backend extension migration {missing} is not applied but a later one is")]
    ExtensionGap {
        /// The first missing version.
        missing: i32,
    },

    /// Going below upstream 004 while extension tables exist needs `drop_extensions`.
    #[error(
        "backend has datadiff extension tables: migrating to {target} removes them and their row_diff evidence; back up first and pass --drop-extensions"
    )]
    ExtensionsBlockDowngrade {
        /// The requested target.
        target: Target,
    },

    /// `drop_extensions` was asked for with a target that keeps them.
    #[error("backend --drop-extensions only applies to a target below 004")]
    DropExtensionsNeedsLowerTarget,

    /// The catalog differs from PipelineWise's revision 004 (adoption refused, nothing changed).
    #[error("backend schema differs from PipelineWise's revision 004: {difference}")]
    CatalogMismatch {
        /// The first difference found.
        difference: CatalogDifference,
    },

    /// The schema gate: the backend is not at the version this datadiff needs.
    #[error(
        "backend schema is at {found}, datadiff needs 004 (+ extensions {needs}): run datadiff import_config --dir {}",
        project.display()
    )]
    SchemaNotCurrent {
        /// The version found, rendered (`base`, `003`, `004 (+ extensions 0)`, …).
        found: String,
        /// The extension version this datadiff needs.
        needs: i32,
        /// The project directory to name in the hint.
        project: PathBuf,
    },
}

impl Error {
    /// True when the backend could not be reached or refused the login (including TLS
    /// verification failures and an exhausted pool).
    pub fn is_connection(&self) -> bool {
        matches!(self, Error::Connect { .. } | Error::Pool(_))
    }

    /// True when the backend schema is not the one this datadiff needs (the gate, an
    /// unknown revision or extension, a changed extension migration, or a foreign catalog).
    pub fn is_schema(&self) -> bool {
        matches!(
            self,
            Error::SchemaNotCurrent { .. }
                | Error::UnknownRevision(_)
                | Error::UnknownExtension { .. }
                | Error::ExtensionChecksumMismatch { .. }
                | Error::ExtensionGap { .. }
                | Error::CatalogMismatch { .. }
        )
    }

    /// True when the configuration itself is wrong (missing fields, bad sslmode or target,
    /// unreadable root certificate).
    pub fn is_config(&self) -> bool {
        matches!(
            self,
            Error::MissingFields(_)
                | Error::InvalidSslMode(_)
                | Error::InvalidTarget(_)
                | Error::RootCertificate { .. }
                | Error::DropExtensionsNeedsLowerTarget
        )
    }

    /// The PostgreSQL SQLSTATE of the underlying database error, if there is one.
    pub fn sqlstate(&self) -> Option<&postgres::error::SqlState> {
        match self {
            Error::Connect { source, .. } | Error::Query { source, .. } | Error::MigrationStep { source, .. } => {
                source.code()
            }
            _ => None,
        }
    }

    pub(crate) fn query(context: &'static str) -> impl FnOnce(postgres::Error) -> Error {
        move |source| Error::Query { context, source }
    }
}
