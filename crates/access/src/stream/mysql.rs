//! The ordered row stream of a MySQL or MariaDB source (`tap-mysql`), in the canonical
//! encodings of its PostgreSQL replica's decoders, so that the merge compares the two with
//! `==` as it compares two PostgreSQL sides.
//!
//! * **Planning** ([`plan_mysql_key`], [`plan_mysql_pair`]): a MySQL column's type
//!   ([`MySqlColumnType`], from `information_schema.COLUMNS`: `DATA_TYPE` and `COLUMN_TYPE`)
//!   against the replica's `pg_catalog` type ([`ColumnType`]) chooses a [`MySqlEncoder`] for
//!   the source and a canonical (never width- or scale-dependent) [`Decoder`] for the
//!   replica, following the same direction rules as [`plan_pair`](crate::stream::plan_pair)
//!   (the source is the truth; only what the source's type cannot tell apart is forgiven).
//!   A pair without a faithful comparison is the same one-line error as there.
//! * **Streaming** ([`RowStream::mysql`]): a reader thread opens a session of its own (the
//!   side's settings: UTC, the engine's statement timeout, `START TRANSACTION READ ONLY`)
//!   (and `net_write_timeout` as long as the statement may run, so the server waits while
//!   the merge waits for the other side) and runs
//!   `SELECT key, columns… FROM db.table WHERE ts >= ? AND ts < ? ORDER BY key`
//!   with the window bounds bound as naive UTC, in the binary protocol, row by row (the
//!   driver's `exec_iter` streams: memory is flat whatever the window). A text key is
//!   ordered `CAST(CONVERT(key USING utf8mb4) AS BINARY)`: MySQL collations are case- and
//!   accent-insensitive by default, and the merge needs the bytewise UTF-8 order PostgreSQL
//!   gives with `COLLATE "C"`.
//!
//! # Canonical forms (equal to the replica decoder's encoding)
//!
//! | MySQL | replica | compared as |
//! |---|---|---|
//! | integers, any width, signed or unsigned | integer | the value (an unsigned value beyond `bigint` never equals) |
//! | integers | `numeric` | decimal value |
//! | `decimal(p,s)` | `numeric` / integer | decimal value |
//! | integers, `decimal(p,s)` | floats | equal only to the value's nearest float (what a loader stores) |
//! | `double` / `float` | floats, `numeric`, integer | the replica read as the source's float |
//! | `varchar`, `text`, `enum` | text-like | bytes (`char(n)` replica right-trimmed) |
//! | `char(n)` | text-like | right-trimmed on both sides |
//! | `tinyint(1)`, `bit(1)` | `boolean` | the truth value |
//! | `datetime`, `timestamp` | `timestamp`, `timestamptz` | microseconds, wall time read as UTC |
//! | `datetime`, `timestamp` | `date` | the replica at midnight |
//! | `date` | `date` / `timestamp`, `timestamptz` | the day / its midnight UTC |
//! | `time` | `time` | microseconds (a MySQL time outside a day never equals) |
//! | `binary`, `varbinary`, `blob` | `bytea` | bytes, as stored (`binary(n)` with its padding) |
//! | `binary`, `varbinary` | text-like | upper-case hex, as tap-mysql writes it (`binary(n)`'s trailing `0x00` padding trimmed) |
//!
//! A MySQL zero date (`0000-00-00`, or a zero month or day) is no calendar date and is
//! compared as NULL (what MySQL itself reports for `IS NULL` on such a value in a `NOT NULL`
//! column, and what a replica can hold). `json` (MySQL), `set`, `year`, `bit(n>1)`, spatial
//! and unknown types are not compared: an error naming the column.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::Scope;
use std::time::Duration;

use chrono::{DateTime, NaiveDate, Utc};
use datadiff_diff_core::merge::Key;
use datadiff_diff_core::mysql::quote_mysql_ident;
use datadiff_diff_core::plan::CatalogColumn;
use datadiff_diff_core::plan::IdentifierError;
use mysql::prelude::Queryable;

use crate::error::Error;
use crate::mysql_side::{MySqlCanceller, MySqlSideConfig, MySqlSideSession, bound, mysql_one_line};
use crate::stream::DecodeError;
use crate::stream::column::{ColumnType, Family};
use crate::stream::copy::Flow;
use crate::stream::decoder::{self, Coercions, Decoder, KeyDecoder};
use crate::stream::encoded::BatchWriter;
use crate::stream::reader::{BatchOut, RowDecoder, RowStream, Stopper, StreamOptions};

/// A MySQL column's type family, from `DATA_TYPE` and `COLUMN_TYPE`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum MySqlFamily {
    /// `tinyint` … `bigint` (not `tinyint(1)`).
    Integer {
        /// `unsigned`.
        unsigned: bool,
    },
    /// `decimal(p,s)`.
    Decimal {
        /// The declared scale.
        scale: u32,
    },
    /// `float`.
    Float,
    /// `double` (`real`).
    Double,
    /// `tinyint(1)` or `bit(1)`: tap-mysql's booleans.
    Bool,
    /// `varchar`, the `text` types, `enum`.
    Text,
    /// `char(n)`.
    Char,
    /// `datetime`, `timestamp`.
    DateTime,
    /// `date`.
    Date,
    /// `time`.
    Time,
    /// `binary`, `varbinary`, the `blob` types.
    Binary {
        /// `binary(n)`: padded with `0x00` to its length.
        padded: bool,
    },
    /// Anything else (`json`, `set`, `year`, `bit(n>1)`, spatial types).
    Unsupported,
}

/// A MySQL column as `information_schema.COLUMNS` describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MySqlColumnType {
    /// The column name.
    pub name: String,
    /// `COLUMN_TYPE` (`decimal(12,2)`, `bigint(20) unsigned`), for messages.
    pub type_name: String,
    /// Its family.
    pub family: MySqlFamily,
}

impl MySqlColumnType {
    /// The type of a catalog column read by
    /// [`MySqlSideSession::columns`](crate::MySqlSideSession::columns) (`COLUMN_TYPE` in
    /// the `udt_name` slot).
    pub fn of(column: &CatalogColumn) -> MySqlColumnType {
        let data_type = column.data_type.to_lowercase();
        let column_type = column.udt_name.clone().unwrap_or_else(|| data_type.clone()).to_lowercase();
        let family = match data_type.as_str() {
            "tinyint" if column_type.starts_with("tinyint(1)") => MySqlFamily::Bool,
            "bit" if column_type == "bit(1)" => MySqlFamily::Bool,
            "tinyint" | "smallint" | "mediumint" | "int" | "integer" | "bigint" => {
                MySqlFamily::Integer { unsigned: column_type.contains("unsigned") }
            }
            "decimal" | "numeric" => match column.numeric_scale.and_then(|scale| u32::try_from(scale).ok()) {
                Some(scale) => MySqlFamily::Decimal { scale },
                None => MySqlFamily::Unsupported,
            },
            "float" => MySqlFamily::Float,
            "double" | "real" | "double precision" => MySqlFamily::Double,
            "varchar" | "text" | "tinytext" | "mediumtext" | "longtext" | "enum" => MySqlFamily::Text,
            "char" => MySqlFamily::Char,
            "datetime" | "timestamp" => MySqlFamily::DateTime,
            "date" => MySqlFamily::Date,
            "time" => MySqlFamily::Time,
            "binary" => MySqlFamily::Binary { padded: true },
            "varbinary" | "blob" | "tinyblob" | "mediumblob" | "longblob" => MySqlFamily::Binary { padded: false },
            _ => MySqlFamily::Unsupported,
        };
        MySqlColumnType { name: column.name.clone(), type_name: column_type, family }
    }
}

/// How a MySQL source field (a binary-protocol value) becomes the canonical encoding of the
/// replica decoder it is paired with (see the module table).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum MySqlEncoder {
    /// An integer as [`Decoder::Int`] encodes it.
    Int,
    /// An integer as normalised decimal text ([`Decoder::Numeric`]'s encoding).
    IntAsDecimal,
    /// A `decimal` as normalised decimal text.
    Decimal,
    /// An integer as [`Decoder::Float`] encodes its nearest `double`.
    IntAsDouble,
    /// An integer as [`Decoder::Float`] encodes its nearest `real`.
    IntAsReal,
    /// A `decimal` as [`Decoder::Float`] encodes its nearest `double`.
    DecimalAsDouble,
    /// A `decimal` as [`Decoder::Float`] encodes its nearest `real`.
    DecimalAsReal,
    /// A `double` as [`Decoder::Float`] encodes it.
    Double,
    /// A `float` as [`Decoder::FloatAsReal`] encodes it.
    Real,
    /// Text, byte for byte.
    Text,
    /// Text without trailing blanks.
    PaddedChar,
    /// [`MySqlEncoder::Text`] with an empty string as NULL.
    TextEmptyAsNull,
    /// [`MySqlEncoder::PaddedChar`] with an all-blank string as NULL.
    PaddedCharEmptyAsNull,
    /// A truth value as [`Decoder::Bool`] encodes it.
    Bool,
    /// A date as [`Decoder::Date`] encodes it (days since 2000-01-01).
    Date,
    /// A date as the [`Decoder::Timestamp`] encoding of its midnight UTC.
    DateAsTimestamp,
    /// A date-time as [`Decoder::Timestamp`] encodes it (microseconds since 2000-01-01 UTC).
    Timestamp,
    /// A time as [`Decoder::Time`] encodes it.
    Time,
    /// Bytes as stored.
    Bytes,
    /// Bytes as tap-mysql's upper-case hex text; with `trim`, trailing `0x00` dropped first.
    HexText {
        /// Drop trailing `0x00` (a `binary(n)`'s padding).
        trim: bool,
    },
}

/// How the MySQL key field becomes a [`Key`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum MySqlKey {
    /// An integer key (an unsigned value beyond `bigint` is an error).
    Int,
    /// A text key (`varchar`, `text`, `enum`), ordered bytewise and compared as stored:
    /// trailing blanks are part of it.
    Text,
    /// A `char(n)` key, ordered bytewise and compared without trailing blanks: the type pads
    /// (PAD SPACE), so its blanks carry nothing.
    PaddedChar,
    /// A `date` key against a `date`: [`Key::Date`].
    Date,
    /// A `date` key against a timestamp: its midnight, [`Key::Timestamp`].
    DateAsTimestamp,
    /// A `datetime` or `timestamp` key (the session is UTC): [`Key::Timestamp`].
    Timestamp,
}

/// Chooses the key forms: integer against integer, text-like against text-like, and dates and
/// date-times as the comparison table pairs their values (a date against a timestamp as its
/// midnight).
pub fn plan_mysql_key(
    source: &MySqlColumnType,
    target: &ColumnType,
    target_role: &str,
) -> Result<(MySqlKey, KeyDecoder), Error> {
    match (source.family, target.family) {
        (MySqlFamily::Integer { .. }, Family::Integer) => Ok((MySqlKey::Int, KeyDecoder::Int)),
        // A char(n) source cannot tell trailing blanks apart: the replica's are ignored too,
        // whatever its type (as for a PostgreSQL char(n) source). A varchar source's blanks
        // are part of the key.
        (MySqlFamily::Char, Family::Text | Family::Char) => Ok((MySqlKey::PaddedChar, KeyDecoder::PaddedChar)),
        (MySqlFamily::Text, Family::Text) => Ok((MySqlKey::Text, KeyDecoder::Text)),
        (MySqlFamily::Text, Family::Char) => Ok((MySqlKey::Text, KeyDecoder::PaddedChar)),
        (MySqlFamily::Date, Family::Date) => Ok((MySqlKey::Date, KeyDecoder::Date)),
        (MySqlFamily::Date, Family::Timestamp) => Ok((MySqlKey::DateAsTimestamp, KeyDecoder::Timestamp)),
        (MySqlFamily::Date, Family::TimestampTz) => Ok((MySqlKey::DateAsTimestamp, KeyDecoder::TimestampTz)),
        (MySqlFamily::DateTime, Family::Timestamp) => Ok((MySqlKey::Timestamp, KeyDecoder::Timestamp)),
        (MySqlFamily::DateTime, Family::TimestampTz) => Ok((MySqlKey::Timestamp, KeyDecoder::TimestampTz)),
        (MySqlFamily::DateTime, Family::Date) => Ok((MySqlKey::Timestamp, KeyDecoder::DateAsTimestamp)),
        _ => Err(Error::KeyType {
            column: source.name.clone(),
            target_role: target_role.to_owned(),
            source_type: source.type_name.clone(),
            target_type: target.type_name.clone(),
        }),
    }
}

/// Chooses the source encoder and the replica decoder of one compared column (see the
/// module table), with the declared [`Coercions`].
pub fn plan_mysql_pair(
    source: &MySqlColumnType,
    target: &ColumnType,
    target_role: &str,
    coercions: Coercions,
) -> Result<(MySqlEncoder, Decoder), Error> {
    use Family as F;
    use MySqlEncoder as E;
    use MySqlFamily as M;
    let unsupported = |column: &str, type_name: &str, role: &str| Error::UnsupportedType {
        role: role.to_owned(),
        column: column.to_owned(),
        type_name: type_name.to_owned(),
        pair: format!("{} on the source, {} on the {target_role}", source.type_name, target.type_name),
    };
    if source.family == M::Unsupported {
        return Err(unsupported(&source.name, &source.type_name, "source"));
    }
    if target.family == F::Unsupported {
        return Err(unsupported(&target.name, &target.type_name, target_role));
    }
    let text_like = |family| matches!(family, F::Text | F::Char | F::Enum);
    let text_decoder = |family| if family == F::Char { Decoder::PaddedChar } else { Decoder::Text };
    let pair = match (source.family, target.family) {
        (M::Integer { .. }, F::Integer) => (E::Int, Decoder::Int),
        (M::Integer { .. }, F::Numeric { .. }) => (E::IntAsDecimal, Decoder::Numeric),
        // An exact source against a float replica: equal only to the nearest float.
        (M::Integer { .. }, F::Float8) => (E::IntAsDouble, Decoder::Float),
        (M::Integer { .. }, F::Float4) => (E::IntAsReal, Decoder::Float),
        (M::Decimal { .. }, F::Numeric { .. }) => (E::Decimal, Decoder::Numeric),
        (M::Decimal { .. }, F::Integer) => (E::Decimal, Decoder::IntAsNumeric),
        (M::Decimal { .. }, F::Float8) => (E::DecimalAsDouble, Decoder::Float),
        (M::Decimal { .. }, F::Float4) => (E::DecimalAsReal, Decoder::Float),
        // A float source: the replica read as the source's float type.
        (M::Double, F::Numeric { .. }) => (E::Double, Decoder::NumericAsFloat),
        (M::Float, F::Numeric { .. }) => (E::Real, Decoder::NumericAsReal),
        (M::Double, F::Integer) => (E::Double, Decoder::IntAsFloat),
        (M::Float, F::Integer) => (E::Real, Decoder::IntAsReal),
        (M::Double, F::Float8 | F::Float4) => (E::Double, Decoder::Float),
        (M::Float, F::Float8 | F::Float4) => (E::Real, Decoder::FloatAsReal),
        (M::Char, other) if text_like(other) => (E::PaddedChar, Decoder::PaddedChar),
        (M::Text, other) if text_like(other) => (E::Text, text_decoder(other)),
        (M::Bool, F::Bool) => (E::Bool, Decoder::Bool),
        (M::DateTime, F::Timestamp | F::TimestampTz) => (E::Timestamp, Decoder::Timestamp),
        (M::DateTime, F::Date) => (E::Timestamp, Decoder::DateAsTimestamp),
        (M::Date, F::Date) => (E::Date, Decoder::Date),
        (M::Date, F::Timestamp | F::TimestampTz) => (E::DateAsTimestamp, Decoder::Timestamp),
        (M::Time, F::Time) => (E::Time, Decoder::Time),
        (M::Binary { .. }, F::Bytes) => (E::Bytes, Decoder::Bytes),
        (M::Binary { padded }, other) if text_like(other) => (E::HexText { trim: padded }, text_decoder(other)),
        _ => {
            return Err(Error::IncompatibleTypes {
                column: source.name.clone(),
                target_role: target_role.to_owned(),
                source_type: source.type_name.clone(),
                target_type: target.type_name.clone(),
            });
        }
    };
    if !coercions.empty_string_as_null {
        return Ok(pair);
    }
    Ok(match pair {
        (E::Text, decoder) => (E::TextEmptyAsNull, nullable(decoder)),
        (E::PaddedChar, decoder) => (E::PaddedCharEmptyAsNull, nullable(decoder)),
        other => other,
    })
}

fn nullable(decoder: Decoder) -> Decoder {
    match decoder {
        Decoder::Text => Decoder::TextEmptyAsNull,
        Decoder::PaddedChar => Decoder::PaddedCharEmptyAsNull,
        other => other,
    }
}

/// What the MySQL side streams: the `SELECT` over a window, its key and encoders.
#[derive(Debug, Clone)]
pub struct MySqlRowQuery {
    /// The `SELECT` up to its first window bound, between the bounds, after the second.
    parts: [String; 3],
    select: String,
    database: String,
    table: String,
    /// The key columns and their forms, in key order (at least one).
    keys: Vec<(String, MySqlKey)>,
    columns: Vec<(String, MySqlEncoder)>,
}

impl MySqlRowQuery {
    /// `SELECT key, columns… FROM database.table WHERE ts >= ? AND ts < ? ORDER BY key`
    /// (a text key in bytewise UTF-8 order), every identifier backtick-quoted. The error is
    /// an identifier MySQL cannot quote.
    pub fn for_table(
        database: &str,
        table: &str,
        key_column: &str,
        key: MySqlKey,
        timestamp_column: &str,
        columns: Vec<(String, MySqlEncoder)>,
    ) -> Result<MySqlRowQuery, IdentifierError> {
        MySqlRowQuery::for_table_keys(database, table, vec![(key_column.to_owned(), key)], timestamp_column, columns)
    }

    /// [`MySqlRowQuery::for_table`] with any number of key columns (a composite key):
    /// `SELECT a, b, columns… FROM database.table WHERE ts >= ? AND ts < ? ORDER BY a, b`,
    /// each text part in bytewise UTF-8 order, so the rows arrive in the tuple order of
    /// [`Key::Composite`] (the replica's `ORDER BY a, b COLLATE "C"`).
    ///
    /// # Panics
    ///
    /// When `keys` is empty.
    pub fn for_table_keys(
        database: &str,
        table: &str,
        keys: Vec<(String, MySqlKey)>,
        timestamp_column: &str,
        columns: Vec<(String, MySqlEncoder)>,
    ) -> Result<MySqlRowQuery, IdentifierError> {
        assert!(!keys.is_empty(), "a row query has at least one key column");
        let quote = quote_mysql_ident;
        let mut selected = Vec::with_capacity(keys.len() + columns.len());
        let mut order = Vec::with_capacity(keys.len());
        for (name, key) in &keys {
            let quoted = quote(name)?;
            order.push(match key {
                // Dates and date-times in time order (the session is UTC: a `timestamp` too).
                MySqlKey::Int | MySqlKey::Date | MySqlKey::DateAsTimestamp | MySqlKey::Timestamp => quoted.clone(),
                MySqlKey::Text | MySqlKey::PaddedChar => format!("CAST(CONVERT({quoted} USING utf8mb4) AS BINARY)"),
            });
            selected.push(quoted);
        }
        for (name, _) in &columns {
            selected.push(quote(name)?);
        }
        let mut head = format!("SELECT {}", selected.join(", "));
        let timestamp = quote(timestamp_column)?;
        head.push_str(&format!(" FROM {}.{} WHERE {timestamp} >= ", quote(database)?, quote(table)?));
        let parts = [head, format!(" AND {timestamp} < "), format!(" ORDER BY {}", order.join(", "))];
        let mut query = MySqlRowQuery {
            parts,
            select: String::new(),
            database: database.to_owned(),
            table: table.to_owned(),
            keys,
            columns,
        };
        query.select = query.sql_with_placeholders("?");
        Ok(query)
    }

    /// The `SELECT` with `?` for the window bounds.
    pub fn select_sql(&self) -> &str {
        &self.select
    }

    /// The `SELECT` with `placeholder` for each window bound (`%s`: PyMySQL's form).
    pub fn sql_with_placeholders(&self, placeholder: &str) -> String {
        let [head, middle, tail] = &self.parts;
        format!("{head}{placeholder}{middle}{placeholder}{tail}")
    }

    /// The database (MySQL's schema).
    pub fn database(&self) -> &str {
        &self.database
    }

    /// The table.
    pub fn table(&self) -> &str {
        &self.table
    }

    /// The encoders, in column order.
    pub fn encoders(&self) -> Vec<MySqlEncoder> {
        self.columns.iter().map(|(_, encoder)| *encoder).collect()
    }
}

/// What stops a MySQL reader: a flag it checks per row, and a `KILL QUERY` for its running
/// statement once it has a connection.
#[derive(Debug, Default)]
pub(super) struct MySqlStop {
    stopped: AtomicBool,
    canceller: Mutex<Option<MySqlCanceller>>,
}

impl MySqlStop {
    pub(super) fn stop(&self) {
        self.stopped.store(true, Ordering::Release);
        let canceller = self.canceller.lock().ok().and_then(|guard| guard.clone());
        if let Some(canceller) = canceller {
            // Not waited for: a server that stopped answering may not take the KILL QUERY's
            // connection either, and whoever stops the stream must not wait on it.
            let _ =
                std::thread::Builder::new().name("datadiff-mysql-cancel".to_owned()).spawn(move || canceller.cancel());
        }
    }

    fn is_stopped(&self) -> bool {
        self.stopped.load(Ordering::Acquire)
    }

    fn arm(&self, canceller: MySqlCanceller) {
        if let Ok(mut guard) = self.canceller.lock() {
            *guard = Some(canceller);
        }
    }
}

impl<'scope> RowStream<'scope> {
    /// Starts streaming `query` over `[start, end)` from a new thread of `scope`, on a MySQL
    /// session of its own to `config` (opened as [`MySqlSideSession::open`] opens one, with
    /// `statement_timeout`). Stopping it, or dropping it early, sends `KILL QUERY` for the
    /// running statement and drops the connection.
    pub fn mysql<'env>(
        scope: &'scope Scope<'scope, 'env>,
        config: MySqlSideConfig,
        statement_timeout: Duration,
        query: MySqlRowQuery,
        window: (DateTime<Utc>, DateTime<Utc>),
        options: StreamOptions,
    ) -> RowStream<'scope> {
        let role = config.side.to_string();
        let stop = Arc::new(MySqlStop::default());
        let reader_stop = Arc::clone(&stop);
        RowStream::start(scope, role, options, Stopper::MySql(stop), move |decoder, out| {
            read_mysql(&config, statement_timeout, &query, window, decoder, out, &reader_stop)
        })
    }
}

fn read_mysql(
    config: &MySqlSideConfig,
    statement_timeout: Duration,
    query: &MySqlRowQuery,
    (start, end): (DateTime<Utc>, DateTime<Utc>),
    decoder: &mut RowDecoder,
    out: &BatchOut,
    stop: &MySqlStop,
) -> Result<Flow, Error> {
    let role = config.side.to_string();
    let failed = |message: String| Error::MySql { role: role.clone(), message };
    let session = MySqlSideSession::open(config, statement_timeout).map_err(|error| failed(error.to_string()))?;
    let (mut conn, canceller) = session.into_stream().map_err(|error| failed(error.to_string()))?;
    stop.arm(canceller.clone());
    // While the merge waits for the other side, this reader stops reading and the server
    // cannot write: let it wait as long as the statement may run (its default is 60 s).
    let patience = (statement_timeout.as_secs().max(1) + crate::ANSWER_GRACE.as_secs()).min(31_536_000);
    conn.query_drop(format!("SET SESSION net_write_timeout = {patience}"))
        .map_err(|error| failed(format!("{role} row stream setup failed: {}", mysql_one_line(&error))))?;
    if stop.is_stopped() {
        return Ok(Flow::Stop);
    }
    let stream_failed = |error: &mysql::Error| failed(format!("{role} row stream failed: {}", mysql_one_line(error)));
    let mut result = match conn.exec_iter(query.select.as_str(), (bound(start), bound(end))) {
        Ok(result) => result,
        Err(_) if stop.is_stopped() => return Ok(Flow::Stop),
        Err(error) => return Err(stream_failed(&error)),
    };
    let decode_error =
        |column: &str, problem: DecodeError| Error::Decode { role: role.clone(), column: column.to_owned(), problem };
    let mut flow = Flow::Continue;
    for row in result.by_ref() {
        let row = match row {
            Ok(row) => row,
            Err(_) if stop.is_stopped() => {
                flow = Flow::Stop;
                break;
            }
            Err(error) => return Err(stream_failed(&error)),
        };
        let values = row.unwrap();
        if values.len() != query.keys.len() + query.columns.len() {
            return Err(decode_error(
                "row",
                DecodeError::ColumnCount {
                    found: values.len().saturating_sub(query.keys.len()),
                    expected: query.columns.len(),
                },
            ));
        }
        let (key_values, fields) = values.split_at(query.keys.len());
        let mut parts = Vec::with_capacity(query.keys.len());
        for ((column, form), value) in query.keys.iter().zip(key_values) {
            parts.push(match value {
                mysql::Value::NULL => return Err(Error::NullKey { role: role.clone(), column: column.clone() }),
                value => mysql_key(*form, value).map_err(|problem| decode_error(column, problem))?,
            });
        }
        let key = Key::from_parts(parts);
        let writer = decoder.writer();
        writer.begin_row();
        for ((name, encoder), value) in query.columns.iter().zip(fields) {
            write_field(writer, *encoder, value).map_err(|problem| decode_error(name, problem))?;
        }
        writer.end_row(key);
        if decoder.row_ended(out) == Flow::Stop || stop.is_stopped() {
            flow = Flow::Stop;
            break;
        }
    }
    if flow == Flow::Stop {
        // Dropping an unfinished result reads it to its end: end the statement first.
        canceller.cancel();
        drop(result);
        return Ok(Flow::Stop);
    }
    drop(result);
    Ok(decoder.flush_rows(out))
}

/// The key of a row.
fn mysql_key(key: MySqlKey, value: &mysql::Value) -> Result<Key, DecodeError> {
    match (key, value) {
        (MySqlKey::Int, mysql::Value::Int(n)) => Ok(Key::Int(*n)),
        (MySqlKey::Int, mysql::Value::UInt(n)) => {
            i64::try_from(*n).map(Key::Int).map_err(|_| DecodeError::KeyOutOfRange)
        }
        (MySqlKey::Text, mysql::Value::Bytes(bytes)) => {
            std::str::from_utf8(bytes).map(|text| Key::Text(text.to_owned())).map_err(|_| DecodeError::NotUtf8)
        }
        (MySqlKey::PaddedChar, mysql::Value::Bytes(bytes)) => std::str::from_utf8(bytes)
            .map(|text| Key::Text(text.trim_end_matches(' ').to_owned()))
            .map_err(|_| DecodeError::NotUtf8),
        // A zero date is no calendar date: an error naming the key column, as NULL is.
        (MySqlKey::Date, mysql::Value::Date(year, month, day, ..)) => {
            Ok(Key::Date(days_since_2000(*year, *month, *day)?))
        }
        (MySqlKey::DateAsTimestamp, mysql::Value::Date(year, month, day, ..)) => {
            Ok(Key::Timestamp(midnight_micros(*year, *month, *day)?))
        }
        (MySqlKey::Timestamp, mysql::Value::Date(year, month, day, hour, minute, second, micros)) => {
            Ok(Key::Timestamp(datetime_micros(*year, *month, *day, *hour, *minute, *second, *micros)?))
        }
        _ => Err(DecodeError::UnexpectedKeyKind(kind(value))),
    }
}

/// Writes one field (NULL, or the canonical encoding by `encoder`).
pub(crate) fn write_field(
    writer: &mut BatchWriter,
    encoder: MySqlEncoder,
    value: &mysql::Value,
) -> Result<(), DecodeError> {
    if is_null(encoder, value) {
        writer.null();
        return Ok(());
    }
    writer.field_with(|out| encode(encoder, value, out))
}

/// Whether a value counts as NULL: NULL, a zero date, an empty string under the opt-in
/// coercion.
fn is_null(encoder: MySqlEncoder, value: &mysql::Value) -> bool {
    use MySqlEncoder as E;
    match (encoder, value) {
        (_, mysql::Value::NULL) => true,
        (E::Date | E::DateAsTimestamp | E::Timestamp, mysql::Value::Date(_, month, day, ..)) => {
            *month == 0 || *day == 0
        }
        (E::TextEmptyAsNull, mysql::Value::Bytes(bytes)) => bytes.is_empty(),
        (E::PaddedCharEmptyAsNull, mysql::Value::Bytes(bytes)) => bytes.iter().all(|&byte| byte == b' '),
        _ => false,
    }
}

fn kind(value: &mysql::Value) -> &'static str {
    match value {
        mysql::Value::NULL => "NULL",
        mysql::Value::Bytes(_) => "bytes",
        mysql::Value::Int(_) => "integer",
        mysql::Value::UInt(_) => "unsigned integer",
        mysql::Value::Float(_) => "float",
        mysql::Value::Double(_) => "double",
        mysql::Value::Date(..) => "date",
        mysql::Value::Time(..) => "time",
    }
}

/// Appends the canonical encoding of a non-NULL value. The error text never holds the value.
pub(crate) fn encode(encoder: MySqlEncoder, value: &mysql::Value, out: &mut Vec<u8>) -> Result<(), DecodeError> {
    use MySqlEncoder as E;
    use mysql::Value as V;
    use std::io::Write as _;
    let unexpected = || DecodeError::UnexpectedValueKind { found: kind(value), planned: format!("{encoder:?}") };
    match (encoder, value) {
        (E::Int, V::Int(n)) => out.extend_from_slice(&n.to_be_bytes()),
        (E::Int, V::UInt(n)) => match i64::try_from(*n) {
            Ok(n) => out.extend_from_slice(&n.to_be_bytes()),
            // Beyond every replica integer: nine bytes, never equal to an eight-byte value.
            Err(_) => {
                out.push(1);
                out.extend_from_slice(&n.to_be_bytes());
            }
        },
        (E::IntAsDecimal, V::Int(n)) => {
            let _ = write!(out, "{n}");
        }
        (E::IntAsDecimal, V::UInt(n)) => {
            let _ = write!(out, "{n}");
        }
        (E::Decimal | E::IntAsDecimal, V::Bytes(text)) => decimal_text(text, out)?,
        (E::IntAsDouble, V::Int(n)) => out.extend_from_slice(&decoder::canonical_bits(*n as f64).to_be_bytes()),
        (E::IntAsDouble, V::UInt(n)) => out.extend_from_slice(&decoder::canonical_bits(*n as f64).to_be_bytes()),
        (E::IntAsReal, V::Int(n)) => {
            out.extend_from_slice(&decoder::canonical_bits(f64::from(*n as f32)).to_be_bytes());
        }
        (E::IntAsReal, V::UInt(n)) => {
            out.extend_from_slice(&decoder::canonical_bits(f64::from(*n as f32)).to_be_bytes());
        }
        (E::DecimalAsDouble | E::DecimalAsReal, V::Bytes(text)) => {
            let text = std::str::from_utf8(text).map_err(|_| DecodeError::Unreadable("decimal"))?;
            let width =
                if encoder == E::DecimalAsReal { decoder::FloatWidth::Real } else { decoder::FloatWidth::Double };
            out.extend_from_slice(&decoder::canonical_bits(decoder::parse_float(text, width)?).to_be_bytes());
        }
        (E::Double, V::Double(f)) => out.extend_from_slice(&decoder::canonical_bits(*f).to_be_bytes()),
        (E::Double | E::Real, V::Float(f)) => {
            out.extend_from_slice(&decoder::canonical_bits(f64::from(*f)).to_be_bytes());
        }
        (E::Real, V::Double(f)) => {
            out.extend_from_slice(&decoder::canonical_bits(f64::from(*f as f32)).to_be_bytes());
        }
        (E::Text | E::TextEmptyAsNull, V::Bytes(bytes)) => out.extend_from_slice(bytes),
        (E::PaddedChar | E::PaddedCharEmptyAsNull, V::Bytes(bytes)) => {
            let end = bytes.iter().rposition(|&byte| byte != b' ').map_or(0, |at| at + 1);
            out.extend_from_slice(&bytes[..end]);
        }
        (E::Bool, V::Int(n)) => out.push(u8::from(*n != 0)),
        (E::Bool, V::UInt(n)) => out.push(u8::from(*n != 0)),
        (E::Bool, V::Bytes(bits)) => out.push(u8::from(bits.iter().any(|&byte| byte != 0))),
        (E::Date, V::Date(year, month, day, ..)) => {
            let days = days_since_2000(*year, *month, *day)?;
            out.extend_from_slice(&days.to_be_bytes());
        }
        (E::DateAsTimestamp, V::Date(year, month, day, ..)) => {
            out.extend_from_slice(&midnight_micros(*year, *month, *day)?.to_be_bytes());
        }
        (E::Timestamp, V::Date(year, month, day, hour, minute, second, micros)) => {
            let micros = datetime_micros(*year, *month, *day, *hour, *minute, *second, *micros)?;
            out.extend_from_slice(&micros.to_be_bytes());
        }
        (E::Time, V::Time(negative, days, hours, minutes, seconds, micros)) => {
            let micros = time_micros(*negative, *days, *hours, *minutes, *seconds, *micros);
            out.extend_from_slice(&micros.to_be_bytes());
        }
        (E::Bytes, V::Bytes(bytes)) => out.extend_from_slice(bytes),
        (E::HexText { trim }, V::Bytes(bytes)) => {
            let end = if trim { bytes.iter().rposition(|&byte| byte != 0).map_or(0, |at| at + 1) } else { bytes.len() };
            const HEX: &[u8; 16] = b"0123456789ABCDEF";
            for byte in &bytes[..end] {
                out.push(HEX[usize::from(byte >> 4)]);
                out.push(HEX[usize::from(byte & 0x0f)]);
            }
        }
        _ => return Err(unexpected()),
    }
    Ok(())
}

const DAY_MICROS: i64 = 86_400_000_000;

/// A MySQL `TIME` in microseconds (negative and beyond a day allowed, as MySQL's range is).
fn time_micros(negative: bool, days: u32, hours: u8, minutes: u8, seconds: u8, micros: u32) -> i64 {
    let total = ((i64::from(days) * 24 + i64::from(hours)) * 60 + i64::from(minutes)) * 60 + i64::from(seconds);
    let micros = total * 1_000_000 + i64::from(micros);
    if negative { -micros } else { micros }
}

/// Microseconds from 2000-01-01 00:00 (PostgreSQL's epoch) to a date-time read as UTC.
fn datetime_micros(
    year: u16,
    month: u8,
    day: u8,
    hour: u8,
    minute: u8,
    second: u8,
    micros: u32,
) -> Result<i64, DecodeError> {
    let midnight = midnight_micros(year, month, day)?;
    if hour > 23 || minute > 59 || second > 59 || micros > 999_999 {
        return Err(DecodeError::OutOfRange("time of day"));
    }
    let seconds = (i64::from(hour) * 60 + i64::from(minute)) * 60 + i64::from(second);
    Ok(midnight + seconds * 1_000_000 + i64::from(micros))
}

/// Microseconds from 2000-01-01 00:00 to a calendar date's midnight (PostgreSQL's binary
/// timestamp of the date).
fn midnight_micros(year: u16, month: u8, day: u8) -> Result<i64, DecodeError> {
    Ok(i64::from(days_since_2000(year, month, day)?) * DAY_MICROS)
}

/// Days from 2000-01-01 (PostgreSQL's epoch) to a calendar date.
fn days_since_2000(year: u16, month: u8, day: u8) -> Result<i32, DecodeError> {
    let date = NaiveDate::from_ymd_opt(i32::from(year), u32::from(month), u32::from(day))
        .ok_or(DecodeError::NotACalendarDate)?;
    let epoch = NaiveDate::from_ymd_opt(2000, 1, 1).unwrap_or_default();
    i32::try_from(date.signed_duration_since(epoch).num_days()).map_err(|_| DecodeError::OutOfRange("date"))
}

/// MySQL's decimal text (`-0012.3400`) as normalised decimal text, as
/// [`Decoder::Numeric`] encodes a numeric.
fn decimal_text(text: &[u8], out: &mut Vec<u8>) -> Result<(), DecodeError> {
    let unreadable = || DecodeError::Unreadable("decimal");
    let (negative, unsigned) = match text.split_first() {
        Some((b'-', rest)) => (true, rest),
        Some((b'+', rest)) => (false, rest),
        _ => (false, text),
    };
    let (integer, fraction) = match unsigned.iter().position(|&byte| byte == b'.') {
        Some(at) => (&unsigned[..at], &unsigned[at + 1..]),
        None => (unsigned, &[][..]),
    };
    if integer.is_empty() && fraction.is_empty() || !integer.iter().chain(fraction).all(u8::is_ascii_digit) {
        return Err(unreadable());
    }
    let mut digits = Vec::with_capacity(integer.len() + fraction.len());
    digits.extend_from_slice(integer);
    digits.extend_from_slice(fraction);
    decoder::write_decimal(negative, &digits, integer.len(), out);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use mysql::Value as V;

    fn encoded(encoder: MySqlEncoder, value: V) -> Vec<u8> {
        let mut out = Vec::new();
        encode(encoder, &value, &mut out).unwrap();
        out
    }

    fn pg(decoder: Decoder, field: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        decoder.encode(field, &mut out, &mut Vec::new()).unwrap();
        out
    }

    fn catalog(name: &str, data_type: &str, column_type: &str, scale: Option<i32>) -> MySqlColumnType {
        MySqlColumnType::of(&CatalogColumn {
            name: name.into(),
            data_type: data_type.into(),
            udt_name: Some(column_type.into()),
            numeric_precision: None,
            numeric_scale: scale,
            datetime_precision: None,
            nullable: true,
        })
    }

    fn replica(name: &str, type_name: &str, family: Family) -> ColumnType {
        ColumnType { name: name.into(), type_name: type_name.into(), family }
    }

    /// PostgreSQL's binary numeric for decimal text (base-10000 groups).
    fn numeric_field(text: &str) -> Vec<u8> {
        let negative = text.starts_with('-');
        let text = text.trim_start_matches('-');
        let (integer, fraction) = text.split_once('.').unwrap_or((text, ""));
        let integer = integer.trim_start_matches('0');
        let pad_left = (4 - integer.len() % 4) % 4;
        let pad_right = (4 - fraction.len() % 4) % 4;
        let digits = format!("{}{integer}{fraction}{}", "0".repeat(pad_left), "0".repeat(pad_right));
        let groups: Vec<u16> =
            digits.as_bytes().chunks(4).map(|c| std::str::from_utf8(c).unwrap().parse().unwrap()).collect();
        let weight = ((pad_left + integer.len()) / 4) as i16 - 1;
        let mut bytes = Vec::new();
        bytes.extend((groups.len() as u16).to_be_bytes());
        bytes.extend(weight.to_be_bytes());
        bytes.extend(if negative { 0x4000u16 } else { 0 }.to_be_bytes());
        bytes.extend((fraction.len() as u16).to_be_bytes());
        for group in groups {
            bytes.extend(group.to_be_bytes());
        }
        bytes
    }

    #[test]
    fn decimals_lose_their_scale_and_sign_of_zero() {
        let text = |value: &str| String::from_utf8(encoded(MySqlEncoder::Decimal, V::Bytes(value.into()))).unwrap();
        assert_eq!(text("12.50"), "12.5");
        assert_eq!(text("-0.00"), "0");
        assert_eq!(text("0.05"), "0.05");
        assert_eq!(text("-0012.3400"), "-12.34");
        assert_eq!(text("100"), "100");
        assert_eq!(text("9999999999.99"), "9999999999.99");
        let mut out = Vec::new();
        assert!(encode(MySqlEncoder::Decimal, &V::Bytes(b"1e5".to_vec()), &mut out).is_err());
        // The same bytes as the replica's numeric(…) of the same value, any declared scale.
        assert_eq!(
            encoded(MySqlEncoder::Decimal, V::Bytes(b"12.50".to_vec())),
            pg(Decoder::Numeric, &numeric_field("12.5000"))
        );
    }

    #[test]
    fn unsigned_bigint_max_is_exact_as_decimal_and_never_a_bigint() {
        let max = V::UInt(u64::MAX);
        assert_eq!(encoded(MySqlEncoder::IntAsDecimal, max.clone()), b"18446744073709551615");
        assert_eq!(
            encoded(MySqlEncoder::IntAsDecimal, max.clone()),
            pg(Decoder::Numeric, &numeric_field("18446744073709551615"))
        );
        // Against a bigint replica no eight-byte value equals it.
        assert_eq!(encoded(MySqlEncoder::Int, max).len(), 9);
        assert_eq!(encoded(MySqlEncoder::Int, V::UInt(7)), pg(Decoder::Int, &7i16.to_be_bytes()));
        assert_eq!(encoded(MySqlEncoder::Int, V::Int(-1)), pg(Decoder::Int, &(-1i32).to_be_bytes()));
    }

    #[test]
    fn datetimes_keep_their_microseconds_as_utc_wall_time() {
        // 2026-07-22 12:15:00.123456 is day 9699 after 2000-01-01.
        let micros = 9699i64 * DAY_MICROS + (12 * 3600 + 15 * 60) * 1_000_000 + 123_456;
        let value = V::Date(2026, 7, 22, 12, 15, 0, 123_456);
        assert_eq!(encoded(MySqlEncoder::Timestamp, value), pg(Decoder::Timestamp, &micros.to_be_bytes()));
        assert_eq!(encoded(MySqlEncoder::Date, V::Date(2026, 7, 22, 0, 0, 0, 0)), 9699i32.to_be_bytes());
        assert_eq!(
            encoded(MySqlEncoder::DateAsTimestamp, V::Date(2026, 7, 22, 0, 0, 0, 0)),
            pg(Decoder::DateAsTimestamp, &9699i32.to_be_bytes())
        );
        assert_eq!(encoded(MySqlEncoder::Date, V::Date(1000, 1, 1, 0, 0, 0, 0)), (-365_242i32).to_be_bytes());
        let mut out = Vec::new();
        assert!(encode(MySqlEncoder::Timestamp, &V::Date(2026, 2, 30, 0, 0, 0, 0), &mut out).is_err());
    }

    #[test]
    fn zero_dates_are_null_and_other_values_are_not() {
        assert!(is_null(MySqlEncoder::Timestamp, &V::Date(0, 0, 0, 0, 0, 0, 0)));
        assert!(is_null(MySqlEncoder::Date, &V::Date(2026, 0, 1, 0, 0, 0, 0)));
        assert!(is_null(MySqlEncoder::DateAsTimestamp, &V::Date(2026, 7, 0, 0, 0, 0, 0)));
        assert!(!is_null(MySqlEncoder::Date, &V::Date(2026, 7, 1, 0, 0, 0, 0)));
        assert!(!is_null(MySqlEncoder::Text, &V::Bytes(Vec::new())), "exact by default");
        assert!(is_null(MySqlEncoder::TextEmptyAsNull, &V::Bytes(Vec::new())));
        assert!(is_null(MySqlEncoder::PaddedCharEmptyAsNull, &V::Bytes(b"  ".to_vec())));
    }

    #[test]
    fn times_beyond_a_day_are_kept_and_never_equal_a_replica_time() {
        // 838:59:59, MySQL's largest TIME: beyond any PostgreSQL time (at most 24:00:00).
        let value = V::Time(false, 34, 22, 59, 59, 0);
        let micros = 838i64 * 3_600_000_000 + 59 * 60_000_000 + 59_000_000;
        assert_eq!(encoded(MySqlEncoder::Time, value), micros.to_be_bytes());
        assert!(micros > 24 * 3_600_000_000);
        let negative = V::Time(true, 0, 1, 0, 0, 0);
        assert_eq!(encoded(MySqlEncoder::Time, negative), (-3_600_000_000i64).to_be_bytes());
        let noon = V::Time(false, 0, 12, 34, 56, 500_000);
        let micros = ((12i64 * 60 + 34) * 60 + 56) * 1_000_000 + 500_000;
        assert_eq!(encoded(MySqlEncoder::Time, noon), pg(Decoder::Time, &micros.to_be_bytes()));
    }

    #[test]
    fn binary_strings_compare_as_bytes_or_as_tap_mysqls_hex() {
        assert_eq!(encoded(MySqlEncoder::Bytes, V::Bytes(vec![0, 255])), pg(Decoder::Bytes, &[0, 255]));
        assert_eq!(encoded(MySqlEncoder::HexText { trim: true }, V::Bytes(vec![0xab, 1, 0, 0])), b"AB01");
        assert_eq!(encoded(MySqlEncoder::HexText { trim: false }, V::Bytes(vec![0xab, 0])), b"AB00");
        assert_eq!(encoded(MySqlEncoder::Bool, V::Bytes(vec![1])), pg(Decoder::Bool, &[1]));
        assert_eq!(encoded(MySqlEncoder::Bool, V::Int(2)), pg(Decoder::Bool, &[1]));
    }

    #[test]
    fn pairs_follow_the_postgresql_direction_rules_and_name_the_column() {
        let plan =
            |source: &MySqlColumnType, target: &ColumnType| plan_mysql_pair(source, target, "target", Coercions::NONE);
        let cents = catalog("Amount", "decimal", "decimal(12,2)", Some(2));
        let double = replica("amount", "double precision", Family::Float8);
        assert_eq!(plan(&cents, &double).unwrap(), (MySqlEncoder::DecimalAsDouble, Decoder::Float));
        let numeric = replica("amount", "numeric", Family::Numeric { scale: None });
        assert_eq!(plan(&cents, &numeric).unwrap(), (MySqlEncoder::Decimal, Decoder::Numeric));
        let flag = catalog("Active", "tinyint", "tinyint(1)", None);
        assert_eq!(plan(&flag, &replica("active", "boolean", Family::Bool)).unwrap().1, Decoder::Bool);
        let float = catalog("Ratio", "float", "float", None);
        assert_eq!(plan(&float, &numeric).unwrap(), (MySqlEncoder::Real, Decoder::NumericAsReal));
        // No replica decoder of a MySQL pair is a wire one that depends on the source's width.
        assert!(
            !plan(&catalog("n", "int", "int(11)", None), &replica("n", "bigint", Family::Integer)).unwrap().1.is_wire()
        );

        let doc = catalog("Doc", "json", "json", None);
        assert_eq!(
            plan(&doc, &replica("doc", "jsonb", Family::Unsupported)).unwrap_err().to_string(),
            "column Doc has type json on the source database, which datadiff cannot compare \
             (json on the source, jsonb on the target)"
        );
        let day = catalog("Day", "date", "date", None);
        assert_eq!(
            plan(&day, &replica("day", "boolean", Family::Bool)).unwrap_err().to_string(),
            "column Day cannot be compared: date on the source, boolean on the target"
        );
        let text = catalog("Note", "varchar", "varchar(20)", None);
        let coerced = plan_mysql_pair(
            &text,
            &replica("note", "text", Family::Text),
            "target",
            Coercions::NONE.empty_string_as_null(true),
        );
        assert_eq!(coerced.unwrap(), (MySqlEncoder::TextEmptyAsNull, Decoder::TextEmptyAsNull));
    }

    #[test]
    fn text_keys_are_ordered_bytewise_and_integer_keys_by_the_column() {
        let query = MySqlRowQuery::for_table(
            "shop",
            "Words",
            "Word",
            MySqlKey::Text,
            "UpdatedAt",
            vec![("UpdatedAt".into(), MySqlEncoder::Timestamp), ("No`te".into(), MySqlEncoder::Text)],
        )
        .unwrap();
        assert_eq!(
            query.select_sql(),
            "SELECT `Word`, `UpdatedAt`, `No``te` FROM `shop`.`Words` WHERE `UpdatedAt` >= ? AND `UpdatedAt` < ? \
             ORDER BY CAST(CONVERT(`Word` USING utf8mb4) AS BINARY)"
        );
        let query = MySqlRowQuery::for_table("shop", "T", "Id", MySqlKey::Int, "ts", vec![]).unwrap();
        assert!(query.select_sql().ends_with("ORDER BY `Id`"));
        // A composite key: every key column first, ordered in turn, text parts bytewise.
        let keys = vec![("Code".to_owned(), MySqlKey::Text), ("Line".to_owned(), MySqlKey::Int)];
        let query =
            MySqlRowQuery::for_table_keys("shop", "Links", keys, "ts", vec![("Note".into(), MySqlEncoder::Text)])
                .unwrap();
        assert_eq!(
            query.select_sql(),
            "SELECT `Code`, `Line`, `Note` FROM `shop`.`Links` WHERE `ts` >= ? AND `ts` < ? \
             ORDER BY CAST(CONVERT(`Code` USING utf8mb4) AS BINARY), `Line`"
        );
        assert_eq!(mysql_key(MySqlKey::Int, &V::UInt(5)), Ok(Key::Int(5)));
        assert!(mysql_key(MySqlKey::Int, &V::UInt(u64::MAX)).is_err());
        let key =
            plan_mysql_key(&catalog("id", "int", "int(11)", None), &replica("id", "text", Family::Text), "target");
        assert!(key.is_err());
    }

    #[test]
    fn date_and_datetime_keys_meet_the_replica_keys_of_the_same_day_or_instant() {
        let day = catalog("Day", "date", "date", None);
        let at = catalog("At", "datetime", "datetime(6)", None);
        let naive = replica("day", "timestamp without time zone", Family::Timestamp);
        let date = replica("day", "date", Family::Date);
        assert_eq!(plan_mysql_key(&day, &date, "target").unwrap(), (MySqlKey::Date, KeyDecoder::Date));
        assert_eq!(plan_mysql_key(&day, &naive, "target").unwrap(), (MySqlKey::DateAsTimestamp, KeyDecoder::Timestamp));
        assert_eq!(plan_mysql_key(&at, &date, "target").unwrap(), (MySqlKey::Timestamp, KeyDecoder::DateAsTimestamp));
        assert!(plan_mysql_key(&day, &replica("day", "integer", Family::Integer), "target").is_err());
        // 2026-07-22 is day 9,699 after 2000-01-01; the replica's binary forms decode to the same keys.
        let replica_day = KeyDecoder::Date.decode(&9_699i32.to_be_bytes()).unwrap();
        assert_eq!(mysql_key(MySqlKey::Date, &V::Date(2026, 7, 22, 0, 0, 0, 0)), Ok(replica_day));
        let midnight = KeyDecoder::Timestamp.decode(&(9_699i64 * 86_400_000_000).to_be_bytes()).unwrap();
        assert_eq!(mysql_key(MySqlKey::DateAsTimestamp, &V::Date(2026, 7, 22, 0, 0, 0, 0)), Ok(midnight));
        let instant = 9_699i64 * 86_400_000_000 + 44_100_000_123;
        let replica_instant = KeyDecoder::TimestampTz.decode(&instant.to_be_bytes()).unwrap();
        assert_eq!(mysql_key(MySqlKey::Timestamp, &V::Date(2026, 7, 22, 12, 15, 0, 123)), Ok(replica_instant));
        // A zero date is no key.
        assert_eq!(mysql_key(MySqlKey::Date, &V::Date(0, 0, 0, 0, 0, 0, 0)), Err(DecodeError::NotACalendarDate));
        let keys = vec![("Day".to_owned(), MySqlKey::Date), ("Store".to_owned(), MySqlKey::Int)];
        let query = MySqlRowQuery::for_table_keys("shop", "Facts", keys, "ts", vec![]).unwrap();
        assert!(query.select_sql().ends_with("ORDER BY `Day`, `Store`"), "{}", query.select_sql());
    }

    proptest::proptest! {
        /// A MySQL value and the same value in the replica's binary form encode to the same
        /// bytes, and different values to different bytes.
        #[test]
        fn integers_encode_as_the_replica_decodes(a in proptest::num::i64::ANY, b in proptest::num::i64::ANY) {
            proptest::prop_assert_eq!(encoded(MySqlEncoder::Int, V::Int(a)), pg(Decoder::Int, &a.to_be_bytes()));
            proptest::prop_assert_eq!(
                encoded(MySqlEncoder::IntAsDecimal, V::Int(a)),
                pg(Decoder::Numeric, &numeric_field(&a.to_string()))
            );
            let same = encoded(MySqlEncoder::Int, V::Int(a)) == pg(Decoder::Int, &b.to_be_bytes());
            proptest::prop_assert_eq!(a == b, same);
        }

        #[test]
        fn decimals_encode_as_the_replica_decodes(
            integer in "[0-9]{1,20}",
            fraction in "[0-9]{0,12}",
            negative in proptest::bool::ANY,
            replica_zeros in 0usize..4,
        ) {
            let sign = if negative { "-" } else { "" };
            let source =
                if fraction.is_empty() { format!("{sign}{integer}") } else { format!("{sign}{integer}.{fraction}") };
            // The replica holds the same value at another scale.
            let target = format!("{sign}{integer}.{fraction}{}", "0".repeat(replica_zeros));
            let target = target.trim_end_matches('.');
            proptest::prop_assert_eq!(
                encoded(MySqlEncoder::Decimal, V::Bytes(source.into_bytes())),
                pg(Decoder::Numeric, &numeric_field(target))
            );
        }

        #[test]
        fn floats_encode_as_the_replica_decodes(value in proptest::num::f64::ANY, real in proptest::num::f32::ANY) {
            proptest::prop_assert_eq!(
                encoded(MySqlEncoder::Double, V::Double(value)),
                pg(Decoder::Float, &value.to_be_bytes())
            );
            proptest::prop_assert_eq!(
                encoded(MySqlEncoder::Real, V::Float(real)),
                pg(Decoder::FloatAsReal, &f64::from(real).to_be_bytes())
            );
            proptest::prop_assert_eq!(
                encoded(MySqlEncoder::Real, V::Float(real)),
                pg(Decoder::Float, &real.to_be_bytes())
            );
        }

        #[test]
        fn datetimes_encode_as_the_replica_decodes(
            // MySQL's datetime range: 1000-01-01 to 9999-12-31.
            seconds in -30_610_224_000i64..253_402_300_800,
            micros in 0u32..1_000_000,
            time in 0i64..86_400_000_000,
        ) {
            let at = DateTime::from_timestamp(seconds, micros * 1000).unwrap().naive_utc();
            use chrono::{Datelike, Timelike};
            let value = V::Date(
                at.year() as u16, at.month() as u8, at.day() as u8, at.hour() as u8, at.minute() as u8,
                at.second() as u8, micros,
            );
            let since_2000 = at.and_utc().timestamp_micros() - 946_684_800_000_000;
            proptest::prop_assert_eq!(
                encoded(MySqlEncoder::Timestamp, value),
                pg(Decoder::Timestamp, &since_2000.to_be_bytes())
            );
            let days = (at.date() - NaiveDate::from_ymd_opt(2000, 1, 1).unwrap()).num_days() as i32;
            let date = V::Date(at.year() as u16, at.month() as u8, at.day() as u8, 0, 0, 0, 0);
            proptest::prop_assert_eq!(
                encoded(MySqlEncoder::Date, date.clone()),
                pg(Decoder::Date, &days.to_be_bytes())
            );
            proptest::prop_assert_eq!(
                encoded(MySqlEncoder::DateAsTimestamp, date),
                pg(Decoder::Timestamp, &(i64::from(days) * DAY_MICROS).to_be_bytes())
            );
            let clock = V::Time(
                false,
                0,
                (time / 3_600_000_000) as u8,
                (time / 60_000_000 % 60) as u8,
                (time / 1_000_000 % 60) as u8,
                (time % 1_000_000) as u32,
            );
            proptest::prop_assert_eq!(encoded(MySqlEncoder::Time, clock), pg(Decoder::Time, &time.to_be_bytes()));
        }
    }
}
