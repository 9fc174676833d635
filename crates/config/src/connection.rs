//! Source and target connection settings: a tap's or target's `db_conn`, which the runner
//! connects with (SPEC §2: from the project YAML, not PipelineWise's generated JSON).
//!
//! A `tap-mysql` tap's `db_conn` has four more keys, read as PipelineWise's data-diff reads
//! them (config note §5.3):
//!
//! * `engine`: `mysql` or `mariadb` (lower case, as tap-mysql spells them) — which
//!   statement-timeout variable the session sets (`max_execution_time` or
//!   `max_statement_time`). Without it the server's version string decides. Any other value is
//!   an error (upstream would silently treat it as MySQL, whose timeout statement a MariaDB
//!   server rejects at every run).
//! * `ssl_ca`: the CA certificates that verify the server — a PEM file's path (relative to the
//!   project directory) or the PEM text itself. Setting it asks for verification, so the file
//!   must exist, and the file or text hold PEM certificates, when the project loads.
//! * `ssl_cert` and `ssl_key`: a client certificate and its unencrypted private key, each a
//!   path or PEM text, only together, and only read under verified TLS (`ssl: true` or an
//!   `ssl_ca`), as upstream; otherwise they are ignored with a warning. Read, they must hold a
//!   certificate and the key that belongs to it.
//!
//! A `tap-mysql` `db_conn` also needs `host` (or `replica_host`): MySQL is reached over TCP,
//! with no local default — an error when the project loads, not at every run.
//!
//! A PostgreSQL side's `db_conn` (a `tap-postgres` tap, a `target-postgres` target) also
//! takes libpq's per-connection keys ([`LIBPQ_KEYS`]), with libpq's meanings:
//!
//! * `service`: a connection service of `pg_service.conf`, whose values fill what the
//!   `db_conn` leaves out (libpq: a parameter written in the connection wins). Each side
//!   names its own; `PGSERVICE` is not read for project connections (one variable cannot
//!   describe a source and a target, which are different servers).
//! * `sslmode` (`disable`, `prefer`, `require`, `verify-ca`, `verify-full`), `sslrootcert`
//!   (a file, or `system`), `sslcert` and `sslkey` (together), `passfile`: files relative to
//!   the project directory, which must exist. `datadiff.yml`'s `tls` entry for the side wins
//!   over these, key by key.
//! * `hostaddr`, `connect_timeout`, `options`, `keepalives`, `keepalives_idle`,
//!   `tcp_user_timeout`, `target_session_attrs`, `channel_binding`: passed to the driver
//!   (values checked when the side connects).
//!
//! Any other libpq keyword (`sslcrl`, `gssencmode`, `application_name`, …) is an error naming
//! it rather than silently ignored; keys no libpq knows are PipelineWise's and are ignored.
//!
//! None of these keys enters a definition's hash: only the `data_diff` blocks and the
//! databases' names do.

use std::path::{Path, PathBuf};

use datadiff_diff_core::definition::SslMode;
use datadiff_diff_core::mysql::MySqlEngine;

use crate::Secret;
use crate::certificate::{self, PemKind};
use crate::document::{Document, join};
use crate::tls::{SideTls, certificate_file, client_certificate};
use crate::yaml::Node;

/// The libpq keys a PostgreSQL side's `db_conn` takes besides `host`, `port`, `user`,
/// `password` and `dbname` (see the module docs).
pub const LIBPQ_KEYS: [&str; 14] = [
    "service",
    "sslmode",
    "sslrootcert",
    "sslcert",
    "sslkey",
    "passfile",
    "hostaddr",
    "connect_timeout",
    "options",
    "keepalives",
    "keepalives_idle",
    "tcp_user_timeout",
    "target_session_attrs",
    "channel_binding",
];

/// The libpq keys passed to the driver as they are.
pub const DRIVER_KEYS: [&str; 8] = [
    "hostaddr",
    "connect_timeout",
    "options",
    "keepalives",
    "keepalives_idle",
    "tcp_user_timeout",
    "target_session_attrs",
    "channel_binding",
];

/// libpq's other connection keywords: in a `db_conn` they are an error, not ignored.
const UNSUPPORTED_LIBPQ_KEYS: [&str; 28] = [
    "client_encoding",
    "application_name",
    "fallback_application_name",
    "keepalives_interval",
    "keepalives_count",
    "replication",
    "gssencmode",
    "sslnegotiation",
    "sslcompression",
    "sslpassword",
    "sslcertmode",
    "sslcrl",
    "sslcrldir",
    "sslsni",
    "requirepeer",
    "require_auth",
    "ssl_min_protocol_version",
    "ssl_max_protocol_version",
    "krbsrvname",
    "gsslib",
    "gssdelegation",
    "load_balance_hosts",
    "authtype",
    "tty",
    "scram_client_key",
    "scram_server_key",
    "min_protocol_version",
    "max_protocol_version",
];

/// A `db_conn` block. Keys datadiff does not use are ignored (PipelineWise's connectors have
/// many); values are read as text whatever their YAML type (`port: 5432` and `port: "5432"`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DbConn {
    /// `host`.
    pub host: Option<String>,
    /// `port`.
    pub port: Option<u16>,
    /// `user`.
    pub user: Option<String>,
    /// `password`.
    pub password: Option<Secret>,
    /// `dbname`.
    pub dbname: Option<String>,
    /// `replica_host`: a PostgreSQL or MySQL source reads from it when present.
    pub replica_host: Option<String>,
    /// `replica_port`.
    pub replica_port: Option<u16>,
    /// `replica_user`.
    pub replica_user: Option<String>,
    /// `replica_password`.
    pub replica_password: Option<Secret>,
    /// `ssl: true` or `ssl: "true"` → `sslmode=require` (PostgreSQL), verified TLS (MySQL);
    /// otherwise libpq's default (PostgreSQL), TLS offered unverified (MySQL).
    pub ssl: bool,
    /// `engine` of a `tap-mysql` tap (`mysql` or `mariadb`); `None`: detected from the
    /// server's version string. Not read for other taps and targets.
    pub engine: Option<MySqlEngine>,
    /// `ssl_ca` of a `tap-mysql` tap: an existing PEM file (made absolute) or PEM text.
    pub ssl_ca: Option<Pem>,
    /// `ssl_cert` of a `tap-mysql` tap: the client certificate, a PEM file or PEM text.
    pub ssl_cert: Option<Pem>,
    /// `ssl_key` of a `tap-mysql` tap: the client certificate's private key. A secret: PEM
    /// text is never printed (`Debug` redacts it, as for passwords).
    pub ssl_key: Option<Pem>,
    /// libpq's keys of a PostgreSQL side ([`LibpqKeys`]); empty for MySQL taps.
    pub libpq: LibpqKeys,
}

/// libpq's per-connection keys of a PostgreSQL side's `db_conn` (module docs).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LibpqKeys {
    /// `service`: the connection service whose values fill what the `db_conn` leaves out.
    pub service: Option<String>,
    /// `sslmode`, `sslrootcert`, `sslcert`, `sslkey` (files made absolute).
    pub tls: SideTls,
    /// `passfile` (made absolute).
    pub passfile: Option<PathBuf>,
    /// [`DRIVER_KEYS`] given, in [`DRIVER_KEYS`]' order, as text.
    pub driver: Vec<(String, String)>,
}

/// A PEM value of a `db_conn` TLS key: a file or the text itself, as upstream accepts both.
#[derive(Clone, PartialEq, Eq)]
pub enum Pem {
    /// A path (absolute: a relative one is resolved against the project directory).
    File(std::path::PathBuf),
    /// PEM text (it contains `-----BEGIN`). Kept as a [`Secret`]: it may be a private key.
    Text(Secret),
}

impl std::fmt::Debug for Pem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Pem::File(path) => f.debug_tuple("File").field(path).finish(),
            Pem::Text(_) => f.write_str("Text(***)"),
        }
    }
}

impl Pem {
    /// Reads a value: PEM text when it contains `-----BEGIN`, else a path, resolved against
    /// `dir` when relative.
    pub fn parse(value: &str, dir: &Path) -> Pem {
        if value.contains("-----BEGIN") {
            return Pem::Text(Secret::new(value));
        }
        let path = Path::new(value);
        Pem::File(if path.is_absolute() { path.to_path_buf() } else { dir.join(path) })
    }

    /// What the MySQL connection takes: the file's path, or the PEM text.
    pub fn as_setting(&self) -> String {
        match self {
            Pem::File(path) => path.display().to_string(),
            Pem::Text(text) => text.expose().to_owned(),
        }
    }
}

/// Effective settings of one side's connection (after the `replica_*` fallback).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// Host name or address (`None`: libpq's default).
    pub host: Option<String>,
    /// Port (`None`: 5432).
    pub port: Option<u16>,
    /// User name.
    pub user: Option<String>,
    /// Password.
    pub password: Option<Secret>,
    /// Database.
    pub dbname: Option<String>,
    /// Whether TLS is required.
    pub ssl: bool,
    /// libpq's keys of the side (the same for a source's `replica_*` connection).
    pub libpq: LibpqKeys,
}

impl DbConn {
    /// How a source connects: each `replica_*` key, when present, replaces its plain key.
    pub fn source_endpoint(&self) -> Endpoint {
        Endpoint {
            host: self.replica_host.clone().or_else(|| self.host.clone()),
            port: self.replica_port.or(self.port),
            user: self.replica_user.clone().or_else(|| self.user.clone()),
            password: self.replica_password.clone().or_else(|| self.password.clone()),
            dbname: self.dbname.clone(),
            ssl: self.ssl,
            libpq: self.libpq.clone(),
        }
    }

    /// How a target connects: directly, `replica_*` ignored.
    pub fn target_endpoint(&self) -> Endpoint {
        Endpoint {
            host: self.host.clone(),
            port: self.port,
            user: self.user.clone(),
            password: self.password.clone(),
            dbname: self.dbname.clone(),
            ssl: self.ssl,
            libpq: self.libpq.clone(),
        }
    }

    /// Reads `db_conn` at `path` of `node`; with `mysql` (a `tap-mysql` tap) also its
    /// `engine` and TLS keys, with `postgres` (a PostgreSQL side) libpq's keys, relative paths
    /// resolved against the directory given.
    pub(crate) fn read(
        document: &mut Document,
        node: &Node,
        path: &str,
        mysql: Option<&Path>,
        postgres: Option<&Path>,
    ) -> Option<DbConn> {
        let conn = node.get("db_conn")?;
        let path = join(path, "db_conn");
        document.mapping(conn, &path)?;
        let port = |document: &mut Document, key: &str| {
            let text = document.optional_text(conn, &path, key)?;
            let parsed = text.trim().parse::<u16>().ok();
            if parsed.is_none() {
                let line = conn.get(key).map(|n| n.line);
                document.problem(&join(&path, key), line, format!("'{text}' is not a port number"));
            }
            parsed
        };
        let port_value = port(document, "port");
        let replica_port = port(document, "replica_port");
        let ssl = document.optional_flag(conn, &path, "ssl").unwrap_or(false);
        let is_mysql = mysql.is_some();
        let mysql = match mysql {
            Some(dir) => MySqlKeys::read(document, conn, &path, dir, ssl),
            None => MySqlKeys::default(),
        };
        let libpq = match postgres {
            Some(dir) => LibpqKeys::read(document, conn, &path, dir, ssl),
            None => LibpqKeys::default(),
        };
        let conn_value = DbConn {
            host: document.optional_text(conn, &path, "host"),
            port: port_value,
            user: document.optional_text(conn, &path, "user"),
            password: document.optional_text(conn, &path, "password").map(Secret::new),
            dbname: document.optional_text(conn, &path, "dbname"),
            replica_host: document.optional_text(conn, &path, "replica_host"),
            replica_port,
            replica_user: document.optional_text(conn, &path, "replica_user"),
            replica_password: document.optional_text(conn, &path, "replica_password").map(Secret::new),
            ssl,
            engine: mysql.engine,
            ssl_ca: mysql.ssl_ca,
            ssl_cert: mysql.ssl_cert,
            ssl_key: mysql.ssl_key,
            libpq,
        };
        // tap-mysql connects over TCP: there is no local-socket default to fall back on.
        if is_mysql && conn_value.host.is_none() && conn_value.replica_host.is_none() {
            document.problem(
                &join(&path, "host"),
                Some(conn.line),
                "a tap-mysql db_conn needs host (or replica_host): the MySQL source is reached over TCP",
            );
        }
        Some(conn_value)
    }
}

impl LibpqKeys {
    /// Reads and checks them; every problem names its key path.
    fn read(document: &mut Document, conn: &Node, path: &str, dir: &Path, ssl: bool) -> LibpqKeys {
        let line = |key: &str| conn.get(key).map(|node| node.line);
        for key in UNSUPPORTED_LIBPQ_KEYS {
            if conn.get(key).is_some() {
                let message = if key == "application_name" {
                    "datadiff names its sessions pipelinewise-data-diff-source and -target, as PipelineWise's \
                     data-diff does: remove application_name"
                        .to_owned()
                } else {
                    format!("the libpq parameter {key} is not applied by datadiff: remove it (it would be ignored)")
                };
                document.problem(&join(path, key), line(key), message);
            }
        }
        let service = document.optional_str(conn, path, "service");
        if service.as_deref().is_some_and(|name| name.trim().is_empty()) {
            document.problem(&join(path, "service"), line("service"), "service must name a connection service");
        }
        let sslmode = document.optional_str(conn, path, "sslmode").and_then(|text| {
            let key_path = join(path, "sslmode");
            match text.parse::<SslMode>() {
                Ok(SslMode::Allow) => {
                    document.problem(
                        &key_path,
                        line("sslmode"),
                        "sslmode allow is not supported: use disable, prefer, require, verify-ca or verify-full",
                    );
                    None
                }
                Ok(mode @ (SslMode::Disable | SslMode::Prefer)) if ssl => {
                    document.problem(
                        &key_path,
                        line("sslmode"),
                        format!("sslmode {} contradicts ssl: true (which requires TLS)", mode.as_str()),
                    );
                    None
                }
                Ok(mode) => Some(mode),
                Err(error) => {
                    document.problem(&key_path, line("sslmode"), error.to_string());
                    None
                }
            }
        });
        let sslrootcert = certificate_file(document, conn, path, "sslrootcert", dir, true);
        let (sslcert, sslkey) = client_certificate(document, conn, path, dir);
        let passfile = certificate_file(document, conn, path, "passfile", dir, false);
        let driver = DRIVER_KEYS
            .iter()
            .filter_map(|key| document.optional_text(conn, path, key).map(|value| ((*key).to_owned(), value)))
            .collect();
        LibpqKeys { service, tls: SideTls { sslmode, sslrootcert, sslcert, sslkey }, passfile, driver }
    }
}

/// The `tap-mysql` keys of a `db_conn`.
#[derive(Default)]
struct MySqlKeys {
    engine: Option<MySqlEngine>,
    ssl_ca: Option<Pem>,
    ssl_cert: Option<Pem>,
    ssl_key: Option<Pem>,
}

impl MySqlKeys {
    /// Reads and checks them (see the module docs); every problem names its key path.
    fn read(document: &mut Document, conn: &Node, path: &str, dir: &Path, ssl: bool) -> MySqlKeys {
        let line = |key: &str| conn.get(key).map(|node| node.line);
        let engine = document.optional_str(conn, path, "engine").and_then(|text| match text.as_str() {
            "mysql" => Some(MySqlEngine::MySql),
            "mariadb" => Some(MySqlEngine::MariaDb),
            _ => {
                let message =
                    format!("unknown engine '{text}': use mysql or mariadb (lower case, as tap-mysql reads it)");
                document.problem(&join(path, "engine"), line("engine"), message);
                None
            }
        });
        // Empty strings count as absent, as Python's truthiness does upstream.
        let pem = |document: &mut Document, key: &str| {
            document.optional_str(conn, path, key).filter(|text| !text.is_empty()).map(|text| Pem::parse(&text, dir))
        };
        let ssl_ca = pem(document, "ssl_ca");
        let ssl_cert = pem(document, "ssl_cert");
        let ssl_key = pem(document, "ssl_key");
        let verified = ssl || ssl_ca.is_some();
        if !verified && (ssl_cert.is_some() || ssl_key.is_some()) {
            let key = if ssl_cert.is_some() { "ssl_cert" } else { "ssl_key" };
            document.warning(
                &join(path, key),
                line(key),
                "ignored: ssl_cert and ssl_key are only used with ssl: true or an ssl_ca (TLS is offered unverified)",
            );
            return MySqlKeys { engine, ssl_ca, ssl_cert: None, ssl_key: None };
        }
        if ssl_cert.is_some() != ssl_key.is_some() {
            let missing = if ssl_cert.is_some() { "ssl_key" } else { "ssl_cert" };
            let present = if ssl_cert.is_some() { "ssl_cert" } else { "ssl_key" };
            document.problem(
                &join(path, present),
                line(present),
                format!("MySQL ssl_cert and ssl_key must be configured together ({missing} is missing)"),
            );
        }
        let mut contents = Vec::new();
        for (key, value) in [("ssl_ca", &ssl_ca), ("ssl_cert", &ssl_cert), ("ssl_key", &ssl_key)] {
            let kind = if key == "ssl_key" { PemKind::PrivateKey } else { PemKind::Certificates };
            let (what, pem) = match value {
                None => continue,
                Some(Pem::File(file)) if file.is_dir() => {
                    let message = format!("{} is a directory, not a PEM file", file.display());
                    document.problem(&join(path, key), line(key), message);
                    continue;
                }
                Some(Pem::File(file)) if !file.is_file() => {
                    let message = format!(
                        "{} does not exist ({key} is a PEM file's path or the PEM text itself)",
                        file.display()
                    );
                    document.problem(&join(path, key), line(key), message);
                    continue;
                }
                Some(Pem::File(file)) => match std::fs::read(file) {
                    Ok(pem) => (format!("{} ", file.display()), pem),
                    Err(error) => {
                        document.problem(&join(path, key), line(key), format!("{}: {error}", file.display()));
                        continue;
                    }
                },
                // The text may be a key: the message never quotes it.
                Some(Pem::Text(text)) => ("the PEM text ".to_owned(), text.expose().as_bytes().to_vec()),
            };
            match certificate::check_pem(&pem, kind) {
                Ok(()) => contents.push((key, pem)),
                Err(problem) => document.problem(&join(path, key), line(key), format!("{what}{problem}")),
            }
        }
        let content = |wanted: &str| contents.iter().find(|(key, _)| *key == wanted).map(|(_, pem)| pem);
        if let (Some(certificate), Some(key)) = (content("ssl_cert"), content("ssl_key"))
            && let Err(problem) = certificate::check_pair(certificate, key)
        {
            document.problem(&join(path, "ssl_key"), line("ssl_key"), format!("ssl_key: {problem}"));
        }
        MySqlKeys { engine, ssl_ca, ssl_cert, ssl_key }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pem_values_are_text_with_a_begin_line_else_paths_against_the_project() {
        let dir = Path::new("/srv/project");
        assert_eq!(Pem::parse("certs/ca.pem", dir), Pem::File("/srv/project/certs/ca.pem".into()));
        assert_eq!(Pem::parse("/etc/ssl/ca.pem", dir), Pem::File("/etc/ssl/ca.pem".into()));
        let text = "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n";
        let parsed = Pem::parse(text, dir);
        assert_eq!(parsed.as_setting(), text);
        assert_eq!(format!("{parsed:?}"), "Text(***)");
        assert_eq!(Pem::parse("certs/ca.pem", dir).as_setting(), "/srv/project/certs/ca.pem");
    }

    #[test]
    fn sources_prefer_replicas_and_targets_ignore_them() {
        let conn = DbConn {
            host: Some("primary".into()),
            port: Some(5432),
            user: Some("u".into()),
            password: Some(Secret::new("p")),
            dbname: Some("db".into()),
            replica_host: Some("replica".into()),
            replica_port: None,
            replica_user: None,
            replica_password: Some(Secret::new("rp")),
            ssl: true,
            ..DbConn::default()
        };
        let source = conn.source_endpoint();
        assert_eq!(
            (source.host.as_deref(), source.port, source.user.as_deref()),
            (Some("replica"), Some(5432), Some("u"))
        );
        assert_eq!(source.password.as_ref().map(Secret::expose), Some("rp"));
        let target = conn.target_endpoint();
        assert_eq!(target.host.as_deref(), Some("primary"));
        assert_eq!(target.password.as_ref().map(Secret::expose), Some("p"));
        assert!(!format!("{conn:?}").contains("rp\""));
    }
}
