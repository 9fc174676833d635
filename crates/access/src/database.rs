//! What an attempt asks of a database side, once for every database: the sealed trait
//! [`Database`], implemented by the PostgreSQL [`SideSession`] and, with the `mysql`
//! feature, the MySQL/MariaDB [`MySqlSideSession`](crate::MySqlSideSession).
//!
//! It covers the session's part — its catalog, the `MIN` of a timestamp, one aggregate row,
//! cancelling and ending it. The comparison's part — a side's ordered row stream and its
//! segment digests — is [`crate::compare::CompareSide`], which the comparison pipeline asks.
//! The trait is sealed: a new database is added here, as a module of this crate, so that every
//! side keeps the failure texts and deadlines an attempt stores ([`SideError`]).

use chrono::{DateTime, Utc};
use datadiff_diff_core::{Side, attempt::Bounds, definition::CheckType, merge::Value, plan::TableColumns};

use crate::any_side::AnyCanceller;
use crate::side::SideSession;
use crate::side_error::SideError;

mod sealed {
    /// Only this crate's sides are databases.
    pub trait Sealed {}
}

/// An open database side inside its read-only transaction (see the module docs).
pub trait Database: sealed::Sealed + Send + std::fmt::Debug {
    /// Which side it is.
    fn side(&self) -> Side;

    /// The columns of `schema.table`, from the database's `information_schema`.
    fn columns(&mut self, schema: &str, table: &str) -> Result<TableColumns, SideError>;

    /// The earliest timestamp before `cutoff` by `sql` (the side's dialect); `naive` says how
    /// PostgreSQL binds the cutoff (MySQL always binds naive UTC, its session being UTC).
    fn minimum(&mut self, sql: &str, cutoff: DateTime<Utc>, naive: bool) -> Result<Option<DateTime<Utc>>, SideError>;

    /// The aggregate row of `sql` over `bounds`, one canonical value per metric, and the
    /// query's wall time in seconds.
    fn aggregate(
        &mut self,
        sql: &str,
        bounds: Bounds,
        naive: bool,
        metrics: &[CheckType],
    ) -> Result<(Vec<Value>, f64), SideError>;

    /// A handle cancelling the side's running statement.
    fn canceller(&self) -> AnyCanceller;

    /// Whether a statement got no answer within its deadline (the side gave up its
    /// connection).
    fn is_abandoned(&self) -> bool;

    /// Rolls back and closes (best effort).
    fn close(self: Box<Self>);

    /// Gives up the connection without waiting for the server.
    fn abandon(self: Box<Self>);
}

impl sealed::Sealed for SideSession {}

impl Database for SideSession {
    fn side(&self) -> Side {
        SideSession::side(self)
    }

    fn columns(&mut self, schema: &str, table: &str) -> Result<TableColumns, SideError> {
        SideSession::columns(self, schema, table)
    }

    fn minimum(&mut self, sql: &str, cutoff: DateTime<Utc>, naive: bool) -> Result<Option<DateTime<Utc>>, SideError> {
        SideSession::minimum(self, sql, cutoff, naive)
    }

    fn aggregate(
        &mut self,
        sql: &str,
        bounds: Bounds,
        naive: bool,
        metrics: &[CheckType],
    ) -> Result<(Vec<Value>, f64), SideError> {
        SideSession::aggregate(self, sql, bounds, naive, metrics)
    }

    fn canceller(&self) -> AnyCanceller {
        AnyCanceller::Postgres(SideSession::canceller(self))
    }

    fn is_abandoned(&self) -> bool {
        SideSession::is_abandoned(self)
    }

    fn close(self: Box<Self>) {
        SideSession::close(*self)
    }

    fn abandon(self: Box<Self>) {
        SideSession::abandon(*self)
    }
}

#[cfg(feature = "mysql")]
mod mysql {
    use super::*;
    use crate::mysql_side::MySqlSideSession;

    impl sealed::Sealed for MySqlSideSession {}

    impl Database for MySqlSideSession {
        fn side(&self) -> Side {
            MySqlSideSession::side(self)
        }

        fn columns(&mut self, schema: &str, table: &str) -> Result<TableColumns, SideError> {
            MySqlSideSession::columns(self, schema, table)
        }

        /// `naive` is ignored: the MySQL session is UTC, the cutoff bound as naive UTC.
        fn minimum(
            &mut self,
            sql: &str,
            cutoff: DateTime<Utc>,
            _naive: bool,
        ) -> Result<Option<DateTime<Utc>>, SideError> {
            MySqlSideSession::minimum(self, sql, cutoff)
        }

        fn aggregate(
            &mut self,
            sql: &str,
            bounds: Bounds,
            _naive: bool,
            metrics: &[CheckType],
        ) -> Result<(Vec<Value>, f64), SideError> {
            MySqlSideSession::aggregate(self, sql, bounds, metrics)
        }

        fn canceller(&self) -> AnyCanceller {
            AnyCanceller::MySql(MySqlSideSession::canceller(self))
        }

        fn is_abandoned(&self) -> bool {
            MySqlSideSession::is_abandoned(self)
        }

        fn close(self: Box<Self>) {
            MySqlSideSession::close(*self)
        }

        fn abandon(self: Box<Self>) {
            MySqlSideSession::abandon(*self)
        }
    }
}
