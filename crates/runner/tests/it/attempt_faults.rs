//! Attempts that cannot complete: a statement timeout, servers that accept and never answer,
//! a lost lease and an interruption — each recorded as upstream records it, asserted on the
//! backend's rows.

use std::net::{TcpListener, TcpStream};
use std::time::Duration;

use datadiff_access::Environment;
use datadiff_backend_store::BackendConfig;
use datadiff_diff_core::attempt::{RunId, RunStatus, Signal};
use datadiff_runner::{Clock, Connections, Error, ExecutionOptions, InFlight, SummaryStatus, execute};

use crate::context::{Context, at, db_conn, scheduled, slot, wait_for_a_lock_wait};

const PLACEHOLDER: &str = "a6b1d1cb1fc80af3eaed07d826a028de62259650b0aa4505237d66e40e95a855";

/// A TCP listener on 127.0.0.1 that accepts connections and never answers; its port.
fn silent_listener() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let mut held: Vec<TcpStream> = Vec::new();
        for stream in listener.incoming().flatten() {
            held.push(stream);
        }
    });
    port
}

/// Holds an ACCESS EXCLUSIVE lock on the source table until dropped (committed).
fn lock_source(context: &Context) -> postgres::Client {
    let mut client = context.source.client().unwrap();
    client.batch_execute("BEGIN; LOCK TABLE public.\"Transfers\" IN ACCESS EXCLUSIVE MODE").unwrap();
    client
}

/// Waits until the attempt's source session waits for a lock (a guard that fails only after
/// two minutes, not a timing assertion).
fn wait_for_blocked_source(context: &Context) {
    wait_for_a_lock_wait(
        &context.source,
        "pipelinewise-data-diff-source",
        "the attempt never waited for the source lock",
    );
}

/// The RUNNING attempt of the context's backend.
fn running_run_id(context: &Context) -> RunId {
    let row = context
        .backend_sql()
        .query_one("SELECT run_id FROM public.dd_run_attempts WHERE status = 'RUNNING'", &[])
        .unwrap();
    RunId::new(row.get(0))
}

#[test]
fn a_statement_timeout_is_an_error_attempt_after_its_preflight() {
    let context = Context::pipelinewise();
    let mut definition = context.definition();
    definition.statement_timeout_seconds = 1;
    let lock = lock_source(&context);
    let summary = context.run(&definition);
    drop(lock);
    let run_id = summary.run_id.unwrap();
    let expected = "source aggregate query failed: canceling statement due to statement timeout";
    assert_eq!((summary.status, summary.reason.as_deref()), (SummaryStatus::Error, Some(expected)));
    let attempt = context.attempt_row(run_id);
    assert_eq!((attempt.status.as_str(), attempt.error.as_deref()), ("ERROR", Some(expected)));
    assert_eq!(context.preflight_row(run_id).status, "PASS", "the preflight recorded before the query stays");
    assert!(context.result_rows(run_id).is_empty(), "a failed attempt stores no results");
    assert_eq!(context.slot_state(run_id), Some(("ERROR".into(), Some(at(12, 0)), at(13, 0))));
}

fn hanging_side(source_hangs: bool) {
    let context = Context::pipelinewise();
    let port = silent_listener();
    let (mut source, mut replica) = (db_conn(&context.source), db_conn(&context.replica));
    let hanging = if source_hangs { &mut source } else { &mut replica };
    hanging.host = Some("127.0.0.1".into());
    hanging.port = Some(port);
    let connections =
        Connections::new(Environment::default()).with_tap("payments", source).with_target("postgres", replica);
    let mut definition = context.definition();
    definition.statement_timeout_seconds = 1; // connect timeout min(1, 30) = 1 s
    let stored = context.import(&definition);
    let summary = execute(&context.store, &connections, &stored, slot(), scheduled(), &Context::options()).unwrap();
    let (side, database) =
        if source_hangs { ("source", context.source.name()) } else { ("target", context.replica.name()) };
    let expected = format!(
        "cannot connect to the {side} database 127.0.0.1:{port}/{database}: no answer within the connect timeout of 1 s"
    );
    assert_eq!(summary.reason.as_deref(), Some(expected.as_str()));
    let run_id = summary.run_id.unwrap();
    let attempt = context.attempt_row(run_id);
    assert_eq!((attempt.status.as_str(), attempt.error.as_deref()), ("ERROR", Some(expected.as_str())));
    let preflight = context.preflight_row(run_id);
    assert_eq!((preflight.status.as_str(), preflight.fingerprint.as_str()), ("ERROR", PLACEHOLDER));
    assert_eq!(preflight.error.as_deref(), Some(expected.as_str()));
    assert!(context.result_rows(run_id).is_empty());
}

#[test]
fn a_source_that_accepts_and_never_answers_is_an_error_attempt() {
    hanging_side(true);
}

#[test]
fn a_replica_that_accepts_and_never_answers_is_an_error_attempt() {
    hanging_side(false);
}

#[test]
fn ssl_true_requires_tls_from_the_server() {
    let context = Context::pipelinewise();
    // The shared cluster serves no TLS: `prefer` would connect in plaintext, `require` must not.
    let mut replica = db_conn(&context.replica);
    replica.ssl = true;
    let connections = Connections::new(Environment::default())
        .with_tap("payments", db_conn(&context.source))
        .with_target("postgres", replica);
    let stored = context.import(&context.definition());
    let summary = execute(&context.store, &connections, &stored, slot(), scheduled(), &Context::options()).unwrap();
    let run_id = summary.run_id.unwrap();
    let attempt = context.attempt_row(run_id);
    assert_eq!(attempt.status, "ERROR");
    let error = attempt.error.unwrap();
    assert!(error.starts_with("cannot connect to the target database "), "{error}");
    assert!(error.contains("TLS"), "{error}");
    assert_eq!(context.preflight_row(run_id).fingerprint, PLACEHOLDER);
}

#[test]
fn a_backend_that_accepts_and_never_answers_is_a_typed_error() {
    let port = silent_listener();
    let config = BackendConfig {
        host: "127.0.0.1".into(),
        port,
        user: "app".into(),
        password: "app-pw".into(),
        dbname: "pipelinewise".into(),
        ddl_user: "owner".into(),
        ddl_password: "owner-pw".into(),
        connect_timeout: Duration::from_secs(1),
        ..BackendConfig::default()
    };
    match datadiff_runner::open_backend(config) {
        Err(Error::BackendTimeout { address, timeout }) => {
            assert_eq!(address, format!("127.0.0.1:{port}/pipelinewise"));
            assert_eq!(timeout, Duration::from_secs(1));
        }
        other => panic!("expected a backend timeout, got {other:?}"),
    }
}

#[test]
fn an_unreachable_backend_is_a_typed_backend_error() {
    // A closed port: refused at once.
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let config = BackendConfig {
        host: "127.0.0.1".into(),
        port,
        user: "app".into(),
        password: "app-pw".into(),
        dbname: "pipelinewise".into(),
        ddl_user: "owner".into(),
        ddl_password: "owner-pw".into(),
        ..BackendConfig::default()
    };
    match datadiff_runner::open_backend(config) {
        Err(Error::Backend { source, .. }) => assert!(source.is_connection(), "{source}"),
        other => panic!("expected a backend connection error, got {other:?}"),
    }
}

#[test]
fn a_lost_lease_discards_late_results() {
    let context = Context::pipelinewise();
    let stored = context.import(&context.definition());
    let lock = lock_source(&context);
    let summary = std::thread::scope(|scope| {
        let worker = scope.spawn(|| {
            execute(&context.store, &context.connections, &stored, slot(), scheduled(), &Context::options()).unwrap()
        });
        wait_for_blocked_source(&context);
        // The stale sweep (or another worker) ends the attempt meanwhile.
        let run_id = running_run_id(&context);
        context
            .backend_sql()
            .execute(
                "UPDATE public.dd_run_attempts SET status = 'ERROR', finished_at = $2, \
                 error = 'Scheduler lease expired before the worker completed' WHERE run_id = $1",
                &[&run_id.get(), &at(13, 40)],
            )
            .unwrap();
        drop(lock);
        worker.join().unwrap()
    });
    let run_id = summary.run_id.unwrap();
    assert_eq!((summary.status, summary.slot_status), (SummaryStatus::Skipped, Some(RunStatus::Error)));
    assert_eq!(
        summary.reason,
        Some(format!(
            "Run {run_id} is no longer RUNNING (status: ERROR); its lease expired or it was already completed. \
             Late results were discarded."
        ))
    );
    let attempt = context.attempt_row(run_id);
    assert_eq!(attempt.error.as_deref(), Some("Scheduler lease expired before the worker completed"));
    assert_eq!(attempt.finished_at, Some(at(13, 40)), "the late finish wrote nothing");
    assert!(context.result_rows(run_id).is_empty());
    assert_eq!(context.slot_state(run_id), None);
}

#[test]
fn an_interrupted_attempt_is_left_running_for_the_interrupter_to_record() {
    let context = Context::pipelinewise();
    let stored = context.import(&context.definition());
    let in_flight = InFlight::new();
    let options = ExecutionOptions { in_flight: Some(in_flight.clone()), ..Context::options() };
    let lock = lock_source(&context);
    let result = std::thread::scope(|scope| {
        let worker =
            scope.spawn(|| execute(&context.store, &context.connections, &stored, slot(), scheduled(), &options));
        wait_for_blocked_source(&context);
        in_flight.interrupt_all();
        worker.join().unwrap()
    });
    drop(lock);
    let run_id = running_run_id(&context);
    assert!(matches!(result, Err(Error::Interrupted { run_id: interrupted }) if interrupted == run_id), "{result:?}");
    assert!(in_flight.attempts().is_empty(), "an ended execution leaves the registry");
    assert_eq!(context.attempt_row(run_id).status, "RUNNING", "the interrupter records it");

    let attempt = datadiff_runner::InFlightAttempt { run_id, check_id: stored.check_id };
    assert!(datadiff_runner::record_interrupted(&context.store, attempt, Signal::Term, Clock::at(at(13, 6))).unwrap());
    let row = context.attempt_row(run_id);
    assert_eq!(
        (row.status.as_str(), row.error.as_deref()),
        ("ERROR", Some("Terminated by SIGTERM before the check completed"))
    );
    assert_eq!(row.finished_at, Some(at(13, 6)));
    assert_eq!(context.preflight_row(run_id).status, "PASS", "the preflight already recorded is kept");
    assert_eq!(context.slot_state(run_id).map(|state| state.0), Some("ERROR".into()));
    assert!(!datadiff_runner::record_interrupted(&context.store, attempt, Signal::Int, Clock::at(at(13, 7))).unwrap());
    assert_eq!(context.attempt_row(run_id).error.as_deref(), Some("Terminated by SIGTERM before the check completed"));
}

#[test]
fn an_attempted_slot_is_skipped_and_a_forced_rerun_is_manual() {
    let context = Context::pipelinewise();
    let stored = context.import(&context.definition());
    let first =
        execute(&context.store, &context.connections, &stored, slot(), scheduled(), &Context::options()).unwrap();
    let again =
        execute(&context.store, &context.connections, &stored, slot(), scheduled(), &Context::options()).unwrap();
    assert_eq!(
        (again.status, again.slot_status, again.run_id),
        (SummaryStatus::Skipped, Some(RunStatus::Pass), first.run_id)
    );
    assert_eq!(again.reason.as_deref(), Some("This cron slot has already been attempted"));
    let forced = datadiff_diff_core::attempt::StartKind::Scheduled { force: true };
    let manual = execute(&context.store, &context.connections, &stored, slot(), forced, &Context::options()).unwrap();
    let row = context.attempt_row(manual.run_id.unwrap());
    assert_eq!((row.status.as_str(), row.attempt, row.trigger.as_str()), ("PASS", 2, "MANUAL"));
    let attempts: i64 =
        context.backend_sql().query_one("SELECT count(*) FROM public.dd_run_attempts", &[]).unwrap().get(0);
    assert_eq!(attempts, 2, "the skip wrote nothing");
}
