//! Files a command writes at a path the user names (`audit --report`, `report metrics
//! --output`): written atomically over a regular file or a new path, a symbolic link followed,
//! anything else (a device node, a FIFO, a socket, a directory) refused with exit 2 and left as
//! it was; and an audit that ends without a report — a refusal, an error or a signal — leaves
//! no earlier report at its path.

use std::os::unix::fs::FileTypeExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use datadiff_testkit::{Database, SUPERUSER, shared_cluster};

use crate::support::{Fixture, Outcome, RUN_AT, datadiff};

/// How long a test waits for something it started (a bound on the test).
const TEST_BOUND: Duration = Duration::from_secs(60);

/// What kind of file is at `path` (without following a link), for comparing before and after.
fn kind(path: &Path) -> &'static str {
    match std::fs::symlink_metadata(path) {
        Err(_) => "nothing",
        Ok(metadata) => {
            let kind = metadata.file_type();
            if kind.is_symlink() {
                "symlink"
            } else if kind.is_char_device() {
                "character device"
            } else if kind.is_fifo() {
                "fifo"
            } else if kind.is_socket() {
                "socket"
            } else if kind.is_dir() {
                "directory"
            } else {
                "regular file"
            }
        }
    }
}

/// Paths that are not regular files, each made in `dir` (a character device only where this
/// process may create one: as root, a node of its own with `/dev/full`'s numbers, never the
/// system's), with what is there.
fn special_files(dir: &Path) -> Vec<(PathBuf, &'static str)> {
    let mut made = Vec::new();
    let device = dir.join("full");
    if Command::new("mknod")
        .arg(&device)
        .args(["c", "1", "7"])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
    {
        made.push((device.clone(), "character device"));
        let link = dir.join("link-to-full");
        std::os::unix::fs::symlink(&device, &link).unwrap();
        made.push((link, "symlink"));
    }
    let fifo = dir.join("fifo");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    made.push((fifo.clone(), "fifo"));
    let link = dir.join("link-to-fifo");
    std::os::unix::fs::symlink("fifo", &link).unwrap();
    made.push((link, "symlink"));
    let socket = dir.join("socket");
    let listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    std::mem::forget(listener);
    made.push((socket, "socket"));
    let directory = dir.join("directory");
    std::fs::create_dir(&directory).unwrap();
    made.push((directory, "directory"));
    made
}

#[test]
fn report_metrics_output_refuses_what_is_not_a_regular_file_and_follows_a_link() {
    let fixture = Fixture::new();
    fixture.import();
    fixture.run(&["run", "--all", "--at", RUN_AT]).expect(0);
    let dir = tempfile::tempdir().unwrap();
    for (path, was) in special_files(dir.path()) {
        let arg = path.display().to_string();
        let outcome = fixture.run(&["report", "metrics", "--output", &arg]);
        outcome
            .expect(2)
            .one_error_line()
            .stderr_has(&format!("error: --output {arg}: "))
            .stderr_has("not a regular file");
        assert_eq!(kind(&path), was, "{arg} is left as it was:\n{}", outcome.stderr);
    }

    // A link to a regular file: the file gets the metrics, the link stays.
    let file = dir.path().join("datadiff.prom");
    std::fs::write(&file, "stale\n").unwrap();
    let link = dir.path().join("current.prom");
    std::os::unix::fs::symlink(&file, &link).unwrap();
    fixture.run(&["report", "metrics", "--output", &link.display().to_string()]).expect(0);
    assert_eq!(kind(&link), "symlink");
    assert!(
        std::fs::read_to_string(&file).unwrap().contains("datadiff_verified_status"),
        "the link's file has the metrics"
    );
}

/// A source and a replica database with equal tables, reached as the superuser.
struct Pair {
    source: Database<'static>,
    replica: Database<'static>,
}

impl Pair {
    fn new() -> Pair {
        let cluster = shared_cluster();
        let pair = Pair { source: cluster.fresh_database().unwrap(), replica: cluster.fresh_database().unwrap() };
        for database in [&pair.source, &pair.replica] {
            database
                .client()
                .unwrap()
                .batch_execute(
                    "CREATE TABLE public.customers (id bigint PRIMARY KEY, plan text);
                     INSERT INTO public.customers SELECT g, 'free' FROM generate_series(1, 20) g;",
                )
                .unwrap();
        }
        pair
    }

    fn args(&self, extra: &[&str]) -> Vec<String> {
        let password = shared_cluster().superuser_password();
        let mut args = vec![
            "audit".to_owned(),
            "--source".to_owned(),
            self.source.url(SUPERUSER, password),
            "--replica".to_owned(),
            self.replica.url(SUPERUSER, password),
            "--table".to_owned(),
            "public.customers".to_owned(),
            "--cutover-ready".to_owned(),
        ];
        args.extend(extra.iter().map(|arg| (*arg).to_owned()));
        args
    }

    fn audit(&self, extra: &[&str]) -> Outcome {
        let args = self.args(extra);
        datadiff(&args.iter().map(String::as_str).collect::<Vec<_>>())
    }
}

#[test]
fn audit_report_refuses_what_is_not_a_regular_file_and_removes_nothing_it_did_not_write() {
    let pair = Pair::new();
    let dir = tempfile::tempdir().unwrap();
    for (path, was) in special_files(dir.path()) {
        let arg = path.display().to_string();
        // A passing audit and a refused one: neither replaces nor removes what is there.
        for extra in [&[][..], &["--max-rows", "0"]] {
            let outcome = pair.audit(&[&["--report", arg.as_str()][..], extra].concat());
            outcome
                .expect(2)
                .one_error_line()
                .stderr_has(&format!("error: --report {arg}: "))
                .stderr_has("not a regular file");
            assert_eq!(kind(&path), was, "{arg} is left as it was:\n{}", outcome.stderr);
        }
    }

    // A link to a regular file: the file gets the report, the link stays a link.
    let file = dir.path().join("cdc-parity-report.json");
    std::fs::write(&file, "{}").unwrap();
    let link = dir.path().join("latest.json");
    std::os::unix::fs::symlink("cdc-parity-report.json", &link).unwrap();
    pair.audit(&["--report", &link.display().to_string()]).expect(0);
    assert_eq!(kind(&link), "symlink");
    let report: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(report["status"], "PASS");
}

#[test]
fn an_audit_ended_by_sigterm_sigint_or_sighup_leaves_no_earlier_report() {
    let pair = Pair::new();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cdc-parity-report.json");
    let arg = path.display().to_string();
    for (name, number) in [("TERM", 15), ("INT", 2), ("HUP", 1)] {
        pair.audit(&["--report", &arg]).expect(0);
        assert!(std::fs::read_to_string(&path).unwrap().contains("\"PASS\""), "an earlier PASS report");

        // The replica's table is locked: the audit waits in its inventory.
        let mut locker = pair.replica.client().unwrap();
        let mut lock = locker.transaction().unwrap();
        lock.batch_execute("LOCK TABLE public.customers IN ACCESS EXCLUSIVE MODE").unwrap();
        let child = Command::new(env!("CARGO_BIN_EXE_datadiff"))
            .args(pair.args(&["--report", &arg]))
            .env_remove("RUST_LOG")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let started = Instant::now();
        while waiting_for_a_lock(&pair.replica) == 0 {
            assert!(started.elapsed() < TEST_BOUND, "the audit never waited for the lock");
            std::thread::sleep(Duration::from_millis(50));
        }
        assert!(Command::new("kill").args([format!("-{name}"), child.id().to_string()]).status().unwrap().success());
        let output = child.wait_with_output().unwrap();
        lock.rollback().unwrap();

        assert_eq!(output.status.signal(), Some(number), "the audit dies by SIG{name}");
        assert_eq!(kind(&path), "nothing", "after SIG{name} no earlier report stands for this audit");
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|entry| entry.unwrap().file_name()).collect();
        assert!(names.is_empty(), "nothing else is left either: {names:?}");
    }
}

/// Sessions of `database` waiting for a lock.
fn waiting_for_a_lock(database: &Database<'_>) -> i64 {
    database
        .client()
        .unwrap()
        .query_one(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'",
            &[],
        )
        .unwrap()
        .get(0)
}
