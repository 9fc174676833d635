//! A read-only session on a source or replica database.
//!
//! A [`Session`] is a [`postgres::Client`] connected from a [`Dsn`] with the session
//! settings applied at once (`search_path = pg_catalog` always, then `statement_timeout` and
//! `default_transaction_read_only`), plus what
//! is needed to cancel its running query from another thread (the reader threads use it to
//! stop a COPY early).

use std::fmt;
use std::time::Duration;

use postgres::{CancelToken, Client, NoTls};

use crate::error::Error;
use datadiff_connect::{DeadlineError, Dsn, LazyTls, within_deadline};

/// The statement timeout of audit sessions (the seed's 15 minutes).
pub const AUDIT_STATEMENT_TIMEOUT: Duration = Duration::from_secs(15 * 60);

/// Settings applied to a session right after it connects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionSettings {
    /// `statement_timeout`; `None` leaves the server's default.
    pub statement_timeout: Option<Duration>,
    /// `default_transaction_read_only = on`.
    pub read_only: bool,
}

impl SessionSettings {
    /// Read-only with the audit's 15-minute statement timeout.
    pub fn audit() -> SessionSettings {
        SessionSettings { statement_timeout: Some(AUDIT_STATEMENT_TIMEOUT), read_only: true }
    }
}

/// What identifies a database: the cluster's system identifier and the database's name.
///
/// Two DSNs reach the same database exactly when both are equal, whatever the host names,
/// addresses, ports or sockets they go through (`inet_server_addr()` is NULL over a Unix
/// socket, so address checks cannot tell).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DatabaseIdentity {
    /// `pg_control_system().system_identifier`, as text.
    pub system_identifier: String,
    /// `current_database()`.
    pub database: String,
}

/// A connected session.
pub struct Session {
    role: String,
    client: Client,
    /// The connector `sslmode` asked for (`prefer` has one even when the server declines).
    tls: Option<LazyTls>,
    /// Whether the connection is encrypted, as the server reports it.
    encrypted: bool,
}

impl fmt::Debug for Session {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Session").field("role", &self.role).field("tls", &self.encrypted).finish_non_exhaustive()
    }
}

impl Session {
    /// Connects and applies `settings`.
    pub fn connect(dsn: &Dsn, settings: SessionSettings) -> Result<Session, Error> {
        let role = dsn.role().to_owned();
        let tls = dsn.tls().connector(&role)?;
        // rust-postgres applies connect_timeout to the TCP connect only; libpq (and the seed)
        // bound the whole establishment, TLS and authentication included. So the connection
        // is made on a helper thread and abandoned at the deadline (the helper ends when the
        // server answers or closes the socket, or with the process).
        let deadline = dsn.config().get_connect_timeout().copied().unwrap_or(crate::DEFAULT_CONNECT_TIMEOUT);
        let mut config = dsn.config().clone();
        crate::with_keepalive_defaults(&mut config);
        let connector = tls.clone();
        let connected = within_deadline(&format!("datadiff-connect-{role}"), deadline, move || match connector {
            None => config.connect(NoTls),
            Some(connector) => config.connect(connector),
        });
        let client = match connected {
            Ok(client) => client.map_err(|source| Error::Connect { role: role.clone(), source })?,
            Err(DeadlineError::Thread(source)) => return Err(Error::ConnectThread { role, source }),
            Err(DeadlineError::Elapsed(_) | DeadlineError::Lost) => {
                return Err(Error::ConnectTimeout { role, seconds: deadline.as_secs_f64() });
            }
        };
        let mut session = Session { role, client, tls, encrypted: false };
        // Functions and operators resolve in pg_catalog only: a shadowing `public.concat` or
        // `public.current_database()` earlier in the role's path never runs here (every table
        // the queries name is schema-qualified).
        let mut statements = String::from("SET search_path = pg_catalog;");
        if let Some(timeout) = settings.statement_timeout {
            statements.push_str(&format!("SET statement_timeout = {};", timeout.as_millis()));
        }
        if settings.read_only {
            statements.push_str("SET default_transaction_read_only = on;");
        }
        session.client.batch_execute(&statements).map_err(Error::query(&session.role, "applying session settings"))?;
        // What was negotiated, not what was configured: `prefer` falls back to plaintext.
        session.encrypted = session.read_tls_state()?;
        tracing::debug!(role = %session.role, tls = session.encrypted, "connected");
        Ok(session)
    }

    /// The session's role name (`source`, `replica`, ...).
    pub fn role(&self) -> &str {
        &self.role
    }

    /// The client, for queries.
    pub fn client(&mut self) -> &mut Client {
        &mut self.client
    }

    /// Whether the connection is encrypted, as negotiated (read from the server's
    /// `pg_stat_ssl` when the session connected).
    pub fn uses_tls(&mut self) -> Result<bool, Error> {
        Ok(self.encrypted)
    }

    fn read_tls_state(&mut self) -> Result<bool, Error> {
        let row = self
            .client
            .query_one(
                "SELECT coalesce((SELECT ssl FROM pg_catalog.pg_stat_ssl WHERE pid = pg_catalog.pg_backend_pid()), false)",
                &[],
            )
            .map_err(Error::query(&self.role, "reading the TLS state"))?;
        Ok(row.get(0))
    }

    /// The database's identity (see [`DatabaseIdentity`]).
    pub fn identity(&mut self) -> Result<DatabaseIdentity, Error> {
        let row = self
            .client
            .query_one(
                "SELECT (SELECT system_identifier FROM pg_catalog.pg_control_system())::text, current_database()::text",
                &[],
            )
            .map_err(Error::query(&self.role, "reading the database identity"))?;
        Ok(DatabaseIdentity { system_identifier: row.get(0), database: row.get(1) })
    }

    /// A handle that cancels whatever this session is running, from any thread.
    pub fn canceller(&self) -> Canceller {
        Canceller { token: self.client.cancel_token(), tls: self.tls.clone() }
    }

    /// Starts a `REPEATABLE READ READ ONLY` transaction (ended by [`Session::finish`]).
    pub fn begin_snapshot(&mut self) -> Result<(), Error> {
        self.client
            .batch_execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            .map_err(Error::query(&self.role, "starting a repeatable-read snapshot"))
    }

    /// Ends the transaction started by [`Session::begin_snapshot`] (a read-only transaction
    /// has nothing to commit, so this rolls back).
    pub fn finish(&mut self) -> Result<(), Error> {
        self.client.batch_execute("ROLLBACK").map_err(Error::query(&self.role, "ending the snapshot"))
    }
}

/// Cancels a session's running query.
#[derive(Clone)]
pub struct Canceller {
    token: CancelToken,
    tls: Option<LazyTls>,
}

impl fmt::Debug for Canceller {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Canceller")
    }
}

impl Canceller {
    /// Asks the server to cancel the running query; best effort (a failure is logged).
    pub fn cancel(&self) {
        let result = match &self.tls {
            Some(tls) => self.token.cancel_query(tls.clone()),
            None => self.token.cancel_query(NoTls),
        };
        if let Err(error) = result {
            tracing::debug!(%error, "cancelling a query failed");
        }
    }
}
