//! The preflight record: one `dd_preflight_log` row, less its ids and time.

use serde_json::Value;

use crate::fingerprint::{MetadataOnlyScope, QueryFingerprint};
use crate::index::{IndexFact, SourceIndex};
use datadiff_diff_core::attempt::{PreflightFacts, PreflightStatus};

/// The single finding of a metadata-only preflight.
const METADATA_ONLY_FINDING: &str = "Metadata-only check; no source data query was executed";

/// Everything a preflight decided and saw.
///
/// The fields map one to one onto `dd_preflight_log` columns (`preflight_id`, `check_id` and
/// `checked_at` are the store's business), except [`PreflightRecord::index_warning`], which
/// upstream never stores: it only decides whether a source-index warning is sent.
///
/// `I` is the kind of index in `index_metadata` ([`IndexFact`] for PostgreSQL sources, the
/// default; `MySqlIndex` for MySQL or MariaDB sources).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreflightRecord<I = IndexFact> {
    /// `status`.
    pub status: PreflightStatus,
    /// `query_fingerprint`.
    pub query_fingerprint: QueryFingerprint,
    /// `index_metadata`: every index of the source table in index-name order (see
    /// [`PreflightRecord::index_metadata_json`]); empty when the lookup failed or was not
    /// made.
    pub index_metadata: Vec<I>,
    /// `findings`: human-readable reasons, empty for an indexed PASS and for ERROR.
    pub findings: Vec<String>,
    /// `has_leading_index`: a usable index leads with the timestamp column. `None` for
    /// metadata-only and placeholder records and when the index lookup failed.
    pub has_leading_index: Option<bool>,
    /// `table_rows`: the bounded count, exact below the limit and "at least" at it. `None`
    /// when an index made counting unnecessary or the count failed.
    pub table_rows: Option<i64>,
    /// `row_limit`: the bound of the count; `None` when an index made counting unnecessary,
    /// for metadata-only and placeholder records, and when the limit itself was invalid.
    pub row_limit: Option<i64>,
    /// `error`: why the preflight is ERROR; `None` otherwise.
    pub error: Option<String>,
    /// Not stored. True for a PASS of an unindexed table with 50,000 to 99,999 rows: it
    /// passes now but will be BLOCKED as it grows, so its owners get a warning.
    pub index_warning: bool,
}

impl PreflightRecord {
    /// The record of a definition that reads no source data (only `schema_compatibility`):
    /// PASS, no index inspection, no count, upstream's metadata-only finding.
    pub fn metadata_only(scope: &MetadataOnlyScope) -> Self {
        PreflightRecord {
            status: PreflightStatus::Pass,
            query_fingerprint: scope.fingerprint(),
            index_metadata: Vec::new(),
            findings: vec![METADATA_ONLY_FINDING.to_owned()],
            has_leading_index: None,
            table_rows: None,
            row_limit: None,
            error: None,
            index_warning: false,
        }
    }

    /// The record written when a run fails before any preflight was decided (connection
    /// failure, configuration mismatch, missing column, interruption): ERROR with `error`,
    /// the placeholder fingerprint, no evidence.
    pub fn placeholder(error: impl Into<String>) -> Self {
        PreflightRecord {
            status: PreflightStatus::Error,
            query_fingerprint: QueryFingerprint::placeholder(),
            index_metadata: Vec::new(),
            findings: Vec::new(),
            has_leading_index: None,
            table_rows: None,
            row_limit: None,
            error: Some(error.into()),
            index_warning: false,
        }
    }
}

impl<I: SourceIndex> PreflightRecord<I> {
    /// Whether the run may go on to read source data.
    pub fn passed(&self) -> bool {
        self.status == PreflightStatus::Pass
    }

    /// The `index_metadata` JSONB value: an array of one object per index.
    pub fn index_metadata_json(&self) -> Value {
        Value::Array(self.index_metadata.iter().map(SourceIndex::metadata_json).collect())
    }

    /// The `findings` JSONB value: an array of strings.
    pub fn findings_json(&self) -> Value {
        Value::Array(self.findings.iter().cloned().map(Value::String).collect())
    }
}

/// The facts of a record that run summaries carry (and alerts read):
/// `PreflightFacts::of(&record)`.
impl<I: SourceIndex> From<&PreflightRecord<I>> for PreflightFacts {
    fn from(record: &PreflightRecord<I>) -> PreflightFacts {
        PreflightFacts {
            status: record.status,
            index_warning: record.index_warning,
            table_rows: record.table_rows,
            row_limit: record.row_limit,
            findings: record.findings.clone(),
            has_leading_index: record.has_leading_index,
            metadata_only: record.status == PreflightStatus::Pass
                && record.has_leading_index.is_none()
                && record.row_limit.is_none()
                && record.error.is_none(),
            placeholder: record.query_fingerprint == QueryFingerprint::placeholder(),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn scope() -> MetadataOnlyScope {
        MetadataOnlyScope {
            source_schema: "public".to_owned(),
            source_table: "payments".to_owned(),
            target_schema: "PUBLIC".to_owned(),
            target_table: "PAYMENTS".to_owned(),
            columns: vec!["id".to_owned(), "updated_at".to_owned(), "status".to_owned()],
        }
    }

    #[test]
    fn metadata_only_record_matches_upstream() {
        let record = PreflightRecord::metadata_only(&scope());
        assert_eq!(record.status, PreflightStatus::Pass);
        assert_eq!(
            record.query_fingerprint.as_str(),
            "98d53590c3d16fa6c5e20fc8aa0217f919ac6dbe27f9d37bddc9e98ab1a0109c"
        );
        assert_eq!(record.findings_json(), json!(["Metadata-only check; no source data query was executed"]));
        assert_eq!(record.index_metadata_json(), json!([]));
        assert_eq!((record.has_leading_index, record.table_rows, record.row_limit), (None, None, None));
        assert_eq!(record.error, None);
        assert!(!record.index_warning);
        assert!(record.passed());
    }

    #[test]
    fn placeholder_record_matches_upstream() {
        let record = PreflightRecord::placeholder("could not connect to the source");
        assert_eq!(record.status, PreflightStatus::Error);
        assert_eq!(
            record.query_fingerprint.as_str(),
            "a6b1d1cb1fc80af3eaed07d826a028de62259650b0aa4505237d66e40e95a855"
        );
        assert_eq!(record.findings_json(), json!([]));
        assert_eq!(record.index_metadata_json(), json!([]));
        assert_eq!((record.has_leading_index, record.table_rows, record.row_limit), (None, None, None));
        assert_eq!(record.error.as_deref(), Some("could not connect to the source"));
        assert!(!record.passed());
    }

    #[test]
    fn metadata_only_preflights_are_recognised() {
        let scope = MetadataOnlyScope {
            source_schema: "public".into(),
            source_table: "t".into(),
            target_schema: "public".into(),
            target_table: "t".into(),
            columns: vec!["id".into()],
        };
        let metadata_only = PreflightFacts::of(&PreflightRecord::metadata_only(&scope));
        assert!(metadata_only.metadata_only && !metadata_only.placeholder);
        let placeholder = PreflightFacts::of(&PreflightRecord::placeholder("no connection"));
        assert!(!placeholder.metadata_only && placeholder.placeholder);
        assert_eq!(placeholder.status, PreflightStatus::Error);
    }
}
