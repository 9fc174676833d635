//! A side whose server stops answering mid-attempt: its PostgreSQL backend process — or the
//! whole server, PostgreSQL or MariaDB — is frozen with `SIGSTOP` (resumed afterwards), so
//! the server's own `statement_timeout` never fires and only the client's deadline can end the
//! attempt. One attempt has one deadline: once a server has not answered within the statement
//! timeout plus 5 s, the attempt ends — no later step (`row_diff`, a rollback) waits on a
//! server again. Each test bounds its own wait.

use std::sync::Arc;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use datadiff_backend_store::BackendConfig;
use datadiff_config::{DbConn, Secret};
use datadiff_diff_core::definition::{CheckDefinition, CheckType, RowDiffSettings, SourceType};
use datadiff_diff_core::segment::Strategy;
use datadiff_runner::{RunSummary, SOURCE_APPLICATION_NAME, SummaryStatus, TARGET_APPLICATION_NAME, execute};
use datadiff_testkit::{Cluster, Database, MariaDb};
use mysql::prelude::Queryable;

use crate::context::{Context, REPLICA_SQL, SOURCE_SQL, result, scheduled, slot, wait_for_a_lock_wait};

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
            assert!(signal("-STOP", *pid), "kill -STOP {pid} failed");
        }
        Frozen(pids)
    }

    /// Freezes a whole cluster: its postmaster, and those of its children still alive (a
    /// child listed a moment ago may have exited since: it can answer nothing anyway).
    fn freeze_cluster(cluster: &Cluster) -> Frozen {
        let pids = cluster_processes(cluster);
        let (postmaster, children) = pids.split_first().expect("the postmaster");
        assert!(signal("-STOP", *postmaster), "kill -STOP {postmaster} failed");
        let mut frozen = vec![*postmaster];
        frozen.extend(children.iter().copied().filter(|pid| signal("-STOP", *pid)));
        Frozen(frozen)
    }
}

impl Drop for Frozen {
    fn drop(&mut self) {
        for pid in &self.0 {
            signal("-CONT", *pid);
        }
    }
}

/// Sends `which` to `pid`; whether it was delivered.
fn signal(which: &str, pid: i32) -> bool {
    std::process::Command::new("kill")
        .args([which, &pid.to_string()])
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
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

/// The attempt's backend session stops answering (its server process frozen; the server still
/// takes new connections): past the store's deadline the attempt is recorded ERROR with the
/// real cause over a fresh connection — as a signal's is — instead of being left RUNNING for
/// the stale sweep's generic lease expiry.
#[test]
fn a_backend_session_that_stops_answering_is_recorded_with_its_cause_over_a_fresh_connection() {
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
    let summary = executed.expect("the attempt is recorded over a fresh connection");
    let cause = "backend did not answer within 13 s while finishing the attempt; the connection was abandoned";
    assert_eq!((summary.status, summary.reason.as_deref()), (SummaryStatus::Error, Some(cause)));
    let attempt = context.attempt_row(summary.run_id.unwrap());
    assert_eq!((attempt.status.as_str(), attempt.error.as_deref()), ("ERROR", Some(cause)));
    assert!(attempt.finished_at.is_some() && attempt.has_preflight, "{attempt:?}");
    drop(frozen);
}

/// The statement timeout of the whole-server tests: long enough that a second wait after the
/// first (what an attempt did before it had one deadline) is plainly more than the slack.
const FROZEN_TIMEOUT_SECONDS: i64 = 8;

/// What the tests allow beyond the documented bound (statement timeout + 5 s after the
/// freeze): the backend's time to record the attempt and the threads' teardown. A second
/// wait on the frozen server would take a whole statement timeout more.
const SLACK: Duration = Duration::from_secs(4);

/// The documented bound of an attempt against a server frozen at some instant: the
/// statement timeout plus `ANSWER_GRACE` after it.
fn documented_bound() -> Duration {
    Duration::from_secs(FROZEN_TIMEOUT_SECONDS as u64) + datadiff_access::ANSWER_GRACE
}

/// A throwaway cluster of the test's own, alive until the test process ends (its watchdog
/// removes it then): a test may freeze it whole without touching other tests' databases.
fn own_cluster() -> &'static Cluster {
    Box::leak(Box::new(Cluster::start().unwrap()))
}

/// Every process of `cluster`: the postmaster and its children (sessions, background work).
fn cluster_processes(cluster: &Cluster) -> Vec<i32> {
    let postmaster = cluster.postmaster_pid().expect("the cluster runs");
    let children = std::process::Command::new("pgrep").args(["-P", &postmaster.to_string()]).output().unwrap();
    let mut pids = vec![i32::try_from(postmaster).unwrap()];
    pids.extend(String::from_utf8_lossy(&children.stdout).lines().filter_map(|line| line.trim().parse::<i32>().ok()));
    pids
}

/// Waits (bounded) for the summary of an attempt whose server froze at `frozen_at`, and
/// asserts that it came within the documented bound (plus [`SLACK`]).
fn ended_within_one_deadline(receiver: &mpsc::Receiver<RunSummary>, frozen_at: Instant) -> RunSummary {
    let bound = documented_bound() + SLACK;
    let summary = receiver.recv_timeout(bound.saturating_sub(frozen_at.elapsed())).unwrap_or_else(|_| {
        panic!(
            "the attempt did not end within statement_timeout {FROZEN_TIMEOUT_SECONDS} s + 5 s of the freeze \
             (waited {:.1} s)",
            frozen_at.elapsed().as_secs_f64()
        )
    });
    eprintln!("the attempt ended {:.1} s after the freeze", frozen_at.elapsed().as_secs_f64());
    summary
}

/// The target stops answering in its aggregate query while its server still takes new
/// connections: `row_diff`, which would stream on connections of its own, is not started —
/// the attempt's one deadline has passed — and the attempt stores no result.
#[test]
fn row_diff_is_not_started_after_the_aggregate_query_got_no_answer() {
    let context = Arc::new(Context::pipelinewise());
    let mut definition = context.definition();
    definition.statement_timeout_seconds = 4;
    definition.checks = vec![CheckType::SchemaCompatibility, CheckType::RowCount];
    definition.extensions.row_diff = Some(RowDiffSettings::default());
    let (summary, frozen) = run_with_a_frozen_target(&context, definition, "SELECT");
    let expected = "target aggregate query failed: no answer from the target database within 9 s \
                    (statement_timeout 4 s + 5 s grace); a cancel request was sent and the connection abandoned";
    let run_id = summary.run_id.unwrap();
    let attempt = context.attempt_row(run_id);
    assert_eq!((attempt.status.as_str(), attempt.error.as_deref()), ("ERROR", Some(expected)));
    let checks: Vec<String> = context.result_rows(run_id).into_iter().map(|row| row.check_type).collect();
    assert!(checks.is_empty(), "no check ran after the deadline, row_diff included: {checks:?}");
    drop(frozen);
}

/// A whole PostgreSQL server (source and replica) frozen while the target waits in its
/// aggregate query: the attempt ends ERROR within statement_timeout + 5 s of the freeze —
/// neither `row_diff`'s connections nor the source session's rollback wait on it again.
#[test]
fn an_attempt_against_a_frozen_postgresql_server_ends_within_one_deadline() {
    let cluster = own_cluster();
    let context = Arc::new(Context::with_sides_on(cluster, SOURCE_SQL, REPLICA_SQL));
    let mut definition = context.definition();
    definition.statement_timeout_seconds = FROZEN_TIMEOUT_SECONDS;
    definition.extensions.row_diff = Some(RowDiffSettings::default());
    let mut lock = context.replica.client().unwrap();
    lock.batch_execute("BEGIN; LOCK TABLE payments_public.transfers IN ACCESS EXCLUSIVE MODE").unwrap();
    let (sender, receiver) = mpsc::channel();
    let running = Arc::clone(&context);
    std::thread::spawn(move || {
        let _ = sender.send(running.run(&definition));
    });
    wait_for_a_lock_wait(&context.replica, TARGET_APPLICATION_NAME, "the target never waited for the lock");
    let frozen = Frozen::freeze_cluster(cluster);
    let frozen_at = Instant::now();

    let summary = ended_within_one_deadline(&receiver, frozen_at);
    let expected = format!(
        "target aggregate query failed: no answer from the target database within {} s (statement_timeout \
         {FROZEN_TIMEOUT_SECONDS} s + 5 s grace); a cancel request was sent and the connection abandoned",
        documented_bound().as_secs()
    );
    let attempt = context.attempt_row(summary.run_id.unwrap());
    assert_eq!((attempt.status.as_str(), attempt.error.as_deref()), ("ERROR", Some(expected.as_str())));
    drop(frozen);
}

/// A MariaDB server of the test's own holding the MySQL fixture table, read by a SELECT-only
/// user, and a context whose tap is that database.
struct FrozenMariaDb {
    server: &'static MariaDb,
    source: datadiff_testkit::MariaDbDatabase<'static>,
    reader: String,
    context: Arc<Context>,
}

impl FrozenMariaDb {
    fn new() -> FrozenMariaDb {
        let server: &'static MariaDb = Box::leak(Box::new(MariaDb::start().unwrap()));
        let source = server.fresh_database().unwrap();
        source.client().unwrap().query_drop(crate::attempt_mysql::MARIADB_SQL).unwrap();
        let reader = format!("reader_{}", source.name());
        source.create_user(&reader, "frozen-reader-pw", &["SELECT"]).unwrap();
        let mut context = Context::new("", crate::attempt_mysql::REPLICA_SQL);
        let tap = DbConn {
            host: Some(server.host().to_owned()),
            port: Some(server.port()),
            user: Some(reader.clone()),
            password: Some(Secret::new("frozen-reader-pw")),
            dbname: Some(source.name().to_owned()),
            ..DbConn::default()
        };
        context.connections = context.connections.clone().with_tap("payments", tap);
        FrozenMariaDb { server, source, reader, context: Arc::new(context) }
    }

    /// `checks` and `row_diff` over `Amount` and `Status`, with [`FROZEN_TIMEOUT_SECONDS`].
    fn definition(&self, checks: Vec<CheckType>) -> CheckDefinition {
        let database = self.source.name().to_owned();
        CheckDefinition {
            full_check_name: CheckDefinition::full_check_name_of("postgres", "payments", &database, "Transfers"),
            source_type: SourceType::TapMysql,
            source_database: database.clone(),
            source_schema: database,
            source_table: "Transfers".into(),
            target_schema: "shop".into(),
            target_table: "transfers".into(),
            source_compare_columns: vec!["Amount".into(), "Status".into()],
            target_compare_columns: vec!["amount".into(), "status".into()],
            checks,
            statement_timeout_seconds: FROZEN_TIMEOUT_SECONDS,
            extensions: datadiff_diff_core::definition::Extensions {
                row_diff: Some(RowDiffSettings::default()),
                ..Default::default()
            },
            ..self.context.definition()
        }
    }

    /// Runs `definition` with the source table write-locked; once the reader's statement
    /// waits for the lock, freezes the whole server. Returns the summary (waited for within
    /// the documented bound) and the server, still frozen.
    fn run_frozen_in_a_lock_wait(&self, definition: CheckDefinition) -> (RunSummary, Frozen) {
        let mut lock = self.source.client().unwrap();
        lock.query_drop("LOCK TABLES `Transfers` WRITE").unwrap();
        let (sender, receiver) = mpsc::channel();
        let running = Arc::clone(&self.context);
        std::thread::spawn(move || {
            let _ = sender.send(running.run(&definition));
        });
        let mut admin = self.server.connect(None).unwrap();
        let started = Instant::now();
        loop {
            let waiting: Option<i64> = admin
                .exec_first(
                    "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE USER = ? AND STATE LIKE '%metadata lock%'",
                    (&self.reader,),
                )
                .unwrap();
            if waiting.unwrap_or(0) > 0 {
                break;
            }
            assert!(started.elapsed() < TEST_BOUND, "the source statement never waited for the lock");
            std::thread::sleep(Duration::from_millis(20));
        }
        let frozen = Frozen::freeze(i32::try_from(self.server.server_pid().expect("the server runs")).unwrap());
        let summary = ended_within_one_deadline(&receiver, Instant::now());
        // The lock's and the probe's sessions end once the server runs again.
        std::thread::spawn(move || drop((lock, admin)));
        (summary, frozen)
    }
}

/// A whole MariaDB source server frozen while its aggregate query waits for a table lock: the
/// attempt ends ERROR within statement_timeout + 5 s of the freeze, naming the source —
/// `row_diff`'s MySQL connection is not attempted.
#[test]
fn an_attempt_against_a_frozen_mariadb_source_ends_within_one_deadline() {
    let mariadb = FrozenMariaDb::new();
    let definition = mariadb.definition(vec![CheckType::SchemaCompatibility, CheckType::RowCount]);
    let (summary, frozen) = mariadb.run_frozen_in_a_lock_wait(definition);
    let expected = format!(
        "source aggregate query failed: no answer from the source database within {} s (statement timeout \
         {FROZEN_TIMEOUT_SECONDS} s + 5 s grace); a KILL QUERY was sent and the connection abandoned",
        documented_bound().as_secs()
    );
    let attempt = mariadb.context.attempt_row(summary.run_id.unwrap());
    assert_eq!((attempt.status.as_str(), attempt.error.as_deref()), ("ERROR", Some(expected.as_str())));
    drop(frozen);
}

/// The same server frozen while `row_diff`'s MySQL stream waits for the lock (the only data
/// check): the stream's deadline ends the attempt within statement_timeout + 5 s of the
/// freeze, naming the source alone; its `KILL QUERY` is not waited for.
#[test]
fn a_row_diff_stream_from_a_frozen_mariadb_source_ends_within_one_deadline() {
    let mariadb = FrozenMariaDb::new();
    let definition = mariadb.definition(vec![CheckType::SchemaCompatibility]);
    let (summary, frozen) = mariadb.run_frozen_in_a_lock_wait(definition);
    let run_id = summary.run_id.unwrap();
    let attempt = mariadb.context.attempt_row(run_id);
    assert_eq!(attempt.status, "ERROR");
    let rows = mariadb.context.result_rows(run_id);
    let row_diff = result(&rows, "row_diff");
    let error = row_diff.error.as_deref().unwrap_or_default();
    assert!(error.starts_with("row_diff: no answer from the source database within 13 s"), "{error}");
    drop(frozen);
}

/// A PostgreSQL server frozen before the attempt connects: the connect timeout
/// (`min(statement_timeout, 30 s)`) ends the attempt, within the same bound.
#[test]
fn an_attempt_against_a_postgresql_server_frozen_before_it_connects_ends_within_one_deadline() {
    let cluster = own_cluster();
    let context = Arc::new(Context::with_sides_on(cluster, SOURCE_SQL, REPLICA_SQL));
    let mut definition = context.definition();
    definition.statement_timeout_seconds = FROZEN_TIMEOUT_SECONDS;
    definition.extensions.row_diff = Some(RowDiffSettings::default());
    let stored = context.import(&definition);
    let frozen = Frozen::freeze_cluster(cluster);
    let frozen_at = Instant::now();
    let (sender, receiver) = mpsc::channel();
    let running = Arc::clone(&context);
    std::thread::spawn(move || {
        let _ = sender.send(
            execute(&running.store, &running.connections, &stored, slot(), scheduled(), &Context::options()).unwrap(),
        );
    });
    let summary = ended_within_one_deadline(&receiver, frozen_at);
    let attempt = context.attempt_row(summary.run_id.unwrap());
    assert_eq!(attempt.status, "ERROR");
    let error = attempt.error.unwrap_or_default();
    assert!(error.starts_with("cannot connect to the "), "{error}");
    drop(frozen);
}

/// The replica stops answering mid-`row_diff` while the source streams a window larger than
/// the merge's queues: the source is held back by the merge, not silent, so the reason names
/// the target alone.
#[test]
fn a_stream_deadline_names_only_the_side_that_did_not_answer() {
    let rows = "SELECT g, timestamp '2026-07-22 12:00:00' + g * interval '10 ms', 1.00, 'paid' \
                FROM generate_series(1, 200000) g";
    let source = format!(
        "CREATE TABLE public.\"Transfers\" (\"Id\" bigint PRIMARY KEY, \"UpdatedAt\" timestamp, \
             \"Amount\" numeric(12,2), \"Status\" text);
         CREATE INDEX \"Transfers_UpdatedAt_idx\" ON public.\"Transfers\" (\"UpdatedAt\");
         INSERT INTO public.\"Transfers\" {rows};"
    );
    let replica = format!(
        "CREATE SCHEMA payments_public;
         CREATE TABLE payments_public.transfers (id bigint, updatedat timestamptz, amount numeric(18,4),
             status character varying, _sdc_deleted_at character varying);
         INSERT INTO payments_public.transfers (id, updatedat, amount, status) {rows};"
    );
    let context = Arc::new(Context::new(&source, &replica));
    let mut definition = context.definition();
    definition.statement_timeout_seconds = 4;
    definition.checks = vec![CheckType::SchemaCompatibility];
    definition.extensions.row_diff = Some(RowDiffSettings::default().with_strategy(Strategy::Stream));
    let (summary, frozen) = run_with_a_frozen_target(&context, definition, "COPY");
    let expected = "row_diff: no answer from the target database within 9 s (statement_timeout 4 s + 5 s grace); \
                    a cancel request was sent and the connection abandoned";
    let attempt = context.attempt_row(summary.run_id.unwrap());
    assert_eq!((attempt.status.as_str(), attempt.error.as_deref()), ("ERROR", Some(expected)));
    drop(frozen);
}
