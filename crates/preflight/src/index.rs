//! One source index as the catalog describes it.

use datadiff_diff_core::mysql::MySqlIndex;
use serde::{Serialize, Serializer};
use serde_json::{Value, json};

/// An index of the source table, read from `pg_index` and friends.
///
/// Serialises to the object stored in `dd_preflight_log.index_metadata` — upstream's keys,
/// with `is_usable` derived from the other fields:
/// `{index_name, columns, is_unique, access_method, is_partial, is_expression, is_valid,
/// is_ready, is_usable}`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
pub struct IndexFact {
    /// The index's name (`pg_class.relname`).
    pub index_name: String,
    /// The names of the indexed columns in index order: key columns first, then INCLUDE
    /// columns. Expression key parts have no column and are absent.
    pub columns: Vec<String>,
    /// `pg_index.indisunique`.
    pub is_unique: bool,
    /// The access method (`pg_am.amname`): `btree`, `hash`, `gin`, ...
    pub access_method: String,
    /// A partial index (`indpred IS NOT NULL`).
    pub is_partial: bool,
    /// Has at least one expression key part (`indexprs IS NOT NULL`).
    pub is_expression: bool,
    /// `pg_index.indisvalid`: usable by queries (false after a failed concurrent build).
    pub is_valid: bool,
    /// `pg_index.indisready`: maintained by writes.
    pub is_ready: bool,
}

impl IndexFact {
    /// Whether a window scan can rely on this index at all: a plain (not partial, no
    /// expression) valid and ready btree. Which column it leads with is a separate question.
    pub fn is_usable(&self) -> bool {
        !self.is_partial && !self.is_expression && self.is_valid && self.is_ready && self.access_method == "btree"
    }

    /// Whether the first column is `column`, compared case-insensitively as upstream does
    /// (a configured `UPDATED_AT` matches a column `updated_at`).
    pub fn leads_with(&self, column: &str) -> bool {
        self.columns.first().is_some_and(|first| first.to_lowercase() == column.to_lowercase())
    }

    /// The JSON object stored in `index_metadata`.
    pub fn to_json(&self) -> Value {
        json!({
            "index_name": self.index_name,
            "columns": self.columns,
            "is_unique": self.is_unique,
            "access_method": self.access_method,
            "is_partial": self.is_partial,
            "is_expression": self.is_expression,
            "is_valid": self.is_valid,
            "is_ready": self.is_ready,
            "is_usable": self.is_usable(),
        })
    }
}

/// What the verdict needs of an index, whatever database described it: [`IndexFact`] for a
/// PostgreSQL source, [`MySqlIndex`] (from `information_schema.STATISTICS`) for a MySQL or
/// MariaDB one. Each kind keeps its own `index_metadata` object — upstream's keys for that
/// database.
pub trait SourceIndex: Clone + std::fmt::Debug + PartialEq {
    /// The index's name.
    fn name(&self) -> &str;
    /// Whether a window scan can rely on it at all.
    fn usable(&self) -> bool;
    /// Whether its first column is `column` (case-insensitively).
    fn leads_with_column(&self, column: &str) -> bool;
    /// The object stored in `index_metadata`.
    fn metadata_json(&self) -> Value;
}

impl SourceIndex for IndexFact {
    fn name(&self) -> &str {
        &self.index_name
    }

    fn usable(&self) -> bool {
        self.is_usable()
    }

    fn leads_with_column(&self, column: &str) -> bool {
        self.leads_with(column)
    }

    fn metadata_json(&self) -> Value {
        self.to_json()
    }
}

/// A MySQL or MariaDB index: usable when `BTREE`, without a prefix length and not hidden
/// (`IS_VISIBLE = 'NO'` on MySQL 8, `IGNORED = 'YES'` on MariaDB), as diff-core decides it;
/// its `index_metadata` object has upstream's MySQL keys (`index_name`, `columns`,
/// `is_unique`, `access_method`, `is_usable`).
impl SourceIndex for MySqlIndex {
    fn name(&self) -> &str {
        &self.index_name
    }

    fn usable(&self) -> bool {
        self.is_usable
    }

    fn leads_with_column(&self, column: &str) -> bool {
        self.leads_with(column)
    }

    fn metadata_json(&self) -> Value {
        self.to_json()
    }
}

impl Serialize for IndexFact {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.to_json().serialize(serializer)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A usable btree index on `columns`.
    pub(crate) fn btree(name: &str, columns: &[&str]) -> IndexFact {
        IndexFact {
            index_name: name.to_owned(),
            columns: columns.iter().map(|column| (*column).to_owned()).collect(),
            is_unique: false,
            access_method: "btree".to_owned(),
            is_partial: false,
            is_expression: false,
            is_valid: true,
            is_ready: true,
        }
    }

    #[test]
    fn a_plain_valid_ready_btree_is_usable() {
        assert!(btree("i", &["updated_at"]).is_usable());
        assert!(IndexFact { is_unique: true, ..btree("i", &["updated_at"]) }.is_usable());
    }

    #[test]
    fn each_disqualifying_property_makes_it_unusable() {
        let base = btree("i", &["updated_at"]);
        let unusable = [
            IndexFact { is_partial: true, ..base.clone() },
            IndexFact { is_expression: true, ..base.clone() },
            IndexFact { is_valid: false, ..base.clone() },
            IndexFact { is_ready: false, ..base.clone() },
            IndexFact { access_method: "hash".to_owned(), ..base.clone() },
            IndexFact { access_method: "brin".to_owned(), ..base.clone() },
            IndexFact { access_method: "BTREE".to_owned(), ..base },
        ];
        for index in unusable {
            assert!(!index.is_usable(), "{index:?}");
        }
    }

    #[test]
    fn leading_column_is_compared_case_insensitively() {
        assert!(btree("i", &["UPDATED_AT", "id"]).leads_with("updated_at"));
        assert!(btree("i", &["updated_at"]).leads_with("Updated_At"));
        assert!(!btree("i", &["id", "updated_at"]).leads_with("updated_at"));
        assert!(!btree("i", &[]).leads_with("updated_at"));
        assert!(!btree("i", &["updated_at_2"]).leads_with("updated_at"));
    }

    #[test]
    fn json_has_upstreams_keys_and_derived_usability() {
        let index = IndexFact { is_partial: true, is_unique: true, ..btree("partial_idx", &["updated_at", "id"]) };
        let expected = json!({
            "index_name": "partial_idx",
            "columns": ["updated_at", "id"],
            "is_unique": true,
            "access_method": "btree",
            "is_partial": true,
            "is_expression": false,
            "is_valid": true,
            "is_ready": true,
            "is_usable": false,
        });
        assert_eq!(index.to_json(), expected);
        assert_eq!(serde_json::to_value(&index).ok(), Some(expected.clone()));
        let read_back: Result<IndexFact, _> = serde_json::from_value(expected);
        assert_eq!(read_back.ok(), Some(index));
    }
}
