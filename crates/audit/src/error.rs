//! The audit's error type: a refusal, or what went wrong talking to the databases or writing
//! the report.

use std::path::PathBuf;

use crate::refusal::Refusal;

/// An error of the parity audit.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The audit refused to run or to go on (exit 2, no report): see [`Refusal`].
    #[error("{0}")]
    Refused(Refusal),
    /// The columns of the two tables cannot be matched.
    #[error(transparent)]
    Columns(#[from] crate::columns::ColumnMatchError),
    /// `--position` cannot be used on these databases (see [`crate::PositionError`]).
    #[error(transparent)]
    Position(#[from] crate::live::PositionError),
    /// Talking to the source or the replica failed.
    #[error(transparent)]
    Access(#[from] datadiff_access::Error),
    /// A server did not answer a step within the statement timeout plus the grace (see the
    /// `watch` module): its session was cancelled and abandoned.
    #[error(
        "no answer from {databases} within {seconds} s (statement_timeout {statement_timeout} s + {grace} s grace) \
         while {step}; a cancel request was sent and the connections abandoned"
    )]
    NoAnswer {
        /// `the source database`, `the replica database`, or both.
        databases: String,
        /// What the audit was doing (`scanning`, `counting rows`, ...).
        step: &'static str,
        /// The deadline, in seconds.
        seconds: u64,
        /// The statement timeout, in seconds.
        statement_timeout: u64,
        /// The grace, in seconds.
        grace: u64,
    },
    /// The audit's worker thread could not be started, or stopped without an answer.
    #[error("the audit thread {0}")]
    Thread(&'static str),
    /// Writing the report failed.
    #[error("cannot write the report to {}", path.display())]
    WriteReport {
        /// The report file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
}

impl Error {
    /// True when the audit refused (a precondition, a limit, CDC metadata, the same
    /// database, the row limit during the scan), as opposed to failing.
    pub fn is_refusal(&self) -> bool {
        matches!(self, Error::Refused(_))
    }
}

/// A connection setting that cannot be read (a DSN, the password or service file, TLS files)
/// is an access error ([`datadiff_access::Error::Settings`]).
impl From<datadiff_connect::Error> for Error {
    fn from(error: datadiff_connect::Error) -> Self {
        Error::Access(error.into())
    }
}
