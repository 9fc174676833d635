//! The source side of an attempt when the source is MySQL or MariaDB (`tap-mysql`): a
//! read-only session set up as PipelineWise sets it up (config note §5.3), and the statements
//! an attempt runs there — the counterpart of [`SideSession`](crate::SideSession), with the
//! same interface (catalog facts, `MIN`, one aggregate row of canonical values) and the same
//! deadlines.
//!
//! * **Connecting** (from the tap's `db_conn`, see [`MySqlSideConfig`]): TCP only (never a
//!   local socket), the whole connection — TCP, TLS, authentication — within the connect
//!   timeout on a helper thread, as for PostgreSQL. TLS follows [`MySqlTls`]: opportunistic
//!   (offered without verification; a server without TLS gets a plain connection, as PyMySQL
//!   does with `ssl={"": True}`) unless the tap asks for it, then verified against the
//!   system's roots or the `ssl_ca` (a file, or PEM text written to a private temporary
//!   file), presenting the `ssl_cert`/`ssl_key` client certificate when given (handed to the
//!   driver as a PKCS#12 archive in that temporary directory, removed with the session). The character set is `utf8mb4` (the driver's; a
//!   superset of upstream's `utf8` default, so four-byte characters read intact). Read and
//!   write timeouts are the statement timeout plus [`ANSWER_GRACE`] plus one second
//!   (upstream's `timeout + 5`, one second later so the client deadline below comes first).
//! * **The session** ([`session_statements`]): `SET SESSION time_zone = '+00:00'`, the
//!   statement timeout of the server's engine — `max_statement_time` (seconds) on MariaDB,
//!   `max_execution_time` (milliseconds) on MySQL, the engine taken from the tap's `engine`
//!   when given, else from `SELECT VERSION()` ([`MySqlEngine::detect`]) — then `START
//!   TRANSACTION READ ONLY`. Everything runs inside that transaction; it is rolled back at
//!   the end.
//! * **Deadlines**: every statement runs on a helper thread that owns the connection while it
//!   works, and is abandoned past the statement timeout plus [`ANSWER_GRACE`]: a `KILL QUERY`
//!   for the session's connection id is sent from a connection of its own (best effort) and
//!   the session refuses further statements. Same design and texts as the PostgreSQL side.
//! * **Values** come from the binary protocol by result column type: integers as integers,
//!   `DECIMAL` (the `row_checksum` sum) as exact numerics, `DATETIME`/`TIMESTAMP` as instants
//!   (UTC: the session's zone), `DATE`, `TIME`, text, and bytes for binary character sets, so
//!   each canonical value equals what the PostgreSQL side decodes for the replicated data.
//!
//! Failure texts are one line: a server error contributes its message only.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::{DateTime, NaiveDate, NaiveDateTime, Utc};
use datadiff_diff_core::mysql::{
    COLUMNS_QUERY, MySqlEngine, MySqlIndex, MySqlPlaceholders, MySqlTls, StatisticsRow, VISIBILITY_PROBE_QUERY,
    VisibilityProbe, bounded_count_sql, index_query, indexes_from_statistics, session_statements,
};
use datadiff_diff_core::{
    Side,
    attempt::Bounds,
    definition::CheckType,
    merge::{Numeric, Value},
    plan::{CatalogColumn, TableColumns},
};
use mysql::consts::ColumnType;
use mysql::prelude::Queryable;
use mysql::{ClientIdentity, Conn, Opts, OptsBuilder, SslOpts};

use crate::lend::{LentError, on_helper_thread};
use crate::side_error::{SideError, SideErrorKind};
use crate::stream::DecodeError;
use datadiff_connect::{
    ANSWER_GRACE, KEEPALIVES_COUNT, KEEPALIVES_IDLE, KEEPALIVES_INTERVAL, TCP_USER_TIMEOUT, within_deadline,
};

/// The character set number MySQL gives binary strings (`BINARY`, `VARBINARY`, `BLOB`).
const BINARY_CHARSET: u16 = 63;

/// A MySQL or MariaDB side's connection settings, as PipelineWise reads them from the tap's
/// `db_conn` (the `replica_*` fallback already applied). `Debug` redacts the password.
#[derive(Clone)]
pub struct MySqlSideConfig {
    /// Which side (a MySQL database is only ever a source).
    pub side: Side,
    /// Host name or address (TCP).
    pub host: String,
    /// Port (3306 when the tap gives none).
    pub port: u16,
    /// User name.
    pub user: String,
    /// Password, if any.
    pub password: Option<String>,
    /// The database (MySQL's schema) the connection selects.
    pub dbname: String,
    /// How TLS is used.
    pub tls: MySqlTls,
    /// The tap's `engine` setting, when it has one; `None`: detected from the server's
    /// version string ([`MySqlEngine::detect`]).
    pub engine: Option<MySqlEngine>,
    /// The whole connection's deadline (TCP, TLS and authentication).
    pub connect_timeout: Duration,
}

impl std::fmt::Debug for MySqlSideConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MySqlSideConfig")
            .field("side", &self.side)
            .field("address", &self.address())
            .field("user", &self.user)
            .field("password", &self.password.as_ref().map(|_| "<redacted>"))
            .field("tls", &tls_summary(&self.tls))
            .field("engine", &self.engine)
            .field("connect_timeout", &self.connect_timeout)
            .finish()
    }
}

impl MySqlSideConfig {
    /// `host:port/dbname`, for messages.
    pub fn address(&self) -> String {
        format!("{}:{}/{}", self.host, self.port, self.dbname)
    }

    /// The driver's settings, with `tls` applied (`None`: no TLS) and read/write timeouts of
    /// `io_timeout`.
    fn opts(&self, tls: Option<SslOpts>, io_timeout: Duration) -> Opts {
        let millis = |duration: Duration| u32::try_from(duration.as_millis()).unwrap_or(u32::MAX);
        OptsBuilder::new()
            .ip_or_hostname(Some(self.host.clone()))
            .tcp_port(self.port)
            .prefer_socket(false)
            .user(Some(self.user.clone()))
            .pass(self.password.clone())
            .db_name(Some(self.dbname.clone()))
            .tcp_connect_timeout(Some(self.connect_timeout))
            .read_timeout(Some(io_timeout))
            .write_timeout(Some(io_timeout))
            .tcp_keepalive_time_ms(Some(millis(KEEPALIVES_IDLE)))
            .tcp_keepalive_probe_interval_secs(Some(u32::try_from(KEEPALIVES_INTERVAL.as_secs()).unwrap_or(10)))
            .tcp_keepalive_probe_count(Some(KEEPALIVES_COUNT))
            .tcp_user_timeout_ms(Some(millis(TCP_USER_TIMEOUT)))
            .stmt_cache_size(Some(0))
            .ssl_opts(tls)
            .into()
    }
}

/// How `tls` reads in messages and `Debug`: never a PEM text (an `ssl_key` may be one).
fn tls_summary(tls: &MySqlTls) -> String {
    match tls {
        MySqlTls::Opportunistic => "opportunistic".to_owned(),
        MySqlTls::Verified { ca, client_certificate } => {
            let ca = match ca {
                None => "system roots".to_owned(),
                Some(ca) if Path::new(ca).is_file() => format!("ca {ca}"),
                Some(_) => "ca from PEM text".to_owned(),
            };
            let client = if client_certificate.is_some() { ", client certificate" } else { "" };
            format!("verified ({ca}{client})")
        }
    }
}

/// The password of the PKCS#12 archive a client certificate is handed to the driver in (it
/// reads only that form); the archive lives in a private temporary directory.
const ARCHIVE_PASSWORD: &str = "datadiff";

/// The driver's TLS settings for `tls`, and the temporary files they name: an `ssl_ca` given as
/// PEM text is written out (the driver reads a file), and a client certificate (`ssl_cert`
/// and `ssl_key`, each a file or PEM text) becomes a PKCS#12 archive. The files live as long
/// as the returned handle, so that the canceller's connections find them too.
#[derive(Clone)]
struct TlsMaterial {
    opts: SslOpts,
    _files: Option<Arc<tempfile::TempDir>>,
}

/// Why the MySQL side's TLS settings could not be turned into the driver's: the messages name
/// the setting (and a file path), never PEM contents.
#[derive(Debug, thiserror::Error)]
enum TlsMaterialError {
    #[error("cannot create a temporary directory for TLS files: {0}")]
    TempDir(#[source] std::io::Error),
    #[error("cannot write {path}: {source}")]
    Write { path: String, source: std::io::Error },
    #[error("cannot read {setting} {path}: {source}")]
    Read { setting: &'static str, path: String, source: std::io::Error },
    #[error("{setting} {value} is neither a file nor PEM text")]
    NeitherFileNorPem { setting: &'static str, value: String },
    #[error("ssl_cert is not a PEM certificate: {0}")]
    NotACertificate(#[source] openssl::error::ErrorStack),
    #[error("ssl_cert holds no certificate")]
    NoCertificate,
    #[error("ssl_key is not an unencrypted PEM private key")]
    NotAPrivateKey,
    #[error("ssl_cert and ssl_key do not match: {0}")]
    Mismatch(#[source] openssl::error::ErrorStack),
    #[error("cannot build the client certificate archive: {0}")]
    Archive(#[source] openssl::error::ErrorStack),
}

impl TlsMaterial {
    fn new(tls: &MySqlTls) -> Result<TlsMaterial, TlsMaterialError> {
        let (ca, client_certificate) = match tls {
            MySqlTls::Opportunistic => {
                let opts =
                    SslOpts::default().with_danger_accept_invalid_certs(true).with_danger_skip_domain_validation(true);
                return Ok(TlsMaterial { opts, _files: None });
            }
            MySqlTls::Verified { ca, client_certificate } => (ca, client_certificate),
        };
        let mut files: Option<tempfile::TempDir> = None;
        let mut write = |name: &str, bytes: &[u8]| -> Result<PathBuf, TlsMaterialError> {
            let dir = match &mut files {
                Some(dir) => dir,
                none => none.insert(
                    tempfile::Builder::new()
                        .prefix("datadiff-mysql-tls-")
                        .tempdir()
                        .map_err(TlsMaterialError::TempDir)?,
                ),
            };
            let path = dir.path().join(name);
            std::fs::write(&path, bytes)
                .map_err(|source| TlsMaterialError::Write { path: path.display().to_string(), source })?;
            Ok(path)
        };
        let mut opts = SslOpts::default();
        if let Some(ca) = ca {
            let path = if Path::new(ca).is_file() {
                PathBuf::from(ca)
            } else if ca.contains("-----BEGIN") {
                write("ca.pem", ca.as_bytes())?
            } else {
                return Err(TlsMaterialError::NeitherFileNorPem { setting: "ssl_ca", value: ca.clone() });
            };
            opts = opts.with_root_cert_path(Some(path));
        }
        if let Some((certificate, key)) = client_certificate {
            let archive = client_archive(certificate, key)?;
            let path = write("client.p12", &archive)?;
            opts = opts.with_client_identity(Some(ClientIdentity::new(path).with_password(ARCHIVE_PASSWORD)));
        }
        Ok(TlsMaterial { opts, _files: files.map(Arc::new) })
    }
}

/// The PEM bytes of an `ssl_cert` or `ssl_key` value: the file's contents when it names a
/// file, else the text itself.
fn pem_bytes(value: &str, setting: &'static str) -> Result<Vec<u8>, TlsMaterialError> {
    if Path::new(value).is_file() {
        return std::fs::read(value).map_err(|source| TlsMaterialError::Read {
            setting,
            path: value.to_owned(),
            source,
        });
    }
    if value.contains("-----BEGIN") {
        return Ok(value.as_bytes().to_vec());
    }
    Err(TlsMaterialError::NeitherFileNorPem { setting, value: value.to_owned() })
}

/// A PKCS#12 archive of the client certificate (its first PEM block; later blocks are its
/// chain) and its unencrypted private key. Messages name the key, never its contents.
fn client_archive(certificate: &str, key: &str) -> Result<Vec<u8>, TlsMaterialError> {
    let certificates = openssl::x509::X509::stack_from_pem(&pem_bytes(certificate, "ssl_cert")?)
        .map_err(TlsMaterialError::NotACertificate)?;
    let mut certificates = certificates.into_iter();
    let leaf = certificates.next().ok_or(TlsMaterialError::NoCertificate)?;
    let private_key = openssl::pkey::PKey::private_key_from_pem(&pem_bytes(key, "ssl_key")?)
        .map_err(|_| TlsMaterialError::NotAPrivateKey)?;
    let mut builder = openssl::pkcs12::Pkcs12::builder();
    builder.name("datadiff").pkey(&private_key).cert(&leaf);
    let mut chain = openssl::stack::Stack::new().map_err(TlsMaterialError::Archive)?;
    for certificate in certificates {
        chain.push(certificate).map_err(TlsMaterialError::Archive)?;
    }
    if !chain.is_empty() {
        builder.ca(chain);
    }
    let archive = builder.build2(ARCHIVE_PASSWORD).map_err(TlsMaterialError::Mismatch)?;
    archive.to_der().map_err(TlsMaterialError::Archive)
}

/// Cancels a MySQL session's running statement from another connection (`KILL QUERY`).
#[derive(Clone)]
pub struct MySqlCanceller {
    opts: Opts,
    connection_id: u32,
    deadline: Duration,
    /// Keeps the TLS files the options name.
    _tls: Option<TlsMaterial>,
}

impl std::fmt::Debug for MySqlCanceller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MySqlCanceller").field("connection_id", &self.connection_id).finish_non_exhaustive()
    }
}

impl MySqlCanceller {
    /// Asks the server to stop whatever the session runs; best effort, waiting at most the
    /// connect timeout.
    pub fn cancel(&self) {
        let (opts, id) = (self.opts.clone(), self.connection_id);
        let killed = within_deadline("datadiff-mysql-cancel", self.deadline, move || -> Result<(), mysql::Error> {
            let mut conn = Conn::new(opts)?;
            conn.query_drop(format!("KILL QUERY {id}"))
        });
        match killed {
            Ok(Ok(())) => {}
            Ok(Err(error)) => tracing::debug!(error = %mysql_one_line(&error), "cancelling a MySQL query failed"),
            Err(error) => tracing::debug!(error = %error, "cancelling a MySQL query failed"),
        }
    }
}

/// A connected MySQL or MariaDB side inside its read-only transaction (see the module docs).
pub struct MySqlSideSession {
    side: Side,
    /// `None` once abandoned to a helper that got no answer.
    conn: Option<Conn>,
    canceller: MySqlCanceller,
    statement_timeout: Duration,
    engine: MySqlEngine,
    server_version: String,
    visibility: VisibilityProbe,
}

impl std::fmt::Debug for MySqlSideSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MySqlSideSession")
            .field("side", &self.side)
            .field("engine", &self.engine)
            .field("abandoned", &self.conn.is_none())
            .finish_non_exhaustive()
    }
}

impl MySqlSideSession {
    /// Connects within the side's deadline, detects the engine and opens the read-only
    /// transaction with UTC and the statement timeout (whole seconds, at least one).
    pub fn open(config: &MySqlSideConfig, statement_timeout: Duration) -> Result<MySqlSideSession, SideError> {
        let side = config.side;
        let address = config.address();
        let cannot_connect = |reason: String| SideError::cannot_connect(side, &address, reason);
        let tls_unusable = |error: TlsMaterialError| SideError::cannot_connect(side, &address, error);
        let statement_timeout = Duration::from_secs(statement_timeout.as_secs().max(1));
        // The socket timeouts are a backstop one second past the client deadline, so that a
        // server that stops answering meets the deadline (and gets its KILL QUERY) first.
        let io_timeout = statement_timeout + ANSWER_GRACE + Duration::from_secs(1);
        let tls = TlsMaterial::new(&config.tls).map_err(tls_unusable)?;
        let opportunistic = config.tls == MySqlTls::Opportunistic;
        let with_tls = config.opts(Some(tls.opts.clone()), io_timeout);
        let without_tls = config.opts(None, io_timeout);
        let connected = within_deadline("datadiff-connect", config.connect_timeout, move || {
            match Conn::new(with_tls.clone()) {
                // A server without TLS gets a plain connection when TLS was only offered.
                Err(mysql::Error::DriverError(mysql::DriverError::TlsNotSupported)) if opportunistic => {
                    Conn::new(without_tls).map(|conn| (conn, false))
                }
                other => other.map(|conn| (conn, true)),
            }
        });
        let (mut conn, encrypted) = match connected {
            Ok(Ok(connected)) => connected,
            Ok(Err(error)) => return Err(cannot_connect(mysql_one_line(&error))),
            Err(error) => return Err(cannot_connect(crate::chain(&error))),
        };
        let canceller_opts =
            if encrypted { config.opts(Some(tls.opts.clone()), io_timeout) } else { config.opts(None, io_timeout) };
        let canceller = MySqlCanceller {
            opts: canceller_opts,
            connection_id: conn.connection_id(),
            deadline: config.connect_timeout,
            _tls: encrypted.then_some(tls),
        };
        // The session's first statement has no statement timeout yet: the connect timeout
        // bounds it instead.
        let version = within_deadline("datadiff-mysql-version", config.connect_timeout, move || {
            let version = conn.query_first::<String, _>("SELECT VERSION()");
            (conn, version)
        });
        let (conn, version) = match version {
            Ok((conn, Ok(Some(version)))) => (conn, version),
            Ok((_, Ok(None))) => {
                let line = format!("{side} SELECT VERSION() returned no row");
                return Err(SideError::new(side, "reading the server version", SideErrorKind::Decode, line));
            }
            Ok((_, Err(error))) => {
                return Err(failure(side, "reading the server version", SideErrorKind::Connect, &error));
            }
            Err(error) => {
                return Err(SideError::failed(side, "reading the server version", SideErrorKind::Timeout, error));
            }
        };
        let engine = config.engine.unwrap_or_else(|| MySqlEngine::detect(None, &version));
        let mut session = MySqlSideSession {
            side,
            conn: Some(conn),
            canceller,
            statement_timeout,
            engine,
            server_version: version,
            visibility: VisibilityProbe::new(),
        };
        let statements = session_statements(engine, statement_timeout.as_secs());
        let action = "starting the read-only transaction";
        session.supervised(action, move |conn| {
            for statement in &statements {
                conn.query_drop(statement).map_err(|error| failure(side, action, SideErrorKind::Server, &error))?;
            }
            Ok(())
        })?;
        tracing::debug!(side = %side, address = %config.address(), engine = ?engine, "MySQL side session open");
        Ok(session)
    }

    /// Which side it is.
    pub fn side(&self) -> Side {
        self.side
    }

    /// The engine the session's statement timeout was chosen for.
    pub fn engine(&self) -> MySqlEngine {
        self.engine
    }

    /// The server's `VERSION()`.
    pub fn server_version(&self) -> &str {
        &self.server_version
    }

    /// How long a statement may go unanswered: the statement timeout plus [`ANSWER_GRACE`].
    pub fn answer_deadline(&self) -> Duration {
        self.statement_timeout + ANSWER_GRACE
    }

    /// A handle cancelling this session's running statement.
    pub fn canceller(&self) -> MySqlCanceller {
        self.canceller.clone()
    }

    /// The columns of `schema.table` from `information_schema.COLUMNS` ([`COLUMNS_QUERY`]):
    /// `COLUMN_TYPE` in the `udt_name` slot, so `tinyint(1)` is a boolean. A table the user
    /// cannot see has no columns.
    pub fn columns(&mut self, schema: &str, table: &str) -> Result<TableColumns, SideError> {
        let (side, schema, table) = (self.side, schema.to_owned(), table.to_owned());
        let action = "catalog read";
        self.supervised(action, move |conn| {
            let rows: Vec<mysql::Row> = conn
                .exec(COLUMNS_QUERY, (&schema, &table))
                .map_err(|error| failure(side, action, SideErrorKind::Catalog, &error))?;
            let columns = rows
                .into_iter()
                .map(|row| {
                    catalog_column(row)
                        .map_err(|problem| SideError::failed(side, action, SideErrorKind::Catalog, problem))
                })
                .collect::<Result<Vec<_>, SideError>>()?;
            Ok(TableColumns::new(schema, table, columns))
        })
    }

    /// `MIN(ts) … WHERE ts < ?` with `cutoff` bound as naive UTC (the session's zone is UTC,
    /// so a `TIMESTAMP` column compares in UTC too); `None` when no row has a timestamp
    /// before the cutoff.
    pub fn minimum(&mut self, sql: &str, cutoff: DateTime<Utc>) -> Result<Option<DateTime<Utc>>, SideError> {
        let (side, sql) = (self.side, sql.to_owned());
        let action = "MIN query";
        self.supervised(action, move |conn| {
            let row: Option<mysql::Row> = conn
                .exec_first(&sql, (bound(cutoff),))
                .map_err(|error| failure(side, action, SideErrorKind::Server, &error))?;
            let value = row.and_then(|row| row.as_ref(0).cloned()).unwrap_or(mysql::Value::NULL);
            let unreadable = |what: &str| {
                SideError::new(side, action, SideErrorKind::Decode, format!("{side} MIN query returned {what}"))
            };
            match value {
                mysql::Value::NULL => Ok(None),
                mysql::Value::Date(..) => match decode_date_time(&value, true) {
                    Ok(Value::Timestamp(micros)) => DateTime::from_timestamp_micros(micros)
                        .map(Some)
                        .ok_or_else(|| unreadable("a timestamp out of range")),
                    _ => Err(unreadable("an unreadable timestamp")),
                },
                _ => Err(unreadable("an unreadable timestamp")),
            }
        })
    }

    /// Runs the side's aggregate query over `bounds` (the start must be resolved; both bound
    /// as naive UTC) and decodes its one row, one canonical value per metric, with the
    /// query's wall time in seconds.
    pub fn aggregate(
        &mut self,
        sql: &str,
        bounds: Bounds,
        metrics: &[CheckType],
    ) -> Result<(Vec<Value>, f64), SideError> {
        let side = self.side;
        let action = "aggregate query";
        let decode = move |line: String| SideError::new(side, action, SideErrorKind::Decode, line);
        let Some(start) = bounds.start else {
            let line = format!("{side} aggregate query has no window start");
            return Err(SideError::new(side, action, SideErrorKind::Server, line));
        };
        let (sql, metrics) = (sql.to_owned(), metrics.to_vec());
        self.supervised(action, move |conn| {
            let started = Instant::now();
            let row: Option<mysql::Row> = conn
                .exec_first(&sql, (bound(start), bound(bounds.end)))
                .map_err(|error| failure(side, action, SideErrorKind::Server, &error))?;
            let seconds = started.elapsed().as_secs_f64();
            let row = row.ok_or_else(|| decode(format!("{side} aggregate query returned no row")))?;
            if row.len() != metrics.len() {
                return Err(decode(format!(
                    "{side} aggregate query returned {} columns, {} expected",
                    row.len(),
                    metrics.len()
                )));
            }
            let columns = row.columns();
            let mut values = Vec::with_capacity(metrics.len());
            for (index, check) in metrics.iter().enumerate() {
                let value = row.as_ref(index).cloned().unwrap_or(mysql::Value::NULL);
                let column = &columns[index];
                let decoded = decode_value(column.column_type(), column.character_set(), value).map_err(|problem| {
                    decode(format!("{side} aggregate value of {check} cannot be read: {problem}"))
                })?;
                values.push(decoded);
            }
            Ok((values, seconds))
        })
    }

    /// The preflight's index facts of `schema.table` from `information_schema.STATISTICS`:
    /// the visibility column probed once per session ([`VisibilityProbe`]), then the table's
    /// index rows grouped into indexes ([`indexes_from_statistics`]). The error text is the
    /// preflight's `source index lookup failed: <message>`.
    pub fn indexes(&mut self, schema: &str, table: &str) -> Result<Vec<MySqlIndex>, SideError> {
        let (side, action) = (self.side, "index lookup");
        let failed =
            move |kind, why: String| SideError::new(side, action, kind, format!("source index lookup failed: {why}"));
        let mut probe = self.visibility;
        let (schema, table) = (schema.to_owned(), table.to_owned());
        let result = self.supervised(action, move |conn| {
            let visibility = probe
                .column(|| conn.query::<String, _>(VISIBILITY_PROBE_QUERY))
                .map_err(|error| failed(SideErrorKind::Catalog, mysql_one_line(&error)))?;
            let rows: Vec<mysql::Row> = conn
                .exec(index_query(visibility), (&schema, &table))
                .map_err(|error| failed(SideErrorKind::Catalog, mysql_one_line(&error)))?;
            let rows = rows
                .into_iter()
                .map(statistics_row)
                .collect::<Result<Vec<_>, CatalogRowError>>()
                .map_err(|problem| failed(SideErrorKind::Decode, problem.to_string()))?;
            Ok((probe, indexes_from_statistics(&rows, visibility)))
        });
        let (probe, indexes) = result?;
        self.visibility = probe;
        Ok(indexes)
    }

    /// The preflight's bounded count of the whole table ([`bounded_count_sql`], the limit
    /// bound as an integer): `Ok(Some(n))`, `Ok(None)` for a result that is not one integer,
    /// or the text `bounded source row count failed: <message>`.
    pub fn bounded_count(&mut self, schema: &str, table: &str, limit: i64) -> Result<Option<i64>, SideError> {
        let (side, action) = (self.side, "bounded row count");
        let failed = move |why: String| {
            SideError::new(side, action, SideErrorKind::Server, format!("bounded source row count failed: {why}"))
        };
        let sql =
            bounded_count_sql(schema, table, MySqlPlaceholders::Question).map_err(|error| failed(error.to_string()))?;
        self.supervised(action, move |conn| {
            let rows: Vec<mysql::Row> = conn.exec(&sql, (limit,)).map_err(|error| failed(mysql_one_line(&error)))?;
            Ok(match rows.as_slice() {
                [row] => match row.as_ref(0) {
                    Some(mysql::Value::Int(n)) => Some(*n),
                    Some(mysql::Value::UInt(n)) => i64::try_from(*n).ok(),
                    _ => None,
                },
                _ => None,
            })
        })
    }

    /// The first column of `sql`'s first row as text (`None` for no row or NULL), with the
    /// window bound as naive UTC: `(start, end)`, or `(end)` alone when `start` is `None`.
    /// `doctor`'s read-only probes use it (the first duplicate key of a window).
    pub fn first_text(
        &mut self,
        action: &'static str,
        sql: &str,
        start: Option<DateTime<Utc>>,
        end: DateTime<Utc>,
    ) -> Result<Option<String>, SideError> {
        let (side, sql) = (self.side, sql.to_owned());
        self.supervised(action, move |conn| {
            let params: Vec<mysql::Value> = start.into_iter().chain([end]).map(bound).collect();
            let row: Option<mysql::Row> =
                conn.exec_first(&sql, params).map_err(|error| failure(side, action, SideErrorKind::Server, &error))?;
            Ok(row.and_then(|row| row.as_ref(0).cloned()).and_then(|value| match value {
                mysql::Value::NULL => None,
                mysql::Value::Bytes(bytes) => Some(String::from_utf8_lossy(&bytes).into_owned()),
                mysql::Value::Int(n) => Some(n.to_string()),
                mysql::Value::UInt(n) => Some(n.to_string()),
                other => Some(other.as_sql(false)),
            }))
        })
    }

    /// The session's connection (inside its read-only transaction) and its canceller, for a
    /// reader that streams on it directly; an abandoned session has none.
    pub(crate) fn into_stream(mut self) -> Result<(Conn, MySqlCanceller), SideError> {
        let side = self.side;
        let abandoned =
            || SideError::new(side, "row stream", SideErrorKind::Timeout, format!("the {side} session was abandoned"));
        let conn = self.conn.take().ok_or_else(abandoned)?;
        Ok((conn, self.canceller.clone()))
    }

    /// Whether a statement got no answer within its deadline, so that the session gave up its
    /// connection (see [`crate::SideSession::is_abandoned`]).
    pub fn is_abandoned(&self) -> bool {
        self.conn.is_none()
    }

    /// Gives up the connection without waiting for the server: it is dropped on a detached
    /// thread (see [`crate::SideSession::abandon`]).
    pub fn abandon(mut self) {
        if let Some(conn) = self.conn.take() {
            let side = self.side;
            let _ = std::thread::Builder::new().name(format!("datadiff-{side}-close")).spawn(move || drop(conn));
        }
    }

    /// Ends the transaction (rolls back) and closes the connection; best effort, waiting at
    /// most [`ANSWER_GRACE`] (an abandoned session has nothing to close).
    pub fn close(mut self) {
        let side = self.side;
        if self.conn.is_none() {
            return;
        }
        let action = "rollback";
        let closed = self.supervised_within(ANSWER_GRACE, action, move |conn| {
            conn.query_drop("ROLLBACK").map_err(|error| failure(side, action, SideErrorKind::Server, &error))
        });
        if let Err(reason) = closed {
            tracing::debug!(side = %side, %reason, "closing the MySQL side session");
        }
    }

    fn supervised<T: Send + 'static>(
        &mut self,
        action: &str,
        job: impl FnOnce(&mut Conn) -> Result<T, SideError> + Send + 'static,
    ) -> Result<T, SideError> {
        self.supervised_within(self.answer_deadline(), action, job)
    }

    /// Runs `job` on the connection from a helper thread, waiting at most `deadline`; past
    /// it, sends `KILL QUERY` and abandons the connection (see the module docs).
    fn supervised_within<T: Send + 'static>(
        &mut self,
        deadline: Duration,
        action: &str,
        job: impl FnOnce(&mut Conn) -> Result<T, SideError> + Send + 'static,
    ) -> Result<T, SideError> {
        let side = self.side;
        let canceller = self.canceller.clone();
        match on_helper_thread(&mut self.conn, &format!("datadiff-{side}-mysql"), deadline, job, move || {
            canceller.cancel()
        }) {
            Ok(result) => result,
            Err(LentError::NoAnswer) => Err(SideError::failed(
                side,
                action,
                SideErrorKind::Timeout,
                format_args!(
                    "no answer from the {side} database within {} s (statement timeout {} s + {} s grace); a KILL \
                     QUERY was sent and the connection abandoned",
                    deadline.as_secs(),
                    self.statement_timeout.as_secs(),
                    ANSWER_GRACE.as_secs(),
                ),
            )),
            Err(other) => Err(crate::side::lent_failure(side, action, other)),
        }
    }
}

/// `<side> <action> failed: <message>`.
fn failure(side: Side, action: &str, kind: SideErrorKind, error: &mysql::Error) -> SideError {
    SideError::failed(side, action, kind, mysql_one_line(error))
}

/// A MySQL driver error in one line: a server error's message only, else the error's own
/// description (which never holds a password).
pub fn mysql_one_line(error: &mysql::Error) -> String {
    let text = match error {
        mysql::Error::MySqlError(server) => server.message.clone(),
        other => other.to_string(),
    };
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// A window bound as MySQL wants it: naive UTC wall time.
pub(crate) fn bound(instant: DateTime<Utc>) -> mysql::Value {
    let naive: NaiveDateTime = instant.naive_utc();
    use chrono::{Datelike, Timelike};
    mysql::Value::Date(
        u16::try_from(naive.year()).unwrap_or(0),
        naive.month() as u8,
        naive.day() as u8,
        naive.hour() as u8,
        naive.minute() as u8,
        naive.second() as u8,
        naive.nanosecond() / 1000 % 1_000_000,
    )
}

/// A catalog row whose fields are not what the catalog query selects.
#[derive(Debug, thiserror::Error)]
enum CatalogRowError {
    #[error("catalog column {0} is not text")]
    NotText(usize),
    #[error("catalog column {0} is not a number")]
    NotANumber(usize),
    #[error("an index has no name")]
    IndexWithoutName,
    #[error("NON_UNIQUE is not a number")]
    NonUniqueNotANumber,
}

/// One row of [`COLUMNS_QUERY`].
fn catalog_column(row: mysql::Row) -> Result<CatalogColumn, CatalogRowError> {
    let text = |index: usize| -> Result<Option<String>, CatalogRowError> {
        match row.as_ref(index) {
            None | Some(mysql::Value::NULL) => Ok(None),
            Some(value) => {
                mysql::from_value_opt::<String>(value.clone()).map(Some).map_err(|_| CatalogRowError::NotText(index))
            }
        }
    };
    let number = |index: usize| -> Result<Option<i32>, CatalogRowError> {
        match row.as_ref(index) {
            None | Some(mysql::Value::NULL) => Ok(None),
            Some(value) => mysql::from_value_opt::<i64>(value.clone())
                .ok()
                .and_then(|n| i32::try_from(n).ok())
                .map(Some)
                .ok_or(CatalogRowError::NotANumber(index)),
        }
    };
    Ok(CatalogColumn {
        name: text(0)?.unwrap_or_default(),
        data_type: text(1)?.unwrap_or_default(),
        udt_name: text(2)?,
        numeric_precision: number(3)?,
        numeric_scale: number(4)?,
        datetime_precision: number(5)?,
        nullable: text(7)?.as_deref() == Some("YES"),
    })
}

/// One row of [`index_query`].
fn statistics_row(row: mysql::Row) -> Result<StatisticsRow, CatalogRowError> {
    let text = |index: usize| -> Option<String> {
        row.as_ref(index)
            .filter(|value| **value != mysql::Value::NULL)
            .and_then(|value| mysql::from_value_opt::<String>(value.clone()).ok())
    };
    let number = |index: usize| -> Option<u64> {
        row.as_ref(index)
            .filter(|value| **value != mysql::Value::NULL)
            .and_then(|value| mysql::from_value_opt::<u64>(value.clone()).ok())
    };
    Ok(StatisticsRow {
        index_name: text(0).ok_or(CatalogRowError::IndexWithoutName)?,
        column_name: text(1).unwrap_or_default(),
        non_unique: number(3).ok_or(CatalogRowError::NonUniqueNotANumber)? != 0,
        index_type: text(4),
        sub_part: number(5),
        visibility: text(6),
    })
}

/// A result value as the canonical [`Value`] the PostgreSQL side yields for the replicated
/// data, by the result column's type.
fn decode_value(column_type: ColumnType, charset: u16, value: mysql::Value) -> Result<Value, DecodeError> {
    use ColumnType::*;
    let text = |bytes: Vec<u8>| String::from_utf8(bytes).map_err(|_| DecodeError::NotUtf8);
    Ok(match (column_type, value) {
        (_, mysql::Value::NULL) => Value::Null,
        (_, mysql::Value::Int(n)) => Value::Int(n),
        (_, mysql::Value::UInt(n)) => match i64::try_from(n) {
            Ok(n) => Value::Int(n),
            Err(_) => Value::Numeric(Numeric::parse(&n.to_string()).map_err(|_| DecodeError::Unreadable("decimal"))?),
        },
        (_, mysql::Value::Float(f)) => Value::float(f64::from(f)),
        (_, mysql::Value::Double(f)) => Value::float(f),
        (MYSQL_TYPE_DECIMAL | MYSQL_TYPE_NEWDECIMAL, mysql::Value::Bytes(bytes)) => {
            Value::Numeric(Numeric::parse(&text(bytes)?).map_err(|_| DecodeError::Unreadable("decimal"))?)
        }
        (
            MYSQL_TYPE_LONGLONG | MYSQL_TYPE_LONG | MYSQL_TYPE_INT24 | MYSQL_TYPE_SHORT | MYSQL_TYPE_TINY,
            mysql::Value::Bytes(bytes),
        ) => Value::Int(text(bytes)?.parse::<i64>().map_err(|_| DecodeError::Unreadable("integer"))?),
        (_, mysql::Value::Bytes(bytes)) if charset == BINARY_CHARSET => Value::Bytes(bytes.into_boxed_slice()),
        (_, mysql::Value::Bytes(bytes)) => Value::text(text(bytes)?),
        (MYSQL_TYPE_DATE | MYSQL_TYPE_NEWDATE, value @ mysql::Value::Date(..)) => decode_date_time(&value, false)?,
        (_, value @ mysql::Value::Date(..)) => decode_date_time(&value, true)?,
        (_, mysql::Value::Time(negative, days, hours, minutes, seconds, micros)) => {
            let total = ((i64::from(days) * 24 + i64::from(hours)) * 60 + i64::from(minutes)) * 60 + i64::from(seconds);
            let micros = total * 1_000_000 + i64::from(micros);
            Value::Time(if negative { -micros } else { micros })
        }
    })
}

/// A binary-protocol date or date-time: a [`Value::Date`] when `timestamp` is false, else a
/// [`Value::Timestamp`] (naive wall time read as UTC, the session's zone).
fn decode_date_time(value: &mysql::Value, timestamp: bool) -> Result<Value, DecodeError> {
    let mysql::Value::Date(year, month, day, hour, minute, second, micros) = *value else {
        return Err(DecodeError::UnexpectedValueKind { found: "non-date", planned: "a date".to_owned() });
    };
    let date = NaiveDate::from_ymd_opt(i32::from(year), u32::from(month), u32::from(day))
        .ok_or(DecodeError::NotACalendarDate)?;
    if !timestamp {
        let epoch = NaiveDate::from_ymd_opt(1970, 1, 1).unwrap_or_default();
        let days =
            i32::try_from(date.signed_duration_since(epoch).num_days()).map_err(|_| DecodeError::OutOfRange("date"))?;
        return Ok(Value::Date(days));
    }
    let at = date
        .and_hms_micro_opt(u32::from(hour), u32::from(minute), u32::from(second), micros)
        .ok_or(DecodeError::OutOfRange("time of day"))?;
    Ok(Value::Timestamp(at.and_utc().timestamp_micros()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn result_values_decode_by_column_type() {
        let decimal = decode_value(ColumnType::MYSQL_TYPE_NEWDECIMAL, 33, mysql::Value::Bytes(b"-12.50".to_vec()));
        assert_eq!(decimal.unwrap().canonical_text().as_deref(), Some("-12.5"));
        assert_eq!(decode_value(ColumnType::MYSQL_TYPE_LONGLONG, 63, mysql::Value::Int(4)), Ok(Value::Int(4)));
        assert_eq!(decode_value(ColumnType::MYSQL_TYPE_VAR_STRING, 45, mysql::Value::NULL), Ok(Value::Null));
        assert_eq!(
            decode_value(ColumnType::MYSQL_TYPE_VAR_STRING, 45, mysql::Value::Bytes(b"ab".to_vec())),
            Ok(Value::text("ab"))
        );
        assert_eq!(
            decode_value(ColumnType::MYSQL_TYPE_BLOB, BINARY_CHARSET, mysql::Value::Bytes(vec![0, 255])),
            Ok(Value::Bytes(vec![0, 255].into_boxed_slice()))
        );
        let noon = decode_value(ColumnType::MYSQL_TYPE_DATETIME, 63, mysql::Value::Date(2026, 7, 22, 12, 0, 0, 0));
        assert_eq!(noon.unwrap().canonical_text().as_deref(), Some("2026-07-22T12:00:00Z"));
        assert_eq!(
            decode_value(ColumnType::MYSQL_TYPE_DATE, 63, mysql::Value::Date(1970, 1, 2, 0, 0, 0, 0)),
            Ok(Value::Date(1))
        );
        assert!(
            decode_value(ColumnType::MYSQL_TYPE_DATETIME, 63, mysql::Value::Date(2026, 2, 30, 0, 0, 0, 0)).is_err()
        );
        assert_eq!(
            decode_value(ColumnType::MYSQL_TYPE_TIME, 63, mysql::Value::Time(false, 0, 1, 0, 0, 5)),
            Ok(Value::Time(3_600_000_005))
        );
    }

    #[test]
    fn bounds_are_naive_utc_wall_time() {
        let at = DateTime::parse_from_rfc3339("2026-07-22T12:30:05.25+02:00").unwrap().with_timezone(&Utc);
        assert_eq!(bound(at), mysql::Value::Date(2026, 7, 22, 10, 30, 5, 250_000));
    }

    #[test]
    fn the_configuration_never_shows_its_password() {
        let config = MySqlSideConfig {
            side: Side::Source,
            host: "db".to_owned(),
            port: 3306,
            user: "reader".to_owned(),
            password: Some("s3cret".to_owned()),
            dbname: "shop".to_owned(),
            tls: MySqlTls::Opportunistic,
            engine: None,
            connect_timeout: Duration::from_secs(30),
        };
        assert!(!format!("{config:?}").contains("s3cret"));
        assert_eq!(config.address(), "db:3306/shop");
    }

    #[test]
    fn unreadable_tls_settings_are_clear_errors_that_show_no_pem_text() {
        let tls = MySqlTls::Verified { ca: None, client_certificate: Some(("c.pem".to_owned(), "k.pem".to_owned())) };
        let shown = |tls: &MySqlTls| TlsMaterial::new(tls).err().map(|error| error.to_string());
        assert_eq!(shown(&tls).as_deref(), Some("ssl_cert c.pem is neither a file nor PEM text"));
        let tls = MySqlTls::Verified { ca: Some("missing-ca.pem".to_owned()), client_certificate: None };
        assert_eq!(shown(&tls).as_deref(), Some("ssl_ca missing-ca.pem is neither a file nor PEM text"));
        let key = "-----BEGIN PRIVATE KEY-----\nbm90LWEta2V5\n-----END PRIVATE KEY-----\n";
        let certificate = "-----BEGIN CERTIFICATE-----\nbm90LWEtY2VydA==\n-----END CERTIFICATE-----\n";
        let tls = MySqlTls::Verified { ca: None, client_certificate: Some((certificate.to_owned(), key.to_owned())) };
        let error = shown(&tls).unwrap_or_default();
        assert!(error.starts_with("ssl_cert is not a PEM certificate"), "{error}");
        assert!(!error.contains("bm90"), "{error}");
        let config = MySqlSideConfig {
            side: Side::Source,
            host: "db".to_owned(),
            port: 3306,
            user: "reader".to_owned(),
            password: None,
            dbname: "shop".to_owned(),
            tls,
            engine: Some(MySqlEngine::MySql),
            connect_timeout: Duration::from_secs(30),
        };
        let shown = format!("{config:?}");
        assert!(shown.contains("verified (system roots, client certificate)") && !shown.contains("bm90"), "{shown}");
    }
}
