//! An audit's verdict as Prometheus metrics (`audit --metrics FILE`): the text exposition
//! format `report metrics` writes (the same writer, `datadiff_diff_core::exposition`), so a
//! cron'd audit of a table without a timestamp column — which scheduled checks cannot cover —
//! is scraped and alerted on like the scheduled checks.
//!
//! Every sample is labelled with both tables: `database`, `schema`, `table` (the source, as
//! `report metrics` labels a check by its source schema and table) and `replica_database`,
//! `replica_schema`, `replica_table`, so several audits' files can sit in one node_exporter
//! textfile directory without colliding.
//!
//! | metric | value |
//! |---|---|
//! | `datadiff_audit_timestamp_seconds` | when the audit finished, unix seconds |
//! | `datadiff_audit_duration_seconds` | how long it took |
//! | `datadiff_audit_status{status}` | 1 for the verdict, 0 for the other of PASS, BLOCK |
//! | `datadiff_audit_reason{reason}` | 1 for the reason, 0 for the others of PARITY_VERIFIED, ROW_DIFFERENCES, EMPTY_DATASET |
//! | `datadiff_audit_rows{side}` | rows read, `side` `source` or `replica` (live rows when a deleted marker is given) |
//! | `datadiff_audit_matched_rows` | keys on both sides with equal values |
//! | `datadiff_audit_differences{kind}` | differences of each kind: MISSING_IN_REPLICA, EXTRA_IN_REPLICA, CHANGED |
//! | `datadiff_audit_tombstones` | replica rows the deleted marker left out |
//! | `datadiff_audit_in_flight` | `--live` only: keys that differed in the first pass and agreed when read again |
//!
//! An audit that ends without a report (a refusal, an error: exit 2) writes no metrics: the
//! file keeps the previous audit's, whose `datadiff_audit_timestamp_seconds` then grows old —
//! alert on its age as on a missing PASS.

use chrono::{DateTime, Utc};
use datadiff_access::TableName;
use datadiff_diff_core::exposition::{Exposition, Labels, unix_seconds};

use crate::report::{AuditReport, ExampleKind, Reason, Status};

/// The metrics of `report` (an audit of `source` against `replica`) in the Prometheus text
/// exposition format: see the module docs.
pub fn audit_metrics(report: &AuditReport, source: &TableName, replica: &TableName) -> String {
    let base: Labels<'_> = vec![
        ("database", report.source.database.as_str()),
        ("schema", source.schema.as_str()),
        ("table", source.name.as_str()),
        ("replica_database", report.replica.database.as_str()),
        ("replica_schema", replica.schema.as_str()),
        ("replica_table", replica.name.as_str()),
    ];
    let with = |name: &'static str, value: &'static str| {
        let mut labels = base.clone();
        labels.push((name, value));
        labels
    };
    let finished = DateTime::parse_from_rfc3339(&report.finished_at).map(|time| time.with_timezone(&Utc));
    let mut text = Exposition::new();
    text.gauge(
        "datadiff_audit_timestamp_seconds",
        "When the table's last audit finished, unix seconds.",
        finished.ok().map(|finished| (base.clone(), unix_seconds(finished))),
    );
    text.gauge(
        "datadiff_audit_duration_seconds",
        "How long the table's last audit took, seconds.",
        [(base.clone(), report.duration_seconds)],
    );
    text.gauge(
        "datadiff_audit_status",
        "1 for the verdict of the table's last audit (PASS, BLOCK), 0 for the other.",
        [Status::Pass, Status::Block]
            .into_iter()
            .map(|status| (with("status", status.as_str()), f64::from(u8::from(report.status == status)))),
    );
    text.gauge(
        "datadiff_audit_reason",
        "1 for the reason of the table's last audit (PARITY_VERIFIED, ROW_DIFFERENCES, EMPTY_DATASET), 0 for the others.",
        [Reason::ParityVerified, Reason::RowDifferences, Reason::EmptyDataset]
            .into_iter()
            .map(|reason| (with("reason", reason.as_str()), f64::from(u8::from(report.reason == reason)))),
    );
    text.gauge(
        "datadiff_audit_rows",
        "Rows the table's last audit read on each side (replica: live rows when a deleted marker is given).",
        [(with("side", "source"), report.source_rows as f64), (with("side", "replica"), report.replica_rows as f64)],
    );
    text.gauge(
        "datadiff_audit_matched_rows",
        "Keys on both sides with equal values in the table's last audit.",
        [(base.clone(), report.matched as f64)],
    );
    text.gauge(
        "datadiff_audit_differences",
        "Differences the table's last audit found, by kind.",
        [
            (ExampleKind::MissingInReplica, report.missing),
            (ExampleKind::ExtraInReplica, report.extra),
            (ExampleKind::Changed, report.changed),
        ]
        .into_iter()
        .map(|(kind, count)| (with("kind", kind.as_str()), count as f64)),
    );
    text.gauge(
        "datadiff_audit_tombstones",
        "Replica rows the deleted marker left out of the table's last audit.",
        [(base.clone(), report.tombstones as f64)],
    );
    text.gauge(
        "datadiff_audit_in_flight",
        "Keys that differed in the first pass of the table's last live audit and agreed when read again.",
        report.live.as_ref().map(|live| (base.clone(), live.in_flight as f64)),
    );
    text.finish()
}
