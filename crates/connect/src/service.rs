//! The libpq connection service file (`pg_service.conf`): named groups of connection
//! parameters, chosen with `service=NAME` in a DSN or the `PGSERVICE` variable.
//!
//! Files and lookup, as libpq:
//!
//! 1. the user's file: `PGSERVICEFILE`, else `~/.pg_service.conf`;
//! 2. the system's file: `PGSYSCONFDIR/pg_service.conf`, `PGSYSCONFDIR` defaulting to
//!    Debian's libpq sysconfdir, `/etc/postgresql-common`.
//!
//! The first file that has a `[NAME]` section supplies the whole service; a missing file is
//! skipped. A file is ini-like: `[name]` starts a section, `key=value` lines set a parameter
//! (whitespace around the key and the value is ignored; libpq tolerates none, so every file
//! libpq reads is read alike), blank lines and lines starting with `#` are skipped. A `service`
//! key inside a section (libpq does not nest services), a line without `=` in the section
//! read, or a key libpq does not know is an error naming the file and line; so is a line
//! before any section, which libpq silently never applies.
//!
//! Precedence is libpq's: a parameter written in the DSN wins over the service's value, which
//! wins over the `PG*` environment variables.

use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use crate::environment::Environment;
use crate::error::Error;

/// The system configuration directory of Debian's libpq (`pg_config --sysconfdir`).
pub const DEFAULT_SYSCONFDIR: &str = "/etc/postgresql-common";

/// The connection parameters libpq accepts in a service file (libpq 17's keywords).
const KNOWN_KEYS: [&str; 46] = [
    "host",
    "hostaddr",
    "port",
    "dbname",
    "user",
    "password",
    "passfile",
    "connect_timeout",
    "client_encoding",
    "options",
    "application_name",
    "fallback_application_name",
    "keepalives",
    "keepalives_idle",
    "keepalives_interval",
    "keepalives_count",
    "tcp_user_timeout",
    "replication",
    "gssencmode",
    "sslmode",
    "sslnegotiation",
    "sslcompression",
    "sslcert",
    "sslkey",
    "sslpassword",
    "sslcertmode",
    "sslrootcert",
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
    "target_session_attrs",
    "load_balance_hosts",
    "channel_binding",
    "authtype",
    "tty",
    "scram_client_key",
    "scram_server_key",
    "min_protocol_version",
    "max_protocol_version",
];

/// One parameter of a service.
#[derive(Clone, PartialEq, Eq)]
pub struct ServiceParam {
    /// The key (`host`, `sslmode`, ...).
    pub key: String,
    /// The value (may be a password: never shown by `Debug`).
    pub value: String,
    /// The line of the file it is on.
    pub line: usize,
}

impl std::fmt::Debug for ServiceParam {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServiceParam").field("key", &self.key).field("line", &self.line).finish_non_exhaustive()
    }
}

/// A service found in a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Service {
    /// The service's name.
    pub name: String,
    /// The file it was read from.
    pub file: PathBuf,
    /// Its parameters, in file order (a repeated key: the first wins, as in libpq).
    pub params: Vec<ServiceParam>,
}

impl Service {
    /// The value of `key`, the first one when the section repeats it.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.params.iter().find(|param| param.key == key).map(|param| param.value.as_str())
    }
}

/// The files libpq looks in for a service, in order: the user's (`PGSERVICEFILE`, else
/// `~/.pg_service.conf`, when a home is known), then the system's.
pub fn service_files(environment: &Environment) -> Vec<PathBuf> {
    let mut files = Vec::with_capacity(2);
    if let Some(path) = environment.get("PGSERVICEFILE") {
        files.push(PathBuf::from(path));
    } else if let Some(home) = environment.get("HOME") {
        files.push(PathBuf::from(home).join(".pg_service.conf"));
    }
    let sysconfdir = environment.get("PGSYSCONFDIR").unwrap_or(DEFAULT_SYSCONFDIR);
    files.push(PathBuf::from(sysconfdir).join("pg_service.conf"));
    files
}

/// Finds the service `name` for the connection called `role` (used in messages): the first of
/// [`service_files`] that has its section supplies it; none is [`Error::ServiceNotFound`],
/// naming the files looked in.
pub fn lookup(role: &str, name: &str, environment: &Environment) -> Result<Service, Error> {
    let files = service_files(environment);
    for file in &files {
        let text = match std::fs::read_to_string(file) {
            Ok(text) => text,
            Err(error) if error.kind() == ErrorKind::NotFound => continue,
            Err(source) => return Err(Error::ServiceFileRead { path: file.clone(), source }),
        };
        if let Some(params) = parse_section(&text, name, file)? {
            return Ok(Service { name: name.to_owned(), file: file.clone(), params });
        }
    }
    Err(Error::ServiceNotFound { role: role.to_owned(), service: name.to_owned(), files })
}

/// The parameters of section `name` in a service file's text; `None` when the file has no
/// such section. Only the section read is checked, as libpq checks it.
pub(crate) fn parse_section(text: &str, name: &str, file: &Path) -> Result<Option<Vec<ServiceParam>>, Error> {
    let problem = |line: usize, problem: String| Error::ServiceFile { path: file.to_owned(), line, problem };
    let mut found = false;
    let mut inside = false;
    let mut seen_section = false;
    let mut params: Vec<ServiceParam> = Vec::new();
    for (index, raw) in text.lines().enumerate() {
        let line_number = index + 1;
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(header) = line.strip_prefix('[') {
            seen_section = true;
            if found {
                // The service's section is over: libpq stops reading there.
                break;
            }
            inside = header.strip_suffix(']').is_some_and(|section| section.trim() == name);
            found = inside;
            continue;
        }
        if !inside {
            // A parameter before any section belongs to no service: libpq never applies it, so
            // a file written that way would silently leave the connection to libpq's defaults.
            if !seen_section {
                return Err(problem(
                    line_number,
                    "a parameter before any [service] section belongs to no service: put it under one".to_owned(),
                ));
            }
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            return Err(problem(line_number, "a line must be [service] or key=value".to_owned()));
        };
        let (key, value) = (key.trim(), value.trim());
        if key == "service" {
            return Err(problem(line_number, "nested service specifications are not supported".to_owned()));
        }
        if !KNOWN_KEYS.contains(&key) {
            return Err(problem(line_number, format!("unknown connection parameter {key:?}")));
        }
        if params.iter().all(|param| param.key != key) {
            params.push(ServiceParam { key: key.to_owned(), value: value.to_owned(), line: line_number });
        }
    }
    Ok(found.then_some(params))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn section(text: &str, name: &str) -> Result<Option<Vec<(String, String)>>, Error> {
        parse_section(text, name, Path::new("/x/pg_service.conf"))
            .map(|found| found.map(|params| params.into_iter().map(|p| (p.key, p.value)).collect()))
    }

    fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
        items.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
    }

    #[test]
    fn sections_comments_and_blank_lines() {
        let text = "# top comment\n[other]\nhost=elsewhere\n\n[sales]\n  # indented comment\nhost=db.example\n\
                    port = 6432\ndbname=sales\n\nuser=app\n[later]\nhost=nope\n";
        assert_eq!(
            section(text, "sales").unwrap(),
            Some(pairs(&[("host", "db.example"), ("port", "6432"), ("dbname", "sales"), ("user", "app")]))
        );
        assert_eq!(section(text, "other").unwrap(), Some(pairs(&[("host", "elsewhere")])));
        assert_eq!(section(text, "missing").unwrap(), None);
        assert_eq!(section("[empty]\n", "empty").unwrap(), Some(vec![]), "an empty section is a service");
    }

    #[test]
    fn values_keep_equals_signs_and_the_first_repeat_wins() {
        let text = "[s]\noptions=-c search_path=app\nhost=first\nhost=second\n";
        assert_eq!(section(text, "s").unwrap(), Some(pairs(&[("options", "-c search_path=app"), ("host", "first")])));
    }

    #[test]
    fn errors_name_the_file_and_line() {
        let error = section("[s]\nhost=h\njust words\n", "s").unwrap_err();
        assert_eq!(error.to_string(), "/x/pg_service.conf:3: a line must be [service] or key=value");
        let error = section("[s]\nservice=t\n", "s").unwrap_err();
        assert!(error.to_string().contains(":2: nested service"), "{error}");
        let error = section("[s]\nhots=h\n", "s").unwrap_err();
        assert_eq!(error.to_string(), "/x/pg_service.conf:2: unknown connection parameter \"hots\"");
        // Other sections are not checked, as libpq does not read them.
        assert!(section("[bad]\nnonsense\n[s]\nhost=h\n", "s").is_ok());
        // A parameter before any section belongs to none: an error, never silently unused.
        let error = section("host=h\n[s]\nport=1\n", "s").unwrap_err();
        assert_eq!(
            error.to_string(),
            "/x/pg_service.conf:1: a parameter before any [service] section belongs to no service: put it under one"
        );
    }

    #[test]
    fn the_user_file_then_the_system_file() {
        let dir = tempfile::tempdir().unwrap();
        let user = dir.path().join("user.conf");
        let sysconf = dir.path().join("etc");
        std::fs::create_dir(&sysconf).unwrap();
        std::fs::write(&user, "[both]\nhost=from-user\n").unwrap();
        std::fs::write(sysconf.join("pg_service.conf"), "[both]\nhost=from-system\n[system]\nport=7000\n").unwrap();
        let environment = Environment::from_pairs([
            ("PGSERVICEFILE", user.display().to_string()),
            ("PGSYSCONFDIR", sysconf.display().to_string()),
        ]);
        let both = lookup("source", "both", &environment).unwrap();
        assert_eq!((both.get("host"), both.file.as_path()), (Some("from-user"), user.as_path()));
        let system = lookup("source", "system", &environment).unwrap();
        assert_eq!(system.get("port"), Some("7000"));
        assert_eq!(system.file, sysconf.join("pg_service.conf"));
        let error = lookup("replica", "nowhere", &environment).unwrap_err();
        assert_eq!(
            error.to_string(),
            format!(
                "the replica connection names service \"nowhere\", which is not defined in {} or {}",
                user.display(),
                sysconf.join("pg_service.conf").display()
            )
        );
    }

    #[test]
    fn default_files_are_home_and_debians_sysconfdir() {
        let environment = Environment::from_pairs([("HOME", "/home/op")]);
        assert_eq!(
            service_files(&environment),
            [PathBuf::from("/home/op/.pg_service.conf"), PathBuf::from("/etc/postgresql-common/pg_service.conf")]
        );
        let environment = environment.with("PGSERVICEFILE", "/srv/services.conf");
        assert_eq!(service_files(&environment)[0], PathBuf::from("/srv/services.conf"));
    }

    #[test]
    fn debug_never_shows_values() {
        let param = ServiceParam { key: "password".into(), value: "marker-pw-9".into(), line: 2 };
        assert!(!format!("{param:?}").contains("marker-pw-9"));
    }
}
