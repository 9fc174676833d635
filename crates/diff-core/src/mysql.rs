//! PipelineWise's SQL for a **MySQL or MariaDB source** (`tap-mysql`), as pure functions: the
//! dialect counterpart of [`MetricQuery`], [`MinimumQuery`](crate::query::MinimumQuery)
//! and [`ChecksumPlan::postgres_expression`] (config note §2.1, §2.4, §3.2, §3.3, §5.3).
//!
//! # The forms
//!
//! * Identifiers: backticks, every backtick inside doubled ([`quote_mysql_ident`]); empty and
//!   NUL names rejected with PipelineWise's text, as on PostgreSQL.
//! * Columns: [`COLUMNS_QUERY`] reads `information_schema.COLUMNS` with `COLUMN_TYPE` in the
//!   `udt_name` slot, so a `tinyint(1)` is a boolean ([`lookup_name`](crate::family::lookup_name)).
//! * Aggregates: [`MetricQuery`], the same expressions as on PostgreSQL with backtick
//!   aliases; `row_checksum` by [`ChecksumPlan::mysql_expression`]:
//!
//!   | kind | text of `c` |
//!   |---|---|
//!   | string | `CAST(c AS CHAR)` |
//!   | exact_numeric | `CAST(CAST(ROUND(c * 10^scale, 0) AS DECIMAL(38, 0)) AS CHAR)` |
//!   | boolean | `IF(c IS NULL, NULL, IF(c, '1', '0'))` |
//!   | timestamp | `DATE_FORMAT(c, '%Y-%m-%d %H:%i:%s.%f')` (session time zone UTC) |
//!   | time | `DATE_FORMAT(c, '%H:%i:%s.%f')` |
//!   | binary | `LOWER(HEX(c))` |
//!
//!   hashed per field and per row exactly as on PostgreSQL, the row's integer being
//!   `CAST(CONV(SUBSTRING(MD5(payload), 21), 16, 10) AS DECIMAL(38, 0)) - 140737488355327`.
//!   The cast comes before the subtraction: `CONV` returns a string, and string minus number
//!   is a DOUBLE in MySQL, whose `SUM` would lose integer precision. Every kind renders the
//!   same text PostgreSQL's form renders for the replicated value, so identical rows give an
//!   identical sum on both sides.
//! * Preflight: indexes from `information_schema.STATISTICS` ([`index_query`],
//!   [`indexes_from_statistics`]) — usable when `BTREE`, without a prefix length (`SUB_PART`)
//!   and not hidden; hidden is `IS_VISIBLE = 'NO'` (MySQL 8) or `IGNORED = 'YES'` (MariaDB
//!   10.6+), whichever column [`VISIBILITY_PROBE_QUERY`] finds, probed once per connection
//!   ([`VisibilityProbe`]); with neither (MySQL 5.7, older MariaDB) nothing is hidden. The
//!   bounded count is [`bounded_count_sql`].
//! * TLS ([`MySqlTls`]): opportunistic and unverified unless the tap sets `ssl: "true"` or an
//!   `ssl_ca`, then verified, with `ssl_cert` and `ssl_key` only together.
//! * Session ([`session_statements`]): `SET SESSION time_zone = '+00:00'`, the statement
//!   timeout of the [`MySqlEngine`] — `max_statement_time` in seconds on MariaDB,
//!   `max_execution_time` in milliseconds on MySQL, chosen by the tap's `engine` setting when
//!   present, else by the server's version string — then `START TRANSACTION READ ONLY`.
//!
//! # Placeholders and `%`
//!
//! [`MySqlPlaceholders::Question`] is the form to execute: `?` parameters (server-side
//! prepared statements) and single `%` in `DATE_FORMAT`. [`MySqlPlaceholders::Pyformat`] is
//! the text PipelineWise hands PyMySQL, which interpolates parameters client-side: `%s`
//! parameters and every `DATE_FORMAT` specifier doubled (`%%Y`), so that interpolation turns
//! it into the single `%Y` MySQL must receive. It is the text whose SHA-256 is the preflight
//! `query_fingerprint`. Identifiers are written as they are in both forms (upstream does not
//! double a `%` in a name either).
//!
//! # MySQL 8 without a live server
//!
//! The tests run against MariaDB only (Oracle's MySQL 8 is not in Debian). What differs on
//! MySQL 8 is handled by rules tested here without a server: the timeout variable and unit
//! ([`MySqlEngine`], detected from a version string without `MariaDB` such as `8.0.39`); the
//! `IS_VISIBLE` column and its opposite sense; `COLUMN_TYPE` still spelling `tinyint(1)` after
//! 8.0.19 dropped other integer display widths (so booleans are still recognised, while
//! `int(11)` becomes `int` — which no rule reads). The aggregate SQL uses only functions both
//! servers share (`MD5`, `CONV`, `DATE_FORMAT`, `HEX`, `IF`, `CAST ... AS DECIMAL/CHAR`).

use crate::checksum::{CHECKSUM_OFFSET, ChecksumColumn, ChecksumKind, ChecksumPlan, power_of_ten};
use crate::query::{IdentifierError, MetricQuery, QueryError};
use crate::{Side, check::CheckType};

/// Quotes a MySQL identifier: wrapped in backticks, every backtick inside doubled
/// (``order`items`` → ``` `order``items` ```). Empty names and names containing NUL are
/// rejected, as on PostgreSQL.
pub fn quote_mysql_ident(name: &str) -> Result<String, IdentifierError> {
    if name.is_empty() || name.contains('\0') {
        return Err(IdentifierError);
    }
    Ok(format!("`{}`", name.replace('`', "``")))
}

/// `` `schema`.`table` `` (a MySQL "schema" is a database).
pub fn mysql_qualified_table(schema: &str, table: &str) -> Result<String, IdentifierError> {
    Ok(format!("{}.{}", quote_mysql_ident(schema)?, quote_mysql_ident(table)?))
}

/// How bind parameters, and the `%` of `DATE_FORMAT` specifiers, are written (see the module
/// docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MySqlPlaceholders {
    /// `?` and `%Y`: the form to execute.
    Question,
    /// `%s` and `%%Y`: PipelineWise's text for PyMySQL, the form it fingerprints.
    Pyformat,
}

impl MySqlPlaceholders {
    fn parameter(self) -> &'static str {
        match self {
            MySqlPlaceholders::Question => "?",
            MySqlPlaceholders::Pyformat => "%s",
        }
    }

    /// A `DATE_FORMAT` format with its specifiers written for this form (`%` doubled for
    /// [`Pyformat`](MySqlPlaceholders::Pyformat)).
    fn format(self, format: &str) -> String {
        match self {
            MySqlPlaceholders::Question => format.to_owned(),
            MySqlPlaceholders::Pyformat => format.replace('%', "%%"),
        }
    }
}

/// The column lookup, two `?` parameters (schema, table). Its columns, in order, carry
/// upstream's aliases: `column_name`, `data_type`, `udt_name` (MySQL's `COLUMN_TYPE`, e.g.
/// `tinyint(1)`, `decimal(12,2)`), `numeric_precision`, `numeric_scale`,
/// `datetime_precision`, `character_maximum_length`, `is_nullable` (`YES`/`NO`). Numbers are
/// unsigned integers or NULL. Rows come in column order (upstream leaves the order to the
/// server; nothing depends on it but a deterministic evidence order).
pub const COLUMNS_QUERY: &str = "\
SELECT COLUMN_NAME AS column_name, DATA_TYPE AS data_type, COLUMN_TYPE AS udt_name,
       NUMERIC_PRECISION AS numeric_precision, NUMERIC_SCALE AS numeric_scale,
       DATETIME_PRECISION AS datetime_precision,
       CHARACTER_MAXIMUM_LENGTH AS character_maximum_length, IS_NULLABLE AS is_nullable
  FROM information_schema.COLUMNS
 WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?
 ORDER BY ORDINAL_POSITION";

impl MetricQuery<'_> {
    /// The SQL text of this aggregate query for a MySQL or MariaDB source (upstream's MySQL
    /// form; [`MetricQuery::sql`] is the PostgreSQL one):
    ///
    /// ```text
    /// SELECT <expr> AS `<check>`, … FROM `<schema>`.`<table>` WHERE `<ts>` >= ? AND `<ts>` < ?
    /// ```
    ///
    /// The expressions are PostgreSQL's with backticks, and `row_checksum` is
    /// [`ChecksumPlan::mysql_expression`]. NULL timestamps fall out of the window because
    /// comparisons with NULL are not true. A MySQL table is only ever a source, so there is no
    /// soft-delete predicate (`soft_delete_column` is not read). Bind the bounds as naive UTC
    /// values: the session's time zone is UTC, so a `TIMESTAMP` column compares in UTC and a
    /// `DATETIME` column holds UTC wall time.
    pub fn mysql_sql(&self, placeholders: MySqlPlaceholders) -> Result<String, QueryError> {
        let key = quote_mysql_ident(self.key_column)?;
        let mut expressions = Vec::with_capacity(self.metrics.len());
        for &check in self.metrics {
            let expression = match check {
                CheckType::SchemaCompatibility => return Err(QueryError::NotAMetric(check)),
                CheckType::RowChecksum => self
                    .checksum
                    .ok_or(QueryError::ChecksumWithoutColumns)?
                    .mysql_expression(self.side, placeholders)?,
                CheckType::RowCount => "COUNT(*)".to_owned(),
                CheckType::DistinctKeyCount => format!("COUNT(DISTINCT {key})"),
                CheckType::NullKeyCount => format!("COUNT(*) - COUNT({key})"),
                CheckType::DuplicateKeyCount => format!("COUNT({key}) - COUNT(DISTINCT {key})"),
                CheckType::MinKey => format!("MIN({key})"),
                CheckType::MaxKey => format!("MAX({key})"),
            };
            expressions.push(format!("{expression} AS {}", quote_mysql_ident(check.as_str())?));
        }
        let timestamp = quote_mysql_ident(self.timestamp_column)?;
        let parameter = placeholders.parameter();
        Ok(format!(
            "SELECT {} FROM {} WHERE {timestamp} >= {parameter} AND {timestamp} < {parameter}",
            expressions.join(", "),
            mysql_qualified_table(self.schema, self.table)?,
        ))
    }
}

/// The earliest non-NULL timestamp before a historical run's cutoff (one parameter):
/// ``SELECT MIN(`<ts>`) FROM `<schema>`.`<table>` WHERE `<ts>` < ?``.
pub fn minimum_sql(
    schema: &str,
    table: &str,
    timestamp_column: &str,
    placeholders: MySqlPlaceholders,
) -> Result<String, IdentifierError> {
    let timestamp = quote_mysql_ident(timestamp_column)?;
    Ok(format!(
        "SELECT MIN({timestamp}) FROM {} WHERE {timestamp} < {}",
        mysql_qualified_table(schema, table)?,
        placeholders.parameter()
    ))
}

/// The preflight's bounded count of the whole source table (one parameter, the limit):
///
/// ```text
/// SELECT COUNT(*) AS table_rows FROM (SELECT 1 FROM `<schema>`.`<table>` LIMIT ?) AS ppw_preflight_rows
/// ```
///
/// No WHERE: rows with NULL timestamps count, because a window scan without an index reads
/// them all. Bind the limit as an integer (MySQL refuses a string `LIMIT`).
pub fn bounded_count_sql(
    schema: &str,
    table: &str,
    placeholders: MySqlPlaceholders,
) -> Result<String, IdentifierError> {
    Ok(format!(
        "SELECT COUNT(*) AS table_rows FROM (SELECT 1 FROM {} LIMIT {}) AS ppw_preflight_rows",
        mysql_qualified_table(schema, table)?,
        placeholders.parameter()
    ))
}

impl ChecksumColumn {
    /// The MySQL text expression of this column on `side` (the module's table).
    pub fn mysql_text(&self, side: Side, placeholders: MySqlPlaceholders) -> Result<String, IdentifierError> {
        let name = quote_mysql_ident(self.name(side))?;
        Ok(match self.kind {
            ChecksumKind::String => format!("CAST({name} AS CHAR)"),
            ChecksumKind::ExactNumeric => {
                format!("CAST(CAST(ROUND({name} * {}, 0) AS DECIMAL(38, 0)) AS CHAR)", power_of_ten(self.scale))
            }
            ChecksumKind::Boolean => format!("IF({name} IS NULL, NULL, IF({name}, '1', '0'))"),
            ChecksumKind::Timestamp => {
                format!("DATE_FORMAT({name}, '{}')", placeholders.format("%Y-%m-%d %H:%i:%s.%f"))
            }
            ChecksumKind::Time => format!("DATE_FORMAT({name}, '{}')", placeholders.format("%H:%i:%s.%f")),
            ChecksumKind::Binary => format!("LOWER(HEX({name}))"),
        })
    }
}

impl ChecksumPlan {
    /// The `SUM(...)` aggregate over the window's rows on `side`, in MySQL (see the module
    /// docs): the same field hashes and row payload as
    /// [`postgres_expression`](ChecksumPlan::postgres_expression), the low 48 bits of the row's
    /// MD5 read by `CONV` and cast to `DECIMAL(38, 0)` before the offset is subtracted.
    pub fn mysql_expression(&self, side: Side, placeholders: MySqlPlaceholders) -> Result<String, IdentifierError> {
        let field_hashes = self
            .columns()
            .iter()
            .map(|column| {
                let text = column.mysql_text(side, placeholders)?;
                Ok(format!("CASE WHEN {text} IS NULL THEN MD5('N') ELSE MD5(CONCAT('V', {text})) END"))
            })
            .collect::<Result<Vec<_>, IdentifierError>>()?;
        let payload = format!("CONCAT({})", field_hashes.join(", "));
        Ok(format!("SUM((CAST(CONV(SUBSTRING(MD5({payload}), 21), 16, 10) AS DECIMAL(38, 0)) - {CHECKSUM_OFFSET}))"))
    }
}

/// Which server a `tap-mysql` source is: it decides the statement-timeout variable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MySqlEngine {
    /// MariaDB: `max_statement_time`, in seconds.
    MariaDb,
    /// Oracle MySQL (and compatible forks): `max_execution_time`, in milliseconds.
    MySql,
}

impl MySqlEngine {
    /// Upstream's rule: the tap's `engine` setting when present — exactly `mariadb` means
    /// MariaDB, any other value MySQL (PipelineWise compares the lower-case spelling as is, so
    /// `MariaDB` counts as MySQL and its timeout statement fails on a MariaDB server); without
    /// the setting, MariaDB when the server's version string contains `mariadb` in any case
    /// (`10.11.6-MariaDB-0+deb12u1`, `5.5.5-10.6.18-MariaDB-log`), else MySQL (`8.0.39`).
    pub fn detect(configured: Option<&str>, server_version: &str) -> MySqlEngine {
        let is_mariadb = match configured {
            Some(engine) => engine == "mariadb",
            None => server_version.to_lowercase().contains("mariadb"),
        };
        if is_mariadb { MySqlEngine::MariaDb } else { MySqlEngine::MySql }
    }

    /// The session's statement timeout for a budget of `seconds` (at least 1: both servers
    /// read 0 as "no limit"): `SET SESSION max_statement_time = <seconds>` on MariaDB,
    /// `SET SESSION max_execution_time = <seconds × 1000>` on MySQL (which applies it to the
    /// read-only `SELECT`s every check runs). The value is written into the text (upstream
    /// binds it; the server sees the same statement).
    pub fn statement_timeout_sql(self, seconds: u64) -> String {
        let seconds = seconds.max(1);
        match self {
            MySqlEngine::MariaDb => format!("SET SESSION max_statement_time = {seconds}"),
            MySqlEngine::MySql => format!("SET SESSION max_execution_time = {}", seconds.saturating_mul(1000)),
        }
    }
}

/// `SET SESSION time_zone = '+00:00'`: `TIMESTAMP` values read and compare in UTC.
pub const TIME_ZONE_SQL: &str = "SET SESSION time_zone = '+00:00'";

/// `START TRANSACTION READ ONLY`: the preflight and every check query run in it.
pub const READ_ONLY_SQL: &str = "START TRANSACTION READ ONLY";

/// The statements a source session runs before anything else, in order (config note §5.3):
/// UTC, the statement timeout of `engine` for `timeout_seconds`, the read-only transaction.
/// The connection itself has autocommit off.
pub fn session_statements(engine: MySqlEngine, timeout_seconds: u64) -> [String; 3] {
    [TIME_ZONE_SQL.to_owned(), engine.statement_timeout_sql(timeout_seconds), READ_ONLY_SQL.to_owned()]
}

/// How a `tap-mysql` source connection uses TLS, decided from the tap's connection settings as
/// PipelineWise decides it (config note §5.3). Reading files and building the TLS context is
/// the connection's job; this is the rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MySqlTls {
    /// No explicit TLS settings: offer TLS whenever the server supports it, without verifying
    /// its certificate (PyMySQL's `ssl={"": True}`, as tap-mysql and FastSync connect). Without
    /// it, a server that requires encryption refuses the login as "Access denied".
    Opportunistic,
    /// `ssl` is `"true"` or an `ssl_ca` is set: verify the server's certificate and host name,
    /// against `ca` (a file path when such a file exists, else PEM text) or the system's CAs.
    Verified {
        /// `ssl_ca`.
        ca: Option<String>,
        /// `ssl_cert` and `ssl_key` (each a file path or PEM text), presented to the server.
        client_certificate: Option<(String, String)>,
    },
}

/// `ssl_cert` without `ssl_key`, or the reverse, under explicit TLS. The text is
/// PipelineWise's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("MySQL ssl_cert and ssl_key must be configured together")]
pub struct ClientCertificateError;

impl MySqlTls {
    /// The rule: explicit when `ssl` is exactly `"true"` (the string PipelineWise generates; a
    /// JSON `true` is not it, so pass `None` for one) or `ssl_ca` is non-empty, otherwise opportunistic (then `ssl_cert` and `ssl_key` are
    /// not read). Under explicit TLS `ssl_cert` and `ssl_key` go together. Empty strings count
    /// as absent, as Python's truthiness does.
    pub fn from_settings(
        ssl: Option<&str>,
        ssl_ca: Option<&str>,
        ssl_cert: Option<&str>,
        ssl_key: Option<&str>,
    ) -> Result<MySqlTls, ClientCertificateError> {
        let present = |value: Option<&str>| value.filter(|text| !text.is_empty()).map(str::to_owned);
        let ca = present(ssl_ca);
        if ssl != Some("true") && ca.is_none() {
            return Ok(MySqlTls::Opportunistic);
        }
        let client_certificate = match (present(ssl_cert), present(ssl_key)) {
            (None, None) => None,
            (Some(certificate), Some(key)) => Some((certificate, key)),
            _ => return Err(ClientCertificateError),
        };
        Ok(MySqlTls::Verified { ca, client_certificate })
    }
}

/// The column of `information_schema.STATISTICS` that says an index is hidden from the
/// optimizer, with opposite senses on the two servers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VisibilityColumn {
    /// MySQL 8: `IS_VISIBLE`, `'NO'` for an invisible index.
    IsVisible,
    /// MariaDB 10.6+: `IGNORED`, `'YES'` for an ignored index.
    Ignored,
}

impl VisibilityColumn {
    /// The column's name.
    pub fn as_str(self) -> &'static str {
        match self {
            VisibilityColumn::IsVisible => "IS_VISIBLE",
            VisibilityColumn::Ignored => "IGNORED",
        }
    }

    /// The value that means hidden.
    pub fn hidden_value(self) -> &'static str {
        match self {
            VisibilityColumn::IsVisible => "NO",
            VisibilityColumn::Ignored => "YES",
        }
    }

    /// The column from [`VISIBILITY_PROBE_QUERY`]'s result (the names found, any case):
    /// `IS_VISIBLE` when present (a fork exposing both is MySQL-compatible), else `IGNORED`,
    /// else none.
    pub fn from_probe<S: AsRef<str>>(found: &[S]) -> Option<VisibilityColumn> {
        let has =
            |wanted: VisibilityColumn| found.iter().any(|name| name.as_ref().eq_ignore_ascii_case(wanted.as_str()));
        [VisibilityColumn::IsVisible, VisibilityColumn::Ignored].into_iter().find(|column| has(*column))
    }
}

/// Which visibility column this server's `information_schema.STATISTICS` has (no parameters;
/// one `COLUMN_NAME` per row, none when the server has neither). Feed the names to
/// [`VisibilityColumn::from_probe`].
pub const VISIBILITY_PROBE_QUERY: &str = "\
SELECT COLUMN_NAME AS column_name
  FROM information_schema.COLUMNS
 WHERE TABLE_SCHEMA = 'information_schema'
   AND TABLE_NAME = 'STATISTICS'
   AND COLUMN_NAME IN ('IS_VISIBLE', 'IGNORED')";

/// The probe's answer, kept for the life of one connection: the catalog is read once however
/// many tables follow (upstream probes rather than trusting `VERSION()`, which forks and
/// backports make unreliable). A failed probe is not remembered, so the next lookup probes
/// again.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct VisibilityProbe {
    probed: Option<Option<VisibilityColumn>>,
}

impl VisibilityProbe {
    /// Not probed yet.
    pub fn new() -> VisibilityProbe {
        VisibilityProbe::default()
    }

    /// The visibility column: the remembered answer, or `probe()`'s (the names
    /// [`VISIBILITY_PROBE_QUERY`] returned) on the first call.
    pub fn column<E>(&mut self, probe: impl FnOnce() -> Result<Vec<String>, E>) -> Result<Option<VisibilityColumn>, E> {
        if let Some(known) = self.probed {
            return Ok(known);
        }
        let column = VisibilityColumn::from_probe(&probe()?);
        self.probed = Some(column);
        Ok(column)
    }
}

/// The index lookup of one table, two `?` parameters (schema, table), one row per index column
/// in index then column order: `index_name`, `column_name`, `sequence` (`SEQ_IN_INDEX`),
/// `non_unique` (0/1), `index_type` (`BTREE`, `HASH`, `FULLTEXT`, `SPATIAL`), `sub_part` (the
/// prefix length or NULL) and `visibility` (the visibility column's text, or NULL when the
/// server has none). Read the rows into [`StatisticsRow`]s.
pub fn index_query(visibility: Option<VisibilityColumn>) -> String {
    let visibility = visibility.map_or("NULL", VisibilityColumn::as_str);
    format!(
        "SELECT INDEX_NAME AS index_name, COLUMN_NAME AS column_name, SEQ_IN_INDEX AS sequence, \
         NON_UNIQUE AS non_unique, INDEX_TYPE AS index_type, SUB_PART AS sub_part, {visibility} AS visibility \
         FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? \
         ORDER BY INDEX_NAME, SEQ_IN_INDEX"
    )
}

/// One row of [`index_query`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatisticsRow {
    /// `INDEX_NAME` (`PRIMARY` for the primary key).
    pub index_name: String,
    /// `COLUMN_NAME` (NULL for a MySQL 8 functional key part, read as empty).
    pub column_name: String,
    /// `NON_UNIQUE` is 1.
    pub non_unique: bool,
    /// `INDEX_TYPE`.
    pub index_type: Option<String>,
    /// `SUB_PART`: a prefix length.
    pub sub_part: Option<u64>,
    /// The visibility column's value.
    pub visibility: Option<String>,
}

/// An index of a MySQL source table, as the preflight evidence records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MySqlIndex {
    /// The index's name.
    pub index_name: String,
    /// Its columns in index order.
    pub columns: Vec<String>,
    /// Unique (the primary key included).
    pub is_unique: bool,
    /// `INDEX_TYPE` lower-cased (`btree`, `hash`, `fulltext`, `spatial`).
    pub access_method: String,
    /// Whether a window scan can rely on it: `BTREE`, no prefix length and not hidden, on
    /// every row seen for it (a prefixed or hidden part disqualifies the whole index).
    pub is_usable: bool,
}

impl MySqlIndex {
    /// Whether the first column is `column`, compared case-insensitively as upstream does.
    pub fn leads_with(&self, column: &str) -> bool {
        self.columns.first().is_some_and(|first| first.to_lowercase() == column.to_lowercase())
    }

    /// The object stored in `dd_preflight_log.index_metadata` for a MySQL source: upstream's
    /// keys `index_name`, `columns`, `is_unique`, `access_method`, `is_usable`.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "index_name": self.index_name,
            "columns": self.columns,
            "is_unique": self.is_unique,
            "access_method": self.access_method,
            "is_usable": self.is_usable,
        })
    }
}

/// Groups [`index_query`]'s rows (already in index then column order) into indexes, in that
/// order. `visibility` must be the column the query selected. Uniqueness and the access method
/// come from an index's first row; usability is decided per row and an index is usable only
/// if every row is. (Upstream decides usability from the first row only; every column of a
/// MySQL index shares its type and visibility, so the two agree except for a prefix length
/// on a later column, which also makes the index unable to order a range and is therefore
/// counted against it here.)
pub fn indexes_from_statistics(rows: &[StatisticsRow], visibility: Option<VisibilityColumn>) -> Vec<MySqlIndex> {
    let mut indexes: Vec<MySqlIndex> = Vec::new();
    for row in rows {
        let hidden = visibility.is_some_and(|column| {
            row.visibility.as_deref().unwrap_or_default().eq_ignore_ascii_case(column.hidden_value())
        });
        let index_type = row.index_type.as_deref().unwrap_or_default();
        let usable = index_type.eq_ignore_ascii_case("BTREE") && row.sub_part.is_none() && !hidden;
        match indexes.last_mut() {
            Some(index) if index.index_name == row.index_name => {
                index.columns.push(row.column_name.clone());
                index.is_usable &= usable;
            }
            _ => indexes.push(MySqlIndex {
                index_name: row.index_name.clone(),
                columns: vec![row.column_name.clone()],
                is_unique: !row.non_unique,
                access_method: index_type.to_lowercase(),
                is_usable: usable,
            }),
        }
    }
    indexes
}

#[cfg(test)]
mod tests {
    use sha2::{Digest, Sha256};

    use super::*;
    use crate::column::tests::column;
    use crate::{
        column::{CatalogColumn, ColumnPair},
        family::TypeFamily,
    };

    fn pair(name: &str, data_type: &str, scale: Option<i32>) -> ColumnPair {
        let side = CatalogColumn { numeric_scale: scale, ..column(name, data_type) };
        ColumnPair { logical_name: name.to_owned(), source: Some(side.clone()), target: Some(side) }
    }

    fn plan(pairs: &[ColumnPair]) -> ChecksumPlan {
        ChecksumPlan::build(pairs).unwrap()
    }

    fn query<'a>(metrics: &'a [CheckType], checksum: Option<&'a ChecksumPlan>) -> MetricQuery<'a> {
        MetricQuery {
            schema: "payments",
            table: "transfers",
            key_column: "transfer_id",
            timestamp_column: "updated_at",
            metrics,
            checksum,
            side: Side::Source,
            soft_delete_column: None,
        }
    }

    /// PyMySQL's client-side interpolation of `%s` parameters: `%%` becomes `%`, each `%s` a
    /// quoted value, any other `%` specifier an error ("unsupported format character").
    fn interpolate(sql: &str, parameters: &[&str]) -> Result<String, String> {
        let mut out = String::new();
        let mut parameters = parameters.iter();
        let mut chars = sql.chars();
        while let Some(c) = chars.next() {
            if c != '%' {
                out.push(c);
                continue;
            }
            match chars.next() {
                Some('%') => out.push('%'),
                Some('s') => out.push_str(&format!("'{}'", parameters.next().ok_or("too few parameters")?)),
                other => return Err(format!("unsupported format character {other:?}")),
            }
        }
        if parameters.next().is_some() { Err("too many parameters".to_owned()) } else { Ok(out) }
    }

    #[test]
    fn identifiers_are_backticked_with_doubled_backticks() {
        assert_eq!(quote_mysql_ident("order`items").unwrap(), "`order``items`");
        assert_eq!(quote_mysql_ident("odd\"schema").unwrap(), "`odd\"schema`");
        assert_eq!(quote_mysql_ident("`").unwrap(), "````");
        assert_eq!(
            mysql_qualified_table("odd\"schema", "partition`parent").unwrap(),
            "`odd\"schema`.`partition``parent`"
        );
        for name in ["", "a\0b"] {
            assert_eq!(quote_mysql_ident(name), Err(IdentifierError));
        }
        let mut empty = query(&[CheckType::RowCount], None);
        empty.key_column = "";
        assert_eq!(empty.mysql_sql(MySqlPlaceholders::Question), Err(QueryError::Identifier(IdentifierError)));
    }

    #[test]
    fn metric_query_is_half_open_parameterized_and_quotes_identifiers() {
        let metrics = [
            CheckType::RowCount,
            CheckType::DistinctKeyCount,
            CheckType::NullKeyCount,
            CheckType::DuplicateKeyCount,
            CheckType::MinKey,
            CheckType::MaxKey,
        ];
        let mut spec = query(&metrics, None);
        spec.schema = "public";
        spec.table = "order`items";
        spec.key_column = "select";
        assert_eq!(
            spec.mysql_sql(MySqlPlaceholders::Pyformat).unwrap(),
            "SELECT COUNT(*) AS `row_count`, COUNT(DISTINCT `select`) AS `distinct_key_count`, \
             COUNT(*) - COUNT(`select`) AS `null_key_count`, \
             COUNT(`select`) - COUNT(DISTINCT `select`) AS `duplicate_key_count`, \
             MIN(`select`) AS `min_key`, MAX(`select`) AS `max_key` \
             FROM `public`.`order``items` WHERE `updated_at` >= %s AND `updated_at` < %s"
        );
        let question = spec.mysql_sql(MySqlPlaceholders::Question).unwrap();
        assert!(question.ends_with("WHERE `updated_at` >= ? AND `updated_at` < ?"), "{question}");
    }

    #[test]
    fn metric_query_excludes_null_timestamps_and_has_two_placeholders() {
        let sql = query(&[CheckType::RowCount], None).mysql_sql(MySqlPlaceholders::Pyformat).unwrap();
        assert!(sql.contains("`updated_at` >= %s") && sql.contains("`updated_at` < %s"), "{sql}");
        assert!(!sql.contains("IS NULL"), "{sql}");
        assert_eq!(sql.matches("%s").count(), 2);
        let sql = query(&[CheckType::RowCount], None).mysql_sql(MySqlPlaceholders::Question).unwrap();
        assert_eq!(sql.matches('?').count(), 2);
    }

    #[test]
    fn fingerprint_text_is_upstreams_pyformat_text() {
        let sql = query(&[CheckType::RowCount], None).mysql_sql(MySqlPlaceholders::Pyformat).unwrap();
        assert_eq!(
            sql,
            "SELECT COUNT(*) AS `row_count` FROM `payments`.`transfers` WHERE `updated_at` >= %s AND `updated_at` < %s"
        );
        // Derived (SHA-256 of upstream's text): what PipelineWise stores as its fingerprint.
        let digest: String = Sha256::digest(sql.as_bytes()).iter().map(|byte| format!("{byte:02x}")).collect();
        assert_eq!(digest, "597932d50baeab02033a1f10b165629162d7e2e011b1cb3cc1127d27ca7d440c");
    }

    #[test]
    fn misuse_is_an_error_not_odd_sql() {
        assert_eq!(
            query(&[CheckType::RowChecksum], None).mysql_sql(MySqlPlaceholders::Question),
            Err(QueryError::ChecksumWithoutColumns)
        );
        assert_eq!(
            query(&[CheckType::SchemaCompatibility], None).mysql_sql(MySqlPlaceholders::Question),
            Err(QueryError::NotAMetric(CheckType::SchemaCompatibility))
        );
    }

    #[test]
    fn checksum_uses_conv_and_doubled_date_format_in_the_pyformat_text() {
        // Upstream's dialect test: (id bigint), (updated_at timestamp), (status text).
        let checksum = plan(&[
            pair("id", "bigint", Some(0)),
            pair("updated_at", "timestamp without time zone", None),
            pair("status", "text", None),
        ]);
        let metrics = [CheckType::RowChecksum];
        let mut spec = query(&metrics, Some(&checksum));
        spec.schema = "public";
        spec.table = "payments";
        spec.key_column = "id";
        let sql = spec.mysql_sql(MySqlPlaceholders::Pyformat).unwrap();
        assert!(sql.contains("CONV(SUBSTRING(MD5("), "{sql}");
        assert!(sql.contains("DATE_FORMAT(`updated_at`, '%%Y-%%m-%%d %%H:%%i:%%s.%%f')"), "{sql}");
        let interpolated = interpolate(&sql, &["2026-07-01", "2026-07-02"]).unwrap();
        assert!(interpolated.contains("DATE_FORMAT(`updated_at`, '%Y-%m-%d %H:%i:%s.%f')"), "{interpolated}");
        assert_eq!(
            sql,
            "SELECT SUM((CAST(CONV(SUBSTRING(MD5(CONCAT(\
             CASE WHEN CAST(CAST(ROUND(`id` * 1, 0) AS DECIMAL(38, 0)) AS CHAR) IS NULL THEN MD5('N') \
             ELSE MD5(CONCAT('V', CAST(CAST(ROUND(`id` * 1, 0) AS DECIMAL(38, 0)) AS CHAR))) END, \
             CASE WHEN DATE_FORMAT(`updated_at`, '%%Y-%%m-%%d %%H:%%i:%%s.%%f') IS NULL THEN MD5('N') \
             ELSE MD5(CONCAT('V', DATE_FORMAT(`updated_at`, '%%Y-%%m-%%d %%H:%%i:%%s.%%f'))) END, \
             CASE WHEN CAST(`status` AS CHAR) IS NULL THEN MD5('N') \
             ELSE MD5(CONCAT('V', CAST(`status` AS CHAR))) END\
             )), 21), 16, 10) AS DECIMAL(38, 0)) - 140737488355327)) AS `row_checksum` \
             FROM `public`.`payments` WHERE `updated_at` >= %s AND `updated_at` < %s"
        );
    }

    #[test]
    fn mysql_checksum_sql_survives_client_side_interpolation() {
        let checksum = plan(&[pair("updated_at", "datetime", None), pair("status", "varchar", None)]);
        let metrics = [CheckType::RowCount, CheckType::RowChecksum];
        let sql = query(&metrics, Some(&checksum)).mysql_sql(MySqlPlaceholders::Pyformat).unwrap();
        let interpolated = interpolate(&sql, &["2026-07-01 00:00:00", "2026-07-02 00:00:00"]).unwrap();
        assert!(interpolated.contains("DATE_FORMAT"));
        assert!(interpolated.contains("%Y-%m-%d %H:%i:%s.%f"), "{interpolated}");
        assert!(!interpolated.contains("%%"), "{interpolated}");
        // Undoubled specifiers are what PyMySQL refuses.
        assert!(interpolate("DATE_FORMAT(`c`, '%Y') >= %s", &["x"]).is_err());
        // The executable form already has single specifiers and `?` parameters.
        let executable = query(&metrics, Some(&checksum)).mysql_sql(MySqlPlaceholders::Question).unwrap();
        assert_eq!(
            executable,
            interpolated.replace("'2026-07-01 00:00:00'", "?").replace("'2026-07-02 00:00:00'", "?")
        );
    }

    #[test]
    fn mysql_time_checksum_sql_survives_client_side_interpolation() {
        let checksum = plan(&[pair("started_at", "time", None)]);
        let column = &checksum.columns()[0];
        let pyformat = column.mysql_text(Side::Source, MySqlPlaceholders::Pyformat).unwrap();
        assert_eq!(interpolate(&pyformat, &[]).unwrap(), "DATE_FORMAT(`started_at`, '%H:%i:%s.%f')");
        assert_eq!(
            column.mysql_text(Side::Source, MySqlPlaceholders::Question).unwrap(),
            "DATE_FORMAT(`started_at`, '%H:%i:%s.%f')"
        );
    }

    #[test]
    fn boolean_null_is_distinguishable_from_false() {
        let checksum = plan(&[ColumnPair {
            logical_name: "is_active".to_owned(),
            source: Some(CatalogColumn { udt_name: Some("tinyint(1)".to_owned()), ..column("is_active", "tinyint") }),
            target: Some(column("is_active", "boolean")),
        }]);
        let text = checksum.columns()[0].mysql_text(Side::Source, MySqlPlaceholders::Question).unwrap();
        assert_eq!(text, "IF(`is_active` IS NULL, NULL, IF(`is_active`, '1', '0'))");
    }

    #[test]
    fn mysql_checksum_integer_casts_before_subtracting() {
        let checksum = plan(&[pair("id", "int", None)]);
        let expression = checksum.mysql_expression(Side::Source, MySqlPlaceholders::Question).unwrap();
        assert!(expression.contains("CAST(CONV("), "{expression}");
        assert!(expression.contains("AS DECIMAL(38, 0)) - 140737488355327"), "{expression}");
    }

    #[test]
    fn checksum_numeric_scale_keeps_the_wider_precision() {
        let checksum = plan(&[ColumnPair {
            logical_name: "amount".to_owned(),
            source: Some(CatalogColumn { numeric_scale: Some(4), ..column("amount", "decimal") }),
            target: Some(CatalogColumn { numeric_scale: Some(2), ..column("amount", "numeric") }),
        }]);
        assert_eq!(
            checksum.columns()[0].mysql_text(Side::Source, MySqlPlaceholders::Question).unwrap(),
            "CAST(CAST(ROUND(`amount` * 10000, 0) AS DECIMAL(38, 0)) AS CHAR)"
        );
    }

    #[test]
    fn every_kind_has_its_mysql_text_and_each_side_its_names() {
        let checksum = plan(&[
            ColumnPair {
                logical_name: "day".to_owned(),
                source: Some(column("Day", "date")),
                target: Some(column("day", "timestamp without time zone")),
            },
            pair("raw", "varbinary", None),
            pair("code", "char", None),
        ]);
        let texts: Vec<String> = checksum
            .columns()
            .iter()
            .map(|column| column.mysql_text(Side::Source, MySqlPlaceholders::Question).unwrap())
            .collect();
        assert_eq!(texts, ["DATE_FORMAT(`Day`, '%Y-%m-%d %H:%i:%s.%f')", "LOWER(HEX(`raw`))", "CAST(`code` AS CHAR)"]);
        let target = checksum.columns()[0].mysql_text(Side::Target, MySqlPlaceholders::Question).unwrap();
        assert_eq!(target, "DATE_FORMAT(`day`, '%Y-%m-%d %H:%i:%s.%f')");
    }

    #[test]
    fn column_type_makes_tinyint_one_a_boolean() {
        let flag = CatalogColumn { udt_name: Some("tinyint(1)".to_owned()), ..column("flag", "tinyint") };
        assert_eq!(flag.family(), TypeFamily::Boolean);
        let small = CatalogColumn { udt_name: Some("tinyint(4)".to_owned()), ..column("small", "tinyint") };
        assert_eq!(small.family(), TypeFamily::ExactNumeric);
        let unsigned = CatalogColumn { udt_name: Some("tinyint(1) unsigned".to_owned()), ..column("u", "tinyint") };
        assert_eq!(unsigned.family(), TypeFamily::Boolean);
        assert!(COLUMNS_QUERY.contains("COLUMN_TYPE AS udt_name"));
        assert_eq!(COLUMNS_QUERY.matches('?').count(), 2);
    }

    #[test]
    fn minimum_timestamp_is_parameterized() {
        assert_eq!(
            minimum_sql("public", "payments", "updated\"at", MySqlPlaceholders::Pyformat).unwrap(),
            "SELECT MIN(`updated\"at`) FROM `public`.`payments` WHERE `updated\"at` < %s"
        );
        assert_eq!(
            minimum_sql("public", "payments", "q", MySqlPlaceholders::Question).unwrap(),
            "SELECT MIN(`q`) FROM `public`.`payments` WHERE `q` < ?"
        );
    }

    #[test]
    fn bounded_source_count_quotes_the_table_and_never_filters_rows() {
        let sql = bounded_count_sql("odd\"schema", "partition`parent", MySqlPlaceholders::Pyformat).unwrap();
        assert_eq!(
            sql,
            "SELECT COUNT(*) AS table_rows FROM (SELECT 1 FROM `odd\"schema`.`partition``parent` LIMIT %s) AS ppw_preflight_rows"
        );
        assert!(sql.contains("SELECT COUNT(*) AS table_rows FROM ("));
        assert!(sql.contains("LIMIT %s) AS ppw_preflight_rows"));
        assert!(!sql.contains("WHERE") && !sql.contains("ONLY"));
        let question = bounded_count_sql("db", "t", MySqlPlaceholders::Question).unwrap();
        assert_eq!(
            question,
            "SELECT COUNT(*) AS table_rows FROM (SELECT 1 FROM `db`.`t` LIMIT ?) AS ppw_preflight_rows"
        );
    }

    #[test]
    fn mariadb_source_is_detected_and_time_limited_without_engine() {
        for version in ["11.4.10-MariaDB-log", "5.5.5-10.6.18-MariaDB-ubu2004-log"] {
            assert_eq!(MySqlEngine::detect(None, version), MySqlEngine::MariaDb, "{version}");
            assert_eq!(
                session_statements(MySqlEngine::detect(None, version), 120),
                [
                    "SET SESSION time_zone = '+00:00'".to_owned(),
                    "SET SESSION max_statement_time = 120".to_owned(),
                    "START TRANSACTION READ ONLY".to_owned(),
                ]
            );
        }
    }

    #[test]
    fn mysql_source_is_detected_and_time_limited_without_engine() {
        assert_eq!(MySqlEngine::detect(None, "8.0.39"), MySqlEngine::MySql);
        assert_eq!(
            session_statements(MySqlEngine::MySql, 120),
            [
                "SET SESSION time_zone = '+00:00'".to_owned(),
                "SET SESSION max_execution_time = 120000".to_owned(),
                "START TRANSACTION READ ONLY".to_owned(),
            ]
        );
    }

    #[test]
    fn explicit_engine_overrides_server_version() {
        assert_eq!(MySqlEngine::detect(Some("mariadb"), "8.0.39"), MySqlEngine::MariaDb);
        assert_eq!(MySqlEngine::detect(Some("mysql"), "11.4.10-MariaDB-log"), MySqlEngine::MySql);
        // Upstream compares the setting exactly: any other spelling is MySQL.
        assert_eq!(MySqlEngine::detect(Some("MariaDB"), "10.11.6-MariaDB"), MySqlEngine::MySql);
        assert_eq!(MySqlEngine::detect(None, "10.11.6-MARIADB"), MySqlEngine::MariaDb);
    }

    #[test]
    fn statement_timeout_never_reaches_zero() {
        assert_eq!(MySqlEngine::MariaDb.statement_timeout_sql(0), "SET SESSION max_statement_time = 1");
        assert_eq!(MySqlEngine::MariaDb.statement_timeout_sql(30), "SET SESSION max_statement_time = 30");
        assert_eq!(MySqlEngine::MySql.statement_timeout_sql(0), "SET SESSION max_execution_time = 1000");
    }

    #[test]
    fn mysql_source_attempts_tls_without_explicit_ssl_config() {
        assert_eq!(MySqlTls::from_settings(None, None, None, None), Ok(MySqlTls::Opportunistic));
        // Only the exact string PipelineWise generates is explicit; an empty CA is no CA; a
        // lone client certificate is not read without explicit TLS.
        for ssl in [Some("false"), Some("True"), Some("")] {
            assert_eq!(MySqlTls::from_settings(ssl, Some(""), Some("cert.pem"), None), Ok(MySqlTls::Opportunistic));
        }
    }

    #[test]
    fn mysql_source_prefers_an_explicit_ssl_context() {
        assert_eq!(
            MySqlTls::from_settings(Some("true"), None, None, None),
            Ok(MySqlTls::Verified { ca: None, client_certificate: None })
        );
        assert_eq!(
            MySqlTls::from_settings(None, Some("/etc/ca.pem"), Some("c.pem"), Some("k.pem")),
            Ok(MySqlTls::Verified {
                ca: Some("/etc/ca.pem".to_owned()),
                client_certificate: Some(("c.pem".to_owned(), "k.pem".to_owned()))
            })
        );
        for (certificate, key) in [(Some("c.pem"), None), (None, Some("k.pem")), (Some("c.pem"), Some(""))] {
            let error = MySqlTls::from_settings(Some("true"), None, certificate, key).unwrap_err();
            assert_eq!(error.to_string(), "MySQL ssl_cert and ssl_key must be configured together");
        }
    }

    fn statistics(index: &str, column: &str, index_type: &str, visibility: Option<&str>) -> StatisticsRow {
        StatisticsRow {
            index_name: index.to_owned(),
            column_name: column.to_owned(),
            non_unique: true,
            index_type: Some(index_type.to_owned()),
            sub_part: None,
            visibility: visibility.map(str::to_owned),
        }
    }

    #[test]
    fn mysql_hidden_index_is_not_usable() {
        for (column, hidden, visible) in
            [(VisibilityColumn::IsVisible, "NO", "YES"), (VisibilityColumn::Ignored, "YES", "NO")]
        {
            let rows = [
                statistics("ix_hidden", "updated_at", "BTREE", Some(hidden)),
                statistics("ix_live", "created_at", "BTREE", Some(visible)),
            ];
            let indexes = indexes_from_statistics(&rows, Some(column));
            assert_eq!(indexes.iter().map(|index| index.is_usable).collect::<Vec<_>>(), [false, true], "{column:?}");
            assert!(index_query(Some(column)).contains(&format!("{} AS visibility", column.as_str())));
        }
    }

    #[test]
    fn mysql_without_a_visibility_column_keeps_btree_indexes_usable() {
        let rows = [statistics("ix_ts", "updated_at", "BTREE", None)];
        assert!(indexes_from_statistics(&rows, None)[0].is_usable);
        let sql = index_query(None);
        assert!(sql.contains("NULL AS visibility"), "{sql}");
        assert!(!sql.contains("IS_VISIBLE") && !sql.contains("IGNORED"), "{sql}");
    }

    #[test]
    fn mysql_visibility_column_is_probed_once_per_connection() {
        // One probe plus one index query per table: the catalog is not re-read per table.
        let mut executed = Vec::new();
        let mut probe = VisibilityProbe::new();
        for table in ["first", "second"] {
            let column = probe
                .column(|| {
                    executed.push(VISIBILITY_PROBE_QUERY.to_owned());
                    Ok::<_, String>(vec!["IGNORED".to_owned()])
                })
                .unwrap();
            assert_eq!(column, Some(VisibilityColumn::Ignored));
            executed.push(format!("{} -- {table}", index_query(column)));
        }
        assert_eq!(executed.len(), 3);
        // A failed probe is not remembered.
        let mut failing = VisibilityProbe::new();
        assert_eq!(failing.column(|| Err::<Vec<String>, _>("timeout")), Err("timeout"));
        assert_eq!(failing.column(|| Ok::<_, String>(vec![])), Ok(None));
        assert_eq!(failing.column(|| Ok::<_, String>(vec!["IS_VISIBLE".to_owned()])), Ok(None), "remembered");
    }

    #[test]
    fn probe_prefers_is_visible_and_ignores_case() {
        assert_eq!(VisibilityColumn::from_probe(&["IGNORED", "IS_VISIBLE"]), Some(VisibilityColumn::IsVisible));
        assert_eq!(VisibilityColumn::from_probe(&["ignored"]), Some(VisibilityColumn::Ignored));
        assert_eq!(VisibilityColumn::from_probe::<&str>(&[]), None);
    }

    #[test]
    fn statistics_rows_group_into_indexes_with_upstreams_evidence() {
        let mut prefixed = statistics("ix_prefix", "note", "BTREE", Some("NO"));
        prefixed.sub_part = Some(10);
        let mut primary = statistics("PRIMARY", "id", "BTREE", Some("NO"));
        primary.non_unique = false;
        let rows = [
            primary,
            statistics("ix_ts_id", "updated_at", "BTREE", Some("NO")),
            statistics("ix_ts_id", "id", "BTREE", Some("NO")),
            prefixed,
            statistics("ix_hash", "updated_at", "HASH", Some("NO")),
        ];
        let indexes = indexes_from_statistics(&rows, Some(VisibilityColumn::Ignored));
        let summary: Vec<_> =
            indexes.iter().map(|index| (index.index_name.as_str(), index.columns.len(), index.is_usable)).collect();
        assert_eq!(
            summary,
            [("PRIMARY", 1, true), ("ix_ts_id", 2, true), ("ix_prefix", 1, false), ("ix_hash", 1, false)]
        );
        assert!(indexes[1].leads_with("UPDATED_AT"));
        assert!(!indexes[0].leads_with("updated_at"));
        assert_eq!(
            indexes[0].to_json(),
            serde_json::json!({"index_name": "PRIMARY", "columns": ["id"], "is_unique": true,
                               "access_method": "btree", "is_usable": true})
        );
        assert_eq!(indexes[3].access_method, "hash");
    }
}
