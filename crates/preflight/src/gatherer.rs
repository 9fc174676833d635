//! The thin shell: reads catalog facts from the source inside the caller's transaction.

use postgres::GenericClient;

use crate::facts::{CatalogFacts, DEFAULT_ROW_LIMIT, RowCount};
use crate::fingerprint::QueryFingerprint;
use crate::index::{IndexFact, SourceIndex};
use crate::record::PreflightRecord;

/// Every index of one table, with its columns in index order.
///
/// The columns come from `unnest(indkey) WITH ORDINALITY` joined to `pg_attribute`: key
/// columns then INCLUDE columns, and an expression key part (attnum 0) has no attribute row,
/// so it simply does not appear. A partitioned table's own (partitioned) indexes are rows of
/// `pg_index` like any other, so an index created on the parent is listed. `relname` is of
/// type `name`, which sorts bytewise, so the order does not depend on the database collation.
const INDEX_QUERY: &str = "\
SELECT index_class.relname::text AS index_name,
       ARRAY(
           SELECT attribute.attname::text
           FROM unnest(index_row.indkey::int2[]) WITH ORDINALITY AS key_part(attnum, position)
           JOIN pg_catalog.pg_attribute AS attribute
             ON attribute.attrelid = index_row.indrelid AND attribute.attnum = key_part.attnum
           ORDER BY key_part.position
       ) AS columns,
       index_row.indisunique AS is_unique,
       access_method.amname::text AS access_method,
       index_row.indpred IS NOT NULL AS is_partial,
       index_row.indexprs IS NOT NULL AS is_expression,
       index_row.indisvalid AS is_valid,
       index_row.indisready AS is_ready
FROM pg_catalog.pg_index AS index_row
JOIN pg_catalog.pg_class AS table_class ON table_class.oid = index_row.indrelid
JOIN pg_catalog.pg_namespace AS namespace ON namespace.oid = table_class.relnamespace
JOIN pg_catalog.pg_class AS index_class ON index_class.oid = index_row.indexrelid
JOIN pg_catalog.pg_am AS access_method ON access_method.oid = index_class.relam
WHERE namespace.nspname = $1 AND table_class.relname = $2
ORDER BY index_class.relname";

/// The source table a definition reads, with names exactly as configured (matched exactly
/// against the catalog: no case folding).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SourceTable<'a> {
    /// Schema name.
    pub schema: &'a str,
    /// Table name.
    pub table: &'a str,
    /// The timestamp column windows are cut on.
    pub timestamp_column: &'a str,
}

/// Reads the facts the verdict needs.
///
/// `client` is the caller's open read-only transaction on the source (upstream runs the
/// preflight in the same transaction as the check's queries, under its statement timeout);
/// this function opens nothing and commits nothing. It runs the index query, then the
/// bounded count only when [`CatalogFacts::needs_count`]:
///
/// ```sql
/// SELECT COUNT(*) AS table_rows FROM (SELECT 1 FROM "<schema>"."<table>" LIMIT $1) AS ppw_preflight_rows
/// ```
///
/// No WHERE and no ONLY: rows with NULL timestamps, inherited rows and partitions' rows all
/// count, because a window scan without an index reads them all. A failing query never
/// panics or returns early with an error: its text becomes part of the facts, and what was
/// gathered before is kept. After such a failure the transaction is aborted; the caller
/// rolls it back.
pub fn gather(client: &mut impl GenericClient, table: &SourceTable<'_>, row_limit: i64) -> CatalogFacts {
    let mut facts = CatalogFacts {
        timestamp_column: table.timestamp_column.to_owned(),
        row_limit,
        indexes: read_indexes(client, table),
        row_count: None,
    };
    if facts.needs_count() {
        facts.row_count = Some(count_rows(client, table, row_limit));
    }
    facts
}

/// Gathers with [`DEFAULT_ROW_LIMIT`] and decides: the call the runner makes for a
/// definition with data checks. `fingerprint` is [`QueryFingerprint::of_sql`] of the source
/// SQL the check will run.
pub fn preflight(
    client: &mut impl GenericClient,
    table: &SourceTable<'_>,
    fingerprint: QueryFingerprint,
) -> PreflightRecord {
    gather(client, table, DEFAULT_ROW_LIMIT).verdict(fingerprint)
}

/// The preflight over indexes a caller read itself (a MySQL or MariaDB source, whose session
/// lives in `datadiff-access`): `count` is called with [`DEFAULT_ROW_LIMIT`] exactly when
/// [`CatalogFacts::needs_count`], and the verdict is [`CatalogFacts::verdict`]'s — the same
/// bands, texts and evidence as for PostgreSQL.
pub fn preflight_with<I: SourceIndex>(
    timestamp_column: &str,
    indexes: Result<Vec<I>, String>,
    count: impl FnOnce(i64) -> RowCount,
    fingerprint: QueryFingerprint,
) -> PreflightRecord<I> {
    let mut facts = CatalogFacts {
        timestamp_column: timestamp_column.to_owned(),
        row_limit: DEFAULT_ROW_LIMIT,
        indexes,
        row_count: None,
    };
    if facts.needs_count() {
        facts.row_count = Some(count(facts.row_limit));
    }
    facts.verdict(fingerprint)
}

fn read_indexes(client: &mut impl GenericClient, table: &SourceTable<'_>) -> Result<Vec<IndexFact>, String> {
    let context = "source index lookup failed";
    let rows =
        client.query(INDEX_QUERY, &[&table.schema, &table.table]).map_err(|error| failure_text(context, &error))?;
    let mut indexes = Vec::with_capacity(rows.len());
    for row in rows {
        let index = index_from_row(&row).map_err(|error| failure_text(context, &error))?;
        // An index none of whose parts is a column (a pure expression index) is left out, as
        // upstream's row-per-column join leaves it out: it can never lead with a column.
        if !index.columns.is_empty() {
            indexes.push(index);
        }
    }
    Ok(indexes)
}

fn index_from_row(row: &postgres::Row) -> Result<IndexFact, postgres::Error> {
    Ok(IndexFact {
        index_name: row.try_get("index_name")?,
        columns: row.try_get("columns")?,
        is_unique: row.try_get("is_unique")?,
        access_method: row.try_get("access_method")?,
        is_partial: row.try_get("is_partial")?,
        is_expression: row.try_get("is_expression")?,
        is_valid: row.try_get("is_valid")?,
        is_ready: row.try_get("is_ready")?,
    })
}

fn count_rows(client: &mut impl GenericClient, table: &SourceTable<'_>, row_limit: i64) -> RowCount {
    let sql = bounded_count_sql(table);
    match client.query(&sql, &[&row_limit]) {
        Ok(rows) => match rows.as_slice() {
            [row] => match row.try_get::<_, Option<i64>>(0) {
                Ok(Some(rows)) => RowCount::Counted(rows),
                Ok(None) | Err(_) => RowCount::Malformed,
            },
            _ => RowCount::Malformed,
        },
        Err(error) => RowCount::Failed(failure_text("bounded source row count failed", &error)),
    }
}

fn bounded_count_sql(table: &SourceTable<'_>) -> String {
    format!(
        "SELECT COUNT(*) AS table_rows FROM (SELECT 1 FROM {}.{} LIMIT $1) AS ppw_preflight_rows",
        datadiff_diff_core::plan::quoted_ident(table.schema),
        datadiff_diff_core::plan::quoted_ident(table.table)
    )
}

/// The text stored in the record's `error`. A server error contributes only its primary
/// message (never DETAIL, which can quote row values); other failures their description.
fn failure_text(context: &str, error: &postgres::Error) -> String {
    match error.as_db_error() {
        Some(db) => format!("{context}: {}", db.message()),
        None => format!("{context}: {error}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mysql_index(name: &str, column: &str, is_usable: bool) -> datadiff_diff_core::mysql::MySqlIndex {
        datadiff_diff_core::mysql::MySqlIndex {
            index_name: name.to_owned(),
            columns: vec![column.to_owned()],
            is_unique: false,
            access_method: "btree".to_owned(),
            is_usable,
        }
    }

    #[test]
    fn a_mysql_source_gets_the_same_verdict_with_mysql_evidence() {
        use datadiff_diff_core::attempt::PreflightStatus;
        let fingerprint = || QueryFingerprint::of_sql("SELECT 1");
        // A usable leading index: PASS, no count.
        let indexed = preflight_with(
            "UPDATED_AT",
            Ok(vec![mysql_index("ix_ts", "updated_at", true)]),
            |_| panic!("no count with a usable leading index"),
            fingerprint(),
        );
        assert_eq!(
            (indexed.status, indexed.has_leading_index, indexed.row_limit),
            (PreflightStatus::Pass, Some(true), None)
        );
        assert_eq!(
            indexed.index_metadata_json(),
            serde_json::json!([{"index_name": "ix_ts", "columns": ["updated_at"], "is_unique": false,
                                "access_method": "btree", "is_usable": true}])
        );
        // A hidden (ignored) leading index does not qualify: the small-table bands apply.
        let hidden = || Ok(vec![mysql_index("ix_hidden", "updated_at", false)]);
        let mut limits = Vec::new();
        let warned = preflight_with(
            "updated_at",
            hidden(),
            |limit| {
                limits.push(limit);
                RowCount::Counted(99_999)
            },
            fingerprint(),
        );
        assert_eq!(limits, [100_000], "the bounded count uses upstream's limit");
        assert_eq!(
            (warned.status, warned.has_leading_index, warned.index_warning),
            (PreflightStatus::Pass, Some(false), true)
        );
        let blocked = preflight_with("updated_at", hidden(), |_| RowCount::Counted(100_000), fingerprint());
        assert_eq!(blocked.status, PreflightStatus::Blocked);
        assert!(blocked.findings[0].ends_with("; ignored as unusable: ix_hidden"), "{:?}", blocked.findings);
        let failed = preflight_with(
            "updated_at",
            hidden(),
            |_| RowCount::Failed("bounded source row count failed: x".into()),
            fingerprint(),
        );
        assert_eq!(
            (failed.status, failed.error.as_deref()),
            (PreflightStatus::Error, Some("bounded source row count failed: x"))
        );
        let lookup = preflight_with::<datadiff_diff_core::mysql::MySqlIndex>(
            "updated_at",
            Err("source index lookup failed: y".into()),
            |_| RowCount::Malformed,
            fingerprint(),
        );
        assert_eq!((lookup.status, lookup.has_leading_index), (PreflightStatus::Error, None));
    }

    #[test]
    fn bounded_count_quotes_the_table_and_never_filters() {
        let table = SourceTable { schema: "public", table: "payments", timestamp_column: "updated_at" };
        assert_eq!(
            bounded_count_sql(&table),
            r#"SELECT COUNT(*) AS table_rows FROM (SELECT 1 FROM "public"."payments" LIMIT $1) AS ppw_preflight_rows"#
        );
        let odd = SourceTable { schema: "Sales Data", table: "order\"items", timestamp_column: "t" };
        assert_eq!(
            bounded_count_sql(&odd),
            r#"SELECT COUNT(*) AS table_rows FROM (SELECT 1 FROM "Sales Data"."order""items" LIMIT $1) AS ppw_preflight_rows"#
        );
    }
}
