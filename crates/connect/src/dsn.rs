//! libpq-style connection strings: a URI (`postgresql://user@host:5432/db?sslmode=require`)
//! or `key=value` pairs (`host=db port=5432 dbname=app user=audit`), with libpq's fallbacks.
//!
//! Parsing is rust-postgres's ([`postgres::Config`]'s `FromStr`), which reads both forms.
//! On top of it, as libpq does: the password comes from the DSN, else `PGPASSWORD`, else the
//! password file (`PGPASSFILE` or `~/.pgpass`); a missing host, port, user or database falls
//! back to `PGHOST`, `PGPORT`, `PGUSER` (then the login name) and `PGDATABASE`; a missing host
//! means the local Unix socket. The connect timeout defaults to 10 seconds.
//!
//! `service` (or `PGSERVICE`) names a connection service ([`crate::service`]): its values fill
//! what the DSN leaves out, before the environment does, as libpq's. `sslmode` (or
//! `PGSSLMODE`), `sslrootcert` (or `PGSSLROOTCERT`), `sslcert` and `sslkey` (or `PGSSLCERT`,
//! `PGSSLKEY`) and `passfile` are read here, before rust-postgres parses the rest (its parser
//! knows only `disable`, `prefer` and `require`, and none of the others), and keep libpq's
//! meanings: see [`crate::tls`] for the table.
//!
//! The DSN text is never shown, logged or kept: only the parsed [`postgres::Config`], whose
//! `Debug` redacts the password.

use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use postgres::config::Host;

use crate::environment::Environment;
use crate::error::Error;
use crate::passfile::{self, PassfileQuery};
use datadiff_diff_core::definition::SslMode;

use crate::service::{self, Service};
use crate::tls::{ClientCertificate, RootCertificates, TlsSettings};

/// The parameters read here rather than by rust-postgres' parser (which knows only
/// `disable`, `prefer` and `require` and none of the others).
const TAKEN: [&str; 6] = ["sslmode", "sslrootcert", "sslcert", "sslkey", "service", "passfile"];

/// The service's parameters rust-postgres takes as they are; TLS and the password file are
/// read in [`Dsn::parse`], and libpq's other keys are refused ([`apply_service`]).
const SERVICE_DRIVER_KEYS: [&str; 15] = [
    "host",
    "hostaddr",
    "port",
    "dbname",
    "user",
    "password",
    "connect_timeout",
    "options",
    "application_name",
    "keepalives",
    "keepalives_idle",
    "tcp_user_timeout",
    "target_session_attrs",
    "channel_binding",
    "load_balance_hosts",
];

/// The connect timeout when the DSN sets none (the seed's 10 seconds).
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// A parsed connection string with libpq's fallbacks applied and the password resolved.
#[derive(Debug, Clone)]
pub struct Dsn {
    role: String,
    config: postgres::Config,
    tls: TlsSettings,
}

impl Dsn {
    /// Parses `text` for the connection called `role` (`source`, `replica`: used in messages).
    pub fn parse(role: &str, text: &str, environment: &Environment) -> Result<Dsn, Error> {
        let invalid = |source| Error::Dsn { role: role.to_owned(), source };
        let (rest, taken) = match take_params(text.trim(), &TAKEN) {
            Some(split) => split,
            None => (text.trim().to_owned(), Vec::new()),
        };
        let mut config = postgres::Config::from_str(&rest).map_err(invalid)?;
        let taken = |name: &str| taken.iter().rev().find(|(key, _)| key == name).map(|(_, value)| value.clone());
        // libpq: the DSN's `service`, else PGSERVICE; its values fill what the DSN leaves out,
        // before the environment does.
        let service = match taken("service").or_else(|| environment.get("PGSERVICE").map(str::to_owned)) {
            Some(name) => Some(service::lookup(role, &name, environment)?),
            None => None,
        };
        if let Some(service) = &service {
            apply_service(role, &mut config, service)?;
        }
        let setting = |name: &str, variable: &str| -> Option<String> {
            taken(name)
                .or_else(|| service.as_ref().and_then(|service| service.get(name)).map(str::to_owned))
                .or_else(|| environment.get(variable).map(str::to_owned))
        };
        let mode_text = setting("sslmode", "PGSSLMODE").unwrap_or_else(|| "prefer".to_owned());
        // `allow` (plaintext first) is refused: an audit must not silently downgrade.
        let mode = match mode_text.parse::<SslMode>() {
            Ok(SslMode::Allow) | Err(_) => {
                return Err(Error::DsnUnsupported {
                    role: role.to_owned(),
                    problem: format!(
                        "sslmode {mode_text:?} is not supported: use disable, prefer, require, verify-ca or verify-full"
                    ),
                });
            }
            Ok(mode) => mode,
        };
        let home_file =
            |name: &str| environment.get("HOME").map(|home| PathBuf::from(home).join(".postgresql").join(name));
        let roots = match setting("sslrootcert", "PGSSLROOTCERT").as_deref() {
            Some("system") => RootCertificates::System,
            Some(path) => RootCertificates::File(PathBuf::from(path)),
            None => home_file("root.crt")
                .filter(|path| path.is_file())
                .map_or(RootCertificates::Unset, RootCertificates::File),
        };
        // libpq: an explicit certificate is used; the default one only when it exists. The
        // key defaults to ~/.postgresql/postgresql.key either way.
        let certificate = match setting("sslcert", "PGSSLCERT") {
            Some(path) => Some(PathBuf::from(path)),
            None => home_file("postgresql.crt").filter(|path| path.is_file()),
        };
        let client = match certificate {
            None => None,
            Some(certificate) => {
                let key = setting("sslkey", "PGSSLKEY").map(PathBuf::from).or_else(|| home_file("postgresql.key"));
                let Some(key) = key else {
                    return Err(Error::DsnUnsupported {
                        role: role.to_owned(),
                        problem: "sslcert is set without sslkey (and no home for ~/.postgresql/postgresql.key)"
                            .to_owned(),
                    });
                };
                Some(ClientCertificate { certificate, key })
            }
        };
        let tls = TlsSettings { mode, roots, client };
        config.ssl_mode(tls.driver_mode());
        let passfile = setting("passfile", "PGPASSFILE").map(PathBuf::from).or_else(|| environment.passfile());
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
            } else if let Some(path) = passfile {
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
        Ok(Dsn { role: role.to_owned(), config, tls })
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

    /// The TLS settings.
    pub fn tls(&self) -> &TlsSettings {
        &self.tls
    }
}

/// Fills what `config` leaves out from the service's values (libpq: "a parameter set in the
/// connection string wins"). A service key datadiff does not apply is an error naming it.
fn apply_service(role: &str, config: &mut postgres::Config, service: &Service) -> Result<(), Error> {
    let mut text = String::new();
    for param in &service.params {
        if TAKEN.contains(&param.key.as_str()) {
            continue;
        }
        if !SERVICE_DRIVER_KEYS.contains(&param.key.as_str()) {
            return Err(Error::ServiceFile {
                path: service.file.clone(),
                line: param.line,
                problem: format!("datadiff does not support the connection parameter {:?}", param.key),
            });
        }
        text.push_str(&format!("{}='{}' ", param.key, param.value.replace('\\', "\\\\").replace('\'', "\\'")));
    }
    let from_service = postgres::Config::from_str(&text).map_err(|source| Error::ServiceParams {
        role: role.to_owned(),
        service: service.name.clone(),
        path: service.file.clone(),
        source,
    })?;
    let defaults = postgres::Config::new();
    if config.get_hosts().is_empty() && config.get_hostaddrs().is_empty() {
        for host in from_service.get_hosts() {
            match host {
                Host::Tcp(name) => config.host(name),
                Host::Unix(path) => config.host_path(path),
            };
        }
        for address in from_service.get_hostaddrs() {
            config.hostaddr(*address);
        }
    }
    if config.get_ports().is_empty() {
        for port in from_service.get_ports() {
            config.port(*port);
        }
    }
    if config.get_user().is_none()
        && let Some(user) = from_service.get_user()
    {
        config.user(user);
    }
    if config.get_password().is_none()
        && let Some(password) = from_service.get_password()
    {
        config.password(password);
    }
    if config.get_dbname().is_none()
        && let Some(dbname) = from_service.get_dbname()
    {
        config.dbname(dbname);
    }
    if config.get_options().is_none()
        && let Some(options) = from_service.get_options()
    {
        config.options(options);
    }
    if config.get_application_name().is_none()
        && let Some(name) = from_service.get_application_name()
    {
        config.application_name(name);
    }
    if config.get_connect_timeout().is_none()
        && let Some(timeout) = from_service.get_connect_timeout()
    {
        config.connect_timeout(*timeout);
    }
    if config.get_tcp_user_timeout().is_none()
        && let Some(timeout) = from_service.get_tcp_user_timeout()
    {
        config.tcp_user_timeout(*timeout);
    }
    // Settings with a default: the DSN left the default when it equals it.
    if config.get_keepalives() == defaults.get_keepalives() {
        config.keepalives(from_service.get_keepalives());
    }
    if config.get_keepalives_idle() == defaults.get_keepalives_idle() {
        config.keepalives_idle(from_service.get_keepalives_idle());
    }
    if config.get_target_session_attrs() == defaults.get_target_session_attrs() {
        config.target_session_attrs(from_service.get_target_session_attrs());
    }
    if config.get_channel_binding() == defaults.get_channel_binding() {
        config.channel_binding(from_service.get_channel_binding());
    }
    if config.get_load_balance_hosts() == defaults.get_load_balance_hosts() {
        config.load_balance_hosts(from_service.get_load_balance_hosts());
    }
    Ok(())
}

/// Removes the parameters `names` from a DSN (URI query or key=value pairs) and returns the
/// rest of the DSN and the removed `(name, value)` pairs; `None` when the text does not
/// tokenize (rust-postgres then reports the error).
fn take_params(text: &str, names: &[&str]) -> Option<(String, Vec<(String, String)>)> {
    let mut taken = Vec::new();
    if text.starts_with("postgresql://") || text.starts_with("postgres://") {
        let Some((base, query)) = text.split_once('?') else { return Some((text.to_owned(), taken)) };
        let mut kept = Vec::new();
        for pair in query.split('&') {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            let key = percent_decode(key)?;
            if names.contains(&key.as_str()) {
                taken.push((key, percent_decode(value)?));
            } else {
                kept.push(pair);
            }
        }
        let rest = if kept.is_empty() { base.to_owned() } else { format!("{base}?{}", kept.join("&")) };
        return Some((rest, taken));
    }
    let mut kept = Vec::new();
    let mut chars = text.chars().peekable();
    loop {
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        if chars.peek().is_none() {
            break;
        }
        let mut key = String::new();
        while let Some(c) = chars.next_if(|&c| c != '=' && !c.is_whitespace()) {
            key.push(c);
        }
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        if chars.next() != Some('=') {
            return None;
        }
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        let mut value = String::new();
        if chars.next_if_eq(&'\'').is_some() {
            loop {
                match chars.next()? {
                    '\\' => value.push(chars.next()?),
                    '\'' => break,
                    c => value.push(c),
                }
            }
        } else {
            while let Some(c) = chars.next_if(|c| !c.is_whitespace()) {
                value.push(if c == '\\' { chars.next()? } else { c });
            }
        }
        if names.contains(&key.as_str()) {
            taken.push((key, value));
        } else {
            kept.push(format!("{key}='{}'", value.replace('\\', "\\\\").replace('\'', "\\'")));
        }
    }
    Some((kept.join(" "), taken))
}

/// Decodes `%XX` escapes; `None` for a malformed escape or bytes that are not UTF-8.
fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        if bytes[index] == b'%' {
            let hex = std::str::from_utf8(bytes.get(index + 1..index + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            index += 3;
        } else {
            out.push(bytes[index]);
            index += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// libpq's default socket directory: Debian's when it exists, else `/tmp`.
fn default_socket_dir() -> PathBuf {
    let debian = PathBuf::from("/var/run/postgresql");
    if debian.is_dir() { debian } else { PathBuf::from("/tmp") }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::chain;

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
            assert_eq!(dsn.tls().mode, SslMode::Require);
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
    fn tls_parameters_are_read_from_both_forms_and_the_environment() {
        let dsn = Dsn::parse(
            "source",
            "postgresql://u:p@h/db?application_name=x&sslmode=verify-full&sslrootcert=%2Fetc%2Fca.pem",
            &env(),
        )
        .unwrap();
        assert_eq!(
            dsn.tls(),
            &TlsSettings {
                mode: SslMode::VerifyFull,
                roots: RootCertificates::File("/etc/ca.pem".into()),
                client: None
            }
        );
        assert_eq!(dsn.config().get_application_name(), Some("x"));
        assert_eq!(dsn.config().get_password(), Some(&b"p"[..]));
        let dsn = Dsn::parse("source", "host=h user=u sslmode=verify-ca password='abc", &env());
        assert!(dsn.is_err(), "an unterminated quote must not parse");
        let dsn =
            Dsn::parse("source", "host=h user=u sslmode = verify-ca password='a \\'b' sslrootcert=system", &env())
                .unwrap();
        assert_eq!(dsn.tls(), &TlsSettings { mode: SslMode::VerifyCa, roots: RootCertificates::System, client: None });
        assert_eq!(dsn.config().get_password(), Some(&b"a 'b"[..]));
        let dsn = Dsn::parse("source", "host=h user=u", &env().with("PGSSLMODE", "disable")).unwrap();
        assert_eq!(dsn.tls(), &TlsSettings { mode: SslMode::Disable, roots: RootCertificates::Unset, client: None });
        assert!(!dsn.tls().verifies());
    }

    #[test]
    fn unknown_ssl_modes_are_refused_with_a_clear_message() {
        let error = Dsn::parse("source", "host=h user=u sslmode=allow", &env()).unwrap_err();
        assert!(error.to_string().contains("sslmode \"allow\" is not supported"), "{error}");
    }

    /// An environment whose user service file holds `text` (no system file).
    fn with_service_file(text: &str) -> (tempfile::TempDir, Environment) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("services.conf");
        std::fs::write(&path, text).unwrap();
        let environment = env()
            .with("PGSERVICEFILE", path.display().to_string())
            .with("PGSYSCONFDIR", dir.path().join("no-etc").display().to_string());
        (dir, environment)
    }

    const SERVICES: &str = "[sales]\nhost=svc.example\nport=6433\ndbname=sales\nuser=svc_user\npassword=svc-pw\n\
                            sslmode=verify-full\nsslrootcert=/etc/svc-ca.pem\nsslcert=/etc/svc.crt\nsslkey=/etc/svc.key\n\
                            application_name=from-service\n";

    #[test]
    fn a_service_supplies_what_the_dsn_leaves_out_in_both_forms() {
        let (_dir, environment) = with_service_file(SERVICES);
        let kv = Dsn::parse("source", "service=sales user=explicit", &environment).unwrap();
        let uri = Dsn::parse("source", "postgresql://explicit@/?service=sales", &environment).unwrap();
        for dsn in [&kv, &uri] {
            let config = dsn.config();
            assert_eq!(config.get_hosts(), &[Host::Tcp("svc.example".into())]);
            assert_eq!(config.get_ports(), &[6433]);
            assert_eq!(config.get_dbname(), Some("sales"));
            assert_eq!(config.get_user(), Some("explicit"), "the DSN's user wins");
            assert_eq!(config.get_password(), Some(&b"svc-pw"[..]));
            assert_eq!(config.get_application_name(), Some("from-service"));
            assert_eq!(
                dsn.tls(),
                &TlsSettings {
                    mode: SslMode::VerifyFull,
                    roots: RootCertificates::File("/etc/svc-ca.pem".into()),
                    client: Some(ClientCertificate { certificate: "/etc/svc.crt".into(), key: "/etc/svc.key".into() }),
                }
            );
        }
        assert!(!format!("{kv:?}").contains("svc-pw"));
    }

    #[test]
    fn pgservice_applies_when_the_dsn_names_none_and_explicit_tls_wins() {
        let (_dir, environment) = with_service_file(SERVICES);
        let environment =
            environment.with("PGSERVICE", "sales").with("PGHOST", "env-host").with("PGSSLMODE", "disable");
        let dsn = Dsn::parse("source", "sslmode=require sslrootcert=system port=7000", &environment).unwrap();
        assert_eq!(dsn.config().get_hosts(), &[Host::Tcp("svc.example".into())], "the service wins over PGHOST");
        assert_eq!(dsn.config().get_ports(), &[7000]);
        assert_eq!(dsn.tls().mode, SslMode::Require);
        assert_eq!(dsn.tls().roots, RootCertificates::System);
        let (_dir, environment) = with_service_file("[bare]\ndbname=bare\n");
        let environment = environment.with("PGSERVICE", "bare").with("PGHOST", "env-host").with("PGSSLMODE", "require");
        let dsn = Dsn::parse("source", "user=u", &environment).unwrap();
        assert_eq!(dsn.config().get_hosts(), &[Host::Tcp("env-host".into())], "the environment fills the rest");
        assert_eq!(dsn.config().get_dbname(), Some("bare"));
        assert_eq!(dsn.tls().mode, SslMode::Require);
    }

    #[test]
    fn an_unknown_service_names_the_service_and_the_files() {
        let (dir, environment) = with_service_file(SERVICES);
        let error = Dsn::parse("replica", "service=nope user=u", &environment).unwrap_err();
        let text = error.to_string();
        assert!(text.contains("replica") && text.contains("\"nope\""), "{text}");
        assert!(text.contains(&dir.path().join("services.conf").display().to_string()), "{text}");
        assert!(text.contains(&dir.path().join("no-etc/pg_service.conf").display().to_string()), "{text}");
        let error = Dsn::parse("source", "user=u", &environment.with("PGSERVICE", "missing")).unwrap_err();
        assert!(error.to_string().contains("\"missing\""), "{error}");
    }

    #[test]
    fn service_values_datadiff_cannot_apply_are_errors_naming_the_line() {
        let (_dir, environment) = with_service_file("[s]\nhost=h\nsslcrl=/etc/crl.pem\n");
        let error = Dsn::parse("source", "service=s user=u", &environment).unwrap_err();
        assert!(
            error
                .to_string()
                .ends_with("services.conf:3: datadiff does not support the connection parameter \"sslcrl\""),
            "{error}"
        );
        let (_dir, environment) = with_service_file("[s]\nport=notaport\npassword=marker-pw-77\n");
        let error = Dsn::parse("source", "service=s user=u", &environment).unwrap_err();
        let text = chain(&error);
        assert!(text.contains("service \"s\"") && !text.contains("marker-pw-77"), "{text}");
    }

    #[test]
    fn a_client_certificate_comes_from_the_dsn_or_the_environment() {
        let dsn = Dsn::parse("source", "host=h user=u sslcert=/c/cert.pem sslkey=/c/key.pem", &env()).unwrap();
        assert_eq!(
            dsn.tls().client,
            Some(ClientCertificate { certificate: "/c/cert.pem".into(), key: "/c/key.pem".into() })
        );
        let environment = env().with("PGSSLCERT", "/e/cert.pem").with("HOME", "/home/op");
        let dsn = Dsn::parse("source", "host=h user=u", &environment).unwrap();
        assert_eq!(
            dsn.tls().client,
            Some(ClientCertificate {
                certificate: "/e/cert.pem".into(),
                key: "/home/op/.postgresql/postgresql.key".into()
            })
        );
        let dsn = Dsn::parse("source", "host=h user=u", &env().with("HOME", "/nonexistent-home")).unwrap();
        assert_eq!(dsn.tls().client, None, "the default certificate only when it exists");
    }
}
