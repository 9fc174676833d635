//! Scheduler ticks driven by `now` values (runs note §1–§3, §7): slots and boundaries,
//! catch-up order and its cap, skips, force, retries, the stale sweep, lease loss, and one
//! failing check not stopping the others — asserted on the backend's rows.

use std::num::NonZeroUsize;

use chrono::{DateTime, TimeZone, Utc};
use datadiff_backend_store::{DefinitionFilter, StartOutcome, SyncScope};
use datadiff_diff_core::{
    attempt::{Bounds, RunStatus, StartKind, TriggerType},
    definition::{CheckDefinition, CheckType, TargetType},
};
use datadiff_runner::{Clock, RunSummary, Selection, SummaryStatus, TickContext, TickReport, tick};

use crate::context::{Context, at};

/// A tick context on `context`'s backend and connections (a store of its own).
pub(crate) fn ticker(context: &Context) -> TickContext {
    let store = datadiff_runner::open_backend(context.backend_config.clone()).unwrap();
    TickContext::new(store, context.connections.clone())
}

/// One tick at `now`, recorded times at `now` too (`--at now`).
pub(crate) fn tick_at(ticker: &mut TickContext, now: DateTime<Utc>) -> TickReport {
    ticker.set_clock(Clock::at(now));
    tick(ticker).unwrap()
}

/// `(status, slot, trigger, attempt)` of each summary.
type Line = (SummaryStatus, Option<DateTime<Utc>>, Option<TriggerType>, Option<i32>);

pub(crate) fn lines(report: &TickReport) -> Vec<Line> {
    report.summaries.iter().map(|s| (s.status, s.scheduled_for, s.trigger, s.attempt)).collect()
}

fn day(day: u32, hour: u32, minute: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 7, day, hour, minute, 0).unwrap()
}

/// `(slot, attempt, trigger, status)` of every attempt of the check, by slot and attempt.
pub(crate) fn attempts(context: &Context, check: &str) -> Vec<(DateTime<Utc>, i32, String, String)> {
    context
        .backend_sql()
        .query(
            "SELECT a.scheduled_for, a.attempt, a.trigger_type, a.status FROM public.dd_run_attempts a \
               JOIN public.dd_check_definitions d USING (check_id) WHERE d.full_check_name = $1 \
              ORDER BY a.scheduled_for, a.attempt",
            &[&check],
        )
        .unwrap()
        .iter()
        .map(|row| (row.get(0), row.get(1), row.get(2), row.get(3)))
        .collect()
}

fn drift(context: &Context) {
    context
        .replica
        .client()
        .unwrap()
        .batch_execute("UPDATE payments_public.transfers SET status = 'x' WHERE id = 3")
        .unwrap();
}

fn repair(context: &Context) {
    context
        .replica
        .client()
        .unwrap()
        .batch_execute("UPDATE payments_public.transfers SET status = 'paid' WHERE id = 3")
        .unwrap();
}

/// `(verified_status, verified_start, verified_end, blocking_run_id)`.
type Coverage = (String, Option<DateTime<Utc>>, Option<DateTime<Utc>>, Option<uuid::Uuid>);

/// The [`Coverage`] of a check.
fn coverage(context: &Context, summary: &RunSummary) -> Coverage {
    let row = context
        .backend_sql()
        .query_one(
            "SELECT verified_status, verified_start, verified_end, blocking_run_id FROM public.dd_watermark_state \
             WHERE check_id = $1",
            &[&summary.check.check_id.get()],
        )
        .unwrap();
    (row.get(0), row.get(1), row.get(2), row.get(3))
}

/// One time source per tick: without `--at` the tick reads the system clock once when it
/// begins, and there is no other `now` to give it.
#[test]
fn a_tick_takes_its_now_from_its_contexts_clock() {
    let context = Context::pipelinewise();
    let ticker = ticker(&context).with_selection(Selection::tap("postgres", "nothing-here"));
    assert_eq!(ticker.clock(), Clock::System);
    let before = Utc::now();
    let report = tick(&ticker).unwrap();
    let after = Utc::now();
    assert!(before <= report.now && report.now <= after, "{before} <= {} <= {after}", report.now);

    let ticker = ticker.with_clock(Clock::at(at(9, 15)));
    assert_eq!(tick(&ticker).unwrap().now, at(9, 15));
}

#[test]
fn the_first_tick_runs_the_current_slot_and_the_next_one_skips_it() {
    let context = Context::pipelinewise();
    let definition = context.definition();
    context.import(&definition);
    let mut ticker = ticker(&context);
    // 13:47:59 → slot 13:00, window [12:00, 13:00).
    let now = at(13, 47) + chrono::TimeDelta::seconds(59);
    let first = tick_at(&mut ticker, now);
    assert_eq!(first.now, now, "the tick's now is its clock's");
    assert_eq!(lines(&first), [(SummaryStatus::Pass, Some(at(13, 0)), Some(TriggerType::Scheduled), Some(1))]);
    let summary = &first.summaries[0];
    assert_eq!(summary.bounds, Some(Bounds { start: Some(at(12, 0)), end: at(13, 0) }));
    let row = context.attempt_row(summary.run_id.unwrap());
    assert_eq!((row.status.as_str(), row.window_start, row.window_end), ("PASS", Some(at(12, 0)), at(13, 0)));
    assert_eq!((row.started_at, row.finished_at), (now, Some(now)), "--at replaces every recorded time");

    // Exactly at 14:00 the slot is still 13:00 (strictly before): already attempted.
    let second = tick_at(&mut ticker, at(14, 0));
    let skip = &second.summaries[0];
    assert_eq!(lines(&second), [(SummaryStatus::Skipped, Some(at(13, 0)), None, None)]);
    assert_eq!(skip.reason.as_deref(), Some("This cron slot has already been attempted"));
    assert_eq!((skip.slot_status, skip.run_id), (Some(RunStatus::Pass), summary.run_id));
    assert_eq!(attempts(&context, &definition.full_check_name).len(), 1, "a skip writes nothing");
    assert!(!second.has_failures());
}

#[test]
fn missed_slots_are_backfilled_oldest_first_and_at_most_24_per_tick() {
    let context = Context::pipelinewise();
    let mut definition = context.definition();
    definition.checks = vec![CheckType::RowCount];
    context.import(&definition);
    let mut ticker = ticker(&context);
    assert_eq!(lines(&tick_at(&mut ticker, day(22, 10, 5)))[0].1, Some(day(22, 10, 0)));
    // Latest 10:00, now 13:15: 11:00, 12:00, 13:00 in order.
    let slots: Vec<_> = lines(&tick_at(&mut ticker, day(22, 13, 15))).iter().map(|line| (line.0, line.1)).collect();
    assert_eq!(
        slots,
        [11, 12, 13].map(|hour| (SummaryStatus::Pass, Some(day(22, hour, 0)))),
        "oldest unobserved slot first"
    );
    // 30 missed slots: the 24 oldest now, the 6 newest (current included) next time.
    let report = tick_at(&mut ticker, day(23, 19, 5));
    let expected: Vec<_> = (1..=24).map(|n| Some(day(22, 13, 0) + chrono::TimeDelta::hours(n))).collect();
    assert_eq!(report.summaries.iter().map(|s| s.scheduled_for).collect::<Vec<_>>(), expected);
    let report = tick_at(&mut ticker, day(23, 19, 5));
    let expected: Vec<_> = (25..=30).map(|n| Some(day(22, 13, 0) + chrono::TimeDelta::hours(n))).collect();
    assert_eq!(report.summaries.iter().map(|s| s.scheduled_for).collect::<Vec<_>>(), expected);
    assert!(report.summaries.iter().all(|s| s.trigger == Some(TriggerType::Scheduled)));
    assert_eq!(attempts(&context, &definition.full_check_name).len(), 1 + 3 + 30);
}

#[test]
fn force_reruns_a_due_slot_as_manual_with_the_newest_bounds() {
    let context = Context::pipelinewise();
    let mut definition = context.definition();
    definition.initial_full_scan = true;
    context.import(&definition);
    let mut ticker = ticker(&context);
    let first = tick_at(&mut ticker, at(13, 5));
    let start = DateTime::parse_from_rfc3339("2026-07-22T11:59:59.999999Z").unwrap().to_utc();
    assert_eq!(first.summaries[0].bounds, Some(Bounds { start: Some(start), end: at(13, 0) }), "historical start");
    let mut forced = ticker.with_force(true);
    let report = tick_at(&mut forced, at(13, 30));
    assert_eq!(lines(&report), [(SummaryStatus::Pass, Some(at(13, 0)), Some(TriggerType::Manual), Some(2))]);
    assert_eq!(report.summaries[0].bounds, first.summaries[0].bounds, "the recorded bounds, not a fresh window");
    // A never-attempted slot with force: MANUAL attempt 1 with its rolling window.
    let report = tick_at(&mut forced, at(14, 5));
    assert_eq!(lines(&report), [(SummaryStatus::Pass, Some(at(14, 0)), Some(TriggerType::Manual), Some(1))]);
    assert_eq!(report.summaries[0].bounds, Some(Bounds { start: Some(at(13, 0)), end: at(14, 0) }));
    let rows = attempts(&context, &definition.full_check_name);
    let triggers: Vec<_> = rows.iter().map(|row| (row.1, row.2.as_str())).collect();
    assert_eq!(triggers, [(1, "SCHEDULED"), (2, "MANUAL"), (1, "MANUAL")]);
}

#[test]
fn a_failed_slot_is_retried_once_per_cron_interval_before_the_new_slot() {
    let context = Context::pipelinewise();
    let definition = context.definition();
    context.import(&definition);
    drift(&context);
    let mut ticker = ticker(&context);
    let failed = tick_at(&mut ticker, at(13, 5));
    assert_eq!(lines(&failed), [(SummaryStatus::Fail, Some(at(13, 0)), Some(TriggerType::Scheduled), Some(1))]);
    assert!(failed.has_failures());
    // Same interval: the current slot's own failure is not retried.
    assert_eq!(lines(&tick_at(&mut ticker, at(13, 40))), [(SummaryStatus::Skipped, Some(at(13, 0)), None, None)]);
    // Next interval: the retry first (original bounds), then the new slot.
    let next = tick_at(&mut ticker, at(14, 5));
    assert_eq!(
        lines(&next),
        [
            (SummaryStatus::Fail, Some(at(13, 0)), Some(TriggerType::Retry), Some(2)),
            (SummaryStatus::Pass, Some(at(14, 0)), Some(TriggerType::Scheduled), Some(1)),
        ]
    );
    assert_eq!(next.summaries[0].bounds, Some(Bounds { start: Some(at(12, 0)), end: at(13, 0) }));
    let retry = context.attempt_row(next.summaries[0].run_id.unwrap());
    assert_eq!((retry.trigger.as_str(), retry.attempt), ("RETRY", 2));
    // Once per interval: not again before 15:00.
    assert_eq!(lines(&tick_at(&mut ticker, at(14, 50))), [(SummaryStatus::Skipped, Some(at(14, 0)), None, None)]);
    repair(&context);
    let repaired = tick_at(&mut ticker, at(15, 5));
    assert_eq!(
        lines(&repaired),
        [
            (SummaryStatus::Pass, Some(at(13, 0)), Some(TriggerType::Retry), Some(3)),
            (SummaryStatus::Pass, Some(at(15, 0)), Some(TriggerType::Scheduled), Some(1)),
        ]
    );
    assert_eq!(
        coverage(&context, &repaired.summaries[0]),
        ("CONTIGUOUS".into(), Some(at(12, 0)), Some(at(15, 0)), None)
    );
    // No rerun link on automatic retries.
    let links: i64 = context
        .backend_sql()
        .query_one("SELECT count(*) FROM public.dd_run_attempts WHERE rerun_of_run_id IS NOT NULL", &[])
        .unwrap()
        .get(0);
    assert_eq!(links, 0);
}

#[test]
fn a_deferred_retry_keeps_the_unresolved_blocker_until_a_later_interval() {
    // History on the source only: the historical first run is an ERROR without a start.
    let context = Context::new(
        crate::context::SOURCE_SQL,
        &format!("{} DELETE FROM payments_public.transfers;", crate::context::REPLICA_SQL),
    );
    let mut definition = context.definition();
    definition.initial_full_scan = true;
    context.import(&definition);
    let mut ticker = ticker(&context);
    let first = tick_at(&mut ticker, at(13, 5));
    assert_eq!(first.summaries[0].status, SummaryStatus::Error);
    let blocker = first.summaries[0].run_id.unwrap();
    assert_eq!(coverage(&context, &first.summaries[0]), ("BLOCKED".into(), None, None, Some(blocker.get())));
    // Now neither side has history before the original cutoff: the retry is DEFERRED.
    context.source.client().unwrap().batch_execute("DELETE FROM public.\"Transfers\"").unwrap();
    let next = tick_at(&mut ticker, at(14, 5));
    assert_eq!(
        lines(&next),
        [
            (SummaryStatus::Deferred, Some(at(13, 0)), Some(TriggerType::Retry), Some(2)),
            (SummaryStatus::Pass, Some(at(14, 0)), Some(TriggerType::Scheduled), Some(1)),
        ]
    );
    assert_eq!(next.summaries[0].bounds, Some(Bounds { start: None, end: at(13, 0) }), "original cutoff");
    assert_eq!(context.slot_state(blocker), Some(("ERROR".into(), None, at(13, 0))), "slot state unchanged");
    assert_eq!(coverage(&context, &next.summaries[1]).3, Some(blocker.get()), "the blocker stays");
    // Eligible again in the next interval (a DEFERRED attempt does not resolve it).
    let later = tick_at(&mut ticker, at(15, 5));
    assert_eq!(lines(&later)[0], (SummaryStatus::Deferred, Some(at(13, 0)), Some(TriggerType::Retry), Some(3)));
}

#[test]
fn stale_attempts_are_swept_before_scheduling_and_then_retried() {
    let context = Context::pipelinewise();
    let definition = context.definition();
    let stored = context.import(&definition);
    // A worker started the 13:00 slot at 13:05 and died.
    let StartOutcome::Started(dead) =
        context.store.start_attempt(&stored, at(13, 0), StartKind::Scheduled { force: false }, at(13, 5)).unwrap()
    else {
        panic!("not started")
    };
    let mut ticker = ticker(&context);
    // 60 s timeout → stale after 34 minutes: not yet at 13:38.
    let running = tick_at(&mut ticker, at(13, 38));
    assert_eq!(running.summaries[0].reason.as_deref(), Some("An attempt for this cron slot is already running"));
    assert_eq!(running.summaries[0].slot_status, Some(RunStatus::Running));
    assert!(running.swept.is_empty());
    // At 13:39 it is swept first; the slot is then attempted (ERROR), not retried in its own interval.
    let swept = tick_at(&mut ticker, at(13, 39));
    assert_eq!(swept.swept.iter().map(|s| s.attempt.run_id).collect::<Vec<_>>(), [dead.run_id]);
    assert_eq!(swept.summaries[0].reason.as_deref(), Some("This cron slot has already been attempted"));
    assert_eq!(swept.summaries[0].slot_status, Some(RunStatus::Error));
    let row = context.attempt_row(dead.run_id);
    assert_eq!(row.error.as_deref(), Some("Scheduler lease expired before the worker completed"));
    assert_eq!((row.status.as_str(), row.finished_at), ("ERROR", Some(at(13, 39))));
    let next = tick_at(&mut ticker, at(14, 5));
    assert_eq!(
        lines(&next),
        [
            (SummaryStatus::Pass, Some(at(13, 0)), Some(TriggerType::Retry), Some(2)),
            (SummaryStatus::Pass, Some(at(14, 0)), Some(TriggerType::Scheduled), Some(1)),
        ]
    );
}

#[test]
fn stale_attempts_of_superseded_revisions_are_swept_too() {
    let context = Context::pipelinewise();
    let definition = context.definition();
    let first = context.import(&definition);
    let StartOutcome::Started(dead) =
        context.store.start_attempt(&first, at(13, 0), StartKind::Scheduled { force: false }, at(13, 5)).unwrap()
    else {
        panic!("not started")
    };
    let mut changed = definition.clone();
    changed.statement_timeout_seconds = 120;
    context.store.sync_definitions(&[changed], &SyncScope::all(), at(13, 10)).unwrap();
    let mut ticker = ticker(&context);
    let report = tick_at(&mut ticker, at(14, 5));
    assert_eq!(report.swept.iter().map(|s| s.attempt.run_id).collect::<Vec<_>>(), [dead.run_id]);
    assert_eq!(context.attempt_row(dead.run_id).status, "ERROR");
    // The new revision has its own first slot.
    assert_eq!(lines(&report), [(SummaryStatus::Pass, Some(at(14, 0)), Some(TriggerType::Scheduled), Some(1))]);
    assert_ne!(report.summaries[0].check.check_id, first.check_id);
}

#[test]
fn a_worker_that_lost_its_lease_discards_its_late_results() {
    let context = Context::pipelinewise();
    let definition = context.definition();
    let stored = context.import(&definition);
    let mut lock = context.source.client().unwrap();
    let mut transaction = lock.transaction().unwrap();
    transaction.batch_execute("LOCK TABLE public.\"Transfers\" IN ACCESS EXCLUSIVE MODE").unwrap();
    let mut ticker = ticker(&context);
    ticker.set_clock(Clock::at(at(13, 5)));
    let report = std::thread::scope(|scope| {
        let worker = scope.spawn(|| tick(&ticker).unwrap());
        crate::tick_processes::wait_for_blocked_query(&context);
        // Another worker's sweep expires the attempt meanwhile.
        let swept = context.store.sweep_stale(&stored, at(23, 0)).unwrap();
        assert_eq!(swept.len(), 1);
        transaction.rollback().unwrap();
        worker.join().unwrap()
    });
    let summary = &report.summaries[0];
    let run_id = summary.run_id.unwrap();
    assert_eq!((summary.status, summary.slot_status), (SummaryStatus::Skipped, Some(RunStatus::Error)));
    assert_eq!(
        summary.reason.as_deref(),
        Some(
            format!(
                "Run {run_id} is no longer RUNNING (status: ERROR); its lease expired or it was already completed. \
                 Late results were discarded."
            )
            .as_str()
        )
    );
    let row = context.attempt_row(run_id);
    assert_eq!(row.error.as_deref(), Some("Scheduler lease expired before the worker completed"));
    assert!(context.result_rows(run_id).is_empty(), "late results are not written");
}

/// A definition of the fixtures' tables under another name (its own tables, copies).
fn copy(context: &Context, table: &str) -> CheckDefinition {
    context
        .source
        .client()
        .unwrap()
        .batch_execute(&format!("CREATE TABLE public.\"{table}\" AS TABLE public.\"Transfers\""))
        .unwrap();
    let lower = table.to_lowercase();
    context
        .replica
        .client()
        .unwrap()
        .batch_execute(&format!("CREATE TABLE payments_public.{lower} AS TABLE payments_public.transfers"))
        .unwrap();
    let mut definition = context.definition();
    definition.source_table = table.into();
    definition.target_table = lower;
    definition.full_check_name = CheckDefinition::full_check_name_of("postgres", "payments", "public", table);
    definition
}

#[test]
fn one_failing_check_does_not_stop_the_others() {
    let context = Context::pipelinewise();
    let good = context.definition();
    let mut unschedulable = copy(&context, "A_never");
    unschedulable.frequency = "0 0 30 2 *".into();
    let mut missing = context.definition();
    missing.source_table = "Missing".into();
    missing.full_check_name = CheckDefinition::full_check_name_of("postgres", "payments", "public", "Missing");
    let repository = copy(&context, "Z_repository");
    context
        .store
        .sync_definitions(
            &[good.clone(), unschedulable.clone(), missing.clone(), repository.clone()],
            &SyncScope::all(),
            at(0, 0),
        )
        .unwrap();
    // The backend refuses to start attempts of one check (a repository failure).
    context
        .backend_sql()
        .batch_execute(&format!(
            "CREATE FUNCTION public.refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN \
               IF NEW.check_id IN (SELECT check_id FROM public.dd_check_definitions WHERE full_check_name = '{}') \
               THEN RAISE EXCEPTION 'refused by test'; END IF; RETURN NEW; END $$; \
             CREATE TRIGGER refuse BEFORE INSERT ON public.dd_run_attempts FOR EACH ROW \
               EXECUTE FUNCTION public.refuse()",
            repository.full_check_name
        ))
        .unwrap();
    let mut ticker = ticker(&context);
    let report = tick_at(&mut ticker, at(13, 5));
    let by_name: Vec<_> = report
        .summaries
        .iter()
        .map(|s| (s.check.full_check_name.as_str(), s.status, s.scheduled_for, s.bounds.is_some()))
        .collect();
    assert_eq!(
        by_name,
        [
            ("postgres/payments/public/A_never", SummaryStatus::Error, None, false),
            ("postgres/payments/public/Missing", SummaryStatus::Error, Some(at(13, 0)), true),
            ("postgres/payments/public/Transfers", SummaryStatus::Pass, Some(at(13, 0)), true),
            ("postgres/payments/public/Z_repository", SummaryStatus::Error, None, false),
        ]
    );
    assert!(report.summaries[0].reason.as_deref().unwrap().contains("0 0 30 2 *"), "{:?}", report.summaries[0].reason);
    assert!(
        report.summaries[3].reason.as_deref().unwrap().contains("refused by test"),
        "{:?}",
        report.summaries[3].reason
    );
    assert_eq!(report.summaries[3].run_id, None);
    assert!(attempts(&context, &repository.full_check_name).is_empty());
    assert!(attempts(&context, &unschedulable.full_check_name).is_empty());
}

#[test]
fn jobs_work_on_definitions_in_parallel_and_report_in_definition_order() {
    let context = Context::pipelinewise();
    let definitions: Vec<_> = ["T4", "T1", "T3", "T2", "T5"].iter().map(|table| copy(&context, table)).collect();
    context.store.sync_definitions(&definitions, &SyncScope::all(), at(0, 0)).unwrap();
    let ticker = ticker(&context).with_jobs(NonZeroUsize::new(3).unwrap());
    let mut ticker = ticker;
    let report = tick_at(&mut ticker, at(13, 5));
    let names: Vec<_> = report.summaries.iter().map(|s| (s.check.full_check_name.clone(), s.status)).collect();
    let expected: Vec<_> = ["T1", "T2", "T3", "T4", "T5"]
        .iter()
        .map(|table| (format!("postgres/payments/public/{table}"), SummaryStatus::Pass))
        .collect();
    assert_eq!(names, expected);
    for definition in &definitions {
        assert_eq!(attempts(&context, &definition.full_check_name).len(), 1);
    }
    // More jobs than backend connections is refused before anything runs.
    let too_many = self::ticker(&context).with_jobs(NonZeroUsize::new(64).unwrap());
    let error = tick(&too_many.with_clock(Clock::at(at(14, 5)))).unwrap_err();
    assert!(matches!(error, datadiff_runner::Error::PoolTooSmall { jobs: 64, .. }), "{error}");
}

#[test]
fn unsupported_routes_are_skipped_without_an_attempt_and_selection_narrows_the_tick() {
    let context = Context::pipelinewise();
    let good = context.definition();
    let mut snowflake = context.definition();
    snowflake.target_id = "snowflake".into();
    snowflake.target_type = TargetType::TargetSnowflake;
    snowflake.full_check_name = CheckDefinition::full_check_name_of("snowflake", "payments", "public", "Transfers");
    context.store.sync_definitions(&[good.clone(), snowflake.clone()], &SyncScope::all(), at(0, 0)).unwrap();
    let mut ticker = ticker(&context).with_selection(Selection::all().check(snowflake.full_check_name.clone()));
    let report = tick_at(&mut ticker, at(13, 5));
    assert_eq!(report.summaries.len(), 1);
    let skipped = &report.summaries[0];
    assert_eq!((skipped.status, skipped.scheduled_for), (SummaryStatus::Skipped, Some(at(13, 0))));
    assert_eq!(
        skipped.reason.as_deref(),
        Some("route not supported by datadiff yet: tap-postgres -> target-snowflake")
    );
    assert!(attempts(&context, &snowflake.full_check_name).is_empty());
    assert!(attempts(&context, &good.full_check_name).is_empty(), "not selected");

    // By check id; by target and tap.
    let filter = DefinitionFilter { check: Some(good.full_check_name.clone()), ..DefinitionFilter::default() };
    let id = context.store.definitions(&filter).unwrap()[0].check_id.to_string();
    let mut ticker = self::ticker(&context).with_selection(Selection::all().check(id));
    let names: Vec<_> =
        tick_at(&mut ticker, at(13, 5)).summaries.iter().map(|s| s.check.full_check_name.clone()).collect();
    assert_eq!(names, std::slice::from_ref(&good.full_check_name));
    let mut ticker = self::ticker(&context).with_selection(Selection::tap("postgres", "other"));
    assert!(tick_at(&mut ticker, at(13, 5)).summaries.is_empty());
    let mut ticker = self::ticker(&context).with_selection(Selection::target("snowflake"));
    assert_eq!(tick_at(&mut ticker, at(13, 5)).summaries.len(), 1);
}

#[test]
fn ticks_in_several_threads_never_duplicate_an_attempt() {
    let context = Context::pipelinewise();
    let definitions: Vec<_> = ["C1", "C2", "C3"].iter().map(|table| copy(&context, table)).collect();
    context.store.sync_definitions(&definitions, &SyncScope::all(), at(0, 0)).unwrap();
    let tickers: Vec<TickContext> = (0..4)
        .map(|_| ticker(&context).with_jobs(NonZeroUsize::new(2).unwrap()).with_clock(Clock::at(at(13, 5))))
        .collect();
    let barrier = std::sync::Barrier::new(tickers.len());
    let reports: Vec<TickReport> = std::thread::scope(|scope| {
        let handles: Vec<_> = tickers
            .iter()
            .map(|ticker| {
                let barrier = &barrier;
                scope.spawn(move || {
                    barrier.wait();
                    tick(ticker).unwrap()
                })
            })
            .collect();
        handles.into_iter().map(|handle| handle.join().unwrap()).collect()
    });
    let passes = reports.iter().flat_map(|r| &r.summaries).filter(|s| s.status == SummaryStatus::Pass).count();
    let skips = reports.iter().flat_map(|r| &r.summaries).filter(|s| s.status == SummaryStatus::Skipped).count();
    assert_eq!((passes, skips), (3, 9), "one attempt per slot, every other tick skips it");
    for definition in &definitions {
        assert_eq!(attempts(&context, &definition.full_check_name).len(), 1);
    }
    let versions: Vec<i64> = context
        .backend_sql()
        .query("SELECT state_version FROM public.dd_watermark_state", &[])
        .unwrap()
        .iter()
        .map(|row| row.get(0))
        .collect();
    assert_eq!(versions, [1, 1, 1], "one coverage transition per definition");
}
