//! Every CHECK constraint rejects a violating row; the application role cannot delete,
//! truncate or change the schema.

use std::collections::BTreeSet;

use datadiff_backend_store::{Catalog, MigrateOptions, Store};
use postgres::error::SqlState;

use crate::support::{backend, expected_extensions, insert_attempt, insert_definition};

const CHECK: &str = "00000000-0000-0000-0000-000000000c01";
const RUN: &str = "00000000-0000-0000-0000-000000000a01";

fn definition(start: &str, end: &str, timeout: &str) -> String {
    format!(
        "INSERT INTO public.dd_check_definitions VALUES (gen_random_uuid(), 'other', 1, repeat('a', 64), '{{}}', \
         'pg', 'tap', 'postgres', 'postgres', 's', 't', 'public', 't', 'public', 't', 'id', 'id', 'u', 'u', '[]', \
         '@hourly', {start}, {end}, {timeout}, false, now(), NULL)"
    )
}

fn preflight(status: &str) -> String {
    format!(
        "INSERT INTO public.dd_preflight_log (preflight_id, check_id, status, checked_at, query_fingerprint, \
         index_metadata, findings) VALUES (gen_random_uuid(), '{CHECK}', '{status}', now(), repeat('f', 64), '{{}}', '[]')"
    )
}

fn attempt(start: &str, end: &str, trigger: &str, status: &str) -> String {
    format!(
        "INSERT INTO public.dd_run_attempts (run_id, check_id, scheduled_for, window_start, window_end, attempt, \
         trigger_type, status, started_at) VALUES (gen_random_uuid(), '{CHECK}', '2030-01-01 00:00Z', {start}, {end}, \
         1, '{trigger}', '{status}', now())"
    )
}

fn result(status: &str) -> String {
    format!("INSERT INTO public.dd_run_results (run_id, check_type, status) VALUES ('{RUN}', 'row_count', '{status}')")
}

fn slot(attempt: &str, start: &str, end: &str, status: &str) -> String {
    format!(
        "INSERT INTO public.dd_run_slot_state VALUES ('{CHECK}', '2030-01-01 00:00Z', '{RUN}', {attempt}, {start}, \
         {end}, '{status}')"
    )
}

const T9: &str = "'2026-01-01 09:00Z'";
const T10: &str = "'2026-01-01 10:00Z'";
const T11: &str = "'2026-01-01 11:00Z'";

fn state(start: &str, end: &str, furthest: &str, status: &str, blocking: &str, event: &str, version: &str) -> String {
    format!(
        "INSERT INTO public.dd_watermark_state VALUES ('{CHECK}', {start}, {end}, {furthest}, '{status}', {blocking}, \
         '{RUN}', '{event}', {version}, now(), 'r')"
    )
}

fn event(start: &str, end: &str, furthest: &str, status: &str, blocking: &str, event: &str) -> String {
    format!(
        "INSERT INTO public.dd_watermark_events (watermark_event_id, check_id, evaluated_run_id, event_type, \
         verified_start, previous_verified_end, verified_end, furthest_observed_end, verified_status, \
         blocking_run_id, recorded_at, reason) VALUES (gen_random_uuid(), '{CHECK}', '{RUN}', '{event}', {start}, \
         NULL, {end}, {furthest}, '{status}', {blocking}, now(), 'r')"
    )
}

fn division(parts: &str, split_key: &str) -> String {
    format!(
        "INSERT INTO public.datadiff_run_divisions VALUES ('{RUN}', {parts}, '{split_key}', 'auto', '[]', NULL, now(), \
         'host:1')"
    )
}

fn part(index: &str, finished_at: &str, outcome: &str) -> String {
    format!(
        "INSERT INTO public.datadiff_run_parts (run_id, part_index, part_count, finished_at, outcome) \
         VALUES ('{RUN}', {index}, 3, {finished_at}, {outcome})"
    )
}

fn difference(ordinal: &str, kind: &str, fields: &str) -> String {
    format!(
        "INSERT INTO public.datadiff_run_differences VALUES ('{RUN}', 'row_diff', {ordinal}, '{kind}', '{{\"id\": 7}}', \
         {fields})"
    )
}

fn migration(version: &str) -> String {
    format!("INSERT INTO public.datadiff_schema_migrations VALUES ({version}, 'x', repeat('0', 64), now())")
}

#[test]
fn every_check_constraint_rejects_a_violating_row() {
    let backend = backend();
    Store::open(backend.config.clone()).unwrap().migrate(&MigrateOptions::latest()).unwrap();
    let mut client = backend.superuser();
    insert_definition(&mut client, CHECK);
    insert_attempt(&mut client, RUN, CHECK, "2026-01-01 10:00Z", T9, "PASS");
    client.batch_execute(&division("3", "int")).unwrap();

    let blocked = format!("'{RUN}'");
    // Rows that satisfy every constraint: each violation below changes one value of one of them.
    let valid = [
        definition("3600", "0", "60"),
        preflight("BLOCKED"),
        attempt("NULL", T10, "REMEDIATION", "DEFERRED"),
        result("ERROR"),
        slot("1", "NULL", T10, "ERROR"),
        state("NULL", "NULL", T10, "BLOCKED", &blocked, "BLOCK", "1"),
        event(T9, T10, T11, "CONTIGUOUS", "NULL", "ADVANCE"),
        difference("1", "CHANGED", "ARRAY['amount']"),
        difference("1", "MISSING_IN_TARGET", "'{}'"),
        migration("7"),
    ];
    for sql in &valid {
        let mut transaction = client.transaction().unwrap();
        transaction.execute(sql.as_str(), &[]).unwrap_or_else(|error| panic!("{sql}: {error}"));
        transaction.rollback().unwrap();
    }

    let violations = [
        ("dd_check_definitions_window_start_seconds_check", definition("0", "0", "60")),
        ("dd_check_definitions_window_end_seconds_check", definition("3600", "-1", "60")),
        ("dd_check_definitions_statement_timeout_seconds_check", definition("3600", "0", "0")),
        ("dd_preflight_log_status_check", preflight("WARN")),
        ("ck_dd_run_attempts_trigger_type", attempt(T9, T10, "CRON", "PASS")),
        ("dd_run_attempts_status_check", attempt(T9, T10, "SCHEDULED", "SKIPPED")),
        ("dd_run_attempts_check", attempt(T10, T10, "SCHEDULED", "PASS")),
        ("ck_dd_run_attempts_resolved_window", attempt("NULL", T10, "SCHEDULED", "FAIL")),
        ("dd_run_results_status_check", result("RUNNING")),
        ("dd_run_slot_state_attempt_check", slot("0", T9, T10, "PASS")),
        ("dd_run_slot_state_status_check", slot("1", T9, T10, "DEFERRED")),
        ("dd_run_slot_state_check", slot("1", T11, T10, "PASS")),
        ("ck_dd_run_slot_state_resolved_window", slot("1", "NULL", T10, "FAIL")),
        ("dd_watermark_state_verified_status_check", state(T9, T10, T10, "PARTIAL", "NULL", "ADVANCE", "1")),
        ("dd_watermark_state_event_type_check", state(T9, T10, T10, "CONTIGUOUS", "NULL", "RESET", "1")),
        ("dd_watermark_state_state_version_check", state(T9, T10, T10, "CONTIGUOUS", "NULL", "ADVANCE", "0")),
        ("dd_watermark_state_check", state(T10, T9, T10, "CONTIGUOUS", "NULL", "ADVANCE", "1")),
        ("dd_watermark_state_check1", state(T9, T11, T10, "CONTIGUOUS", "NULL", "ADVANCE", "1")),
        ("ck_dd_watermark_state_verified_bounds", state("NULL", "NULL", T10, "CONTIGUOUS", "NULL", "BLOCK", "1")),
        ("dd_watermark_events_event_type_check", event(T9, T10, T11, "CONTIGUOUS", "NULL", "RESET")),
        ("dd_watermark_events_verified_status_check", event(T9, T10, T11, "PARTIAL", "NULL", "ADVANCE")),
        ("dd_watermark_events_check", event(T10, T9, T11, "CONTIGUOUS", "NULL", "ADVANCE")),
        ("dd_watermark_events_check1", event(T9, T11, T10, "CONTIGUOUS", "NULL", "ADVANCE")),
        ("ck_dd_watermark_events_verified_bounds", event("NULL", T10, T11, "BLOCKED", &blocked, "BLOCK")),
        ("ck_datadiff_run_differences_ordinal", difference("0", "CHANGED", "ARRAY['amount']")),
        ("ck_datadiff_run_differences_kind", difference("1", "MISSING_IN_REPLICA", "'{}'")),
        ("ck_datadiff_run_differences_fields", difference("1", "CHANGED", "'{}'")),
        ("ck_datadiff_run_differences_fields", difference("1", "EXTRA_IN_TARGET", "ARRAY['amount']")),
        ("ck_datadiff_schema_migrations_version", migration("0")),
        ("ck_datadiff_run_divisions_part_count", division("1", "int")),
        ("ck_datadiff_run_divisions_split_key", division("3", "bigint")),
        ("ck_datadiff_run_parts_index", part("3", "NULL", "NULL")),
        ("ck_datadiff_run_parts_index", part("-1", "NULL", "NULL")),
        ("ck_datadiff_run_parts_outcome", part("0", "now()", "NULL")),
        ("ck_datadiff_run_parts_outcome", part("0", "NULL", "'{}'")),
    ];
    for (constraint, sql) in &violations {
        let mut transaction = client.transaction().unwrap();
        let error = transaction.execute(sql.as_str(), &[]).expect_err(sql);
        let db = error.as_db_error().unwrap_or_else(|| panic!("{sql}: {error}"));
        assert_eq!(db.code(), &SqlState::CHECK_VIOLATION, "{sql}: {error}");
        assert_eq!(db.constraint(), Some(*constraint), "{sql}");
        transaction.rollback().unwrap();
    }

    // Every CHECK constraint of both catalogs was violated above.
    let checks_in = |catalog: Catalog| -> BTreeSet<String> {
        catalog
            .lines()
            .iter()
            .filter(|line| line.contains(" = CHECK "))
            .map(|line| line.split(" constraint ").nth(1).unwrap().split(' ').next().unwrap().to_owned())
            .collect()
    };
    let mut all = checks_in(Catalog::expected_upstream());
    all.extend(checks_in(expected_extensions()));
    let tested: BTreeSet<String> = violations.iter().map(|(name, _)| (*name).to_owned()).collect();
    assert_eq!(tested, all);
}

#[test]
fn the_application_role_reads_and_writes_rows_but_never_deletes_truncates_or_alters() {
    let backend = backend();
    let store = Store::open(backend.config.clone()).unwrap();
    store.migrate(&MigrateOptions::latest()).unwrap();
    let mut app = store.connection().unwrap();

    // What it may do.
    insert_definition(&mut *app, CHECK);
    insert_attempt(&mut *app, RUN, CHECK, "2026-01-01 10:00Z", T9, "RUNNING");
    app.execute(&format!("UPDATE public.dd_run_attempts SET status = 'PASS' WHERE run_id = '{RUN}'"), &[]).unwrap();
    app.execute(&event(T9, T10, T11, "CONTIGUOUS", "NULL", "INITIALIZE"), &[]).unwrap();
    app.execute(&difference("1", "CHANGED", "ARRAY['amount']"), &[]).unwrap();
    app.execute(
        "INSERT INTO public.dd_index_warning_state VALUES (gen_random_uuid(), $1::text::uuid, now())",
        &[&CHECK],
    )
    .unwrap();
    let version: String = app.query_one("SELECT version_num::text FROM public.alembic_version", &[]).unwrap().get(0);
    assert_eq!(version, "004");
    let extensions: i64 = app.query_one("SELECT count(*) FROM public.datadiff_schema_migrations", &[]).unwrap().get(0);
    assert_eq!(extensions, 3);

    let tables = [
        "dd_check_definitions",
        "dd_preflight_log",
        "dd_run_attempts",
        "dd_run_results",
        "dd_run_slot_state",
        "dd_watermark_state",
        "dd_watermark_events",
        "dd_index_warning_state",
        "datadiff_run_differences",
        "datadiff_replica_horizons",
        "datadiff_run_divisions",
        "datadiff_run_parts",
        "datadiff_schema_migrations",
        "alembic_version",
    ];
    let denied = |client: &mut postgres::Client, sql: &str| {
        let error = client.batch_execute(sql).expect_err(sql);
        assert_eq!(error.code(), Some(&SqlState::INSUFFICIENT_PRIVILEGE), "{sql}: {error}");
    };
    for table in tables {
        denied(&mut app, &format!("DELETE FROM public.{table}"));
        denied(&mut app, &format!("TRUNCATE public.{table}"));
        denied(&mut app, &format!("DROP TABLE public.{table}"));
        denied(&mut app, &format!("ALTER TABLE public.{table} ADD COLUMN sneaky text"));
    }
    denied(&mut app, "INSERT INTO public.alembic_version VALUES ('005')");
    denied(&mut app, "UPDATE public.alembic_version SET version_num = '005'");
    denied(&mut app, "INSERT INTO public.datadiff_schema_migrations VALUES (4, 'x', repeat('0', 64), now())");
    denied(&mut app, "CREATE INDEX sneaky ON public.dd_run_results (error)");

    // The rows are all still there.
    let rows: i64 = backend
        .superuser()
        .query_one(
            "SELECT (SELECT count(*) FROM public.dd_run_attempts) + (SELECT count(*) FROM public.dd_watermark_events) \
                  + (SELECT count(*) FROM public.datadiff_run_differences)",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(rows, 3);
}
