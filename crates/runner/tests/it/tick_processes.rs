//! Ticks in separate processes (the `datadiff-runner-tick` helper): several processes
//! against one backend, and a SIGTERM arriving while an attempt is blocked in its source
//! query. The test holds the source table locked to keep an attempt in flight.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::ExitStatusExt;
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use datadiff_testkit::{SUPERUSER, shared_cluster};
use serde_json::Value as Json;

use crate::context::{Context, at};

const LOCK_SQL: &str = "LOCK TABLE public.\"Transfers\" IN ACCESS EXCLUSIVE MODE";

/// Waits (at most a minute) until a session of the source database waits for a lock: the
/// attempt is blocked in its source query.
pub(crate) fn wait_for_blocked_query(context: &Context) {
    let mut sql = context.source.client().unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let waiting: i64 = sql
            .query_one(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'",
                &[],
            )
            .unwrap()
            .get(0);
        if waiting > 0 {
            return;
        }
        assert!(Instant::now() < deadline, "no source query blocked within a minute");
        std::thread::sleep(Duration::from_millis(25));
    }
}

/// The helper ticking `context`'s backend at 13:05, output piped.
fn helper(context: &Context) -> Command {
    let cluster = shared_cluster();
    let mut command = Command::new(env!("CARGO_BIN_EXE_datadiff-runner-tick"));
    command
        .env("DATADIFF_TICK_HOST", cluster.host())
        .env("DATADIFF_TICK_PORT", cluster.port().to_string())
        .env("DATADIFF_TICK_BACKEND_DB", context.backend.name())
        .env("DATADIFF_TICK_BACKEND_USER", &context.backend_config.user)
        .env("DATADIFF_TICK_BACKEND_PASSWORD", &context.backend_config.password)
        .env("DATADIFF_TICK_SIDES_USER", SUPERUSER)
        .env("DATADIFF_TICK_SIDES_PASSWORD", cluster.superuser_password())
        .env("DATADIFF_TICK_SOURCE_DB", context.source.name())
        .env("DATADIFF_TICK_REPLICA_DB", context.replica.name())
        .env("DATADIFF_TICK_AT", at(13, 5).to_rfc3339())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    command
}

/// Reads the helper's `ready` line.
fn ready(stdout: &mut BufReader<ChildStdout>) {
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    assert_eq!(line.trim(), "ready");
}

/// The summaries a finished helper printed.
fn summaries(stdout: BufReader<ChildStdout>) -> Vec<Json> {
    stdout.lines().map(|line| serde_json::from_str(&line.unwrap()).unwrap()).collect()
}

fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(90);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(25));
    }
}

fn kill(child: &mut Child) {
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn processes_released_together_start_one_attempt_per_slot() {
    let context = Context::pipelinewise();
    let definition = context.definition();
    context.import(&definition);
    let mut lock = context.source.client().unwrap();
    let mut transaction = lock.transaction().unwrap();
    transaction.batch_execute(LOCK_SQL).unwrap();

    let mut children: Vec<(Child, BufReader<ChildStdout>)> = (0..4)
        .map(|_| {
            let mut child = helper(&context).env("DATADIFF_TICK_BARRIER", "1").spawn().unwrap();
            let stdout = BufReader::new(child.stdout.take().unwrap());
            (child, stdout)
        })
        .collect();
    for (_, stdout) in &mut children {
        ready(stdout);
    }
    // The barrier: every process is open and waiting; release them all at once.
    for (child, _) in &mut children {
        child.stdin.take().unwrap().write_all(b"go\n").unwrap();
    }
    // Three report SKIPPED and exit while the first holds its attempt, blocked on the lock.
    wait_until("three processes to finish", || {
        children.iter_mut().filter_map(|(child, _)| child.try_wait().unwrap()).count() == 3
    });
    let running: Vec<String> = context
        .backend_sql()
        .query("SELECT status FROM public.dd_run_attempts", &[])
        .unwrap()
        .iter()
        .map(|row| row.get(0))
        .collect();
    assert_eq!(running, ["RUNNING"], "exactly one attempt, still held");
    transaction.rollback().unwrap();

    let mut outputs = Vec::new();
    for (mut child, stdout) in children {
        let status = child.wait().unwrap();
        assert!(status.success(), "{status}");
        outputs.extend(summaries(stdout));
    }
    let mut statuses: Vec<(String, String, String)> = outputs
        .iter()
        .map(|line| {
            (
                line["status"].as_str().unwrap().to_owned(),
                line["slot_status"].as_str().unwrap_or_default().to_owned(),
                line["reason"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    statuses.sort();
    let skipped =
        ("SKIPPED".to_owned(), "RUNNING".to_owned(), "An attempt for this cron slot is already running".to_owned());
    assert_eq!(
        statuses,
        [("PASS".to_owned(), "PASS".to_owned(), String::new()), skipped.clone(), skipped.clone(), skipped]
    );
    assert!(outputs.iter().all(|line| line["scheduled_for"] == "2026-07-22T13:00:00+00:00"));

    // Coverage is one tick's: one slot, one transition.
    let mut sql = context.backend_sql();
    let attempts: i64 = sql.query_one("SELECT count(*) FROM public.dd_run_attempts", &[]).unwrap().get(0);
    assert_eq!(attempts, 1);
    let slot =
        sql.query_one("SELECT status, window_start, window_end, attempt FROM public.dd_run_slot_state", &[]).unwrap();
    assert_eq!(
        (slot.get::<_, String>(0), slot.get(1), slot.get(2), slot.get::<_, i32>(3)),
        ("PASS".to_owned(), Some(at(12, 0)), at(13, 0), 1)
    );
    let state = sql
        .query_one(
            "SELECT verified_status, verified_start, verified_end, state_version, event_type FROM public.dd_watermark_state",
            &[],
        )
        .unwrap();
    assert_eq!(
        (state.get::<_, String>(0), state.get(1), state.get(2), state.get::<_, i64>(3), state.get::<_, String>(4)),
        ("CONTIGUOUS".to_owned(), Some(at(12, 0)), Some(at(13, 0)), 1, "INITIALIZE".to_owned())
    );
    let events: i64 = sql.query_one("SELECT count(*) FROM public.dd_watermark_events", &[]).unwrap().get(0);
    assert_eq!(events, 1);
}

#[test]
fn sigterm_records_the_blocked_attempt_error_and_the_process_dies_by_it() {
    signal_records_the_blocked_attempt("TERM", 15, "Terminated by SIGTERM before the check completed");
}

#[test]
fn sigint_records_the_blocked_attempt_error_and_the_process_dies_by_it() {
    signal_records_the_blocked_attempt("INT", 2, "Terminated by SIGINT before the check completed");
}

/// Sends `signal` (numbered `number`) to a helper whose attempt is blocked in its source query.
fn signal_records_the_blocked_attempt(signal: &str, number: i32, error: &str) {
    let context = Context::pipelinewise();
    let definition = context.definition();
    context.import(&definition);
    let mut lock = context.source.client().unwrap();
    let mut transaction = lock.transaction().unwrap();
    transaction.batch_execute(LOCK_SQL).unwrap();

    let mut child = helper(&context).spawn().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    ready(&mut stdout);
    wait_for_blocked_query(&context);
    let run_id: uuid::Uuid = context
        .backend_sql()
        .query_one("SELECT run_id FROM public.dd_run_attempts WHERE status = 'RUNNING'", &[])
        .map(|row| row.get(0))
        .unwrap_or_else(|error| {
            kill(&mut child);
            panic!("{error}")
        });
    let pid = child.id().to_string();
    assert!(Command::new("kill").args([&format!("-{signal}"), &pid]).status().unwrap().success());
    let status = child.wait().unwrap();
    assert_eq!(status.signal(), Some(number), "killed by SIG{signal}: {status}");
    assert!(summaries(stdout).is_empty(), "it printed nothing: it died before returning");

    let row = context.attempt_row(datadiff_diff_core::attempt::RunId::new(run_id));
    assert_eq!((row.status.as_str(), row.error.as_deref()), ("ERROR", Some(error)));
    assert_eq!(row.finished_at, Some(at(13, 5)));
    assert!(row.has_preflight);
    // The preflight recorded before the blocked query is kept (not replaced by a placeholder).
    assert_eq!(context.preflight_row(datadiff_diff_core::attempt::RunId::new(run_id)).status, "PASS");
    assert!(context.result_rows(datadiff_diff_core::attempt::RunId::new(run_id)).is_empty());
    assert_eq!(
        context.slot_state(datadiff_diff_core::attempt::RunId::new(run_id)),
        Some(("ERROR".into(), Some(at(12, 0)), at(13, 0)))
    );
    // The source query was cancelled: nothing waits on the lock any more.
    let waiting: i64 = context
        .source
        .client()
        .unwrap()
        .query_one(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(waiting, 0);
    transaction.rollback().unwrap();
}
