//! The audit's JSON report: the seed's fields (keys sorted, two-space indent, as the seed's
//! `json.dumps(indent=2, sort_keys=True)`), plus what makes a report evidence on its own a
//! week later: which databases and tables were read (each side's database, `schema.table`,
//! cluster system identifier, key and compared columns, the replica's deleted marker), the
//! key, when the audit started and finished, the tombstones left out, and the datadiff
//! version.
//!
//! Keys, names and counts only, never a row value.

use std::fmt;
use std::time::SystemTime;

use chrono::{DateTime, SecondsFormat, Utc};

use datadiff_diff_core::merge::{DifferenceKind, Example, Key, Summary};
use datadiff_diff_core::segment::StrategyUsed;
use serde::Serialize;
use serde::ser::Serializer;

/// The seed's caveat, carried by every report.
pub const CAVEAT: &str = "Two database snapshots are not atomic. Quiesce source writes and drain CDC first.";

/// The caveat of a live audit's report (`--live`).
pub const LIVE_CAVEAT: &str = "Two database snapshots are not atomic. Keys that differed were read again until they \
                               agreed (in_flight) or the settle period passed; keys equal in the first pass were not \
                               read again.";

/// The verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// No difference (and not an empty dataset unless allowed).
    Pass,
    /// Differences, or two empty tables without `--allow-empty`: do not cut over.
    Block,
}

impl Status {
    /// `PASS` or `BLOCK`.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pass => "PASS",
            Status::Block => "BLOCK",
        }
    }
}

/// Why the verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    /// Every row matched.
    ParityVerified,
    /// Some row is missing, extra or changed.
    RowDifferences,
    /// Both tables are empty and `--allow-empty` was not given (a wrong target, most likely).
    EmptyDataset,
}

impl Reason {
    /// `PARITY_VERIFIED`, `ROW_DIFFERENCES` or `EMPTY_DATASET`.
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::ParityVerified => "PARITY_VERIFIED",
            Reason::RowDifferences => "ROW_DIFFERENCES",
            Reason::EmptyDataset => "EMPTY_DATASET",
        }
    }
}

/// The kind of a difference, in the seed's words (the replica, not the target).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExampleKind {
    /// In the source only.
    MissingInReplica,
    /// In the replica only.
    ExtraInReplica,
    /// On both sides with different values.
    Changed,
}

impl ExampleKind {
    /// `MISSING_IN_REPLICA`, `EXTRA_IN_REPLICA` or `CHANGED`.
    pub fn as_str(self) -> &'static str {
        match self {
            ExampleKind::MissingInReplica => "MISSING_IN_REPLICA",
            ExampleKind::ExtraInReplica => "EXTRA_IN_REPLICA",
            ExampleKind::Changed => "CHANGED",
        }
    }
}

macro_rules! serialize_as_str {
    ($($name:ty),*) => {$(
        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }
        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
    )*};
}
serialize_as_str!(Status, Reason, ExampleKind);

/// A row key in a report: integer keys as JSON numbers, uuid and text keys as strings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReportKey(pub Key);

impl Serialize for ReportKey {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match &self.0 {
            Key::Int(value) => serializer.serialize_i64(*value),
            other => serializer.collect_str(other),
        }
    }
}

/// A composite key in a report: an object of key column (source name) → key part, each part
/// as [`ReportKey`] writes it, the columns sorted by name as every object of the report is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompositeReportKey(pub Vec<(String, Key)>);

impl Serialize for CompositeReportKey {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut parts: Vec<&(String, Key)> = self.0.iter().collect();
        parts.sort_by(|a, b| a.0.cmp(&b.0));
        let mut map = serializer.serialize_map(Some(parts.len()))?;
        for (column, part) in parts {
            map.serialize_entry(column, &ReportKey(part.clone()))?;
        }
        map.end()
    }
}

/// One difference: the key, the kind, and for `CHANGED` the differing columns.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AuditExample {
    /// The differing columns' names (`CHANGED` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fields: Option<Vec<String>>,
    /// The row's key, when the key is one column (the seed's field).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<ReportKey>,
    /// The row's key, when the key has several columns: key column → value.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<CompositeReportKey>,
    /// The kind.
    pub kind: ExampleKind,
}

/// Which database and table one side of the audit read. Fields in alphabetical order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SideIdentity {
    /// The compared columns' names on this side, in comparison order (a replica column may
    /// be the lower-cased or mapped name of the source column at the same position).
    pub columns: Vec<String>,
    /// `current_database()`.
    pub database: String,
    /// The replica's deleted marker column, when one is given (on `metadata_table` when
    /// there is one, else on `table`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deleted_column: Option<String>,
    /// The key column's name on this side.
    pub key: String,
    /// The replica's CDC metadata table (`schema.table`), when one is given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata_table: Option<String>,
    /// The cluster's `pg_control_system().system_identifier`, as decimal text (it does not
    /// fit a JSON number exactly).
    pub system_identifier: String,
    /// The table read, `schema.table`.
    pub table: String,
}

/// What the report says beyond the merge's counts: both sides' identities, times and
/// tombstones.
#[derive(Debug, Clone, PartialEq)]
pub struct Provenance {
    /// The source side.
    pub source: SideIdentity,
    /// The replica side.
    pub replica: SideIdentity,
    /// When the audit started (before connecting).
    pub started_at: SystemTime,
    /// When the scan ended.
    pub finished_at: SystemTime,
    /// Wall time from the start of the audit, in seconds (monotonic).
    pub duration_seconds: f64,
    /// Replica rows the deleted marker left out of the comparison (0 without one).
    pub tombstones: u64,
    /// Source columns left out on request (by `--columns`, `--exclude-columns`, or as the
    /// replica's deleted marker).
    pub excluded_columns: Vec<String>,
    /// How the scan read the rows, and why.
    pub strategy: StrategyUsed,
    /// The key columns' source names, in key order (one for a single-column key): a
    /// composite key's examples name each.
    pub key_columns: Vec<String>,
}

/// The audit report. Fields are declared in alphabetical order so the JSON keys are sorted.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AuditReport {
    /// [`CAVEAT`].
    pub caveat: &'static str,
    /// Keys on both sides with different values.
    pub changed: u64,
    /// The compared columns (the key excluded), by their source names, in comparison order.
    pub columns: Vec<String>,
    /// The version of datadiff that wrote the report.
    pub datadiff_version: &'static str,
    /// missing + extra + changed.
    pub difference_count: u64,
    /// Wall time from the start of the audit, in seconds, to the millisecond.
    pub duration_seconds: f64,
    /// The first differences in key order, at most `--max-examples`.
    pub examples: Vec<AuditExample>,
    /// Whether more differences exist than examples.
    pub examples_truncated: bool,
    /// Source columns not compared, left out on request (by `--columns`,
    /// `--exclude-columns`, or as the replica's deleted marker), in source order.
    pub excluded_columns: Vec<String>,
    /// Keys in the replica only.
    pub extra: u64,
    /// When the scan ended: RFC 3339, UTC, milliseconds.
    pub finished_at: String,
    /// The key column (its source name).
    pub key: String,
    /// Keys on both sides with equal values.
    pub matched: u64,
    /// Keys in the source only.
    pub missing: u64,
    /// Why the status.
    pub reason: Reason,
    /// The replica's database and table.
    pub replica: SideIdentity,
    /// A live audit's recheck (`--live` only): keys in flight, the position proven at.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub live: Option<crate::live::LiveReport>,
    /// Rows the scan read from the replica (live rows when a deleted marker is given).
    pub replica_rows: u64,
    /// The source's database and table.
    pub source: SideIdentity,
    /// Rows the scan read from the source.
    pub source_rows: u64,
    /// When the audit started: RFC 3339, UTC, milliseconds.
    pub started_at: String,
    /// PASS or BLOCK.
    pub status: Status,
    /// How the scan read the rows: `stream` or `segments`.
    pub strategy: &'static str,
    /// Why that strategy (`auto`'s figures included).
    pub strategy_reason: String,
    /// Replica rows marked deleted (counted in the scan's snapshot), left out of the
    /// comparison (0 without a deleted marker).
    pub tombstones: u64,
}

/// The datadiff version that writes reports.
pub const DATADIFF_VERSION: &str = env!("CARGO_PKG_VERSION");

fn rfc3339(time: SystemTime) -> String {
    DateTime::<Utc>::from(time).to_rfc3339_opts(SecondsFormat::Millis, true)
}

impl AuditReport {
    /// The verdict over a finished merge, as the seed decides it: BLOCK with
    /// `ROW_DIFFERENCES` when any row differs, BLOCK with `EMPTY_DATASET` when both sides
    /// are empty and `allow_empty` is false, PASS with `PARITY_VERIFIED` otherwise.
    pub fn from_summary(summary: &Summary<Key>, allow_empty: bool, provenance: Provenance) -> AuditReport {
        let duration_seconds = provenance.duration_seconds;
        let difference_count = summary.difference_count();
        let empty_not_allowed = !allow_empty && summary.source_rows() == 0 && summary.target_rows() == 0;
        let (status, reason) = if empty_not_allowed {
            (Status::Block, Reason::EmptyDataset)
        } else if difference_count > 0 {
            (Status::Block, Reason::RowDifferences)
        } else {
            (Status::Pass, Reason::ParityVerified)
        };
        AuditReport {
            caveat: CAVEAT,
            changed: summary.changed,
            columns: summary.field_names().to_vec(),
            datadiff_version: DATADIFF_VERSION,
            difference_count,
            duration_seconds: (duration_seconds * 1000.0).round() / 1000.0,
            excluded_columns: provenance.excluded_columns,
            examples: summary.examples.iter().map(|found| example(found, &provenance.key_columns)).collect(),
            examples_truncated: summary.examples_truncated(),
            extra: summary.extra,
            finished_at: rfc3339(provenance.finished_at),
            key: provenance.source.key.clone(),
            live: None,
            matched: summary.matched,
            missing: summary.missing,
            reason,
            replica: provenance.replica,
            replica_rows: summary.target_rows(),
            source: provenance.source,
            source_rows: summary.source_rows(),
            started_at: rfc3339(provenance.started_at),
            status,
            strategy: provenance.strategy.strategy.as_str(),
            strategy_reason: provenance.strategy.reason,
            tombstones: provenance.tombstones,
        }
    }

    /// The report as pretty JSON with a final newline.
    pub fn to_json(&self) -> String {
        let mut text = serde_json::to_string_pretty(self).unwrap_or_else(|_| "{}".to_owned());
        text.push('\n');
        text
    }

    /// A one-line summary for operators (no values): the seed's closing log lines, with the
    /// tombstones left out when a deleted marker found some.
    pub fn summary_line(&self) -> String {
        let tombstones = match self.tombstones {
            0 => String::new(),
            1 => ", 1 tombstone left out".to_owned(),
            count => format!(", {count} tombstones left out"),
        };
        if let Some(live) = &self.live {
            return self.live_summary_line(live, &tombstones);
        }
        match self.status {
            Status::Pass => format!(
                "CDC parity verified for {} rows ({} columns compared{tombstones}). Source writes must stay stopped \
                 until the cutover is complete.",
                self.source_rows,
                self.columns.len()
            ),
            Status::Block => format!(
                "CDC parity failed: {}. source={}, replica={}, differences={} (missing={}, extra={}, \
                 changed={}{tombstones}).",
                self.reason,
                self.source_rows,
                self.replica_rows,
                self.difference_count,
                self.missing,
                self.extra,
                self.changed
            ),
        }
    }
}

impl AuditReport {
    /// [`AuditReport::summary_line`] of a live audit: the keys in flight and the position.
    fn live_summary_line(&self, live: &crate::live::LiveReport, tombstones: &str) -> String {
        let proven = match (&live.proven_at, &live.position) {
            (Some(proven), _) => format!(
                "; parity proven with the replica at {} for source WAL position {}",
                proven.replica_applied, proven.source_lsn
            ),
            (None, Some(position)) => format!(
                "; the replica did not reach source WAL position {} ({} {}): no position is proven",
                position.source_lsn, position.kind, position.name
            ),
            (None, None) => String::new(),
        };
        match self.status {
            Status::Pass => format!(
                "Live parity verified for {} rows ({} columns compared{tombstones}, in_flight={} keys converged within                  {} s{proven}).",
                self.source_rows,
                self.columns.len(),
                live.in_flight,
                live.settle_seconds
            ),
            Status::Block => format!(
                "Live parity failed: {}. source={}, replica={}, differences={} persisting after {} rechecks over                  {} s (missing={}, extra={}, changed={}, in_flight={}{tombstones}{proven}).",
                self.reason,
                self.source_rows,
                self.replica_rows,
                self.difference_count,
                live.rounds,
                live.settle_seconds,
                self.missing,
                self.extra,
                self.changed,
                live.in_flight
            ),
        }
    }
}

fn example(example: &Example<Key>, key_columns: &[String]) -> AuditExample {
    let (kind, fields) = match example.kind {
        DifferenceKind::MissingInTarget => (ExampleKind::MissingInReplica, None),
        DifferenceKind::ExtraInTarget => (ExampleKind::ExtraInReplica, None),
        DifferenceKind::Changed => (ExampleKind::Changed, Some(example.fields.clone())),
    };
    let (id, key) = match &example.key {
        Key::Composite(parts) => {
            let named = key_columns.iter().cloned().zip(parts.iter().cloned()).collect();
            (None, Some(CompositeReportKey(named)))
        }
        single => (Some(ReportKey(single.clone())), None),
    };
    AuditExample { fields, id, key, kind }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datadiff_diff_core::merge::{Value, ValuesRow, merge};

    fn summarise(source: &[(i64, i64)], target: &[(i64, i64)], max_examples: usize) -> Summary<Key> {
        let rows = |pairs: &[(i64, i64)]| -> Vec<Result<ValuesRow, std::convert::Infallible>> {
            pairs.iter().map(|&(k, v)| Ok(ValuesRow { key: Key::Int(k), values: vec![Value::Int(v)] })).collect()
        };
        let mut summary = Summary::new(max_examples, vec!["amount".to_owned()]);
        for change in merge(rows(source), rows(target)) {
            summary.record(&change.unwrap());
        }
        summary
    }

    fn provenance(duration_seconds: f64) -> Provenance {
        let side = |database: &str| SideIdentity {
            columns: vec!["amount".to_owned()],
            database: database.to_owned(),
            deleted_column: None,
            key: "id".to_owned(),
            metadata_table: None,
            system_identifier: "7312345678901234567".to_owned(),
            table: "public.t".to_owned(),
        };
        let started_at = SystemTime::UNIX_EPOCH + std::time::Duration::from_millis(1_785_000_000_123);
        Provenance {
            source: side("app"),
            replica: side("warehouse"),
            started_at,
            finished_at: started_at + std::time::Duration::from_secs(2),
            duration_seconds,
            tombstones: 0,
            excluded_columns: vec!["notes".to_owned()],
            strategy: StrategyUsed::segments("segments requested"),
            key_columns: vec!["id".to_owned()],
        }
    }

    #[test]
    fn json_has_the_seed_fields_sorted_and_integer_ids_as_numbers() {
        let summary = summarise(&[(1, 1), (2, 2), (3, 3)], &[(1, 1), (2, 9), (4, 4)], 20);
        let report = AuditReport::from_summary(&summary, false, provenance(1.23456));
        let json: serde_json::Value = serde_json::from_str(&report.to_json()).unwrap();
        let keys: Vec<&str> = json.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            [
                "caveat",
                "changed",
                "columns",
                "datadiff_version",
                "difference_count",
                "duration_seconds",
                "examples",
                "examples_truncated",
                "excluded_columns",
                "extra",
                "finished_at",
                "key",
                "matched",
                "missing",
                "reason",
                "replica",
                "replica_rows",
                "source",
                "source_rows",
                "started_at",
                "status",
                "strategy",
                "strategy_reason",
                "tombstones"
            ]
        );
        assert_eq!(json["excluded_columns"], serde_json::json!(["notes"]));
        assert_eq!(
            (json["strategy"].as_str(), json["strategy_reason"].as_str()),
            (Some("segments"), Some("segments requested"))
        );
        assert_eq!(json["started_at"], "2026-07-25T17:20:00.123Z");
        assert_eq!(json["finished_at"], "2026-07-25T17:20:02.123Z");
        assert_eq!(json["datadiff_version"], env!("CARGO_PKG_VERSION"));
        let side: Vec<&str> = json["source"].as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(side, ["columns", "database", "key", "system_identifier", "table"]);
        assert_eq!(json["status"], "BLOCK");
        assert_eq!(json["reason"], "ROW_DIFFERENCES");
        assert_eq!(json["duration_seconds"], 1.235);
        assert_eq!(
            json["examples"],
            serde_json::json!([
                {"id": 2, "kind": "CHANGED", "fields": ["amount"]},
                {"id": 3, "kind": "MISSING_IN_REPLICA"},
                {"id": 4, "kind": "EXTRA_IN_REPLICA"},
            ])
        );
        assert_eq!((json["source_rows"].as_u64(), json["replica_rows"].as_u64()), (Some(3), Some(3)));
        assert!(report.to_json().starts_with("{\n  \"caveat\""));
    }

    #[test]
    fn empty_tables_block_unless_allowed() {
        let summary = summarise(&[], &[], 20);
        let blocked = AuditReport::from_summary(&summary, false, provenance(0.0));
        assert_eq!((blocked.status, blocked.reason), (Status::Block, Reason::EmptyDataset));
        let allowed = AuditReport::from_summary(&summary, true, provenance(0.0));
        assert_eq!((allowed.status, allowed.reason), (Status::Pass, Reason::ParityVerified));
    }

    #[test]
    fn text_and_uuid_ids_are_strings() {
        let id = serde_json::to_value(ReportKey(Key::Text("k-1".into()))).unwrap();
        assert_eq!(id, serde_json::json!("k-1"));
        let id = serde_json::to_value(ReportKey(Key::Uuid([0xab; 16]))).unwrap();
        assert_eq!(id, serde_json::json!("abababab-abab-abab-abab-abababababab"));
    }

    #[test]
    fn composite_keys_are_reported_under_key_as_column_to_value() {
        let key = |order: i64, line: &str| Key::from_parts(vec![Key::Int(order), Key::Text(line.into())]);
        let rows = |keys: &[(i64, &str, i64)]| -> Vec<Result<ValuesRow, std::convert::Infallible>> {
            keys.iter().map(|&(o, l, v)| Ok(ValuesRow { key: key(o, l), values: vec![Value::Int(v)] })).collect()
        };
        let mut summary = Summary::new(20, vec!["amount".to_owned()]);
        for change in merge(rows(&[(1, "a", 1), (1, "b", 2)]), rows(&[(1, "b", 3), (2, "a", 1)])) {
            summary.record(&change.unwrap());
        }
        let mut provenance = provenance(0.5);
        provenance.key_columns = vec!["order_id".to_owned(), "line".to_owned()];
        let report = AuditReport::from_summary(&summary, false, provenance);
        let json: serde_json::Value = serde_json::from_str(&report.to_json()).unwrap();
        assert_eq!(
            json["examples"],
            serde_json::json!([
                {"key": {"order_id": 1, "line": "a"}, "kind": "MISSING_IN_REPLICA"},
                {"key": {"order_id": 1, "line": "b"}, "kind": "CHANGED", "fields": ["amount"]},
                {"key": {"order_id": 2, "line": "a"}, "kind": "EXTRA_IN_REPLICA"},
            ])
        );
        // The key's columns sorted like every object of the report.
        let text = report.to_json();
        assert!(text.find("\"line\"").unwrap() < text.find("\"order_id\"").unwrap(), "{text}");
    }
}
