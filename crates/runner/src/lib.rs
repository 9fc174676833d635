//! The datadiff runner: everything that talks to source and replica databases.
//!
//! # Overview
//!
//! * [`Dsn`] parses libpq-style connection strings (URI or key=value) with libpq's fallbacks
//!   (`PGPASSWORD`, the password file, `PGHOST`…), read from an [`Environment`].
//! * [`Session`] is a read-only session with the audit's timeouts and libpq's `sslmode`
//!   meanings ([`TlsSettings`]); [`DatabaseIdentity`] tells whether two sessions reach the
//!   same database.
//! * [`stream`] holds the streaming readers: catalog column types, per-column decoders to
//!   canonical values, and [`stream::RowStream`], a reader thread per side streaming binary
//!   `COPY` in key order into the merge core with flat memory. `row_diff` builds on them.
//! * [`audit`] is the standalone parity audit (SPEC §9): [`audit::audit`] takes
//!   [`audit::AuditOptions`] and returns an [`audit::AuditReport`] (PASS or BLOCK) or an
//!   [`Error`] ([`Error::Refused`] for refusals).
//!
//! ```no_run
//! use datadiff_runner::Environment;
//! use datadiff_runner::audit::{AuditOptions, audit};
//!
//! let mut options = AuditOptions::new(
//!     "postgresql://auditor@source.internal/app",
//!     "host=replica.internal dbname=app user=auditor",
//!     "public.customers".parse()?,
//! );
//! options.cutover_ready = true;
//! let report = audit(&options, &Environment::process(), &mut |_progress| {})?;
//! print!("{}", report.to_json());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # What it does not do (yet)
//!
//! Scheduled checks, attempts, retries, remediation, sweeps and alerts (SPEC §4–§7) arrive
//! with their issues. Composite keys are not supported. `sslmode=allow` is refused (see
//! [`SslMode`]).

pub mod audit;
mod dsn;
mod environment;
mod error;
mod passfile;
mod session;
pub mod stream;
mod table;
pub mod tls;

pub use dsn::{DEFAULT_CONNECT_TIMEOUT, Dsn};
pub use environment::Environment;
pub use error::Error;
pub use passfile::{PassfileQuery, lookup as passfile_lookup};
pub use session::{AUDIT_STATEMENT_TIMEOUT, Canceller, DatabaseIdentity, Session, SessionSettings};
pub use table::{TableName, TableNameError};
pub use tls::{RootCertificates, SslMode, SslModeError, TlsSettings};

/// Splits a comma-separated list of column names (double quotes allowed around a name that
/// contains a comma); `None` when a quote is unterminated.
pub fn parse_column_list(text: &str) -> Option<Vec<String>> {
    table::split_identifiers(text, ',')
}
