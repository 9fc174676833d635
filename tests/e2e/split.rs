//! One table's work divided into key ranges: `audit --jobs N` compares the table's parts on N
//! pairs of sessions and gives the report `--jobs 1` gives, differences planted on the first
//! and last keys of parts included; `run --row-diff-parts` stores what the undivided window
//! stores, with the parts shared by two processes on one backend and either of them killed
//! mid-way.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use datadiff_testkit::{SUPERUSER, shared_cluster};
use serde_json::Value as Json;

use crate::support::{Fixture, Outcome, datadiff};

/// 2,000 rows keyed by `id` (integer), `code` (text) and `(code, line)` (composite), with
/// differences planted on the replica throughout: on keys 1 and 2,000 (the first and last
/// key of the first and last part), on every 250th key (the quantile bounds of 2, 4 and 8
/// parts: the first key of a part), just below them (the last key of a part), and in
/// between.
fn tables(fixture: &Fixture) {
    let create = "CREATE TABLE public.wide (id bigint PRIMARY KEY, code text UNIQUE NOT NULL, line int NOT NULL, \
                  note text, amount numeric);
                  INSERT INTO public.wide SELECT g, 'c-' || lpad(g::text, 5, '0') || CASE WHEN g % 3 = 0 THEN 'é' ELSE '' END, \
                  g % 7, 'note ' || g, g * 1.5 FROM generate_series(1, 2000) g;";
    fixture.source.client().unwrap().batch_execute(create).unwrap();
    fixture.replica.client().unwrap().batch_execute(create).unwrap();
    fixture
        .replica
        .client()
        .unwrap()
        .batch_execute(
            "DELETE FROM public.wide WHERE id IN (1, 250, 499, 1000, 1750, 2000);
             UPDATE public.wide SET note = 'changed' WHERE id IN (2, 251, 500, 749, 1001, 1999);
             UPDATE public.wide SET amount = amount + 1 WHERE id IN (750, 1250, 1500);
             INSERT INTO public.wide VALUES (0, 'c-', 0, 'extra', 0), (2001, 'c-99999', 1, 'extra', 1),
                 (-5, 'a', 2, 'extra', 2), (1000000, 'zz', 3, 'extra', 3);",
        )
        .unwrap();
}

/// The report's fields that describe the comparison (not its times).
fn verdict(outcome: &Outcome) -> Json {
    let report = outcome.json();
    let mut kept = serde_json::Map::new();
    for field in [
        "status",
        "reason",
        "source_rows",
        "replica_rows",
        "matched",
        "missing",
        "extra",
        "changed",
        "difference_count",
        "examples",
        "examples_truncated",
    ] {
        kept.insert(field.to_owned(), report[field].clone());
    }
    Json::Object(kept)
}

#[test]
fn audit_jobs_gives_the_report_of_one_job_for_integer_text_and_composite_keys() {
    let fixture = Fixture::new();
    tables(&fixture);
    let password = shared_cluster().superuser_password();
    let (source, replica) = (fixture.source.url(SUPERUSER, password), fixture.replica.url(SUPERUSER, password));
    let audit = |key: &str, strategy: &str, jobs: &str| {
        datadiff(&[
            "audit",
            "--source",
            &source,
            "--replica",
            &replica,
            "--table",
            "public.wide",
            "--key",
            key,
            "--cutover-ready",
            "--max-examples",
            "100",
            "--strategy",
            strategy,
            "--jobs",
            jobs,
            "-v",
        ])
    };
    for key in ["id", "code", "code,line"] {
        for strategy in ["stream", "segments"] {
            let one = audit(key, strategy, "1");
            one.expect(1);
            assert!(!one.stderr.contains("divided into key ranges"), "--jobs 1 is one unit:\n{}", one.stderr);
            let expected = verdict(&one);
            assert_eq!(expected["difference_count"], 19, "{key} {strategy}: {expected}");
            for jobs in ["2", "4", "8"] {
                let split = audit(key, strategy, jobs);
                split.expect(1).stderr_has("the scan is divided into key ranges");
                assert_eq!(verdict(&split), expected, "--key {key} --strategy {strategy} --jobs {jobs}");
            }
        }
    }
    // Out of range: a usage error naming the flag.
    audit("id", "stream", "0").expect(2).stderr_has("--jobs must be between 1 and 64");
}

/// The stored `row_diff` result (values and error) and evidence of the newest attempt.
fn stored_row_diff(fixture: &Fixture) -> (Json, Option<String>, Vec<(i32, String, Json)>) {
    let run_id = fixture.newest_run_id();
    let mut backend = fixture.backend_sql();
    let result = backend
        .query_one(
            "SELECT target_value::text, error FROM public.dd_run_results WHERE run_id = $1::text::uuid \
             AND check_type = 'row_diff'",
            &[&run_id],
        )
        .unwrap();
    let value: String = result.get(0);
    let error: Option<String> = result.get(1);
    let evidence = backend
        .query(
            "SELECT ordinal, kind, key FROM public.datadiff_run_differences WHERE run_id = $1::text::uuid ORDER BY ordinal",
            &[&run_id],
        )
        .unwrap()
        .iter()
        .map(|row| (row.get(0), row.get(1), row.get(2)))
        .collect();
    let error = error.map(|error| error.split(" (datadiff report").next().unwrap_or_default().to_owned());
    (serde_json::from_str(&value).unwrap(), error, evidence)
}

/// `run --jobs 4` with one check gives its window four threads and four key ranges, and
/// `--row-diff-parts 7` seven: the stored result and evidence are the undivided window's.
#[test]
fn run_jobs_left_over_divide_a_window_and_store_what_the_undivided_window_stores() {
    let mut answers = Vec::new();
    for args in [&["--jobs", "1"][..], &["--jobs", "4"], &["--jobs", "2", "--row-diff-parts", "7"]] {
        let fixture = Fixture::new();
        let mut files = fixture.files();
        files.datadiff = Some(format!("checks:\n  {}:\n    row_diff: {{max_examples: 10}}\n", crate::support::CHECK));
        fixture.write(&files);
        fixture.import();
        fixture.replica_sql(
            "UPDATE payments.transfers SET note = 'drifted' WHERE id IN (0, 12, 13, 25, 37, 49);
             DELETE FROM payments.transfers WHERE id IN (1, 24, 48);
             INSERT INTO payments.transfers (id, updated_at, status, note)
                 VALUES (-1, '2026-07-22 12:30:30+00', 'extra', 'extra'), (100, '2026-07-22 12:30:30+00', 'extra', 'extra');",
        );
        let run = fixture.run(&[&["run", "--all", "--at", crate::support::RUN_AT, "-v"][..], args].concat());
        run.expect(1);
        let divided = run.stderr.contains("row_diff divides the window into key ranges");
        assert_eq!(divided, args != ["--jobs", "1"], "{args:?}:\n{}", run.stderr);
        answers.push(stored_row_diff(&fixture));
    }
    let (value, error, evidence) = &answers[0];
    assert_eq!(error.as_deref(), Some("row_diff FAIL: 3 missing, 2 extra, 6 changed"), "{value}");
    assert_eq!(evidence.len(), 10, "max_examples: {evidence:?}");
    assert_eq!(answers[1], answers[0], "--jobs 4");
    assert_eq!(answers[2], answers[0], "--jobs 2 --row-diff-parts 7");
}

/// 2,000 rows in the window on both sides (ids 0 to 1,999), `row_diff` the only data check,
/// and differences planted on the replica at the first and last keys of the table and of
/// the parts 16 quantile bounds make (every 125th key: the first key of a part, and the key
/// below it: the last key of the part before), plus extra keys below and above.
fn shared_window_fixture() -> Fixture {
    let fixture = Fixture::new();
    let mut files = fixture.files();
    files.tap = files.tap.replace(crate::support::ALL_CHECKS, "[schema_compatibility]");
    files.datadiff = Some(format!("checks:\n  {}:\n    row_diff: {{max_examples: 100}}\n", crate::support::CHECK));
    fixture.write(&files);
    fixture.import();
    let more = |table: &str| {
        format!(
            "INSERT INTO {table} (id, updated_at, status, note) SELECT g, timestamptz '2026-07-22 12:00:00+00' + \
             g * interval '1 second', 'paid ' || g, 'note ' || g FROM generate_series(50, 1999) g;"
        )
    };
    fixture.source.client().unwrap().batch_execute(&more("public.transfers")).unwrap();
    fixture.replica_sql(&more("payments.transfers"));
    fixture.replica_sql(
        "DELETE FROM payments.transfers WHERE id IN (0, 125, 500, 999, 1500, 1999);
         UPDATE payments.transfers SET note = 'changed' WHERE id IN (1, 124, 250, 749, 1000, 1624, 1998);
         UPDATE payments.transfers SET status = 'changed' WHERE id IN (375, 874, 1125, 1875);
         INSERT INTO payments.transfers (id, updated_at, status, note) VALUES
             (-3, '2026-07-22 12:30:00+00', 'extra', 'extra'), (3000, '2026-07-22 12:30:00+00', 'extra', 'extra'),
             (5000, '2026-07-22 12:59:59+00', 'extra', 'extra');",
    );
    fixture
}

/// What the attempt stored, its run id written `RUN` and times left out: its status and
/// error, the results, the evidence rows, the slot state and the watermark state.
fn stored_attempt(fixture: &Fixture) -> Vec<String> {
    let run_id = fixture.newest_run_id();
    let mut backend = fixture.backend_sql();
    let queries = [
        "SELECT count(*)::text FROM public.dd_run_attempts",
        "SELECT status || ' ' || coalesce(error, '') FROM public.dd_run_attempts",
        "SELECT check_type || ' ' || status || ' ' || source_value::text || ' ' || target_value::text || ' ' || \
         coalesce(error, '') FROM public.dd_run_results ORDER BY check_type",
        "SELECT ordinal || ' ' || kind || ' ' || key::text || ' ' || fields::text FROM public.datadiff_run_differences \
         ORDER BY ordinal",
        "SELECT status || ' ' || window_start || ' ' || window_end || ' ' || attempt FROM public.dd_run_slot_state",
        "SELECT (to_jsonb(w) - 'check_id' - 'evaluated_run_id' - 'updated_at')::text FROM public.dd_watermark_state w",
    ];
    let mut stored = Vec::new();
    for query in queries {
        for row in backend.query(query, &[]).unwrap() {
            let text: String = row.get(0);
            stored.push(text.replace(&run_id, "RUN"));
        }
    }
    stored
}

/// A `datadiff run` of the fixture's project, spawned (not waited for), its stderr kept.
fn spawn_run(fixture: &Fixture, extra: &[&str]) -> Child {
    let dir = fixture.dir_arg();
    Command::new(env!("CARGO_BIN_EXE_datadiff"))
        .args(["run", "--all", "--at", crate::support::RUN_AT, "--jobs", "1", "-v", "--dir", dir.as_str()])
        .args(extra)
        .env_remove("RUST_LOG")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// Waits until `sql` (a count on the backend) is at least one: a guard, not a timing
/// assertion (it fails only after two minutes).
fn wait_for(fixture: &Fixture, sql: &str, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while fixture.count(sql) == 0 {
        assert!(Instant::now() < deadline, "{what} never happened");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Victim {
    Owner,
    Joiner,
}

/// Two `run` processes share one divided window (`--row-diff-parts 16`) on one backend: the
/// owner starts the attempt and divides it, the second process joins it; `victim` is killed
/// (SIGKILL) while it holds a part it has claimed — the replica's table is locked meanwhile,
/// so every part's comparison waits — and the other finishes the window. The killed
/// process's part is compared again by the survivor, and what the attempt stored is what an
/// undivided run of the same tables on another backend stores.
fn two_processes_share_a_window_and_one_is_killed(victim: Victim) {
    let undivided = shared_window_fixture();
    undivided.run(&["run", "--all", "--at", crate::support::RUN_AT, "--jobs", "1", "-v"]).expect(1);
    let expected = stored_attempt(&undivided);
    assert!(expected.iter().any(|line| line.starts_with("row_diff FAIL")), "{expected:#?}");
    assert_eq!(undivided.count("SELECT count(*) FROM public.datadiff_run_parts"), 0, "one unit");

    let fixture = shared_window_fixture();
    let mut locker = fixture.replica.client().unwrap();
    let mut lock = locker.transaction().unwrap();
    lock.batch_execute("LOCK TABLE payments.transfers IN ACCESS EXCLUSIVE MODE").unwrap();

    let owner = spawn_run(&fixture, &["--row-diff-parts", "16"]);
    let claimed_by = |child: &Child| {
        format!("SELECT count(*) FROM public.datadiff_run_parts WHERE claimed_by LIKE '%:{}'", child.id())
    };
    wait_for(&fixture, &claimed_by(&owner), "the owner's claim");
    let joiner = spawn_run(&fixture, &[]);
    wait_for(&fixture, &claimed_by(&joiner), "the joiner's claim");
    let parts = fixture.count("SELECT count(*) FROM public.datadiff_run_parts");
    assert!(parts >= 8, "{parts} parts");

    let (mut killed, survivor) = match victim {
        Victim::Owner => (owner, joiner),
        Victim::Joiner => (joiner, owner),
    };
    let held: i32 = fixture
        .backend_sql()
        .query_one(
            &format!("SELECT part_index FROM public.datadiff_run_parts WHERE claimed_by LIKE '%:{}'", killed.id()),
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(
        fixture.count(&format!(
            "SELECT count(*) FROM public.datadiff_run_parts WHERE part_index = {held} AND finished_at IS NULL"
        )),
        1,
        "killed mid-way: its part is not finished"
    );
    killed.kill().unwrap();
    killed.wait().unwrap();
    lock.rollback().unwrap();

    let survivor_pid = survivor.id();
    let output = survivor.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "the survivor reports the FAIL:\n{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");

    // Every part finished; the killed process's part was compared again by the survivor.
    assert_eq!(fixture.count("SELECT count(*) FROM public.datadiff_run_parts WHERE finished_at IS NULL"), 0);
    assert_eq!(
        fixture.count(&format!(
            "SELECT count(*) FROM public.datadiff_run_parts WHERE part_index = {held} \
             AND claimed_by LIKE '%:{survivor_pid}' AND finished_at IS NOT NULL"
        )),
        1,
        "part {held} recomputed by the survivor"
    );
    assert_eq!(stored_attempt(&fixture), expected, "{victim:?} killed");
}

#[test]
fn two_processes_share_a_window_and_the_joiner_killed_mid_way_loses_only_its_part() {
    two_processes_share_a_window_and_one_is_killed(Victim::Joiner);
}

#[test]
fn two_processes_share_a_window_and_the_owner_killed_mid_way_loses_only_its_part() {
    two_processes_share_a_window_and_one_is_killed(Victim::Owner);
}
