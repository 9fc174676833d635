//! A `row_diff` window divided into key ranges, worked through the backend's part queue
//! (extension 3, [`datadiff_backend_store::PartSession`]) by any number of threads and
//! processes sharing the backend — the one path for `--jobs` threads of one process and for
//! several `run` processes, with no coordinator but the backend's advisory locks.
//!
//! * **The owner** — the process that started the attempt — reads the split points, takes
//!   the attempt's owner lock ([`SessionLock::RunOwner`](datadiff_backend_store::SessionLock)),
//!   writes the division (with the results computed before `row_diff`) and its parts, and
//!   works parts on its `--jobs` threads.
//! * **A joiner** — another `run` whose tick finds the attempt RUNNING (`An attempt for this
//!   cron slot is already running`) with a division — plans the same comparison from the
//!   stored definition and the attempt's window, and works parts on its threads too.
//! * Each thread holds a backend session of its own, claims the first unfinished part whose
//!   lock no session holds, compares it (both strategies, the part's key range added to the
//!   rows each side compares), and writes its outcome — counts, strategy, seconds and first
//!   differences, keys and column names only — with `finished_at` before releasing the
//!   lock. A finished part is never redone. Once no part is left to claim, a thread waits
//!   (looking at the parts again after 10 ms, doubling to 200 ms) for the parts others hold:
//!   a process killed holding a part loses its session, the server releases its lock, and
//!   the part is claimed again.
//! * **Finishing**: when every part is finished, the process holding the owner lock combines
//!   the stored outcomes in key order ([`datadiff_access::split::combine`]) and finishes the
//!   attempt exactly as an undivided one (result, evidence, coverage, watermark). A joiner
//!   that finds the owner lock free (the owner is gone) takes it and finishes the attempt
//!   itself — so killing either process loses only the part it held.
//! * **A failing part** (a stream error, a duplicate key) is stored as its outcome; no part
//!   is claimed after one failed, and the first failure in key order among the finished
//!   parts is the `row_diff` result's reason, as for an undivided window.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use datadiff_access::split::{Part, SplitKey};
use datadiff_backend_store::{Claim, Difference, PartRange, PartSession, RunPart, Store};
use datadiff_diff_core::{
    attempt::{CheckResult, ResultStatus, ResultType, RunId, RunStatus},
    merge::{DifferenceKind, Example, Summary},
    segment::{Strategy, StrategyUsed},
};
use serde_json::{Map, Value as Json, json};

use crate::clock::Clock;
use crate::row_diff::{RowDiffOutcome, outcome_of};
use crate::row_diff_error::RowDiffError;

/// How soon a thread with nothing to claim first looks at the parts again: the wait doubles
/// each time nothing changed, up to [`POLL_MAX`] (a sibling thread's last part usually ends
/// soon; another process's may take as long as a part takes).
const POLL_FIRST: Duration = Duration::from_millis(10);

/// The longest wait between two looks at the parts.
const POLL_MAX: Duration = Duration::from_millis(200);

/// The backend's queue of one divided window, as this process's threads use it.
#[derive(Debug, Clone)]
pub(crate) struct Queue<'a> {
    /// The backend holding the queue.
    pub(crate) store: &'a Store,
    /// The attempt.
    pub(crate) run_id: RunId,
    /// Where claim and finish times come from.
    pub(crate) clock: Clock,
    /// This process, as `claimed_by` names it (`host:pid`).
    pub(crate) label: String,
}

impl Queue<'_> {
    /// A backend session of its own for one thread.
    pub(crate) fn session(&self) -> Result<PartSession, RowDiffError> {
        self.store.part_session(&self.label).map_err(queue_error)
    }

    /// Whether the attempt is still RUNNING.
    pub(crate) fn running(&self) -> Result<bool, RowDiffError> {
        let attempt = self.store.attempt(self.run_id).map_err(queue_error)?;
        Ok(attempt.is_some_and(|attempt| attempt.status == RunStatus::Running))
    }
}

/// What a process working on a divided window keeps: the queue, what the owner writes into
/// its division, and the session holding the owner lock.
pub(crate) struct SharedWindow<'a> {
    /// The queue.
    pub(crate) queue: Queue<'a>,
    /// The results computed before `row_diff` and an aggregate failure, for the owner's
    /// division row.
    pub(crate) before: Option<(Json, Option<String>)>,
    /// The session holding the owner lock, kept until the attempt is finished.
    pub(crate) owner: Option<PartSession>,
}

impl<'a> SharedWindow<'a> {
    /// The window of `run_id` in `store`, worked on by this process.
    pub(crate) fn new(store: &'a Store, run_id: RunId, clock: Clock) -> SharedWindow<'a> {
        SharedWindow { queue: Queue { store, run_id, clock, label: process_label() }, before: None, owner: None }
    }

    /// Takes the owner lock on a session of its own, kept in [`SharedWindow::owner`]: whether
    /// this process owns the attempt now.
    pub(crate) fn own(&mut self) -> Result<bool, RowDiffError> {
        if self.owner.is_some() {
            return Ok(true);
        }
        let mut session = self.queue.session()?;
        if session.try_own(self.queue.run_id).map_err(queue_error)? {
            self.owner = Some(session);
            return Ok(true);
        }
        Ok(false)
    }
}

/// The part queue's failure as a `row_diff` reason.
pub(crate) fn queue_error(error: datadiff_backend_store::Error) -> RowDiffError {
    RowDiffError::Parts(crate::error::chain(&error))
}

/// `host:pid` of this process (for `claimed_by`, observability only).
pub(crate) fn process_label() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|name| name.trim().to_owned())
        .filter(|name| !name.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "localhost".to_owned());
    format!("{host}:{}", std::process::id())
}

/// The stored ranges of `parts`.
pub(crate) fn ranges(key: SplitKey, parts: &[Part]) -> Vec<PartRange> {
    parts
        .iter()
        .map(|part| PartRange {
            index: i32::try_from(part.index).unwrap_or(i32::MAX),
            lower: part.lower.as_ref().map(|bound| key.bound_text(bound)),
            upper: part.upper.as_ref().map(|bound| key.bound_text(bound)),
        })
        .collect()
}

/// The part a stored range describes.
pub(crate) fn part_of(key: SplitKey, range: &PartRange) -> Result<Part, RowDiffError> {
    let bound = |text: &Option<String>| -> Result<_, RowDiffError> {
        text.as_deref()
            .map(|text| {
                key.bound_of_text(text).ok_or_else(|| {
                    RowDiffError::Parts(format!("part {} has a bound that is not a {} key", range.index, key.as_str()))
                })
            })
            .transpose()
    };
    Ok(Part {
        index: usize::try_from(range.index).unwrap_or(0),
        lower: bound(&range.lower)?,
        upper: bound(&range.upper)?,
    })
}

/// Claims, compares and finishes parts until none is left to claim and every part another
/// session holds is finished (or one failed, or the attempt ended, or `interrupted`).
/// `compare` compares one part: `Err(RowDiffError::Interrupted)` gives it back unfinished.
pub(crate) fn work(
    shared: &Queue<'_>,
    key: SplitKey,
    failed: &AtomicBool,
    interrupted: &(dyn Fn() -> bool + Sync),
    compare: &(dyn Fn(&Part) -> Result<PartOutcome, RowDiffError> + Sync),
) -> Result<(), RowDiffError> {
    let mut session = shared.session()?;
    let mut wait = POLL_FIRST;
    loop {
        if interrupted() || failed.load(Ordering::Relaxed) {
            return Ok(());
        }
        match session.claim(shared.run_id, shared.clock.now()).map_err(queue_error)? {
            Some(claim) => {
                let compared = part_of(key, &claim.range).and_then(|part| compare(&part));
                finish(shared, &mut session, claim, compared, failed)?;
                wait = POLL_FIRST;
            }
            None => {
                let parts = session.parts(shared.run_id).map_err(queue_error)?;
                if parts.iter().all(|part| part.finished_at.is_some()) || parts.iter().any(is_failure) {
                    return Ok(());
                }
                if !shared.running()? {
                    return Ok(());
                }
                std::thread::sleep(wait);
                wait = (wait * 2).min(POLL_MAX);
            }
        }
    }
}

fn finish(
    shared: &Queue<'_>,
    session: &mut PartSession,
    claim: Claim,
    compared: Result<PartOutcome, RowDiffError>,
    failed: &AtomicBool,
) -> Result<(), RowDiffError> {
    let outcome = match compared {
        Ok(outcome) => outcome.to_json(),
        Err(RowDiffError::Interrupted) => return session.release(claim).map_err(queue_error),
        Err(reason) => {
            failed.store(true, Ordering::Relaxed);
            json!({ "error": reason.to_string() })
        }
    };
    session.finish(claim, &outcome, shared.clock.now()).map_err(queue_error)
}

fn is_failure(part: &RunPart) -> bool {
    part.outcome.as_ref().is_some_and(|outcome| outcome.get("error").is_some())
}

/// The window's outcome from its stored parts, in key order: the first failure's reason,
/// else the counts summed and the first `max_examples` differences; `None` while a part is
/// unfinished.
pub(crate) fn combined(
    parts: &[RunPart],
    max_examples: usize,
    field_names: &[String],
) -> Option<Result<CombinedParts, RowDiffError>> {
    if let Some(failure) = parts.iter().find(|part| is_failure(part)) {
        let reason = failure.outcome.as_ref().and_then(|outcome| outcome["error"].as_str()).unwrap_or_default();
        return Some(Err(RowDiffError::Part(reason.to_owned())));
    }
    let mut outcomes = Vec::with_capacity(parts.len());
    for part in parts {
        let outcome = part.outcome.as_ref()?;
        match PartOutcome::from_json(outcome, max_examples, field_names) {
            Some(outcome) => outcomes.push(outcome),
            None => {
                let reason = format!("part {} has an unreadable outcome", part.range.index);
                return Some(Err(RowDiffError::Parts(reason)));
            }
        }
    }
    let strategy = outcomes.first().map(|outcome| outcome.strategy.clone());
    let summaries = outcomes.into_iter().map(|outcome| outcome.summary);
    Some(Ok(CombinedParts {
        summary: datadiff_access::split::combine(summaries, max_examples, field_names.to_vec()),
        strategy: strategy.unwrap_or_else(|| StrategyUsed::stream("no part")),
    }))
}

/// The parts of a divided window combined.
pub(crate) struct CombinedParts {
    /// Counts summed, the first differences in key order.
    pub(crate) summary: Summary<Json>,
    /// The first part's strategy (every part decides alike).
    pub(crate) strategy: StrategyUsed,
}

impl CombinedParts {
    /// The `row_diff` outcome, each side's time `seconds`.
    pub(crate) fn outcome(self, seconds: f64) -> RowDiffOutcome {
        outcome_of(self.summary, seconds, seconds, self.strategy)
    }
}

/// What one part found, as stored in `datadiff_run_parts.outcome`: keys (as the evidence
/// names them) and column names only.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PartOutcome {
    /// Counts and first differences, keyed as evidence keys.
    pub(crate) summary: Summary<Json>,
    /// How the part's rows were read.
    pub(crate) strategy: StrategyUsed,
    /// How long the part took.
    pub(crate) seconds: f64,
}

impl PartOutcome {
    fn to_json(&self) -> Json {
        let differences: Vec<Json> = self
            .summary
            .examples
            .iter()
            .map(|example| json!({"kind": example.kind.as_str(), "key": example.key, "fields": example.fields}))
            .collect();
        json!({
            "matched": self.summary.matched,
            "missing": self.summary.missing,
            "extra": self.summary.extra,
            "changed": self.summary.changed,
            "strategy": self.strategy.strategy.as_str(),
            "reason": self.strategy.reason,
            "seconds": self.seconds,
            "differences": differences,
        })
    }

    fn from_json(stored: &Json, max_examples: usize, field_names: &[String]) -> Option<PartOutcome> {
        let mut summary = Summary::new(max_examples, field_names.to_vec());
        summary.matched = stored["matched"].as_u64()?;
        summary.missing = stored["missing"].as_u64()?;
        summary.extra = stored["extra"].as_u64()?;
        summary.changed = stored["changed"].as_u64()?;
        for difference in stored["differences"].as_array()? {
            let kind = match difference["kind"].as_str()? {
                "MISSING_IN_TARGET" => DifferenceKind::MissingInTarget,
                "EXTRA_IN_TARGET" => DifferenceKind::ExtraInTarget,
                "CHANGED" => DifferenceKind::Changed,
                _ => return None,
            };
            let fields = difference["fields"]
                .as_array()?
                .iter()
                .map(|field| field.as_str().map(str::to_owned))
                .collect::<Option<Vec<_>>>()?;
            summary.examples.push(Example { kind, key: difference["key"].clone(), fields });
        }
        let strategy: Strategy = stored["strategy"].as_str()?.parse().ok()?;
        let strategy = StrategyUsed { strategy, reason: stored["reason"].as_str()?.to_owned() };
        Some(PartOutcome { summary, strategy, seconds: stored["seconds"].as_f64()? })
    }
}

/// The results computed before `row_diff`, as the division stores them.
pub(crate) fn results_json(results: &[CheckResult]) -> Json {
    Json::Array(
        results
            .iter()
            .map(|result| {
                let mut row = Map::new();
                row.insert("check_type".into(), Json::String(result.check_type.as_str().to_owned()));
                row.insert("status".into(), Json::String(result.status.as_str().to_owned()));
                row.insert("source_value".into(), result.source_value.clone());
                row.insert("target_value".into(), result.target_value.clone());
                row.insert("source_query_seconds".into(), json!(result.source_query_seconds));
                row.insert("target_query_seconds".into(), json!(result.target_query_seconds));
                row.insert("error".into(), json!(result.error));
                Json::Object(row)
            })
            .collect(),
    )
}

/// The results [`results_json`] stored.
pub(crate) fn results_of(stored: &Json) -> Option<Vec<CheckResult>> {
    stored
        .as_array()?
        .iter()
        .map(|row| {
            Some(CheckResult {
                check_type: row["check_type"].as_str()?.parse::<ResultType>().ok()?,
                status: row["status"].as_str()?.parse::<ResultStatus>().ok()?,
                source_value: row["source_value"].clone(),
                target_value: row["target_value"].clone(),
                source_query_seconds: row["source_query_seconds"].as_f64(),
                target_query_seconds: row["target_query_seconds"].as_f64(),
                error: row["error"].as_str().map(str::to_owned),
            })
        })
        .collect()
}

/// The differences of a combined outcome as evidence rows.
pub(crate) fn differences(summary: &Summary<Json>) -> Vec<Difference> {
    summary
        .examples
        .iter()
        .map(|example| Difference {
            check_type: ResultType::RowDiff,
            kind: example.kind,
            key: example.key.clone(),
            fields: example.fields.clone(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use datadiff_diff_core::attempt::CheckResult;
    use datadiff_diff_core::definition::CheckType;

    #[test]
    fn a_part_outcome_reads_back_as_written() {
        let mut summary = Summary::new(5, vec!["note".to_owned()]);
        summary.matched = 40;
        summary.changed = 1;
        summary.missing = 1;
        summary.examples = vec![
            Example { kind: DifferenceKind::MissingInTarget, key: json!({"id": "3"}), fields: Vec::new() },
            Example { kind: DifferenceKind::Changed, key: json!({"id": "9"}), fields: vec!["note".to_owned()] },
        ];
        let outcome = PartOutcome { summary, strategy: StrategyUsed::segments("asked for"), seconds: 0.25 };
        assert_eq!(PartOutcome::from_json(&outcome.to_json(), 5, &["note".to_owned()]), Some(outcome));
        assert_eq!(PartOutcome::from_json(&json!({"matched": 1}), 5, &[]), None);
    }

    #[test]
    fn parts_combine_in_key_order_and_the_first_failure_wins() {
        let part = |index: i32, outcome: Json| RunPart {
            range: PartRange { index, lower: None, upper: None },
            part_count: 3,
            claimed_at: None,
            claimed_by: None,
            finished_at: Some(chrono::DateTime::UNIX_EPOCH),
            outcome: Some(outcome),
        };
        let found = |keys: &[&str], matched: u64| {
            let differences: Vec<Json> =
                keys.iter().map(|key| json!({"kind": "EXTRA_IN_TARGET", "key": {"id": key}, "fields": []})).collect();
            json!({"matched": matched, "missing": 0, "extra": keys.len(), "changed": 0, "strategy": "stream",
                   "reason": "asked for", "seconds": 1.0, "differences": differences})
        };
        let parts = [part(0, found(&["1", "2"], 5)), part(1, found(&[], 7)), part(2, found(&["30", "31"], 1))];
        let all = match combined(&parts, 3, &[]) {
            Some(Ok(all)) => all,
            _ => panic!("combined"),
        };
        assert_eq!((all.summary.matched, all.summary.extra), (13, 4));
        let keys: Vec<&Json> = all.summary.examples.iter().map(|example| &example.key).collect();
        assert_eq!(keys, [&json!({"id": "1"}), &json!({"id": "2"}), &json!({"id": "30"})]);

        let mut unfinished = parts.clone();
        unfinished[1].outcome = None;
        assert!(combined_is_none(&unfinished));
        let failed = [part(0, found(&[], 1)), part(1, json!({"error": "row_diff: duplicate key 7"}))];
        match combined(&failed, 3, &[]) {
            Some(Err(reason)) => assert_eq!(reason.to_string(), "row_diff: duplicate key 7"),
            _ => panic!("the failure"),
        }
    }

    fn combined_is_none(parts: &[RunPart]) -> bool {
        combined(parts, 3, &[]).is_none()
    }

    #[test]
    fn results_read_back_as_written() {
        let results = vec![CheckResult {
            check_type: ResultType::Check(CheckType::RowCount),
            status: ResultStatus::Pass,
            source_value: json!("50"),
            target_value: json!("50"),
            source_query_seconds: Some(0.5),
            target_query_seconds: None,
            error: None,
        }];
        assert_eq!(results_of(&results_json(&results)), Some(results));
    }
}
