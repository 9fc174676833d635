//! `import_config`: migrate, then reconcile definitions (SPEC §2, §3).

use crate::support::{CHECK, Fixture, IMPORT_AT};

#[test]
fn import_migrates_then_creates_and_reimports_unchanged() {
    let fixture = Fixture::new();
    let outcome = fixture.import();
    for line in [
        "IMPORTING YAML CONFIGS FINISHED",
        "Total targets to import        : 1",
        "Total taps to import           : 1",
        "Data-diff definitions created  : 1",
        "Data-diff definitions unchanged: 0",
        "Initial data-diff scans pending: 0",
        "Runtime                        : ",
    ] {
        outcome.stdout_has(line);
    }
    let mut sql = fixture.backend_sql();
    let version: String = sql.query_one("SELECT version_num FROM public.alembic_version", &[]).unwrap().get(0);
    assert_eq!(version, "004");
    // One row per datadiff extension migration: evidence (1), replica horizons (2) and the
    // divided windows' part queue (3).
    assert_eq!(fixture.count("SELECT count(*) FROM public.datadiff_schema_migrations"), 3);
    let row = sql
        .query_one(
            "SELECT full_check_name, revision, is_current, created_at = $1::text::timestamptz \
               FROM public.dd_check_definitions",
            &[&IMPORT_AT],
        )
        .unwrap();
    assert_eq!(row.get::<_, String>(0), CHECK);
    assert_eq!((row.get::<_, i32>(1), row.get::<_, bool>(2), row.get::<_, bool>(3)), (1, true, true), "--at recorded");

    fixture.run(&["import", "--at", IMPORT_AT]).expect(0).stdout_has("Data-diff definitions unchanged: 1");
    assert_eq!(fixture.count("SELECT count(*) FROM public.dd_check_definitions"), 1);

    // A changed definition supersedes the current revision.
    let mut files = fixture.files();
    files.tap = files.tap.replace("compare_columns: [status, note]", "compare_columns: [status]");
    fixture.write(&files);
    fixture
        .run(&["import_config"])
        .expect(0)
        .stdout_has("Data-diff definitions created  : 1")
        .stdout_has("Data-diff definitions superseded: 1");
    assert_eq!(fixture.count("SELECT count(*) FROM public.dd_check_definitions WHERE is_current"), 1);
    assert_eq!(fixture.count("SELECT max(revision)::bigint FROM public.dd_check_definitions"), 2);
}

#[test]
fn a_selected_tap_missing_from_the_yaml_is_deactivated_and_exits_one() {
    let fixture = Fixture::new();
    let mut files = fixture.files();
    let orders = files.tap.replace("id: payments", "id: orders").replace("table_name: transfers", "table_name: orders");
    files.extra.push(("tap_orders.yml".to_owned(), orders));
    fixture.write(&files);
    fixture.import().stdout_has("Data-diff definitions created  : 2");
    std::fs::remove_file(fixture.path().join("tap_orders.yml")).unwrap();

    let outcome = fixture.run(&["import_config", "--taps", "orders,payments"]);
    outcome
        .expect(1)
        .stderr_has("Tap not found in project YAML: orders")
        .stdout_has("Data-diff definitions deactivated: 1");
    let current: Vec<String> = fixture
        .backend_sql()
        .query("SELECT tap_id FROM public.dd_check_definitions WHERE is_current ORDER BY tap_id", &[])
        .unwrap()
        .iter()
        .map(|row| row.get(0))
        .collect();
    assert_eq!(current, ["payments"], "the missing tap's definitions are deactivated, the other tap's kept");
}

#[test]
fn a_wrong_backend_password_exits_two_with_one_line_and_no_password() {
    let fixture = Fixture::new();
    let mut files = fixture.files();
    files.config =
        files.config.replace(&format!("password: \"{}\"", fixture.app.password), "password: \"Wrong-Pw-123\"");
    fixture.write(&files);
    for args in [&["import_config"][..], &["list_data_diff_checks"], &["run", "--all"], &["report", "daily"]] {
        let outcome = fixture.run(args);
        outcome.expect(2).one_error_line().stderr_has("password authentication failed");
        assert!(!outcome.stderr.contains("Wrong-Pw-123") && !outcome.stdout.contains("Wrong-Pw-123"));
        // -v adds the cause chain, still without the password.
        let mut verbose = args.to_vec();
        verbose.push("-v");
        let outcome = fixture.run(&verbose);
        outcome.expect(2).stderr_has("caused by:");
        assert!(!outcome.stderr.contains("Wrong-Pw-123"));
    }
}
