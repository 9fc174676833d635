//! A throwaway MariaDB server: `mariadb-install-db` into a temporary directory, `mariadbd` on
//! 127.0.0.1 on a free port (never 3306) with its Unix socket in the same directory, removed
//! when dropped — or, if the process dies first, by the same watchdog the PostgreSQL clusters
//! have.

use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use mysql::prelude::Queryable;
use mysql::{Conn, Opts, OptsBuilder};

use crate::binaries::{MariaDbBinaries, find_mariadb_binaries};
use crate::cluster::DIR_PREFIX;
use crate::error::Error;
use crate::tls::{Authority, ClientCertificateFiles};
use crate::user::{RunAs, run_as};
use crate::watchdog::{Watchdog, free_port, random_hex, remove_dir_with_retries, tail};

/// The superuser every MariaDB server is created with (its password is
/// [`MariaDb::superuser_password`]).
pub const MARIADB_SUPERUSER: &str = "root";

/// How long the server may take to accept connections, and to stop.
const PATIENCE: Duration = Duration::from_secs(60);

/// The watchdog's stop snippet: `SIGKILL` the server named by its pid file (the data is thrown
/// away, so there is nothing to shut down cleanly). The removal then retries while it exits.
const STOP: &str = r#"
if [ -f "$dir/mariadbd.pid" ]; then
  pid=$(head -n 1 "$dir/mariadbd.pid" 2>/dev/null)
  [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null
fi
"#;

/// Options for [`MariaDb::start_with`].
#[derive(Debug, Clone, Default)]
pub struct MariaDbOptions {
    tls: Option<(Vec<String>, Vec<String>)>,
    require_tls: bool,
}

impl MariaDbOptions {
    /// Plain TCP (no TLS) with password authentication.
    pub fn new() -> Self {
        MariaDbOptions::default()
    }

    /// Serve TLS with a server certificate, made at start by a fresh CA
    /// ([`MariaDb::ca_certificate`]), valid for `dns_names` and `ip_addresses` only. Clients
    /// may still connect without TLS unless [`require_tls`](MariaDbOptions::require_tls).
    pub fn tls(mut self, dns_names: &[&str], ip_addresses: &[&str]) -> Self {
        let owned = |items: &[&str]| items.iter().map(|item| (*item).to_owned()).collect();
        self.tls = Some((owned(dns_names), owned(ip_addresses)));
        self
    }

    /// Refuse TCP connections without TLS (`require_secure_transport`); implies TLS, valid for
    /// `localhost` and 127.0.0.1 unless [`tls`](MariaDbOptions::tls) names others. The Unix
    /// socket counts as secure.
    pub fn require_tls(mut self) -> Self {
        self.require_tls = true;
        self
    }
}

/// A running throwaway MariaDB server.
///
/// Everything lives in one temporary directory (`datadiff-testkit-*`, like the PostgreSQL
/// clusters, so CI finds leftovers of both the same way): the data directory, the Unix
/// socket, the pid file, the server's error log and its temporary files. The server runs
/// with `--no-defaults` (no `/etc/mysql` file applies), `utf8mb4` with
/// `utf8mb4_general_ci` (MariaDB's usual default, a case-insensitive collation) as the
/// server's character set, `--skip-name-resolve` and durability switched off. When this
/// process runs as root, the server runs as the `mysql` account (else `nobody`).
///
/// Users authenticate with passwords (`mysql_native_password`) over TCP: [`MARIADB_SUPERUSER`]
/// from 127.0.0.1 with a random password, and users made by [`MariaDb::create_user`] from any
/// host. Dropping the server shuts it down and removes the directory; should the process die
/// without dropping it, the watchdog kills the server and removes the directory.
pub struct MariaDb {
    binaries: MariaDbBinaries,
    dir: PathBuf,
    port: u16,
    password: String,
    version: String,
    run_as: Option<RunAs>,
    tls_arguments: Vec<String>,
    ca_certificate: Option<PathBuf>,
    authority: Option<Authority>,
    next_database: AtomicU64,
    server: Mutex<Option<Child>>,
    watchdog: Mutex<Option<Watchdog>>,
}

impl std::fmt::Debug for MariaDb {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MariaDb")
            .field("dir", &self.dir)
            .field("port", &self.port)
            .field("version", &self.version)
            .field("password", &"<redacted>")
            .finish_non_exhaustive()
    }
}

impl MariaDb {
    /// Creates a data directory and starts a server without TLS. Fails with
    /// [`Error::MariaDbBinariesNotFound`] (saying what to install) when the MariaDB server
    /// programs are not installed.
    pub fn start() -> Result<MariaDb, Error> {
        MariaDb::start_with(MariaDbOptions::new())
    }

    /// Creates a data directory and starts a server with `options`.
    pub fn start_with(options: MariaDbOptions) -> Result<MariaDb, Error> {
        let binaries = find_mariadb_binaries()?;
        let password = random_hex(16)?;
        let dir = tempfile::Builder::new()
            .prefix(DIR_PREFIX)
            .tempdir()
            .map_err(Error::io("creating the MariaDB server's temporary directory"))?
            .keep();
        let mut server = MariaDb {
            binaries,
            dir,
            port: 0,
            password,
            version: String::new(),
            run_as: None,
            tls_arguments: Vec::new(),
            ca_certificate: None,
            authority: None,
            next_database: AtomicU64::new(1),
            server: Mutex::new(None),
            watchdog: Mutex::new(None),
        };
        // From here on, dropping `server` cleans up whatever was created.
        server.run_as = run_as(&server.dir, &["mysql", "nobody"])?;
        server.chown(&server.dir)?;
        let watchdog = Watchdog::spawn(&server.dir, server.run_as, STOP, &[])?;
        *lock(&server.watchdog) = Some(watchdog);
        server.install()?;
        server.configure_tls(&options)?;
        server.start_server()?;
        server.secure()?;
        Ok(server)
    }

    /// Stops the server (a clean `SHUTDOWN`); [`MariaDb::restart`] starts it again on the same
    /// port with its data.
    pub fn stop(&self) -> Result<(), Error> {
        self.stop_server();
        Ok(())
    }

    /// Starts a stopped server again, on the same port.
    pub fn restart(&self) -> Result<(), Error> {
        if lock(&self.server).is_some() {
            return Ok(());
        }
        self.launch(self.port, &self.password).map(|_version| ())
    }

    /// The PEM file of the CA that signed the server certificate, for a TLS server.
    pub fn ca_certificate(&self) -> Option<&Path> {
        self.ca_certificate.as_deref()
    }

    /// Writes into `dir` a client certificate for `user` (its common name) and its key,
    /// signed by the server's CA: `<user>.crt` and `<user>.key` (0600), for accounts created
    /// `REQUIRE X509`. Only a TLS server has a CA ([`Error::NotTls`] otherwise).
    pub fn issue_client_certificate(&self, user: &str, dir: &Path) -> Result<ClientCertificateFiles, Error> {
        self.authority.as_ref().ok_or(Error::NotTls)?.write_client(user, dir)
    }

    /// The host to connect to over TCP: `127.0.0.1`.
    pub fn host(&self) -> &str {
        "127.0.0.1"
    }

    /// The TCP port the server listens on (never 3306).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The server's temporary directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The server's Unix socket.
    pub fn socket(&self) -> PathBuf {
        self.dir.join("mariadbd.sock")
    }

    /// The password of [`MARIADB_SUPERUSER`].
    pub fn superuser_password(&self) -> &str {
        &self.password
    }

    /// The server's version string (`SELECT VERSION()`), e.g. `10.11.6-MariaDB-0+deb12u1`.
    pub fn version(&self) -> &str {
        &self.version
    }

    /// The server process's id while it runs.
    pub fn server_pid(&self) -> Option<u32> {
        let text = std::fs::read_to_string(self.pid_file()).ok()?;
        text.lines().next()?.trim().parse().ok()
    }

    /// Connection settings for `user` over TCP (never through the socket), with `database`
    /// selected when given, without TLS.
    pub fn opts_for(&self, user: &str, password: &str, database: Option<&str>) -> Opts {
        OptsBuilder::new()
            .ip_or_hostname(Some(self.host()))
            .tcp_port(self.port)
            .prefer_socket(false)
            .user(Some(user))
            .pass(Some(password))
            .db_name(database)
            .tcp_connect_timeout(Some(Duration::from_secs(30)))
            .into()
    }

    /// Superuser connection settings over TCP, with `database` selected when given.
    pub fn opts(&self, database: Option<&str>) -> Opts {
        self.opts_for(MARIADB_SUPERUSER, &self.password, database)
    }

    /// A superuser connection over TCP, with `database` selected when given.
    pub fn connect(&self, database: Option<&str>) -> Result<Conn, Error> {
        Conn::new(self.opts(database)).map_err(Error::my("connecting to the throwaway MariaDB server"))
    }

    /// The superuser over the Unix socket, for setting things up (a server that requires TLS
    /// refuses plain TCP).
    fn admin(&self) -> Result<Conn, Error> {
        Conn::new(self.socket_opts(&self.password))
            .map_err(Error::my("connecting to the throwaway MariaDB server over its socket"))
    }

    /// Creates a new, empty database (`utf8mb4`) with a unique name.
    pub fn fresh_database(&self) -> Result<MariaDbDatabase<'_>, Error> {
        let name = format!("t{}", self.next_database.fetch_add(1, Ordering::Relaxed));
        self.admin()?
            .query_drop(format!("CREATE DATABASE {} CHARACTER SET utf8mb4", quote_mysql_ident(&name)))
            .map_err(Error::my(format!("creating MariaDB database {name}")))?;
        Ok(MariaDbDatabase { server: self, name })
    }

    /// Creates `name`@`%` with a password and no privileges (see [`MariaDb::grant`] and
    /// [`MariaDbDatabase::create_user`]).
    pub fn create_user(&self, name: &str, password: &str) -> Result<(), Error> {
        self.admin()?
            .query_drop(format!("CREATE USER {} IDENTIFIED BY {}", account(name), quote_mysql_literal(password)))
            .map_err(Error::my(format!("creating MariaDB user {name}")))
    }

    /// Grants `privileges` (keywords such as `SELECT` or `SHOW VIEW`; anything else is
    /// [`Error::Privilege`]) on every table of `database`, or globally (`*.*`) when `None`.
    pub fn grant(&self, user: &str, privileges: &[&str], database: Option<&str>) -> Result<(), Error> {
        if privileges.is_empty() {
            return Ok(());
        }
        for privilege in privileges {
            let plain = !privilege.is_empty()
                && privilege.split(' ').all(|word| !word.is_empty() && word.bytes().all(|b| b.is_ascii_uppercase()));
            if !plain {
                return Err(Error::Privilege((*privilege).to_owned()));
            }
        }
        let on = database.map_or_else(|| "*.*".to_owned(), |database| format!("{}.*", quote_mysql_ident(database)));
        self.admin()?
            .query_drop(format!("GRANT {} ON {on} TO {}", privileges.join(", "), account(user)))
            .map_err(Error::my(format!("granting {} to MariaDB user {user}", privileges.join(", "))))
    }

    fn data_dir(&self) -> PathBuf {
        self.dir.join("data")
    }

    fn log_file(&self) -> PathBuf {
        self.dir.join("server.log")
    }

    fn pid_file(&self) -> PathBuf {
        self.dir.join("mariadbd.pid")
    }

    fn chown(&self, path: &Path) -> Result<(), Error> {
        if let Some(RunAs { uid, gid }) = self.run_as {
            std::os::unix::fs::chown(path, Some(uid), Some(gid))
                .map_err(Error::io(format!("chown {}", path.display())))?;
        }
        Ok(())
    }

    /// A command for a server program, run as the unprivileged user when we are root, from the
    /// server directory, with `--no-defaults` first (it must be) and without the client
    /// variables that would otherwise redirect it.
    fn server_command(&self, program: &Path) -> Command {
        let mut command = Command::new(program);
        command.current_dir(&self.dir).stdin(Stdio::null()).arg("--no-defaults");
        for variable in ["MYSQL_HOST", "MYSQL_TCP_PORT", "MYSQL_UNIX_PORT", "MYSQL_PWD", "MYSQL_HOME", "MARIADB_HOME"] {
            command.env_remove(variable);
        }
        if let Some(RunAs { uid, gid }) = self.run_as {
            command.uid(uid).gid(gid);
        }
        command
    }

    /// Settings shared by `mariadb-install-db` (which passes them to its bootstrap server) and
    /// the server: no durability, a small buffer pool, no native AIO (some sandboxes refuse
    /// io_uring and libaio).
    fn engine_settings() -> [&'static str; 6] {
        [
            "--innodb-flush-log-at-trx-commit=0",
            "--innodb-doublewrite=0",
            "--innodb-flush-method=nosync",
            "--innodb-buffer-pool-size=32M",
            "--innodb-use-native-aio=0",
            "--skip-name-resolve",
        ]
    }

    /// `mariadb-install-db` with the server's own tmpdir: bootstraps running at once in a
    /// shared temporary directory trip over each other's temporary tables.
    fn install(&self) -> Result<(), Error> {
        let tmp = self.dir.join("tmp");
        std::fs::create_dir(&tmp).map_err(Error::io("creating the MariaDB server's tmpdir"))?;
        self.chown(&tmp)?;
        let mut command = self.server_command(&self.binaries.install_db);
        command
            .arg(format!("--datadir={}", self.data_dir().display()))
            .arg(format!("--tmpdir={}", tmp.display()))
            .args(["--auth-root-authentication-method=normal", "--skip-test-db"])
            .args(Self::engine_settings());
        let output = command.output().map_err(Error::io("running mariadb-install-db"))?;
        if output.status.success() {
            return Ok(());
        }
        let mut text = String::from_utf8_lossy(&output.stderr).into_owned();
        text.push_str(&String::from_utf8_lossy(&output.stdout));
        // Its closing advice buries the cause: lead with the error lines.
        let errors: Vec<&str> = text.lines().filter(|line| line.contains("ERROR")).take(5).collect();
        Err(Error::Command {
            program: "mariadb-install-db".to_owned(),
            status: output.status.to_string(),
            output: format!("{}\n{}", errors.join("\n"), tail(&text, 10)),
        })
    }

    /// Starts the server on a free port, retrying when another process takes the port first.
    fn start_server(&mut self) -> Result<(), Error> {
        let mut last_error = None;
        for _ in 0..5 {
            let port = free_port(&[3306, 5432])?;
            match self.launch(port, "") {
                Ok(version) => {
                    self.port = port;
                    self.version = version;
                    return Ok(());
                }
                Err(error) => last_error = Some(error),
            }
        }
        Err(last_error.unwrap_or_else(|| self.start_error()))
    }

    /// The superuser over the Unix socket (which `require_secure_transport` counts as secure).
    fn socket_opts(&self, password: &str) -> Opts {
        OptsBuilder::new()
            .socket(Some(self.socket().display().to_string()))
            .user(Some(MARIADB_SUPERUSER))
            .pass(Some(password))
            .into()
    }

    fn write_private(&self, path: &Path, contents: &[u8]) -> Result<(), Error> {
        std::fs::write(path, contents).map_err(Error::io(format!("writing {}", path.display())))?;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
            .map_err(Error::io(format!("chmod {}", path.display())))?;
        self.chown(path)
    }

    /// Makes the CA and server certificate of a TLS server and the arguments that serve them.
    fn configure_tls(&mut self, options: &MariaDbOptions) -> Result<(), Error> {
        let names = match (&options.tls, options.require_tls) {
            (Some(names), _) => names.clone(),
            (None, true) => (vec!["localhost".to_owned()], vec!["127.0.0.1".to_owned()]),
            (None, false) => return Ok(()),
        };
        let authority = Authority::generate("datadiff-testkit MariaDB CA")?;
        let (certificate, key) = authority.issue_server(&names.0, &names.1)?;
        let ca_path = self.dir.join("ca.crt");
        std::fs::write(&ca_path, authority.certificate.to_pem()?).map_err(Error::io("writing ca.crt"))?;
        self.chown(&ca_path)?;
        self.write_private(&self.dir.join("server.crt"), &certificate.to_pem()?)?;
        self.write_private(&self.dir.join("server.key"), &key.private_key_to_pem_pkcs8()?)?;
        self.tls_arguments = vec![
            format!("--ssl-ca={}", ca_path.display()),
            format!("--ssl-cert={}", self.dir.join("server.crt").display()),
            format!("--ssl-key={}", self.dir.join("server.key").display()),
        ];
        if options.require_tls {
            self.tls_arguments.push("--require-secure-transport=ON".to_owned());
        }
        self.ca_certificate = Some(ca_path);
        self.authority = Some(authority);
        Ok(())
    }

    /// Spawns `mariadbd` on `port` and waits until the superuser can log in over the socket
    /// with `password` (empty before [`MariaDb::secure`]); returns the server version. A server
    /// that exits first (the port was taken) is an error.
    fn launch(&self, port: u16, password: &str) -> Result<String, Error> {
        let mut command = self.server_command(&self.binaries.server);
        command
            .arg(format!("--datadir={}", self.data_dir().display()))
            .arg(format!("--socket={}", self.socket().display()))
            .arg(format!("--pid-file={}", self.pid_file().display()))
            .arg(format!("--log-error={}", self.log_file().display()))
            .arg(format!("--tmpdir={}", self.dir.join("tmp").display()))
            .arg(format!("--port={port}"))
            .args(["--bind-address=127.0.0.1", "--max-connections=200"])
            .args(["--character-set-server=utf8mb4", "--collation-server=utf8mb4_general_ci"])
            .args(Self::engine_settings())
            .args(&self.tls_arguments)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            // Its own process group, as pg_ctl gives the postmaster: a Ctrl-C for the tests
            // reaches the watchdog's owner, and the watchdog does the cleaning up.
            .process_group(0);
        let child = command.spawn().map_err(Error::io("starting mariadbd"))?;
        *lock(&self.server) = Some(child);

        let socket_opts = self.socket_opts(password);
        let deadline = Instant::now() + PATIENCE;
        loop {
            let exited = lock(&self.server).as_mut().is_some_and(|child| !matches!(child.try_wait(), Ok(None)));
            if exited {
                *lock(&self.server) = None;
                return Err(self.start_error());
            }
            if let Ok(mut conn) = Conn::new(socket_opts.clone()) {
                return conn
                    .query_first::<String, _>("SELECT VERSION()")
                    .map_err(Error::my("reading the MariaDB server version"))
                    .map(Option::unwrap_or_default);
            }
            if Instant::now() > deadline {
                self.kill_server();
                return Err(self.start_error());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Gives every superuser account the random password and removes the one for this
    /// machine's host name (unreachable under `--skip-name-resolve`).
    fn secure(&self) -> Result<(), Error> {
        let mut conn = Conn::new(self.socket_opts("")).map_err(Error::my("connecting to MariaDB over its socket"))?;
        let hosts: Vec<String> = conn
            .query("SELECT Host FROM mysql.user WHERE User = 'root'")
            .map_err(Error::my("listing MariaDB's root accounts"))?;
        let password = quote_mysql_literal(&self.password);
        for host in hosts {
            let account = format!("'root'@{}", quote_mysql_literal(&host));
            let statement = if ["localhost", "127.0.0.1", "::1"].contains(&host.as_str()) {
                format!("ALTER USER {account} IDENTIFIED BY {password}")
            } else {
                format!("DROP USER {account}")
            };
            conn.query_drop(statement).map_err(Error::my(format!("securing MariaDB's root account at {host}")))?;
        }
        Ok(())
    }

    fn start_error(&self) -> Error {
        let log = self.log_file();
        let tail = std::fs::read_to_string(&log).map(|text| tail(&text, 10)).unwrap_or_default();
        Error::MariaDbStart { log, tail }
    }

    fn kill_server(&self) {
        if let Some(mut child) = lock(&self.server).take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Asks the server to shut down (`SHUTDOWN` over the socket), waits for it to exit, and
    /// kills it when it does not.
    fn stop_server(&self) {
        let Some(mut child) = lock(&self.server).take() else { return };
        if matches!(child.try_wait(), Ok(None)) {
            // A refused login or statement means no shutdown is coming; a connection the server
            // drops while answering still is one.
            let refused =
                match Conn::new(self.socket_opts(&self.password)).and_then(|mut conn| conn.query_drop("SHUTDOWN")) {
                    Ok(()) => false,
                    Err(error) => matches!(error, mysql::Error::MySqlError(_)),
                };
            let deadline = Instant::now() + PATIENCE;
            while !refused && matches!(child.try_wait(), Ok(None)) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
            if matches!(child.try_wait(), Ok(None)) {
                let _ = child.kill();
            }
        }
        let _ = child.wait();
    }
}

impl Drop for MariaDb {
    fn drop(&mut self) {
        self.stop_server();
        remove_dir_with_retries(&self.dir);
        if let Some(watchdog) = lock(&self.watchdog).take() {
            watchdog.release();
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A database of a [`MariaDb`] server, made by [`MariaDb::fresh_database`].
#[derive(Debug)]
pub struct MariaDbDatabase<'m> {
    server: &'m MariaDb,
    name: String,
}

impl<'m> MariaDbDatabase<'m> {
    /// The database's name (MySQL's "schema").
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The server it lives on.
    pub fn server(&self) -> &'m MariaDb {
        self.server
    }

    /// Superuser connection settings with this database selected (TCP, no TLS).
    pub fn opts(&self) -> Opts {
        self.server.opts(Some(&self.name))
    }

    /// Connection settings for `user` with this database selected (TCP, no TLS).
    pub fn opts_for(&self, user: &str, password: &str) -> Opts {
        self.server.opts_for(user, password, Some(&self.name))
    }

    /// A superuser connection with this database selected.
    pub fn client(&self) -> Result<Conn, Error> {
        self.server.connect(Some(&self.name))
    }

    /// Creates `name`@`%` with a password, granted `privileges` (e.g. `["SELECT"]`) on this
    /// database only.
    pub fn create_user(&self, name: &str, password: &str, privileges: &[&str]) -> Result<(), Error> {
        self.server.create_user(name, password)?;
        self.server.grant(name, privileges, Some(&self.name))
    }
}

/// `'name'@'%'`.
fn account(name: &str) -> String {
    format!("{}@'%'", quote_mysql_literal(name))
}

/// Quotes a MySQL identifier: wrapped in backticks, every backtick inside doubled.
pub fn quote_mysql_ident(name: &str) -> String {
    format!("`{}`", name.replace('`', "``"))
}

/// Quotes a MySQL string literal under the default SQL mode (backslash escapes active).
pub fn quote_mysql_literal(text: &str) -> String {
    format!("'{}'", text.replace('\\', "\\\\").replace('\'', "''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_and_literals_are_quoted_for_mysql() {
        assert_eq!(quote_mysql_ident("we`ird"), "`we``ird`");
        assert_eq!(quote_mysql_literal(r"it's a \ path"), r"'it''s a \\ path'");
        assert_eq!(account("app"), "'app'@'%'");
    }
}
