//! The backend stops while an attempt runs (SPEC §8: a backend problem is exit 2). When it
//! stays away, `run` stops working and exits 2 once the pool has waited its checkout timeout,
//! the attempt left RUNNING for the stale sweep (nothing can record it); when it comes back
//! within that time, the attempt is recorded as it ended.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use datadiff_testkit::{Cluster, Database, shared_cluster};

use crate::support::{Fixture, RUN_AT};

/// How long a test waits for `run` to end before failing (a bound on the test).
const TEST_BOUND: Duration = Duration::from_secs(120);

#[test]
fn a_backend_lost_mid_attempt_exits_2_with_the_cause() {
    let (status, stderr, attempts) = lose_the_backend_mid_attempt(false);
    assert_eq!(status, Some(2), "{stderr}");
    assert!(stderr.contains("error: the backend went away; no further check was run: "), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    // Nothing could be written while it was away: the sweep retires the attempt later.
    assert_eq!(attempts, ["RUNNING"]);
}

#[test]
fn a_backend_back_before_the_attempt_records_it_keeps_the_attempt() {
    let (status, stderr, attempts) = lose_the_backend_mid_attempt(true);
    assert_eq!(status, Some(0), "{stderr}");
    assert_eq!(attempts, ["PASS"]);
}

/// Runs `run --all` with the backend in a cluster of its own, stops that cluster while the
/// attempt waits for a locked replica table, releases the lock, and restarts the backend at
/// once when `comes_back` (else after `run` ended). Returns `run`'s exit code, its stderr and
/// the attempts' statuses as the backend then holds them.
fn lose_the_backend_mid_attempt(comes_back: bool) -> (Option<i32>, String, Vec<String>) {
    let fixture = Fixture::new();
    let own = Cluster::start().unwrap();
    for role in [&fixture.app, &fixture.ddl] {
        own.create_role(&role.name, &role.password).unwrap();
    }
    let backend = own.fresh_database().unwrap();
    backend.make_backend(&fixture.ddl.name, &fixture.app.name).unwrap();
    let mut files = fixture.files();
    let shared = shared_cluster();
    files.config = files
        .config
        .replacen(&format!("port: {}", shared.port()), &format!("port: {}", own.port()), 1)
        .replacen(&format!("dbname: {}", fixture.backend.name()), &format!("dbname: {}", backend.name()), 1);
    fixture.write(&files);
    fixture.import();

    let mut locker = fixture.replica.client().unwrap();
    let mut lock = locker.transaction().unwrap();
    lock.batch_execute("LOCK TABLE payments.transfers IN ACCESS EXCLUSIVE MODE").unwrap();
    let dir = fixture.dir_arg();
    let mut child = Command::new(env!("CARGO_BIN_EXE_datadiff"))
        .args(["run", "--all", "--at", RUN_AT, "--dir", dir.as_str()])
        .env_remove("RUST_LOG")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while running_with_preflight(&backend) == 0 {
        assert!(started.elapsed() < TEST_BOUND, "the attempt never started its queries");
        std::thread::sleep(Duration::from_millis(50));
    }
    own.stop().unwrap();
    lock.rollback().unwrap();
    if comes_back {
        own.restart().unwrap();
    }
    let waited = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if waited.elapsed() > TEST_BOUND {
            let _ = child.kill();
            panic!("run did not end after its backend went away");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let output = child.wait_with_output().unwrap();
    if !comes_back {
        own.restart().unwrap();
    }
    let attempts = backend
        .client()
        .unwrap()
        .query("SELECT status FROM public.dd_run_attempts ORDER BY started_at", &[])
        .unwrap()
        .iter()
        .map(|row| row.get(0))
        .collect();
    (output.status.code(), String::from_utf8_lossy(&output.stderr).into_owned(), attempts)
}

fn running_with_preflight(backend: &Database<'_>) -> i64 {
    backend
        .client()
        .unwrap()
        .query_one(
            "SELECT count(*) FROM public.dd_run_attempts WHERE status = 'RUNNING' AND preflight_id IS NOT NULL",
            &[],
        )
        .unwrap()
        .get(0)
}
