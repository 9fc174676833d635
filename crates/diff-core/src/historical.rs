//! Where a historical first run starts (runs note §1.5): the attempt was inserted with a NULL
//! start and its slot's end as the cutoff; after a passing preflight each side's earliest
//! non-NULL timestamp before the cutoff decides.

use chrono::{DateTime, Utc};

use crate::error::Side;
use crate::outcome::Outcome;
use crate::verdict::{CheckResult, ResultStatus};

/// What the two minima decide.
#[derive(Debug, Clone, PartialEq)]
pub enum HistoricalStart {
    /// Both sides have history: compare from the **later** minimum (the history both share).
    /// The runner persists it before comparing, and it survives a later failure.
    Resolved(DateTime<Utc>),
    /// The attempt ends here with this outcome: DEFERRED when neither side has history (and no
    /// metadata result failed), ERROR when only one side has, or when neither has but a
    /// metadata result already failed (an empty history must not hide it).
    Stop(Outcome),
}

/// Decides a historical run's start from each side's `MIN(ts) WHERE ts < cutoff` (`None` for
/// no row before the cutoff) and the metadata results already computed (`schema_compatibility`,
/// a rejected `row_checksum`).
///
/// * both `None`: any metadata result not PASS → ERROR with those results (their texts as the
///   error); otherwise DEFERRED with `Historical comparison is pending: …`;
/// * one `None`: ERROR `Historical comparison cannot start: <side> has no non-NULL timestamp
///   before the cutoff <iso>` naming the empty side, no results;
/// * both present: [`HistoricalStart::Resolved`] with the later one. Year 1 is a real boundary.
pub fn resolve_historical_start(
    source_minimum: Option<DateTime<Utc>>,
    target_minimum: Option<DateTime<Utc>>,
    cutoff: DateTime<Utc>,
    metadata_results: &[CheckResult],
) -> HistoricalStart {
    match (source_minimum, target_minimum) {
        (Some(source), Some(target)) => HistoricalStart::Resolved(source.max(target)),
        (None, Some(_)) => HistoricalStart::Stop(Outcome::one_sided(Side::Source, cutoff)),
        (Some(_), None) => HistoricalStart::Stop(Outcome::one_sided(Side::Target, cutoff)),
        (None, None) if metadata_results.iter().any(|result| result.status != ResultStatus::Pass) => {
            HistoricalStart::Stop(Outcome::error_with_results(metadata_results.to_vec()))
        }
        (None, None) => HistoricalStart::Stop(Outcome::deferred(cutoff)),
    }
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;
    use crate::column::ColumnPlan;
    use crate::column::tests::{column, payments, selection};
    use crate::run::RunStatus;

    fn at(day: u32, hour: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 7, day, hour, 0, 0).unwrap()
    }

    fn stopped(start: HistoricalStart) -> Outcome {
        match start {
            HistoricalStart::Stop(outcome) => outcome,
            HistoricalStart::Resolved(start) => panic!("expected a stop, got a start at {start}"),
        }
    }

    #[test]
    fn the_later_minimum_is_the_start() {
        let cutoff = at(22, 13);
        assert_eq!(
            resolve_historical_start(Some(at(1, 0)), Some(at(3, 4)), cutoff, &[]),
            HistoricalStart::Resolved(at(3, 4))
        );
        assert_eq!(
            resolve_historical_start(Some(at(5, 0)), Some(at(3, 4)), cutoff, &[]),
            HistoricalStart::Resolved(at(5, 0))
        );
        let year_one = Utc.with_ymd_and_hms(1, 1, 1, 0, 0, 0).unwrap();
        assert_eq!(
            resolve_historical_start(Some(year_one), Some(year_one), cutoff, &[]),
            HistoricalStart::Resolved(year_one),
            "year one is a real boundary"
        );
    }

    #[test]
    fn both_empty_defers() {
        let outcome = stopped(resolve_historical_start(None, None, at(22, 13), &[]));
        assert_eq!(outcome.status, RunStatus::Deferred);
        assert!(outcome.results.is_empty());
        assert_eq!(
            outcome.error.as_deref(),
            Some(
                "Historical comparison is pending: both source and target have no non-NULL timestamp before the \
                 cutoff 2026-07-22T13:00:00+00:00"
            )
        );
    }

    #[test]
    fn one_empty_side_is_an_error_naming_it() {
        let source_empty = stopped(resolve_historical_start(None, Some(at(1, 0)), at(22, 13), &[]));
        assert_eq!(source_empty.status, RunStatus::Error);
        assert_eq!(
            source_empty.error.as_deref(),
            Some(
                "Historical comparison cannot start: source has no non-NULL timestamp before the cutoff 2026-07-22T13:00:00+00:00"
            )
        );
        let target_empty = stopped(resolve_historical_start(Some(at(1, 0)), None, at(22, 13), &[]));
        assert!(target_empty.error.unwrap().contains(": target has no non-NULL timestamp"));
        assert!(target_empty.results.is_empty());
    }

    #[test]
    fn empty_history_keeps_known_metadata_failures() {
        let source = payments(vec![
            column("id", "bigint"),
            column("updated_at", "timestamp with time zone"),
            column("status", "text"),
        ]);
        let target = payments(vec![column("id", "bigint"), column("updated_at", "timestamp with time zone")]);
        let schema = ColumnPlan::resolve(&selection(&["status"]), &source, &target).unwrap().schema_compatibility();
        let outcome = stopped(resolve_historical_start(None, None, at(22, 13), std::slice::from_ref(&schema)));
        assert_eq!(outcome.status, RunStatus::Error, "not DEFERRED");
        assert_eq!(outcome.error.as_deref(), Some("status: source string is not compatible with target missing"));
        assert_eq!(outcome.results, vec![schema.clone()]);

        // Passing metadata does not prevent the deferral.
        let passing = ColumnPlan::resolve(&selection(&[]), &source, &target).unwrap().schema_compatibility();
        let outcome = stopped(resolve_historical_start(None, None, at(22, 13), &[passing]));
        assert_eq!(outcome.status, RunStatus::Deferred);
        // A one-sided history is an error whatever the metadata says, without results.
        let outcome = stopped(resolve_historical_start(Some(at(1, 0)), None, at(22, 13), &[schema]));
        assert_eq!((outcome.status, outcome.results.len()), (RunStatus::Error, 0));
    }
}
