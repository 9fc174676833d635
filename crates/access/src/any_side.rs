//! One open side of an attempt whatever database it is: [`AnySide`] holds a PostgreSQL
//! [`SideSession`] or a MySQL/MariaDB [`MySqlSideSession`] and offers what an attempt needs
//! from either — its catalog, the `MIN` of a timestamp, one aggregate row of canonical values,
//! a canceller and a close — so that the runner's attempt flow is written once.
//!
//! An enum rather than a trait: there are two kinds, the runner matches on the kind where the
//! two differ (the preflight reads `pg_index` or `information_schema.STATISTICS`; `row_diff`
//! streams PostgreSQL only), and both sessions stay plain types with no boxing.

use chrono::{DateTime, Utc};
use datadiff_diff_core::{Side, attempt::Bounds, definition::CheckType, merge::Value, plan::TableColumns};

#[cfg(feature = "mysql")]
use crate::mysql_side::{MySqlCanceller, MySqlSideSession};
use crate::side::{SideCanceller, SideSession};
use crate::side_error::SideError;

/// An open side: PostgreSQL or MySQL/MariaDB.
// Two of these live per attempt, for its length: the size difference does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum AnySide {
    /// A PostgreSQL source or target.
    Postgres(SideSession),
    /// A MySQL or MariaDB source.
    #[cfg(feature = "mysql")]
    MySql(MySqlSideSession),
}

impl AnySide {
    /// Which side it is.
    pub fn side(&self) -> Side {
        match self {
            AnySide::Postgres(session) => session.side(),
            #[cfg(feature = "mysql")]
            AnySide::MySql(session) => session.side(),
        }
    }

    /// The columns of `schema.table`, from the database's `information_schema`.
    pub fn columns(&mut self, schema: &str, table: &str) -> Result<TableColumns, SideError> {
        match self {
            AnySide::Postgres(session) => session.columns(schema, table),
            #[cfg(feature = "mysql")]
            AnySide::MySql(session) => session.columns(schema, table),
        }
    }

    /// The earliest timestamp before `cutoff` by `sql` (the side's dialect); `naive` says how
    /// PostgreSQL binds the cutoff (MySQL always binds naive UTC, its session being UTC).
    pub fn minimum(
        &mut self,
        sql: &str,
        cutoff: DateTime<Utc>,
        naive: bool,
    ) -> Result<Option<DateTime<Utc>>, SideError> {
        match self {
            AnySide::Postgres(session) => session.minimum(sql, cutoff, naive),
            #[cfg(feature = "mysql")]
            AnySide::MySql(session) => session.minimum(sql, cutoff),
        }
    }

    /// The aggregate row of `sql` over `bounds`, one canonical value per metric, and the
    /// query's wall time in seconds.
    pub fn aggregate(
        &mut self,
        sql: &str,
        bounds: Bounds,
        naive: bool,
        metrics: &[CheckType],
    ) -> Result<(Vec<Value>, f64), SideError> {
        match self {
            AnySide::Postgres(session) => session.aggregate(sql, bounds, naive, metrics),
            #[cfg(feature = "mysql")]
            AnySide::MySql(session) => session.aggregate(sql, bounds, metrics),
        }
    }

    /// A handle cancelling the side's running statement.
    pub fn canceller(&self) -> AnyCanceller {
        match self {
            AnySide::Postgres(session) => AnyCanceller::Postgres(session.canceller()),
            #[cfg(feature = "mysql")]
            AnySide::MySql(session) => AnyCanceller::MySql(session.canceller()),
        }
    }

    /// The PostgreSQL session, when it is one.
    pub fn as_postgres(&mut self) -> Option<&mut SideSession> {
        match self {
            AnySide::Postgres(session) => Some(session),
            #[cfg(feature = "mysql")]
            AnySide::MySql(_) => None,
        }
    }

    /// Rolls back and closes (best effort).
    pub fn close(self) {
        match self {
            AnySide::Postgres(session) => session.close(),
            #[cfg(feature = "mysql")]
            AnySide::MySql(session) => session.close(),
        }
    }

    /// Whether a statement got no answer within its deadline (the session gave up its
    /// connection).
    pub fn is_abandoned(&self) -> bool {
        match self {
            AnySide::Postgres(session) => session.is_abandoned(),
            #[cfg(feature = "mysql")]
            AnySide::MySql(session) => session.is_abandoned(),
        }
    }

    /// Gives up the connection without waiting for the server.
    pub fn abandon(self) {
        match self {
            AnySide::Postgres(session) => session.abandon(),
            #[cfg(feature = "mysql")]
            AnySide::MySql(session) => session.abandon(),
        }
    }

    /// Closes both sides ([`AnySide::close`], at once on two threads) — or, when either was
    /// abandoned, gives both up without waiting: one deadline has passed, nothing waits on a
    /// server again.
    pub fn close_both(first: AnySide, second: AnySide) {
        if first.is_abandoned() || second.is_abandoned() {
            first.abandon();
            second.abandon();
            return;
        }
        std::thread::scope(|scope| {
            scope.spawn(move || second.close());
            first.close();
        });
    }
}

/// Cancels either kind of side's running statement from another thread.
#[derive(Clone)]
pub enum AnyCanceller {
    /// PostgreSQL's cancel request.
    Postgres(SideCanceller),
    /// MySQL's `KILL QUERY` from a connection of its own.
    #[cfg(feature = "mysql")]
    MySql(MySqlCanceller),
}

impl AnyCanceller {
    /// Asks the server to cancel whatever the session runs; best effort.
    pub fn cancel(&self) {
        match self {
            AnyCanceller::Postgres(canceller) => canceller.cancel(),
            #[cfg(feature = "mysql")]
            AnyCanceller::MySql(canceller) => canceller.cancel(),
        }
    }
}

impl std::fmt::Debug for AnyCanceller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AnyCanceller::Postgres(_) => f.write_str("AnyCanceller::Postgres"),
            #[cfg(feature = "mysql")]
            AnyCanceller::MySql(canceller) => write!(f, "AnyCanceller::MySql({canceller:?})"),
        }
    }
}

impl From<SideCanceller> for AnyCanceller {
    fn from(canceller: SideCanceller) -> AnyCanceller {
        AnyCanceller::Postgres(canceller)
    }
}
