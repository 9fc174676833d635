//! The crate's one error type.

use std::path::PathBuf;

use chrono::{DateTime, Utc};
use datadiff_diff_core::{
    attempt::{CheckId, RemediationRefusal, ResultType, RunId, RunStatus, SkipReason},
    definition::DefinitionError,
};

use crate::catalog::CatalogDifference;
use crate::connection::Role;
use crate::migrate::{Step, Target};

/// Everything that can go wrong opening, gating, migrating or using a backend.
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

    /// The client certificate (`sslcert`) or its key (`sslkey`) could not be loaded, or they
    /// do not match.
    #[error("backend client certificate {} could not be loaded", .path.display())]
    ClientCertificate {
        /// The `sslcert` or `sslkey` file.
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

    /// The backend accepted the connection but did not complete the login (TCP, TLS and
    /// authentication together) within `connect_timeout`.
    #[error("backend did not answer within {timeout:?} for the {role} role {user:?} at {host}:{port}/{dbname}")]
    ConnectTimeout {
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
        /// The configured connect timeout.
        timeout: std::time::Duration,
    },

    /// The backend did not answer an operation within its client deadline (see
    /// [`Store::bounded`](crate::Store::bounded)): its connection was abandoned.
    #[error("backend did not answer within {seconds} s while {action}; the connection was abandoned")]
    NoAnswer {
        /// What was being done.
        action: &'static str,
        /// The deadline, in seconds.
        seconds: u64,
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

    /// A backend at upstream 004 without datadiff's extension tables (one PipelineWise
    /// migrated) holds a current definition that needs one: `row_diff` records its evidence
    /// in `datadiff_run_differences`.
    #[error(
        "{definitions} use{s} row_diff, whose evidence needs the datadiff extension migration {version} ({name}) \
         this backend lacks: run datadiff migrate --dir {project}",
        s = if definitions.contains(", ") { "" } else { "s" },
        project = project.display()
    )]
    ExtensionNeeded {
        /// The current definitions that need it, comma-separated.
        definitions: String,
        /// The migration's version.
        version: i32,
        /// The migration's name.
        name: &'static str,
        /// The project directory to name in the hint.
        project: PathBuf,
    },

    /// The attempt is no longer RUNNING (the stale sweep expired it, or another worker
    /// finished it): the late write was refused and nothing was written. The runner reports
    /// SKIPPED with [`Error::lease_lost`]'s reason.
    #[error("backend run {run_id} is no longer RUNNING (status: {status})")]
    LeaseLost {
        /// The attempt.
        run_id: RunId,
        /// Its recorded status.
        status: RunStatus,
    },

    /// No attempt has this run id.
    #[error("backend has no run {0}")]
    UnknownRun(RunId),

    /// No check definition revision has this id.
    #[error("backend has no check definition {0}")]
    UnknownCheck(CheckId),

    /// A remediation was refused (upstream's message: not FAIL or ERROR, a RUNNING attempt
    /// in the slot, or an empty reference); nothing was written.
    #[error("{0}")]
    Remediation(RemediationRefusal),

    /// A preflight was recorded for a run of another check (upstream: "Preflight check does
    /// not match its run"); nothing was written.
    #[error("backend preflight of check {given} does not match run {run_id} of check {expected}")]
    PreflightCheckMismatch {
        /// The attempt.
        run_id: RunId,
        /// The attempt's check.
        expected: CheckId,
        /// The check the preflight was recorded for.
        given: CheckId,
    },

    /// A historical start was recorded for a RUNNING attempt whose start is already resolved
    /// (or never was unresolved); nothing was written.
    #[error("backend run {run_id} already has a resolved window start")]
    StartAlreadyResolved {
        /// The attempt.
        run_id: RunId,
    },

    /// An attempt can only be finished with PASS, FAIL, ERROR or DEFERRED.
    #[error("backend cannot finish run {run_id} as {status}: not a terminal status")]
    NotTerminal {
        /// The attempt.
        run_id: RunId,
        /// The status given.
        status: RunStatus,
    },

    /// A stored definition's `canonical_config` cannot be read back as a definition.
    #[error("backend check definition {check_id} has an unreadable canonical configuration")]
    StoredDefinition {
        /// The revision.
        check_id: CheckId,
        /// Why.
        #[source]
        source: DefinitionError,
    },

    /// A column holds a value outside its vocabulary (a status text, an event type, …).
    #[error("backend column {column} holds the unexpected value {value:?}")]
    UnexpectedValue {
        /// `table.column`.
        column: &'static str,
        /// The text found.
        value: String,
    },

    /// The coverage transition refused the stored rows or the attempt (nothing was written).
    #[error("backend watermark of check {check_id} could not be evaluated for run {run_id}")]
    Watermark {
        /// The check revision.
        check_id: CheckId,
        /// The attempt being evaluated.
        run_id: RunId,
        /// The watermark model's refusal.
        #[source]
        source: datadiff_watermark::Error,
    },

    /// Two incoming definitions share one `full_check_name` (nothing was written).
    #[error("backend definition sync was given {0:?} twice")]
    DuplicateDefinition(String),

    /// Two results of one run share a check type (`dd_run_results`' primary key).
    #[error("backend run {run_id} was given two results of check type {check_type}")]
    DuplicateResult {
        /// The attempt.
        run_id: RunId,
        /// The repeated check type.
        check_type: ResultType,
    },

    /// A `row_diff` difference whose changed fields do not match its kind (non-empty exactly
    /// for CHANGED).
    #[error("backend run {run_id} was given a {kind} difference of {check_type} with {fields} changed field(s)")]
    InvalidDifference {
        /// The attempt.
        run_id: RunId,
        /// The check type.
        check_type: ResultType,
        /// The kind (`MISSING_IN_TARGET`, …).
        kind: &'static str,
        /// How many field names it carried.
        fields: usize,
    },

    /// A preflight fingerprint that is not 64 lowercase hexadecimal characters.
    #[error("backend preflight fingerprint {0:?} is not 64 lowercase hexadecimal characters")]
    InvalidFingerprint(String),

    /// A slot whose window falls outside the representable time range.
    #[error("backend check {check_id} has no representable window for the slot {scheduled_for}")]
    WindowOutOfRange {
        /// The check revision.
        check_id: CheckId,
        /// The slot.
        scheduled_for: DateTime<Utc>,
    },
}

impl Error {
    /// True when the backend could not be reached or refused the login (including TLS
    /// verification failures and an exhausted pool).
    pub fn is_connection(&self) -> bool {
        matches!(self, Error::Connect { .. } | Error::ConnectTimeout { .. } | Error::Pool(_))
    }

    /// True when the backend went away: it cannot be reached ([`Error::is_connection`]), it
    /// did not answer within its client deadline ([`Error::NoAnswer`]), or
    /// a query failed because its connection closed or the server is shutting down or
    /// starting (SQLSTATE class 08, `57P01`–`57P03`). Nothing after it can be recorded until
    /// the backend is back.
    pub fn is_backend_lost(&self) -> bool {
        if self.is_connection() || matches!(self, Error::NoAnswer { .. }) {
            return true;
        }
        let Error::Query { source, .. } = self else {
            return false;
        };
        if source.is_closed() {
            return true;
        }
        match source.code() {
            Some(code) => {
                let code = code.code();
                code.starts_with("08") || matches!(code, "57P01" | "57P02" | "57P03")
            }
            // Not a server error: lost when the driver's I/O on the connection failed.
            None => std::error::Error::source(source).is_some_and(|cause| cause.is::<std::io::Error>()),
        }
    }

    /// True when the backend schema is not the one this datadiff needs (the gate, an
    /// unknown revision or extension, a changed extension migration, or a foreign catalog).
    pub fn is_schema(&self) -> bool {
        matches!(
            self,
            Error::SchemaNotCurrent { .. }
                | Error::ExtensionNeeded { .. }
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
                | Error::InvalidTarget(_)
                | Error::RootCertificate { .. }
                | Error::ClientCertificate { .. }
                | Error::DropExtensionsNeedsLowerTarget
        )
    }

    /// The SKIPPED reason of a lost lease (upstream's "Run … is no longer RUNNING …" text),
    /// `None` for every other error.
    pub fn lease_lost(&self) -> Option<SkipReason> {
        match self {
            Error::LeaseLost { run_id, status } => Some(SkipReason::LeaseLost { run_id: *run_id, status: *status }),
            _ => None,
        }
    }

    /// True when `rerun` named a run that cannot be remediated: an unknown run, a run that
    /// is not FAIL or ERROR, or an empty reference (the CLI's exit 2). A RUNNING attempt in
    /// the slot is not among them: it is a state that passes.
    pub fn is_invalid_rerun(&self) -> bool {
        matches!(
            self,
            Error::UnknownRun(_)
                | Error::Remediation(RemediationRefusal::NotFailed { .. } | RemediationRefusal::MissingReference)
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
