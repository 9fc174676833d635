//! One open side of an attempt whatever database it is: [`AnySide`] holds a PostgreSQL
//! [`SideSession`] or a MySQL/MariaDB [`MySqlSideSession`] and offers what an attempt needs
//! from either — its catalog, the `MIN` of a timestamp, one aggregate row of canonical values,
//! a canceller and a close — so that the runner's attempt flow is written once.
//!
//! What the two answer alike goes through the sealed trait [`Database`] (one dispatch, no
//! match per method); the enum stays for what differs, where the runner matches on the kind
//! (the preflight reads `pg_index` or `information_schema.STATISTICS`), and it keeps both
//! sessions plain types with no boxing while they are open.

use chrono::{DateTime, Utc};
use datadiff_diff_core::{Side, attempt::Bounds, definition::CheckType, merge::Value, plan::TableColumns};

use crate::database::Database;
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
    /// The side as a [`Database`]: what every database answers alike.
    pub fn database(&self) -> &dyn Database {
        match self {
            AnySide::Postgres(session) => session,
            #[cfg(feature = "mysql")]
            AnySide::MySql(session) => session,
        }
    }

    /// The side as a mutable [`Database`].
    pub fn database_mut(&mut self) -> &mut dyn Database {
        match self {
            AnySide::Postgres(session) => session,
            #[cfg(feature = "mysql")]
            AnySide::MySql(session) => session,
        }
    }

    /// The side as an owned [`Database`] (to close or abandon it).
    fn into_database(self) -> Box<dyn Database> {
        match self {
            AnySide::Postgres(session) => Box::new(session),
            #[cfg(feature = "mysql")]
            AnySide::MySql(session) => Box::new(session),
        }
    }

    /// Which side it is.
    pub fn side(&self) -> Side {
        self.database().side()
    }

    /// The columns of `schema.table`, from the database's `information_schema`.
    pub fn columns(&mut self, schema: &str, table: &str) -> Result<TableColumns, SideError> {
        self.database_mut().columns(schema, table)
    }

    /// The earliest timestamp before `cutoff` by `sql` (the side's dialect); `naive` says how
    /// PostgreSQL binds the cutoff (MySQL always binds naive UTC, its session being UTC).
    pub fn minimum(
        &mut self,
        sql: &str,
        cutoff: DateTime<Utc>,
        naive: bool,
    ) -> Result<Option<DateTime<Utc>>, SideError> {
        self.database_mut().minimum(sql, cutoff, naive)
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
        self.database_mut().aggregate(sql, bounds, naive, metrics)
    }

    /// A handle cancelling the side's running statement.
    pub fn canceller(&self) -> AnyCanceller {
        self.database().canceller()
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
        self.into_database().close()
    }

    /// Whether a statement got no answer within its deadline (the session gave up its
    /// connection).
    pub fn is_abandoned(&self) -> bool {
        self.database().is_abandoned()
    }

    /// Gives up the connection without waiting for the server.
    pub fn abandon(self) {
        self.into_database().abandon()
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
