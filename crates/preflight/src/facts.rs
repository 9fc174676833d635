//! Catalog facts about a source table, and the pure verdict over them.

use crate::fingerprint::QueryFingerprint;
use crate::index::{IndexFact, SourceIndex};
use crate::record::PreflightRecord;
use datadiff_diff_core::attempt::PreflightStatus;

/// The bound of the row count the runner uses, as upstream (`LIMIT 100000`).
pub const DEFAULT_ROW_LIMIT: i64 = 100_000;

/// From this many rows an unindexed table passes with an index warning.
pub const WARNING_ROWS: i64 = 50_000;

/// From this many rows an unindexed table is BLOCKED.
pub const BLOCKING_ROWS: i64 = 100_000;

/// The error text of a count that is missing, NULL, not an integer, negative or above its
/// limit (upstream's text).
const MALFORMED_COUNT_ERROR: &str = "The bounded preflight row count is not a valid integer";

/// The error text of a row limit that is not positive (upstream's text).
const INVALID_ROW_LIMIT_ERROR: &str = "The preflight row limit must be a positive integer";

/// The second BLOCKED finding.
const ADD_INDEX_FINDING: &str =
    "Add a source index beginning with the timestamp column; PipelineWise will not create it automatically";

/// What the bounded count query returned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RowCount {
    /// One integer value. Whether it is in range (0 ≤ n ≤ limit) is the verdict's to check.
    Counted(i64),
    /// No row, a NULL, or a value that is not an integer.
    Malformed,
    /// The query failed; the text becomes the record's `error`.
    Failed(String),
}

/// Everything the verdict looks at, as the gatherer read it (or a test wrote it).
///
/// `I` is the kind of index: [`IndexFact`] for PostgreSQL (what [`gather`](crate::gather)
/// reads), [`MySqlIndex`](datadiff_diff_core::mysql::MySqlIndex) for MySQL or MariaDB.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CatalogFacts<I = IndexFact> {
    /// The definition's source timestamp column, as configured.
    pub timestamp_column: String,
    /// The bound the count used (or would use): [`DEFAULT_ROW_LIMIT`] in the runner.
    pub row_limit: i64,
    /// The source table's indexes in index-name order, or the lookup's failure text.
    pub indexes: Result<Vec<I>, String>,
    /// The bounded count; `None` when it was not run. It is run only when the lookup
    /// succeeded, no usable index leads with the timestamp column and the limit is valid; a
    /// missing count where one is needed fails closed as a malformed count.
    pub row_count: Option<RowCount>,
}

impl<I: SourceIndex> CatalogFacts<I> {
    /// Whether a usable index leads with the timestamp column; `None` when the lookup failed.
    pub fn has_leading_index(&self) -> Option<bool> {
        let indexes = self.indexes.as_ref().ok()?;
        Some(indexes.iter().any(|index| index.usable() && index.leads_with_column(&self.timestamp_column)))
    }

    /// Whether the verdict needs a row count: the lookup succeeded, found no usable leading
    /// index, and the limit is valid. The gatherer runs the count exactly then.
    pub fn needs_count(&self) -> bool {
        self.has_leading_index() == Some(false) && self.row_limit > 0
    }

    /// The verdict over these facts (the config note §3.3).
    ///
    /// | facts | status | findings | `index_warning` |
    /// |---|---|---|---|
    /// | lookup failed | ERROR | none | false |
    /// | usable leading index | PASS | none | false |
    /// | limit ≤ 0, or count failed or malformed | ERROR | none | false |
    /// | count n < 50,000 | PASS | allow text with `{n:,}` | false |
    /// | 50,000 ≤ n < 100,000 | PASS | allow text | **true** |
    /// | n ≥ 100,000, or n reached its limit | BLOCKED | two texts | false |
    ///
    /// `fingerprint` is the caller's: the SHA-256 of the source SQL the check will run
    /// ([`QueryFingerprint::of_sql`]). The window plays no part.
    ///
    /// A count that reached its limit means "at least that many rows", so it blocks even
    /// when a caller chose a limit below 100,000: the verdict fails closed rather than
    /// letting an unknown size pass. With [`DEFAULT_ROW_LIMIT`] the two rules coincide.
    pub fn verdict(&self, fingerprint: QueryFingerprint) -> PreflightRecord<I> {
        let valid_limit = (self.row_limit > 0).then_some(self.row_limit);
        let error = |index_metadata: Vec<I>, has_leading_index: Option<bool>, text: &str| PreflightRecord {
            status: PreflightStatus::Error,
            query_fingerprint: fingerprint.clone(),
            index_metadata,
            findings: Vec::new(),
            has_leading_index,
            table_rows: None,
            row_limit: valid_limit,
            error: Some(text.to_owned()),
            index_warning: false,
        };

        let indexes = match &self.indexes {
            Ok(indexes) => indexes,
            Err(text) => return error(Vec::new(), None, text),
        };
        if self.has_leading_index() == Some(true) {
            return PreflightRecord {
                status: PreflightStatus::Pass,
                query_fingerprint: fingerprint,
                index_metadata: indexes.clone(),
                findings: Vec::new(),
                has_leading_index: Some(true),
                table_rows: None,
                row_limit: None,
                error: None,
                index_warning: false,
            };
        }
        let Some(limit) = valid_limit else {
            return error(indexes.clone(), Some(false), INVALID_ROW_LIMIT_ERROR);
        };
        let rows = match &self.row_count {
            Some(RowCount::Counted(rows)) if (0..=limit).contains(rows) => *rows,
            Some(RowCount::Failed(text)) => return error(indexes.clone(), Some(false), text),
            Some(RowCount::Counted(_) | RowCount::Malformed) | None => {
                return error(indexes.clone(), Some(false), MALFORMED_COUNT_ERROR);
            }
        };

        let blocked = rows >= BLOCKING_ROWS || rows >= limit;
        let findings = if blocked {
            vec![self.missing_index_finding(indexes), ADD_INDEX_FINDING.to_owned()]
        } else {
            vec![format!(
                "Allow the unindexed source table with {} rows; a usable leading timestamp index is required at {} rows",
                thousands(rows),
                thousands(BLOCKING_ROWS)
            )]
        };
        PreflightRecord {
            status: if blocked { PreflightStatus::Blocked } else { PreflightStatus::Pass },
            query_fingerprint: fingerprint,
            index_metadata: indexes.clone(),
            findings,
            has_leading_index: Some(false),
            table_rows: Some(rows),
            row_limit: Some(limit),
            error: None,
            index_warning: !blocked && rows >= WARNING_ROWS,
        }
    }

    /// The first BLOCKED finding, naming the indexes that lead with the timestamp column but
    /// cannot be used (partial, expression, invalid, not ready, not btree), in name order.
    fn missing_index_finding(&self, indexes: &[I]) -> String {
        let mut finding = format!("No usable source index starts with timestamp column '{}'", self.timestamp_column);
        let ignored: Vec<&str> = indexes
            .iter()
            .filter(|index| !index.usable() && index.leads_with_column(&self.timestamp_column))
            .map(|index| index.name())
            .collect();
        if !ignored.is_empty() {
            finding.push_str("; ignored as unusable: ");
            finding.push_str(&ignored.join(", "));
        }
        finding
    }
}

/// `n` with comma thousands separators, as Python's `{n:,}`.
fn thousands(n: i64) -> String {
    let digits = n.unsigned_abs().to_string();
    let mut grouped = String::with_capacity(digits.len() + digits.len() / 3 + 1);
    if n < 0 {
        grouped.push('-');
    }
    for (position, digit) in digits.chars().enumerate() {
        if position > 0 && (digits.len() - position).is_multiple_of(3) {
            grouped.push(',');
        }
        grouped.push(digit);
    }
    grouped
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::index::tests::btree;

    const ALLOW_TAIL: &str = "a usable leading timestamp index is required at 100,000 rows";

    fn fingerprint() -> QueryFingerprint {
        QueryFingerprint::of_sql("SELECT 1")
    }

    fn facts(indexes: Vec<IndexFact>, row_count: Option<RowCount>) -> CatalogFacts {
        CatalogFacts {
            timestamp_column: "updated_at".to_owned(),
            row_limit: DEFAULT_ROW_LIMIT,
            indexes: Ok(indexes),
            row_count,
        }
    }

    fn unindexed(rows: i64) -> PreflightRecord {
        facts(vec![btree("pk", &["id"])], Some(RowCount::Counted(rows))).verdict(fingerprint())
    }

    #[test]
    fn thousands_groups_like_python() {
        let cases = [
            (0, "0"),
            (7, "7"),
            (999, "999"),
            (1_000, "1,000"),
            (49_999, "49,999"),
            (100_000, "100,000"),
            (1_234_567, "1,234,567"),
            (-1_234, "-1,234"),
            (i64::MIN, "-9,223,372,036,854,775,808"),
        ];
        for (n, text) in cases {
            assert_eq!(thousands(n), text);
        }
    }

    #[test]
    fn a_usable_leading_index_passes_without_counting() {
        let record = facts(vec![btree("ix_updated", &["UPDATED_AT", "id"])], None).verdict(fingerprint());
        assert_eq!(record.status, PreflightStatus::Pass);
        assert_eq!(record.findings, Vec::<String>::new());
        assert_eq!(record.has_leading_index, Some(true));
        assert_eq!((record.table_rows, record.row_limit), (None, None));
        assert_eq!(record.error, None);
        assert!(!record.index_warning);
        assert_eq!(record.query_fingerprint, fingerprint());
        assert_eq!(record.index_metadata_json()[0]["index_name"], json!("ix_updated"));
    }

    #[test]
    fn a_usable_leading_index_ignores_a_count_given_anyway() {
        let record = facts(vec![btree("ix", &["updated_at"])], Some(RowCount::Counted(100_000))).verdict(fingerprint());
        assert_eq!(record.status, PreflightStatus::Pass);
        assert_eq!((record.table_rows, record.row_limit), (None, None));
    }

    #[test]
    fn small_unindexed_tables_pass_with_the_exact_count() {
        for (rows, text) in [(0, "0"), (1, "1"), (1_234, "1,234"), (49_999, "49,999")] {
            let record = unindexed(rows);
            assert_eq!(record.status, PreflightStatus::Pass, "{rows}");
            assert!(!record.index_warning, "{rows}");
            assert_eq!(
                record.findings,
                vec![format!("Allow the unindexed source table with {text} rows; {ALLOW_TAIL}")]
            );
            assert_eq!(record.has_leading_index, Some(false));
            assert_eq!((record.table_rows, record.row_limit), (Some(rows), Some(100_000)));
            assert_eq!(record.error, None);
        }
    }

    #[test]
    fn the_warning_band_passes_with_an_index_warning() {
        for (rows, text) in [(50_000, "50,000"), (75_000, "75,000"), (99_999, "99,999")] {
            let record = unindexed(rows);
            assert_eq!(record.status, PreflightStatus::Pass, "{rows}");
            assert!(record.index_warning, "{rows}");
            assert_eq!(
                record.findings,
                vec![format!("Allow the unindexed source table with {text} rows; {ALLOW_TAIL}")]
            );
            assert_eq!((record.table_rows, record.row_limit), (Some(rows), Some(100_000)));
        }
    }

    #[test]
    fn a_count_reaching_the_limit_blocks() {
        let record = unindexed(100_000);
        assert_eq!(record.status, PreflightStatus::Blocked);
        assert!(!record.index_warning);
        assert_eq!(
            record.findings,
            vec![
                "No usable source index starts with timestamp column 'updated_at'".to_owned(),
                "Add a source index beginning with the timestamp column; PipelineWise will not create it automatically"
                    .to_owned(),
            ]
        );
        assert_eq!(record.has_leading_index, Some(false));
        assert_eq!((record.table_rows, record.row_limit), (Some(100_000), Some(100_000)));
        assert_eq!(record.error, None);
        assert_eq!(record.findings[0], "No usable source index starts with timestamp column 'updated_at'");
    }

    #[test]
    fn blocking_names_unusable_indexes_leading_with_the_timestamp_in_name_order() {
        let indexes = vec![
            btree("a_pk", &["id"]),
            IndexFact { access_method: "hash".to_owned(), ..btree("b_hash", &["updated_at"]) },
            btree("c_trailing", &["id", "updated_at"]),
            IndexFact { is_partial: true, ..btree("d_partial", &["Updated_At"]) },
            IndexFact { is_expression: true, ..btree("e_mixed", &["updated_at"]) },
            IndexFact { is_valid: false, ..btree("f_invalid", &["updated_at"]) },
            IndexFact { is_ready: false, ..btree("g_unready", &["updated_at"]) },
        ];
        let record = facts(indexes.clone(), Some(RowCount::Counted(100_000))).verdict(fingerprint());
        assert_eq!(record.status, PreflightStatus::Blocked);
        assert_eq!(
            record.findings[0],
            "No usable source index starts with timestamp column 'updated_at'; \
             ignored as unusable: b_hash, d_partial, e_mixed, f_invalid, g_unready"
        );
        assert_eq!(record.index_metadata, indexes);
        let usable: Vec<bool> = (0..7).map(|i| record.index_metadata_json()[i]["is_usable"] == json!(true)).collect();
        assert_eq!(usable, [true, false, true, false, false, false, false]);
    }

    #[test]
    fn indexes_that_do_not_lead_with_the_timestamp_block_without_an_ignored_list() {
        // Upstream's cases: no index, [id], [id, updated_at] and an empty column list.
        for indexes in
            [vec![], vec![btree("pk", &["id"])], vec![btree("ix", &["id", "updated_at"])], vec![btree("ix", &[])]]
        {
            let record = facts(indexes, Some(RowCount::Counted(100_000))).verdict(fingerprint());
            assert_eq!(record.status, PreflightStatus::Blocked);
            assert_eq!(record.findings[0], "No usable source index starts with timestamp column 'updated_at'");
        }
    }

    #[test]
    fn an_unusable_index_does_not_qualify_a_small_table() {
        let partial = IndexFact { is_partial: true, ..btree("partial_idx", &["updated_at"]) };
        let record = facts(vec![partial], Some(RowCount::Counted(99_999))).verdict(fingerprint());
        assert_eq!(record.status, PreflightStatus::Pass);
        assert_eq!(record.has_leading_index, Some(false));
        assert!(record.index_warning);
        assert_eq!(record.findings.len(), 1);
    }

    #[test]
    fn malformed_counts_fail_closed() {
        let cases = [None, Some(RowCount::Malformed), Some(RowCount::Counted(-1)), Some(RowCount::Counted(100_001))];
        for row_count in cases {
            let record = facts(vec![btree("pk", &["id"])], row_count.clone()).verdict(fingerprint());
            assert_eq!(record.status, PreflightStatus::Error, "{row_count:?}");
            assert_eq!(record.error.as_deref(), Some("The bounded preflight row count is not a valid integer"));
            assert_eq!(record.findings, Vec::<String>::new());
            assert_eq!(record.table_rows, None);
            assert_eq!(record.row_limit, Some(100_000));
            assert_eq!(record.has_leading_index, Some(false));
            assert_eq!(record.index_metadata, vec![btree("pk", &["id"])]);
            assert!(!record.index_warning);
            assert_eq!(record.error.as_deref(), Some("The bounded preflight row count is not a valid integer"));
        }
    }

    #[test]
    fn a_failed_count_keeps_the_index_evidence() {
        let failed = RowCount::Failed("canceling statement due to statement timeout".to_owned());
        let record = facts(vec![btree("pk", &["id"])], Some(failed)).verdict(fingerprint());
        assert_eq!(record.status, PreflightStatus::Error);
        assert_eq!(record.error.as_deref(), Some("canceling statement due to statement timeout"));
        assert_eq!(record.index_metadata, vec![btree("pk", &["id"])]);
        assert_eq!(record.has_leading_index, Some(false));
        assert_eq!((record.table_rows, record.row_limit), (None, Some(100_000)));
        assert_eq!(record.findings, Vec::<String>::new());
    }

    #[test]
    fn a_failed_lookup_has_no_evidence() {
        let record = CatalogFacts::<IndexFact> {
            timestamp_column: "updated_at".to_owned(),
            row_limit: DEFAULT_ROW_LIMIT,
            indexes: Err("permission denied for schema hidden".to_owned()),
            row_count: Some(RowCount::Counted(3)),
        }
        .verdict(fingerprint());
        assert_eq!(record.status, PreflightStatus::Error);
        assert_eq!(record.error.as_deref(), Some("permission denied for schema hidden"));
        assert_eq!(record.index_metadata_json(), json!([]));
        assert_eq!(record.has_leading_index, None);
        assert_eq!((record.table_rows, record.row_limit), (None, Some(100_000)));
        assert!(!record.index_warning);
    }

    #[test]
    fn a_non_positive_limit_is_an_error() {
        for limit in [0, -1, i64::MIN] {
            let record =
                CatalogFacts { row_limit: limit, ..facts(vec![], Some(RowCount::Counted(0))) }.verdict(fingerprint());
            assert_eq!(record.status, PreflightStatus::Error);
            assert_eq!(record.error.as_deref(), Some("The preflight row limit must be a positive integer"));
            assert_eq!((record.table_rows, record.row_limit), (None, None));
            assert_eq!(record.has_leading_index, Some(false));
        }
    }

    #[test]
    fn a_limit_is_irrelevant_when_an_index_qualifies() {
        let record =
            CatalogFacts { row_limit: 0, ..facts(vec![btree("ix", &["updated_at"])], None) }.verdict(fingerprint());
        assert_eq!(record.status, PreflightStatus::Pass);
    }

    #[test]
    fn a_count_reaching_a_smaller_limit_blocks() {
        let small = |rows| {
            CatalogFacts { row_limit: 10, ..facts(vec![], Some(RowCount::Counted(rows))) }.verdict(fingerprint())
        };
        assert_eq!(small(9).status, PreflightStatus::Pass);
        assert_eq!(small(10).status, PreflightStatus::Blocked);
        assert_eq!(small(11).status, PreflightStatus::Error);
    }

    #[test]
    fn needs_count_follows_the_index_and_the_limit() {
        assert!(facts(vec![btree("pk", &["id"])], None).needs_count());
        assert!(!facts(vec![btree("ix", &["updated_at"])], None).needs_count());
        assert!(!CatalogFacts { row_limit: 0, ..facts(vec![], None) }.needs_count());
        assert!(!CatalogFacts { indexes: Err("x".to_owned()), ..facts(vec![], None) }.needs_count());
    }

    #[test]
    fn the_verdict_keeps_the_callers_fingerprint() {
        let other = QueryFingerprint::of_sql("SELECT 2");
        for record in [
            unindexed(10),
            facts(vec![], Some(RowCount::Malformed)).verdict(fingerprint()),
            facts(vec![btree("ix", &["updated_at"])], None).verdict(fingerprint()),
        ] {
            assert_eq!(record.query_fingerprint, fingerprint());
            assert_ne!(record.query_fingerprint, other);
        }
    }
}
