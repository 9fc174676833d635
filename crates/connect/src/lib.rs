//! How datadiff reaches a PostgreSQL server: connection settings read as libpq reads them,
//! TLS with libpq's `sslmode` meanings, and a deadline on every connection.
//!
//! Both the source and replica access (`datadiff-access`) and the backend store
//! (`datadiff-backend-store`) connect through this crate, so the two decide TLS, deadlines and
//! keepalives the same way, and the backend store links no MySQL driver.
//!
//! # Overview
//!
//! * [`Dsn`] parses a libpq-style connection string (URI or `key=value`) with libpq's
//!   fallbacks: `PGPASSWORD`, the password file ([`passfile_lookup`]), the connection service
//!   file ([`service`]), `PGHOST`, `PGPORT`, `PGUSER`, `PGDATABASE`, `PGSSLMODE`…, all read
//!   from an [`Environment`] captured once (tests and embedders pass their own).
//! * [`TlsSettings`] holds a connection's `sslmode` ([`datadiff_diff_core::definition::SslMode`]),
//!   its [`RootCertificates`] and its [`ClientCertificate`]; [`tls`] documents the table of
//!   what each mode checks. [`ClientTls`] is a connection's TLS ready to use; a server
//!   certificate it rejects fails the connection with a [`CertificateRejected`], which names
//!   the cause in psql's words (on every route: the driver's connections through
//!   [`ClientTls::lazy`], connections made outside the driver through
//!   [`CertificateRejected::of_handshake`]); [`tls_context`] is the one place an OpenSSL
//!   context is built.
//! * [`LazyTls`] hands the driver a connector that builds its OpenSSL context only when a
//!   server accepts TLS (a plaintext server never pays for loading the CA bundle).
//! * [`within_deadline`] bounds a whole connection — TCP, TLS and authentication — as libpq's
//!   `connect_timeout` does; [`ANSWER_GRACE`] is what a client waits beyond a statement
//!   timeout; [`with_keepalive_defaults`] gives every connection TCP keepalives
//!   ([`KEEPALIVES_IDLE`], …) and a [`TCP_USER_TIMEOUT`], so a silently dropped network fails
//!   in minutes, not hours.
//! * [`Error`] says which setting could not be read or used (the role, the file, the line, the
//!   parameter — never a value); [`chain`] puts an error and its causes on one line.
//!
//! Parsing needs no server:
//!
//! ```
//! use datadiff_connect::{Dsn, Environment, RootCertificates};
//! use datadiff_diff_core::definition::SslMode;
//!
//! // An environment of the program's own: the process environment is never changed.
//! let environment = Environment::from_pairs([("PGUSER", "auditor"), ("PGSSLROOTCERT", "/etc/ca.pem")]);
//! let dsn = Dsn::parse("replica", "host=replica.internal dbname=app sslmode=verify-full", &environment)?;
//! assert_eq!(dsn.config().get_user(), Some("auditor"));
//! assert_eq!(dsn.tls().mode, SslMode::VerifyFull);
//! assert_eq!(dsn.tls().roots, RootCertificates::File("/etc/ca.pem".into()));
//! assert!(!dsn.has_password());
//! // A DSN's text is never shown, in errors or in `Debug`: it may hold a password.
//! let error = Dsn::parse("replica", "host=h user=u password=secret port=x", &environment).unwrap_err();
//! assert!(!datadiff_connect::chain(&error).contains("secret"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Connecting, with the connection's TLS, keepalives and one deadline for the whole login:
//!
//! ```no_run
//! use datadiff_connect::{DEFAULT_CONNECT_TIMEOUT, Dsn, Environment, with_keepalive_defaults, within_deadline};
//!
//! let environment = Environment::process();
//! let dsn = Dsn::parse("source", "postgresql://auditor@source.internal/app?sslmode=require", &environment)?;
//! let tls = dsn.tls().client_tls()?.lazy();
//! let mut config = dsn.config().clone();
//! with_keepalive_defaults(&mut config);
//! let deadline = config.get_connect_timeout().copied().unwrap_or(DEFAULT_CONNECT_TIMEOUT);
//! let mut client = within_deadline("connect-source", deadline, move || config.connect(tls))??;
//! let version: String = client.query_one("SELECT version()", &[])?.get(0);
//! println!("{version}");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # What it does not do
//!
//! It opens no session and runs no statement of its own: read-only sessions, catalog reads
//! and row streams are `datadiff-access`'s, the backend's pool and records are
//! `datadiff-backend-store`'s. It speaks PostgreSQL's settings only (a MySQL or MariaDB
//! source is `datadiff-access`'s, which uses the keepalive values and deadlines from here).
//! libpq's `sslmode=allow` is refused by [`Dsn::parse`] (an audit must not silently
//! downgrade); the backend store, which reads its settings from the project's YAML, makes
//! its own plaintext-then-TLS attempt for it.

mod deadline;
mod dsn;
mod environment;
mod error;
mod lazy_tls;
mod passfile;
pub mod service;
pub mod tls;

pub use deadline::{
    ANSWER_GRACE, DeadlineError, KEEPALIVES_COUNT, KEEPALIVES_IDLE, KEEPALIVES_INTERVAL, TCP_USER_TIMEOUT,
    with_keepalive_defaults, within_deadline,
};
pub use dsn::{DEFAULT_CONNECT_TIMEOUT, Dsn};
pub use environment::Environment;
pub use error::{Error, chain};
pub use lazy_tls::{LazyTls, LazyTlsConnect};
pub use passfile::{PassfileQuery, lookup as passfile_lookup};
pub use service::{Service, ServiceParam};
pub use tls::{
    CertificateRejected, ClientCertificate, ClientTls, RootCertificates, TlsSettings, TlsSetupError, Verify,
    tls_context, unverified_connector, unverified_tls, verifying_tls,
};
