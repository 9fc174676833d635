//! Connection settings for the backend database.

use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

use datadiff_diff_core::definition::SslMode;

use crate::error::Error;

/// The default PostgreSQL port.
pub const DEFAULT_PORT: u16 = 5432;

/// The default connect timeout (upstream's `connect_timeout` default of 10 seconds).
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// How to reach the backend: upstream's `backend_db` keys (config note §5.1) plus datadiff's
/// `sslrootcert`, `sslcert` and `sslkey` (from `datadiff.yml`) and an optional statement
/// timeout.
///
/// Two roles: the application role (`user`) reads and writes rows through a pool; the DDL
/// role (`ddl_user`) runs migrations on a single connection and owns the schema. Set both
/// pairs to the same role to use one. `Debug` never shows a password.
///
/// ```
/// use datadiff_backend_store::BackendConfig;
///
/// let config = BackendConfig {
///     host: "backend.example.com".into(),
///     user: "pipelinewise".into(),
///     password: "secret".into(),
///     dbname: "pipelinewise".into(),
///     ddl_user: "pipelinewise_ddl".into(),
///     ddl_password: "ddl-secret".into(),
///     ..BackendConfig::default()
/// };
/// assert_eq!(config.port, 5432);
/// assert!(config.validate().is_ok());
/// assert!(!format!("{config:?}").contains("secret"));
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct BackendConfig {
    /// Host name, IP address, or a Unix-socket directory (starting with `/`). Required.
    pub host: String,
    /// TCP port; default 5432.
    pub port: u16,
    /// The application role. Required.
    pub user: String,
    /// The application role's password. Required.
    pub password: String,
    /// The backend database. Required.
    pub dbname: String,
    /// The DDL role that runs migrations and owns the schema. Required.
    pub ddl_user: String,
    /// The DDL role's password. Required.
    pub ddl_password: String,
    /// libpq `sslmode` of both roles' sessions, with libpq's meaning; `None` is libpq's
    /// default, `prefer`.
    ///
    /// | mode | TLS | server certificate | host name |
    /// |---|---|---|---|
    /// | `disable` | never | — | — |
    /// | `allow` | only if the server refuses a plaintext login | not checked | not checked |
    /// | `prefer` (the default when unset) | when the server offers it, else plaintext | not checked | not checked |
    /// | `require` | always | not checked — unless `sslrootcert` is set, then as `verify-ca` (libpq's rule for a root certificate file) | not checked |
    /// | `verify-ca` | always | chains to the root certificates | not checked |
    /// | `verify-full` | always | chains to the root certificates | must match the configured host |
    ///
    /// Root certificates for the verifying modes: the `sslrootcert` file when set (only those
    /// certificates are trusted); otherwise `~/.postgresql/root.crt` when it exists, as libpq;
    /// otherwise the system's trust store. libpq would refuse to connect in that last case;
    /// datadiff trusts the system store instead, as libpq 16 does for `sslrootcert=system`
    /// (which datadiff also accepts).
    pub sslmode: Option<SslMode>,
    /// Root certificates for verifying the server (`datadiff.yml`); `system` means the
    /// system trust store.
    pub sslrootcert: Option<PathBuf>,
    /// A client certificate (PEM, `datadiff.yml`), sent in every mode that encrypts when the
    /// server asks for one (`pg_hba.conf`'s `cert`, `clientcert=verify-ca|verify-full`).
    /// Both roles present it. Set with [`BackendConfig::sslkey`].
    pub sslcert: Option<PathBuf>,
    /// The client certificate's private key (PEM, unencrypted, `datadiff.yml`).
    pub sslkey: Option<PathBuf>,
    /// How long to wait for a connection; zero waits indefinitely. Default 10 s. Unlike
    /// upstream (application connection only), it applies to the DDL connection as well: a
    /// migration should not hang forever on an unreachable host either.
    pub connect_timeout: Duration,
    /// `statement_timeout` for application sessions (`None`: the server's setting).
    /// Migrations never get one: they wait for their lock and finish.
    pub statement_timeout: Option<Duration>,
    /// `application_name` of application sessions; default upstream's
    /// [`APPLICATION_NAME`](crate::APPLICATION_NAME), `pipelinewise-data-diff`.
    pub application_name: String,
}

impl Default for BackendConfig {
    /// Empty required fields, port 5432, no sslmode, 10 s connect timeout, upstream's
    /// `application_name`.
    fn default() -> Self {
        BackendConfig {
            host: String::new(),
            port: DEFAULT_PORT,
            user: String::new(),
            password: String::new(),
            dbname: String::new(),
            ddl_user: String::new(),
            ddl_password: String::new(),
            sslmode: None,
            sslrootcert: None,
            sslcert: None,
            sslkey: None,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            statement_timeout: None,
            application_name: crate::connection::APPLICATION_NAME.to_owned(),
        }
    }
}

impl BackendConfig {
    /// Checks that every required field is non-empty, as upstream does before connecting:
    /// `backend_db is missing required fields: a, b` (in the order host, user, password,
    /// dbname, ddl_user, ddl_password).
    pub fn validate(&self) -> Result<(), Error> {
        let required = [
            ("host", &self.host),
            ("user", &self.user),
            ("password", &self.password),
            ("dbname", &self.dbname),
            ("ddl_user", &self.ddl_user),
            ("ddl_password", &self.ddl_password),
        ];
        let missing: Vec<&'static str> =
            required.iter().filter(|(_, value)| value.is_empty()).map(|(name, _)| *name).collect();
        if missing.is_empty() { Ok(()) } else { Err(Error::MissingFields(missing)) }
    }

    /// The effective sslmode (`prefer` when unset).
    pub fn effective_sslmode(&self) -> SslMode {
        self.sslmode.unwrap_or(SslMode::Prefer)
    }

    /// Whether migrations and queries use the same role.
    pub fn single_role(&self) -> bool {
        self.user == self.ddl_user
    }
}

impl fmt::Debug for BackendConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BackendConfig")
            .field("host", &self.host)
            .field("port", &self.port)
            .field("user", &self.user)
            .field("password", &"<redacted>")
            .field("dbname", &self.dbname)
            .field("ddl_user", &self.ddl_user)
            .field("ddl_password", &"<redacted>")
            .field("sslmode", &self.sslmode)
            .field("sslrootcert", &self.sslrootcert)
            .field("sslcert", &self.sslcert)
            .field("sslkey", &self.sslkey)
            .field("connect_timeout", &self.connect_timeout)
            .field("statement_timeout", &self.statement_timeout)
            .field("application_name", &self.application_name)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn complete() -> BackendConfig {
        BackendConfig {
            host: "db".into(),
            user: "app".into(),
            password: "app-pw-1".into(),
            dbname: "backend".into(),
            ddl_user: "ddl".into(),
            ddl_password: "ddl-pw-2".into(),
            ..BackendConfig::default()
        }
    }

    #[test]
    fn defaults_are_upstreams() {
        let config = BackendConfig::default();
        assert_eq!(config.port, 5432);
        assert_eq!(config.connect_timeout, Duration::from_secs(10));
        assert_eq!(config.sslmode, None);
        assert_eq!(config.effective_sslmode(), SslMode::Prefer);
        assert_eq!(config.application_name, "pipelinewise-data-diff");
    }

    #[test]
    fn missing_fields_are_named_in_upstreams_order() {
        let config = BackendConfig { password: String::new(), ddl_user: String::new(), ..complete() };
        let error = config.validate().unwrap_err();
        assert_eq!(error.to_string(), "backend_db is missing required fields: password, ddl_user");
        assert!(error.is_config());

        let error = BackendConfig::default().validate().unwrap_err();
        assert_eq!(
            error.to_string(),
            "backend_db is missing required fields: host, user, password, dbname, ddl_user, ddl_password"
        );
        assert!(complete().validate().is_ok());
    }

    #[test]
    fn one_role_for_both_is_allowed() {
        let config = BackendConfig { ddl_user: "app".into(), ddl_password: "app-pw-1".into(), ..complete() };
        assert!(config.validate().is_ok());
        assert!(config.single_role());
        assert!(!complete().single_role());
    }

    #[test]
    fn debug_redacts_both_passwords() {
        let text = format!("{:?}", complete());
        assert!(!text.contains("app-pw-1"), "{text}");
        assert!(!text.contains("ddl-pw-2"), "{text}");
        assert!(text.contains("<redacted>"));
        assert!(text.contains("ddl"));
    }
}
