//! Why `row_diff` produced no comparison of a window ([`RowDiffError`]).

use datadiff_access::{SideError, TableName};
use datadiff_diff_core::Side;
use datadiff_diff_core::plan::IdentifierError;

/// Why `row_diff` produced no comparison of a window: it could not be planned, a side could
/// not be read, or the comparison stopped. `Display` is the `row_diff` result's one-line
/// reason, stored as the result's `error` and printed by `run`; it names sides, tables,
/// columns and keys, never a row value or a password.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RowDiffError {
    /// The definition compares no column besides the key.
    #[error("row_diff requires at least one compare_columns entry for {0}")]
    NoCompareColumns(TableName),
    /// A compared column is missing on one side (as the other checks say it).
    #[error("Column '{column}' does not exist in {table}")]
    MissingColumn {
        /// The column as the definition names it on that side.
        column: String,
        /// The side's table.
        table: TableName,
    },
    /// The columns cannot be compared: a type pair without a rule, a key type that cannot
    /// be ordered alike on both sides.
    #[error("row_diff: {}", crate::error::chain(.0))]
    Plan(#[source] datadiff_access::Error),
    /// An identifier the source database cannot quote.
    #[error("row_diff: {0}")]
    Identifier(#[source] IdentifierError),
    /// A side of another database than the plan needs.
    #[error("row_diff: a PostgreSQL {0} was expected")]
    NotPostgres(&'static str),
    /// A MySQL source's route carries no MySQL settings.
    #[error("row_diff: the source has no MySQL settings")]
    NoMySqlSettings,
    /// A side session failed (connect, timeout, a statement).
    #[error(transparent)]
    Side(#[from] SideError),
    /// A side's `pg_catalog` read failed.
    #[error("{side} catalog read failed: {reason}")]
    Catalog {
        /// The side.
        side: Side,
        /// The server's primary message or the error's causes.
        reason: String,
    },
    /// The TLS connector of a side's stream could not be built.
    #[error("row_diff: TLS setup for the {side} stream failed: {reason}")]
    StreamTls {
        /// The side.
        side: Side,
        /// Why, naming the file.
        reason: String,
    },
    /// The segment search was asked of a side that cannot hash.
    #[error("row_diff: the {0} rows cannot be hashed by segment")]
    NotHashable(Side),
    /// A MySQL or MariaDB source was asked to hash (it is always streamed).
    #[error("row_diff: MySQL and MariaDB sources are streamed")]
    MySqlStreams,
    /// A segment statement (preparation, overview, level) failed.
    #[error("row_diff: {0}")]
    Segment(String),
    /// A stream failed, or the merge stopped (a duplicate key, rows out of key order).
    #[error("row_diff: {0}")]
    Stream(String),
    /// The split points of a window divided into key ranges could not be read.
    #[error("row_diff: {0}")]
    SplitPoints(String),
    /// The streams did not answer within their deadline.
    #[error(
        "row_diff: no answer from {databases} within {waited} s (statement_timeout {timeout} s + {grace} s grace); \
         a cancel request was sent and the connection abandoned"
    )]
    NoAnswer {
        /// `the source database`, `the target database` or both.
        databases: String,
        /// The whole wait in seconds.
        waited: u64,
        /// The statement timeout in seconds.
        timeout: u64,
        /// The sessions' grace in seconds.
        grace: u64,
    },
    /// A part of a divided window failed: its reason as the
    /// process comparing it stored it.
    #[error("{0}")]
    Part(String),
    /// The backend's part queue of a divided window could not be read or written.
    #[error("row_diff: the backend's part queue failed: {0}")]
    Parts(String),
    /// The attempt was interrupted (a signal, `--max-duration`).
    #[error("row_diff: interrupted")]
    Interrupted,
}
