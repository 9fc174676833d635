//! Watermark events: the append-only history row (`dd_watermark_events`) and the rule that
//! names each change.

use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, Utc};
use datadiff_diff_core::attempt::{CheckId, RunId};
use uuid::Uuid;

use crate::coverage::{Coverage, VerifiedStatus};
use crate::error::Error;

/// How an evaluated run changed the watermark (`event_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EventType {
    /// The first evaluation of the definition: there was no state row.
    Initialize,
    /// The verified end moved forward (or became known).
    Advance,
    /// The verified end moved back (or became unknown).
    Invalidate,
    /// The end did not move and the coverage is BLOCKED.
    Block,
    /// The end did not move and the coverage is CONTIGUOUS.
    Confirm,
}

impl EventType {
    /// The database text: `INITIALIZE`, `ADVANCE`, `INVALIDATE`, `BLOCK` or `CONFIRM`.
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Initialize => "INITIALIZE",
            EventType::Advance => "ADVANCE",
            EventType::Invalidate => "INVALIDATE",
            EventType::Block => "BLOCK",
            EventType::Confirm => "CONFIRM",
        }
    }
}

impl fmt::Display for EventType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for EventType {
    type Err = Error;

    fn from_str(text: &str) -> Result<Self, Error> {
        match text {
            "INITIALIZE" => Ok(EventType::Initialize),
            "ADVANCE" => Ok(EventType::Advance),
            "INVALIDATE" => Ok(EventType::Invalidate),
            "BLOCK" => Ok(EventType::Block),
            "CONFIRM" => Ok(EventType::Confirm),
            _ => Err(Error::UnknownText { kind: "event type", text: text.to_owned() }),
        }
    }
}

/// Names the change from `previous` (the state row before, if any) to `current`, comparing
/// only the verified ends (upstream's `coverage_event_type`):
///
/// * no previous state → INITIALIZE;
/// * a new end that is set and (the old one unknown, or smaller) → ADVANCE;
/// * an old end that was set and (the new one unknown, or smaller) → INVALIDATE;
/// * otherwise BLOCK when `current` is BLOCKED, else CONFIRM.
///
/// So unknown → unknown is BLOCK (unresolved coverage is always BLOCKED), and a change of
/// start or blocker alone is BLOCK or CONFIRM.
pub fn event_type(previous: Option<&Coverage>, current: &Coverage) -> EventType {
    let Some(previous) = previous else { return EventType::Initialize };
    let (old, new) = (previous.verified_end(), current.verified_end());
    match (old, new) {
        (None, Some(_)) => EventType::Advance,
        (Some(old), Some(new)) if new > old => EventType::Advance,
        (Some(_), None) => EventType::Invalidate,
        (Some(old), Some(new)) if new < old => EventType::Invalidate,
        _ if current.status == VerifiedStatus::Blocked => EventType::Block,
        _ => EventType::Confirm,
    }
}

/// A row of `dd_watermark_events`, every column but the store-assigned `event_sequence`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WatermarkEvent {
    /// `watermark_event_id`, supplied by the caller (this crate has no random source).
    pub watermark_event_id: Uuid,
    /// The check definition.
    pub check_id: CheckId,
    /// The run whose outcome was evaluated (`evaluated_run_id`, one event per run).
    pub evaluated_run_id: RunId,
    /// How the watermark changed.
    pub event_type: EventType,
    /// The verified end before this evaluation (NULL for INITIALIZE or an unresolved state).
    pub previous_verified_end: Option<DateTime<Utc>>,
    /// The coverage after this evaluation (`verified_start`, `verified_end`,
    /// `furthest_observed_end`, `verified_status`, `blocking_run_id`, `reason`).
    pub coverage: Coverage,
    /// `recorded_at`: the attempt's `finished_at`, or the sweep time.
    pub recorded_at: DateTime<Utc>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coverage::VerifiedInterval;
    use chrono::TimeZone;

    fn at(hour: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 7, 22, hour, 0, 0).single().unwrap_or_default()
    }

    fn coverage(end: Option<u32>, status: VerifiedStatus) -> Coverage {
        Coverage {
            verified: end.map(|end| VerifiedInterval { start: at(0), end: at(end) }),
            furthest_observed_end: at(20),
            status,
            blocking_run_id: Some(RunId::new(Uuid::nil())),
            reason: String::new(),
        }
    }

    #[test]
    fn event_types_follow_the_verified_end() {
        use VerifiedStatus::{Blocked, Contiguous};
        let current = coverage(Some(11), Contiguous);
        assert_eq!(event_type(None, &current), EventType::Initialize);
        assert_eq!(event_type(None, &coverage(None, Blocked)), EventType::Initialize);
        assert_eq!(event_type(Some(&coverage(Some(10), Blocked)), &current), EventType::Advance);
        assert_eq!(event_type(Some(&coverage(None, Blocked)), &coverage(Some(10), Blocked)), EventType::Advance);
        assert_eq!(event_type(Some(&coverage(Some(12), Contiguous)), &current), EventType::Invalidate);
        assert_eq!(event_type(Some(&coverage(Some(12), Contiguous)), &coverage(None, Blocked)), EventType::Invalidate);
        assert_eq!(event_type(Some(&coverage(Some(11), Contiguous)), &coverage(Some(11), Blocked)), EventType::Block);
        assert_eq!(event_type(Some(&coverage(None, Blocked)), &coverage(None, Blocked)), EventType::Block);
        assert_eq!(event_type(Some(&coverage(Some(11), Blocked)), &current), EventType::Confirm);
    }

    #[test]
    fn vocabulary_round_trips() {
        for event in
            [EventType::Initialize, EventType::Advance, EventType::Invalidate, EventType::Block, EventType::Confirm]
        {
            assert_eq!(event.as_str().parse::<EventType>(), Ok(event));
        }
        assert_eq!(EventType::Invalidate.to_string(), "INVALIDATE");
        assert!("Advance".parse::<EventType>().is_err());
    }
}
