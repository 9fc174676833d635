//! SIGTERM (and SIGHUP: a closed terminal or SSH session) during an attempt: the attempt is
//! recorded ERROR, then the process dies by the signal (SPEC §4), never a panic or a RUNNING
//! attempt left for the sweep.

use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::{Fixture, RUN_AT};

#[test]
fn sigterm_records_the_in_flight_attempt_error_and_the_process_dies_by_it() {
    interrupt_a_running_attempt("TERM", 15);
}

#[test]
fn sighup_is_handled_like_sigterm() {
    interrupt_a_running_attempt("HUP", 1);
}

/// Sends SIG`name` to a `run` whose attempt waits in its queries, and checks that the process
/// dies by signal `number` with the attempt recorded ERROR.
fn interrupt_a_running_attempt(name: &str, number: i32) {
    let fixture = Fixture::new();
    fixture.import();
    // The replica's table is locked: the attempt's target query waits on it.
    let mut locker = fixture.replica.client().unwrap();
    let mut lock = locker.transaction().unwrap();
    lock.batch_execute("LOCK TABLE payments.transfers IN ACCESS EXCLUSIVE MODE").unwrap();

    let dir = fixture.dir_arg();
    let child = Command::new(env!("CARGO_BIN_EXE_datadiff"))
        .args(["run", "--all", "--at", RUN_AT, "--dir", dir.as_str()])
        .env_remove("RUST_LOG")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until the attempt is RUNNING with its preflight recorded: it is in its queries.
    let deadline = Instant::now() + Duration::from_secs(60);
    while fixture
        .count("SELECT count(*) FROM public.dd_run_attempts WHERE status = 'RUNNING' AND preflight_id IS NOT NULL")
        == 0
    {
        assert!(Instant::now() < deadline, "the attempt never started its queries");
        std::thread::sleep(Duration::from_millis(50));
    }
    let killed = Command::new("kill").args([format!("-{name}"), child.id().to_string()]).status().unwrap();
    assert!(killed.success());
    let output = child.wait_with_output().unwrap();
    lock.rollback().unwrap();

    assert_eq!(output.status.signal(), Some(number), "the process dies by SIG{name}: {:?}", output.status);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    let attempts = fixture.attempts();
    assert_eq!(attempts.len(), 1);
    assert_eq!(attempts[0].0, "ERROR");
    assert_eq!(attempts[0].3.as_deref(), Some(format!("Terminated by SIG{name} before the check completed").as_str()));
}
