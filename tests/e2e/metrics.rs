//! `report metrics`: the Prometheus text exposition format after real runs, read back with an
//! independent parser (the `prometheus-parse` crate) and checked value by value.

use chrono::{DateTime, Utc};
use prometheus_parse::{Scrape, Value};

use crate::support::{Fixture, RUN_AT};

/// The labels every per-check sample of the fixture's one check carries.
const CHECK_LABELS: [(&str, &str); 4] =
    [("target", "postgres"), ("tap", "payments"), ("schema", "public"), ("table", "transfers")];

fn parse(text: &str) -> Scrape {
    Scrape::parse(text.lines().map(|line| Ok(line.to_owned()))).expect("the exposition format parses")
}

fn unix(text: &str) -> f64 {
    DateTime::parse_from_rfc3339(text).unwrap().with_timezone(&Utc).timestamp() as f64
}

/// The value of the one gauge `name` whose labels are exactly the check's plus `extra`.
#[track_caller]
fn gauge(scrape: &Scrape, name: &str, extra: &[(&str, &str)]) -> f64 {
    let wanted: Vec<(&str, &str)> = CHECK_LABELS.iter().copied().chain(extra.iter().copied()).collect();
    let found: Vec<f64> = scrape
        .samples
        .iter()
        .filter(|sample| sample.metric == name)
        .filter(|sample| {
            sample.labels.len() == wanted.len()
                && wanted.iter().all(|(key, value)| sample.labels.get(key) == Some(value))
        })
        .map(|sample| match sample.value {
            Value::Gauge(value) => value,
            ref other => panic!("{name} is not a gauge: {other:?}"),
        })
        .collect();
    assert_eq!(found.len(), 1, "one {name} sample with {wanted:?}: {:#?}", scrape.samples);
    found[0]
}

/// Whether any sample of `name` exists.
fn has(scrape: &Scrape, name: &str) -> bool {
    scrape.samples.iter().any(|sample| sample.metric == name)
}

/// The one sample set to 1 among a status family's samples, and that every other is 0.
#[track_caller]
fn status_of(scrape: &Scrape, name: &str, statuses: &[&str]) -> Option<String> {
    let mut set = None;
    for status in statuses {
        let value = gauge(scrape, name, &[("status", status)]);
        if value == 1.0 {
            assert!(set.is_none(), "{name}: two statuses set");
            set = Some((*status).to_owned());
        } else {
            assert_eq!(value, 0.0, "{name}{{status={status}}}");
        }
    }
    set
}

const VERIFIED: [&str; 3] = ["CONTIGUOUS", "BLOCKED", "NOT_RUN"];
const ATTEMPT: [&str; 5] = ["RUNNING", "PASS", "FAIL", "ERROR", "DEFERRED"];

#[test]
fn metrics_follow_the_watermark_the_newest_attempt_and_open_failures() {
    let fixture = Fixture::new();
    fixture.import();

    // Before any run: NOT_RUN, no verified end, no attempt, no failure.
    let before = fixture.run(&["report", "metrics", "--at", "2026-07-22T12:30:00Z"]);
    let scrape = parse(&before.expect(0).stdout);
    assert_eq!(status_of(&scrape, "datadiff_verified_status", &VERIFIED).as_deref(), Some("NOT_RUN"));
    assert_eq!(status_of(&scrape, "datadiff_last_attempt_status", &ATTEMPT), None);
    for absent in [
        "datadiff_verified_end_timestamp_seconds",
        "datadiff_verification_lag_seconds",
        "datadiff_last_attempt_age_seconds",
    ] {
        assert!(!has(&scrape, absent), "{absent} before any run:\n{}", before.stdout);
    }
    assert_eq!(gauge(&scrape, "datadiff_open_failures", &[]), 0.0);

    // A passing run at 13:05 verifies [12:00, 13:00).
    fixture.run(&["run", "--all", "--at", RUN_AT]).expect(0);
    let at = "2026-07-22T13:30:00Z";
    let passed = fixture.run(&["report", "metrics", "--at", at]);
    let scrape = parse(&passed.expect(0).stdout);
    let verified_end = gauge(&scrape, "datadiff_verified_end_timestamp_seconds", &[]);
    assert_eq!(verified_end, unix("2026-07-22T13:00:00Z"));
    assert_eq!(gauge(&scrape, "datadiff_verification_lag_seconds", &[]), unix(at) - verified_end);
    assert_eq!(status_of(&scrape, "datadiff_verified_status", &VERIFIED).as_deref(), Some("CONTIGUOUS"));
    assert_eq!(status_of(&scrape, "datadiff_last_attempt_status", &ATTEMPT).as_deref(), Some("PASS"));
    // `--at` is every recorded time of the run: it finished at 13:05.
    let finished: DateTime<Utc> =
        fixture.backend_sql().query_one("SELECT max(finished_at) FROM public.dd_run_attempts", &[]).unwrap().get(0);
    assert_eq!(finished.timestamp() as f64, unix(RUN_AT));
    assert_eq!(gauge(&scrape, "datadiff_last_attempt_timestamp_seconds", &[]), unix(RUN_AT));
    assert_eq!(gauge(&scrape, "datadiff_last_attempt_age_seconds", &[]), unix(at) - unix(RUN_AT));
    assert_eq!(gauge(&scrape, "datadiff_open_failures", &[]), 0.0);
    let report_time = scrape.samples.iter().find(|sample| sample.metric == "datadiff_report_timestamp_seconds");
    assert_eq!(report_time.map(|sample| &sample.value), Some(&Value::Gauge(unix(at))));
    for family in ["datadiff_verified_status", "datadiff_open_failures", "datadiff_verification_lag_seconds"] {
        assert!(scrape.docs.get(family).is_some_and(|help| !help.is_empty()), "{family} has a HELP line");
        assert!(passed.stdout.contains(&format!("# TYPE {family} gauge\n")), "{family} is typed");
    }

    // A row only the source has in [13:00, 14:00): the 14:00 slot FAILs, the watermark stays
    // at 13:00 and is BLOCKED, one open failure.
    fixture
        .source
        .client()
        .unwrap()
        .batch_execute(
            "INSERT INTO public.transfers VALUES (100, timestamptz '2026-07-22 13:30:00+00', 'paid', 'late')",
        )
        .unwrap();
    fixture.run(&["run", "--all", "--at", "2026-07-22T14:05:00Z"]).expect(1);
    let at = "2026-07-22T14:30:00Z";
    let scrape = parse(&fixture.run(&["report", "metrics", "--at", at]).expect(0).stdout);
    assert_eq!(gauge(&scrape, "datadiff_verified_end_timestamp_seconds", &[]), verified_end);
    assert_eq!(gauge(&scrape, "datadiff_verification_lag_seconds", &[]), unix(at) - verified_end);
    assert_eq!(status_of(&scrape, "datadiff_verified_status", &VERIFIED).as_deref(), Some("BLOCKED"));
    assert_eq!(status_of(&scrape, "datadiff_last_attempt_status", &ATTEMPT).as_deref(), Some("FAIL"));
    assert_eq!(gauge(&scrape, "datadiff_last_attempt_age_seconds", &[]), 25.0 * 60.0);
    assert_eq!(gauge(&scrape, "datadiff_open_failures", &[]), 1.0);
    assert_eq!(
        fixture.count("SELECT count(*) FROM public.dd_run_slot_state WHERE status IN ('FAIL', 'ERROR')"),
        1,
        "the gauge is the backend's count"
    );
}

#[test]
fn output_writes_the_file_atomically_and_json_is_refused() {
    let fixture = Fixture::new();
    fixture.import();
    fixture.run(&["run", "--all", "--at", RUN_AT]).expect(0);
    let collector = fixture.path().join("textfile_collector");
    std::fs::create_dir(&collector).unwrap();
    let file = collector.join("datadiff.prom");
    std::fs::write(&file, "stale\n").unwrap();
    let file_arg = file.display().to_string();

    let written = fixture.run(&["report", "metrics", "--at", "2026-07-22T13:30:00Z", "--output", &file_arg]);
    assert_eq!(written.expect(0).stdout, "", "nothing on stdout with --output");
    let text = std::fs::read_to_string(&file).unwrap();
    let printed = fixture.run(&["report", "metrics", "--at", "2026-07-22T13:30:00Z"]);
    assert_eq!(text, printed.expect(0).stdout, "the file holds what stdout would");
    assert_eq!(gauge(&parse(&text), "datadiff_verification_lag_seconds", &[]), 1800.0);
    let names: Vec<String> =
        std::fs::read_dir(&collector).unwrap().map(|entry| entry.unwrap().file_name().into_string().unwrap()).collect();
    assert_eq!(names, ["datadiff.prom"], "no temporary file is left beside it");

    // A directory that does not exist: exit 2 naming the file and the directory (checked
    // before the backend is read), the old file untouched.
    let missing = collector.join("absent").join("datadiff.prom");
    fixture
        .run(&["report", "metrics", "--output", &missing.display().to_string()])
        .expect(2)
        .one_error_line()
        .stderr_has(&format!("error: --output {}: the directory ", missing.display()))
        .stderr_has("absent does not exist");

    fixture
        .run(&["report", "--output-format", "json", "metrics"])
        .expect(2)
        .one_error_line()
        .stderr_has("Prometheus text format");
}

/// The labels of every `audit --metrics` sample of the fixture's tables.
fn audit_labels(fixture: &Fixture) -> Vec<(String, String)> {
    [
        ("database", fixture.source.name()),
        ("schema", "public"),
        ("table", "transfers"),
        ("replica_database", fixture.replica.name()),
        ("replica_schema", "payments"),
        ("replica_table", "transfers"),
    ]
    .iter()
    .map(|(key, value)| ((*key).to_owned(), (*value).to_owned()))
    .collect()
}

/// The value of the one audit gauge `name` with the fixture's labels plus `extra`.
#[track_caller]
fn audit_gauge(scrape: &Scrape, fixture: &Fixture, name: &str, extra: Option<(&str, &str)>) -> f64 {
    let mut wanted = audit_labels(fixture);
    if let Some((key, value)) = extra {
        wanted.push((key.to_owned(), value.to_owned()));
    }
    let found: Vec<f64> = scrape
        .samples
        .iter()
        .filter(|sample| sample.metric == name)
        .filter(|sample| {
            sample.labels.len() == wanted.len()
                && wanted.iter().all(|(key, value)| sample.labels.get(key) == Some(value.as_str()))
        })
        .map(|sample| match sample.value {
            Value::Gauge(value) => value,
            ref other => panic!("{name} is not a gauge: {other:?}"),
        })
        .collect();
    assert_eq!(found.len(), 1, "one {name} sample with {wanted:?}: {:#?}", scrape.samples);
    found[0]
}

/// `audit --metrics FILE`: the verdict, differences by kind, rows, duration and time of a
/// PASS and then of a BLOCK, parsed back; the file replaced atomically; a bad path refused
/// before the audit (exit 2), the earlier file kept.
#[test]
fn audit_metrics_write_the_verdict_in_the_report_metrics_format() {
    use datadiff_testkit::{SUPERUSER, shared_cluster};

    let fixture = Fixture::new();
    let password = shared_cluster().superuser_password();
    let (source, replica) = (fixture.source.url(SUPERUSER, password), fixture.replica.url(SUPERUSER, password));
    let collector = tempfile::tempdir().unwrap();
    let file = collector.path().join("audit_transfers.prom");
    let file_arg = file.display().to_string();
    let audit = |extra: &[&str]| {
        let mut args = vec![
            "audit",
            "--source",
            source.as_str(),
            "--replica",
            replica.as_str(),
            "--table",
            "public.transfers",
            "--replica-table",
            "payments.transfers",
            "--cutover-ready",
        ];
        args.extend_from_slice(extra);
        crate::support::datadiff(&args)
    };
    let kinds = ["MISSING_IN_REPLICA", "EXTRA_IN_REPLICA", "CHANGED"];

    // PASS: 50 rows on each side, status PASS, reason PARITY_VERIFIED, no differences.
    let started = Utc::now().timestamp() as f64;
    let pass = audit(&["--metrics", &file_arg]);
    pass.expect(0);
    let report = pass.json();
    let text = std::fs::read_to_string(&file).unwrap();
    let scrape = parse(&text);
    assert_eq!(audit_gauge(&scrape, &fixture, "datadiff_audit_status", Some(("status", "PASS"))), 1.0);
    assert_eq!(audit_gauge(&scrape, &fixture, "datadiff_audit_status", Some(("status", "BLOCK"))), 0.0);
    assert_eq!(audit_gauge(&scrape, &fixture, "datadiff_audit_reason", Some(("reason", "PARITY_VERIFIED"))), 1.0);
    assert_eq!(audit_gauge(&scrape, &fixture, "datadiff_audit_reason", Some(("reason", "ROW_DIFFERENCES"))), 0.0);
    for kind in kinds {
        assert_eq!(audit_gauge(&scrape, &fixture, "datadiff_audit_differences", Some(("kind", kind))), 0.0);
    }
    assert_eq!(audit_gauge(&scrape, &fixture, "datadiff_audit_rows", Some(("side", "source"))), 50.0);
    assert_eq!(audit_gauge(&scrape, &fixture, "datadiff_audit_rows", Some(("side", "replica"))), 50.0);
    assert_eq!(audit_gauge(&scrape, &fixture, "datadiff_audit_matched_rows", None), 50.0);
    assert_eq!(audit_gauge(&scrape, &fixture, "datadiff_audit_tombstones", None), 0.0);
    assert_eq!(
        audit_gauge(&scrape, &fixture, "datadiff_audit_duration_seconds", None),
        report["duration_seconds"].as_f64().unwrap()
    );
    let finished = audit_gauge(&scrape, &fixture, "datadiff_audit_timestamp_seconds", None);
    assert_eq!(
        finished,
        DateTime::parse_from_rfc3339(report["finished_at"].as_str().unwrap()).unwrap().timestamp_millis() as f64
            / 1000.0
    );
    assert!(finished >= started - 1.0, "the audit's own time: {finished} vs {started}");
    for family in ["datadiff_audit_status", "datadiff_audit_differences", "datadiff_audit_rows"] {
        assert!(scrape.docs.get(family).is_some_and(|help| !help.is_empty()), "{family} has a HELP line");
        assert!(text.contains(&format!("# TYPE {family} gauge\n")), "{family} is typed");
    }

    // BLOCK: one row deleted on the replica, one extra, one changed.
    fixture.replica_sql(
        "DELETE FROM payments.transfers WHERE id = 3;
         INSERT INTO payments.transfers (id, updated_at, status, note) VALUES (99, now(), 'x', 'y');
         UPDATE payments.transfers SET note = 'changed' WHERE id = 7;",
    );
    audit(&["--metrics", &file_arg]).expect(1);
    let scrape = parse(&std::fs::read_to_string(&file).unwrap());
    assert_eq!(audit_gauge(&scrape, &fixture, "datadiff_audit_status", Some(("status", "PASS"))), 0.0);
    assert_eq!(audit_gauge(&scrape, &fixture, "datadiff_audit_status", Some(("status", "BLOCK"))), 1.0);
    assert_eq!(audit_gauge(&scrape, &fixture, "datadiff_audit_reason", Some(("reason", "ROW_DIFFERENCES"))), 1.0);
    for kind in kinds {
        assert_eq!(audit_gauge(&scrape, &fixture, "datadiff_audit_differences", Some(("kind", kind))), 1.0, "{kind}");
    }
    assert_eq!(audit_gauge(&scrape, &fixture, "datadiff_audit_rows", Some(("side", "replica"))), 50.0);
    assert_eq!(audit_gauge(&scrape, &fixture, "datadiff_audit_matched_rows", None), 48.0);
    let names: Vec<String> = std::fs::read_dir(collector.path())
        .unwrap()
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(names, ["audit_transfers.prom"], "no temporary file is left beside it");

    // A path in a directory that does not exist, or a directory: exit 2 before the audit,
    // naming the path; nothing on stdout, the earlier metrics file untouched.
    let before = std::fs::read_to_string(&file).unwrap();
    let missing = collector.path().join("absent").join("audit.prom");
    let refused = audit(&["--metrics", &missing.display().to_string()]);
    refused.expect(2).one_error_line().stderr_has(&format!("error: --metrics {}: the directory ", missing.display()));
    assert_eq!(refused.stdout, "", "no audit ran");
    let directory = collector.path().display().to_string();
    audit(&["--metrics", &directory])
        .expect(2)
        .one_error_line()
        .stderr_has(&format!("error: --metrics {directory}: a directory, not a regular file"));
    audit(&["--metrics", &file_arg, "--report", &file_arg])
        .expect(2)
        .one_error_line()
        .stderr_has("the same path as --report");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), before, "the earlier metrics are kept");
}
