//! The lag-aware horizon (`checks.<name>.horizon` in `datadiff.yml`): where the replica says how
//! far it has applied, what that reading came to, and the rule that keeps a slot whose window
//! the replica may not have applied yet from being attempted.
//!
//! A scheduled check compares a window of the source with the same window of the replica. A
//! window that ends after what the replica has applied would compare rows still in flight and
//! FAIL for lag, not drift. The runner reads a [`Horizon`] before it attempts a due slot; a
//! slot whose window end lies beyond it is SKIPPED ([`Horizon::refusal`]), never stored, and
//! is attempted by a later tick once the replica has applied it. The reading itself is I/O and
//! lives in the runner; this module holds the vocabulary and the rule.

use std::fmt;

use chrono::{DateTime, Utc};

use crate::outcome::python_isoformat;

/// Where the replica says how far it has applied.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum HorizonSource {
    /// `subscription:NAME`: PostgreSQL native logical replication; `NAME` is the subscription
    /// on the replica's database.
    Subscription(String),
    /// `column:NAME`: a column of the replica table holding, per row, the source time the
    /// change was made or loaded (`_sdc_batched_at`, `__source_ts_ms`); its maximum is how far
    /// the replica has applied.
    Column(String),
}

/// Why a `horizon` setting is not one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("horizon must be 'subscription:NAME' or 'column:NAME' with a non-empty NAME, got '{text}'")]
pub struct HorizonSourceError {
    /// The setting as written.
    pub text: String,
}

impl HorizonSource {
    /// Parses `subscription:NAME` or `column:NAME` (`NAME` non-empty, taken as written: an
    /// identifier, never an SQL fragment).
    pub fn parse(text: &str) -> Result<HorizonSource, HorizonSourceError> {
        let error = || HorizonSourceError { text: text.to_owned() };
        let (kind, name) = text.split_once(':').ok_or_else(error)?;
        if name.is_empty() {
            return Err(error());
        }
        match kind {
            "subscription" => Ok(HorizonSource::Subscription(name.to_owned())),
            "column" => Ok(HorizonSource::Column(name.to_owned())),
            _ => Err(error()),
        }
    }
}

impl fmt::Display for HorizonSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HorizonSource::Subscription(name) => write!(f, "subscription:{name}"),
            HorizonSource::Column(name) => write!(f, "column:{name}"),
        }
    }
}

/// One reading of the replica's position: the time up to which every source change is known
/// to be applied (`None`: unknown — a paused subscription, an empty column), and the
/// position the replica reported, for the reason text (`subscription sub_app at 0/3000148`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Horizon {
    /// Every source change made before this instant is applied on the replica.
    pub applied_up_to: Option<DateTime<Utc>>,
    /// What the replica reported, in words.
    pub position: String,
}

impl Horizon {
    /// Whether a window ending at `window_end` may be attempted: the replica has applied up to
    /// its end (a window is `[start, end)`, so a horizon equal to the end admits it).
    pub fn admits(&self, window_end: DateTime<Utc>) -> bool {
        self.applied_up_to.is_some_and(|horizon| horizon >= window_end)
    }

    /// The SKIPPED reason for a window ending at `window_end`, `None` when it is admitted:
    /// `replica has applied up to <horizon> (<position>); window ends <end>: not attempted
    /// before the replica has applied it`, or `replica position unknown (<position>); …`.
    pub fn refusal(&self, window_end: DateTime<Utc>) -> Option<String> {
        if self.admits(window_end) {
            return None;
        }
        let applied = match self.applied_up_to {
            Some(horizon) => format!("replica has applied up to {}", python_isoformat(horizon)),
            None => "replica position unknown".to_owned(),
        };
        Some(format!(
            "{applied} ({}); window ends {}: not attempted before the replica has applied it",
            self.position,
            python_isoformat(window_end)
        ))
    }
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;

    fn t(hour: u32, minute: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 12, 3, hour, minute, 0).unwrap()
    }

    #[test]
    fn settings_parse_by_kind_and_keep_the_name_as_written() {
        assert_eq!(HorizonSource::parse("subscription:sub_app"), Ok(HorizonSource::Subscription("sub_app".into())));
        assert_eq!(HorizonSource::parse("column:__source_ts_ms"), Ok(HorizonSource::Column("__source_ts_ms".into())));
        assert_eq!(HorizonSource::parse("column:a:b"), Ok(HorizonSource::Column("a:b".into())));
        for bad in ["", "subscription", "subscription:", "lsn:x", "Column:x", ":x"] {
            assert_eq!(HorizonSource::parse(bad), Err(HorizonSourceError { text: bad.into() }), "{bad}");
        }
        assert_eq!(HorizonSource::Subscription("s".into()).to_string(), "subscription:s");
    }

    #[test]
    fn a_window_is_admitted_only_when_the_replica_has_applied_its_end() {
        let horizon = Horizon { applied_up_to: Some(t(10, 0)), position: "subscription sub_app at 0/3000148".into() };
        assert!(horizon.admits(t(10, 0)));
        assert_eq!(horizon.refusal(t(9, 0)), None);
        assert_eq!(
            horizon.refusal(t(10, 5)).as_deref(),
            Some(
                "replica has applied up to 2026-12-03T10:00:00+00:00 (subscription sub_app at 0/3000148); \
                 window ends 2026-12-03T10:05:00+00:00: not attempted before the replica has applied it"
            )
        );
        let unknown = Horizon { applied_up_to: None, position: "subscription sub_app: disabled".into() };
        assert!(!unknown.admits(t(0, 0)));
        assert!(
            unknown.refusal(t(0, 0)).unwrap().starts_with("replica position unknown (subscription sub_app: disabled)")
        );
    }
}
