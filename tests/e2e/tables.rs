//! Tables on a terminal: every table datadiff prints, rendered through a real pseudo-terminal
//! (`script`, util-linux) at 80 and 120 columns, keeps every id, check name and timestamp
//! whole; a pipe (and `--wide`) keeps the full table, one line per row.
//!
//! The read-only commands (list, reports, doctor) run twice, into a pipe and on the terminal:
//! every word of the piped output must appear, whole, at least as often on the terminal,
//! and every terminal line fits the width unless a single word longer than the room (a run
//! id, a query fingerprint) overflows it. `run` and `rerun` write attempts, so their terminal
//! output is checked against the backend: the run ids, check name and window bounds whole.

use std::collections::BTreeMap;
use std::process::{Command, Stdio};

use crate::support::{CHECK, Fixture, Outcome, RUN_AT};

const WIDTHS: [usize; 2] = [80, 120];

/// `text` single-quoted for `/bin/sh`.
fn quoted(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// Runs `datadiff <args> --dir <project>` with stdout on a pseudo-terminal of `width`
/// columns (`COLUMNS`, which datadiff reads before asking the terminal).
fn on_terminal(fixture: &Fixture, args: &[&str], width: usize) -> Outcome {
    let dir = fixture.dir_arg();
    let mut words: Vec<String> = vec![quoted(env!("CARGO_BIN_EXE_datadiff"))];
    words.extend(args.iter().map(|arg| quoted(arg)));
    words.extend(["--dir".to_owned(), quoted(&dir)]);
    // stderr goes to a file so that only stdout is on the terminal's transcript.
    let scratch = tempfile::tempdir().unwrap();
    let stderr_path = scratch.path().join("stderr");
    let command = format!("{} 2>{}", words.join(" "), quoted(&stderr_path.display().to_string()));
    let mut process = Command::new("script");
    process.args(["-qec", &command, "/dev/null"]).stdin(Stdio::null()).env("COLUMNS", width.to_string());
    for name in ["RUST_LOG", "PGPASSWORD", "PGPASSFILE", "PGUSER", "PGHOST", "PGPORT", "PGDATABASE", "PGSSLMODE"] {
        process.env_remove(name);
    }
    let output = process.output().expect("script (util-linux) runs");
    Outcome {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).replace("\r\n", "\n"),
        stderr: std::fs::read_to_string(&stderr_path).unwrap_or_default(),
    }
}

/// How often each word occurs (runs of dashes, the tables' rules, left out).
fn words(text: &str) -> BTreeMap<&str, usize> {
    let mut counts = BTreeMap::new();
    for word in text.split_whitespace().filter(|word| !word.chars().all(|c| c == '-')) {
        *counts.entry(word).or_insert(0) += 1;
    }
    counts
}

/// Every line fits `width`, unless it overflows by one word longer than 30 characters (an
/// id, a fingerprint), which is never cut.
#[track_caller]
fn fits(text: &str, width: usize, what: &str) {
    for line in text.lines() {
        let long_word = line.split_whitespace().any(|word| word.chars().count() > 30);
        assert!(line.chars().count() <= width || long_word, "{what} at {width} columns: {line:?}\n{text}");
    }
}

/// Every word of `piped` whole in `terminal`, as often.
#[track_caller]
fn nothing_cut(piped: &str, terminal: &str, what: &str) {
    let on_terminal = words(terminal);
    for (word, count) in words(piped) {
        let found = on_terminal.get(word).copied().unwrap_or(0);
        assert!(found >= count, "{what}: {word:?} {count}× in the pipe, {found}× on the terminal:\n{terminal}");
    }
}

/// `(run_id, full_check_name)` of every attempt.
fn run_ids(fixture: &Fixture) -> Vec<String> {
    fixture
        .backend_sql()
        .query("SELECT run_id::text FROM public.dd_run_attempts ORDER BY started_at, attempt", &[])
        .unwrap()
        .iter()
        .map(|row| row.get(0))
        .collect()
}

#[test]
fn every_table_fits_80_and_120_columns_without_cutting_an_id_a_name_or_a_timestamp() {
    let fixture = Fixture::new();
    let mut files = fixture.files();
    files.datadiff = Some(format!("checks:\n  {CHECK}:\n    row_diff: {{max_examples: 10}}\n"));
    fixture.write(&files);
    fixture.import();
    fixture.replica_sql(
        "UPDATE payments.transfers SET note = 'drifted' WHERE id IN (1, 2);
         DELETE FROM payments.transfers WHERE id = 40;",
    );

    // run, on an 80-column terminal: FAIL; its run id, the check and the window whole.
    let run = on_terminal(&fixture, &["run_data_diff_checks", "--all", "--at", RUN_AT], 80);
    run.expect(1);
    let failed = run_ids(&fixture).pop().unwrap();
    for whole in [failed.as_str(), CHECK, "2026-07-22T12:00:00+00:00", "2026-07-22T13:00:00+00:00", "FAIL"] {
        assert!(run.stdout.split_whitespace().any(|word| word == whole), "{whole} whole in:\n{}", run.stdout);
    }
    fits(&run.stdout, 80, "run");
    // The same table in a pipe is one line per row, wider than 80 columns.
    let later = fixture.run(&["run_data_diff_checks", "--all", "--at", "2026-07-22T14:05:00Z", "--force"]);
    later.expect(1);
    let piped_row = later.stdout.lines().nth(2).unwrap();
    assert!(piped_row.chars().count() > 120, "{}", later.stdout);

    // The read-only tables while the failure is open, then after its remediation.
    let at = ["--at", "2026-07-22T14:30:00Z"];
    let open: Vec<Vec<&str>> = vec![
        vec!["report", "watermarks", at[0], at[1]],
        vec!["report", "daily"],
        vec!["report", "failures"],
        vec!["report", "differences", "--run-id", &failed],
        vec!["report", "run", "--run-id", &failed],
    ];
    read_only_tables(&fixture, &open);
    // rerun, on a 120-column terminal, after the replica is repaired: both run ids whole.
    fixture.replica_sql(
        "UPDATE payments.transfers SET note = 'note zq-ROWVALUE-4d1e ' || id WHERE id IN (1, 2);
         INSERT INTO payments.transfers (id, updated_at, status, note)
             VALUES (40, timestamptz '2026-07-22 12:00:00+00' + 40 * interval '1 minute',
                     'paid zq-ROWVALUE-4d1e 40', 'note zq-ROWVALUE-4d1e 40');",
    );
    let rerun = on_terminal(
        &fixture,
        &[
            "rerun_data_diff_check",
            "--run-id",
            &failed,
            "--remediation-ref",
            "INC-1234",
            "--at",
            "2026-07-22T14:10:00Z",
        ],
        120,
    );
    rerun.expect(0);
    let remediation = run_ids(&fixture).pop().unwrap();
    for whole in [failed.as_str(), remediation.as_str(), CHECK, "INC-1234", "2026-07-22T12:00:00+00:00"] {
        assert!(rerun.stdout.split_whitespace().any(|word| word == whole), "{whole} whole in:\n{}", rerun.stdout);
    }
    fits(&rerun.stdout, 120, "rerun");

    let remediated: Vec<Vec<&str>> = vec![
        vec!["list_data_diff_checks"],
        vec!["list_data_diff_checks", "--include-versioned"],
        vec!["report", "watermarks", at[0], at[1]],
        vec!["report", "remediations"],
        vec!["doctor"],
    ];
    read_only_tables(&fixture, &remediated);
    let reports = on_terminal(&fixture, &["report", "remediations"], 80).stdout;
    for whole in [&failed, &remediation] {
        assert!(reports.split_whitespace().any(|word| word == whole), "{whole} whole in:\n{reports}");
    }
}

/// Each command into a pipe and on terminals of [`WIDTHS`]: the pipe's words whole on the
/// terminal, every line fitting; with `--wide`, the pipe's text on the terminal too.
fn read_only_tables(fixture: &Fixture, commands: &[Vec<&str>]) {
    for args in commands {
        let what = args.join(" ");
        let piped = fixture.run(args);
        assert!(piped.code == 0 || piped.code == 1, "{what}: {}", piped.stderr);
        assert!(!piped.stdout.starts_with("No "), "{what} printed a table: {}", piped.stdout);
        for width in WIDTHS {
            let terminal = on_terminal(fixture, args, width);
            terminal.expect(piped.code);
            nothing_cut(&piped.stdout, &terminal.stdout, &what);
            fits(&terminal.stdout, width, &what);
        }
        if what != "doctor" {
            // (doctor's findings time their connections, so two runs may differ.)
            let mut wide = args.clone();
            wide.push("--wide");
            assert_eq!(on_terminal(fixture, &wide, 80).stdout, piped.stdout, "{what} --wide");
        }
    }
}
