//! Coverage: the verified interval of a check definition, computed from its effective slots
//! (the full recomputation) or advanced by one appended slot (the incremental rule).

use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, Utc};
use datadiff_diff_core::attempt::{RunId, RunStatus};

use crate::error::{Error, Violation};
use crate::reason::Reason;

use crate::slot::Slot;

/// Whether the verified interval reaches the furthest observed end
/// (`verified_status`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum VerifiedStatus {
    /// Passing windows cover everything observed.
    Contiguous,
    /// A failure, a gap, an unresolved start or a metadata-only definition stops the interval
    /// short of the furthest observed end.
    Blocked,
}

impl VerifiedStatus {
    /// The database text: `CONTIGUOUS` or `BLOCKED`.
    pub fn as_str(self) -> &'static str {
        match self {
            VerifiedStatus::Contiguous => "CONTIGUOUS",
            VerifiedStatus::Blocked => "BLOCKED",
        }
    }
}

impl fmt::Display for VerifiedStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for VerifiedStatus {
    type Err = Error;

    fn from_str(text: &str) -> Result<Self, Error> {
        match text {
            "CONTIGUOUS" => Ok(VerifiedStatus::Contiguous),
            "BLOCKED" => Ok(VerifiedStatus::Blocked),
            _ => Err(Error::UnknownText { kind: "verified status", text: text.to_owned() }),
        }
    }
}

/// The verified interval `[start, end)`; `start == end` is an empty but resolved interval.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct VerifiedInterval {
    /// `verified_start`.
    pub start: DateTime<Utc>,
    /// `verified_end`.
    pub end: DateTime<Utc>,
}

impl VerifiedInterval {
    /// Pairs the two nullable columns: both set, or both NULL (unresolved); one alone is
    /// [`Violation::HalfBounds`].
    pub fn from_columns(
        start: Option<DateTime<Utc>>,
        end: Option<DateTime<Utc>>,
    ) -> Result<Option<VerifiedInterval>, Error> {
        match (start, end) {
            (Some(start), Some(end)) => Ok(Some(VerifiedInterval { start, end })),
            (None, None) => Ok(None),
            _ => Err(Error::InvalidCoverage(Violation::HalfBounds)),
        }
    }
}

/// The coverage columns shared by `dd_watermark_state` and `dd_watermark_events`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Coverage {
    /// The verified interval, `None` while a slot's historical start is unresolved.
    pub verified: Option<VerifiedInterval>,
    /// The largest window end of any effective slot.
    pub furthest_observed_end: DateTime<Utc>,
    /// CONTIGUOUS or BLOCKED.
    pub status: VerifiedStatus,
    /// The failed or errored run at the verified end, if one is there.
    pub blocking_run_id: Option<RunId>,
    /// Upstream's explanation (see [`Reason`]).
    pub reason: String,
}

impl Coverage {
    /// `verified_start`, NULL when unresolved.
    pub fn verified_start(&self) -> Option<DateTime<Utc>> {
        self.verified.map(|interval| interval.start)
    }

    /// `verified_end`, NULL when unresolved.
    pub fn verified_end(&self) -> Option<DateTime<Utc>> {
        self.verified.map(|interval| interval.end)
    }

    /// The first CHECK constraint of the watermark tables this coverage breaks, if any:
    /// `verified_start <= verified_end <= furthest_observed_end`, and NULL bounds only while
    /// BLOCKED with a blocking run.
    pub fn violation(&self) -> Option<Violation> {
        match self.verified {
            Some(VerifiedInterval { start, end }) if start > end => Some(Violation::StartAfterEnd { start, end }),
            Some(VerifiedInterval { end, .. }) if end > self.furthest_observed_end => {
                Some(Violation::EndAfterFurthest { end, furthest: self.furthest_observed_end })
            }
            None if self.status != VerifiedStatus::Blocked || self.blocking_run_id.is_none() => {
                Some(Violation::UnresolvedNotBlocked)
            }
            _ => None,
        }
    }

    fn validated(self) -> Result<Coverage, Error> {
        match self.violation() {
            Some(violation) => Err(Error::InvalidCoverage(violation)),
            None => Ok(self),
        }
    }
}

/// The full recomputation (upstream's `calculate_coverage`) over the effective slots of one
/// check definition, in any order.
///
/// 1. `furthest_observed_end` = the largest window end.
/// 2. A slot with an unresolved start wins over everything: no bounds, BLOCKED, blocked by
///    the first such slot by `scheduled_for`.
/// 3. `verified_start` = the smallest start of all slots, failed ones included.
/// 4. The barrier is the non-PASS slot with the smallest start; ties go to the smaller end,
///    then to the earlier `scheduled_for` (upstream sorts stably by `(start, end)` a list
///    read in slot order).
/// 5. Unless `metadata_only`, walk the PASS slots by `(start, end)` with a cursor at
///    `verified_start`: stop at the first one starting after the cursor (a gap), else move
///    the cursor to its end when larger; once the cursor reaches the barrier, pull it back to
///    the barrier's start and stop. So a failure overlapping earlier passes pulls the end
///    back to the failure's start. Metadata-only definitions keep the cursor at
///    `verified_start`.
/// 6. `verified_end` = the cursor; the barrier blocks only when its start is at or before
///    the cursor; CONTIGUOUS iff the cursor reaches `furthest_observed_end` (never for
///    metadata-only definitions).
///
/// Invalid slots, two slots with one `scheduled_for` and an empty input are errors.
pub fn recompute(slots: &[Slot], metadata_only: bool) -> Result<Coverage, Error> {
    let mut ordered: Vec<&Slot> = slots.iter().collect();
    ordered.sort_by_key(|slot| slot.scheduled_for);
    for (index, slot) in ordered.iter().enumerate() {
        slot.validate()?;
        if index > 0 && ordered[index - 1].scheduled_for == slot.scheduled_for {
            return Err(Error::DuplicateSlot { scheduled_for: slot.scheduled_for });
        }
    }
    let Some(furthest_observed_end) = ordered.iter().map(|slot| slot.window_end).max() else {
        return Err(Error::NoSlots);
    };

    if let Some(unresolved) = ordered.iter().find(|slot| slot.window_start.is_none()) {
        return Ok(Coverage {
            verified: None,
            furthest_observed_end,
            status: VerifiedStatus::Blocked,
            blocking_run_id: Some(unresolved.run_id),
            reason: Reason::UnresolvedStart { run_id: unresolved.run_id }.to_string(),
        });
    }

    // From here on every start is resolved; `Resolved` pairs each slot with its start.
    let resolved: Vec<Resolved<'_>> =
        ordered.iter().filter_map(|slot| slot.window_start.map(|start| Resolved { start, slot })).collect();
    let Some(verified_start) = resolved.iter().map(|entry| entry.start).min() else {
        return Err(Error::NoSlots);
    };
    // `min_by_key` keeps the first of equal keys; the key includes `scheduled_for` anyway so
    // that the tie rule does not depend on that.
    let barrier = resolved
        .iter()
        .filter(|entry| entry.slot.status != RunStatus::Pass)
        .min_by_key(|entry| (entry.start, entry.slot.window_end, entry.slot.scheduled_for));

    let mut cursor = verified_start;
    if !metadata_only {
        let mut passes: Vec<(DateTime<Utc>, DateTime<Utc>)> = resolved
            .iter()
            .filter(|entry| entry.slot.status == RunStatus::Pass)
            .map(|entry| (entry.start, entry.slot.window_end))
            .collect();
        passes.sort_unstable();
        for (start, end) in passes {
            if start > cursor {
                break;
            }
            cursor = cursor.max(end);
            if let Some(barrier) = barrier
                && cursor >= barrier.start
            {
                cursor = barrier.start;
                break;
            }
        }
    }

    let blocking = barrier.filter(|barrier| barrier.start <= cursor);
    let status = if !metadata_only && cursor >= furthest_observed_end {
        VerifiedStatus::Contiguous
    } else {
        VerifiedStatus::Blocked
    };
    let reason = if metadata_only {
        Reason::MetadataOnly
    } else if let Some(blocking) = blocking {
        Reason::Boundary { run_id: blocking.slot.run_id, status: blocking.slot.status }
    } else if status == VerifiedStatus::Blocked {
        Reason::Uncovered
    } else {
        Reason::AllCovered
    };
    Ok(Coverage {
        verified: Some(VerifiedInterval { start: verified_start, end: cursor }),
        furthest_observed_end,
        status,
        blocking_run_id: blocking.map(|blocking| blocking.slot.run_id),
        reason: reason.to_string(),
    })
}

/// A slot whose start is known.
struct Resolved<'a> {
    start: DateTime<Utc>,
    slot: &'a Slot,
}

/// The incremental rule (upstream's `advance_coverage`): the coverage after appending one
/// slot to the slots `previous` was computed from.
///
/// Valid only for an in-order append (the choice is [`Transition::plan`](crate::Transition::plan)'s):
/// `previous` has bounds, the slot has a start at or after `verified_start`, and no slot row
/// existed for it or after it. Under fixed window offsets it equals [`recompute`] over all
/// slots, except as noted below.
///
/// * `furthest_observed_end` grows to the slot's end.
/// * Metadata-only definitions keep the bounds, BLOCKED, the metadata reason, and **no
///   blocking run** — upstream clears it here, while [`recompute`] keeps a failure found at
///   `verified_start`; we reproduce both so that rows match PipelineWise's.
/// * A BLOCKED previous coverage keeps everything else, its blocker and reason text included.
/// * Otherwise (CONTIGUOUS), a PASS starting at or before the end extends it; a FAIL or ERROR
///   starting at or before the end pulls the end back to its start and blocks; a slot
///   starting after the end leaves a gap.
pub fn advance(previous: &Coverage, slot: &Slot, metadata_only: bool) -> Result<Coverage, Error> {
    slot.validate()?;
    if let Some(violation) = previous.violation() {
        return Err(Error::InvalidCoverage(violation));
    }
    let (Some(verified), Some(start)) = (previous.verified, slot.window_start) else {
        return Err(Error::NotAnAppend { run_id: slot.run_id });
    };
    if start < verified.start {
        return Err(Error::NotAnAppend { run_id: slot.run_id });
    }
    let furthest_observed_end = previous.furthest_observed_end.max(slot.window_end);

    if metadata_only {
        return Ok(Coverage {
            verified: Some(verified),
            furthest_observed_end,
            status: VerifiedStatus::Blocked,
            blocking_run_id: None,
            reason: Reason::MetadataOnly.to_string(),
        });
    }
    if previous.status == VerifiedStatus::Blocked {
        return Ok(Coverage { furthest_observed_end, ..previous.clone() });
    }

    let mut end = verified.end;
    let mut blocking_run_id = previous.blocking_run_id;
    if start <= end {
        if slot.status == RunStatus::Pass {
            end = end.max(slot.window_end);
        } else {
            end = start;
            blocking_run_id = Some(slot.run_id);
        }
    }
    let status = if end >= furthest_observed_end { VerifiedStatus::Contiguous } else { VerifiedStatus::Blocked };
    let reason = match blocking_run_id {
        // Upstream names this slot's status even for a blocker carried over; a CONTIGUOUS
        // previous coverage never has one, so the blocker is always this slot here.
        Some(run_id) => Reason::Boundary { run_id, status: slot.status },
        None if status == VerifiedStatus::Blocked => Reason::Uncovered,
        None => Reason::AllCovered,
    };
    Coverage {
        verified: Some(VerifiedInterval { start: verified.start, end }),
        furthest_observed_end,
        status,
        blocking_run_id,
        reason: reason.to_string(),
    }
    .validated()
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn at(hour: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 7, 22, hour, 0, 0).single().unwrap_or_default()
    }

    fn slot(n: u128, start: u32, end: u32, status: RunStatus) -> Slot {
        Slot {
            scheduled_for: at(end),
            window_start: Some(at(start)),
            window_end: at(end),
            status,
            run_id: RunId::new(uuid::Uuid::from_u128(n)),
            attempt: 1,
        }
    }

    #[test]
    fn vocabulary_round_trips() {
        assert_eq!("CONTIGUOUS".parse::<VerifiedStatus>(), Ok(VerifiedStatus::Contiguous));
        assert_eq!(VerifiedStatus::Blocked.as_str(), "BLOCKED");
        assert!("blocked".parse::<VerifiedStatus>().is_err());
    }

    #[test]
    fn empty_input_and_duplicate_slots_are_errors() {
        assert_eq!(recompute(&[], false), Err(Error::NoSlots));
        let mut twin = slot(2, 10, 11, RunStatus::Fail);
        twin.scheduled_for = at(11);
        assert_eq!(
            recompute(&[slot(1, 10, 11, RunStatus::Pass), twin], false),
            Err(Error::DuplicateSlot { scheduled_for: at(11) })
        );
    }

    #[test]
    fn barrier_ties_go_to_the_smaller_end_then_the_earlier_slot() {
        // The wide failure's slot comes first; the narrow one still wins on its end.
        let wide = slot(1, 10, 13, RunStatus::Fail);
        let mut narrow = slot(2, 10, 12, RunStatus::Error);
        narrow.scheduled_for = at(14);
        let coverage = recompute(&[wide, narrow], false);
        assert_eq!(coverage.as_ref().map(|c| c.blocking_run_id), Ok(Some(RunId::new(uuid::Uuid::from_u128(2)))));

        let mut first = slot(3, 10, 12, RunStatus::Fail);
        first.scheduled_for = at(5);
        let second = slot(4, 10, 12, RunStatus::Error);
        assert_eq!(
            recompute(&[second, first], false).map(|c| c.blocking_run_id),
            Ok(Some(RunId::new(uuid::Uuid::from_u128(3))))
        );
    }

    #[test]
    fn advance_refuses_what_is_not_an_append() {
        let previous = recompute(&[slot(1, 10, 11, RunStatus::Pass)], false);
        let Ok(previous) = previous else { panic!("valid coverage") };
        let before = slot(2, 9, 12, RunStatus::Pass);
        assert_eq!(advance(&previous, &before, false), Err(Error::NotAnAppend { run_id: before.run_id }));
        let mut unresolved = slot(3, 11, 12, RunStatus::Error);
        unresolved.window_start = None;
        assert_eq!(advance(&previous, &unresolved, false), Err(Error::NotAnAppend { run_id: unresolved.run_id }));
        let broken = Coverage { verified: None, ..previous };
        assert_eq!(
            advance(&broken, &slot(4, 11, 12, RunStatus::Pass), false),
            Err(Error::InvalidCoverage(Violation::UnresolvedNotBlocked))
        );
    }

    #[test]
    fn from_columns_pairs_the_bounds() {
        assert_eq!(VerifiedInterval::from_columns(None, None), Ok(None));
        assert_eq!(
            VerifiedInterval::from_columns(Some(at(1)), Some(at(2))),
            Ok(Some(VerifiedInterval { start: at(1), end: at(2) }))
        );
        assert_eq!(
            VerifiedInterval::from_columns(Some(at(1)), None),
            Err(Error::InvalidCoverage(Violation::HalfBounds))
        );
    }
}
