//! `migrate`: status, up, down with `--drop-extensions` (SPEC §3).

use crate::support::{CHECK, Fixture, RUN_AT};

#[test]
fn migrate_shows_status_migrates_up_and_down_and_import_brings_it_back() {
    let fixture = Fixture::new();
    fixture.run(&["migrate", "--status"]).expect(0).stdout_has("schema: base").stdout_has("pending: ");
    fixture
        .run(&["migrate"])
        .expect(0)
        .stdout_has("applied base -> 001")
        .stdout_has("backend schema is now at 004 (+ extensions 3)");
    fixture.run(&["migrate"]).expect(0).stdout_has("nothing to do");
    fixture
        .run(&["migrate", "--status"])
        .expect(0)
        .stdout_has("schema: 004 (+ extensions 3)")
        .stdout_has("pending: nothing, the schema is current");

    // Below 004 the extension tables must be dropped explicitly.
    fixture.run(&["migrate", "--to", "003"]).expect(2).one_error_line().stderr_has("--drop-extensions");
    fixture.run(&["migrate", "--to", "004", "--drop-extensions"]).expect(2);
    fixture.run(&["migrate", "--to", "003", "--drop-extensions"]).expect(0).stdout_has("backend schema is now at 003");
    let version: String =
        fixture.backend_sql().query_one("SELECT version_num FROM public.alembic_version", &[]).unwrap().get(0);
    assert_eq!(version, "003");
    assert_eq!(
        fixture.count("SELECT count(*) FROM pg_catalog.pg_tables WHERE tablename = 'datadiff_run_differences'"),
        0
    );

    fixture.import();
    fixture.run(&["migrate", "--status"]).expect(0).stdout_has("schema: 004 (+ extensions 3)");
}

/// Issue: a backend PipelineWise migrated (upstream 004, no `datadiff_*` tables; its
/// definition rows are the ones datadiff's import writes) is driven by every command without
/// DDL; only a current `row_diff` definition needs the extension migration, and then `run`
/// names it while the reads still work.
#[test]
fn a_backend_pipelinewise_migrated_works_without_ddl_until_a_definition_needs_an_extension() {
    let fixture = Fixture::new();
    fixture.import();
    let drop_extensions = || {
        fixture
            .backend_sql()
            .batch_execute(
                "DROP TABLE public.datadiff_run_parts; DROP TABLE public.datadiff_run_divisions; \
             DROP TABLE public.datadiff_run_differences; DROP TABLE public.datadiff_replica_horizons; \
                 DROP TABLE public.datadiff_schema_migrations",
            )
            .unwrap();
    };
    drop_extensions();
    let datadiff_tables =
        || fixture.count("SELECT count(*) FROM pg_catalog.pg_tables WHERE tablename LIKE 'datadiff\\_%'");
    assert_eq!(datadiff_tables(), 0);

    fixture.run(&["list"]).expect(0).stdout_has(CHECK);
    fixture.run(&["run", "--all", "--at", RUN_AT]).expect(0).stdout_has("PASS");
    fixture.replica_sql("DELETE FROM payments.transfers WHERE id = 7");
    fixture.run(&["run", "--all", "--force", "--at", RUN_AT]).expect(1).stdout_has("FAIL");
    let failed = fixture.newest_run_id();
    fixture
        .run(&["rerun", "--run-id", &failed, "--remediation-ref", "INC-9", "--at", "2026-07-22T13:30:00Z"])
        .expect(1)
        .stdout_has("INC-9");
    for report in ["watermarks", "daily", "failures", "remediations"] {
        fixture.run(&["report", report, "--at", "2026-07-22T14:00:00Z"]).expect(0);
    }
    fixture.run(&["report", "differences", "--run-id", &failed]).expect(0);
    fixture.run(&["doctor"]).expect(0).stdout_has("004 (+ extensions 0)");
    fixture
        .run(&["migrate", "--status"])
        .expect(0)
        .stdout_has("schema: 004 (+ extensions 0)")
        .stdout_has("extension 1 (run_differences)");
    assert_eq!(datadiff_tables(), 0, "no command but migrate and import_config writes DDL");
    assert_eq!(fixture.attempts().len(), 3, "the run, the forced run and the remediation were recorded");

    // A row_diff definition needs the extension table: `run` names the one migration.
    let mut files = fixture.files();
    files.datadiff = Some(format!("checks:\n  {CHECK}:\n    row_diff: {{max_examples: 5}}\n"));
    fixture.write(&files);
    fixture.import();
    drop_extensions();
    let outcome = fixture.run(&["run", "--all", "--force", "--at", RUN_AT]);
    outcome
        .expect(2)
        .one_error_line()
        .stderr_has(&format!("{CHECK} uses row_diff"))
        .stderr_has("extension migration 1 (run_differences)")
        .stderr_has("run datadiff migrate --dir");
    assert_eq!(fixture.attempts().len(), 3, "nothing ran");
    fixture.run(&["list"]).expect(0);
    fixture.run(&["report", "watermarks", "--at", "2026-07-22T14:00:00Z"]).expect(0);
    fixture.run(&["report", "differences", "--run-id", &failed]).expect(0);
    fixture.run(&["doctor"]).expect(0);
    assert_eq!(datadiff_tables(), 0);

    fixture.run(&["migrate"]).expect(0).stdout_has("extension 1 (run_differences)");
    fixture.run(&["run", "--all", "--force", "--at", RUN_AT]).expect(1);
    assert_eq!(fixture.attempts().len(), 4);
}
