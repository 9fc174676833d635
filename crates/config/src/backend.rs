//! The backend database settings: `config.yml`'s `backend_db` plus `sslrootcert`, `sslcert`
//! and `sslkey` from `datadiff.yml` (config note §5.1, SPEC §3).

use datadiff_diff_core::definition::SslMode;

use crate::Secret;
use crate::document::{Document, join};
use crate::yaml::Node;

/// `backend_db`: where definitions, attempts and coverage live.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackendSettings {
    /// Host.
    pub host: String,
    /// Port; default 5432.
    pub port: u16,
    /// The application role (SELECT, INSERT, UPDATE).
    pub user: String,
    /// Its password.
    pub password: Secret,
    /// Database.
    pub dbname: String,
    /// The role that runs migrations.
    pub ddl_user: String,
    /// Its password.
    pub ddl_password: Secret,
    /// Seconds; default 10 (both connections: datadiff bounds the DDL login too).
    pub connect_timeout: u32,
    /// `sslmode`; `None` leaves libpq's default (`prefer`). Used by both connections.
    pub sslmode: Option<SslMode>,
    /// CA certificate file for `verify-ca`/`verify-full`, from `datadiff.yml` (relative paths
    /// are resolved against the project directory; `system`, libpq's name for the system trust
    /// store, is kept as is).
    pub sslrootcert: Option<std::path::PathBuf>,
    /// The client certificate both roles present, from `datadiff.yml` (an absolute path to an
    /// existing file; set together with [`BackendSettings::sslkey`]).
    pub sslcert: Option<std::path::PathBuf>,
    /// The client certificate's private key, from `datadiff.yml`.
    pub sslkey: Option<std::path::PathBuf>,
}

/// The keys PipelineWise's schema allows in `backend_db`.
const KEYS: [&str; 9] =
    ["host", "port", "user", "password", "dbname", "ddl_user", "ddl_password", "sslmode", "connect_timeout"];
const REQUIRED: [&str; 6] = ["host", "user", "password", "dbname", "ddl_user", "ddl_password"];

impl BackendSettings {
    /// Reads `backend_db` from `config.yml`'s root; `None` when absent or invalid (problems
    /// recorded).
    pub(crate) fn read(document: &mut Document, root: &Node) -> Option<BackendSettings> {
        let node = root.get("backend_db")?;
        if node.is_null() {
            return None;
        }
        let path = "backend_db";
        document.mapping(node, path)?;
        document.reject_unknown_keys(node, path, &KEYS);
        let text =
            |document: &mut Document, key: &str| document.optional_text(node, path, key).filter(|t| !t.is_empty());
        let values: Vec<Option<String>> = REQUIRED.iter().map(|key| text(document, key)).collect();
        let missing: Vec<String> = REQUIRED
            .iter()
            .zip(&values)
            .filter(|(_, v)| v.is_none())
            .map(|(key, _)| document.missing_field(key, node.get(key)))
            .collect();
        if !missing.is_empty() {
            document.problem(
                path,
                Some(node.line),
                format!("backend_db is missing required fields: {}", missing.join(", ")),
            );
        }
        let port = match document.optional_u32(node, path, "port") {
            None => 5432,
            Some(port) => match u16::try_from(port) {
                Ok(port) => port,
                Err(_) => {
                    document.problem(
                        &join(path, "port"),
                        node.get("port").map(|n| n.line),
                        "port must be at most 65535",
                    );
                    5432
                }
            },
        };
        let connect_timeout = document.optional_u32(node, path, "connect_timeout").unwrap_or(10);
        let sslmode = document.optional_str(node, path, "sslmode").and_then(|mode| match mode.parse::<SslMode>() {
            Ok(mode) => Some(mode),
            Err(error) => {
                document.problem(&join(path, "sslmode"), node.get("sslmode").map(|n| n.line), error.to_string());
                None
            }
        });
        if !missing.is_empty() {
            return None;
        }
        let mut values = values.into_iter().map(Option::unwrap_or_default);
        let mut next = || values.next().unwrap_or_default();
        Some(BackendSettings {
            host: next(),
            user: next(),
            password: Secret::new(next()),
            dbname: next(),
            ddl_user: next(),
            ddl_password: Secret::new(next()),
            port,
            connect_timeout,
            sslmode,
            sslrootcert: None,
            sslcert: None,
            sslkey: None,
        })
    }
}
