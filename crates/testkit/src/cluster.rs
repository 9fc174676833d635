//! A throwaway PostgreSQL cluster: `initdb` into a temporary directory, a server on
//! 127.0.0.1 on a free port, removed when dropped — or, if the process dies first, by a
//! watchdog that notices.

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::binaries::find_bindir;
use crate::error::Error;
use crate::tls::{Authority, ClientCertificateFiles};
use crate::user::{RunAs, run_as};
use crate::watchdog::{Watchdog, free_port, random_hex, remove_dir_with_retries, tail};

/// The superuser every cluster is created with.
pub const SUPERUSER: &str = "postgres";

/// The prefix of every cluster's temporary directory (CI looks for leftovers by it).
pub const DIR_PREFIX: &str = "datadiff-testkit-";

/// Options for [`Cluster::start_with`].
#[derive(Debug, Clone, Default)]
pub struct ClusterOptions {
    tls: Option<TlsOptions>,
    /// The IPv4 address the server listens on instead of 127.0.0.1.
    address: Option<std::net::Ipv4Addr>,
    /// `wal_level = logical`, for publications.
    logical: bool,
}

#[derive(Debug, Clone)]
struct TlsOptions {
    dns_names: Vec<String>,
    ip_addresses: Vec<String>,
    client_certificates: bool,
}

impl ClusterOptions {
    /// Plain TCP (no TLS) with password authentication.
    pub fn new() -> Self {
        ClusterOptions::default()
    }

    /// Listen on `address` (an address of this machine) instead of 127.0.0.1, and connect
    /// there: for a benchmark whose clients must not see a loopback address.
    pub fn listen_on(mut self, address: std::net::Ipv4Addr) -> Self {
        self.address = Some(address);
        self
    }

    /// Serve TLS with a server certificate, made at start by a fresh CA, that is valid for
    /// `dns_names` and `ip_addresses` only (so host-name checks can be tested by connecting
    /// to a name the certificate does not carry). Clients may still connect without TLS.
    pub fn tls(mut self, dns_names: &[&str], ip_addresses: &[&str]) -> Self {
        self.tls = Some(TlsOptions {
            dns_names: dns_names.iter().map(|name| (*name).to_owned()).collect(),
            ip_addresses: ip_addresses.iter().map(|ip| (*ip).to_owned()).collect(),
            client_certificates: false,
        });
        self
    }

    /// `wal_level = logical` (with replication slots and WAL senders), so that the cluster's
    /// databases can publish tables to a subscriber (native logical replication).
    pub fn logical_replication(mut self) -> Self {
        self.logical = true;
        self
    }

    /// With [`ClusterOptions::tls`]: every role but the superuser must connect over TLS with
    /// a client certificate signed by the cluster's CA whose common name is the role's name
    /// (`hostssl … scram-sha-256 clientcert=verify-full`), and its password;
    /// [`Cluster::issue_client_certificate`] makes one. The superuser keeps plain TCP, so the
    /// testkit's own sessions ([`Cluster::connect`]) still work. Without `tls` it does nothing.
    pub fn require_client_certificates(mut self) -> Self {
        if let Some(tls) = self.tls.as_mut() {
            tls.client_certificates = true;
        }
        self
    }
}

/// A running throwaway cluster.
///
/// Everything lives in one temporary directory (`datadiff-testkit-*` under the system
/// temporary directory): the data directory, the Unix socket, the server log and the TLS
/// files. Dropping the cluster stops the server and removes the directory. Should the process
/// die without dropping it (a panic that aborts, `SIGKILL`, or a `static` that is never
/// dropped), a watchdog process started with the cluster sees its pipe from this process
/// close, stops the server immediately and removes the directory.
pub struct Cluster {
    bindir: PathBuf,
    dir: PathBuf,
    host: String,
    port: u16,
    password: String,
    run_as: Option<RunAs>,
    ca_certificate: Option<PathBuf>,
    /// The CA of a TLS cluster, which signs client certificates.
    authority: Option<Authority>,
    next_database: AtomicU64,
    /// The watchdog; releasing it closes its pipe.
    watchdog: Mutex<Option<Watchdog>>,
}

impl std::fmt::Debug for Cluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cluster")
            .field("dir", &self.dir)
            .field("port", &self.port)
            .field("password", &"<redacted>")
            .finish_non_exhaustive()
    }
}

impl Cluster {
    /// Starts a cluster without TLS.
    pub fn start() -> Result<Cluster, Error> {
        Cluster::start_with(ClusterOptions::new())
    }

    /// Starts a cluster with `options`.
    pub fn start_with(options: ClusterOptions) -> Result<Cluster, Error> {
        let bindir = find_bindir()?;
        let dir = tempfile::Builder::new()
            .prefix(DIR_PREFIX)
            .tempdir()
            .map_err(Error::io("creating the cluster's temporary directory"))?
            .keep();
        let mut cluster = Cluster {
            bindir,
            dir,
            host: options.address.map_or_else(|| "127.0.0.1".to_owned(), |address| address.to_string()),
            port: 0,
            password: random_hex(16)?,
            run_as: None,
            ca_certificate: None,
            authority: None,
            next_database: AtomicU64::new(1),
            watchdog: Mutex::new(None),
        };
        // From here on, dropping `cluster` cleans up whatever was created.
        cluster.run_as = run_as(&cluster.dir, &["postgres", "nobody"])?;
        cluster.spawn_watchdog()?;
        cluster.init(&options)?;
        cluster.start_server()?;
        Ok(cluster)
    }

    /// The host to connect to over TCP: `127.0.0.1` (or [`ClusterOptions::listen_on`]'s).
    pub fn host(&self) -> &str {
        &self.host
    }

    /// The TCP port the server listens on (never 5432).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The directory holding the server's Unix socket.
    pub fn socket_dir(&self) -> &Path {
        &self.dir
    }

    /// The cluster's temporary directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The superuser's password (authentication over TCP uses SCRAM).
    pub fn superuser_password(&self) -> &str {
        &self.password
    }

    /// The PEM file of the CA that signed the server certificate, for a TLS cluster.
    pub fn ca_certificate(&self) -> Option<&Path> {
        self.ca_certificate.as_deref()
    }

    /// Writes into `dir` a client certificate for `user` (its common name) and its key,
    /// signed by the cluster's CA: `<user>.crt` and `<user>.key` (0600). Only a TLS cluster
    /// has a CA ([`Error::NotTls`] otherwise).
    pub fn issue_client_certificate(&self, user: &str, dir: &Path) -> Result<ClientCertificateFiles, Error> {
        self.authority.as_ref().ok_or(Error::NotTls)?.write_client(user, dir)
    }

    /// Connection settings for the superuser over TCP to `dbname`, without TLS.
    pub fn config(&self, dbname: &str) -> postgres::Config {
        self.config_for(SUPERUSER, &self.password, dbname)
    }

    /// Connection settings for `user` over TCP to `dbname`, without TLS.
    pub fn config_for(&self, user: &str, password: &str, dbname: &str) -> postgres::Config {
        let mut config = postgres::Config::new();
        config
            .host(self.host())
            .port(self.port)
            .user(user)
            .password(password)
            .dbname(dbname)
            .connect_timeout(std::time::Duration::from_secs(30));
        config
    }

    /// A libpq URL for `user` over TCP to `dbname` (user and password percent-encoded).
    pub fn url(&self, user: &str, password: &str, dbname: &str) -> String {
        format!(
            "postgresql://{}:{}@{}:{}/{}",
            percent_encode(user),
            percent_encode(password),
            self.host(),
            self.port,
            percent_encode(dbname)
        )
    }

    /// A superuser connection to `dbname`.
    pub fn connect(&self, dbname: &str) -> Result<postgres::Client, Error> {
        self.config(dbname)
            .connect(postgres::NoTls)
            .map_err(Error::pg(format!("connecting to the throwaway cluster's database {dbname}")))
    }

    /// Creates a new, empty database with a unique name.
    pub fn fresh_database(&self) -> Result<Database<'_>, Error> {
        let name = format!("t{}", self.next_database.fetch_add(1, Ordering::Relaxed));
        let mut client = self.connect("postgres")?;
        client
            .batch_execute(&format!("CREATE DATABASE {}", quote_ident(&name)))
            .map_err(Error::pg(format!("creating database {name}")))?;
        Ok(Database { cluster: self, name })
    }

    /// Creates a login role with a password (no other privileges).
    pub fn create_role(&self, name: &str, password: &str) -> Result<(), Error> {
        let mut client = self.connect("postgres")?;
        client
            .batch_execute(&format!("CREATE ROLE {} LOGIN PASSWORD {}", quote_ident(name), quote_literal(password)))
            .map_err(Error::pg(format!("creating role {name}")))
    }

    /// Stops the server (fast shutdown); [`Cluster::restart`] starts it again on the same port.
    pub fn stop(&self) -> Result<(), Error> {
        self.pg_ctl(&["stop", "-m", "fast", "-w", "-t", "60"])
    }

    /// Starts a stopped server again, on the same port.
    pub fn restart(&self) -> Result<(), Error> {
        self.launch(self.port)
    }

    /// The postmaster's process id while the server runs.
    pub fn postmaster_pid(&self) -> Option<u32> {
        let text = std::fs::read_to_string(self.data_dir().join("postmaster.pid")).ok()?;
        text.lines().next()?.trim().parse().ok()
    }

    fn data_dir(&self) -> PathBuf {
        self.dir.join("data")
    }

    fn log_file(&self) -> PathBuf {
        self.dir.join("server.log")
    }

    /// A command for a server program, run as the unprivileged user when we are root, from
    /// the cluster directory (the user may not be allowed into our working directory).
    fn server_command(&self, program: &str) -> Command {
        let mut command = Command::new(self.bindir.join(program));
        command.current_dir(&self.dir).stdin(Stdio::null());
        for variable in ["PGDATA", "PGPORT", "PGHOST", "PGUSER", "PGPASSWORD", "PGDATABASE", "PGOPTIONS"] {
            command.env_remove(variable);
        }
        if let Some(RunAs { uid, gid }) = self.run_as {
            command.uid(uid).gid(gid);
        }
        command
    }

    fn run(&self, mut command: Command, program: &str) -> Result<(), Error> {
        let output = command.output().map_err(Error::io(format!("running {program}")))?;
        if output.status.success() {
            return Ok(());
        }
        let mut text = String::from_utf8_lossy(&output.stderr).into_owned();
        text.push_str(&String::from_utf8_lossy(&output.stdout));
        Err(Error::Command { program: program.to_owned(), status: output.status.to_string(), output: tail(&text, 20) })
    }

    fn pg_ctl(&self, args: &[&str]) -> Result<(), Error> {
        let mut command = self.server_command("pg_ctl");
        command.arg("-D").arg(self.data_dir()).args(args);
        self.run(command, "pg_ctl")
    }

    fn chown(&self, path: &Path) -> Result<(), Error> {
        if let Some(RunAs { uid, gid }) = self.run_as {
            std::os::unix::fs::chown(path, Some(uid), Some(gid))
                .map_err(Error::io(format!("chown {}", path.display())))?;
        }
        Ok(())
    }

    fn write_private(&self, path: &Path, contents: &[u8]) -> Result<(), Error> {
        std::fs::write(path, contents).map_err(Error::io(format!("writing {}", path.display())))?;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
            .map_err(Error::io(format!("chmod {}", path.display())))?;
        self.chown(path)
    }

    /// The watchdog: when this process drops the cluster or dies, it stops any server still
    /// running in the directory (immediate shutdown, else `SIGKILL`) and removes the directory.
    fn spawn_watchdog(&self) -> Result<(), Error> {
        self.chown(&self.dir)?;
        const STOP: &str = r#"
pg_ctl=$2
if [ -f "$dir/data/postmaster.pid" ]; then
  "$pg_ctl" stop -D "$dir/data" -m immediate -w -t 60 >/dev/null 2>&1 || {
    pid=$(head -n 1 "$dir/data/postmaster.pid" 2>/dev/null)
    [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null
  }
fi
# Backends outlive a killed postmaster for a moment and may still write: the removal retries.
"#;
        let pg_ctl = self.bindir.join("pg_ctl");
        let watchdog = Watchdog::spawn(&self.dir, self.run_as, STOP, &[pg_ctl.as_os_str()])?;
        *self.lock_watchdog() = Some(watchdog);
        Ok(())
    }

    fn lock_watchdog(&self) -> std::sync::MutexGuard<'_, Option<Watchdog>> {
        self.watchdog.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn init(&mut self, options: &ClusterOptions) -> Result<(), Error> {
        let password_file = self.dir.join("superuser.pw");
        self.write_private(&password_file, self.password.as_bytes())?;
        let mut initdb = self.server_command("initdb");
        initdb
            .arg("-D")
            .arg(self.data_dir())
            .arg(format!("--username={SUPERUSER}"))
            .arg(format!("--pwfile={}", password_file.display()))
            .args(["--auth-local=trust", "--auth-host=scram-sha-256", "--encoding=UTF8", "--no-locale", "--no-sync"]);
        self.run(initdb, "initdb")?;
        std::fs::remove_file(&password_file).map_err(Error::io("removing the initdb password file"))?;

        let mut settings = format!(
            "\n# datadiff testkit\nlisten_addresses = '{}'\nunix_socket_directories = '{}'\n\
             fsync = off\nsynchronous_commit = off\nfull_page_writes = off\nmax_connections = 200\n\
             password_encryption = 'scram-sha-256'\n",
            self.host,
            self.dir.display()
        );
        if options.logical {
            settings.push_str("wal_level = logical\nmax_replication_slots = 10\nmax_wal_senders = 10\n");
        }
        if let Some(tls) = &options.tls {
            let authority = Authority::generate("datadiff-testkit CA")?;
            let (certificate, key) = authority.issue_server(&tls.dns_names, &tls.ip_addresses)?;
            let ca_path = self.dir.join("ca.crt");
            std::fs::write(&ca_path, authority.certificate.to_pem()?).map_err(Error::io("writing ca.crt"))?;
            self.chown(&ca_path)?;
            self.write_private(&self.dir.join("server.crt"), &certificate.to_pem()?)?;
            self.write_private(&self.dir.join("server.key"), &key.private_key_to_pem_pkcs8()?)?;
            settings.push_str(&format!(
                "ssl = on\nssl_cert_file = '{0}/server.crt'\nssl_key_file = '{0}/server.key'\n",
                self.dir.display()
            ));
            self.ca_certificate = Some(ca_path);
            if tls.client_certificates {
                // The server trusts its own CA for client certificates.
                settings.push_str(&format!("ssl_ca_file = '{}/ca.crt'\n", self.dir.display()));
            }
            self.authority = Some(authority);
        }
        let conf = self.data_dir().join("postgresql.conf");
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(&conf)
            .map_err(Error::io(format!("opening {}", conf.display())))?;
        file.write_all(settings.as_bytes()).map_err(Error::io(format!("writing {}", conf.display())))?;
        let client_certificates = options.tls.as_ref().is_some_and(|tls| tls.client_certificates);
        let hba = if client_certificates {
            format!(
                "local all all trust\nhost all {SUPERUSER} 127.0.0.1/32 scram-sha-256\n\
                 hostssl all all 127.0.0.1/32 scram-sha-256 clientcert=verify-full\n"
            )
        } else {
            format!(
                "local all all trust\nhost all all 127.0.0.1/32 scram-sha-256\nhost all all ::1/128 scram-sha-256\n\
                 host all all {}/32 scram-sha-256\n",
                self.host
            )
        };
        let hba_path = self.data_dir().join("pg_hba.conf");
        std::fs::write(&hba_path, hba).map_err(Error::io("writing pg_hba.conf"))?;
        Ok(())
    }

    /// Starts the server on a free port, retrying when another process takes the port first.
    fn start_server(&mut self) -> Result<(), Error> {
        let mut last_error = None;
        for _ in 0..5 {
            let port = free_port(&[5432])?;
            match self.launch(port) {
                Ok(()) => {
                    self.port = port;
                    return Ok(());
                }
                Err(error) => last_error = Some(error),
            }
        }
        Err(last_error.unwrap_or_else(|| Error::Start { log: self.log_file(), tail: String::new() }))
    }

    fn launch(&self, port: u16) -> Result<(), Error> {
        let log = self.log_file();
        let started =
            self.pg_ctl(&["start", "-w", "-t", "60", "-l", &log.display().to_string(), "-o", &format!("-p {port}")]);
        started.map_err(|_| Error::Start {
            log: log.clone(),
            tail: std::fs::read_to_string(&log).map(|text| tail(&text, 10)).unwrap_or_default(),
        })
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        if self.postmaster_pid().is_some() && self.pg_ctl(&["stop", "-m", "fast", "-w", "-t", "60"]).is_err() {
            // A fast shutdown that did not finish (a backend stuck in a long statement):
            // the immediate one ends every backend before pg_ctl returns.
            let _ = self.pg_ctl(&["stop", "-m", "immediate", "-w", "-t", "60"]);
        }
        // Never remove the directory under a live server: it would keep writing into it.
        // Files may still appear for a moment after a stop that failed; retry.
        remove_dir_with_retries(&self.dir);
        if let Some(watchdog) = self.lock_watchdog().take() {
            watchdog.release();
        }
    }
}

/// A database of a [`Cluster`], made by [`Cluster::fresh_database`].
#[derive(Debug)]
pub struct Database<'c> {
    cluster: &'c Cluster,
    name: String,
}

impl<'c> Database<'c> {
    /// The database's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The cluster it lives in.
    pub fn cluster(&self) -> &'c Cluster {
        self.cluster
    }

    /// Superuser connection settings for this database (TCP, no TLS).
    pub fn config(&self) -> postgres::Config {
        self.cluster.config(&self.name)
    }

    /// Connection settings for `user` to this database (TCP, no TLS).
    pub fn config_for(&self, user: &str, password: &str) -> postgres::Config {
        self.cluster.config_for(user, password, &self.name)
    }

    /// A libpq URL for `user` to this database.
    pub fn url(&self, user: &str, password: &str) -> String {
        self.cluster.url(user, password, &self.name)
    }

    /// A superuser connection to this database.
    pub fn client(&self) -> Result<postgres::Client, Error> {
        self.cluster.connect(&self.name)
    }

    /// Lays the database out as a datadiff backend (SPEC §3): `owner` (the DDL role) owns
    /// it, and only `owner` and `app` (the application role) may connect.
    pub fn make_backend(&self, owner: &str, app: &str) -> Result<(), Error> {
        self.client()?
            .batch_execute(&format!(
                "ALTER DATABASE {db} OWNER TO {owner}; REVOKE CONNECT ON DATABASE {db} FROM PUBLIC; \
                 GRANT CONNECT ON DATABASE {db} TO {app}",
                db = quote_ident(&self.name),
                owner = quote_ident(owner),
                app = quote_ident(app),
            ))
            .map_err(Error::pg(format!("making {} a backend database", self.name)))
    }
}

/// Quotes an SQL identifier.
pub fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// Quotes an SQL string literal (standard-conforming strings).
pub fn quote_literal(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

fn percent_encode(text: &str) -> String {
    text.bytes()
        .map(|byte| match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (byte as char).to_string(),
            _ => format!("%{byte:02X}"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_and_literals_are_quoted() {
        assert_eq!(quote_ident(r#"we"ird"#), r#""we""ird""#);
        assert_eq!(quote_literal("it's"), "'it''s'");
    }

    #[test]
    fn urls_percent_encode_credentials() {
        assert_eq!(percent_encode("p@ss:w/rd%"), "p%40ss%3Aw%2Frd%25");
    }
}
