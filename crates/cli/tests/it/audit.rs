//! `datadiff audit` end to end through `datadiff_cli::run` against throwaway clusters.

use datadiff_access::Environment;
use datadiff_cli::{Console, Exit, run};
use datadiff_testkit::{Database, SUPERUSER, shared_cluster};

const TABLE: &str = "CREATE TABLE public.customers (id bigint PRIMARY KEY, email text, plan text, notes text);";

struct Outcome {
    exit: Exit,
    stdout: String,
    stderr: String,
}

fn datadiff_with(environment: Environment, args: &[&str]) -> Outcome {
    let (console, captured) = Console::capture(environment);
    let exit = run(std::iter::once("datadiff").chain(args.iter().copied()), console);
    Outcome { exit, stdout: captured.stdout(), stderr: captured.stderr() }
}

fn datadiff(args: &[&str]) -> Outcome {
    datadiff_with(Environment::default(), args)
}

fn url(database: &Database<'_>) -> String {
    database.url(SUPERUSER, shared_cluster().superuser_password())
}

struct Pair {
    source: Database<'static>,
    replica: Database<'static>,
}

impl Pair {
    fn new(source_sql: &str, replica_sql: &str) -> Pair {
        let cluster = shared_cluster();
        let source = cluster.fresh_database().unwrap();
        let replica = cluster.fresh_database().unwrap();
        source.client().unwrap().batch_execute(source_sql).unwrap();
        replica.client().unwrap().batch_execute(replica_sql).unwrap();
        Pair { source, replica }
    }

    fn audit(&self, extra: &[&str]) -> Outcome {
        let (source, replica) = (url(&self.source), url(&self.replica));
        let mut args = vec!["audit", "--source", &source, "--replica", &replica, "--table", "public.customers"];
        args.extend_from_slice(extra);
        datadiff(&args)
    }
}

fn rows(count: u32) -> String {
    format!(
        "INSERT INTO public.customers SELECT g, 'u' || g || '@example.com', 'free', NULL FROM generate_series(1, {count}) g;"
    )
}

fn json(text: &str) -> serde_json::Value {
    serde_json::from_str(text).unwrap_or_else(|error| panic!("stdout is not JSON ({error}): {text}"))
}

#[test]
fn pass_prints_the_json_report_on_stdout_and_exits_zero() {
    let pair = Pair::new(&format!("{TABLE}{}", rows(25)), &format!("{TABLE}{}", rows(25)));
    let outcome = pair.audit(&["--cutover-ready"]);
    assert_eq!(outcome.exit, Exit::Success, "{}", outcome.stderr);
    let report = json(&outcome.stdout);
    assert_eq!(report["status"], "PASS");
    assert_eq!(report["reason"], "PARITY_VERIFIED");
    assert_eq!(report["source_rows"], 25);
    assert_eq!(report["replica_rows"], 25);
    assert_eq!(report["columns"], serde_json::json!(["email", "plan", "notes"]));
    assert!(outcome.stderr.contains("CDC parity verified for 25 rows"), "{}", outcome.stderr);
    // Without -v: one start and one end line, with the UTC time, the duration and the counts.
    let logged = |message: &str| -> Vec<String> {
        outcome
            .stderr
            .lines()
            .filter_map(|line| {
                let (time, rest) = line.split_once(' ')?;
                let rest = rest.trim_start().strip_prefix("INFO ")?.strip_prefix(message)?;
                assert!(chrono::DateTime::parse_from_rfc3339(time).is_ok() && time.ends_with('Z'), "{line}");
                Some(rest.to_owned())
            })
            .collect()
    };
    assert_eq!(logged("audit started "), ["source_rows=25 replica_rows=25"], "{}", outcome.stderr);
    let ended = logged("audit finished duration_seconds=");
    let counts: Vec<&str> = ended.iter().filter_map(|rest| rest.split_once(' ').map(|(_, counts)| counts)).collect();
    assert_eq!(counts, ["checks=1 PASS=1 BLOCK=0 exit=0"], "{}", outcome.stderr);
}

#[test]
fn block_exits_one_and_the_report_file_gets_the_json() {
    let pair = Pair::new(
        &format!("{TABLE}{}", rows(5)),
        &format!(
            "{TABLE}{} DELETE FROM public.customers WHERE id = 4; UPDATE public.customers SET plan = 'pro' WHERE id = 1;",
            rows(5)
        ),
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cdc-parity-report.json");
    let path_text = path.display().to_string();
    let outcome = pair.audit(&["--cutover-ready", "--report", &path_text]);
    assert_eq!(outcome.exit, Exit::Failure, "{}", outcome.stderr);
    assert!(outcome.stderr.contains(" checks=1 PASS=0 BLOCK=1 exit=1"), "{}", outcome.stderr);
    let report = json(&std::fs::read_to_string(&path).unwrap());
    assert_eq!(report["status"], "BLOCK");
    assert_eq!(report["reason"], "ROW_DIFFERENCES");
    assert_eq!(
        (report["missing"].as_u64(), report["changed"].as_u64(), report["difference_count"].as_u64()),
        (Some(1), Some(1), Some(2))
    );
    assert_eq!(
        report["examples"],
        serde_json::json!([{"id": 1, "kind": "CHANGED", "fields": ["plan"]}, {"id": 4, "kind": "MISSING_IN_REPLICA"}])
    );
    assert!(
        outcome.stdout.starts_with("CDC parity failed: ROW_DIFFERENCES. source=5, replica=4, differences=2"),
        "{}",
        outcome.stdout
    );
}

#[test]
fn empty_tables_block_unless_allowed() {
    let pair = Pair::new(TABLE, TABLE);
    let outcome = pair.audit(&["--cutover-ready"]);
    assert_eq!(outcome.exit, Exit::Failure);
    assert_eq!(json(&outcome.stdout)["reason"], "EMPTY_DATASET");
    let outcome = pair.audit(&["--cutover-ready", "--allow-empty"]);
    assert_eq!(outcome.exit, Exit::Success);
    assert_eq!(json(&outcome.stdout)["status"], "PASS");
}

#[test]
fn refusals_exit_two_with_one_line_naming_the_flag_and_no_report() {
    let pair = Pair::new(&format!("{TABLE}{}", rows(3)), &format!("{TABLE}{}", rows(3)));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("report.json");
    let path_text = path.display().to_string();
    let cases: &[(&[&str], &str)] = &[
        (&[], "--cutover-ready was not given"),
        (&["--cutover-ready", "--max-rows", "0"], "--max-rows must be between 1 and 50000000, got 0"),
        (&["--cutover-ready", "--max-rows", "50000001"], "--max-rows must be between 1 and 50000000, got 50000001"),
        (&["--cutover-ready", "--max-examples", "101"], "--max-examples must be between 1 and 100, got 101"),
        (&["--cutover-ready", "--max-examples", "-1"], "--max-examples must be between 1 and 100, got -1"),
        (&["--cutover-ready", "--key", "id,email,id"], "--key names the column id twice"),
        (
            &["--cutover-ready", "--lsn-column", "_cdc_lsn"],
            "--replica-metadata-table and --lsn-column go together with --deleted-column",
        ),
        (
            &["--cutover-ready", "--max-rows", "2"],
            "Audit preflight failed. Check inventory counts and invalid CDC metadata. source=3 replica=3",
        ),
    ];
    for (extra, expected) in cases {
        let mut args = extra.to_vec();
        args.extend(["--report", &path_text]);
        let outcome = pair.audit(&args);
        assert_eq!(outcome.exit, Exit::Error, "{extra:?}");
        assert!(outcome.stderr.starts_with("refused: "), "{extra:?}: {}", outcome.stderr);
        assert!(outcome.stderr.contains(expected), "{extra:?}: {}", outcome.stderr);
        assert_eq!(outcome.stderr.lines().count(), 1, "{extra:?}: {}", outcome.stderr);
        assert!(outcome.stdout.is_empty());
        assert!(!path.exists(), "a refusal writes no report");
    }
    let seed = "Pause source writes, drain CDC, confirm cutover_ready, and provide valid scan limits";
    assert!(pair.audit(&[]).stderr.contains(seed));
}

#[test]
fn one_database_behind_both_dsns_is_refused_over_a_unix_socket() {
    let cluster = shared_cluster();
    let database = cluster.fresh_database().unwrap();
    database.client().unwrap().batch_execute(&format!("{TABLE}{}", rows(2))).unwrap();
    let socket = format!(
        "host={} port={} user={SUPERUSER} dbname={}",
        cluster.socket_dir().display(),
        cluster.port(),
        database.name()
    );
    let tcp = url(&database);
    for (source, replica) in [(&socket, &socket), (&tcp, &socket), (&tcp, &tcp)] {
        let outcome = datadiff(&[
            "audit",
            "--source",
            source,
            "--replica",
            replica,
            "--table",
            "public.customers",
            "--cutover-ready",
        ]);
        assert_eq!(outcome.exit, Exit::Error);
        assert!(outcome.stderr.contains("source and replica must be separate databases"), "{}", outcome.stderr);
    }
}

#[test]
fn a_duplicate_key_is_an_error_naming_the_key() {
    let pair = Pair::new(
        &format!("{TABLE}{}", rows(3)),
        "CREATE TABLE public.customers (id bigint, email text, plan text, notes text); \
         INSERT INTO public.customers VALUES (1, 'a', 'free', NULL), (3, 'c', 'free', NULL), (3, 'c', 'free', NULL);",
    );
    let outcome = pair.audit(&["--cutover-ready"]);
    assert_eq!(outcome.exit, Exit::Error);
    assert!(
        outcome.stderr.contains("error: duplicate key 3 in public.customers on the replica database"),
        "{}",
        outcome.stderr
    );
}

#[test]
fn a_marker_value_and_the_password_never_appear_in_any_output() {
    const MARKER: &str = "MARKER-7d1f-never-print-me";
    const PASSWORD: &str = "pw-9c4e-secret";
    let cluster = shared_cluster();
    let role = format!("marker_{}", std::process::id());
    let _ = cluster.create_role(&role, PASSWORD);
    let grant = format!("GRANT SELECT ON public.customers TO {role};");
    let pair = Pair::new(
        &format!("{TABLE}{} UPDATE public.customers SET notes = '{MARKER}' WHERE id = 2; {grant}", rows(3)),
        &format!("{TABLE}{} UPDATE public.customers SET notes = 'other {MARKER}' WHERE id = 2; {grant}", rows(3)),
    );
    let source = pair.source.url(&role, PASSWORD);
    let replica = pair.replica.url(&role, PASSWORD);
    let wrong = pair.replica.url(&role, "wrong-pw");
    let dir = tempfile::tempdir().unwrap();
    let report_path = dir.path().join("r.json").display().to_string();
    let base = ["audit", "--table", "public.customers", "--cutover-ready", "-vvv"];
    let runs: Vec<Vec<&str>> = vec![
        [&base[..], &["--source", &source, "--replica", &replica]].concat(),
        [&base[..], &["--source", &source, "--replica", &replica, "--report", &report_path]].concat(),
        [&base[..], &["--source", &source, "--replica", &wrong]].concat(),
        [&base[..], &["--source", &source, "--replica", &replica, "--key", "email,notes"]].concat(),
        [&base[..], &["--source", &source, "--replica", &replica, "--columns", "nope"]].concat(),
        vec!["audit", &source],
    ];
    let mut blocked = 0;
    let mut saw_debug_logs = false;
    for args in &runs {
        let outcome = datadiff(args);
        blocked += usize::from(outcome.exit == Exit::Failure);
        saw_debug_logs |= outcome.stderr.contains("DEBUG");
        for text in [&outcome.stdout, &outcome.stderr] {
            assert!(!text.contains(MARKER), "a row value leaked with {args:?}: {text}");
            assert!(!text.contains(PASSWORD), "the password leaked with {args:?}: {text}");
        }
    }
    assert_eq!(blocked, 2, "the planted difference blocks both full runs");
    assert!(saw_debug_logs, "-vvv must log at debug level (else this test checks nothing)");
    let report = std::fs::read_to_string(&report_path).unwrap();
    assert!(report.contains("\"notes\"") && !report.contains(MARKER) && !report.contains(PASSWORD), "{report}");
}

#[test]
fn connection_errors_are_one_line_with_the_cause_chain_under_verbose() {
    let args = [
        "audit",
        "--source",
        "host=127.0.0.1 port=1 user=u",
        "--replica",
        "host=127.0.0.1 port=1 user=u",
        "--table",
        "public.t",
        "--cutover-ready",
    ];
    let outcome = datadiff(&args);
    assert_eq!(outcome.exit, Exit::Error);
    assert_eq!(outcome.stderr.lines().count(), 1, "{}", outcome.stderr);
    assert!(outcome.stderr.starts_with("error: cannot connect to the"), "{}", outcome.stderr);
    let verbose = datadiff(&[&args[..], &["-v"]].concat());
    assert!(verbose.stderr.contains("caused by:"), "{}", verbose.stderr);
}

#[test]
fn pgpassword_from_the_environment_authenticates_both_sides() {
    let pair = Pair::new(&format!("{TABLE}{}", rows(2)), &format!("{TABLE}{}", rows(2)));
    let cluster = shared_cluster();
    let dsn =
        |database: &Database<'_>| format!("postgresql://{SUPERUSER}@127.0.0.1:{}/{}", cluster.port(), database.name());
    let (source, replica) = (dsn(&pair.source), dsn(&pair.replica));
    let args = ["audit", "--source", &source, "--replica", &replica, "--table", "public.customers", "--cutover-ready"];
    let environment = Environment::from_pairs([("PGPASSWORD", cluster.superuser_password())]);
    let outcome = datadiff_with(environment, &args);
    assert_eq!(outcome.exit, Exit::Success, "{}", outcome.stderr);
    assert!(!outcome.stderr.contains(cluster.superuser_password()));
}

#[test]
fn an_audit_that_ends_without_a_report_removes_an_earlier_report_at_its_path() {
    let pair = Pair::new(&format!("{TABLE}{}", rows(3)), &format!("{TABLE}{}", rows(3)));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cdc-parity-report.json");
    let path_text = path.display().to_string();
    let passed = || {
        let outcome = pair.audit(&["--cutover-ready", "--report", &path_text]);
        assert_eq!(outcome.exit, Exit::Success, "{}", outcome.stderr);
        assert_eq!(json(&std::fs::read_to_string(&path).unwrap())["status"], "PASS");
        // Written through a file of the same directory renamed over the report: nothing else
        // is left there.
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|entry| entry.unwrap().file_name()).collect();
        assert_eq!(names, ["cdc-parity-report.json"]);
    };

    // An error: the replica now has a duplicate key.
    passed();
    pair.replica.client().unwrap().batch_execute("ALTER TABLE public.customers DROP CONSTRAINT customers_pkey; INSERT INTO public.customers VALUES (2, 'b', 'free', NULL)").unwrap();
    let outcome = pair.audit(&["--cutover-ready", "--report", &path_text]);
    assert_eq!(outcome.exit, Exit::Error);
    assert!(outcome.stderr.contains("duplicate key 2"), "{}", outcome.stderr);
    assert!(!path.exists(), "the earlier PASS report must not stand for this audit");

    // A refusal before connecting.
    pair.replica
        .client()
        .unwrap()
        .batch_execute("DELETE FROM public.customers WHERE ctid = (SELECT max(ctid) FROM public.customers)")
        .unwrap();
    passed();
    let outcome = pair.audit(&["--cutover-ready", "--max-rows", "0", "--report", &path_text]);
    assert_eq!(outcome.exit, Exit::Error);
    assert!(outcome.stderr.starts_with("refused: "), "{}", outcome.stderr);
    assert!(!path.exists(), "the earlier PASS report must not stand for this audit");
}

#[test]
fn the_verbose_log_reports_the_tls_each_connection_negotiated() {
    // The shared cluster has no TLS: `sslmode=prefer` (the default) falls back to plaintext.
    let pair = Pair::new(&format!("{TABLE}{}", rows(1)), &format!("{TABLE}{}", rows(1)));
    let outcome = pair.audit(&["--cutover-ready", "-vv"]);
    assert_eq!(outcome.exit, Exit::Success, "{}", outcome.stderr);
    let connected: Vec<&str> = outcome.stderr.lines().filter(|line| line.contains("connected")).collect();
    assert_eq!(connected.len(), 2, "{}", outcome.stderr);
    assert!(connected.iter().all(|line| line.contains("tls=false")), "{}", outcome.stderr);

    // A server with TLS: the same DSNs negotiate it.
    let cluster = datadiff_testkit::Cluster::start_with(
        datadiff_testkit::ClusterOptions::new().tls(&["localhost"], &["127.0.0.1"]),
    )
    .unwrap();
    let source = cluster.fresh_database().unwrap();
    let replica = cluster.fresh_database().unwrap();
    for database in [&source, &replica] {
        database.client().unwrap().batch_execute(&format!("{TABLE}{}", rows(1))).unwrap();
    }
    let url = |database: &Database<'_>| database.url(SUPERUSER, cluster.superuser_password());
    let (source, replica) = (url(&source), url(&replica));
    let outcome = datadiff(&[
        "audit",
        "--source",
        &source,
        "--replica",
        &replica,
        "--table",
        "public.customers",
        "--cutover-ready",
        "-vv",
    ]);
    assert_eq!(outcome.exit, Exit::Success, "{}", outcome.stderr);
    let connected: Vec<&str> = outcome.stderr.lines().filter(|line| line.contains("connected")).collect();
    assert_eq!(connected.len(), 2, "{}", outcome.stderr);
    assert!(connected.iter().all(|line| line.contains("tls=true")), "{}", outcome.stderr);
}

#[test]
fn a_pipelinewise_replica_with_soft_deletes_and_a_renamed_column_passes_with_the_flags() {
    let replica = "CREATE TABLE public.customers (id bigint PRIMARY KEY, mail text, plan text, notes text, \
                       _sdc_deleted_at character varying); \
                   INSERT INTO public.customers SELECT g, 'u' || g || '@example.com', 'free', NULL, NULL \
                       FROM generate_series(1, 6) g; \
                   UPDATE public.customers SET _sdc_deleted_at = '2026-07-22T12:00:00+00:00' WHERE id = 6;";
    let pair = Pair::new(&format!("{TABLE}{}", rows(5)), replica);
    // Without the flags the email column has no match: the audit refuses rather than leave it
    // out, naming it and the fixes.
    let outcome = pair.audit(&["--cutover-ready"]);
    assert_eq!(outcome.exit, Exit::Error, "{}", outcome.stderr);
    assert!(outcome.stdout.is_empty(), "no report: {}", outcome.stdout);
    assert!(outcome.stderr.contains("(email: tried email)"), "{}", outcome.stderr);
    assert!(outcome.stderr.contains("--column-map SOURCE=REPLICA"), "{}", outcome.stderr);
    // Left out on request, the soft-deleted row is extra.
    let outcome = pair.audit(&["--cutover-ready", "--exclude-columns", "email"]);
    assert_eq!(outcome.exit, Exit::Failure, "{}", outcome.stderr);
    let report = json(&outcome.stdout);
    assert_eq!((report["extra"].as_u64(), report["columns"].clone()), (Some(1), serde_json::json!(["plan", "notes"])));
    assert_eq!(report["excluded_columns"], serde_json::json!(["email"]));

    let outcome = pair.audit(&["--cutover-ready", "--deleted-column", "_sdc_deleted_at", "--column-map", "email=mail"]);
    assert_eq!(outcome.exit, Exit::Success, "{}", outcome.stderr);
    let report = json(&outcome.stdout);
    assert_eq!(report["status"], "PASS");
    assert_eq!((report["replica_rows"].as_u64(), report["tombstones"].as_u64()), (Some(5), Some(1)));
    assert_eq!(report["columns"], serde_json::json!(["email", "plan", "notes"]));
    assert_eq!(report["replica"]["columns"], serde_json::json!(["mail", "plan", "notes"]));
    assert_eq!(report["replica"]["deleted_column"], "_sdc_deleted_at");
    assert_eq!(report["replica"]["database"], pair.replica.name());
    assert_eq!(report["source"]["database"], pair.source.name());
    assert!(
        outcome.stderr.contains("CDC parity verified for 5 rows (3 columns compared, 1 tombstone left out)."),
        "{}",
        outcome.stderr
    );

    let outcome = pair.audit(&["--cutover-ready", "--column-map", "email"]);
    assert_eq!(outcome.exit, Exit::Error);
    assert!(outcome.stderr.contains("--column-map email: expected SOURCE=REPLICA"), "{}", outcome.stderr);
}

#[test]
fn empty_string_as_null_is_an_opt_in_flag() {
    // The replica as target-postgres writes it: every '' loaded as NULL.
    let pair = Pair::new(
        &format!("{TABLE}INSERT INTO public.customers VALUES (1, 'a@example.com', '', ''), (2, '', 'free', NULL);"),
        &format!(
            "{TABLE}INSERT INTO public.customers VALUES (1, 'a@example.com', NULL, NULL), (2, NULL, 'free', NULL);"
        ),
    );
    let exact = pair.audit(&["--cutover-ready"]);
    assert_eq!(exact.exit, Exit::Failure, "{}", exact.stderr);
    assert_eq!(
        json(&exact.stdout)["examples"],
        serde_json::json!([
            {"id": 1, "kind": "CHANGED", "fields": ["plan", "notes"]},
            {"id": 2, "kind": "CHANGED", "fields": ["email"]}
        ])
    );
    let coerced = pair.audit(&["--cutover-ready", "--empty-string-as-null"]);
    assert_eq!(coerced.exit, Exit::Success, "{}", coerced.stderr);
    assert_eq!(json(&coerced.stdout)["status"], "PASS");
}

#[test]
fn the_strategy_changes_how_rows_are_read_not_the_report() {
    let pair = Pair::new(
        &format!("{TABLE}{}", rows(3000)),
        &format!("{TABLE}{} UPDATE public.customers SET plan = 'pro' WHERE id = 2999;", rows(3000)),
    );
    let answer = |outcome: &Outcome| {
        let mut report = json(&outcome.stdout);
        for field in ["started_at", "finished_at", "duration_seconds", "strategy", "strategy_reason"] {
            report.as_object_mut().unwrap().remove(field);
        }
        report
    };
    let streamed = pair.audit(&["--cutover-ready", "--strategy", "stream"]);
    assert_eq!(json(&streamed.stdout)["strategy"], "stream");
    let segmented = pair.audit(&["--cutover-ready", "--strategy", "segments", "-v"]);
    assert_eq!(segmented.exit, Exit::Failure, "{}", segmented.stderr);
    assert_eq!(answer(&segmented), answer(&streamed));
    assert_eq!(
        answer(&segmented)["examples"],
        serde_json::json!([{"id": 2999, "kind": "CHANGED", "fields": ["plan"]}])
    );
    assert!(segmented.stderr.contains("hashed key segments"), "{}", segmented.stderr);
    assert!(segmented.stderr.contains("reason=segments requested"), "{}", segmented.stderr);
    assert_eq!(json(&segmented.stdout)["strategy_reason"], "segments requested");

    let wrong = pair.audit(&["--cutover-ready", "--strategy", "fastest"]);
    assert_eq!(wrong.exit, Exit::Error, "{}", wrong.stderr);
    assert!(
        wrong.stderr.contains("--strategy") && wrong.stderr.contains("auto, stream or segments"),
        "{}",
        wrong.stderr
    );
}
