//! `migrate`: status, up, down with `--drop-extensions` (SPEC §3).

use crate::support::Fixture;

#[test]
fn migrate_shows_status_migrates_up_and_down_and_import_brings_it_back() {
    let fixture = Fixture::new();
    fixture.run(&["migrate", "--status"]).expect(0).stdout_has("schema: base").stdout_has("pending: ");
    fixture
        .run(&["migrate"])
        .expect(0)
        .stdout_has("applied base -> 001")
        .stdout_has("backend schema is now at 004 (+ extensions 1)");
    fixture.run(&["migrate"]).expect(0).stdout_has("nothing to do");
    fixture
        .run(&["migrate", "--status"])
        .expect(0)
        .stdout_has("schema: 004 (+ extensions 1)")
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
    fixture.run(&["migrate", "--status"]).expect(0).stdout_has("schema: 004 (+ extensions 1)");
}
