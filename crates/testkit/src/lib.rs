//! Throwaway PostgreSQL clusters and MariaDB servers for datadiff's tests and its demo.
//!
//! A [`Cluster`] is `initdb`'d into a temporary directory from the locally installed server
//! binaries (`$DATADIFF_TEST_PG_BINDIR`, `pg_config --bindir`, `PATH`, or Debian's
//! `/usr/lib/postgresql/<version>/bin`) and served on 127.0.0.1 on a free port — never
//! 5432 — with its Unix socket in the same directory. TCP connections authenticate with
//! passwords (SCRAM); a cluster may also serve TLS with a CA and server certificate made at
//! start, and require client certificates signed by that CA
//! ([`ClusterOptions::require_client_certificates`], [`Cluster::issue_client_certificate`]). When the process runs as root the server runs as an unprivileged account
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
//! # MariaDB
//!
//! With the `mariadb` feature (it brings the MySQL driver; the crates whose tests or demo use
//! a MariaDB source enable it), a `MariaDb` server is made the same way from Debian's `mariadb-server` programs
//! (`mariadb-install-db` and `mariadbd`, found in `$DATADIFF_TEST_MARIADB_BINDIR`, on `PATH`
//! or in `/usr/sbin` and `/usr/bin`): a temporary directory with the `datadiff-testkit-`
//! prefix, a free port on 127.0.0.1 (never 3306), its socket in that directory, password
//! authentication over TCP, an unprivileged account (`mysql`, else `nobody`) when run as root,
//! and the same watchdog. Without the programs, `MariaDb::start` fails with
//! [`Error::MariaDbBinariesNotFound`], which says what to install; tests then fail loudly
//! rather than skip.
//!
//! ```no_run
//! # #[cfg(feature = "mariadb")]
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use datadiff_testkit::shared_mariadb;
//! use mysql::prelude::Queryable;
//!
//! let server = shared_mariadb();
//! let database = server.fresh_database()?;
//! database.create_user("reader", "reader-password", &["SELECT"])?;
//! let mut client = database.client()?;
//! client.query_drop("CREATE TABLE t (id bigint PRIMARY KEY)")?;
//! let mut reader = mysql::Conn::new(database.opts_for("reader", "reader-password"))?;
//! let rows: Option<i64> = reader.query_first("SELECT COUNT(*) FROM t")?;
//! # Ok(())
//! # }
//! # #[cfg(not(feature = "mariadb"))]
//! # fn main() {}
//! ```
//!
//! This crate is not published: it is a normal dependency of the CLI because `datadiff demo`
//! runs on a throwaway cluster too.

mod binaries;
mod cluster;
mod error;
mod logical;
#[cfg(feature = "mariadb")]
mod mariadb;
mod shared;
mod tls;
mod user;
mod watchdog;

pub use binaries::{BINDIR_ENV, MARIADB_BINDIR_ENV, MariaDbBinaries, find_bindir, find_mariadb_binaries};
pub use cluster::{Cluster, ClusterOptions, DIR_PREFIX, Database, SUPERUSER, quote_ident, quote_literal};
pub use error::Error;
pub use logical::LogicalReplication;
#[cfg(feature = "mariadb")]
pub use mariadb::{
    MARIADB_SUPERUSER, MariaDb, MariaDbDatabase, MariaDbOptions, quote_mysql_ident, quote_mysql_literal,
};
pub use shared::shared_cluster;
#[cfg(feature = "mariadb")]
pub use shared::shared_mariadb;
pub use tls::{ClientCertificateFiles, write_unrelated_ca, write_unrelated_client_certificate};
