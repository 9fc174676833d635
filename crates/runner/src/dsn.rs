//! libpq-style connection strings: a URI (`postgresql://user@host:5432/db?sslmode=require`)
//! or `key=value` pairs (`host=db port=5432 dbname=app user=audit`), with libpq's fallbacks.
//!
//! Parsing is rust-postgres's ([`postgres::Config`]'s `FromStr`), which reads both forms.
//! On top of it, as libpq does: the password comes from the DSN, else `PGPASSWORD`, else the
//! password file (`PGPASSFILE` or `~/.pgpass`); a missing host, port, user or database falls
//! back to `PGHOST`, `PGPORT`, `PGUSER` (then the login name) and `PGDATABASE`; a missing host
//! means the local Unix socket. The connect timeout defaults to 10 seconds.
//!
//! `sslmode` accepts `disable`, `prefer` (the default) and `require`, with libpq's meaning:
//! `prefer` and `require` encrypt without verifying the server certificate. `verify-ca` and
//! `verify-full` are not supported yet and are refused with a message saying so, rather than
//! silently weakened.
//!
//! The DSN text is never shown, logged or kept: only the parsed [`postgres::Config`], whose
//! `Debug` redacts the password.

use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use postgres::config::{Host, SslMode};

use crate::environment::Environment;
use crate::error::Error;
use crate::passfile::{self, PassfileQuery};

/// The connect timeout when the DSN sets none (the seed's 10 seconds).
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// A parsed connection string with libpq's fallbacks applied and the password resolved.
#[derive(Debug, Clone)]
pub struct Dsn {
    role: String,
    config: postgres::Config,
}

impl Dsn {
    /// Parses `text` for the connection called `role` (`source`, `replica`: used in messages).
    pub fn parse(role: &str, text: &str, environment: &Environment) -> Result<Dsn, Error> {
        let mut config = postgres::Config::from_str(text.trim()).map_err(|source| {
            if text.contains("verify-ca") || text.contains("verify-full") {
                Error::DsnUnsupported {
                    role: role.to_owned(),
                    problem: "sslmode verify-ca and verify-full are not supported yet; use sslmode=require".to_owned(),
                }
            } else {
                Error::Dsn { role: role.to_owned(), source }
            }
        })?;
        if config.get_hosts().is_empty() && config.get_hostaddrs().is_empty() {
            match environment.get("PGHOST") {
                Some(hosts) => {
                    for host in hosts.split(',') {
                        config.host(host);
                    }
                }
                None => {
                    config.host_path(default_socket_dir());
                }
            }
        }
        if config.get_ports().is_empty()
            && let Some(port) = environment.get("PGPORT")
        {
            let port = port.parse::<u16>().map_err(|_| Error::DsnUnsupported {
                role: role.to_owned(),
                problem: "PGPORT is not a port number".to_owned(),
            })?;
            config.port(port);
        }
        if config.get_user().is_none() {
            let user =
                environment.get("PGUSER").or_else(|| environment.get("USER")).or_else(|| environment.get("LOGNAME"));
            match user {
                Some(user) => config.user(user),
                None => {
                    return Err(Error::DsnUnsupported {
                        role: role.to_owned(),
                        problem: "no user: put user= in the DSN or set PGUSER".to_owned(),
                    });
                }
            };
        }
        if config.get_dbname().is_none()
            && let Some(database) = environment.get("PGDATABASE")
        {
            config.dbname(database);
        }
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(DEFAULT_CONNECT_TIMEOUT);
        }
        if config.get_application_name().is_none() {
            config.application_name("datadiff");
        }
        if config.get_password().is_none() {
            if let Some(password) = environment.get("PGPASSWORD") {
                config.password(password);
            } else if let Some(path) = environment.passfile() {
                let host = match config.get_hosts().first() {
                    Some(Host::Tcp(name)) => name.clone(),
                    Some(Host::Unix(path)) => path.display().to_string(),
                    None => config.get_hostaddrs().first().map(ToString::to_string).unwrap_or_default(),
                };
                let port = config.get_ports().first().copied().unwrap_or(5432).to_string();
                let user = config.get_user().unwrap_or_default().to_owned();
                let database = config.get_dbname().unwrap_or(&user).to_owned();
                let query = PassfileQuery { host: &host, port: &port, database: &database, user: &user };
                if let Some(password) = passfile::lookup(&path, &query)? {
                    config.password(password);
                }
            }
        }
        Ok(Dsn { role: role.to_owned(), config })
    }

    /// The connection's role name (`source`, `replica`, ...).
    pub fn role(&self) -> &str {
        &self.role
    }

    /// The resolved settings.
    pub fn config(&self) -> &postgres::Config {
        &self.config
    }

    /// Whether a password was found (in the DSN, `PGPASSWORD` or the password file).
    pub fn has_password(&self) -> bool {
        self.config.get_password().is_some()
    }

    /// Whether the connection may use TLS (`sslmode` other than `disable`).
    pub fn wants_tls(&self) -> bool {
        self.config.get_ssl_mode() != SslMode::Disable
    }
}

/// libpq's default socket directory: Debian's when it exists, else `/tmp`.
fn default_socket_dir() -> PathBuf {
    let debian = PathBuf::from("/var/run/postgresql");
    if debian.is_dir() { debian } else { PathBuf::from("/tmp") }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env() -> Environment {
        Environment::from_pairs([("USER", "osuser")])
    }

    #[test]
    fn uri_and_key_value_forms_parse_alike() {
        let uri =
            Dsn::parse("source", "postgresql://app:s3cret@db.example:6432/sales?sslmode=require", &env()).unwrap();
        let kv = Dsn::parse(
            "source",
            "host=db.example port=6432 dbname=sales user=app password=s3cret sslmode=require",
            &env(),
        )
        .unwrap();
        for dsn in [&uri, &kv] {
            let config = dsn.config();
            assert_eq!(config.get_hosts(), &[Host::Tcp("db.example".into())]);
            assert_eq!(config.get_ports(), &[6432]);
            assert_eq!(config.get_dbname(), Some("sales"));
            assert_eq!(config.get_user(), Some("app"));
            assert_eq!(config.get_password(), Some(&b"s3cret"[..]));
            assert_eq!(config.get_connect_timeout(), Some(&DEFAULT_CONNECT_TIMEOUT));
            assert!(dsn.wants_tls());
        }
    }

    #[test]
    fn debug_and_errors_never_show_the_password() {
        let dsn = Dsn::parse("source", "host=h user=u password=marker-pw-123", &env()).unwrap();
        assert!(!format!("{dsn:?}").contains("marker-pw-123"));
        let error = Dsn::parse("source", "host=h user=u password=marker-pw-123 port=notaport", &env()).unwrap_err();
        let mut text = error.to_string();
        let mut cause = std::error::Error::source(&error);
        while let Some(inner) = cause {
            text.push_str(&inner.to_string());
            cause = inner.source();
        }
        assert!(text.contains("source") && !text.contains("marker-pw-123"), "{text}");
    }

    #[test]
    fn pgpassword_fills_a_missing_password_but_never_overrides_one() {
        let environment = env().with("PGPASSWORD", "from-env");
        let dsn = Dsn::parse("replica", "host=h user=u", &environment).unwrap();
        assert_eq!(dsn.config().get_password(), Some(&b"from-env"[..]));
        let dsn = Dsn::parse("replica", "host=h user=u password=given", &environment).unwrap();
        assert_eq!(dsn.config().get_password(), Some(&b"given"[..]));
    }

    #[test]
    fn passfile_is_used_when_no_password_is_given() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pgpass");
        std::fs::write(&path, "h:7000:sales:u:from-file\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        let environment = env().with("PGPASSFILE", path.display().to_string());
        let dsn = Dsn::parse("source", "postgres://u@h:7000/sales", &environment).unwrap();
        assert_eq!(dsn.config().get_password(), Some(&b"from-file"[..]));
        let dsn = Dsn::parse("source", "postgres://u@h:7001/sales", &environment).unwrap();
        assert!(!dsn.has_password());
    }

    #[test]
    fn environment_fallbacks_fill_what_the_dsn_leaves_out() {
        let environment = env().with("PGHOST", "envhost").with("PGPORT", "7777").with("PGDATABASE", "envdb");
        let dsn = Dsn::parse("source", "", &environment).unwrap();
        let config = dsn.config();
        assert_eq!(config.get_hosts(), &[Host::Tcp("envhost".into())]);
        assert_eq!(config.get_ports(), &[7777]);
        assert_eq!(config.get_user(), Some("osuser"));
        assert_eq!(config.get_dbname(), Some("envdb"));
    }

    #[test]
    fn verify_modes_are_refused_with_a_clear_message() {
        let error = Dsn::parse("source", "host=h user=u sslmode=verify-full", &env()).unwrap_err();
        assert!(error.to_string().contains("verify-full are not supported"), "{error}");
    }
}
