//! Throwaway PostgreSQL clusters for datadiff's tests and its demo.
//!
//! A [`Cluster`] is `initdb`'d into a temporary directory from the locally installed server
//! binaries (`$DATADIFF_TEST_PG_BINDIR`, `pg_config --bindir`, `PATH`, or Debian's
//! `/usr/lib/postgresql/<version>/bin`) and served on 127.0.0.1 on a free port — never
//! 5432 — with its Unix socket in the same directory. TCP connections authenticate with
//! passwords (SCRAM); a cluster may also serve TLS with a CA and server certificate made at
//! start. When the process runs as root the server runs as an unprivileged account
//! (`postgres`, else `nobody`), because PostgreSQL refuses root.
//!
//! Nothing outlives the process: dropping a cluster stops it and removes its directory, and
//! a watchdog process does the same if this process exits without dropping it — a `static`
//! never dropped, an abort, or `SIGKILL`.
//!
//! ```no_run
//! use datadiff_testkit::shared_cluster;
//!
//! let cluster = shared_cluster();
//! let database = cluster.fresh_database()?;
//! cluster.create_role("app", "app-password")?;
//! let mut client = database.client()?;
//! client.batch_execute("CREATE TABLE t (id bigint PRIMARY KEY)")?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Tests share one cluster per test binary ([`shared_cluster`]) and take a
//! [`Cluster::fresh_database`] each; tests that stop and restart a server start their own
//! with [`Cluster::start`].
//!
//! This crate is not published: it is a normal dependency of the CLI because `datadiff demo`
//! runs on a throwaway cluster too.

mod binaries;
mod cluster;
mod error;
mod shared;
mod tls;
mod user;

pub use binaries::{BINDIR_ENV, find_bindir};
pub use cluster::{Cluster, ClusterOptions, DIR_PREFIX, Database, SUPERUSER, quote_ident, quote_literal};
pub use error::Error;
pub use shared::shared_cluster;
pub use tls::write_unrelated_ca;
