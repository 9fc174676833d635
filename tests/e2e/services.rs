//! libpq habits in project connections: each side's `db_conn` names its own connection
//! service (`service:`), and `PGSERVICE` applies to neither side.

use crate::support::{CHECK, Fixture, RUN_AT};

#[test]
fn each_side_connects_through_the_service_its_db_conn_names_and_pgservice_is_ignored() {
    let fixture = Fixture::new();
    let cluster = datadiff_testkit::shared_cluster();
    let dir = tempfile::tempdir().unwrap();
    // Two services with everything but the database; the db_conn keeps its dbname, which is
    // the definition's.
    let services = format!(
        "[dd_source]\nhost={host}\nport={port}\nuser={reader}\npassword={password}\n\n\
         [dd_replica]\nhost={host}\nport={port}\nuser={reader}\npassword={password}\nsslmode=disable\n",
        host = cluster.host(),
        port = cluster.port(),
        reader = fixture.reader.name,
        password = fixture.reader.password,
    );
    let file = dir.path().join("pg_service.conf");
    std::fs::write(&file, services).unwrap();
    let mut files = fixture.files();
    let db_conn = |text: &str, service: &str, dbname: &str| {
        let start = text.find("db_conn:\n").unwrap();
        let end = start
            + text[start..].find(&format!("  dbname: {dbname}\n")).unwrap()
            + format!("  dbname: {dbname}\n").len();
        format!("{}db_conn:\n  service: {service}\n  dbname: {dbname}\n{}", &text[..start], &text[end..])
    };
    files.tap = db_conn(&files.tap, "dd_source", fixture.source.name());
    files.target = db_conn(&files.target, "dd_replica", fixture.replica.name());
    assert!(!files.tap.contains("password") && !files.target.contains("user:"), "{}\n{}", files.tap, files.target);
    fixture.write(&files);
    let env = [
        ("PGSERVICEFILE", file.display().to_string()),
        ("PGSYSCONFDIR", dir.path().join("etc").display().to_string()),
        // Undefined: were it applied to either side, the attempt would fail naming it.
        ("PGSERVICE", "dd_nowhere".to_owned()),
    ];
    let env: Vec<(&str, &str)> = env.iter().map(|(key, value)| (*key, value.as_str())).collect();
    fixture.run_with(&["import_config", "--at", "2026-07-22T12:00:00Z"], &env).expect(0);
    let run = fixture.run_with(&["run_data_diff_checks", "--all", "--at", RUN_AT], &env);
    run.expect(0).stdout_has(CHECK).stderr_has("PGSERVICE is not used for the project's source and target");
    assert_eq!(fixture.attempts().iter().map(|a| a.0.as_str()).collect::<Vec<_>>(), ["PASS"]);
    assert!(!run.stdout.contains(&fixture.reader.password) && !run.stderr.contains(&fixture.reader.password));

    // A service the file lacks: the command stops before any attempt, naming the tap, the key
    // and the files.
    files.tap = files.tap.replace("service: dd_source", "service: dd_gone");
    fixture.write(&files);
    let attempts = fixture.attempts().len();
    let run = fixture.run_with(&["run_data_diff_checks", "--all", "--force", "--at", RUN_AT], &env);
    run.expect(2).stderr_has("Tap 'payments' db_conn.service: the source connection names service \"dd_gone\"");
    assert_eq!(fixture.attempts().len(), attempts, "no attempt was started");
}
