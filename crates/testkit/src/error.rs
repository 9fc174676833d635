//! The testkit error.

use std::path::PathBuf;

/// Why a throwaway cluster could not be started, used or stopped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// No PostgreSQL server binaries were found.
    #[error(
        "PostgreSQL server binaries (initdb, pg_ctl, postgres) not found (searched: {searched}); \
         install them (Debian: `apt-get install postgresql`) or set DATADIFF_TEST_PG_BINDIR \
         to their directory"
    )]
    BinariesNotFound {
        /// Where we looked.
        searched: String,
    },
    /// No MariaDB server binaries were found.
    #[error(
        "MariaDB server binaries (mariadb-install-db, mariadbd) not found (searched: {searched}); \
         install them (Debian: `apt-get install mariadb-server`) or set DATADIFF_TEST_MARIADB_BINDIR \
         to the directory holding both"
    )]
    MariaDbBinariesNotFound {
        /// Where we looked.
        searched: String,
    },
    /// A file-system or process operation failed.
    #[error("{action}")]
    Io {
        /// What was being done.
        action: String,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// A server program exited unsuccessfully.
    #[error("{program} failed ({status}): {output}")]
    Command {
        /// The program.
        program: String,
        /// Its exit status.
        status: String,
        /// The tail of its output.
        output: String,
    },
    /// A client certificate was asked of a cluster started without TLS.
    #[error("the throwaway cluster has no TLS, so no CA to sign a client certificate")]
    NotTls,
    /// The server did not start; its log says why.
    #[error("the throwaway PostgreSQL server did not start; server log {log}: {tail}")]
    Start {
        /// The server log.
        log: PathBuf,
        /// The log's last lines.
        tail: String,
    },
    /// The MariaDB server did not start; its error log says why.
    #[error("the throwaway MariaDB server did not start; server log {log}: {tail}")]
    MariaDbStart {
        /// The server's error log.
        log: PathBuf,
        /// The log's last lines.
        tail: String,
    },
    /// A statement against the throwaway MariaDB server failed.
    #[cfg(feature = "mariadb")]
    #[error("{action}")]
    MySql {
        /// What was being done.
        action: String,
        /// The cause.
        #[source]
        source: mysql::Error,
    },
    /// A privilege name for a grant is not a plain SQL keyword list (`SELECT`, `SHOW VIEW`).
    #[error("not a privilege name: {0:?}")]
    Privilege(String),
    /// A statement against the throwaway cluster failed.
    #[error("{action}")]
    Postgres {
        /// What was being done.
        action: String,
        /// The cause.
        #[source]
        source: postgres::Error,
    },
    /// A wait on a throwaway server (a subscription's initial copy, its catching up) did not
    /// end in time.
    #[error("waited {waited:?} for {what}")]
    Timeout {
        /// What was waited for.
        what: String,
        /// How long.
        waited: std::time::Duration,
    },
    /// Generating TLS certificates failed.
    #[error("generating TLS certificates failed")]
    Tls(#[from] openssl::error::ErrorStack),
}

impl Error {
    pub(crate) fn io(action: impl Into<String>) -> impl FnOnce(std::io::Error) -> Error {
        let action = action.into();
        move |source| Error::Io { action, source }
    }

    #[cfg(feature = "mariadb")]
    pub(crate) fn my(action: impl Into<String>) -> impl FnOnce(mysql::Error) -> Error {
        let action = action.into();
        move |source| Error::MySql { action, source }
    }

    pub(crate) fn pg(action: impl Into<String>) -> impl FnOnce(postgres::Error) -> Error {
        let action = action.into();
        move |source| Error::Postgres { action, source }
    }
}
