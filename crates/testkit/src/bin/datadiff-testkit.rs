//! Starts a throwaway PostgreSQL cluster and keeps it until stdin closes or the process is
//! killed, printing how to connect. For trying things by hand, and for the test that checks
//! a killed holder leaves nothing behind.
//!
//! Prints `dir=…`, `port=…`, `postmaster_pid=…`, `url=…` and then `ready`, one per line.

use std::io::{BufRead, Write};
use std::process::ExitCode;

use datadiff_testkit::{Cluster, SUPERUSER};

fn main() -> ExitCode {
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
    // Hold the cluster until stdin closes (Ctrl-D) or we are killed.
    for line in std::io::stdin().lock().lines() {
        if line.is_err() {
            break;
        }
    }
    ExitCode::SUCCESS
}
