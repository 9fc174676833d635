//! Starts a throwaway PostgreSQL cluster (or, with `--mariadb`, a MariaDB server) and keeps it
//! until stdin closes or the process is killed, printing how to connect. For trying things by
//! hand, and for the tests that check a killed holder leaves nothing behind.
//!
//! Prints `dir=…`, `port=…`, `postmaster_pid=…`, `url=…` and then `ready`, one per line; with
//! `--mariadb`, `dir=…`, `port=…`, `server_pid=…`, `socket=…` and `ready`.

use std::io::{BufRead, Write};
use std::process::ExitCode;

#[cfg(feature = "mariadb")]
use datadiff_testkit::MariaDb;
use datadiff_testkit::{Cluster, SUPERUSER};

fn main() -> ExitCode {
    if std::env::args().nth(1).as_deref() == Some("--mariadb") {
        return mariadb();
    }
    let cluster = match Cluster::start() {
        Ok(cluster) => cluster,
        Err(error) => {
            eprintln!("datadiff-testkit: {error}");
            return ExitCode::from(2);
        }
    };
    let mut out = std::io::stdout().lock();
    let pid = cluster.postmaster_pid().unwrap_or_default();
    let url = cluster.url(SUPERUSER, cluster.superuser_password(), "postgres");
    let printed = writeln!(
        out,
        "dir={}\nport={}\npostmaster_pid={pid}\nurl={url}\nready",
        cluster.dir().display(),
        cluster.port()
    )
    .and_then(|()| out.flush());
    drop(out);
    if printed.is_err() {
        return ExitCode::from(1);
    }
    hold();
    ExitCode::SUCCESS
}

/// Without the `mariadb` feature there is no MariaDB to start.
#[cfg(not(feature = "mariadb"))]
fn mariadb() -> ExitCode {
    eprintln!("datadiff-testkit: built without the `mariadb` feature");
    ExitCode::from(2)
}

#[cfg(feature = "mariadb")]
fn mariadb() -> ExitCode {
    let server = match MariaDb::start() {
        Ok(server) => server,
        Err(error) => {
            eprintln!("datadiff-testkit: {error}");
            return ExitCode::from(2);
        }
    };
    let mut out = std::io::stdout().lock();
    let printed = writeln!(
        out,
        "dir={}\nport={}\nserver_pid={}\nsocket={}\nready",
        server.dir().display(),
        server.port(),
        server.server_pid().unwrap_or_default(),
        server.socket().display()
    )
    .and_then(|()| out.flush());
    drop(out);
    if printed.is_err() {
        return ExitCode::from(1);
    }
    hold();
    ExitCode::SUCCESS
}

/// Holds the server until stdin closes (Ctrl-D) or we are killed.
fn hold() {
    for line in std::io::stdin().lock().lines() {
        if line.is_err() {
            break;
        }
    }
}
