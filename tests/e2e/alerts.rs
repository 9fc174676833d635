//! Failure alerts after the run table: delivered to a webhook, or exit 1 when undelivered.

use crate::support::{CHECK, Fixture, Hook, MARKER, RUN_AT, closed_port};

#[test]
fn a_failure_alert_reaches_the_webhook_and_the_log() {
    let fixture = Fixture::new();
    let hook = Hook::start();
    let mut files = fixture.files();
    files.datadiff =
        Some(format!("alert_handlers:\n  webhook: {{url: \"{}\"}}\n  log: {{path: alerts.jsonl}}\n", hook.url));
    fixture.write(&files);
    fixture.import();
    fixture.run(&["run", "--all", "--at", RUN_AT]).expect(0);
    assert!(hook.bodies().is_empty(), "a PASS alerts nobody");

    fixture.replica_sql("DELETE FROM payments.transfers WHERE id BETWEEN 3 AND 5");
    fixture.run(&["run", "--all", "--force", "--at", RUN_AT]).expect(1);
    let bodies = hook.bodies();
    assert_eq!(bodies.len(), 1, "one alert per failed check: {bodies:?}");
    let alert: serde_json::Value = serde_json::from_str(&bodies[0]).unwrap();
    let text = alert.to_string();
    assert!(text.contains("payments/public.transfers") || text.contains(CHECK), "{text}");
    assert!(text.contains("3 fewer row"), "{text}");
    let log = std::fs::read_to_string(fixture.path().join("alerts.jsonl")).unwrap();
    assert_eq!(log.lines().count(), 1, "{log}");
}

#[test]
fn an_alert_no_destination_accepts_exits_one_with_one_line() {
    let fixture = Fixture::new();
    let mut files = fixture.files();
    files.datadiff =
        Some(format!("alert_handlers:\n  webhook: {{url: \"http://127.0.0.1:{}/hook\"}}\n", closed_port()));
    fixture.write(&files);
    fixture.import();
    fixture.run(&["run", "--all", "--at", RUN_AT]).expect(0);
    fixture.replica_sql("DELETE FROM payments.transfers WHERE id = 1");
    let outcome = fixture.run(&["run", "--all", "--force", "--at", RUN_AT]);
    outcome.expect(1).stderr_has("error: failure alert not delivered for").stderr_has(CHECK);
    assert!(!outcome.stderr.contains("/hook"), "the URL is not printed: {}", outcome.stderr);
}

/// `rerun_data_diff_check` alerts a failed remediation as upstream does (its
/// `_alert_data_diff_failures([summary])`), and a passing one alerts nobody.
#[test]
fn a_failed_remediation_alerts_and_an_undelivered_one_exits_one() {
    let fixture = Fixture::new();
    let hook = Hook::start();
    let mut files = fixture.files();
    files.datadiff = Some(format!("alert_handlers:\n  webhook: {{url: \"{}\"}}\n", hook.url));
    fixture.write(&files);
    fixture.import();
    fixture.replica_sql("DELETE FROM payments.transfers WHERE id = 7");
    fixture.run(&["run", "--all", "--at", RUN_AT]).expect(1);
    let failed_run = fixture.newest_run_id();
    assert_eq!(hook.bodies().len(), 1, "the run's own alert");

    let rerun = |reference: &str| {
        fixture.run(&["rerun", "--run-id", &failed_run, "--remediation-ref", reference, "--at", "2026-07-22T13:30:00Z"])
    };
    rerun("INC-1").expect(1);
    let bodies = hook.bodies();
    assert_eq!(bodies.len(), 2, "one alert for the failed remediation: {bodies:?}");
    let alert: serde_json::Value = serde_json::from_str(&bodies[1]).unwrap();
    let remediation = fixture.newest_run_id();
    assert_eq!(alert["run_id"], remediation.as_str());
    assert_eq!(alert["message"], "FAIL data-diff payments/public.transfers — target has 1 fewer row");
    assert!(alert["details"].as_str().unwrap().contains("\nattempt           : 2 (REMEDIATION)\n"), "{alert}");

    // The same failure with the only destination down: one error line, exit 1.
    let mut files = fixture.files();
    files.datadiff =
        Some(format!("alert_handlers:\n  webhook: {{url: \"http://127.0.0.1:{}/hook\"}}\n", closed_port()));
    fixture.write(&files);
    let outcome = rerun("INC-2");
    outcome.expect(1).stderr_has("error: failure alert not delivered for").stderr_has(CHECK);

    // A repaired replica: the remediation passes and nobody is alerted.
    let mut files = fixture.files();
    files.datadiff = Some(format!("alert_handlers:\n  webhook: {{url: \"{}\"}}\n", hook.url));
    fixture.write(&files);
    fixture.replica_sql(&format!(
        "INSERT INTO payments.transfers (id, updated_at, status, note) \
         VALUES (7, '2026-07-22 12:07:00+00', 'paid {MARKER} 7', 'note {MARKER} 7')"
    ));
    rerun("INC-3").expect(0);
    assert_eq!(hook.bodies().len(), 2, "a PASS alerts nobody");
}

/// A relative `--dir` (`datadiff run --dir project` from the project's parent, as a crontab
/// line run in a working directory does) appends the `log` alert to the project's file: the
/// relative path is resolved against the project directory once, never twice.
#[test]
fn a_relative_dir_appends_the_log_alert_to_the_projects_file() {
    let fixture = Fixture::new();
    let mut files = fixture.files();
    files.datadiff = Some("alert_handlers:\n  log: {path: alerts.jsonl}\n".to_owned());
    fixture.write(&files);
    fixture.import();
    fixture.replica_sql("DELETE FROM payments.transfers WHERE id = 4");
    let (parent, name) = (fixture.path().parent().unwrap(), fixture.path().file_name().unwrap());
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_datadiff"))
        .args(["run", "--all", "--at", RUN_AT, "--dir"])
        .arg(name)
        .current_dir(parent)
        .env_remove("RUST_LOG")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    // Exit 1 for the FAIL; the alert itself was delivered (no undelivered-alert line).
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(!stderr.contains("not delivered"), "{stderr}");
    let log = std::fs::read_to_string(fixture.path().join("alerts.jsonl")).unwrap_or_default();
    assert_eq!(log.lines().count(), 1, "one alert in the project's log: {log:?}\n{stderr}");
    let alert: serde_json::Value = serde_json::from_str(log.trim_end()).unwrap();
    assert_eq!(alert["message"], "FAIL data-diff payments/public.transfers — target has 1 fewer row");
    assert!(!fixture.path().join(name).exists(), "no doubled project directory inside the project");
}

/// Where a test's log file lives on a full disk: an 8 KiB tmpfs mounted for the test (as
/// root), whose first page holds the log and whose second page a filler file takes, so that
/// the log's page keeps the few free bytes a partial write fills. Without the right to mount,
/// the same partial write comes from a file-size limit (`prlimit --fsize`, SIGXFSZ ignored)
/// on the `datadiff` process. Unmounted when dropped.
struct FullDisk {
    dir: tempfile::TempDir,
    mounted: bool,
}

/// The log's earlier record fills this much of the disk's first 4 KiB page.
const EARLIER_RECORD_BYTES: usize = 4000;

impl FullDisk {
    fn new() -> FullDisk {
        let dir = tempfile::tempdir().unwrap();
        let mounted = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=8k,mode=0777", "datadiff-full-disk"])
            .arg(dir.path())
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|status| status.success());
        FullDisk { dir, mounted }
    }

    fn log(&self) -> std::path::PathBuf {
        self.dir.path().join("alerts.jsonl")
    }

    fn filler(&self) -> std::path::PathBuf {
        self.dir.path().join("filler")
    }

    /// Uses up every free page (only the log's page keeps room), or nothing without a mount.
    fn fill(&self) {
        if !self.mounted {
            return;
        }
        let mut filler = std::fs::File::create(self.filler()).unwrap();
        let page = [b'x'; 4096];
        while std::io::Write::write_all(&mut filler, &page).is_ok() {}
    }

    fn free(&self) {
        let _ = std::fs::remove_file(self.filler());
    }

    /// `datadiff args`, limited to the log's page when the disk is not a mount of its own.
    fn datadiff(&self, fixture: &Fixture, args: &[&str], full: bool) -> crate::support::Outcome {
        let dir = fixture.dir_arg();
        let mut all: Vec<&str> = args.to_vec();
        all.extend(["--dir", dir.as_str()]);
        let mut command = if self.mounted || !full {
            std::process::Command::new(env!("CARGO_BIN_EXE_datadiff"))
        } else {
            let mut command = std::process::Command::new("sh");
            command.args([
                "-c",
                "trap '' XFSZ; exec prlimit --fsize=4096 -- \"$@\"",
                "sh",
                env!("CARGO_BIN_EXE_datadiff"),
            ]);
            command
        };
        let output = command.args(&all).env_remove("RUST_LOG").output().unwrap();
        crate::support::Outcome {
            code: output.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }
}

impl Drop for FullDisk {
    fn drop(&mut self) {
        if self.mounted {
            let _ = std::process::Command::new("umount").arg(self.dir.path()).status();
        }
    }
}

/// On a full disk the `log` handler writes a record whole or not at all: a write that got only
/// part of the line in is undone, the alert counts as undelivered (exit 1 with the error line),
/// and once there is room again the next record starts on a line of its own.
#[test]
fn a_log_alert_on_a_full_disk_is_written_whole_or_not_at_all() {
    let fixture = Fixture::new();
    let disk = FullDisk::new();
    let log = disk.log();
    let mut files = fixture.files();
    files.datadiff = Some(format!("alert_handlers:\n  log: {{path: \"{}\"}}\n", log.display()));
    fixture.write(&files);
    fixture.import();
    fixture.replica_sql("DELETE FROM payments.transfers WHERE id = 9");
    let earlier = format!("{{\"earlier\":\"{}\"}}\n", "e".repeat(EARLIER_RECORD_BYTES - 15));
    assert_eq!(earlier.len(), EARLIER_RECORD_BYTES);
    std::fs::write(&log, &earlier).unwrap();
    disk.fill();

    let outcome = disk.datadiff(&fixture, &["run", "--all", "--at", RUN_AT], true);
    outcome.expect(1).stderr_has("error: failure alert not delivered for").stderr_has(CHECK);
    assert_eq!(fixture.attempts()[0].0, "FAIL", "the attempt is recorded whatever the alert");
    let kept = std::fs::read_to_string(&log).unwrap();
    assert!(kept == earlier, "the log holds the earlier record only, no part of the new one: {:?}", kept.get(3990..));

    disk.free();
    disk.datadiff(&fixture, &["run", "--all", "--force", "--at", RUN_AT], false).expect(1);
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|error| panic!("unreadable record ({error}): {line}")))
        .collect();
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert_eq!(lines[1]["message"], "FAIL data-diff payments/public.transfers — target has 1 fewer row");
}
