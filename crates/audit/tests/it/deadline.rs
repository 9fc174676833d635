//! A replica whose server stops answering mid-scan: its backend process is frozen with
//! `SIGSTOP` (resumed afterwards), so the server's own statement timeout never fires and only
//! the audit's client deadline can end it. The test bounds its own wait.

use std::sync::mpsc;
use std::time::{Duration, Instant};

use datadiff_audit::{CdcMetadata, Error, audit};

use crate::support::{Pair, no_env, table};

/// How long the test waits for the audit before failing (a bound on the test, not a timing
/// assertion: the audit's own deadline is a few seconds).
const TEST_BOUND: Duration = Duration::from_secs(90);

/// A server process stopped with `SIGSTOP`, continued when dropped (also when the test fails).
struct Frozen(i32);

impl Drop for Frozen {
    fn drop(&mut self) {
        signal("-CONT", self.0);
    }
}

fn signal(which: &str, pid: i32) {
    let status = std::process::Command::new("kill").args([which, &pid.to_string()]).status().unwrap();
    assert!(status.success(), "kill {which} {pid} failed");
}

#[test]
fn a_replica_that_stops_answering_mid_scan_ends_the_audit_within_its_deadline() {
    // The inventory and the snapshot recheck read the metadata table; only the scan reads
    // the replica table, which is locked until its COPY waits and is frozen.
    let pair = Pair::new(
        "CREATE TABLE public.customers (id bigint PRIMARY KEY, email text); \
         INSERT INTO public.customers SELECT g, 'e' || g FROM generate_series(1, 50) g;",
        "CREATE SCHEMA cdc; \
         CREATE TABLE cdc.meta (id bigint PRIMARY KEY, lsn numeric, deleted boolean); \
         INSERT INTO cdc.meta SELECT g, g * 10, false FROM generate_series(1, 50) g; \
         CREATE TABLE cdc.customers_live (id bigint PRIMARY KEY, email text); \
         INSERT INTO cdc.customers_live SELECT g, 'e' || g FROM generate_series(1, 50) g;",
    );
    let mut options = pair.options("public.customers");
    options.replica_table = Some(table("cdc.customers_live"));
    options.metadata = Some(CdcMetadata {
        table: table("cdc.meta"),
        lsn_column: "lsn".to_owned(),
        deleted_column: "deleted".to_owned(),
    });
    // The lock wait must be seen and frozen before the server's own timeout fires.
    options.statement_timeout = Duration::from_secs(4);

    let mut locker = pair.replica.client().unwrap();
    locker.batch_execute("BEGIN; LOCK TABLE cdc.customers_live IN ACCESS EXCLUSIVE MODE").unwrap();
    let (sender, receiver) = mpsc::channel();
    let audited = options.clone();
    std::thread::spawn(move || {
        let _ = sender.send(audit(&audited, &no_env(), &mut |_| {}));
    });
    let mut watcher = pair.replica.client().unwrap();
    let started = Instant::now();
    let pid: i32 = loop {
        let row = watcher
            .query_opt(
                "SELECT pid FROM pg_stat_activity WHERE datname = current_database() \
                   AND wait_event_type = 'Lock' AND query LIKE 'COPY%'",
                &[],
            )
            .unwrap();
        if let Some(row) = row {
            break row.get(0);
        }
        assert!(started.elapsed() < TEST_BOUND, "the scan never waited for the lock");
        std::thread::sleep(Duration::from_millis(10));
    };
    signal("-STOP", pid);
    let frozen = Frozen(pid);
    locker.batch_execute("COMMIT").unwrap();

    let result = receiver.recv_timeout(TEST_BOUND).expect("the audit did not end: no client-side deadline");
    let Err(error) = result else { panic!("the audit of a frozen replica passed") };
    assert!(matches!(error, Error::NoAnswer { step: "scanning", .. }), "{error:?}");
    assert_eq!(
        error.to_string(),
        "no answer from the replica database within 9 s (statement_timeout 4 s + 5 s grace) while scanning; \
         a cancel request was sent and the connections abandoned"
    );
    drop(frozen);
}
