//! The segment strategy against the stream strategy on real databases, case by case: the
//! report is the same, and segments were really hashed where they can be (random tables and
//! mutations against an oracle are the differential harness's, `differential.rs`).

use datadiff_audit::{AuditOptions, AuditProgress, AuditReport, Status, audit};
use datadiff_diff_core::segment::{SearchSettings, Strategy};

use crate::support::{Pair, no_env};

/// Runs the audit with `strategy`; also whether it hashed segments, and how many levels.
fn run(options: &AuditOptions, strategy: Strategy) -> (AuditReport, Option<u32>) {
    let (report, levels, _) = run_settling(options, strategy);
    (report, levels)
}

/// [`run`], also the positions the first level's sketch named, when they were read.
fn run_settling(options: &AuditOptions, strategy: Strategy) -> (AuditReport, Option<u32>, Option<u64>) {
    let mut options = options.clone();
    options.strategy = strategy;
    let mut deepest = None;
    let mut settled = None;
    let report = audit(&options, &no_env(), &mut |progress| match progress {
        AuditProgress::Hashing { level } => deepest = deepest.max(Some(level)),
        AuditProgress::Settling { positions } => settled = Some(positions),
        _ => {}
    })
    .unwrap();
    (report, deepest, settled)
}

/// The pair's audit options for `table` keyed by `key`.
fn keyed(pair: &Pair, table: &str, key: &str) -> AuditOptions {
    let mut options = pair.options(table);
    options.key = key.into();
    options
}

/// What must be equal between strategies: everything but the times.
fn answer(report: &AuditReport) -> serde_json::Value {
    let mut json = serde_json::to_value(report).unwrap();
    for field in ["started_at", "finished_at", "duration_seconds", "strategy", "strategy_reason"] {
        json.as_object_mut().unwrap().remove(field);
    }
    json
}

#[test]
fn sparse_drift_in_a_larger_table_is_found_through_several_levels() {
    let sql = "CREATE TABLE public.big (id bigint PRIMARY KEY, note text, amount numeric(12,2)); \
               INSERT INTO public.big SELECT g, 'note ' || g, g / 100.0 FROM generate_series(1, 60000) g;";
    let pair = Pair::same(sql);
    pair.replica
        .client()
        .unwrap()
        .batch_execute(
            "DELETE FROM public.big WHERE id = 17; UPDATE public.big SET note = NULL WHERE id = 30001; \
             UPDATE public.big SET note = '' WHERE id = 30002; INSERT INTO public.big VALUES (70000, 'x', 1);",
        )
        .unwrap();
    let mut options = pair.options("public.big");
    options.columns = Some(vec!["note".into(), "amount".into()]);
    // Without the first level's sketch, the levels locate the four differences.
    options.segment_settings.sketch_rows = 0;
    let (streamed, _) = run(&options, Strategy::Stream);
    let (segmented, levels, settled) = run_settling(&options, Strategy::Segments);
    assert_eq!(answer(&segmented), answer(&streamed));
    assert_eq!((segmented.missing, segmented.changed, segmented.extra, segmented.matched), (1, 2, 1, 59_997));
    assert_eq!(segmented.status, Status::Block);
    assert!(levels >= Some(2), "hashed below the first level: {levels:?}");
    assert_eq!(settled, None);
    // With it (the default), the sketch names the four positions (a changed row is one
    // position, a difference on each side) and the search ends at the first level.
    options.segment_settings.sketch_rows = SearchSettings::default().sketch_rows;
    let (sketched, levels, settled) = run_settling(&options, Strategy::Segments);
    assert_eq!(answer(&sketched), answer(&streamed));
    assert_eq!((levels, settled), (Some(1), Some(4)));
}

#[test]
fn identical_tables_need_only_the_overview_and_uuid_keys_are_segmented() {
    let sql = "CREATE TABLE public.ids (id uuid PRIMARY KEY, v integer); \
               INSERT INTO public.ids SELECT md5(g::text)::uuid, g FROM generate_series(1, 5000) g;";
    let pair = Pair::same(sql);
    let options = pair.options("public.ids");
    let (report, levels) = run(&options, Strategy::Segments);
    assert_eq!((report.status, report.matched), (Status::Pass, 5000));
    assert_eq!(levels, Some(0), "the overview alone proved them equal");

    pair.replica.client().unwrap().batch_execute("UPDATE public.ids SET v = -v WHERE v IN (7, 4000)").unwrap();
    let (streamed, _) = run(&options, Strategy::Stream);
    let (segmented, levels) = run(&options, Strategy::Segments);
    assert_eq!(answer(&segmented), answer(&streamed));
    assert_eq!((segmented.changed, segmented.matched), (2, 4998));
    assert!(levels >= Some(1));
}

#[test]
fn text_keys_are_segmented_with_the_stream_s_answer() {
    // Keys sharing an eight-byte prefix (equal positions: a range that cannot be split), keys
    // differing after byte 8, non-ASCII, the empty key, mixed case (bytewise "B" < "a").
    let sql = "CREATE TABLE public.codes (code text PRIMARY KEY, amount numeric(8,2)); \
               INSERT INTO public.codes SELECT 'k' || g, g FROM generate_series(1, 3000) g; \
               INSERT INTO public.codes SELECT 'customer-' || lpad(g::text, 6, '0'), g FROM generate_series(1, 400) g; \
               INSERT INTO public.codes VALUES ('', 1), ('B', 2), ('a', 3), ('é', 4), ('€uro', 5), ('😀', 6), \
               ('abcdefghX', 7), ('abcdefghY', 8);";
    let pair = Pair::same(sql);
    let (report, levels) = run(&keyed(&pair, "public.codes", "code"), Strategy::Segments);
    assert_eq!((report.status, report.matched, levels), (Status::Pass, 3408, Some(0)));
    assert_eq!(report.strategy, "segments");

    pair.replica
        .client()
        .unwrap()
        .batch_execute(
            "UPDATE public.codes SET amount = 0 WHERE code IN ('k7', 'é', 'abcdefghY', 'customer-000200'); \
             DELETE FROM public.codes WHERE code IN ('k2999', '', 'customer-000001'); \
             INSERT INTO public.codes VALUES ('k0', 1), ('abcdefghZ', 9), ('customer-000401', 1);",
        )
        .unwrap();
    let options = keyed(&pair, "public.codes", "code");
    let (streamed, _) = run(&options, Strategy::Stream);
    let (segmented, levels) = run(&options, Strategy::Segments);
    assert_eq!(answer(&segmented), answer(&streamed));
    assert_eq!((segmented.changed, segmented.missing, segmented.extra), (4, 3, 3));
    assert_eq!(segmented.strategy, "segments");
    assert!(levels >= Some(1), "hashed below the overview: {levels:?}");
}

#[test]
fn char_keys_against_text_and_uuids_against_text_are_segmented() {
    // char(n) is compared right-trimmed: the padded side positions its trimmed text.
    let pair = Pair::new(
        "CREATE TABLE public.tags (tag char(12) PRIMARY KEY, v integer); \
         INSERT INTO public.tags SELECT 't' || g, g FROM generate_series(1, 2000) g;",
        "CREATE TABLE public.tags (tag text PRIMARY KEY, v integer); \
         INSERT INTO public.tags SELECT 't' || g, g FROM generate_series(1, 2000) g; \
         UPDATE public.tags SET v = 0 WHERE tag = 't1500';",
    );
    let options = keyed(&pair, "public.tags", "tag");
    let (streamed, _) = run(&options, Strategy::Stream);
    let (segmented, levels) = run(&options, Strategy::Segments);
    assert_eq!(answer(&segmented), answer(&streamed));
    assert_eq!((segmented.changed, segmented.matched, segmented.strategy), (1, 1999, "segments"));
    assert!(levels >= Some(1), "{levels:?}");

    // A uuid source key against the replica's text: both positioned by the uuid's text.
    let pair = Pair::new(
        "CREATE TABLE public.ids (id uuid PRIMARY KEY, v integer); \
         INSERT INTO public.ids SELECT md5(g::text)::uuid, g FROM generate_series(1, 2000) g;",
        "CREATE TABLE public.ids (id text PRIMARY KEY, v integer); \
         INSERT INTO public.ids SELECT md5(g::text)::uuid::text, g FROM generate_series(1, 2000) g; \
         UPDATE public.ids SET v = 0 WHERE v = 1234; DELETE FROM public.ids WHERE v = 7;",
    );
    let options = pair.options("public.ids");
    let (streamed, _) = run(&options, Strategy::Stream);
    let (segmented, levels) = run(&options, Strategy::Segments);
    assert_eq!(answer(&segmented), answer(&streamed));
    assert_eq!((segmented.changed, segmented.missing, segmented.strategy), (1, 1, "segments"));
    assert!(levels >= Some(1), "{levels:?}");
}

#[test]
fn unhashable_pairs_are_streamed_with_the_same_answer() {
    let pair = Pair::new(
        "CREATE TABLE public.prices (id bigint PRIMARY KEY, price numeric(8,2)); INSERT INTO public.prices VALUES (1, 1.50);",
        "CREATE TABLE public.prices (id bigint PRIMARY KEY, price double precision); INSERT INTO public.prices VALUES (1, 1.5);",
    );
    let (report, levels) = run(&pair.options("public.prices"), Strategy::Segments);
    assert_eq!((report.status, levels), (Status::Pass, Some(0)), "numeric against float is hashed");

    let pair = Pair::new(
        "CREATE TABLE public.refs (id bigint PRIMARY KEY, ref uuid); INSERT INTO public.refs VALUES (1, 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11');",
        "CREATE TABLE public.refs (id bigint PRIMARY KEY, ref text); INSERT INTO public.refs VALUES (1, 'A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11');",
    );
    let (report, levels) = run(&pair.options("public.refs"), Strategy::Segments);
    assert_eq!((report.status, levels), (Status::Pass, None), "a uuid held as text is streamed");
    assert_eq!(report.strategy_reason, "column ref is compared across types in a way SQL cannot hash");
}

#[test]
fn duplicate_keys_without_a_unique_index_stop_the_audit_as_a_stream_does() {
    let sql =
        "CREATE TABLE public.dups (id bigint, v text); INSERT INTO public.dups VALUES (1, 'a'), (1, 'a'), (2, 'b');";
    let pair = Pair::same(sql);
    let mut options = pair.options("public.dups");
    options.strategy = Strategy::Segments;
    let error = audit(&options, &no_env(), &mut |_| {}).unwrap_err();
    assert!(error.to_string().contains("duplicate key 1"), "{error}");
}

#[test]
fn null_is_never_taken_for_a_value_that_hashes_specially() {
    // Zero floats and numeric NaN hash to the seed; NULL adds nothing: with seed 0 they met.
    // numeric NaN, Infinity and -Infinity all hash to the seed.
    let source = "CREATE TABLE public.zeros (id bigint PRIMARY KEY, f double precision, n numeric, r real); \
                  INSERT INTO public.zeros SELECT g, 0, 'NaN', 0 FROM generate_series(1, 5000) g; \
                  UPDATE public.zeros SET n = 'Infinity' WHERE id = 100;";
    let pair = Pair::new(source, source);
    pair.replica
        .client()
        .unwrap()
        .batch_execute(
            "UPDATE public.zeros SET f = NULL WHERE id = 10; UPDATE public.zeros SET n = NULL WHERE id = 2000; \
             UPDATE public.zeros SET n = 0 WHERE id = 3000; UPDATE public.zeros SET r = NULL WHERE id = 4000; \
             UPDATE public.zeros SET f = '-0' WHERE id = 4500; UPDATE public.zeros SET n = '-Infinity' WHERE id = 100; \
             UPDATE public.zeros SET n = 'Infinity' WHERE id = 101;",
        )
        .unwrap();
    let options = pair.options("public.zeros");
    let (streamed, _) = run(&options, Strategy::Stream);
    let (segmented, levels) = run(&options, Strategy::Segments);
    assert!(levels >= Some(1));
    assert_eq!(answer(&segmented), answer(&streamed));
    assert_eq!(segmented.changed, 6, "-0 equals 0; NaN and the infinities are three values; the rest differ");
}

/// Planted differences that sum alike or look alike in a text-keyed table must not PASS under
/// segments: values swapped between two rows of one leaf (keys sharing a long prefix, so one
/// position), a negated amount, a scaled one, a padded text, NULL against '', and a row whose
/// key moved to a neighbour's spelling. Each is found alone, with stream's answer.
#[test]
fn text_keyed_plants_that_hashes_could_confuse_never_pass_under_segments() {
    let sql = "CREATE TABLE public.ledger (code text PRIMARY KEY, amount numeric(12,2), note text); \
               INSERT INTO public.ledger SELECT 'account-' || lpad(g::text, 6, '0'), g * 1.25, 'n' || g \
               FROM generate_series(1, 2500) g; \
               INSERT INTO public.ledger SELECT 'z' || g, g, 'z' || g FROM generate_series(1, 500) g;";
    let plants = [
        // Both rows share the first 7.5 bytes: one position, one leaf.
        "UPDATE public.ledger SET amount = CASE code WHEN 'account-000010' THEN 25.00 ELSE 12.50 END \
         WHERE code IN ('account-000010', 'account-000020')",
        "UPDATE public.ledger SET amount = -amount WHERE code = 'z300'",
        "UPDATE public.ledger SET amount = amount * 10 WHERE code = 'account-001000'",
        "UPDATE public.ledger SET note = note || ' ' WHERE code = 'z42'",
        "UPDATE public.ledger SET note = '' WHERE code = 'z7'",
        "UPDATE public.ledger SET code = 'account-000030 ' WHERE code = 'account-000030'",
    ];
    for plant in plants {
        let pair = Pair::same(sql);
        pair.replica.client().unwrap().batch_execute(plant).unwrap();
        let options = keyed(&pair, "public.ledger", "code");
        let (streamed, _) = run(&options, Strategy::Stream);
        let (segmented, _) = run(&options, Strategy::Segments);
        assert_eq!(segmented.strategy, "segments", "{plant}");
        assert_eq!(segmented.status, Status::Block, "{plant}");
        assert!(segmented.difference_count > 0, "{plant}");
        assert_eq!(answer(&segmented), answer(&streamed), "{plant}");
    }
    // NULL against '' on the source side too.
    let pair = Pair::new(sql, sql);
    pair.source.client().unwrap().batch_execute("UPDATE public.ledger SET note = NULL WHERE code = 'z8'").unwrap();
    pair.replica.client().unwrap().batch_execute("UPDATE public.ledger SET note = '' WHERE code = 'z8'").unwrap();
    let options = keyed(&pair, "public.ledger", "code");
    let (segmented, _) = run(&options, Strategy::Segments);
    assert_eq!((segmented.status, segmented.changed), (Status::Block, 1));
}

/// Keys sharing a prefix longer than a segment position (`customer-000000012345`: before the
/// prefix was skipped, all of them had one position, a single leaf streamed whole): a change,
/// a lost row and an extra row among 20,000 of them are found under segments below the
/// overview, as the stream finds them, with or without a byte-order index on the key.
#[test]
fn a_difference_among_keys_sharing_a_long_prefix_is_found_by_splitting_them() {
    for key in ["text COLLATE \"C\" PRIMARY KEY", "text COLLATE \"en-x-icu\" PRIMARY KEY"] {
        let sql = format!(
            "CREATE TABLE public.accounts (code {key}, balance numeric(12,2), note text); \
             INSERT INTO public.accounts SELECT 'customer-' || lpad(g::text, 12, '0'), g * 1.25, 'n' || g \
             FROM generate_series(1, 20000) g;"
        );
        let pair = Pair::same(&sql);
        pair.replica
            .client()
            .unwrap()
            .batch_execute(
                "UPDATE public.accounts SET balance = balance + 0.01 WHERE code = 'customer-000000012345'; \
                 DELETE FROM public.accounts WHERE code = 'customer-000000000007'; \
                 INSERT INTO public.accounts VALUES ('customer-000000020001', 1, 'x');",
            )
            .unwrap();
        let mut options = keyed(&pair, "public.accounts", "code");
        let (streamed, _) = run(&options, Strategy::Stream);
        // The sketch names the three positions at once; without it, the levels split keys
        // that share their first 60 bits after the common prefix.
        let (sketched, _, settled) = run_settling(&options, Strategy::Segments);
        assert_eq!(answer(&sketched), answer(&streamed), "{key}");
        assert_eq!(settled, Some(3), "{key}");
        options.segment_settings.sketch_rows = 0;
        let (segmented, levels) = run(&options, Strategy::Segments);
        assert_eq!(answer(&segmented), answer(&streamed), "{key}");
        assert_eq!((segmented.changed, segmented.missing, segmented.extra, segmented.matched), (1, 1, 1, 19_998));
        assert_eq!(segmented.strategy, "segments");
        assert!(levels >= Some(2), "{key}: the keys were split below the first level: {levels:?}");
    }
}

/// More differing rows than one `OR` arm per leaf allows (`OR_LEAVES`): the leaves are then
/// selected by listed keys (integer), through the index (uuid) or by one bucketed pass (no
/// unique index). Every kind of plant — a lost row, an extra row, a sign, a scale, NULL
/// against '', trailing padding, two values swapped between rows — is counted as the stream
/// counts it, never proven equal.
#[test]
fn thousands_of_scattered_differences_are_all_found_whichever_way_the_leaves_are_selected() {
    use datadiff_access::segment::OR_LEAVES;
    for (table, key, ddl) in [
        ("ints", "g * 7", "id bigint PRIMARY KEY"),
        ("uuids", "md5(g::text)::uuid", "id uuid PRIMARY KEY"),
        ("bare", "g * 7", "id bigint NOT NULL"),
    ] {
        let sql = format!(
            "CREATE TABLE public.{table} ({ddl}, note text, amount numeric(12,2)); \
             INSERT INTO public.{table} SELECT {key}, 'note ' || g, g / 100.0 FROM generate_series(1, 200000) g;"
        );
        let pair = Pair::same(&sql);
        pair.replica
            .client()
            .unwrap()
            .batch_execute(&format!(
                "DELETE FROM public.{table} WHERE id IN (SELECT {key} FROM generate_series(1, 200000) g WHERE g % 800 = 1); \
                 UPDATE public.{table} SET amount = -amount WHERE id IN (SELECT {key} FROM generate_series(1, 200000) g WHERE g % 800 = 2); \
                 UPDATE public.{table} SET amount = amount * 10 WHERE id IN (SELECT {key} FROM generate_series(1, 200000) g WHERE g % 800 = 3); \
                 UPDATE public.{table} SET note = '' WHERE id IN (SELECT {key} FROM generate_series(1, 200000) g WHERE g % 1600 = 4); \
                 UPDATE public.{table} SET note = note || ' ' WHERE id IN (SELECT {key} FROM generate_series(1, 200000) g WHERE g % 1600 = 44); \
                 UPDATE public.{table} AS t SET note = s.note FROM (SELECT {key} AS id, 'note ' || (g + 1) AS note FROM generate_series(1, 200000) g WHERE g % 800 = 5 \
                     UNION ALL SELECT {key}, 'note ' || (g - 1) FROM generate_series(1, 200000) g WHERE g % 800 = 6) AS s WHERE t.id = s.id; \
                 INSERT INTO public.{table} SELECT {extra}, 'x', 1 FROM generate_series(1, 300) g;",
                extra = if key.contains("uuid") { "md5('extra' || g)::uuid" } else { "g * 7 + 3" },
            ))
            .unwrap();
        pair.source.client().unwrap().batch_execute(&format!("UPDATE public.{table} SET note = NULL WHERE id IN (SELECT {key} FROM generate_series(1, 200000) g WHERE g % 1600 = 4)")).unwrap();
        let mut options = pair.options(&format!("public.{table}"));
        options.columns = Some(vec!["note".into(), "amount".into()]);
        let (streamed, _) = run(&options, Strategy::Stream);
        let (segmented, _) = run(&options, Strategy::Segments);
        assert_eq!(answer(&segmented), answer(&streamed), "{table}");
        // 250 lost, 300 extra; sign 250, scale 250, NULL against '' 125, padding 125, swapped
        // 500 (two rows each), scattered over 200,000 rows: far from dense drift.
        assert_eq!((segmented.missing, segmented.extra, segmented.changed), (250, 300, 1_250), "{table}");
        assert!(segmented.missing + segmented.extra + segmented.changed > OR_LEAVES as u64);
        assert_eq!(segmented.status, Status::Block, "{table}");
    }
}

/// The attack on the sketch: a table large enough to be sketched, with each planted change
/// a verdict must never hide — two rows' values swapped, a sign flipped, a scale shifted, a
/// text padded with a blank, NULL against `''` — and one moved row (deleted under one key,
/// inserted under another). A `char(n)` padded differently in the replica's `text` is the
/// same value (both sides are right-trimmed, docs/comparison.md) and must stay matched. The sketch names them and
/// settles the search; the answer is the stream's, every change counted, never a PASS.
#[test]
fn planted_changes_the_sketch_names_are_each_found_as_the_stream_finds_them() {
    let sql = "CREATE TABLE public.ledger (id bigint PRIMARY KEY, amount numeric(14,4), code char(6), note text); \
               INSERT INTO public.ledger SELECT g, g * 1.5, 'c' || (g % 97), 'n' || g FROM generate_series(1, 30000) g;";
    let pair = Pair::same(sql);
    pair.replica
        .client()
        .unwrap()
        .batch_execute(
            "UPDATE public.ledger SET note = CASE id WHEN 101 THEN 'n202' ELSE 'n101' END WHERE id IN (101, 202); \
             UPDATE public.ledger SET amount = -amount WHERE id = 7000; \
             UPDATE public.ledger SET amount = amount * 10 WHERE id = 9000; \
             ALTER TABLE public.ledger ALTER COLUMN code TYPE text; \
             UPDATE public.ledger SET code = code || ' ' WHERE id = 12000; \
             UPDATE public.ledger SET note = note || ' ' WHERE id = 18000; \
             UPDATE public.ledger SET note = '' WHERE id = 15000; \
             UPDATE public.ledger SET note = NULL WHERE id = 15001; \
             DELETE FROM public.ledger WHERE id = 20000; \
             INSERT INTO public.ledger VALUES (40000, 30000, 'c22', 'n20000');",
        )
        .unwrap();
    pair.source.client().unwrap().batch_execute("UPDATE public.ledger SET note = '' WHERE id = 15001").unwrap();
    let options = pair.options("public.ledger");
    let (streamed, _) = run(&options, Strategy::Stream);
    let (sketched, levels, settled) = run_settling(&options, Strategy::Segments);
    assert_eq!(answer(&sketched), answer(&streamed));
    // Swapped (2), negated, scaled, a padded text, '' for a note, NULL for '': 7 changed;
    // one missing, one extra; the re-padded char(6) matched.
    assert_eq!((sketched.changed, sketched.missing, sketched.extra), (7, 1, 1), "{}", sketched.strategy_reason);
    assert_eq!(sketched.matched, 30_000 - 8);
    assert_ne!(sketched.status, Status::Pass);
    assert_eq!((levels, settled), (Some(1), Some(9)));
}
