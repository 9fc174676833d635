//! `datadiff demo`: the story's rows in the backend while `--keep` holds it, and nothing left
//! behind afterwards — after Enter, after Ctrl-C, and without `--keep`.
//!
//! Each demo gets its own `TMPDIR`, so "nothing left" is checked exactly: that directory is
//! empty afterwards and no process names it. (It is world-writable and sticky, like `/tmp`:
//! when the tests run as root the demo's server and the testkit's watchdog run as another
//! account, which must reach its cluster directory and be able to remove it.)

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::datadiff_with;

/// The label before the backend URL in `--keep`'s connection section.
const BACKEND_URL_LABEL: &str = "backend (application role): ";

/// A temporary directory to be the demo's `TMPDIR`, with `/tmp`'s permissions.
fn demo_tmpdir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o1777)).unwrap();
    dir
}

/// Whether this process ignores SIGINT (its children inherit that).
fn sigint_ignored() -> bool {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let mask = status.lines().find_map(|line| line.strip_prefix("SigIgn:")).unwrap().trim();
    u64::from_str_radix(mask, 16).unwrap() & (1 << 1) != 0
}

/// Whether process `pid` runs (exists and is not a zombie waiting to be reaped).
fn running(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // `pid (comm) state ...`: the state follows the last parenthesis.
        Ok(stat) => stat.rsplit_once(')').is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

/// Processes whose command line names `path` (a server or a watchdog of a cluster under it).
fn processes_naming(path: &Path) -> Vec<String> {
    let needle = path.display().to_string();
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        if !entry.file_name().to_string_lossy().bytes().all(|byte| byte.is_ascii_digit()) {
            continue;
        }
        if let Ok(bytes) = std::fs::read(entry.path().join("cmdline")) {
            let line = String::from_utf8_lossy(&bytes).replace('\0', " ");
            if line.contains(&needle) {
                found.push(format!("{}: {line}", entry.file_name().to_string_lossy()));
            }
        }
    }
    found
}

/// Asserts that the demo left nothing in its `TMPDIR` and no process naming it.
#[track_caller]
fn assert_nothing_left(tmpdir: &Path) {
    let left: Vec<PathBuf> = std::fs::read_dir(tmpdir).unwrap().flatten().map(|entry| entry.path()).collect();
    assert!(left.is_empty(), "the demo left {left:?}");
    let processes = processes_naming(tmpdir);
    assert!(processes.is_empty(), "processes still running: {processes:?}");
}

/// Waits until `done` holds, for at most a minute (the watchdog cleans up after the process).
fn eventually(mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        if done() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    done()
}

/// A `demo --keep` waiting for Enter: its output so far and what it printed about itself.
struct Kept {
    child: Child,
    stdin: Option<ChildStdin>,
    reader: BufReader<ChildStdout>,
    stdout: String,
    backend_url: String,
    cluster_dir: PathBuf,
    tmpdir: tempfile::TempDir,
}

impl Kept {
    /// Starts `datadiff demo --keep` and reads its output until it waits.
    fn start() -> Kept {
        let tmpdir = demo_tmpdir();
        let mut child = Command::new(env!("CARGO_BIN_EXE_datadiff"))
            .args(["demo", "--keep"])
            .env("TMPDIR", tmpdir.path())
            // Every log line too must keep the passwords to itself.
            .env("RUST_LOG", "trace")
            .env_remove(datadiff_testkit::BINDIR_ENV)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take();
        let mut reader = BufReader::new(child.stdout.take().unwrap());
        let mut stdout = String::new();
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap() == 0 {
                let mut stderr = String::new();
                let _ = child.stderr.take().unwrap().read_to_string(&mut stderr);
                panic!("the demo ended before waiting ({:?})\nstdout:\n{stdout}\nstderr:\n{stderr}", child.wait());
            }
            stdout.push_str(&line);
            if line.starts_with("Clean up: press Enter") {
                break;
            }
        }
        let backend_url = stdout
            .lines()
            .find_map(|line| line.trim_start().strip_prefix(BACKEND_URL_LABEL))
            .unwrap_or_else(|| panic!("no backend URL in:\n{stdout}"))
            .trim()
            .to_owned();
        let project = stdout
            .lines()
            .find_map(|line| line.strip_prefix("Project directory: "))
            .unwrap_or_else(|| panic!("no project directory in:\n{stdout}"));
        let cluster_dir = Path::new(project.trim()).parent().unwrap().to_path_buf();
        Kept { child, stdin, reader, stdout, backend_url, cluster_dir, tmpdir }
    }

    /// The postmaster's pid, from its pid file.
    fn postmaster_pid(&self) -> u32 {
        let text = std::fs::read_to_string(self.cluster_dir.join("data/postmaster.pid")).unwrap();
        text.lines().next().unwrap().trim().parse().unwrap()
    }

    /// Every password the connection section printed (the part of each URL after the user).
    fn passwords(&self) -> Vec<String> {
        self.stdout
            .split("postgresql://")
            .skip(1)
            .filter_map(|rest| {
                let credentials = rest.split('@').next()?;
                Some(credentials.split_once(':')?.1.to_owned())
            })
            .collect()
    }
}

#[test]
fn demo_keep_holds_a_backend_with_the_whole_story_until_enter_then_removes_everything() {
    let mut kept = Kept::start();
    assert!(kept.cluster_dir.starts_with(kept.tmpdir.path()), "{}", kept.cluster_dir.display());
    assert!(kept.cluster_dir.join("project/config.yml").is_file(), "the project lives in the cluster's directory");
    let postmaster = kept.postmaster_pid();
    assert!(running(postmaster), "the server runs while the demo waits");

    // The backend, through the printed URL (the application role: reads are all it needs).
    let mut backend = postgres::Client::connect(&kept.backend_url, postgres::NoTls).unwrap();
    let slots: i64 = backend.query_one("SELECT count(*) FROM public.dd_run_slot_state", &[]).unwrap().get(0);
    assert!(slots >= 3, "{slots} slots");
    let drift: i64 = backend
        .query_one(
            "SELECT count(*) FROM public.dd_run_attempts a \
               JOIN public.dd_run_results r ON r.run_id = a.run_id \
              WHERE a.status = 'FAIL' AND r.check_type = 'row_checksum' AND r.status = 'FAIL'",
            &[],
        )
        .unwrap()
        .get(0);
    assert!(drift >= 1, "the drifted row fails row_checksum");
    // row_diff names the drifted row by key and column: transfer 75's amount.
    let differences = backend
        .query(
            "SELECT d.kind, d.key ->> 'id', lower(array_to_string(d.fields, ',')) \
               FROM public.datadiff_run_differences d JOIN public.dd_run_attempts a ON a.run_id = d.run_id \
              WHERE a.status = 'FAIL' AND d.check_type = 'row_diff'",
            &[],
        )
        .unwrap();
    assert!(!differences.is_empty(), "row_diff evidence of the failed runs");
    for row in &differences {
        let (kind, key, fields): (String, String, String) = (row.get(0), row.get(1), row.get(2));
        assert_eq!((kind.as_str(), key.as_str(), fields.as_str()), ("CHANGED", "75", "amount"));
    }
    let remediations = backend
        .query(
            "SELECT r.status, f.status, r.scheduled_for = f.scheduled_for, r.remediation_reference, \
                    r.attempt > f.attempt \
               FROM public.dd_run_attempts r \
               JOIN public.dd_run_attempts f ON f.run_id = r.rerun_of_run_id \
              WHERE r.trigger_type = 'REMEDIATION'",
            &[],
        )
        .unwrap();
    assert_eq!(remediations.len(), 1, "one remediation, linked to its failed run");
    let remediation = &remediations[0];
    assert_eq!(remediation.get::<_, String>(0), "PASS");
    assert_eq!(remediation.get::<_, String>(1), "FAIL");
    assert!(remediation.get::<_, bool>(2), "the remediation reran the failed run's slot");
    assert!(!remediation.get::<_, String>(3).trim().is_empty(), "with a reference");
    assert!(remediation.get::<_, bool>(4), "as a later attempt");
    let events: Vec<String> = backend
        .query("SELECT event_type FROM public.dd_watermark_events ORDER BY event_sequence", &[])
        .unwrap()
        .iter()
        .map(|row| row.get(0))
        .collect();
    assert_eq!(events.first().map(String::as_str), Some("INITIALIZE"), "{events:?}");
    let blocked = events.iter().position(|event| event == "INVALIDATE" || event == "BLOCK");
    let advanced = events.iter().rposition(|event| event == "ADVANCE");
    assert!(
        matches!((blocked, advanced), (Some(blocked), Some(advanced)) if blocked < advanced),
        "INITIALIZE … INVALIDATE or BLOCK … ADVANCE: {events:?}"
    );
    let status: String = backend
        .query_one(
            "SELECT verified_status FROM public.dd_watermark_state WHERE check_id IN \
               (SELECT check_id FROM public.dd_check_definitions WHERE full_check_name = $1)",
            &[&"warehouse/payments/public/Transfers"],
        )
        .unwrap()
        .get(0);
    assert_eq!(status, "CONTIGUOUS");
    if mariadb_installed() {
        assert_the_mariadb_check_passed(&mut backend);
    }
    // The backend's roles are separate: the application role cannot change the schema.
    assert!(backend.batch_execute("CREATE TABLE public.intruder (id int)").is_err(), "the app role has no DDL");
    drop(backend);

    // The commands it suggests work against what it keeps.
    let suggested: Vec<&str> = kept
        .stdout
        .lines()
        .skip_while(|line| !line.starts_with("Try, in another terminal:"))
        .skip(1)
        .take_while(|line| !line.trim().is_empty())
        .map(str::trim)
        .collect();
    assert!(suggested.len() >= 3, "{}", kept.stdout);
    for command in &suggested {
        let output = Command::new("/bin/sh").args(["-c", command]).output().unwrap();
        assert!(output.status.success(), "{command}: {}", String::from_utf8_lossy(&output.stderr));
    }

    // Passwords appear only in --keep's connection section, never before it.
    let mut passwords = kept.passwords();
    let mariadb_password = kept.stdout.lines().find_map(|line| {
        line.trim_start().strip_prefix("MariaDB source (read-only): ")?.split("--password=").nth(1)?.split(' ').next()
    });
    assert_eq!(mariadb_password.is_some(), mariadb_installed(), "{}", kept.stdout);
    assert_eq!(passwords.len(), 6, "five URLs and the psql example: {passwords:?}");
    passwords.extend(mariadb_password.map(str::to_owned));
    let story = kept.stdout.split("Connect (throwaway passwords").next().unwrap();
    for password in &passwords {
        assert!(password.len() >= 16, "a generated password: {password}");
        assert!(!story.contains(password.as_str()), "a password was printed before the connection section");
    }

    // Enter: the demo removes everything and exits 0.
    kept.stdin.take().unwrap().write_all(b"\n").unwrap();
    let mut rest = String::new();
    kept.reader.read_to_string(&mut rest).unwrap();
    let output = kept.child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "stderr: {stderr}");
    assert!(rest.contains("Stopped the server and removed"), "{rest}");
    for password in &passwords {
        assert!(!stderr.contains(password.as_str()), "a password on stderr");
    }
    assert!(!kept.cluster_dir.exists(), "the cluster directory is removed");
    // The server removes its pid file just before it exits: give it that moment.
    assert!(eventually(|| !running(postmaster)), "the server has stopped");
    assert_nothing_left(kept.tmpdir.path());
}

/// Whether MariaDB's server programs are installed: the demo then adds its tap-mysql part.
fn mariadb_installed() -> bool {
    datadiff_testkit::find_mariadb_binaries().is_ok()
}

/// The tap-mysql part's rows: one scheduled PASS of the MariaDB source's check, every check
/// type PASS with equal values on both sides (row_checksum included), on the revision that
/// names the source `tap-mysql`.
fn assert_the_mariadb_check_passed(backend: &mut postgres::Client) {
    let rows = backend
        .query(
            "SELECT a.status, d.source_type, r.check_type, r.status, r.source_value::text, r.target_value::text \
               FROM public.dd_run_attempts a \
               JOIN public.dd_check_definitions d ON d.check_id = a.check_id \
               JOIN public.dd_run_results r ON r.run_id = a.run_id \
              WHERE d.full_check_name = 'warehouse/shop/shop/Orders' ORDER BY r.check_type",
            &[],
        )
        .unwrap();
    let checks: Vec<String> = rows.iter().map(|row| row.get(2)).collect();
    assert_eq!(
        checks,
        [
            "distinct_key_count",
            "duplicate_key_count",
            "max_key",
            "min_key",
            "null_key_count",
            "row_checksum",
            "row_count",
            "schema_compatibility"
        ],
        "one attempt with every check type"
    );
    for row in &rows {
        let (attempt, source_type, check, status): (String, String, String, String) =
            (row.get(0), row.get(1), row.get(2), row.get(3));
        assert_eq!((attempt.as_str(), source_type.as_str(), status.as_str()), ("PASS", "tap-mysql", "PASS"), "{check}");
        if check != "schema_compatibility" {
            let (source, target): (Option<String>, Option<String>) = (row.get(4), row.get(5));
            assert!(source.is_some() && source == target, "{check}: {source:?} vs {target:?}");
        }
    }
}

#[test]
fn demo_keep_interrupted_by_ctrl_c_leaves_nothing_behind() {
    let mut kept = Kept::start();
    let postmaster = kept.postmaster_pid();
    let pid = kept.child.id().to_string();
    // A shell running these tests in the background without job control makes its children
    // ignore SIGINT, and the demo inherits that; SIGTERM then takes the same path (the process
    // dies without dropping the cluster).
    let signal = if sigint_ignored() { "TERM" } else { "INT" };
    let status = Command::new("/bin/sh").args(["-c", &format!("kill -{signal} {pid}")]).status().unwrap();
    assert!(status.success());
    let status = kept.child.wait().unwrap();
    assert_eq!(status.code(), None, "the demo dies by the signal: {status:?}");
    // The watchdog stops the server and removes the directory, project included.
    assert!(eventually(|| !kept.cluster_dir.exists()), "{} remains", kept.cluster_dir.display());
    assert!(eventually(|| !running(postmaster)), "the server still runs");
    assert!(eventually(|| processes_naming(kept.tmpdir.path()).is_empty()), "the watchdog still runs");
    assert_nothing_left(kept.tmpdir.path());
    drop(kept.stdin.take());
}

#[test]
fn demo_without_keep_tells_the_story_and_leaves_nothing() {
    let tmpdir = demo_tmpdir();
    let outcome = datadiff_with(&["demo"], &[("TMPDIR", tmpdir.path().to_str().unwrap())]);
    outcome.expect(0);
    // The story as printed: drift found, a remediation, the watermark advancing.
    outcome
        .stdout_has("row_checksum FAIL")
        .stdout_has("BLOCKED")
        .stdout_has("$ datadiff report --dir")
        .stdout_has("CHANGED")
        .stdout_has("$ datadiff rerun_data_diff_check")
        .stdout_has("REMEDIATION")
        .stdout_has("CONTIGUOUS")
        .stdout_has("max lag 02:00:00: every current check is CONTIGUOUS within it");
    let events: Vec<&str> = outcome
        .stdout
        .lines()
        .skip_while(|line| !line.starts_with("The watermark's history"))
        .filter_map(|line| line.split_whitespace().next())
        .filter(|word| ["INITIALIZE", "INVALIDATE", "BLOCK", "ADVANCE", "CONFIRM"].contains(word))
        .collect();
    assert_eq!(events.first(), Some(&"INITIALIZE"), "{}", outcome.stdout);
    assert_eq!(events.last(), Some(&"ADVANCE"), "{}", outcome.stdout);
    assert!(events.contains(&"BLOCK") || events.contains(&"INVALIDATE"), "{events:?}");
    // The tap-mysql part, where MariaDB is installed: the MariaDB source's check passes.
    if mariadb_installed() {
        outcome
            .stdout_has("[9/9] Adding a MariaDB source (tap-mysql)")
            .stdout_has("engine: mariadb")
            .stdout_has("--target warehouse --tap shop")
            .stdout_has("warehouse/shop/shop/Orders  PASS");
        assert!(!outcome.stdout.contains("MariaDB not found"), "{}", outcome.stdout);
    } else {
        outcome.stdout_has("MariaDB not found: the tap-mysql part is skipped; apt-get install mariadb-server");
    }
    // No URL, so no password, without --keep.
    assert!(!outcome.stdout.contains("postgresql://"), "{}", outcome.stdout);
    assert!(!outcome.stdout.contains("--password="), "{}", outcome.stdout);
    assert!(outcome.stderr.is_empty(), "stderr: {}", outcome.stderr);
    assert_nothing_left(tmpdir.path());
}

#[test]
fn demo_without_mariadb_says_so_in_one_line_and_runs_on_postgresql_alone() {
    let tmpdir = demo_tmpdir();
    let outcome = datadiff_with(
        &["demo"],
        &[
            (datadiff_testkit::MARIADB_BINDIR_ENV, "/nonexistent/mariadb/bin"),
            ("TMPDIR", tmpdir.path().to_str().unwrap()),
        ],
    );
    outcome.expect(0);
    let skipped: Vec<&str> = outcome.stdout.lines().filter(|line| line.contains("MariaDB")).collect();
    assert_eq!(
        skipped,
        ["      MariaDB not found: the tap-mysql part is skipped; apt-get install mariadb-server"],
        "{}",
        outcome.stdout
    );
    outcome.stdout_has("[8/8] Running the next slot").stdout_has("max lag 02:00:00");
    assert!(!outcome.stdout.contains("tap-mysql)"), "{}", outcome.stdout);
    assert!(outcome.stderr.is_empty(), "stderr: {}", outcome.stderr);
    assert_nothing_left(tmpdir.path());
}

#[test]
fn demo_without_server_binaries_says_what_to_install_in_one_line() {
    let tmpdir = demo_tmpdir();
    let outcome = datadiff_with(
        &["demo"],
        &[(datadiff_testkit::BINDIR_ENV, "/nonexistent/postgresql/bin"), ("TMPDIR", tmpdir.path().to_str().unwrap())],
    );
    outcome.expect(2).one_error_line().stderr_has("apt-get install postgresql");
    assert_eq!(outcome.stderr.lines().count(), 1, "{}", outcome.stderr);
    assert_nothing_left(tmpdir.path());
}
