//! The eight upstream check types, by the names PipelineWise stores in `checks` and in
//! `dd_run_results.check_type`.

use std::fmt;
use std::str::FromStr;

/// One of PipelineWise's eight data-diff checks. `row_diff` is not one of them: it is a
/// datadiff extension setting ([`crate::definition::RowDiffSettings`]) and never appears in `checks`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum CheckType {
    /// Every selected column exists on both sides with compatible type families (metadata).
    SchemaCompatibility,
    /// `COUNT(*)`.
    RowCount,
    /// `COUNT(DISTINCT key)`.
    DistinctKeyCount,
    /// `COUNT(*) - COUNT(key)`, zero on both sides.
    NullKeyCount,
    /// `COUNT(key) - COUNT(DISTINCT key)`, zero on both sides.
    DuplicateKeyCount,
    /// `MIN(key)`.
    MinKey,
    /// `MAX(key)`.
    MaxKey,
    /// The sum of per-row MD5-derived integers over the compared columns.
    RowChecksum,
}

/// A check name that is not one of the eight.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unsupported data-diff check '{name}'")]
pub struct UnknownCheckType {
    /// The rejected name.
    pub name: String,
}

impl CheckType {
    /// All eight, in upstream's documentation order.
    pub const ALL: [CheckType; 8] = [
        CheckType::SchemaCompatibility,
        CheckType::RowCount,
        CheckType::DistinctKeyCount,
        CheckType::NullKeyCount,
        CheckType::DuplicateKeyCount,
        CheckType::MinKey,
        CheckType::MaxKey,
        CheckType::RowChecksum,
    ];

    /// The stored name, e.g. `"row_count"`.
    pub fn as_str(self) -> &'static str {
        match self {
            CheckType::SchemaCompatibility => "schema_compatibility",
            CheckType::RowCount => "row_count",
            CheckType::DistinctKeyCount => "distinct_key_count",
            CheckType::NullKeyCount => "null_key_count",
            CheckType::DuplicateKeyCount => "duplicate_key_count",
            CheckType::MinKey => "min_key",
            CheckType::MaxKey => "max_key",
            CheckType::RowChecksum => "row_checksum",
        }
    }

    /// Whether the check reads table data (every check but `schema_compatibility`).
    pub fn reads_data(self) -> bool {
        self != CheckType::SchemaCompatibility
    }
}

impl FromStr for CheckType {
    type Err = UnknownCheckType;

    fn from_str(name: &str) -> Result<CheckType, UnknownCheckType> {
        CheckType::ALL
            .into_iter()
            .find(|check| check.as_str() == name)
            .ok_or_else(|| UnknownCheckType { name: name.to_owned() })
    }
}

impl fmt::Display for CheckType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_exactly() {
        for check in CheckType::ALL {
            assert_eq!(check.as_str().parse(), Ok(check));
        }
        assert_eq!(
            CheckType::ALL.map(CheckType::as_str).join(","),
            "schema_compatibility,row_count,distinct_key_count,null_key_count,duplicate_key_count,min_key,max_key,row_checksum"
        );
    }

    #[test]
    fn unknown_and_differently_cased_names_are_rejected() {
        for name in ["row_diff", "ROW_COUNT", "row_count ", ""] {
            assert_eq!(name.parse::<CheckType>(), Err(UnknownCheckType { name: name.to_owned() }));
        }
    }

    #[test]
    fn only_schema_compatibility_reads_no_data() {
        let metadata: Vec<_> = CheckType::ALL.into_iter().filter(|c| !c.reads_data()).collect();
        assert_eq!(metadata, vec![CheckType::SchemaCompatibility]);
    }
}
