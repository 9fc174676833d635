//! A side whose server stops answering mid-attempt: its PostgreSQL backend process is frozen
//! with `SIGSTOP` (resumed afterwards), so the server's own `statement_timeout` never fires
//! and only the client's deadline can end the attempt. Each test bounds its own wait.

use std::sync::Arc;
use std::sync::mpsc;
use std::time::Duration;

use datadiff_backend_store::BackendConfig;
use datadiff_diff_core::definition::{CheckType, RowDiffSettings};
use datadiff_runner::{RunSummary, SOURCE_APPLICATION_NAME, SummaryStatus, TARGET_APPLICATION_NAME, execute};
use datadiff_testkit::Database;

use crate::context::{Context, result, scheduled, slot, wait_for_a_lock_wait};

/// How long a test waits for the attempt before failing (a bound on the test, not a timing
/// assertion: the attempt's own deadline is a few seconds).
const TEST_BOUND: Duration = Duration::from_secs(90);

/// Server processes stopped with `SIGSTOP`, continued when dropped (also when the test fails).
struct Frozen(Vec<i32>);

impl Frozen {
    fn freeze(pid: i32) -> Frozen {
        Frozen::freeze_all(vec![pid])
    }

    fn freeze_all(pids: Vec<i32>) -> Frozen {
        for pid in &pids {
            signal("-STOP", *pid);
        }
        Frozen(pids)
    }
}

impl Drop for Frozen {
    fn drop(&mut self) {
        for pid in &self.0 {
            signal("-CONT", *pid);
        }
    }
}

fn signal(which: &str, pid: i32) {
    let status = std::process::Command::new("kill").args([which, &pid.to_string()]).status().unwrap();
    assert!(status.success(), "kill {which} {pid} failed");
}

/// The process id of the target session of `database` that waits for a lock while running a
/// statement starting with `statement`.
fn waiting_pid(database: &Database<'_>, statement: &str) -> i32 {
    database
        .client()
        .unwrap()
        .query_one(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND application_name = $1 \
               AND wait_event_type = 'Lock' AND query LIKE $2 || '%'",
            &[&TARGET_APPLICATION_NAME, &statement],
        )
        .unwrap()
        .get(0)
}

/// Runs the context's attempt of `definition` on a thread of its own, with the replica table
/// locked; once the target session named by `statement` waits for that lock, freezes its
/// server process and releases the lock: the frozen process can never answer. Returns the
/// attempt's summary, the process still frozen.
fn run_with_a_frozen_target(
    context: &Arc<Context>,
    definition: datadiff_diff_core::definition::CheckDefinition,
    statement: &str,
) -> (RunSummary, Frozen) {
    let mut lock = context.replica.client().unwrap();
    lock.batch_execute("BEGIN; LOCK TABLE payments_public.transfers IN ACCESS EXCLUSIVE MODE").unwrap();
    let (sender, receiver) = mpsc::channel();
    let running = Arc::clone(context);
    std::thread::spawn(move || {
        let _ = sender.send(running.run(&definition));
    });
    wait_for_a_lock_wait(&context.replica, TARGET_APPLICATION_NAME, "the target never waited for the lock");
    let frozen = Frozen::freeze(waiting_pid(&context.replica, statement));
    lock.batch_execute("COMMIT").unwrap();
    let summary = receiver.recv_timeout(TEST_BOUND).expect("the attempt did not end: no client-side deadline");
    (summary, frozen)
}

#[test]
fn a_replica_that_stops_answering_is_an_error_attempt_within_its_deadline() {
    let context = Arc::new(Context::pipelinewise());
    let mut definition = context.definition();
    // The lock wait must be seen and frozen before the server's own timeout fires.
    definition.statement_timeout_seconds = 4;
    definition.checks = vec![CheckType::RowCount];
    let (summary, frozen) = run_with_a_frozen_target(&context, definition, "SELECT");
    let expected = "target aggregate query failed: no answer from the target database within 9 s \
                    (statement_timeout 4 s + 5 s grace); a cancel request was sent and the connection abandoned";
    assert_eq!((summary.status, summary.reason.as_deref()), (SummaryStatus::Error, Some(expected)));
    let run_id = summary.run_id.unwrap();
    let attempt = context.attempt_row(run_id);
    assert_eq!((attempt.status.as_str(), attempt.error.as_deref()), ("ERROR", Some(expected)));
    assert_eq!(context.preflight_row(run_id).status, "PASS", "the preflight ran before the query");
    assert!(context.result_rows(run_id).is_empty(), "a failed attempt stores no results");
    drop(frozen);
}

#[test]
fn a_replica_that_stops_answering_mid_stream_is_a_row_diff_error_within_its_deadline() {
    let context = Arc::new(Context::pipelinewise());
    let mut definition = context.definition();
    definition.statement_timeout_seconds = 4;
    definition.checks = vec![CheckType::SchemaCompatibility];
    definition.extensions.row_diff = Some(RowDiffSettings::default());
    let (summary, frozen) = run_with_a_frozen_target(&context, definition, "COPY");
    let expected = "row_diff: no answer from the target database within 9 s (statement_timeout 4 s + 5 s grace); \
                    a cancel request was sent and the connection abandoned";
    assert_eq!(summary.status, SummaryStatus::Error, "{:?}", summary.reason);
    let run_id = summary.run_id.unwrap();
    let attempt = context.attempt_row(run_id);
    assert_eq!((attempt.status.as_str(), attempt.error.as_deref()), ("ERROR", Some(expected)));
    let rows = context.result_rows(run_id);
    let row_diff = result(&rows, "row_diff");
    assert_eq!((row_diff.status.as_str(), row_diff.error.as_deref()), ("ERROR", Some(expected)));
    drop(frozen);
}

#[test]
fn a_backend_that_stops_answering_mid_attempt_ends_the_execution_within_its_deadline() {
    let context = Arc::new(Context::pipelinewise());
    // Its deadline: the checkout timeout (1 s + 5 s) + the statement timeout 2 s + 5 s grace.
    let config = BackendConfig {
        statement_timeout: Some(Duration::from_secs(2)),
        connect_timeout: Duration::from_secs(1),
        ..context.backend_config.clone()
    };
    let store = datadiff_runner::open_backend(config.clone()).unwrap();
    let stored = context.import(&context.definition());
    let mut lock = context.source.client().unwrap();
    lock.batch_execute("BEGIN; LOCK TABLE public.\"Transfers\" IN ACCESS EXCLUSIVE MODE").unwrap();
    let (sender, receiver) = mpsc::channel();
    let running = Arc::clone(&context);
    std::thread::spawn(move || {
        let executed = execute(&store, &running.connections, &stored, slot(), scheduled(), &Context::options());
        let _ = sender.send(executed);
    });
    // The preflight is recorded: the attempt waits in its source queries.
    wait_for_a_lock_wait(&context.source, SOURCE_APPLICATION_NAME, "the attempt never waited for the source lock");
    let pids: Vec<i32> = context
        .backend
        .client()
        .unwrap()
        .query("SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND usename = $1", &[&config.user])
        .unwrap()
        .iter()
        .map(|row| row.get(0))
        .collect();
    assert!(!pids.is_empty(), "the application role has no backend session");
    let frozen = Frozen::freeze_all(pids);
    lock.batch_execute("COMMIT").unwrap();

    let executed = receiver.recv_timeout(TEST_BOUND).expect("the attempt did not end: no backend deadline");
    let error = executed.expect_err("a frozen backend recorded the attempt");
    assert!(error.is_backend_lost(), "{error:?}");
    let text = datadiff_runner::Error::to_string(&error);
    assert_eq!(text, "finishing an attempt of postgres/payments/public/Transfers failed");
    let cause = std::error::Error::source(&error).map(ToString::to_string);
    assert_eq!(
        cause.as_deref(),
        Some("backend did not answer within 13 s while finishing the attempt; the connection was abandoned")
    );
    drop(frozen);
}
