//! The runner's error type: the backend, interruptions, signals, and what source or replica
//! access reported ([`datadiff_access::Error`]).
//!
//! Errors keep the cause with `#[source]`; `Display` says one layer and never repeats the
//! cause. No variant carries a row value, a DSN or a password.

/// An error of the runner.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Talking to a source or replica failed (see [`datadiff_access::Error`]).
    #[error(transparent)]
    Access(#[from] datadiff_access::Error),
    /// The backend store failed: opening it, or a write of an attempt. An attempt that was
    /// started stays RUNNING until the stale sweep retires it (one whose write only got no
    /// answer is recorded ERROR over a fresh connection instead, when the backend takes one).
    #[error("{action} failed")]
    Backend {
        /// What was being done, e.g. `starting an attempt of postgres/tap/public/t`.
        action: String,
        /// The store's error.
        #[source]
        source: datadiff_backend_store::Error,
    },
    /// The backend did not complete a connection within its connect timeout.
    #[error("the backend at {address} did not answer within its connect timeout of {} s", timeout.as_secs_f64())]
    BackendTimeout {
        /// `host:port/dbname`.
        address: String,
        /// The connect timeout.
        timeout: std::time::Duration,
    },
    /// An attempt was interrupted through its in-flight registry and left RUNNING for the
    /// interrupter to record (see [`crate::InFlight`]).
    #[error("run {run_id} was interrupted before it completed")]
    Interrupted {
        /// The attempt.
        run_id: datadiff_diff_core::attempt::RunId,
    },
    /// SIGTERM/SIGINT handlers could not be installed (or another invocation of this
    /// process holds them).
    #[error("cannot install the SIGTERM, SIGINT and SIGHUP handlers")]
    Signals {
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// `--jobs N` needs at least N backend connections.
    #[error("--jobs {jobs} needs a backend pool of at least {jobs} connections (it has {pool})")]
    PoolTooSmall {
        /// The jobs asked for.
        jobs: usize,
        /// The pool's size.
        pool: u32,
    },
}

impl Error {
    /// True when the backend went away (see
    /// [`datadiff_backend_store::Error::is_backend_lost`]) or did not answer a login.
    pub fn is_backend_lost(&self) -> bool {
        matches!(self, Error::Backend { source, .. } if source.is_backend_lost())
            || matches!(self, Error::BackendTimeout { .. })
    }

    /// True when `rerun` was given a run that cannot be remediated (unknown, not FAIL or
    /// ERROR, or an empty reference): the CLI exits 2. A slot with a RUNNING attempt is not
    /// among them (a passing state: exit 1 with upstream's message).
    pub fn is_invalid_rerun(&self) -> bool {
        matches!(self, Error::Backend { source, .. } if source.is_invalid_rerun())
    }
}

pub(crate) use datadiff_access::chain;
