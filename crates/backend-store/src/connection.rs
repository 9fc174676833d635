//! Opening one backend session for either role, with libpq's `sslmode` semantics.
//!
//! rust-postgres itself knows only `disable`, `prefer` and `require`, and whether it
//! verifies is up to the TLS connector it is handed. So each mode is mapped to a driver mode
//! plus an OpenSSL connector configured for exactly the checks libpq makes: no
//! verification (`prefer`, `require`), chain only (`verify-ca`, and `require` with a root
//! certificate file), or chain and host name (`verify-full`). `allow` is a plaintext attempt
//! followed, only when the server's `pg_hba.conf` rejects it, by a TLS attempt.

use std::fmt;
use std::path::{Path, PathBuf};

use datadiff_connect::{ClientCertificate, ClientTls, LazyTls, RootCertificates, TlsSetupError, Verify};
use datadiff_diff_core::definition::SslMode;
use postgres::config::SslMode as DriverSslMode;
use postgres::error::SqlState;
use postgres::{Client, NoTls};

use crate::config::BackendConfig;
use crate::error::Error;

/// The default `application_name` of application sessions: upstream's
/// `pipelinewise-data-diff` (config note §5.1, which SPEC §3 adopts for session settings).
///
/// Keeping upstream's name means a team that switches tools keeps its monitoring
/// (`pg_stat_activity` filters, `log_line_prefix` `%a`, connection limits per application).
/// When both tools share a backend and an operator needs to tell their sessions apart, set
/// [`BackendConfig::application_name`](crate::BackendConfig::application_name) to another
/// name. The migration session sets none, as upstream's Alembic session.
pub const APPLICATION_NAME: &str = "pipelinewise-data-diff";

/// Which of the backend's two roles a session logs in as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Role {
    /// `user`: rows only, through the pool.
    Application,
    /// `ddl_user`: migrations, on a single connection.
    Ddl,
}

impl Role {
    /// `application` or `ddl`.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Application => "application",
            Role::Ddl => "ddl",
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Opens a session as `role`: UTC (`-c timezone=UTC`), `application_name` (application role), the
/// configured timeouts and TLS.
///
/// The whole login (TCP, TLS, authentication; both tries of `allow`) is bounded by
/// `connect_timeout`, as libpq's is, through the connection crate's
/// [`within_deadline`](datadiff_connect::within_deadline); `0` waits indefinitely.
pub(crate) fn connect(config: &BackendConfig, role: Role) -> Result<Client, Error> {
    let timeout = config.connect_timeout;
    if timeout.is_zero() {
        return connect_now(config, role);
    }
    let owned = config.clone();
    let connected =
        datadiff_connect::within_deadline("datadiff-backend-connect", timeout, move || connect_now(&owned, role));
    match connected {
        Ok(result) => result,
        // No helper thread: connect here, bounded by the TCP timeout only.
        Err(datadiff_connect::DeadlineError::Thread(_)) => connect_now(config, role),
        Err(_) => Err(Error::ConnectTimeout {
            role,
            user: match role {
                Role::Application => config.user.clone(),
                Role::Ddl => config.ddl_user.clone(),
            },
            host: config.host.clone(),
            port: config.port,
            dbname: config.dbname.clone(),
            timeout,
        }),
    }
}

fn connect_now(config: &BackendConfig, role: Role) -> Result<Client, Error> {
    let mut driver = driver_config(config, role);
    let connect_error = |source| Error::Connect {
        role,
        user: match role {
            Role::Application => config.user.clone(),
            Role::Ddl => config.ddl_user.clone(),
        },
        host: config.host.clone(),
        port: config.port,
        dbname: config.dbname.clone(),
        source,
    };
    let result = match config.effective_sslmode() {
        SslMode::Disable => driver.ssl_mode(DriverSslMode::Disable).connect(NoTls),
        SslMode::Allow => match driver.ssl_mode(DriverSslMode::Disable).connect(NoTls) {
            // pg_hba.conf has no plaintext entry for us: try again over TLS, as libpq does.
            Err(error) if error.code() == Some(&SqlState::INVALID_AUTHORIZATION_SPECIFICATION) => {
                driver.ssl_mode(DriverSslMode::Require).connect(tls_connector(config, None)?)
            }
            other => other,
        },
        SslMode::Prefer => driver.ssl_mode(DriverSslMode::Prefer).connect(tls_connector(config, None)?),
        // libpq: "if a root CA file exists, sslmode=require behaves like verify-ca".
        SslMode::Require if config.sslrootcert.is_some() => {
            driver.ssl_mode(DriverSslMode::Require).connect(tls_connector(config, Some(Verify::Chain))?)
        }
        SslMode::Require => driver.ssl_mode(DriverSslMode::Require).connect(tls_connector(config, None)?),
        SslMode::VerifyCa => {
            driver.ssl_mode(DriverSslMode::Require).connect(tls_connector(config, Some(Verify::Chain))?)
        }
        SslMode::VerifyFull => {
            driver.ssl_mode(DriverSslMode::Require).connect(tls_connector(config, Some(Verify::ChainAndHost))?)
        }
    };
    result.map_err(connect_error)
}

/// The driver settings for `role`, without TLS.
fn driver_config(config: &BackendConfig, role: Role) -> postgres::Config {
    let mut driver = postgres::Config::new();
    driver.host(&config.host).port(config.port).dbname(&config.dbname);
    datadiff_connect::with_keepalive_defaults(&mut driver);
    let mut options = String::from("-c timezone=UTC");
    match role {
        Role::Application => {
            driver.user(&config.user).password(&config.password).application_name(&config.application_name);
            if let Some(timeout) = config.statement_timeout {
                options.push_str(&format!(" -c statement_timeout={}", timeout.as_millis()));
            }
        }
        Role::Ddl => {
            driver.user(&config.ddl_user).password(&config.ddl_password);
        }
    }
    driver.options(&options);
    if !config.connect_timeout.is_zero() {
        driver.connect_timeout(config.connect_timeout);
    }
    driver
}

/// The connector for `verify` (`None`: the certificate is not checked) and the backend's
/// client certificate. Root certificates for the verifying modes: the `sslrootcert` file;
/// `system` for the system's trust store; else libpq's `~/.postgresql/root.crt` when it
/// exists; else the system's trust store (the one builder: [`ClientTls::new`]). Without
/// verification and without a client certificate, the shared unverified context, built only
/// when the server accepts TLS.
fn tls_connector(config: &BackendConfig, verify: Option<Verify>) -> Result<LazyTls, Error> {
    let client = match (&config.sslcert, &config.sslkey) {
        (Some(certificate), Some(key)) => {
            Some(ClientCertificate { certificate: certificate.clone(), key: key.clone() })
        }
        (Some(certificate), None) => {
            return Err(Error::ClientCertificate {
                path: certificate.clone(),
                source: "sslcert is set without sslkey".into(),
            });
        }
        (None, Some(key)) => {
            return Err(Error::ClientCertificate { path: key.clone(), source: "sslkey is set without sslcert".into() });
        }
        (None, None) => None,
    };
    let roots = match config.sslrootcert.as_deref() {
        Some(path) if path == Path::new("system") => RootCertificates::System,
        Some(path) => RootCertificates::File(path.to_path_buf()),
        None if verify.is_some() => default_root_file().map_or(RootCertificates::Unset, RootCertificates::File),
        None => RootCertificates::Unset,
    };
    // A rejected server certificate fails the connection with its cause in psql's words.
    let tls = ClientTls::new(&roots, verify, client.as_ref()).map_err(|error| match error {
        TlsSetupError::OpenSsl(source) => Error::Tls(source),
        TlsSetupError::Roots { path, source } => Error::RootCertificate { path, source },
        TlsSetupError::ClientCertificate { path, source } => Error::ClientCertificate { path, source },
    })?;
    Ok(tls.lazy())
}

/// libpq's default root certificate file, when it exists.
fn default_root_file() -> Option<PathBuf> {
    let home = std::env::var_os("HOME")?;
    let path = PathBuf::from(home).join(".postgresql").join("root.crt");
    path.is_file().then_some(path)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn config() -> BackendConfig {
        BackendConfig {
            host: "db.example".into(),
            port: 6543,
            user: "app".into(),
            password: "app-password".into(),
            dbname: "backend".into(),
            ddl_user: "owner".into(),
            ddl_password: "owner-password".into(),
            statement_timeout: Some(Duration::from_secs(90)),
            ..BackendConfig::default()
        }
    }

    #[test]
    fn application_sessions_are_utc_named_and_time_limited() {
        let driver = driver_config(&config(), Role::Application);
        assert_eq!(driver.get_user(), Some("app"));
        assert_eq!(driver.get_application_name(), Some(APPLICATION_NAME));
        assert_eq!(driver.get_options(), Some("-c timezone=UTC -c statement_timeout=90000"));
        assert_eq!(driver.get_connect_timeout(), Some(&Duration::from_secs(10)));
        assert_eq!(driver.get_ports(), &[6543]);
        assert_eq!(driver.get_dbname(), Some("backend"));
    }

    #[test]
    fn ddl_sessions_are_utc_without_a_statement_timeout() {
        let driver = driver_config(&config(), Role::Ddl);
        assert_eq!(driver.get_user(), Some("owner"));
        assert_eq!(driver.get_password(), Some(&b"owner-password"[..]));
        assert_eq!(driver.get_application_name(), None);
        assert_eq!(driver.get_options(), Some("-c timezone=UTC"));
    }

    #[test]
    fn a_zero_connect_timeout_waits_indefinitely() {
        let config = BackendConfig { connect_timeout: Duration::ZERO, ..config() };
        assert_eq!(driver_config(&config, Role::Application).get_connect_timeout(), None);
    }

    #[test]
    fn an_unreadable_root_file_is_a_config_error_naming_it() {
        let config = BackendConfig {
            sslmode: Some(SslMode::VerifyCa),
            sslrootcert: Some(PathBuf::from("/nonexistent/datadiff/ca.pem")),
            ..config()
        };
        let Err(error) = connect(&config, Role::Application) else { panic!("connected without a root file") };
        assert!(
            matches!(&error, Error::RootCertificate { path, .. } if path == Path::new("/nonexistent/datadiff/ca.pem"))
        );
        assert!(error.is_config());
        assert!(error.to_string().starts_with("backend sslrootcert /nonexistent/datadiff/ca.pem"));
    }

    #[test]
    fn a_root_file_without_certificates_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("empty.pem");
        std::fs::write(&path, "not a certificate\n").unwrap();
        let config = BackendConfig { sslmode: Some(SslMode::VerifyFull), sslrootcert: Some(path), ..config() };
        assert!(matches!(connect(&config, Role::Ddl), Err(Error::RootCertificate { .. })));
    }
}
