//! The r2d2 connection manager for application sessions.

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use postgres::Client;

use crate::config::BackendConfig;
use crate::connection::{Role, connect};
use crate::error::Error;

/// Opens application-role sessions for the pool.
///
/// The first session, opened by [`crate::Store::open`] to report a bad password or an
/// unreachable host at once and with its cause, is handed to the pool as its first
/// connection rather than thrown away.
pub struct ConnectionManager {
    config: Arc<BackendConfig>,
    first: Mutex<Option<Client>>,
}

impl ConnectionManager {
    pub(crate) fn new(config: Arc<BackendConfig>, first: Client) -> ConnectionManager {
        ConnectionManager { config, first: Mutex::new(Some(first)) }
    }
}

impl fmt::Debug for ConnectionManager {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConnectionManager").field("config", &self.config).finish_non_exhaustive()
    }
}

/// A failed pooled connect, displayed with its whole cause chain: r2d2 keeps only the
/// `Display` text of the last failure, and that text must still say why.
#[derive(Debug)]
pub struct PoolConnectError(Error);

impl fmt::Display for PoolConnectError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)?;
        let mut cause = std::error::Error::source(&self.0);
        while let Some(error) = cause {
            write!(f, ": {error}")?;
            cause = error.source();
        }
        Ok(())
    }
}

impl std::error::Error for PoolConnectError {}

impl r2d2::ManageConnection for ConnectionManager {
    type Connection = Client;
    type Error = PoolConnectError;

    fn connect(&self) -> Result<Client, PoolConnectError> {
        let first = self.first.lock().unwrap_or_else(PoisonError::into_inner).take();
        match first {
            Some(client) if !client.is_closed() => Ok(client),
            _ => connect(&self.config, Role::Application).map_err(PoolConnectError),
        }
    }

    fn is_valid(&self, client: &mut Client) -> Result<(), PoolConnectError> {
        client
            .simple_query("")
            .map(|_| ())
            .map_err(|source| PoolConnectError(Error::Query { context: "checking a pooled connection", source }))
    }

    fn has_broken(&self, client: &mut Client) -> bool {
        client.is_closed()
    }
}
