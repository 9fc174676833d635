//! One side of an attempt: a read-only session on the source or the target, set up as
//! PipelineWise sets it up (config note §5.3), and the few statements an attempt runs there.
//!
//! * **Connecting** has one deadline for the whole connection — TCP, TLS and authentication
//!   — as libpq's `connect_timeout` has. rust-postgres applies its `connect_timeout` to the
//!   TCP connect only, so a server that accepts and never answers would hang the attempt; the
//!   connection is therefore made on a helper thread and abandoned at the deadline (the
//!   helper ends when the server answers or closes the socket — PostgreSQL closes it after
//!   `authentication_timeout` — or with the process).
//! * **The transaction**: `BEGIN READ ONLY`, then `set_config('search_path', 'pg_catalog',
//!   true)`, `set_config('TimeZone', 'UTC', true)` and `set_config('statement_timeout',
//!   '<N>s', true)`, transaction-local as upstream's; the catalog read, the preflight, the
//!   `MIN` and the aggregate query all run inside it, under that timeout. It is rolled back
//!   at the end (a read-only transaction has nothing to commit).
//! * **`search_path` is `pg_catalog`** (beyond upstream, which keeps the role's): the
//!   aggregate SQL calls `CONCAT`, `MD5`, `ROUND`, `TO_CHAR` and operators unqualified, and a
//!   `public.concat(text, text)` or a schema earlier in the role's path would otherwise run
//!   inside this session and decide the result. Every table the queries name is
//!   schema-qualified, so the results are unchanged; `set_config` itself is called
//!   qualified, since it runs before the path is pinned.
//! * **Values** of the aggregate row are decoded from PostgreSQL's binary format by result
//!   type into canonical [`Value`]s, so a `numeric` checksum keeps every digit and a naive
//!   `timestamp` reads as UTC.
//!
//! Failure texts are one line: a server error contributes its primary message only (never
//! its DETAIL, which can quote row values), other failures their description.

use std::time::{Duration, Instant};

use chrono::{DateTime, NaiveDateTime, Utc};
use datadiff_diff_core::{
    Side,
    attempt::Bounds,
    definition::CheckType,
    merge::Value,
    plan::{CatalogColumn, TableColumns},
};
use postgres::types::{FromSql, ToSql, Type};
use postgres::{CancelToken, Client};

use crate::LazyTls;
use crate::lend::{LentError, on_helper_thread};
use crate::side_error::{SideError, SideErrorKind};
use crate::stream::{DecodeError, Decoder, Family};
use datadiff_connect::{ANSWER_GRACE, within_deadline};

/// One side's connection settings (`Debug` redacts the password, as [`postgres::Config`]
/// does).
#[derive(Debug, Clone)]
pub struct SideConfig {
    /// Which side.
    pub side: Side,
    /// The driver settings (host, port, user, password, dbname, `application_name`, `sslmode`).
    pub config: postgres::Config,
    /// `host:port/dbname`, for messages.
    pub address: String,
    /// The whole connection's deadline (TCP, TLS and authentication).
    pub connect_timeout: Duration,
    /// The TLS to connect with (verification, client certificate): [`crate::ClientTls`].
    pub tls: crate::ClientTls,
}

/// A connected side inside its read-only transaction.
///
/// **Every statement has a client-side deadline**: the statement timeout plus
/// [`ANSWER_GRACE`]. The server enforces the statement timeout itself, so a healthy server
/// always answers within it — with its rows or with `canceling statement due to statement
/// timeout`. A server that cannot answer at all (its process frozen, a partition that sends
/// no reset) would otherwise block the attempt for ever, since the driver has no timeout of
/// its own. So each statement runs on a helper thread that owns the connection while it
/// works; when the deadline passes, a cancel request is sent (best effort, from another
/// thread) and the connection is abandoned to that helper, which ends when the server
/// answers or the socket closes, or with the process. The statement fails with one line
/// naming the side, the deadline and its parts; an abandoned session refuses further
/// statements.
pub struct SideSession {
    side: Side,
    /// `None` once abandoned to a helper that got no answer.
    client: Option<Client>,
    canceller: SideCanceller,
    /// The statement timeout of the transaction, as applied (whole seconds).
    statement_timeout: Duration,
}

impl std::fmt::Debug for SideSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SideSession")
            .field("side", &self.side)
            .field("abandoned", &self.client.is_none())
            .finish_non_exhaustive()
    }
}

/// Cancels a side's running statement from another thread.
#[derive(Clone)]
pub struct SideCanceller {
    token: CancelToken,
    tls: LazyTls,
}

impl SideCanceller {
    /// Asks the server to cancel whatever the session runs; best effort.
    pub fn cancel(&self) {
        if let Err(error) = self.token.cancel_query(self.tls.clone()) {
            tracing::debug!(error = %one_line(&error), "cancelling a query failed");
        }
    }
}

impl SideSession {
    /// Connects within the side's deadline and opens the read-only transaction with UTC and
    /// `statement_timeout` (whole seconds, at least one).
    pub fn open(config: &SideConfig, statement_timeout: Duration) -> Result<SideSession, SideError> {
        let side = config.side;
        let tls = config.tls.lazy();
        let client = connect_within(config, tls.clone())?;
        let canceller = SideCanceller { token: client.cancel_token(), tls };
        let statement_timeout = Duration::from_secs(statement_timeout.as_secs().max(1));
        let mut session = SideSession { side, client: Some(client), canceller, statement_timeout };
        let seconds = statement_timeout.as_secs();
        let setup = format!(
            "BEGIN READ ONLY; SELECT pg_catalog.set_config('search_path', 'pg_catalog', true); \
             SELECT pg_catalog.set_config('TimeZone', 'UTC', true); \
             SELECT pg_catalog.set_config('statement_timeout', '{seconds}s', true)"
        );
        let action = "starting the read-only transaction";
        session.supervised(action, move |client| {
            client.batch_execute(&setup).map_err(|e| failure(side, action, SideErrorKind::Server, &e))
        })?;
        tracing::debug!(side = %side, address = %config.address, "side session open");
        Ok(session)
    }

    /// Which side it is.
    pub fn side(&self) -> Side {
        self.side
    }

    /// How long a statement may go unanswered: the statement timeout plus [`ANSWER_GRACE`].
    pub fn answer_deadline(&self) -> Duration {
        self.statement_timeout + ANSWER_GRACE
    }

    /// Runs `job` on the client, inside the transaction, within [`Self::answer_deadline`]
    /// (for the preflight and catalog reads). `action` names the step in the failure text.
    pub fn with_client<T: Send + 'static>(
        &mut self,
        action: &str,
        job: impl FnOnce(&mut Client) -> T + Send + 'static,
    ) -> Result<T, SideError> {
        self.supervised(action, move |client| Ok(job(client)))
    }

    /// A handle cancelling this session's running statement.
    pub fn canceller(&self) -> SideCanceller {
        self.canceller.clone()
    }

    /// `<side> <action> failed: <message>`, a server's failure.
    pub fn failure(&self, action: &str, error: &postgres::Error) -> SideError {
        failure(self.side, action, SideErrorKind::Server, error)
    }

    /// The columns of `schema.table` ([`table_columns`]).
    pub fn columns(&mut self, schema: &str, table: &str) -> Result<TableColumns, SideError> {
        let (side, schema, table) = (self.side, schema.to_owned(), table.to_owned());
        self.supervised("catalog read", move |client| {
            table_columns(client, &schema, &table)
                .map_err(|error| failure(side, "catalog read", SideErrorKind::Catalog, &error))
        })
    }

    /// `MIN(ts) … WHERE ts < $1` with `cutoff` bound as the column wants it; `None` when no
    /// row has a timestamp before the cutoff.
    pub fn minimum(
        &mut self,
        sql: &str,
        cutoff: DateTime<Utc>,
        naive: bool,
    ) -> Result<Option<DateTime<Utc>>, SideError> {
        let (side, sql) = (self.side, sql.to_owned());
        let action = "MIN query";
        self.supervised(action, move |client| {
            let bound = Bound::of(cutoff, naive);
            let server = |error: postgres::Error| failure(side, action, SideErrorKind::Server, &error);
            let row = client.query_one(&sql, &[bound.param()]).map_err(server)?;
            let field =
                row.try_get::<_, Raw<'_>>(0).map_err(|error| failure(side, action, SideErrorKind::Decode, &error))?;
            let Some(bytes) = field.0 else {
                return Ok(None);
            };
            let unreadable = |what: &str| {
                SideError::new(side, action, SideErrorKind::Decode, format!("{side} MIN query returned {what}"))
            };
            match Decoder::Timestamp.decode(bytes) {
                Ok(Value::Timestamp(micros)) => DateTime::from_timestamp_micros(micros)
                    .map(Some)
                    .ok_or_else(|| unreadable("a timestamp out of range")),
                Ok(_) | Err(_) => Err(unreadable("an unreadable timestamp")),
            }
        })
    }

    /// Runs the side's aggregate query over `bounds` (the start must be resolved) and decodes
    /// its one row, one canonical value per metric, with the query's wall time in seconds.
    pub fn aggregate(
        &mut self,
        sql: &str,
        bounds: Bounds,
        naive: bool,
        metrics: &[CheckType],
    ) -> Result<(Vec<Value>, f64), SideError> {
        let side = self.side;
        let action = "aggregate query";
        let decode = move |line: String| SideError::new(side, action, SideErrorKind::Decode, line);
        let Some(start) = bounds.start else {
            return Err(SideError::new(
                side,
                action,
                SideErrorKind::Server,
                format!("{side} aggregate query has no window start"),
            ));
        };
        let (sql, metrics) = (sql.to_owned(), metrics.to_vec());
        self.supervised(action, move |client| {
            let (start, end) = (Bound::of(start, naive), Bound::of(bounds.end, naive));
            let started = Instant::now();
            let row = client
                .query_one(&sql, &[start.param(), end.param()])
                .map_err(|error| failure(side, action, SideErrorKind::Server, &error))?;
            let seconds = started.elapsed().as_secs_f64();
            if row.len() != metrics.len() {
                return Err(decode(format!(
                    "{side} aggregate query returned {} columns, {} expected",
                    row.len(),
                    metrics.len()
                )));
            }
            let mut values = Vec::with_capacity(metrics.len());
            for (index, check) in metrics.iter().enumerate() {
                let field = row
                    .try_get::<_, Raw<'_>>(index)
                    .map_err(|error| failure(side, action, SideErrorKind::Decode, &error))?;
                let value = match field.0 {
                    None => Value::Null,
                    Some(bytes) => decode_aggregate(row.columns()[index].type_(), bytes).map_err(|problem| {
                        decode(format!("{side} aggregate value of {check} cannot be read: {problem}"))
                    })?,
                };
                values.push(value);
            }
            Ok((values, seconds))
        })
    }

    /// Whether a statement got no answer within its deadline, so that the session gave up its
    /// connection: the server stopped answering, and the attempt's one deadline has passed.
    pub fn is_abandoned(&self) -> bool {
        self.client.is_none()
    }

    /// Gives up the connection without waiting for the server: it is closed on a detached
    /// thread (a rollback is not needed — the server ends the transaction with the
    /// connection). For the sessions of an attempt whose deadline has passed on any server,
    /// where waiting [`ANSWER_GRACE`] more for a rollback would overrun it.
    pub fn abandon(mut self) {
        if let Some(client) = self.client.take() {
            let side = self.side;
            let _ = std::thread::Builder::new().name(format!("datadiff-{side}-close")).spawn(move || drop(client));
        }
    }

    /// Closes both sessions: each rolled back and closed ([`SideSession::close`], at once on
    /// two threads) — or, when either was abandoned, both given up without waiting
    /// ([`SideSession::abandon`]): one deadline has passed, nothing waits on a server again.
    pub fn close_both(first: SideSession, second: SideSession) {
        if first.is_abandoned() || second.is_abandoned() {
            first.abandon();
            second.abandon();
            return;
        }
        std::thread::scope(|scope| {
            scope.spawn(move || second.close());
            first.close();
        });
    }

    /// Ends the transaction (rolls back) and closes the connection; best effort, waiting at
    /// most [`ANSWER_GRACE`] for the server (an abandoned session has nothing to close).
    pub fn close(mut self) {
        let side = self.side;
        if self.client.is_none() {
            return;
        }
        let action = "rollback";
        let closed = self.supervised_within(ANSWER_GRACE, action, move |client| {
            client.batch_execute("ROLLBACK").map_err(|error| failure(side, action, SideErrorKind::Server, &error))
        });
        if let Err(reason) = closed {
            tracing::debug!(side = %side, %reason, "closing the side session");
        }
    }

    /// Runs `job` on the connection from a helper thread within [`Self::answer_deadline`].
    fn supervised<T: Send + 'static>(
        &mut self,
        action: &str,
        job: impl FnOnce(&mut Client) -> Result<T, SideError> + Send + 'static,
    ) -> Result<T, SideError> {
        self.supervised_within(self.answer_deadline(), action, job)
    }

    /// Runs `job` on the connection from a helper thread, waiting at most `deadline`; past
    /// it, cancels and abandons the connection (see [`SideSession`]).
    fn supervised_within<T: Send + 'static>(
        &mut self,
        deadline: Duration,
        action: &str,
        job: impl FnOnce(&mut Client) -> Result<T, SideError> + Send + 'static,
    ) -> Result<T, SideError> {
        let side = self.side;
        let canceller = self.canceller.clone();
        match on_helper_thread(&mut self.client, &format!("datadiff-{side}-session"), deadline, job, move || {
            canceller.cancel()
        }) {
            Ok(result) => result,
            Err(LentError::NoAnswer) => Err(SideError::failed(
                side,
                action,
                SideErrorKind::Timeout,
                format_args!(
                    "no answer from the {side} database within {} s (statement_timeout {} s + {} s grace); a cancel \
                     request was sent and the connection abandoned",
                    deadline.as_secs(),
                    self.statement_timeout.as_secs(),
                    ANSWER_GRACE.as_secs(),
                ),
            )),
            Err(other) => Err(lent_failure(side, action, other)),
        }
    }
}

/// `<side> <action> failed: <message>`.
fn failure(side: Side, action: &str, kind: SideErrorKind, error: &postgres::Error) -> SideError {
    SideError::failed(side, action, kind, one_line(error))
}

/// A statement's helper that gave no answer for another reason than its deadline: an
/// abandoned connection is a timeout's consequence, a lost helper thread the session's
/// failure.
pub(crate) fn lent_failure(side: Side, action: &str, error: LentError) -> SideError {
    let kind = match error {
        LentError::Abandoned | LentError::NoAnswer => SideErrorKind::Timeout,
        LentError::Thread(_) | LentError::Lost => SideErrorKind::Server,
    };
    SideError::new(side, action, kind, error.failure(side, action))
}

/// A window bound as the timestamp column wants it: `timestamptz` for an aware column,
/// naive UTC wall time for `timestamp without time zone`.
enum Bound {
    Aware(DateTime<Utc>),
    Naive(NaiveDateTime),
}

impl Bound {
    fn of(instant: DateTime<Utc>, naive: bool) -> Bound {
        if naive { Bound::Naive(instant.naive_utc()) } else { Bound::Aware(instant) }
    }

    fn param(&self) -> &(dyn ToSql + Sync) {
        match self {
            Bound::Aware(instant) => instant,
            Bound::Naive(instant) => instant,
        }
    }
}

/// A field's raw binary value, whatever its type (`None` for NULL).
struct Raw<'a>(Option<&'a [u8]>);

impl<'a> FromSql<'a> for Raw<'a> {
    fn from_sql(_: &Type, raw: &'a [u8]) -> Result<Raw<'a>, Box<dyn std::error::Error + Sync + Send>> {
        Ok(Raw(Some(raw)))
    }

    fn from_sql_null(_: &Type) -> Result<Raw<'a>, Box<dyn std::error::Error + Sync + Send>> {
        Ok(Raw(None))
    }

    fn accepts(_: &Type) -> bool {
        true
    }
}

/// Decodes one aggregate value by its result type, as PipelineWise's driver would hand it to
/// `canonical_value`: counts and sums as numbers, a `char(n)` key with its padding (psycopg2
/// keeps it), enums by label, naive timestamps as UTC.
fn decode_aggregate(ty: &Type, bytes: &[u8]) -> Result<Value, DecodeError> {
    let is_enum = matches!(ty.kind(), postgres::types::Kind::Enum(_));
    let decoder = match Family::of(ty.oid(), -1, is_enum) {
        Family::Integer => Decoder::Int,
        Family::Numeric { .. } => Decoder::Numeric,
        Family::Float4 | Family::Float8 => Decoder::Float,
        Family::Text | Family::Char | Family::Enum => Decoder::Text,
        Family::Bool => Decoder::Bool,
        Family::Date => Decoder::Date,
        Family::Time => Decoder::Time,
        Family::Timestamp | Family::TimestampTz => Decoder::Timestamp,
        Family::Uuid => Decoder::Uuid,
        Family::Bytes => Decoder::Bytes,
        Family::Unsupported => return Err(DecodeError::UnsupportedType(ty.name().to_owned())),
    };
    decoder.decode(bytes)
}

/// The columns of `schema.table` from `information_schema.columns`, matched by exact name, in
/// column order, as an attempt reads them (`doctor` reads them the same way). A table the role
/// cannot see has no columns (the key column is then reported missing, as upstream reports
/// it).
pub fn table_columns(client: &mut Client, schema: &str, table: &str) -> Result<TableColumns, postgres::Error> {
    let rows = client.query(
        "SELECT column_name::text, data_type::text, udt_name::text, numeric_precision::int, \
                numeric_scale::int, datetime_precision::int, is_nullable::text \
           FROM information_schema.columns \
          WHERE table_schema = $1 AND table_name = $2 \
          ORDER BY ordinal_position",
        &[&schema, &table],
    )?;
    let columns = rows
        .iter()
        .map(|row| {
            Ok(CatalogColumn {
                name: row.try_get(0)?,
                data_type: row.try_get(1)?,
                udt_name: row.try_get(2)?,
                numeric_precision: row.try_get(3)?,
                numeric_scale: row.try_get(4)?,
                datetime_precision: row.try_get(5)?,
                nullable: row.try_get::<_, Option<String>>(6)?.as_deref() == Some("YES"),
            })
        })
        .collect::<Result<Vec<_>, postgres::Error>>()?;
    Ok(TableColumns::new(schema, table, columns))
}

/// Connects on a helper thread and waits at most the side's connect deadline for the whole
/// connection; a failure names the side's address and why, in one line.
fn connect_within(side: &SideConfig, tls: LazyTls) -> Result<Client, SideError> {
    let cannot_connect = |why: String| SideError::cannot_connect(side.side, &side.address, why);
    let mut config = side.config.clone();
    crate::with_keepalive_defaults(&mut config);
    match within_deadline("datadiff-connect", side.connect_timeout, move || config.connect(tls)) {
        Ok(Ok(client)) => Ok(client),
        // A rejected server certificate is named as psql names it.
        Ok(Err(error)) => match datadiff_connect::CertificateRejected::find(&error) {
            Some(rejected) => Err(cannot_connect(format!("TLS handshake failed: {rejected}"))),
            None => Err(cannot_connect(one_line(&error))),
        },
        Err(error) => Err(cannot_connect(crate::chain(&error))),
    }
}

/// A driver error in one line: a server error's primary message only, else the error's own
/// description with its causes (a refused connection, a certificate that does not verify;
/// never a password).
pub fn one_line(error: &postgres::Error) -> String {
    let text = match error.as_db_error() {
        Some(db) => db.message().to_owned(),
        None => crate::chain(error),
    };
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aggregate_values_decode_by_result_type() {
        assert_eq!(decode_aggregate(&Type::INT8, &4i64.to_be_bytes()), Ok(Value::Int(4)));
        // numeric 181442033815354: ndigits 4, weight 3, sign +, dscale 0, groups 181 4420 3381 5354.
        let mut numeric = Vec::new();
        for word in [4u16, 3, 0, 0, 181, 4420, 3381, 5354] {
            numeric.extend_from_slice(&word.to_be_bytes());
        }
        let value = decode_aggregate(&Type::NUMERIC, &numeric).unwrap();
        assert_eq!(value.canonical_text().as_deref(), Some("181442033815354"));
        assert_eq!(decode_aggregate(&Type::BPCHAR, b"ab  "), Ok(Value::text("ab  ")), "padding kept");
        let noon = 1_784_721_600_000_000i64 - 946_684_800_000_000;
        let timestamp = decode_aggregate(&Type::TIMESTAMP, &noon.to_be_bytes()).unwrap();
        assert_eq!(timestamp.canonical_text().as_deref(), Some("2026-07-22T12:00:00Z"));
        assert_eq!(decode_aggregate(&Type::JSONB, b"\x01{}"), Err(DecodeError::UnsupportedType("jsonb".to_owned())));
    }

    #[test]
    fn a_refused_connection_is_a_typed_connect_error_worded_as_stored() {
        let config = "host=/nonexistent port=1 user=x".parse::<postgres::Config>().unwrap();
        let side = SideConfig {
            side: Side::Target,
            config,
            address: "/nonexistent:1/x".to_owned(),
            connect_timeout: Duration::from_secs(5),
            tls: crate::ClientTls::default(),
        };
        let error = SideSession::open(&side, Duration::from_secs(1)).unwrap_err();
        assert_eq!((error.side, error.step.as_str(), error.kind), (Side::Target, "connect", SideErrorKind::Connect));
        let line = error.to_string();
        assert!(line.starts_with("cannot connect to the target database /nonexistent:1/x: error connecting"), "{line}");
        assert!(!line.contains('\n'));
        assert_eq!(String::from(error), line, "the stored text is the Display");
    }

    #[test]
    fn driver_errors_are_one_line() {
        // A configuration error is a non-server error: its description, on one line.
        let config = "host=/nonexistent port=1 user=x connect_timeout=1".parse::<postgres::Config>().unwrap();
        let Err(error) = config.connect(postgres::NoTls) else { panic!("connected to a socket that does not exist") };
        let text = one_line(&error);
        assert!(!text.contains('\n'));
        assert!(text.starts_with("error connecting to server"), "{text}");
    }
}
