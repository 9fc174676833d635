//! Replica naming: how a replica that another loader built (dlt's snake_case, a hand-made
//! copy) names a definition's table and columns, where PipelineWise's Singer targets would
//! lower-case the source's names (`datadiff.yml` `checks.<name>.replica_table` and
//! `checks.<name>.column_map`).
//!
//! [`ReplicaNaming::apply`] rewrites a definition's target names once, when the project loads:
//! every check type of the definition, `row_diff` and `doctor` read the target names from the
//! definition, so all of them query the replica's own names. The naming itself also enters
//! the canonical JSON (under `"datadiff"`), so a definition stored in the backend still knows
//! its column map, and a changed `replica_table` or `column_map` is a new revision with its
//! own watermark: coverage verified against one replica table is never claimed for another.
//!
//! `column_map` keys are source column names exactly as the source spells them
//! (case-sensitive); a column the map does not name keeps the default rule
//! ([`TargetType::case_map`](crate::definition::TargetType::case_map)). A key the source table
//! does not have is an error at plan time ([`ReplicaNaming::unknown_source_columns`]).

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::column::TableColumns;
use crate::definition::CheckDefinition;

/// The replica's `schema.table`, used exactly as written (no case mapping).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ReplicaTable {
    /// The replica's schema.
    pub schema: String,
    /// The replica's table.
    pub table: String,
}

impl ReplicaTable {
    /// Parses `schema.table`, split at the first `.` (so a schema name cannot hold a dot; a
    /// table name can). `None` when either part is empty or there is no dot.
    pub fn parse(text: &str) -> Option<ReplicaTable> {
        let (schema, table) = text.split_once('.')?;
        (!schema.is_empty() && !table.is_empty())
            .then(|| ReplicaTable { schema: schema.to_owned(), table: table.to_owned() })
    }

    /// `schema.table`, as written in `datadiff.yml` and in the canonical JSON.
    pub fn as_text(&self) -> String {
        format!("{}.{}", self.schema, self.table)
    }
}

/// A definition's replica naming; empty (the default) for a PipelineWise-named replica.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct ReplicaNaming {
    /// The replica's table, when it is not the derived target table.
    pub table: Option<ReplicaTable>,
    /// Source column name (exact, case-sensitive) → replica column name (exact).
    pub column_map: BTreeMap<String, String>,
}

impl ReplicaNaming {
    /// Whether nothing is renamed.
    pub fn is_empty(&self) -> bool {
        self.table.is_none() && self.column_map.is_empty()
    }

    /// The replica's name of the source column `source`, when the map names it.
    pub fn column(&self, source: &str) -> Option<&str> {
        self.column_map.get(source).map(String::as_str)
    }

    /// Rewrites `definition`'s target schema, table and key, timestamp and compare columns
    /// from this naming (names the map does not hold keep the derived ones) and records the
    /// naming in its extensions.
    pub fn apply(&self, definition: &mut CheckDefinition) {
        if let Some(table) = &self.table {
            definition.target_schema = table.schema.clone();
            definition.target_table = table.table.clone();
        }
        let rename = |source: &str, target: &mut String| {
            if let Some(name) = self.column(source) {
                *target = name.to_owned();
            }
        };
        rename(&definition.source_key_column, &mut definition.target_key_column);
        rename(&definition.source_timestamp_column, &mut definition.target_timestamp_column);
        for (source, target) in
            definition.source_compare_columns.iter().zip(definition.target_compare_columns.iter_mut())
        {
            rename(source, target);
        }
        definition.extensions.replica = self.clone();
    }

    /// The `column_map` keys that name no column of the source table exactly (case-sensitive),
    /// in key order.
    pub fn unknown_source_columns(&self, source: &TableColumns) -> Vec<&str> {
        self.column_map
            .keys()
            .filter(|key| !source.columns().iter().any(|column| &column.name == *key))
            .map(String::as_str)
            .collect()
    }

    /// Adds `replica_table` and `column_map` (each only when set) to the canonical
    /// `"datadiff"` object.
    pub(crate) fn canonical(&self, map: &mut Map<String, Value>) {
        if let Some(table) = &self.table {
            map.insert("replica_table".to_owned(), Value::String(table.as_text()));
        }
        if !self.column_map.is_empty() {
            let columns =
                self.column_map.iter().map(|(source, replica)| (source.clone(), Value::String(replica.clone())));
            map.insert("column_map".to_owned(), Value::Object(columns.collect()));
        }
    }

    /// Reads the naming back from a stored `"datadiff"` object; `Err` names the field and
    /// what it should hold.
    pub(crate) fn decode(map: &Map<String, Value>) -> Result<ReplicaNaming, (&'static str, &'static str)> {
        let table = match map.get("replica_table") {
            None | Some(Value::Null) => None,
            Some(Value::String(text)) => {
                Some(ReplicaTable::parse(text).ok_or(("datadiff.replica_table", "a 'schema.table' string"))?)
            }
            Some(_) => return Err(("datadiff.replica_table", "a 'schema.table' string")),
        };
        let column_map = match map.get("column_map") {
            None | Some(Value::Null) => BTreeMap::new(),
            Some(Value::Object(columns)) => columns
                .iter()
                .map(|(source, replica)| match replica {
                    Value::String(replica) if !replica.is_empty() => Ok((source.clone(), replica.clone())),
                    _ => Err(("datadiff.column_map", "an object of non-empty strings")),
                })
                .collect::<Result<_, _>>()?,
            Some(_) => return Err(("datadiff.column_map", "an object of non-empty strings")),
        };
        Ok(ReplicaNaming { table, column_map })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::column::CatalogColumn;

    #[test]
    fn replica_tables_split_at_the_first_dot() {
        let parsed = ReplicaTable::parse("dlt_app.customer_orders");
        assert_eq!(
            parsed,
            Some(ReplicaTable { schema: "dlt_app".into(), table: "customer_orders".into() }),
            "schema.table"
        );
        assert_eq!(ReplicaTable::parse("s.t.v").map(|t| t.table), Some("t.v".to_owned()));
        for bad in ["", "orders", ".orders", "dlt_app.", "."] {
            assert_eq!(ReplicaTable::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn unknown_source_columns_are_matched_case_sensitively() {
        let column = |name: &str| CatalogColumn {
            name: name.into(),
            data_type: "bigint".into(),
            udt_name: None,
            numeric_precision: None,
            numeric_scale: None,
            datetime_precision: None,
            nullable: true,
        };
        let source = TableColumns::new("public", "CustomerOrders", vec![column("OrderId"), column("Total")]);
        let naming = ReplicaNaming {
            table: None,
            column_map: [("OrderId", "order_id"), ("total", "total"), ("Nope", "nope")]
                .map(|(a, b)| (a.to_owned(), b.to_owned()))
                .into(),
        };
        assert_eq!(naming.unknown_source_columns(&source), ["Nope", "total"]);
    }

    #[test]
    fn the_naming_round_trips_through_its_canonical_object() {
        let naming = ReplicaNaming {
            table: ReplicaTable::parse("dlt_app.customer_orders"),
            column_map: [("OrderId".to_owned(), "order_id".to_owned())].into(),
        };
        let mut map = Map::new();
        naming.canonical(&mut map);
        assert_eq!(
            Value::Object(map.clone()),
            serde_json::json!({"replica_table": "dlt_app.customer_orders", "column_map": {"OrderId": "order_id"}})
        );
        assert_eq!(ReplicaNaming::decode(&map), Ok(naming));
        let mut empty = Map::new();
        ReplicaNaming::default().canonical(&mut empty);
        assert!(empty.is_empty());
        map.insert("replica_table".into(), Value::String("orders".into()));
        assert_eq!(ReplicaNaming::decode(&map).map(|_| ()), Err(("datadiff.replica_table", "a 'schema.table' string")));
    }
}
