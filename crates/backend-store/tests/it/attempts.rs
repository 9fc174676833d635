//! Starting attempts (runs note §1.4–§2.2, the repository tests of §7): fresh slots,
//! historical first runs, force, skips, retries and remediation, asserted on rows.

use chrono::{DateTime, TimeDelta, TimeZone, Utc};
use datadiff_backend_store::{AdvisoryLock, Error, StoredDefinition};
use datadiff_diff_core::{
    attempt::{Bounds, CheckId, RemediationRefusal, RunId, RunStatus, SkipReason, StartKind, TriggerType},
    definition::CheckType,
};
use uuid::Uuid;

use crate::support::{Repo, at, repo, scheduled, table, wait_for_lock_waiters};

fn full_scan(repo: &Repo, name: &str) -> StoredDefinition {
    let mut definition = table("t", name);
    definition.initial_full_scan = true;
    repo.import_one(&definition, at(0, 0))
}

/// Inserts an attempt by hand (as another worker or PipelineWise left it).
#[allow(clippy::too_many_arguments)]
fn insert_attempt(
    repo: &Repo,
    check_id: CheckId,
    slot: DateTime<Utc>,
    attempt: i32,
    trigger: &str,
    status: &str,
    start: Option<DateTime<Utc>>,
    started_at: DateTime<Utc>,
) -> RunId {
    let run_id = Uuid::new_v4();
    let finished_at = (status != "RUNNING").then_some(started_at + TimeDelta::minutes(1));
    repo.sql()
        .execute(
            "INSERT INTO public.dd_run_attempts (run_id, check_id, scheduled_for, window_start, window_end, attempt, \
             trigger_type, status, started_at, finished_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
            &[&run_id, &check_id.get(), &slot, &start, &slot, &attempt, &trigger, &status, &started_at, &finished_at],
        )
        .unwrap();
    RunId::new(run_id)
}

fn retry(before: DateTime<Utc>) -> StartKind {
    StartKind::Retry { retry_before: before }
}

#[test]
fn a_first_scheduled_attempt_uses_the_rolling_window_by_default() {
    let repo = repo();
    let definition = repo.import_one(&table("t", "x"), at(0, 0));
    let attempt = repo.start(&definition, at(13, 0), scheduled(false), at(13, 5));
    assert_eq!(
        (attempt.attempt, attempt.trigger, attempt.status, attempt.bounds),
        (1, TriggerType::Scheduled, RunStatus::Running, Bounds { start: Some(at(12, 0)), end: at(13, 0) })
    );
    let row = repo
        .sql()
        .query_one(
            "SELECT started_at, finished_at, rerun_of_run_id, remediation_reference, preflight_id, error \
             FROM public.dd_run_attempts WHERE run_id = $1",
            &[&attempt.run_id.get()],
        )
        .unwrap();
    assert_eq!(row.get::<_, DateTime<Utc>>(0), at(13, 5), "started_at is the given now");
    assert_eq!(row.get::<_, Option<DateTime<Utc>>>(1), None);
    assert_eq!(row.get::<_, Option<Uuid>>(2), None);
    assert_eq!(row.get::<_, Option<String>>(3), None);
    assert_eq!(row.get::<_, Option<Uuid>>(4), None);
    assert_eq!(row.get::<_, Option<String>>(5), None);
    assert_eq!(
        repo.attempt_rows(definition.check_id),
        vec![(at(13, 0), 1, "SCHEDULED".into(), "RUNNING".into(), Some(at(12, 0)), at(13, 0))]
    );
    // A later slot of a revision that has run is rolling too; --force on a fresh slot is MANUAL.
    let later = repo.start(&definition, at(14, 0), scheduled(true), at(14, 5));
    assert_eq!((later.trigger, later.bounds.start), (TriggerType::Manual, Some(at(13, 0))));
}

#[test]
fn a_full_scan_first_attempt_has_an_unresolved_start_until_a_counting_run_exists() {
    let repo = repo();
    let definition = full_scan(&repo, "x");
    // Remediations and DEFERRED attempts are not previous runs.
    insert_attempt(&repo, definition.check_id, at(10, 0), 1, "REMEDIATION", "FAIL", Some(at(9, 0)), at(10, 1));
    insert_attempt(&repo, definition.check_id, at(11, 0), 1, "SCHEDULED", "DEFERRED", None, at(11, 1));
    let first = repo.start(&definition, at(13, 0), scheduled(false), at(13, 5));
    assert_eq!(first.bounds, Bounds { start: None, end: at(13, 0) }, "the slot's end is the cutoff");
    repo.finish(first.run_id, RunStatus::Error, at(13, 6));
    // After an ERROR first run (unresolved or not), new slots are rolling.
    let second = repo.start(&definition, at(14, 0), scheduled(false), at(14, 5));
    assert_eq!(second.bounds, Bounds { start: Some(at(13, 0)), end: at(14, 0) });
}

#[test]
fn a_metadata_only_first_attempt_keeps_the_rolling_window() {
    let repo = repo();
    let mut definition = table("t", "schema");
    definition.initial_full_scan = true;
    definition.checks = vec![CheckType::SchemaCompatibility];
    let stored = repo.import_one(&definition, at(0, 0));
    let first = repo.start(&stored, at(13, 0), scheduled(false), at(13, 5));
    assert_eq!(first.bounds.start, Some(at(12, 0)));
}

#[test]
fn a_new_slot_waits_for_an_unresolved_historical_attempt_even_when_forced() {
    let repo = repo();
    let definition = full_scan(&repo, "x");
    repo.start(&definition, at(13, 0), scheduled(false), at(13, 5));
    for force in [false, true] {
        let skip = repo.skip(&definition, at(14, 0), scheduled(force), at(14, 5));
        assert_eq!(skip.reason, SkipReason::HistoricalDiscoveryRunning);
        assert_eq!(skip.reason.message(), "Historical baseline discovery is already running for this check");
        assert_eq!((skip.slot_status, skip.run_id, skip.bounds), (Some(RunStatus::Running), None, None));
    }
    assert_eq!(repo.attempt_rows(definition.check_id).len(), 1, "nothing was written");
}

#[test]
fn a_waiting_slot_still_discovers_history_after_the_earlier_attempt_is_deferred() {
    let repo = repo();
    let definition = full_scan(&repo, "x");
    let first = repo.start(&definition, at(13, 0), scheduled(false), at(13, 5));
    repo.finish(first.run_id, RunStatus::Deferred, at(13, 6));
    // The same slot is attempted (SKIPPED with its DEFERRED status)…
    let skip = repo.skip(&definition, at(13, 0), scheduled(false), at(13, 30));
    assert_eq!((skip.reason, skip.slot_status), (SkipReason::AlreadyAttempted, Some(RunStatus::Deferred)));
    // … and the next slot rediscovers with its own cutoff.
    let next = repo.start(&definition, at(14, 0), scheduled(false), at(14, 5));
    assert_eq!(next.bounds, Bounds { start: None, end: at(14, 0) });
}

#[test]
fn a_forced_rerun_reuses_the_newest_attempts_bounds_including_an_unresolved_start() {
    let repo = repo();
    let definition = full_scan(&repo, "x");
    let first = repo.start(&definition, at(13, 0), scheduled(false), at(13, 5));
    repo.finish(first.run_id, RunStatus::Error, at(13, 6));
    let forced = repo.start(&definition, at(13, 0), scheduled(true), at(13, 10));
    assert_eq!(
        (forced.attempt, forced.trigger, forced.bounds),
        (2, TriggerType::Manual, Bounds { start: None, end: at(13, 0) })
    );
    // The forced run resolves its start and fails: the next force reuses the resolved bounds.
    repo.store.resolve_historical_start(forced.run_id, at(9, 0)).unwrap();
    repo.finish(forced.run_id, RunStatus::Fail, at(13, 11));
    let third = repo.start(&definition, at(13, 0), scheduled(true), at(13, 20));
    assert_eq!((third.attempt, third.bounds), (3, Bounds { start: Some(at(9, 0)), end: at(13, 0) }));
}

#[test]
fn an_attempted_slot_is_skipped_whatever_its_outcome() {
    let repo = repo();
    for status in [RunStatus::Pass, RunStatus::Fail, RunStatus::Error, RunStatus::Deferred] {
        let definition = repo.import_one(&table("t", &status.as_str().to_lowercase()), at(0, 0));
        let attempt = repo.start(&definition, at(13, 0), scheduled(false), at(13, 5));
        repo.finish(attempt.run_id, status, at(13, 6));
        let skip = repo.skip(&definition, at(13, 0), scheduled(false), at(13, 30));
        assert_eq!(skip.reason.message(), "This cron slot has already been attempted");
        assert_eq!(
            (skip.slot_status, skip.run_id, skip.bounds),
            (Some(status), Some(attempt.run_id), Some(attempt.bounds))
        );
        assert_eq!(repo.attempt_rows(definition.check_id).len(), 1);
    }
}

#[test]
fn a_running_attempt_is_never_restarted() {
    let repo = repo();
    let definition = repo.import_one(&table("t", "x"), at(0, 0));
    let running = repo.start(&definition, at(13, 0), scheduled(false), at(13, 5));
    for kind in [scheduled(false), scheduled(true), retry(at(16, 0))] {
        let skip = repo.skip(&definition, at(13, 0), kind, at(15, 0));
        assert_eq!(skip.reason.message(), "An attempt for this cron slot is already running");
        assert_eq!((skip.slot_status, skip.run_id), (Some(RunStatus::Running), Some(running.run_id)));
    }
    assert_eq!(repo.attempt_rows(definition.check_id).len(), 1);
}

#[test]
fn a_failed_window_is_retried_once_per_cron_interval_and_again_in_the_next() {
    let repo = repo();
    let definition = repo.import_one(&table("t", "x"), at(0, 0));
    let first = repo.start(&definition, at(13, 0), scheduled(false), at(13, 5));
    repo.finish(first.run_id, RunStatus::Fail, at(13, 6));
    // The current slot's own failure is not retried in its interval.
    assert!(repo.store.retry_candidates(definition.check_id, at(13, 0), 24).unwrap().is_empty());

    // Next interval: one retry, with the failed window, numbered after the failure.
    let candidates = repo.store.retry_candidates(definition.check_id, at(14, 0), 24).unwrap();
    assert_eq!(candidates.len(), 1);
    assert_eq!(
        (candidates[0].scheduled_for, candidates[0].run_id, candidates[0].status, candidates[0].last_activity),
        (at(13, 0), first.run_id, RunStatus::Fail, at(13, 6))
    );
    let second = repo.start(&definition, at(13, 0), retry(at(14, 0)), at(14, 5));
    assert_eq!((second.attempt, second.trigger, second.bounds), (2, TriggerType::Retry, first.bounds));
    assert_eq!((second.rerun_of_run_id, second.remediation_reference.as_deref()), (None, None));
    repo.finish(second.run_id, RunStatus::Fail, at(14, 6));
    // Not again in this interval, neither listed nor started.
    assert!(repo.store.retry_candidates(definition.check_id, at(14, 0), 24).unwrap().is_empty());
    let skip = repo.skip(&definition, at(13, 0), retry(at(14, 0)), at(14, 30));
    assert_eq!(skip.reason.message(), "This window is no longer eligible for a retry in this cron interval");
    assert_eq!((skip.slot_status, skip.run_id), (Some(RunStatus::Fail), Some(second.run_id)));

    // The interval after: attempt 3 passes and repairs the watermark.
    assert_eq!(repo.store.retry_candidates(definition.check_id, at(15, 0), 24).unwrap().len(), 1);
    let third = repo.start(&definition, at(13, 0), retry(at(15, 0)), at(15, 5));
    assert_eq!(third.attempt, 3);
    let finished = repo.finish(third.run_id, RunStatus::Pass, at(15, 6));
    let state = finished.coverage.unwrap().state;
    assert_eq!(state.coverage.verified_end(), Some(at(13, 0)));
    assert_eq!(state.coverage.status.as_str(), "CONTIGUOUS");
    assert!(repo.store.retry_candidates(definition.check_id, at(16, 0), 24).unwrap().is_empty());
    assert_eq!(
        repo.attempt_rows(definition.check_id)
            .iter()
            .map(|row| (row.1, row.2.as_str(), row.3.as_str()))
            .collect::<Vec<_>>(),
        [(1, "SCHEDULED", "FAIL"), (2, "RETRY", "FAIL"), (3, "RETRY", "PASS")]
    );
}

#[test]
fn a_deferred_retry_keeps_the_unresolved_error_until_the_next_interval() {
    let repo = repo();
    let definition = full_scan(&repo, "x");
    let first = repo.start(&definition, at(13, 0), scheduled(false), at(13, 5));
    let blocked = repo.finish(first.run_id, RunStatus::Error, at(13, 6)).coverage.unwrap().state;
    assert_eq!(blocked.coverage.blocking_run_id, Some(first.run_id));

    let second = repo.start(&definition, at(13, 0), retry(at(14, 0)), at(14, 5));
    assert_eq!((second.attempt, second.bounds), (2, Bounds { start: None, end: at(13, 0) }));
    let deferred = repo.finish(second.run_id, RunStatus::Deferred, at(14, 6));
    assert!(deferred.coverage.is_none());
    // The slot state and the watermark still name the unresolved error.
    let slot: (Uuid, i32, String) = {
        let row = repo
            .sql()
            .query_one(
                "SELECT run_id, attempt, status FROM public.dd_run_slot_state WHERE check_id = $1",
                &[&definition.check_id.get()],
            )
            .unwrap();
        (row.get(0), row.get(1), row.get(2))
    };
    assert_eq!(slot, (first.run_id.get(), 1, "ERROR".to_owned()));
    assert_eq!(repo.store.watermark_state(definition.check_id).unwrap(), Some(blocked));
    // Not again in this interval; the next interval retries as attempt 3 with the original cutoff.
    assert!(repo.store.retry_candidates(definition.check_id, at(14, 0), 24).unwrap().is_empty());
    let candidates = repo.store.retry_candidates(definition.check_id, at(15, 0), 24).unwrap();
    assert_eq!(candidates.iter().map(|candidate| candidate.run_id).collect::<Vec<_>>(), [first.run_id]);
    let third = repo.start(&definition, at(13, 0), retry(at(15, 0)), at(15, 5));
    assert_eq!((third.attempt, third.bounds), (3, Bounds { start: None, end: at(13, 0) }));
}

#[test]
fn a_retry_rechecks_the_slots_effective_status_under_the_lock() {
    let repo = repo();
    let definition = repo.import_one(&table("t", "x"), at(0, 0));
    let first = repo.start(&definition, at(13, 0), scheduled(false), at(13, 5));
    repo.finish(first.run_id, RunStatus::Fail, at(13, 6));
    assert_eq!(repo.store.retry_candidates(definition.check_id, at(15, 0), 24).unwrap().len(), 1);
    // Another worker repairs the slot (forced, PASS) before the retry takes the lock…
    let manual = repo.start(&definition, at(13, 0), scheduled(true), at(14, 30));
    repo.finish(manual.run_id, RunStatus::Pass, at(14, 31));
    // … and a later DEFERRED attempt does not hide the effective PASS.
    insert_attempt(&repo, definition.check_id, at(13, 0), 3, "RETRY", "DEFERRED", Some(at(12, 0)), at(14, 40));
    let skip = repo.skip(&definition, at(13, 0), retry(at(15, 0)), at(15, 5));
    assert_eq!(skip.reason, SkipReason::RetryNoLongerEligible);
    assert_eq!(skip.slot_status, Some(RunStatus::Deferred), "the newest attempt's status is reported");
    assert!(repo.store.retry_candidates(definition.check_id, at(15, 0), 24).unwrap().is_empty());
}

#[test]
fn retry_candidates_are_bounded_and_least_recently_attempted_first() {
    let repo = repo();
    let definition = repo.import_one(&table("t", "x"), at(0, 0));
    let check = definition.check_id;
    let day = |n: i64| Utc.with_ymd_and_hms(2026, 7, 1, 0, 0, 0).unwrap() + TimeDelta::hours(n);
    let mut expected = Vec::new();
    // 30 failed slots; the attempt times run backwards, so the oldest slots come last.
    for n in 0..30 {
        let slot = day(n);
        let started = day(200 - n);
        let run = insert_attempt(&repo, check, slot, 1, "SCHEDULED", "FAIL", Some(slot - TimeDelta::hours(1)), started);
        repo.sql()
            .execute(
                "INSERT INTO public.dd_run_slot_state VALUES ($1, $2, $3, 1, $4, $2, 'FAIL')",
                &[&check.get(), &slot, &run.get(), &(slot - TimeDelta::hours(1))],
            )
            .unwrap();
        expected.push((started + TimeDelta::minutes(1), slot, run));
    }
    // Not candidates: a passed slot, a slot with a RUNNING attempt, one attempted too recently.
    let pass = insert_attempt(&repo, check, day(40), 1, "SCHEDULED", "PASS", Some(day(39)), day(41));
    let running_slot = insert_attempt(&repo, check, day(42), 1, "SCHEDULED", "ERROR", Some(day(41)), day(43));
    insert_attempt(&repo, check, day(42), 2, "RETRY", "RUNNING", Some(day(41)), day(44));
    let recent = insert_attempt(&repo, check, day(45), 1, "SCHEDULED", "FAIL", Some(day(44)), day(300));
    for (slot, run, status) in [(day(40), pass, "PASS"), (day(42), running_slot, "ERROR"), (day(45), recent, "FAIL")] {
        repo.sql()
            .execute(
                "INSERT INTO public.dd_run_slot_state VALUES ($1, $2, $3, 1, $4, $2, $5)",
                &[&check.get(), &slot, &run.get(), &(slot - TimeDelta::hours(1)), &status],
            )
            .unwrap();
    }
    expected.sort();
    let candidates = repo.store.retry_candidates(check, day(300), 24).unwrap();
    let got: Vec<(DateTime<Utc>, DateTime<Utc>, RunId)> = candidates
        .iter()
        .map(|candidate| (candidate.last_activity, candidate.scheduled_for, candidate.run_id))
        .collect();
    assert_eq!(got, expected[..24]);
}

#[test]
fn a_remediation_takes_the_next_attempt_links_the_root_and_keeps_the_exact_revision() {
    let repo = repo();
    let definition = repo.import_one(&table("t", "x"), at(0, 0));
    let failed = repo.start(&definition, at(13, 0), scheduled(false), at(13, 5));
    repo.finish(failed.run_id, RunStatus::Fail, at(13, 6));
    // A new revision is imported meanwhile: the remediation still runs revision 1.
    let mut changed = table("t", "x");
    changed.statement_timeout_seconds = 600;
    repo.import_one(&changed, at(13, 30));

    let remediation = repo.store.start_remediation(failed.run_id, "INC-42", at(14, 0)).unwrap();
    assert_eq!(remediation.definition.check_id, definition.check_id);
    assert_eq!((remediation.definition.revision, remediation.definition.is_current), (1, false));
    assert_eq!(remediation.original.status, RunStatus::Fail);
    let first_fix = remediation.attempt;
    assert_eq!(
        (first_fix.attempt, first_fix.trigger, first_fix.bounds, first_fix.rerun_of_run_id),
        (2, TriggerType::Remediation, failed.bounds, Some(failed.run_id))
    );
    let row = repo
        .sql()
        .query_one(
            "SELECT rerun_of_run_id, remediation_reference, started_at, scheduled_for, status \
             FROM public.dd_run_attempts WHERE run_id = $1",
            &[&first_fix.run_id.get()],
        )
        .unwrap();
    assert_eq!(row.get::<_, Option<Uuid>>(0), Some(failed.run_id.get()));
    assert_eq!(row.get::<_, Option<String>>(1).as_deref(), Some("INC-42"));
    assert_eq!((row.get::<_, DateTime<Utc>>(2), row.get::<_, DateTime<Utc>>(3)), (at(14, 0), at(13, 0)));
    assert_eq!(row.get::<_, String>(4), "RUNNING");

    // Remediating the failed remediation links the root, never the remediation.
    repo.finish(first_fix.run_id, RunStatus::Fail, at(14, 1));
    let second_fix = repo.store.start_remediation(first_fix.run_id, "INC-43", at(14, 10)).unwrap().attempt;
    assert_eq!((second_fix.attempt, second_fix.rerun_of_run_id), (3, Some(failed.run_id)));
    // Remediations do not count for the latest scheduled slot (any other trigger does).
    repo.finish(second_fix.run_id, RunStatus::Pass, at(14, 11));
    insert_attempt(&repo, definition.check_id, at(18, 0), 1, "REMEDIATION", "PASS", Some(at(17, 0)), at(18, 5));
    assert_eq!(repo.store.latest_scheduled_for(definition.check_id).unwrap(), Some(at(13, 0)));
    insert_attempt(&repo, definition.check_id, at(16, 0), 1, "RETRY", "DEFERRED", None, at(16, 5));
    assert_eq!(repo.store.latest_scheduled_for(definition.check_id).unwrap(), Some(at(16, 0)));
}

#[test]
fn remediation_bounds_follow_a_later_resolved_start_or_keep_the_original_boundary() {
    let repo = repo();
    let definition = full_scan(&repo, "x");
    // Unresolved ERROR, then a forced run that resolved its start and failed.
    let unresolved = repo.start(&definition, at(13, 0), scheduled(false), at(13, 5));
    repo.finish(unresolved.run_id, RunStatus::Error, at(13, 6));
    let forced = repo.start(&definition, at(13, 0), scheduled(true), at(13, 10));
    repo.store.resolve_historical_start(forced.run_id, at(9, 0)).unwrap();
    repo.finish(forced.run_id, RunStatus::Fail, at(13, 11));
    let fix = repo.store.start_remediation(unresolved.run_id, "fix", at(14, 0)).unwrap().attempt;
    assert_eq!((fix.attempt, fix.bounds), (3, Bounds { start: Some(at(9, 0)), end: at(13, 0) }));

    // An unresolved original alone stays unresolved (rediscovered with the original cutoff).
    let other = full_scan(&repo, "y");
    let alone = repo.start(&other, at(13, 0), scheduled(false), at(13, 5));
    repo.finish(alone.run_id, RunStatus::Error, at(13, 6));
    let fix = repo.store.start_remediation(alone.run_id, "fix", at(14, 0)).unwrap().attempt;
    assert_eq!(fix.bounds, Bounds { start: None, end: at(13, 0) });

    // Year one is a real boundary.
    let year_one = Utc.with_ymd_and_hms(1, 1, 1, 0, 0, 0).unwrap();
    let third = full_scan(&repo, "z");
    let original = repo.start(&third, at(13, 0), scheduled(false), at(13, 5));
    repo.store.resolve_historical_start(original.run_id, year_one).unwrap();
    repo.finish(original.run_id, RunStatus::Fail, at(13, 6));
    let fix = repo.store.start_remediation(original.run_id, "fix", at(14, 0)).unwrap().attempt;
    assert_eq!(fix.bounds, Bounds { start: Some(year_one), end: at(13, 0) });
    let stored: Option<DateTime<Utc>> = repo
        .sql()
        .query_one("SELECT window_start FROM public.dd_run_attempts WHERE run_id = $1", &[&fix.run_id.get()])
        .unwrap()
        .get(0);
    assert_eq!(stored, Some(year_one));
}

#[test]
fn remediation_refusals_write_nothing() {
    let repo = repo();
    let definition = repo.import_one(&table("t", "x"), at(0, 0));
    let unknown = RunId::new(Uuid::from_u128(42));
    let error = repo.store.start_remediation(unknown, "ref", at(14, 0)).unwrap_err();
    assert!(matches!(error, Error::UnknownRun(run) if run == unknown) && error.is_invalid_rerun());

    let passed = repo.start(&definition, at(13, 0), scheduled(false), at(13, 5));
    repo.finish(passed.run_id, RunStatus::Pass, at(13, 6));
    let error = repo.store.start_remediation(passed.run_id, "ref", at(14, 0)).unwrap_err();
    assert_eq!(
        error.to_string(),
        format!("Only failed or errored runs can be remediated; run '{}' is PASS", passed.run_id)
    );
    assert!(error.is_invalid_rerun());

    let failed = repo.start(&definition, at(14, 0), scheduled(false), at(14, 5));
    repo.finish(failed.run_id, RunStatus::Fail, at(14, 6));
    let error = repo.store.start_remediation(failed.run_id, "", at(15, 0)).unwrap_err();
    assert!(matches!(error, Error::Remediation(RemediationRefusal::MissingReference)));
    // A RUNNING attempt in the slot (a retry) blocks the remediation.
    repo.start(&definition, at(14, 0), retry(at(15, 0)), at(15, 1));
    let error = repo.store.start_remediation(failed.run_id, "ref", at(15, 2)).unwrap_err();
    assert_eq!(error.to_string(), "A data-diff attempt for this window is already running");
    assert!(!error.is_invalid_rerun());
    assert_eq!(repo.count("SELECT * FROM public.dd_run_attempts WHERE trigger_type = 'REMEDIATION'"), 0);
}

#[test]
fn starts_and_remediations_wait_for_the_checks_lock() {
    let repo = repo();
    let definition = repo.import_one(&table("t", "x"), at(0, 0));
    let failed = repo.start(&definition, at(12, 0), scheduled(false), at(12, 5));
    repo.finish(failed.run_id, RunStatus::Fail, at(12, 6));
    let key = AdvisoryLock::Check(definition.check_id).key();
    assert_eq!(key, definition.check_id.to_string());

    let mut holder = repo.sql();
    let mut tx = holder.transaction().unwrap();
    tx.execute("SELECT pg_advisory_xact_lock(hashtext($1))", &[&key]).unwrap();
    std::thread::scope(|scope| {
        let start = scope.spawn(|| repo.store.start_attempt(&definition, at(13, 0), scheduled(false), at(13, 5)));
        let remediation = scope.spawn(|| repo.store.start_remediation(failed.run_id, "ref", at(13, 5)));
        wait_for_lock_waiters(&mut repo.sql(), &key, 2);
        assert_eq!(repo.attempt_rows(definition.check_id).len(), 1, "both wait before reading or writing");
        tx.commit().unwrap();
        start.join().unwrap().unwrap();
        remediation.join().unwrap().unwrap();
    });
    assert_eq!(repo.attempt_rows(definition.check_id).len(), 3);
}
