//! Source and target connection settings: a tap's or target's `db_conn`, which the runner
//! connects with (SPEC §2: from the project YAML, not PipelineWise's generated JSON).

use crate::Secret;
use crate::document::{Document, join};
use crate::yaml::Node;

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
    /// `ssl: true` or `ssl: "true"` → `sslmode=require`; otherwise libpq's default.
    pub ssl: bool,
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
        }
    }

    /// Reads `db_conn` at `path` of `node`.
    pub(crate) fn read(document: &mut Document, node: &Node, path: &str) -> Option<DbConn> {
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
        Some(DbConn {
            host: document.optional_text(conn, &path, "host"),
            port: port_value,
            user: document.optional_text(conn, &path, "user"),
            password: document.optional_text(conn, &path, "password").map(Secret::new),
            dbname: document.optional_text(conn, &path, "dbname"),
            replica_host: document.optional_text(conn, &path, "replica_host"),
            replica_port,
            replica_user: document.optional_text(conn, &path, "replica_user"),
            replica_password: document.optional_text(conn, &path, "replica_password").map(Secret::new),
            ssl: document.optional_flag(conn, &path, "ssl").unwrap_or(false),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
