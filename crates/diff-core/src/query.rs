//! The aggregate SQL of one attempt, **PostgreSQL only**: one `SELECT` per side computing every
//! metric check over the half-open window, and the `MIN` of the timestamp before a historical
//! run's cutoff (config note §2.1).
//!
//! This is string building, kept in the pure core so that every rule — quoting, the exact
//! expressions, the two placeholders and nothing else in the `WHERE` — is unit-testable
//! without a database. The text is exactly PipelineWise's PostgreSQL text, so with
//! [`Placeholders::Pyformat`] it hashes to the same preflight `query_fingerprint`; the runner
//! executes the [`Placeholders::Numbered`] form (`$1`, `$2`), binding the window bounds as
//! `timestamptz`, or as naive UTC for a naive timestamp column
//! ([`CatalogColumn::is_naive_timestamp`](crate::column::CatalogColumn::is_naive_timestamp)).
//!
//! The MySQL/MariaDB source forms are in [`crate::mysql`]; Snowflake targets are not executed by
//! datadiff (SPEC §0) and have no builder here.

use crate::checksum::ChecksumPlan;
use crate::{Side, check::CheckType};

/// The target column a Singer target sets when it soft-deletes a row; `exclude_soft_deleted`
/// leaves out target rows where it is not NULL.
pub const SOFT_DELETE_COLUMN: &str = "_sdc_deleted_at";

/// An identifier that cannot be quoted: empty, or containing NUL. The text is PipelineWise's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("Database identifiers must be non-empty and cannot contain NUL")]
pub struct IdentifierError;

/// Quotes a PostgreSQL identifier: wrapped in `"`, every `"` inside doubled (`order"items` →
/// `"order""items"`). Always quoted, so the name is taken exactly, case and all. Empty names
/// and names containing NUL are rejected, as upstream rejects them.
pub fn quote_ident(name: &str) -> Result<String, IdentifierError> {
    if name.is_empty() || name.contains('\0') {
        return Err(IdentifierError);
    }
    Ok(quoted_ident(name))
}

/// Quotes a PostgreSQL identifier as [`quote_ident`] does, without refusing anything: for
/// names the server itself reports or accepts (catalog rows, role names), where an empty or
/// NUL-bearing name cannot occur — the server would reject the statement anyway.
pub fn quoted_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// `"schema"."table"`.
pub fn qualified_table(schema: &str, table: &str) -> Result<String, IdentifierError> {
    Ok(format!("{}.{}", quote_ident(schema)?, quote_ident(table)?))
}

/// How bind parameters are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placeholders {
    /// PostgreSQL's own `$1`, `$2`: the form to execute.
    Numbered,
    /// psycopg2's `%s`: the form PipelineWise fingerprints (SHA-256 of this text).
    Pyformat,
}

impl Placeholders {
    fn nth(self, position: usize) -> String {
        match self {
            Placeholders::Numbered => format!("${position}"),
            Placeholders::Pyformat => "%s".to_owned(),
        }
    }
}

/// Why a metric query cannot be built.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum QueryError {
    /// A schema, table or column name cannot be quoted.
    #[error(transparent)]
    Identifier(#[from] IdentifierError),
    /// `row_checksum` is among the metrics but no checksum columns were given.
    #[error("row_checksum needs its checksum columns")]
    ChecksumWithoutColumns,
    /// `schema_compatibility` reads no data and has no aggregate.
    #[error("{0} is not an aggregate metric")]
    NotAMetric(CheckType),
}

/// The aggregate expression of a metric check other than `row_checksum`, over the quoted key.
fn metric_expression(check: CheckType, key: &str) -> Option<String> {
    Some(match check {
        CheckType::RowCount => "COUNT(*)".to_owned(),
        CheckType::DistinctKeyCount => format!("COUNT(DISTINCT {key})"),
        CheckType::NullKeyCount => format!("COUNT(*) - COUNT({key})"),
        CheckType::DuplicateKeyCount => format!("COUNT({key}) - COUNT(DISTINCT {key})"),
        CheckType::MinKey => format!("MIN({key})"),
        CheckType::MaxKey => format!("MAX({key})"),
        CheckType::RowChecksum | CheckType::SchemaCompatibility => return None,
    })
}

/// One side's aggregate query:
///
/// ```text
/// SELECT <expr> AS "<check>", … FROM "<schema>"."<table>" WHERE "<ts>" >= $1 AND "<ts>" < $2
/// ```
///
/// NULL timestamps fall out of the window because comparisons with NULL are not true; no
/// `IS NULL` test is written. With [`soft_delete_column`](MetricQuery::soft_delete_column) set
/// (the `exclude_soft_deleted` extension, target side only) `AND "<column>" IS NULL` follows.
#[derive(Debug, Clone, Copy)]
pub struct MetricQuery<'a> {
    /// The table's schema.
    pub schema: &'a str,
    /// The table.
    pub table: &'a str,
    /// The resolved key column name.
    pub key_column: &'a str,
    /// The resolved timestamp column name.
    pub timestamp_column: &'a str,
    /// The metric checks, in the order their columns appear (`schema_compatibility` is an
    /// error).
    pub metrics: &'a [CheckType],
    /// The checksum columns, required when `metrics` holds `row_checksum`.
    pub checksum: Option<&'a ChecksumPlan>,
    /// Which side the query reads: picks the checksum's column names.
    pub side: Side,
    /// The resolved soft-delete column, when rows with it set are left out.
    pub soft_delete_column: Option<&'a str>,
}

impl MetricQuery<'_> {
    /// The SQL text.
    pub fn sql(&self, placeholders: Placeholders) -> Result<String, QueryError> {
        let key = quote_ident(self.key_column)?;
        let mut expressions = Vec::with_capacity(self.metrics.len());
        for &check in self.metrics {
            let expression = match check {
                CheckType::SchemaCompatibility => return Err(QueryError::NotAMetric(check)),
                CheckType::RowChecksum => {
                    self.checksum.ok_or(QueryError::ChecksumWithoutColumns)?.postgres_expression(self.side)?
                }
                _ => metric_expression(check, &key).ok_or(QueryError::NotAMetric(check))?,
            };
            expressions.push(format!("{expression} AS {}", quote_ident(check.as_str())?));
        }
        let timestamp = quote_ident(self.timestamp_column)?;
        let mut predicates =
            vec![format!("{timestamp} >= {}", placeholders.nth(1)), format!("{timestamp} < {}", placeholders.nth(2))];
        if let Some(column) = self.soft_delete_column {
            predicates.push(format!("{} IS NULL", quote_ident(column)?));
        }
        Ok(format!(
            "SELECT {} FROM {} WHERE {}",
            expressions.join(", "),
            qualified_table(self.schema, self.table)?,
            predicates.join(" AND ")
        ))
    }
}

/// The earliest non-NULL timestamp before a historical run's cutoff (one placeholder):
///
/// ```text
/// SELECT MIN("<ts>") FROM "<schema>"."<table>" WHERE "<ts>" < $1
/// ```
///
/// With a soft-delete column, `AND "<column>" IS NULL` follows: rows every check leaves out do
/// not start the history either (a datadiff decision; upstream has no such extension).
#[derive(Debug, Clone, Copy)]
pub struct MinimumQuery<'a> {
    /// The table's schema.
    pub schema: &'a str,
    /// The table.
    pub table: &'a str,
    /// The resolved timestamp column name.
    pub timestamp_column: &'a str,
    /// The resolved soft-delete column, when rows with it set are left out.
    pub soft_delete_column: Option<&'a str>,
}

impl MinimumQuery<'_> {
    /// The SQL text.
    pub fn sql(&self, placeholders: Placeholders) -> Result<String, IdentifierError> {
        let timestamp = quote_ident(self.timestamp_column)?;
        let mut sql = format!(
            "SELECT MIN({timestamp}) FROM {} WHERE {timestamp} < {}",
            qualified_table(self.schema, self.table)?,
            placeholders.nth(1)
        );
        if let Some(column) = self.soft_delete_column {
            sql.push_str(&format!(" AND {} IS NULL", quote_ident(column)?));
        }
        Ok(sql)
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use sha2::{Digest, Sha256};

    use super::*;

    fn query<'a>(metrics: &'a [CheckType]) -> MetricQuery<'a> {
        MetricQuery {
            schema: "public",
            table: "payments",
            key_column: "id",
            timestamp_column: "updated_at",
            metrics,
            checksum: None,
            side: Side::Source,
            soft_delete_column: None,
        }
    }

    #[test]
    fn identifiers_are_always_quoted_with_doubled_quotes() {
        assert_eq!(quote_ident("order\"items").unwrap(), "\"order\"\"items\"");
        assert_eq!(quote_ident("Mixed Case").unwrap(), "\"Mixed Case\"");
        assert_eq!(quote_ident("\"").unwrap(), "\"\"\"\"");
        assert_eq!(quote_ident("é").unwrap(), "\"é\"");
        assert_eq!(qualified_table("sales", "order\"items").unwrap(), "\"sales\".\"order\"\"items\"");
    }

    #[test]
    fn empty_and_nul_identifiers_are_rejected_with_upstream_text() {
        for name in ["", "a\0b", "\0"] {
            assert_eq!(quote_ident(name), Err(IdentifierError));
        }
        assert_eq!(IdentifierError.to_string(), "Database identifiers must be non-empty and cannot contain NUL");
        let mut empty_table = query(&[CheckType::RowCount]);
        empty_table.table = "";
        assert_eq!(empty_table.sql(Placeholders::Numbered), Err(QueryError::Identifier(IdentifierError)));
        assert_eq!(
            QueryError::Identifier(IdentifierError).to_string(),
            "Database identifiers must be non-empty and cannot contain NUL"
        );
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
        let mut spec = query(&metrics);
        spec.schema = "sales";
        spec.table = "order\"items";
        spec.key_column = "Order Id";
        let sql = spec.sql(Placeholders::Numbered).unwrap();
        assert_eq!(
            sql,
            "SELECT COUNT(*) AS \"row_count\", COUNT(DISTINCT \"Order Id\") AS \"distinct_key_count\", \
             COUNT(*) - COUNT(\"Order Id\") AS \"null_key_count\", \
             COUNT(\"Order Id\") - COUNT(DISTINCT \"Order Id\") AS \"duplicate_key_count\", \
             MIN(\"Order Id\") AS \"min_key\", MAX(\"Order Id\") AS \"max_key\" \
             FROM \"sales\".\"order\"\"items\" WHERE \"updated_at\" >= $1 AND \"updated_at\" < $2"
        );
        let pyformat = spec.sql(Placeholders::Pyformat).unwrap();
        assert!(pyformat.ends_with("WHERE \"updated_at\" >= %s AND \"updated_at\" < %s"), "{pyformat}");
    }

    #[test]
    fn metric_query_excludes_null_timestamps_without_is_null_and_has_two_placeholders() {
        let sql = query(&[CheckType::RowCount, CheckType::MinKey]).sql(Placeholders::Pyformat).unwrap();
        assert!(!sql.contains("IS NULL"), "{sql}");
        assert_eq!(sql.matches("%s").count(), 2);
        let sql = query(&[CheckType::RowCount]).sql(Placeholders::Numbered).unwrap();
        assert_eq!((sql.matches("$1").count(), sql.matches("$2").count(), sql.matches('$').count()), (1, 1, 2));
    }

    #[test]
    fn fingerprint_text_matches_upstream_vector() {
        // Config note §3.4: the source SQL PipelineWise hashes, and its SHA-256.
        let sql = query(&[CheckType::RowCount]).sql(Placeholders::Pyformat).unwrap();
        assert_eq!(
            sql,
            r#"SELECT COUNT(*) AS "row_count" FROM "public"."payments" WHERE "updated_at" >= %s AND "updated_at" < %s"#
        );
        let digest: String = Sha256::digest(sql.as_bytes()).iter().map(|byte| format!("{byte:02x}")).collect();
        assert_eq!(digest, "375973ab01712e3a0bee6c933ac52b5da1c15e1d8d21a3eb9bc7888fbaaea34c");
    }

    #[test]
    fn soft_delete_predicate_is_appended_only_when_asked() {
        let mut spec = query(&[CheckType::RowCount]);
        spec.side = Side::Target;
        spec.soft_delete_column = Some(SOFT_DELETE_COLUMN);
        assert_eq!(
            spec.sql(Placeholders::Numbered).unwrap(),
            r#"SELECT COUNT(*) AS "row_count" FROM "public"."payments" WHERE "updated_at" >= $1 AND "updated_at" < $2 AND "_sdc_deleted_at" IS NULL"#
        );
    }

    #[test]
    fn misuse_is_an_error_not_odd_sql() {
        assert_eq!(
            query(&[CheckType::RowChecksum]).sql(Placeholders::Numbered),
            Err(QueryError::ChecksumWithoutColumns)
        );
        assert_eq!(
            query(&[CheckType::SchemaCompatibility]).sql(Placeholders::Numbered),
            Err(QueryError::NotAMetric(CheckType::SchemaCompatibility))
        );
    }

    #[test]
    fn minimum_timestamp_query_has_one_placeholder() {
        let minimum =
            MinimumQuery { schema: "public", table: "payments", timestamp_column: "q", soft_delete_column: None };
        assert_eq!(
            minimum.sql(Placeholders::Pyformat).unwrap(),
            r#"SELECT MIN("q") FROM "public"."payments" WHERE "q" < %s"#
        );
        assert_eq!(
            minimum.sql(Placeholders::Numbered).unwrap(),
            r#"SELECT MIN("q") FROM "public"."payments" WHERE "q" < $1"#
        );
        let soft = MinimumQuery { soft_delete_column: Some("_sdc_deleted_at"), ..minimum };
        assert_eq!(
            soft.sql(Placeholders::Numbered).unwrap(),
            r#"SELECT MIN("q") FROM "public"."payments" WHERE "q" < $1 AND "_sdc_deleted_at" IS NULL"#
        );
    }

    /// Reads a quoted identifier back as PostgreSQL's scanner does: strip the outer quotes and
    /// turn every `""` into `"`. `None` when the text is not one well-formed quoted identifier.
    fn unquote(quoted: &str) -> Option<String> {
        let inner = quoted.strip_prefix('"')?.strip_suffix('"')?;
        let mut name = String::new();
        let mut chars = inner.chars();
        while let Some(c) = chars.next() {
            if c == '"' {
                // A lone quote would end the identifier early.
                if chars.next()? != '"' {
                    return None;
                }
            }
            name.push(c);
        }
        Some(name)
    }

    proptest! {
        #[test]
        fn quoting_round_trips_through_the_scanner(name in "[^\\x00]{1,40}") {
            let quoted = quote_ident(&name).unwrap();
            prop_assert_eq!(unquote(&quoted), Some(name));
        }

        #[test]
        fn quoting_rejects_exactly_empty_and_nul_names(name in "(.|\\x00){0,8}") {
            prop_assert_eq!(quote_ident(&name).is_err(), name.is_empty() || name.contains('\0'));
        }
    }
}
