//! The identity of a source-index warning (`dd_index_warning_state.warning_id`): pure, so the
//! run summaries that name a source table can compute it (the preflight crate re-exports it).

use std::fmt;

use uuid::Uuid;

use crate::canonical_json::{PythonSeparators, python_json_with};

/// The first element of the identity array, naming what the identity is for.
const IDENTITY_TAG: &str = "pipelinewise.data_diff.index_warning";

/// The source scope a warning is about. Target, definition revision, frequency and compare
/// columns are deliberately absent: a warning is delivered once per source table and
/// timestamp column, whatever replicates it and however often the check is re-imported.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct IndexWarningIdentity<'a> {
    /// The tap id (`tap_id` of the tap YAML).
    pub tap_id: &'a str,
    /// The tap type, such as `tap-postgres`.
    pub source_type: &'a str,
    /// The source database name persisted on the definition.
    pub source_database: &'a str,
    /// The source schema.
    pub source_schema: &'a str,
    /// The source table.
    pub source_table: &'a str,
    /// The source timestamp column.
    pub source_timestamp_column: &'a str,
}

impl IndexWarningIdentity<'_> {
    /// The hashed name: the compact JSON array (`,` and `:` separators, Python's ASCII
    /// escapes) of the tag and the six fields, in upstream's order.
    pub fn name(&self) -> String {
        let identity = serde_json::json!([
            IDENTITY_TAG,
            self.tap_id,
            self.source_type,
            self.source_database,
            self.source_schema,
            self.source_table,
            self.source_timestamp_column,
        ]);
        python_json_with(&identity, PythonSeparators::Compact)
    }

    /// UUID v5 of [`IndexWarningIdentity::name`] in the URL namespace — the id upstream
    /// computes, so both tools remember the same deliveries.
    pub fn warning_id(&self) -> IndexWarningId {
        IndexWarningId(Uuid::new_v5(&Uuid::NAMESPACE_URL, self.name().as_bytes()))
    }
}

/// The deterministic id of a source-index warning.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct IndexWarningId(Uuid);

impl IndexWarningId {
    /// Wraps an id read back from `dd_index_warning_state`.
    pub fn new(id: Uuid) -> Self {
        IndexWarningId(id)
    }

    /// The UUID.
    pub fn get(self) -> Uuid {
        self.0
    }

    /// The text whose `hashtext` keys the advisory lock serialising the delivery of this
    /// warning: `pipelinewise.data_diff.index_warning.<uuid>`, as upstream.
    pub fn advisory_lock_name(self) -> String {
        format!("{IDENTITY_TAG}.{}", self.0)
    }
}

impl fmt::Display for IndexWarningId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const REFERENCE: IndexWarningIdentity<'static> = IndexWarningIdentity {
        tap_id: "payments",
        source_type: "tap-postgres",
        source_database: "payments",
        source_schema: "public",
        source_table: "transfers-v2",
        source_timestamp_column: "updated_at",
    };

    #[test]
    fn reference_vector_reproduces() {
        assert_eq!(
            REFERENCE.name(),
            r#"["pipelinewise.data_diff.index_warning","payments","tap-postgres","payments","public","transfers-v2","updated_at"]"#
        );
        assert_eq!(REFERENCE.warning_id().to_string(), "ca948919-a957-5a1d-be15-76d9fb044875");
    }

    #[test]
    fn non_ascii_identity_matches_python() {
        // Computed with Python: uuid5(NAMESPACE_URL, json.dumps([...], separators=(",", ":"))).
        let identity = IndexWarningIdentity {
            tap_id: "zahlungen",
            source_type: "tap-postgres",
            source_database: "zahlungsdb",
            source_schema: "öffentlich",
            source_table: "Überweisungen \"v2\"",
            source_timestamp_column: "geändert_am",
        };
        assert_eq!(
            identity.name(),
            r#"["pipelinewise.data_diff.index_warning","zahlungen","tap-postgres","zahlungsdb","\u00f6ffentlich","\u00dcberweisungen \"v2\"","ge\u00e4ndert_am"]"#
        );
        assert_eq!(identity.warning_id().to_string(), "5aff359f-0df2-5bc5-9f98-83d0c3d8a2a1");
    }

    #[test]
    fn each_of_the_six_fields_changes_the_id() {
        let reference = REFERENCE.warning_id();
        let variants = [
            IndexWarningIdentity { tap_id: "payments-eu", ..REFERENCE },
            IndexWarningIdentity { source_type: "tap-mysql", ..REFERENCE },
            IndexWarningIdentity { source_database: "payments_replica", ..REFERENCE },
            IndexWarningIdentity { source_schema: "billing", ..REFERENCE },
            IndexWarningIdentity { source_table: "transfers", ..REFERENCE },
            IndexWarningIdentity { source_timestamp_column: "created_at", ..REFERENCE },
        ];
        let mut seen = vec![reference];
        for variant in variants {
            let id = variant.warning_id();
            assert!(!seen.contains(&id), "{variant:?} collides");
            seen.push(id);
        }
    }

    #[test]
    fn fields_are_not_confused_by_concatenation() {
        // The JSON array keeps field boundaries: moving text between fields changes the id.
        let shifted = IndexWarningIdentity { source_schema: "public.transfers", source_table: "-v2", ..REFERENCE };
        assert_ne!(shifted.warning_id(), REFERENCE.warning_id());
    }

    #[test]
    fn lock_name_embeds_the_id() {
        assert_eq!(
            REFERENCE.warning_id().advisory_lock_name(),
            "pipelinewise.data_diff.index_warning.ca948919-a957-5a1d-be15-76d9fb044875"
        );
        let id = REFERENCE.warning_id();
        assert_eq!(IndexWarningId::new(id.get()), id);
    }
}
