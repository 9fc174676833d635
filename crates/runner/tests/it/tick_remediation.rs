//! Remediation through the runner (runs note §2.2): the exact failed revision and window, the
//! root link and reference, coverage repaired, and upstream's refusals.

use datadiff_backend_store::{StartOutcome, SyncScope};
use datadiff_diff_core::attempt::{Bounds, RunStatus, StartKind, TriggerType};
use datadiff_runner::{Clock, SummaryStatus, remediate};

use crate::context::{Context, at};
use crate::tick::{tick_at, ticker};

fn watermark(
    context: &Context,
    check_id: uuid::Uuid,
) -> (String, Option<chrono::DateTime<chrono::Utc>>, i64, Vec<String>) {
    let mut sql = context.backend_sql();
    let state = sql
        .query_one(
            "SELECT verified_status, verified_end, state_version FROM public.dd_watermark_state WHERE check_id = $1",
            &[&check_id],
        )
        .unwrap();
    let events = sql
        .query(
            "SELECT event_type FROM public.dd_watermark_events WHERE check_id = $1 ORDER BY recorded_at",
            &[&check_id],
        )
        .unwrap()
        .iter()
        .map(|row| row.get(0))
        .collect();
    (state.get(0), state.get(1), state.get(2), events)
}

#[test]
fn a_remediation_reruns_the_exact_failed_revision_and_repairs_coverage() {
    let context = Context::pipelinewise();
    let definition = context.definition();
    context.import(&definition);
    context
        .replica
        .client()
        .unwrap()
        .batch_execute("UPDATE payments_public.transfers SET status = 'x' WHERE id = 3")
        .unwrap();
    let mut ticker = ticker(&context);
    let failed = tick_at(&mut ticker, at(13, 5)).summaries.remove(0);
    assert_eq!(failed.status, SummaryStatus::Fail);
    let failed_run = failed.run_id.unwrap();
    // The definition changes meanwhile: the remediation still runs the failed revision.
    let mut changed = definition.clone();
    changed.statement_timeout_seconds = 300;
    context.store.sync_definitions(&[changed], &SyncScope::all(), at(13, 20)).unwrap();
    context
        .replica
        .client()
        .unwrap()
        .batch_execute("UPDATE payments_public.transfers SET status = 'paid' WHERE id = 3")
        .unwrap();

    ticker.set_clock(Clock::at(at(13, 30)));
    let report = remediate(&ticker, failed_run, "INC-42").unwrap();
    let summary = &report.summary;
    assert_eq!(report.original.as_ref().map(|original| original.run_id), Some(failed_run));
    assert_eq!(
        (summary.status, summary.trigger, summary.attempt),
        (SummaryStatus::Pass, Some(TriggerType::Remediation), Some(2))
    );
    assert_eq!(summary.check.check_id, failed.check.check_id, "the failed revision, not the current one");
    assert_eq!((summary.rerun_of_run_id, summary.remediation_reference.as_deref()), (Some(failed_run), Some("INC-42")));
    assert_eq!(summary.bounds, Some(Bounds { start: Some(at(12, 0)), end: at(13, 0) }));
    let row = context.attempt_row(summary.run_id.unwrap());
    assert_eq!((row.trigger.as_str(), row.attempt, row.status.as_str()), ("REMEDIATION", 2, "PASS"));
    assert_eq!(row.started_at, at(13, 30));
    let link: (Option<uuid::Uuid>, Option<String>) = context
        .backend_sql()
        .query_one(
            "SELECT rerun_of_run_id, remediation_reference FROM public.dd_run_attempts WHERE run_id = $1",
            &[&summary.run_id.unwrap().get()],
        )
        .map(|row| (row.get(0), row.get(1)))
        .unwrap();
    assert_eq!(link, (Some(failed_run.get()), Some("INC-42".to_owned())));
    assert_eq!(
        watermark(&context, failed.check.check_id.get()),
        ("CONTIGUOUS".into(), Some(at(13, 0)), 2, vec!["INITIALIZE".to_owned(), "ADVANCE".to_owned()])
    );

    // A passing run cannot be remediated (exit 2 for the CLI), with upstream's message.
    let error = remediate(&ticker, summary.run_id.unwrap(), "INC-43").unwrap_err();
    assert!(error.is_invalid_rerun(), "{error}");
    let text = crate::tick_remediation::chain(&error);
    assert!(
        text.contains(&format!(
            "Only failed or errored runs can be remediated; run '{}' is PASS",
            summary.run_id.unwrap()
        )),
        "{text}"
    );
}

#[test]
fn a_remediation_is_refused_while_its_slot_runs_and_for_unknown_runs() {
    let context = Context::pipelinewise();
    let definition = context.definition();
    let stored = context.import(&definition);
    context
        .replica
        .client()
        .unwrap()
        .batch_execute("UPDATE payments_public.transfers SET status = 'x' WHERE id = 3")
        .unwrap();
    let mut ticker = ticker(&context);
    let failed = tick_at(&mut ticker, at(13, 5)).summaries.remove(0);
    let StartOutcome::Started(running) =
        context.store.start_attempt(&stored, at(13, 0), StartKind::Scheduled { force: true }, at(13, 10)).unwrap()
    else {
        panic!("not started")
    };
    assert_eq!(running.status, RunStatus::Running);
    let error = remediate(&ticker, failed.run_id.unwrap(), "INC-1").unwrap_err();
    assert!(!error.is_invalid_rerun(), "a running slot is a passing state, not an invalid run: {error}");
    assert!(chain(&error).contains("A data-diff attempt for this window is already running"), "{}", chain(&error));
    let attempts: i64 =
        context.backend_sql().query_one("SELECT count(*) FROM public.dd_run_attempts", &[]).unwrap().get(0);
    assert_eq!(attempts, 2, "nothing started");

    let unknown = datadiff_diff_core::attempt::RunId::new(uuid::Uuid::from_u128(42));
    let error = remediate(&ticker, unknown, "INC-1").unwrap_err();
    assert!(error.is_invalid_rerun(), "{error}");
}

/// The error and its causes on one line.
pub(crate) fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
