//! One composed alert: the headline, the detail lines and the next action, plus the
//! allow-listed facts structured destinations (`webhook`, `log`) receive as JSON.

use chrono::{DateTime, Utc};
use datadiff_diff_core::attempt::{CheckId, CheckIdentity, IndexWarningId, RunId, SummaryStatus};
use serde_json::{Value as Json, json};

/// How urgent an alert is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AlertLevel {
    /// A failed check (failure alerts).
    Error,
    /// Something to act on before it fails (index warnings).
    Warning,
}

impl AlertLevel {
    /// `error` or `warning`.
    pub fn as_str(self) -> &'static str {
        match self {
            AlertLevel::Error => "error",
            AlertLevel::Warning => "warning",
        }
    }
}

/// What an alert is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AlertKind {
    /// A check's FAIL or ERROR attempts of this invocation.
    Failure,
    /// An unindexed source table approaching the 100,000-row limit.
    IndexWarning,
}

impl AlertKind {
    /// `failure` or `index_warning`.
    pub fn as_str(self) -> &'static str {
        match self {
            AlertKind::Failure => "failure",
            AlertKind::IndexWarning => "index_warning",
        }
    }
}

/// The facts an alert is about, as structured destinations receive them. Identifiers only:
/// never a key, a checksum, a schema or row value, a token or a routing key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlertSubject {
    /// `target/tap/schema/table`.
    pub full_check_name: String,
    /// The definition revision the alert is about (for an index warning, its routing check).
    pub check_id: CheckId,
    /// The revision number.
    pub revision: i32,
    /// Whether that revision is current.
    pub is_current: bool,
    /// The target id.
    pub target_id: String,
    /// The tap id.
    pub tap_id: String,
    /// For a failure alert: the representative failure's status.
    pub status: Option<SummaryStatus>,
    /// For a failure alert: the representative failure's attempt, when one exists.
    pub run_id: Option<RunId>,
    /// For a failure alert: how many FAIL/ERROR summaries of the check it stands for.
    pub failed_attempts: Option<usize>,
    /// For an index warning: its identity.
    pub warning_id: Option<IndexWarningId>,
}

impl AlertSubject {
    /// The subject of `check`, with nothing else known yet.
    pub(crate) fn of(check: &CheckIdentity) -> AlertSubject {
        AlertSubject {
            full_check_name: check.full_check_name.clone(),
            check_id: check.check_id,
            revision: check.revision,
            is_current: check.is_current,
            target_id: check.target_id.clone(),
            tap_id: check.tap_id.clone(),
            status: None,
            run_id: None,
            failed_attempts: None,
            warning_id: None,
        }
    }
}

/// A composed alert, ready for any destination.
///
/// Slack shows [`Alert::message`] in bold and the details in a code block followed by the
/// next action; VictorOps and the other handlers receive [`Alert::text`]; `webhook` and
/// `log` receive [`Alert::to_json`].
#[derive(Debug, Clone, PartialEq)]
pub struct Alert {
    /// Failure or index warning.
    pub kind: AlertKind,
    /// Error or warning.
    pub level: AlertLevel,
    /// One line: `<STATUS> data-diff <tap_id>/<schema>.<table> — <headline>`.
    pub message: String,
    /// Aligned `name : value` lines (and, for failures with counts, the count table).
    pub details: String,
    /// What the reader should do.
    pub next_action: String,
    /// The identifiers the alert is about.
    pub subject: AlertSubject,
    /// When it was composed (the invocation's `now`, `--at`).
    pub created_at: DateTime<Utc>,
}

impl Alert {
    /// The plain-text form VictorOps and other handlers receive: the message, a newline, the
    /// details, then `Next action:` on its own line and the next action.
    pub fn text(&self) -> String {
        format!("{}\n{}\n\nNext action:\n{}", self.message, self.details, self.next_action)
    }

    /// The JSON document `webhook` POSTs and `log` appends as one line:
    ///
    /// | field | meaning |
    /// |---|---|
    /// | `source` | always `"datadiff"` |
    /// | `version` | the document layout, `1` |
    /// | `kind` | `"failure"` or `"index_warning"` |
    /// | `level` | `"error"` or `"warning"` |
    /// | `alert_utc_time` | RFC 3339 with `Z`: when the alert was composed (`--at`) |
    /// | `message`, `details`, `next_action` | the texts Slack shows |
    /// | `text` | [`Alert::text`], what VictorOps receives |
    /// | `check` | `full_check_name`, `check_id`, `revision`, `is_current`, `target_id`, `tap_id` |
    /// | `status` | failure: the representative's `FAIL` or `ERROR`; warning: `null` |
    /// | `run_id` | failure: the representative's attempt, or `null` for a check that failed before any attempt; warning: `null` |
    /// | `failed_attempts` | failure: the FAIL/ERROR summaries it stands for; warning: `null` |
    /// | `warning_id` | warning: the index-warning id (`dd_index_warning_state.warning_id`); failure: `null` |
    pub fn to_json(&self) -> Json {
        let subject = &self.subject;
        json!({
            "source": "datadiff",
            "version": 1,
            "kind": self.kind.as_str(),
            "level": self.level.as_str(),
            "alert_utc_time": self.created_at.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true),
            "message": self.message,
            "details": self.details,
            "next_action": self.next_action,
            "text": self.text(),
            "check": {
                "full_check_name": subject.full_check_name,
                "check_id": subject.check_id.to_string(),
                "revision": subject.revision,
                "is_current": subject.is_current,
                "target_id": subject.target_id,
                "tap_id": subject.tap_id,
            },
            "status": subject.status.map(SummaryStatus::as_str),
            "run_id": subject.run_id.map(|id| id.to_string()),
            "failed_attempts": subject.failed_attempts,
            "warning_id": subject.warning_id.map(|id| id.to_string()),
        })
    }
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;
    use uuid::Uuid;

    use super::*;

    fn alert() -> Alert {
        Alert {
            kind: AlertKind::Failure,
            level: AlertLevel::Error,
            message: "FAIL data-diff payments/public.transfers — data mismatch".into(),
            details: "tap_id            : payments".into(),
            next_action: "Repair the replica.".into(),
            subject: AlertSubject {
                full_check_name: "postgres/payments/public/transfers".into(),
                check_id: CheckId::new(Uuid::from_u128(1)),
                revision: 3,
                is_current: true,
                target_id: "postgres".into(),
                tap_id: "payments".into(),
                status: Some(SummaryStatus::Fail),
                run_id: Some(RunId::new(Uuid::from_u128(2))),
                failed_attempts: Some(1),
                warning_id: None,
            },
            created_at: Utc.with_ymd_and_hms(2026, 7, 22, 13, 5, 0).unwrap(),
        }
    }

    #[test]
    fn plain_text_puts_the_next_action_after_the_details() {
        assert_eq!(
            alert().text(),
            "FAIL data-diff payments/public.transfers — data mismatch\ntap_id            : payments\n\n\
             Next action:\nRepair the replica."
        );
    }

    #[test]
    fn the_json_document_has_the_documented_fields() {
        let document = alert().to_json();
        assert_eq!(document["source"], "datadiff");
        assert_eq!(document["version"], 1);
        assert_eq!(document["kind"], "failure");
        assert_eq!(document["level"], "error");
        assert_eq!(document["alert_utc_time"], "2026-07-22T13:05:00Z");
        assert_eq!(document["check"]["check_id"], "00000000-0000-0000-0000-000000000001");
        assert_eq!(document["check"]["revision"], 3);
        assert_eq!(document["status"], "FAIL");
        assert_eq!(document["run_id"], "00000000-0000-0000-0000-000000000002");
        assert_eq!(document["failed_attempts"], 1);
        assert_eq!(document["warning_id"], Json::Null);
        assert_eq!(document["text"], alert().text());
        let mut keys: Vec<&str> = document.as_object().unwrap().keys().map(String::as_str).collect();
        keys.sort_unstable();
        assert_eq!(
            keys,
            [
                "alert_utc_time",
                "check",
                "details",
                "failed_attempts",
                "kind",
                "level",
                "message",
                "next_action",
                "run_id",
                "source",
                "status",
                "text",
                "version",
                "warning_id"
            ]
        );
    }
}
