//! Source and replica access for datadiff: how it reaches the databases it compares.
//!
//! A synchronous API over PostgreSQL (tokio stays private inside, as `postgres` sits over
//! `tokio-postgres`); every session is read-only and every connection has a deadline.
//!
//! # Overview
//!
//! * The connection settings are the connection crate's (`datadiff-connect`), re-exported
//!   here with their paths unchanged: [`Dsn`] parses libpq-style connection strings (URI or
//!   key=value) with libpq's fallbacks (`PGPASSWORD`, the password file [`passfile_lookup`],
//!   the connection service file [`service`], `PGHOST`…), read from an [`Environment`]
//!   captured once; [`TlsSettings`] and [`RootCertificates`] hold libpq's `sslmode` rules
//!   ([`datadiff_diff_core::definition::SslMode`]), decided in one place ([`tls`]), client
//!   certificates included; [`ClientTls`] is a connection's TLS ready to use (a server
//!   certificate it rejects is named as psql names it: [`CertificateRejected`]); [`LazyTls`]
//!   builds an unverified TLS context only for a server that accepts TLS; [`within_deadline`]
//!   bounds a whole connection. Their errors are [`Error::Settings`].
//! * [`Session`] is a read-only session with the audit's settings ([`SessionSettings`]);
//!   [`DatabaseIdentity`] tells whether two sessions reach the same database.
//! * [`SideSession`] is one side of a scheduled attempt, set up as PipelineWise sets it up
//!   (UTC, a transaction-local `statement_timeout`), from a [`SideConfig`]; it reads the
//!   catalog ([`table_columns`]), the `MIN` of a timestamp and one aggregate row of canonical
//!   values.
//! * [`MySqlSideSession`] is the same for a MySQL or MariaDB source (`tap-mysql`), from a
//!   [`MySqlSideConfig`], with upstream's session statements and MySQL forms; [`AnySide`]
//!   holds either kind so an attempt's flow is written once.
//! * [`stream`] holds the ordered row streams: catalog column types, per-column decoders to
//!   canonical values, and [`stream::RowStream`], a reader thread per side streaming binary
//!   `COPY` in key order into the merge core with flat memory — or, for a MySQL/MariaDB
//!   source, its ordered `SELECT` ([`stream::RowStream::mysql`], planned against the replica
//!   by [`stream::plan_mysql_pair`]) in the same canonical encodings.
//! * [`segment`] holds the segment strategy's SQL: each database hashes its rows by key
//!   segment, so that only hashes and the rows of differing segments cross the link.
//! * [`TableName`] is a `schema.table` with quoting.
//!
//! ```no_run
//! use datadiff_access::{Dsn, Environment, Session, SessionSettings};
//!
//! let environment = Environment::process();
//! let dsn = Dsn::parse("source", "postgresql://auditor@source.internal/app", &environment)?;
//! let mut session = Session::connect(&dsn, SessionSettings::audit())?;
//! let identity = session.identity()?;
//! println!("{} on cluster {}", identity.database, identity.system_identifier);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # What it does not do
//!
//! It keeps no records (that is `datadiff-backend-store`) and decides nothing about checks
//! (that is `datadiff-diff-core`): it connects, reads the catalog and streams rows. PostgreSQL
//! is spoken everywhere; MySQL/MariaDB as a source (catalog facts, the preflight's facts,
//! `MIN`, one aggregate query, and the ordered row stream of `row_diff`) with the `mysql`
//! cargo feature, which a program reading such a source enables (the runner, the command
//! line): without it, the crate links no MySQL driver.

mod any_side;
pub mod compare;
mod database;
mod error;
mod lend;
#[cfg(feature = "mysql")]
mod mysql_side;
pub mod segment;
mod session;
mod side;
mod side_error;
pub mod split;
pub mod stream;
mod table;

pub use any_side::{AnyCanceller, AnySide};
// The connection crate's items, re-exported so that `datadiff_access::Dsn` and the others
// keep their paths for the other crates and for embedders.
pub use database::Database;
pub use datadiff_connect::{
    ANSWER_GRACE, DEFAULT_CONNECT_TIMEOUT, DeadlineError, Dsn, Environment, KEEPALIVES_COUNT, KEEPALIVES_IDLE,
    KEEPALIVES_INTERVAL, LazyTls, LazyTlsConnect, PassfileQuery, Service, ServiceParam, TCP_USER_TIMEOUT, chain,
    passfile_lookup, service, tls, with_keepalive_defaults, within_deadline,
};
pub use datadiff_connect::{
    CertificateRejected, ClientCertificate, ClientTls, RootCertificates, TlsSettings, TlsSetupError, Verify,
    tls_context, unverified_connector, unverified_tls, verifying_tls,
};
pub use error::Error;
#[cfg(feature = "mysql")]
pub use mysql_side::{MySqlCanceller, MySqlSideConfig, MySqlSideSession, mysql_one_line};
pub use session::{AUDIT_STATEMENT_TIMEOUT, Canceller, DatabaseIdentity, Session, SessionSettings};
pub use side::{SideCanceller, SideConfig, SideSession, one_line, table_columns};
pub use side_error::{SideError, SideErrorKind};
pub use table::{TableName, TableNameError, split_identifiers};

/// Splits a comma-separated list of column names (double quotes allowed around a name that
/// contains a comma); `None` when a quote is unterminated.
pub fn parse_column_list(text: &str) -> Option<Vec<String>> {
    table::split_identifiers(text, ',')
}
