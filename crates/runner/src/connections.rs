//! Where an attempt's two sides connect: the tap's and the target's `db_conn` from the
//! project YAML (SPEC §2: not PipelineWise's generated JSON), with PipelineWise's session
//! parameters (config note §5.2–§5.3).
//!
//! * The source uses `replica_host`, `replica_port`, `replica_user` and `replica_password`
//!   when present, each falling back to its plain key; the target connects directly.
//! * `ssl: true` (or `"true"`) means `sslmode=require`; otherwise libpq's default `prefer`.
//!   Both encrypt without verifying the server certificate, as libpq does for these modes.
//!   `datadiff.yml`'s `tls` block ([`datadiff_config::ConnectionTls`]) sets a tap's or a
//!   target's `sslmode` (up to `verify-full`), `sslrootcert` and client certificate
//!   (`sslcert`, `sslkey`); the side's streams (`row_diff`) use the same TLS.
//! * `connect_timeout` is `min(statement timeout, 30)` seconds, the statement timeout being
//!   `max(1, statement_timeout_seconds)`; `application_name` is
//!   `pipelinewise-data-diff-source` / `-target`, so monitoring keeps working after a switch.
//! * The `dbname` must equal the database persisted on the definition, else the attempt is
//!   ERROR with upstream's message (`Persisted source database '<db>' does not match the
//!   imported connection for tap '<tap>'`, and the target variant).
//!
//! A PostgreSQL side's `db_conn` takes libpq's per-connection keys
//! ([`datadiff_config::LibpqKeys`]). Its `service` names a connection service
//! (`PGSERVICEFILE`, `~/.pg_service.conf`, `PGSYSCONFDIR/pg_service.conf`) whose `host`
//! (else `hostaddr`), `port`, `user`, `password`, `passfile`, TLS settings and driver keys fill
//! what the `db_conn` (and `datadiff.yml`) leave out, as libpq's connection-string `service`
//! does. `PGSERVICE` is **not** read for these connections: libpq applies it to every
//! connection that names no service, which here would send a source and its target — two
//! servers — to one service; each side names its own instead (a warning says so when
//! `PGSERVICE` is set). Then a `db_conn` without `host` uses the local Unix socket, one
//! without `user` takes `PGUSER` (then the login name), and one without `password` takes
//! `PGPASSWORD`, then the password file (`passfile`, the service's, `PGPASSFILE`,
//! `~/.pgpass`). TLS, key by key: `datadiff.yml`'s `tls` entry, the `db_conn`'s `sslmode`,
//! `sslrootcert`, `sslcert` and `sslkey` (`ssl: true` is `require`), the service's, then
//! `prefer`. These texts never contain a password.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use datadiff_config::{DbConn, Endpoint, Pem, Project, SideTls};
use datadiff_diff_core::{
    Side,
    definition::{CheckDefinition, SslMode},
};

use datadiff_access::{
    ClientCertificate, Environment, MySqlSideConfig, PassfileQuery, RootCertificates, Service, SideConfig, TlsSettings,
    passfile_lookup,
};
use datadiff_diff_core::definition::SourceType;
use datadiff_diff_core::mysql::MySqlTls;

/// `application_name` of source sessions, as upstream.
pub const SOURCE_APPLICATION_NAME: &str = "pipelinewise-data-diff-source";
/// `application_name` of target sessions, as upstream.
pub const TARGET_APPLICATION_NAME: &str = "pipelinewise-data-diff-target";
/// The longest connect timeout, whatever the statement timeout (upstream's cap).
pub const MAX_CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// The connections of a project: each tap's and each target's `db_conn`, by id.
///
/// ```
/// use datadiff_config::{DbConn, Secret};
/// use datadiff_access::Environment;
/// use datadiff_runner::Connections;
///
/// let source = DbConn {
///     host: Some("primary.internal".into()),
///     replica_host: Some("standby.internal".into()),
///     user: Some("reader".into()),
///     password: Some(Secret::new("s3cret")),
///     dbname: Some("payments".into()),
///     ..DbConn::default()
/// };
/// let warehouse = DbConn { host: Some("dwh.internal".into()), dbname: Some("dwh".into()), ..source.clone() };
/// let connections = Connections::new(Environment::default()).with_tap("payments", source).with_target("postgres", warehouse);
/// assert!(connections.has_tap("payments") && connections.has_target("postgres"));
/// assert!(!format!("{connections:?}").contains("s3cret"));
/// ```
#[derive(Debug, Clone, Default)]
pub struct Connections {
    taps: BTreeMap<String, Option<DbConn>>,
    targets: BTreeMap<String, Option<DbConn>>,
    tap_tls: BTreeMap<String, SideTls>,
    target_tls: BTreeMap<String, SideTls>,
    environment: Environment,
}

impl Connections {
    /// No connections yet; `environment` supplies libpq's fallbacks (`PGUSER`,
    /// `PGPASSWORD`, `PGPASSFILE`, `HOME`).
    pub fn new(environment: Environment) -> Connections {
        Connections {
            taps: BTreeMap::new(),
            targets: BTreeMap::new(),
            tap_tls: BTreeMap::new(),
            target_tls: BTreeMap::new(),
            environment,
        }
    }

    /// Every tap and target of a loaded project, with the process environment.
    pub fn from_project(project: &Project) -> Connections {
        Connections::from_project_with(project, Environment::process())
    }

    /// Every tap and target of a loaded project, with `environment` for libpq's fallbacks.
    pub fn from_project_with(project: &Project, environment: Environment) -> Connections {
        let mut connections = Connections::new(environment);
        for tap in &project.taps {
            connections.taps.insert(tap.id.clone(), tap.db_conn.clone());
        }
        for target in &project.targets {
            connections.targets.insert(target.id.clone(), target.db_conn.clone());
        }
        connections.tap_tls = project.tls.taps.clone();
        connections.target_tls = project.tls.targets.clone();
        if connections.environment.get("PGSERVICE").is_some() {
            tracing::warn!(
                "PGSERVICE is not used for the project's source and target connections (it would send both sides \
                 to one service): name each side's service with db_conn.service"
            );
        }
        connections
    }

    /// Sets a tap's TLS (`datadiff.yml`'s `tls.taps.<id>`).
    pub fn with_tap_tls(mut self, tap_id: impl Into<String>, tls: SideTls) -> Connections {
        self.tap_tls.insert(tap_id.into(), tls);
        self
    }

    /// Sets a target's TLS (`datadiff.yml`'s `tls.targets.<id>`).
    pub fn with_target_tls(mut self, target_id: impl Into<String>, tls: SideTls) -> Connections {
        self.target_tls.insert(target_id.into(), tls);
        self
    }

    /// Adds (or replaces) a tap's `db_conn`.
    pub fn with_tap(mut self, tap_id: impl Into<String>, db_conn: DbConn) -> Connections {
        self.taps.insert(tap_id.into(), Some(db_conn));
        self
    }

    /// Adds (or replaces) a target's `db_conn`.
    pub fn with_target(mut self, target_id: impl Into<String>, db_conn: DbConn) -> Connections {
        self.targets.insert(target_id.into(), Some(db_conn));
        self
    }

    /// Whether the tap is known (with or without a `db_conn`).
    pub fn has_tap(&self, tap_id: &str) -> bool {
        self.taps.contains_key(tap_id)
    }

    /// Whether the target is known (with or without a `db_conn`).
    pub fn has_target(&self, target_id: &str) -> bool {
        self.targets.contains_key(target_id)
    }

    /// Both sides' session settings for `definition`, its databases cross-checked; the
    /// error's text is the attempt's one-line reason.
    pub fn route(&self, definition: &CheckDefinition) -> Result<Route, RouteError> {
        let tap = &definition.tap_id;
        let target = &definition.target_id;
        let (source, source_conn) = match self.taps.get(tap) {
            None => return Err(RouteError::Undefined { owner: Owner::Tap, id: tap.clone() }),
            Some(None) => return Err(RouteError::NoDbConn { owner: Owner::Tap, id: tap.clone() }),
            Some(Some(db_conn)) => (db_conn.source_endpoint(), db_conn),
        };
        let target_endpoint = match self.targets.get(target) {
            None => return Err(RouteError::Undefined { owner: Owner::Target, id: target.clone() }),
            Some(None) => return Err(RouteError::NoDbConn { owner: Owner::Target, id: target.clone() }),
            Some(Some(db_conn)) => db_conn.target_endpoint(),
        };
        if source.dbname.as_deref() != Some(definition.source_database.as_str()) {
            return Err(RouteError::DatabaseMismatch {
                owner: Owner::Tap,
                id: tap.clone(),
                persisted: definition.source_database.clone(),
            });
        }
        if target_endpoint.dbname.as_deref() != Some(definition.target_database.as_str()) {
            return Err(RouteError::DatabaseMismatch {
                owner: Owner::Target,
                id: target.clone(),
                persisted: definition.target_database.clone(),
            });
        }
        let timeout = statement_timeout(definition.statement_timeout_seconds);
        let mysql_source = match definition.source_type {
            SourceType::TapMysql => Some(mysql_source_config(&source, source_conn, tap, timeout)?),
            SourceType::TapPostgres => None,
        };
        Ok(Route {
            source: self.side_config(Side::Source, &source, tap, timeout)?,
            target: self.side_config(Side::Target, &target_endpoint, target, timeout)?,
            statement_timeout: timeout,
            mysql_source,
        })
    }

    /// Checks, before any attempt, that every connection service a tap's or a target's
    /// `db_conn` names (`service:`) can be read: an unknown service or an invalid service file
    /// is a problem of the whole invocation (exit 2), not an ERROR of each attempt. The error
    /// names the tap or target, the key and the files.
    pub fn check_services(&self) -> Result<(), RouteError> {
        let sides = self
            .taps
            .iter()
            .map(|(id, db_conn)| (Owner::Tap, id, db_conn.as_ref().map(DbConn::source_endpoint)))
            .chain(
                self.targets
                    .iter()
                    .map(|(id, db_conn)| (Owner::Target, id, db_conn.as_ref().map(DbConn::target_endpoint))),
            );
        for (owner, id, endpoint) in sides {
            let Some(name) = endpoint.as_ref().and_then(|endpoint| endpoint.libpq.service.as_deref()) else {
                continue;
            };
            if let Err(error) = datadiff_access::service::lookup(owner.role(), name, &self.environment) {
                return Err(RouteError::Service { owner, id: id.clone(), reason: datadiff_access::chain(&error) });
            }
        }
        Ok(())
    }

    fn side_config(
        &self,
        side: Side,
        endpoint: &Endpoint,
        owner: &str,
        timeout: Duration,
    ) -> Result<SideConfig, RouteError> {
        let owner_kind = match side {
            Side::Source => Owner::Tap,
            Side::Target => Owner::Target,
        };
        let role = owner_kind.role();
        // The side's own service only: PGSERVICE would send both sides to one (module docs).
        let service = match &endpoint.libpq.service {
            Some(name) => Some(datadiff_access::service::lookup(role, name, &self.environment).map_err(|error| {
                RouteError::Service { owner: owner_kind, id: owner.to_owned(), reason: datadiff_access::chain(&error) }
            })?),
            None => None,
        };
        let from_service = |key: &str| service.as_ref().and_then(|service| service.get(key)).map(str::to_owned);
        let mut endpoint = endpoint.clone();
        if let Some(service) = &service {
            fill_from_service(&mut endpoint, service)?;
        }
        let endpoint = &endpoint;
        let mut config = driver_config(&endpoint.libpq.driver, service.as_ref()).map_err(|error| {
            RouteError::DbConn { owner: owner_kind, id: owner.to_owned(), reason: error.to_string() }
        })?;
        let host = match &endpoint.host {
            Some(host) if host.starts_with('/') => {
                config.host_path(host);
                host.clone()
            }
            Some(host) => {
                config.host(host);
                host.clone()
            }
            // libpq: hostaddr without host connects over TCP to that address.
            None if !config.get_hostaddrs().is_empty() => config.get_hostaddrs()[0].to_string(),
            None => {
                let socket = default_socket_dir();
                config.host_path(&socket);
                socket.display().to_string()
            }
        };
        let port = endpoint.port.unwrap_or(5432);
        config.port(port);
        let user = match &endpoint.user {
            Some(user) => user.clone(),
            None => self
                .environment
                .get("PGUSER")
                .or_else(|| self.environment.get("USER"))
                .or_else(|| self.environment.get("LOGNAME"))
                .map(str::to_owned)
                .ok_or_else(|| RouteError::Missing { owner: owner_kind, id: owner.to_owned(), key: "user" })?,
        };
        config.user(&user);
        let dbname = endpoint.dbname.clone().unwrap_or_default();
        config.dbname(&dbname);
        match &endpoint.password {
            Some(password) => {
                config.password(password.expose());
            }
            None => {
                let passfile = endpoint
                    .libpq
                    .passfile
                    .clone()
                    .or_else(|| from_service("passfile").map(PathBuf::from))
                    .or_else(|| self.environment.passfile());
                if let Some(password) = self.environment.get("PGPASSWORD") {
                    config.password(password);
                } else if let Some(path) = passfile {
                    let port_text = port.to_string();
                    let query = PassfileQuery { host: &host, port: &port_text, database: &dbname, user: &user };
                    match passfile_lookup(&path, &query) {
                        Ok(Some(password)) => {
                            config.password(password);
                        }
                        Ok(None) => {}
                        Err(error) => return Err(RouteError::Passfile(error.into())),
                    }
                }
            }
        }
        config.application_name(match side {
            Side::Source => SOURCE_APPLICATION_NAME,
            Side::Target => TARGET_APPLICATION_NAME,
        });
        // An explicit connect_timeout (db_conn or service) wins; 0 is libpq's "no limit",
        // which a scheduled check does not take: the default applies.
        let connect_timeout = match config.get_connect_timeout() {
            Some(explicit) if !explicit.is_zero() => *explicit,
            _ => timeout.min(MAX_CONNECT_TIMEOUT),
        };
        config.connect_timeout(connect_timeout);
        let configured = match side {
            Side::Source => self.tap_tls.get(owner),
            Side::Target => self.target_tls.get(owner),
        };
        // datadiff.yml's entry wins over the db_conn's keys, key by key.
        let own = &endpoint.libpq.tls;
        let extra = configured.cloned().unwrap_or_default();
        let (sslcert, sslkey) = match (&extra.sslcert, &extra.sslkey) {
            (Some(_), Some(_)) => (extra.sslcert.clone(), extra.sslkey.clone()),
            _ => (own.sslcert.clone(), own.sslkey.clone()),
        };
        let merged = SideTls {
            sslmode: extra.sslmode.or(own.sslmode),
            sslrootcert: extra.sslrootcert.clone().or_else(|| own.sslrootcert.clone()),
            sslcert,
            sslkey,
        };
        let settings = tls_settings(endpoint.ssl, Some(&merged), service.as_ref())?;
        config.ssl_mode(settings.driver_mode());
        let tls = settings
            .client_tls()
            .map_err(|error| RouteError::Tls { reason: datadiff_access::chain(&error.for_role(role)) })?;
        Ok(SideConfig { side, config, address: format!("{host}:{port}/{dbname}"), connect_timeout, tls })
    }
}

/// The MySQL or MariaDB source connection of a `tap-mysql` tap, as PipelineWise reads its
/// `db_conn` (config note §5.3): the `replica_*` fallback already applied to `endpoint`; TCP
/// to `host` (required: tap-mysql has no socket default) on `port` (default 3306); `user`
/// required and `password` as given (libpq's `PG*` fallbacks do not apply to MySQL); TLS by
/// [`MySqlTls::from_settings`] with `ssl` as the explicit switch and the tap's `ssl_ca`,
/// `ssl_cert` and `ssl_key` (`ssl: true` or an `ssl_ca` verifies the server — against the
/// `ssl_ca`, else the system's roots — and presents the client certificate when given;
/// otherwise TLS is offered unverified); the tap's `engine` when set, else the server's
/// version string decides the statement-timeout form; the same connect timeout as
/// PostgreSQL's.
fn mysql_source_config(
    endpoint: &Endpoint,
    db_conn: &DbConn,
    tap: &str,
    timeout: Duration,
) -> Result<MySqlSideConfig, RouteError> {
    let missing = |key| RouteError::Missing { owner: Owner::Tap, id: tap.to_owned(), key };
    let host = endpoint.host.clone().ok_or_else(|| missing("host"))?;
    let user = endpoint.user.clone().ok_or_else(|| missing("user"))?;
    let setting = |pem: &Option<Pem>| pem.as_ref().map(Pem::as_setting);
    let (ca, certificate, key) = (setting(&db_conn.ssl_ca), setting(&db_conn.ssl_cert), setting(&db_conn.ssl_key));
    let tls =
        MySqlTls::from_settings(endpoint.ssl.then_some("true"), ca.as_deref(), certificate.as_deref(), key.as_deref())
            .map_err(|error| RouteError::DbConn { owner: Owner::Tap, id: tap.to_owned(), reason: error.to_string() })?;
    Ok(MySqlSideConfig {
        side: Side::Source,
        host,
        port: endpoint.port.unwrap_or(3306),
        user,
        password: endpoint.password.as_ref().map(|password| password.expose().to_owned()),
        dbname: endpoint.dbname.clone().unwrap_or_default(),
        tls,
        engine: db_conn.engine,
        connect_timeout: timeout.min(MAX_CONNECT_TIMEOUT),
    })
}

/// Fills what `endpoint` leaves out from a connection service (`PGSERVICE`): `host`
/// (`hostaddr` when it has no `host`), `port`, `user`, `password`. Its `dbname` is not used:
/// the `db_conn`'s is the definition's.
fn fill_from_service(endpoint: &mut Endpoint, service: &Service) -> Result<(), RouteError> {
    if endpoint.host.is_none() {
        endpoint.host = service.get("host").or_else(|| service.get("hostaddr")).map(str::to_owned);
    }
    if endpoint.port.is_none()
        && let Some(port) = service.get("port")
    {
        let parsed = port.trim().parse::<u16>().map_err(|_| RouteError::ServicePort {
            service: service.name.clone(),
            file: service.file.display().to_string(),
        })?;
        endpoint.port = Some(parsed);
    }
    if endpoint.user.is_none() {
        endpoint.user = service.get("user").map(str::to_owned);
    }
    if endpoint.password.is_none() {
        endpoint.password = service.get("password").map(datadiff_config::Secret::new);
    }
    Ok(())
}

/// The driver's settings from the side's libpq driver keys ([`datadiff_config::DRIVER_KEYS`]):
/// the `db_conn`'s, then the service's for the keys the `db_conn` leaves out; host, port, user,
/// password, database, TLS and names are set on top by the caller. The error names the
/// keys given, never their values.
fn driver_config(own: &[(String, String)], service: Option<&Service>) -> Result<postgres::Config, DriverKeysRejected> {
    let mut text = String::new();
    for key in datadiff_config::DRIVER_KEYS {
        let value = own
            .iter()
            .find(|(name, _)| name == key)
            .map(|(_, value)| value.as_str())
            .or_else(|| service.and_then(|service| service.get(key)));
        if let Some(value) = value {
            text.push_str(&format!("{key}='{}' ", value.replace('\\', "\\\\").replace('\'', "\\'")));
        }
    }
    if text.is_empty() {
        return Ok(postgres::Config::new());
    }
    text.parse::<postgres::Config>().map_err(|cause| DriverKeysRejected { cause, keys: key_names(own, service) })
}

/// The driver refused a side's libpq keys: its reason and the keys given (names only).
#[derive(Debug, thiserror::Error)]
#[error("{cause} (in {keys})")]
struct DriverKeysRejected {
    cause: postgres::Error,
    keys: String,
}

/// The driver keys given, for an error message: names only, never values.
fn key_names(own: &[(String, String)], service: Option<&Service>) -> String {
    let mut names: Vec<&str> = own.iter().map(|(name, _)| name.as_str()).collect();
    if let Some(service) = service {
        names.extend(datadiff_config::DRIVER_KEYS.iter().filter(|key| service.get(key).is_some()).copied());
    }
    names.sort_unstable();
    names.dedup();
    names.join(", ")
}

/// A side's TLS: `datadiff.yml`'s `tls` entry wins, then the `db_conn`'s `ssl: true`
/// (`require`), then the connection service's settings, then `prefer` (libpq's default).
fn tls_settings(ssl: bool, extra: Option<&SideTls>, service: Option<&Service>) -> Result<TlsSettings, RouteError> {
    let from_service = |key: &str| service.and_then(|service| service.get(key)).map(PathBuf::from);
    let extra = extra.cloned().unwrap_or_default();
    let mode = match extra.sslmode {
        Some(mode) => mode,
        None if ssl => SslMode::Require,
        None => match service.and_then(|service| service.get("sslmode")) {
            None => SslMode::Prefer,
            Some(text) => match text.parse::<SslMode>() {
                Ok(SslMode::Allow) | Err(_) => {
                    return Err(RouteError::ServiceSslMode {
                        mode: text.to_owned(),
                        service: service.map(|service| service.name.clone()).unwrap_or_default(),
                    });
                }
                Ok(mode) => mode,
            },
        },
    };
    let roots = match extra.sslrootcert.or_else(|| from_service("sslrootcert")) {
        None => RootCertificates::Unset,
        Some(path) if path.as_os_str() == "system" => RootCertificates::System,
        Some(path) => RootCertificates::File(path),
    };
    let (certificate, key) = match (extra.sslcert, extra.sslkey) {
        (Some(certificate), Some(key)) => (Some(certificate), Some(key)),
        _ => (from_service("sslcert"), from_service("sslkey")),
    };
    let client = match (certificate, key) {
        (Some(certificate), Some(key)) => Some(ClientCertificate { certificate, key }),
        (None, None) => None,
        _ => return Err(RouteError::ServiceHalfClientCertificate),
    };
    Ok(TlsSettings { mode, roots, client })
}

/// Which project entry a connection comes from: a tap (the source) or a target (the replica).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Owner {
    /// A tap's `db_conn`: the source.
    Tap,
    /// A target's `db_conn`: the replica.
    Target,
}

impl Owner {
    /// The side's role in messages: `source` or `target`.
    pub fn role(self) -> &'static str {
        match self {
            Owner::Tap => "source",
            Owner::Target => "target",
        }
    }

    /// `tap` or `target`, as a sentence names it.
    fn lowercase(self) -> &'static str {
        match self {
            Owner::Tap => "tap",
            Owner::Target => "target",
        }
    }
}

impl std::fmt::Display for Owner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Owner::Tap => "Tap",
            Owner::Target => "Target",
        })
    }
}

/// Why a definition's connections cannot be set up from the project. `Display` is the
/// attempt's one-line reason (stored as the attempt's ERROR message); it names the tap or
/// target and the key, never a password or a value of a connection key.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RouteError {
    /// The definition's tap or target is not in the project YAML.
    #[error("{owner} '{id}' is not defined in the project YAML")]
    Undefined {
        /// Tap or target.
        owner: Owner,
        /// Its id.
        id: String,
    },
    /// The tap or target has no `db_conn`.
    #[error("{owner} '{id}' has no db_conn in the project YAML")]
    NoDbConn {
        /// Tap or target.
        owner: Owner,
        /// Its id.
        id: String,
    },
    /// The database stored with the definition is not the one the project now names.
    #[error("Persisted {} database '{persisted}' does not match the imported connection for {} '{id}'", owner.role(), owner.lowercase())]
    DatabaseMismatch {
        /// Tap or target.
        owner: Owner,
        /// Its id.
        id: String,
        /// The database stored with the definition.
        persisted: String,
    },
    /// The connection service a `db_conn` names cannot be read.
    #[error("{owner} '{id}' db_conn.service: {reason}")]
    Service {
        /// Tap or target.
        owner: Owner,
        /// Its id.
        id: String,
        /// Why, with its causes.
        reason: String,
    },
    /// A `db_conn` key the driver or the TLS settings refuse.
    #[error("{owner} '{id}' db_conn: {reason}")]
    DbConn {
        /// Tap or target.
        owner: Owner,
        /// Its id.
        id: String,
        /// Why (key names only).
        reason: String,
    },
    /// A required `db_conn` key is missing (and no fallback provides it).
    #[error("{owner} '{id}' db_conn has no {key}")]
    Missing {
        /// Tap or target.
        owner: Owner,
        /// Its id.
        id: String,
        /// The key (`host`, `user`).
        key: &'static str,
    },
    /// A connection service's `port` is not a port number.
    #[error("service '{service}' in {file}: port is not a port number")]
    ServicePort {
        /// The service's name.
        service: String,
        /// The service file.
        file: String,
    },
    /// A connection service's `sslmode` is one datadiff does not take.
    #[error(
        "sslmode {mode:?} of service '{service}' is not supported: use disable, prefer, require, verify-ca or verify-full"
    )]
    ServiceSslMode {
        /// The mode as written.
        mode: String,
        /// The service's name.
        service: String,
    },
    /// A connection service sets only one of `sslcert` and `sslkey`.
    #[error("the connection service sets only one of sslcert and sslkey")]
    ServiceHalfClientCertificate,
    /// The password file cannot be used.
    #[error(transparent)]
    Passfile(datadiff_access::Error),
    /// The side's TLS files cannot be used.
    #[error("{reason}")]
    Tls {
        /// Why, naming the side and the file.
        reason: String,
    },
}

/// `max(1, statement_timeout_seconds)` seconds: never 0, which would mean no limit.
pub(crate) fn statement_timeout(seconds: i64) -> Duration {
    Duration::from_secs(u64::try_from(seconds.max(1)).unwrap_or(1))
}

fn default_socket_dir() -> PathBuf {
    let debian = PathBuf::from("/var/run/postgresql");
    if debian.is_dir() { debian } else { PathBuf::from("/tmp") }
}

/// Both sides' settings for one attempt.
#[derive(Debug, Clone)]
pub struct Route {
    /// The source side's connection (the tap's `db_conn`, through `replica_*`).
    pub source: SideConfig,
    /// The target side's connection (the target's `db_conn`).
    pub target: SideConfig,
    /// The statement timeout of both sessions.
    pub statement_timeout: Duration,
    /// For a `tap-mysql` source: its MySQL or MariaDB connection, used instead of `source`
    /// (which then only carries the same endpoint in PostgreSQL's shape, unused).
    pub mysql_source: Option<MySqlSideConfig>,
}

#[cfg(test)]
mod tests {
    use datadiff_config::Secret;
    use datadiff_diff_core::definition::{CheckType, Extensions, SourceType, TargetType};
    use postgres::config::SslMode as DriverSslMode;

    use super::*;

    fn definition(statement_timeout_seconds: i64) -> CheckDefinition {
        CheckDefinition {
            full_check_name: "postgres/payments/public/transfers".into(),
            target_id: "postgres".into(),
            tap_id: "payments".into(),
            source_type: SourceType::TapPostgres,
            target_type: TargetType::TargetPostgres,
            source_database: "payments".into(),
            target_database: "dwh".into(),
            source_schema: "public".into(),
            source_table: "transfers".into(),
            target_schema: "payments_public".into(),
            target_table: "transfers".into(),
            source_key_column: "id".into(),
            target_key_column: "id".into(),
            source_timestamp_column: "updated_at".into(),
            target_timestamp_column: "updated_at".into(),
            source_compare_columns: vec![],
            target_compare_columns: vec![],
            checks: vec![CheckType::RowCount],
            frequency: "0 * * * *".into(),
            window_start_seconds: 7200,
            window_end_seconds: 3600,
            statement_timeout_seconds,
            initial_full_scan: false,
            extensions: Extensions::default(),
        }
    }

    fn tap() -> DbConn {
        DbConn {
            host: Some("primary".into()),
            port: Some(5433),
            user: Some("writer".into()),
            password: Some(Secret::new("primary-pw")),
            dbname: Some("payments".into()),
            replica_host: Some("standby".into()),
            replica_port: None,
            replica_user: Some("reader".into()),
            replica_password: Some(Secret::new("replica-pw")),
            ssl: false,
            ..DbConn::default()
        }
    }

    fn warehouse() -> DbConn {
        DbConn {
            host: Some("dwh".into()),
            dbname: Some("dwh".into()),
            user: Some("loader".into()),
            password: Some(Secret::new("dwh-pw")),
            replica_host: Some("dwh-standby".into()),
            ssl: true,
            ..DbConn::default()
        }
    }

    fn connections() -> Connections {
        Connections::new(Environment::default()).with_tap("payments", tap()).with_target("postgres", warehouse())
    }

    #[test]
    fn the_source_reads_the_replica_and_the_target_connects_directly() {
        let route = connections().route(&definition(300)).unwrap();
        let source = &route.source.config;
        assert_eq!(source.get_hosts(), [postgres::config::Host::Tcp("standby".into())]);
        assert_eq!(source.get_ports(), [5433], "replica_port falls back to port");
        assert_eq!(source.get_user(), Some("reader"));
        assert_eq!(source.get_password(), Some(&b"replica-pw"[..]));
        assert_eq!(source.get_application_name(), Some("pipelinewise-data-diff-source"));
        assert_eq!(source.get_ssl_mode(), DriverSslMode::Prefer);
        let target = &route.target.config;
        assert_eq!(target.get_hosts(), [postgres::config::Host::Tcp("dwh".into())], "replica_* is ignored");
        assert_eq!(target.get_ports(), [5432]);
        assert_eq!(target.get_password(), Some(&b"dwh-pw"[..]));
        assert_eq!(target.get_application_name(), Some("pipelinewise-data-diff-target"));
        assert_eq!(target.get_ssl_mode(), DriverSslMode::Require, "ssl: true");
        assert!(!format!("{route:?}").contains("-pw"), "no password in Debug");
    }

    #[test]
    fn connect_timeouts_are_capped_at_thirty_seconds_and_statement_timeouts_never_zero() {
        let route = connections().route(&definition(300)).unwrap();
        assert_eq!(route.source.config.get_connect_timeout(), Some(&Duration::from_secs(30)));
        assert_eq!(route.statement_timeout, Duration::from_secs(300));
        let route = connections().route(&definition(0)).unwrap();
        assert_eq!(route.statement_timeout, Duration::from_secs(1));
        assert_eq!(route.target.connect_timeout, Duration::from_secs(1));
        assert_eq!(statement_timeout(-5), Duration::from_secs(1));
        assert_eq!(statement_timeout(30), Duration::from_secs(30));
    }

    #[test]
    fn a_mysql_tap_connects_to_its_replica_over_tcp_on_3306() {
        let mysql = CheckDefinition { source_type: SourceType::TapMysql, ..definition(300) };
        let mut tap = tap();
        tap.port = None;
        let route = Connections::new(Environment::from_pairs([("PGPASSWORD", "not-for-mysql")]))
            .with_tap("payments", tap)
            .with_target("postgres", warehouse())
            .route(&mysql)
            .unwrap();
        let source = route.mysql_source.as_ref().unwrap();
        assert_eq!((source.host.as_str(), source.port, source.user.as_str()), ("standby", 3306, "reader"));
        assert_eq!(source.password.as_deref(), Some("replica-pw"));
        assert_eq!((source.dbname.as_str(), source.tls.clone()), ("payments", MySqlTls::Opportunistic));
        assert_eq!(source.connect_timeout, Duration::from_secs(30));
        assert!(!format!("{route:?}").contains("-pw"), "no password in Debug");
        let mut verified = self::tap();
        verified.ssl = true;
        let route = connections().with_tap("payments", verified).route(&mysql).unwrap();
        assert_eq!(
            route.mysql_source.map(|source| source.tls),
            Some(MySqlTls::Verified { ca: None, client_certificate: None })
        );
        assert!(connections().route(&definition(300)).unwrap().mysql_source.is_none());
        let hostless = DbConn { replica_host: None, host: None, ..self::tap() };
        let error = connections().with_tap("payments", hostless).route(&mysql).unwrap_err();
        assert!(
            matches!(&error, RouteError::Missing { owner: Owner::Tap, id, key: "host" } if id == "payments"),
            "{error:?}"
        );
        assert_eq!(error.to_string(), "Tap 'payments' db_conn has no host");
    }

    #[test]
    fn a_mysql_tap_passes_its_engine_and_tls_keys_to_the_source_session() {
        use datadiff_diff_core::mysql::MySqlEngine;
        let mysql = CheckDefinition { source_type: SourceType::TapMysql, ..definition(300) };
        let tap = DbConn {
            engine: Some(MySqlEngine::MySql),
            ssl_ca: Some(Pem::File("/etc/ssl/ca.pem".into())),
            ssl_cert: Some(Pem::File("/etc/ssl/dd.crt".into())),
            ssl_key: Some(Pem::Text(Secret::new("-----BEGIN PRIVATE KEY-----\nkey-pw\n"))),
            ..self::tap()
        };
        let route = connections().with_tap("payments", tap.clone()).route(&mysql).unwrap();
        let source = route.mysql_source.as_ref().unwrap();
        assert_eq!(source.engine, Some(MySqlEngine::MySql));
        assert_eq!(
            source.tls,
            MySqlTls::Verified {
                ca: Some("/etc/ssl/ca.pem".to_owned()),
                client_certificate: Some((
                    "/etc/ssl/dd.crt".to_owned(),
                    "-----BEGIN PRIVATE KEY-----\nkey-pw\n".to_owned()
                )),
            }
        );
        assert!(!format!("{route:?}").contains("key-pw"), "no key text in Debug");
        let half = DbConn { ssl_key: None, ..tap };
        assert_eq!(
            connections().with_tap("payments", half).route(&mysql).unwrap_err().to_string(),
            "Tap 'payments' db_conn: MySQL ssl_cert and ssl_key must be configured together"
        );
        let route = connections().route(&mysql).unwrap();
        assert_eq!(route.mysql_source.map(|source| source.engine), Some(None), "detected from the server");
    }

    #[test]
    fn persisted_databases_are_cross_checked_with_upstream_messages() {
        let mut moved = tap();
        moved.dbname = Some("payments_v2".into());
        let connections = connections().with_tap("payments", moved);
        assert_eq!(
            connections.route(&definition(60)).unwrap_err().to_string(),
            "Persisted source database 'payments' does not match the imported connection for tap 'payments'"
        );
        let mut no_dbname = warehouse();
        no_dbname.dbname = None;
        let connections = self::connections().with_target("postgres", no_dbname);
        assert_eq!(
            connections.route(&definition(60)).unwrap_err().to_string(),
            "Persisted target database 'dwh' does not match the imported connection for target 'postgres'"
        );
    }

    #[test]
    fn unknown_taps_and_targets_are_named() {
        let only_target = Connections::new(Environment::default()).with_target("postgres", warehouse());
        assert_eq!(
            only_target.route(&definition(60)).unwrap_err().to_string(),
            "Tap 'payments' is not defined in the project YAML"
        );
        let only_tap = Connections::new(Environment::default()).with_tap("payments", tap());
        assert_eq!(
            only_tap.route(&definition(60)).unwrap_err().to_string(),
            "Target 'postgres' is not defined in the project YAML"
        );
    }

    #[test]
    fn missing_user_and_password_follow_libpq_fallbacks() {
        let bare = DbConn { dbname: Some("payments".into()), ..DbConn::default() };
        let environment = Environment::from_pairs([("PGUSER", "svc"), ("PGPASSWORD", "from-env")]);
        let connections = Connections::new(environment).with_tap("payments", bare).with_target("postgres", warehouse());
        let source = connections.route(&definition(60)).unwrap().source;
        assert_eq!(source.config.get_user(), Some("svc"));
        assert_eq!(source.config.get_password(), Some(&b"from-env"[..]));
        assert!(matches!(source.config.get_hosts(), [postgres::config::Host::Unix(_)]), "no host: the local socket");

        let bare = DbConn { dbname: Some("payments".into()), ..DbConn::default() };
        let nobody =
            Connections::new(Environment::default()).with_tap("payments", bare).with_target("postgres", warehouse());
        assert_eq!(nobody.route(&definition(60)).unwrap_err().to_string(), "Tap 'payments' db_conn has no user");
    }

    #[test]
    fn datadiff_yml_tls_wins_over_ssl_true_and_a_missing_client_certificate_is_the_reason() {
        let tls = SideTls {
            sslmode: Some(SslMode::VerifyFull),
            sslcert: Some("/nonexistent/dd.crt".into()),
            sslkey: Some("/nonexistent/dd.key".into()),
            ..SideTls::default()
        };
        let error = connections().with_target_tls("postgres", tls).route(&definition(60)).unwrap_err().to_string();
        assert!(
            error.starts_with("cannot load the client certificate /nonexistent/dd.crt for the target connection"),
            "{error}"
        );
        let settings = tls_settings(true, None, None).unwrap();
        assert_eq!((settings.mode, settings.verify()), (SslMode::Require, None));
        let extra = SideTls { sslrootcert: Some("system".into()), ..SideTls::default() };
        let settings = tls_settings(true, Some(&extra), None).unwrap();
        assert_eq!(settings.verify(), Some(datadiff_access::Verify::Chain), "require with a root file verifies");
        let route = connections()
            .with_tap_tls("payments", SideTls { sslmode: Some(SslMode::VerifyCa), ..SideTls::default() })
            .route(&definition(60))
            .unwrap();
        assert_eq!(route.source.config.get_ssl_mode(), DriverSslMode::Require);
        assert!(route.source.tls.is_configured() && !route.target.tls.is_configured());
    }

    #[test]
    fn each_side_takes_the_service_its_db_conn_names_and_pgservice_applies_to_neither() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("services.conf");
        std::fs::write(
            &file,
            "[dd]\nhost=svc-host\nport=6000\nuser=svc\npassword=svc-pw\nsslmode=verify-ca\nkeepalives_idle=7\n\
             [dw]\nhost=dw-host\nuser=dw\n",
        )
        .unwrap();
        let environment = Environment::from_pairs([
            ("PGSERVICE", "dd".to_owned()),
            ("PGSERVICEFILE", file.display().to_string()),
            ("PGSYSCONFDIR", dir.path().display().to_string()),
        ]);
        let with_service = |name: &str, conn: DbConn| DbConn {
            libpq: datadiff_config::LibpqKeys { service: Some(name.into()), ..Default::default() },
            ..conn
        };
        let source = DbConn { dbname: Some("payments".into()), user: Some("explicit".into()), ..DbConn::default() };
        let target = DbConn { dbname: Some("dwh".into()), ..DbConn::default() };
        let connections = Connections::new(environment.clone())
            .with_tap("payments", with_service("dd", source.clone()))
            .with_target("postgres", with_service("dw", target.clone()));
        let route = connections.route(&definition(60)).unwrap();
        assert_eq!(route.source.config.get_hosts(), [postgres::config::Host::Tcp("svc-host".into())]);
        assert_eq!(route.source.config.get_ports(), [6000]);
        assert_eq!(route.source.config.get_user(), Some("explicit"), "the db_conn wins");
        assert_eq!(route.source.config.get_password(), Some(&b"svc-pw"[..]));
        assert_eq!(route.source.config.get_keepalives_idle(), Duration::from_secs(7), "a driver key of the service");
        assert!(route.source.tls.is_configured(), "the service's verify-ca");
        assert_eq!(route.target.config.get_hosts(), [postgres::config::Host::Tcp("dw-host".into())], "its own");
        assert_eq!(route.target.config.get_user(), Some("dw"));
        assert!(!route.target.tls.is_configured(), "dw sets no sslmode: prefer");

        // PGSERVICE names dd, but a db_conn without service takes nothing from it.
        let plain = Connections::new(environment.clone())
            .with_tap("payments", DbConn { host: Some("primary".into()), ..source })
            .with_target("postgres", DbConn { host: Some("dwh".into()), user: Some("u".into()), ..target });
        let route = plain.route(&definition(60)).unwrap();
        assert_eq!(route.source.config.get_hosts(), [postgres::config::Host::Tcp("primary".into())]);
        assert_eq!(route.source.config.get_ports(), [5432]);
        assert_eq!(route.source.config.get_password(), None);
        assert!(!route.source.tls.is_configured());

        let missing = Connections::new(environment)
            .with_tap("payments", with_service("gone", tap()))
            .with_target("postgres", warehouse());
        let error = missing.route(&definition(60)).unwrap_err().to_string();
        assert!(
            error.starts_with(
                "Tap 'payments' db_conn.service: the source connection names service \"gone\", which is not defined in"
            ),
            "{error}"
        );
    }

    #[test]
    fn a_db_conns_libpq_keys_reach_the_driver_and_bad_values_name_the_keys() {
        let keys = |driver: &[(&str, &str)]| datadiff_config::LibpqKeys {
            driver: driver.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect(),
            tls: SideTls {
                sslmode: Some(SslMode::VerifyFull),
                sslrootcert: Some("system".into()),
                ..SideTls::default()
            },
            ..Default::default()
        };
        let tap = |driver: &[(&str, &str)]| DbConn { libpq: keys(driver), ..tap() };
        let connections = Connections::new(Environment::default())
            .with_tap(
                "payments",
                tap(&[
                    ("connect_timeout", "4"),
                    ("options", "-c work_mem=8MB"),
                    ("target_session_attrs", "read-write"),
                ]),
            )
            .with_target("postgres", warehouse());
        let route = connections.route(&definition(60)).unwrap();
        assert_eq!(route.source.connect_timeout, Duration::from_secs(4));
        assert_eq!(route.source.config.get_options(), Some("-c work_mem=8MB"));
        assert_eq!(route.source.config.get_target_session_attrs(), postgres::config::TargetSessionAttrs::ReadWrite);
        assert!(route.source.tls.is_configured(), "the db_conn's verify-full");
        assert_eq!(route.source.config.get_application_name(), Some(SOURCE_APPLICATION_NAME));
        let bad = Connections::new(Environment::default())
            .with_tap("payments", tap(&[("keepalives_idle", "soon")]))
            .with_target("postgres", warehouse());
        let error = bad.route(&definition(60)).unwrap_err().to_string();
        assert!(error.starts_with("Tap 'payments' db_conn: ") && error.contains("(in keepalives_idle)"), "{error}");
    }

    #[test]
    fn from_project_takes_datadiff_yml_tls_per_side() {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, text: &str| std::fs::write(dir.path().join(name), text).unwrap();
        write("config.yml", "alert_handlers: {}\n");
        write(
            "target_postgres.yml",
            "id: postgres\ntype: target-postgres\ndb_conn: {host: dwh, user: u, dbname: dwh}\n",
        );
        write(
            "tap_payments.yml",
            "id: payments\ntype: tap-postgres\ntarget: postgres\ndb_conn: {host: primary, user: u, dbname: payments}\n",
        );
        write("datadiff.yml", "tls:\n  targets:\n    postgres: {sslmode: verify-ca, sslrootcert: system}\n");
        let project = datadiff_config::load_with(
            dir.path(),
            &datadiff_config::LoadOptions { secret: None, env: Some(Default::default()) },
        )
        .unwrap();
        let mut definition = definition(60);
        definition.source_database = "payments".into();
        let route = Connections::from_project(&project).route(&definition).unwrap();
        assert!(route.target.tls.is_configured(), "verify-ca from datadiff.yml");
        assert_eq!(route.target.config.get_ssl_mode(), DriverSslMode::Require);
        assert!(!route.source.tls.is_configured(), "the tap has no tls entry");
        assert_eq!(route.source.config.get_ssl_mode(), DriverSslMode::Prefer);
    }
}
