//! `doctor`'s key uniqueness check: whether the key is unique on one side, within the rows
//! the next run compares, so that a duplicate key is a finding before the first run ERRORs on
//! it (`duplicate key … the key column must be unique`). The key is `row_diff`'s: the
//! definition's key column, or every column of `key_columns` (a composite key), whose tuple is
//! what must be unique.
//!
//! Cost first: a unique index (a primary key, a unique constraint), valid, without predicate
//! or expression, whose key columns are all among the key's (exactly the key column for a
//! single key; the whole tuple or a part of it for a composite key) proves uniqueness from the
//! catalog and nothing is scanned. Otherwise one read-only query looks for the first duplicate
//! inside the window, through the timestamp column as the runs read it (its index serves it):
//! `SELECT key FROM t WHERE key IS NOT NULL AND ts >= $1 AND ts < $2 GROUP BY key HAVING
//! count(*) > 1 LIMIT 1`, a composite key grouped by all its columns (`GROUP BY a, b`, rows with
//! any NULL part left out). NULL keys are `null_key_count`'s business, not duplicates. The
//! replica leaves out soft-deleted rows when the definition does. The window is the one of
//! the schedule's current slot, or everything before its end when the first run starts with
//! `initial_full_scan`.
//!
//! A MySQL/MariaDB source groups the key's bytes (`CAST(key AS BINARY)`, each column of a
//! composite key), as the comparison orders them, so two keys a case-insensitive collation
//! calls equal are not reported.

use chrono::{DateTime, Utc};
use datadiff_access::{MySqlSideSession, SideSession};
use datadiff_diff_core::mysql::{mysql_qualified_table, quote_mysql_ident};
use datadiff_diff_core::plan::{IdentifierError, qualified_table, quote_ident};

use crate::window_bounds::{self, UnboundParameter};

/// Why the uniqueness check could not answer; `Display` is the finding's reason.
#[derive(Debug, thiserror::Error)]
pub(crate) enum UniquenessError {
    /// A name the database cannot quote.
    #[error(transparent)]
    Identifier(#[from] IdentifierError),
    /// The session failed (connect, timeout, a statement it runs).
    #[error(transparent)]
    Session(#[from] datadiff_access::SideError),
    /// A statement failed: the server's primary message.
    #[error("{}", datadiff_access::one_line(.0))]
    Server(#[from] postgres::Error),
    /// The timestamp column's type is no window bound's.
    #[error(transparent)]
    UnboundParameter(#[from] UnboundParameter),
}

/// What the check found on one side.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Uniqueness {
    /// A unique index on the key's columns: nothing scanned.
    Indexed {
        /// The index's name.
        index: String,
    },
    /// Scanned: no duplicate in the window.
    Unique,
    /// Scanned: the first duplicate key found (its text).
    Duplicate {
        /// The key's value as text (a key, never another column's value): a composite key's
        /// parts as `(7, 2)`.
        key: String,
    },
}

/// The rows the check covers: `[start, end)` of the timestamp column, no start for a full
/// scan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Scope {
    pub(crate) start: Option<DateTime<Utc>>,
    pub(crate) end: DateTime<Utc>,
}

impl Scope {
    /// How findings name it.
    pub(crate) fn describe(&self) -> String {
        let format = |instant: DateTime<Utc>| instant.format("%Y-%m-%dT%H:%M:%SZ").to_string();
        match self.start {
            Some(start) => format!("the window [{}, {})", format(start), format(self.end)),
            None => format!("the initial full scan before {}", format(self.end)),
        }
    }
}

/// The names one side's check reads: its table, key columns (one, or every column of a
/// composite key, in key order) and timestamp column (resolved catalog names), and the
/// soft-delete column to leave out, if any.
#[derive(Debug, Clone, Copy)]
pub(crate) struct KeyTable<'a> {
    pub(crate) schema: &'a str,
    pub(crate) table: &'a str,
    pub(crate) keys: &'a [String],
    pub(crate) timestamp: &'a str,
    pub(crate) soft_delete: Option<&'a str>,
}

/// The unique index whose key columns are all among the key's (`$3`), if any (PostgreSQL's
/// catalog): exactly the key column for a single key.
const UNIQUE_INDEX_QUERY: &str = "SELECT i.relname::text FROM pg_catalog.pg_index x \
     JOIN pg_catalog.pg_class i ON i.oid = x.indexrelid \
     JOIN pg_catalog.pg_class t ON t.oid = x.indrelid \
     JOIN pg_catalog.pg_namespace n ON n.oid = t.relnamespace \
     WHERE n.nspname = $1 AND t.relname = $2 AND x.indisunique AND x.indisvalid \
       AND x.indpred IS NULL AND x.indexprs IS NULL AND x.indnkeyatts >= 1 \
       AND NOT EXISTS (SELECT 1 FROM pg_catalog.generate_series(0, x.indnkeyatts - 1) AS k \
         JOIN pg_catalog.pg_attribute a ON a.attrelid = t.oid AND a.attnum = x.indkey[k] \
         WHERE a.attname <> ALL ($3::text[])) \
     ORDER BY x.indisprimary DESC, i.relname LIMIT 1";

/// PostgreSQL's first-duplicate query over the scope (`$1` start when present, then the end).
pub(crate) fn postgres_sql(table: &KeyTable<'_>, full_scan: bool) -> Result<String, IdentifierError> {
    let name = qualified_table(table.schema, table.table)?;
    let keys = table.keys.iter().map(|key| quote_ident(key)).collect::<Result<Vec<_>, _>>()?;
    let timestamp = quote_ident(table.timestamp)?;
    let window =
        if full_scan { format!("{timestamp} < $1") } else { format!("{timestamp} >= $1 AND {timestamp} < $2") };
    let soft_delete = match table.soft_delete {
        Some(column) => format!(" AND {} IS NULL", quote_ident(column)?),
        None => String::new(),
    };
    let not_null: Vec<String> = keys.iter().map(|key| format!("{key} IS NOT NULL AND ")).collect();
    let text = match keys.as_slice() {
        [key] => format!("{key}::text"),
        keys => {
            let parts: Vec<String> = keys.iter().map(|key| format!("{key}::text")).collect();
            format!("'(' || pg_catalog.concat_ws(', ', {}) || ')'", parts.join(", "))
        }
    };
    Ok(format!(
        "SELECT {text} FROM {name} WHERE {not_null}{window}{soft_delete} \
         GROUP BY {keys} HAVING count(*) > 1 LIMIT 1",
        not_null = not_null.concat(),
        keys = keys.join(", ")
    ))
}

/// MySQL's first-duplicate query over the scope, grouping the key's bytes.
pub(crate) fn mysql_sql(table: &KeyTable<'_>, full_scan: bool) -> Result<String, IdentifierError> {
    let name = mysql_qualified_table(table.schema, table.table)?;
    let keys = table.keys.iter().map(|key| quote_mysql_ident(key)).collect::<Result<Vec<_>, _>>()?;
    let timestamp = quote_mysql_ident(table.timestamp)?;
    let window = if full_scan { format!("{timestamp} < ?") } else { format!("{timestamp} >= ? AND {timestamp} < ?") };
    let not_null: Vec<String> = keys.iter().map(|key| format!("{key} IS NOT NULL AND ")).collect();
    let groups: Vec<String> = keys.iter().map(|key| format!("CAST({key} AS BINARY)")).collect();
    let text = match keys.as_slice() {
        [key] => format!("CAST(MIN({key}) AS CHAR)"),
        keys => {
            let parts: Vec<String> = keys.iter().map(|key| format!("CAST(MIN({key}) AS CHAR)")).collect();
            format!("CONCAT('(', CONCAT_WS(', ', {}), ')')", parts.join(", "))
        }
    };
    Ok(format!(
        "SELECT {text} FROM {name} WHERE {not_null}{window} GROUP BY {groups} HAVING COUNT(*) > 1 LIMIT 1",
        not_null = not_null.concat(),
        groups = groups.join(", ")
    ))
}

/// The check on a PostgreSQL side, inside a savepoint of the session's read-only transaction
/// (a refused query leaves it usable).
pub(crate) fn check_postgres(
    session: &mut SideSession,
    table: &KeyTable<'_>,
    scope: Scope,
) -> Result<Uniqueness, UniquenessError> {
    let sql = postgres_sql(table, scope.start.is_none())?;
    let (schema, name, keys) = (table.schema.to_owned(), table.table.to_owned(), table.keys.to_vec());
    session.with_client("key uniqueness", move |client| {
        client.batch_execute("SAVEPOINT datadiff_doctor_key")?;
        let checked = postgres_uniqueness(client, &sql, (&schema, &name, &keys), scope);
        let end = if checked.is_ok() { "RELEASE" } else { "ROLLBACK TO" };
        client.batch_execute(&format!("{end} SAVEPOINT datadiff_doctor_key"))?;
        checked
    })?
}

fn postgres_uniqueness(
    client: &mut postgres::Client,
    sql: &str,
    (schema, table, keys): (&String, &String, &Vec<String>),
    scope: Scope,
) -> Result<Uniqueness, UniquenessError> {
    if let Some(row) = client.query_opt(UNIQUE_INDEX_QUERY, &[schema, table, keys])? {
        return Ok(Uniqueness::Indexed { index: row.try_get(0)? });
    }
    let statement = client.prepare(sql)?;
    let bounds: Vec<DateTime<Utc>> = scope.start.into_iter().chain([scope.end]).collect();
    let params = window_bounds::bind(&statement, &bounds)?;
    let params = window_bounds::as_params(&params);
    match client.query_opt(&statement, &params)? {
        None => Ok(Uniqueness::Unique),
        Some(row) => Ok(Uniqueness::Duplicate { key: row.try_get(0)? }),
    }
}

/// The check on a MySQL/MariaDB source: a unique index whose columns are all among the key's
/// (from `information_schema.STATISTICS`, names compared case-insensitively as MySQL does),
/// else the scan.
pub(crate) fn check_mysql(
    session: &mut MySqlSideSession,
    table: &KeyTable<'_>,
    scope: Scope,
) -> Result<Uniqueness, UniquenessError> {
    let indexes = session.indexes(table.schema, table.table)?;
    let covering = indexes.iter().find(|index| {
        index.is_unique
            && !index.columns.is_empty()
            && index.columns.iter().all(|column| table.keys.iter().any(|key| key.eq_ignore_ascii_case(column)))
    });
    if let Some(index) = covering {
        return Ok(Uniqueness::Indexed { index: index.index_name.clone() });
    }
    let sql = mysql_sql(table, scope.start.is_none())?;
    match session.first_text("key uniqueness", &sql, scope.start, scope.end)? {
        None => Ok(Uniqueness::Unique),
        Some(key) => Ok(Uniqueness::Duplicate { key }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(keys: &[String]) -> KeyTable<'_> {
        KeyTable { schema: "dlt_app", table: "customer_orders", keys, timestamp: "updated_at", soft_delete: None }
    }

    #[test]
    fn the_scan_groups_the_key_inside_the_window() {
        let key = ["order_id".to_owned()];
        assert_eq!(
            postgres_sql(&table(&key), false).as_deref(),
            Ok(
                r#"SELECT "order_id"::text FROM "dlt_app"."customer_orders" WHERE "order_id" IS NOT NULL AND "updated_at" >= $1 AND "updated_at" < $2 GROUP BY "order_id" HAVING count(*) > 1 LIMIT 1"#
            )
        );
        let soft = KeyTable { soft_delete: Some("_sdc_deleted_at"), ..table(&key) };
        assert_eq!(
            postgres_sql(&soft, true).as_deref(),
            Ok(
                r#"SELECT "order_id"::text FROM "dlt_app"."customer_orders" WHERE "order_id" IS NOT NULL AND "updated_at" < $1 AND "_sdc_deleted_at" IS NULL GROUP BY "order_id" HAVING count(*) > 1 LIMIT 1"#
            )
        );
        assert_eq!(
            mysql_sql(&table(&key), false).as_deref(),
            Ok(
                "SELECT CAST(MIN(`order_id`) AS CHAR) FROM `dlt_app`.`customer_orders` WHERE `order_id` IS NOT NULL AND `updated_at` >= ? AND `updated_at` < ? GROUP BY CAST(`order_id` AS BINARY) HAVING COUNT(*) > 1 LIMIT 1"
            )
        );
    }

    #[test]
    fn a_composite_key_is_grouped_by_every_column() {
        let keys = ["order_id".to_owned(), "line_no".to_owned()];
        assert_eq!(
            postgres_sql(&table(&keys), false).as_deref(),
            Ok(
                r#"SELECT '(' || pg_catalog.concat_ws(', ', "order_id"::text, "line_no"::text) || ')' FROM "dlt_app"."customer_orders" WHERE "order_id" IS NOT NULL AND "line_no" IS NOT NULL AND "updated_at" >= $1 AND "updated_at" < $2 GROUP BY "order_id", "line_no" HAVING count(*) > 1 LIMIT 1"#
            )
        );
        assert_eq!(
            mysql_sql(&table(&keys), true).as_deref(),
            Ok(
                "SELECT CONCAT('(', CONCAT_WS(', ', CAST(MIN(`order_id`) AS CHAR), CAST(MIN(`line_no`) AS CHAR)), ')') FROM `dlt_app`.`customer_orders` WHERE `order_id` IS NOT NULL AND `line_no` IS NOT NULL AND `updated_at` < ? GROUP BY CAST(`order_id` AS BINARY), CAST(`line_no` AS BINARY) HAVING COUNT(*) > 1 LIMIT 1"
            )
        );
    }

    #[test]
    fn scopes_say_which_rows_were_looked_at() {
        let end = DateTime::from_timestamp(1_785_000_000, 0).unwrap_or_default();
        let start = end - chrono::TimeDelta::hours(1);
        assert_eq!(
            Scope { start: Some(start), end }.describe(),
            "the window [2026-07-25T16:20:00Z, 2026-07-25T17:20:00Z)"
        );
        assert_eq!(Scope { start: None, end }.describe(), "the initial full scan before 2026-07-25T17:20:00Z");
    }
}
