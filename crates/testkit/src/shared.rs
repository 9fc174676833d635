//! The cluster and the MariaDB server shared by all tests of one test binary, each started on
//! first use.

use std::sync::OnceLock;

use crate::cluster::Cluster;
#[cfg(feature = "mariadb")]
use crate::mariadb::MariaDb;

static SHARED: OnceLock<Result<Cluster, String>> = OnceLock::new();
#[cfg(feature = "mariadb")]
static SHARED_MARIADB: OnceLock<Result<MariaDb, String>> = OnceLock::new();

/// The cluster shared by every test of this process, started on first use.
///
/// It is never dropped (it lives in a `static`); its watchdog removes it when the process
/// exits. Tests that stop or restart a server must start their own [`Cluster`] instead.
///
/// # Panics
///
/// When the cluster cannot be started — this is for tests, where a clear panic is the
/// failure report. Programs call [`Cluster::start`] and handle the error.
pub fn shared_cluster() -> &'static Cluster {
    let started = SHARED.get_or_init(|| Cluster::start().map_err(|error| error_chain(&error)));
    match started {
        Ok(cluster) => cluster,
        Err(message) => panic!("cannot start the shared throwaway PostgreSQL cluster: {message}"),
    }
}

/// The MariaDB server shared by every test of this process, started on first use; tests take
/// a [`MariaDb::fresh_database`] each.
///
/// It is never dropped (it lives in a `static`); its watchdog removes it when the process
/// exits.
///
/// # Panics
///
/// When the server cannot be started — for instance because the MariaDB server programs are
/// not installed (the message says which package to install). Tests fail loudly rather than
/// skip; programs call [`MariaDb::start`] and handle the error.
#[cfg(feature = "mariadb")]
pub fn shared_mariadb() -> &'static MariaDb {
    let started = SHARED_MARIADB.get_or_init(|| MariaDb::start().map_err(|error| error_chain(&error)));
    match started {
        Ok(server) => server,
        Err(message) => panic!("cannot start the shared throwaway MariaDB server: {message}"),
    }
}

fn error_chain(error: &dyn std::error::Error) -> String {
    let mut message = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        message.push_str(": ");
        message.push_str(&cause.to_string());
        source = cause.source();
    }
    message
}
