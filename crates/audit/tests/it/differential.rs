//! The differential harness, the audit's part: the project's standing proof that a verdict
//! cannot lie.
//!
//! Random tables over every type pair of the comparison table (NULLs, `''`, NaN, ±Infinity,
//! -0, extreme scales, unicode, padded text, values whose PostgreSQL hashes collide), with
//! random planted mutations on the replica (changed values, swaps and permutations of one
//! column's values among rows, sign flips and scale shifts, deleted, inserted, moved and
//! duplicated rows): the audit with the `stream` strategy, the audit with the `segments`
//! strategy (small, random search settings, so the search goes several levels deep even on
//! small tables), the live audit's recheck (every differing key read again by its bound key
//! values: on a table nobody writes, each persists as found) and the oracle of `cases.rs`
//! must agree, field for field.
//!
//! The run is deterministic: `DATADIFF_DIFFERENTIAL_SEED` and `DATADIFF_DIFFERENTIAL_CASES`
//! choose it; `DATADIFF_DIFFERENTIAL_CASE=N` replays one case. A failure prints the seed, the
//! case and its plan.

use std::time::Duration;

use datadiff_audit::{AuditOptions, AuditProgress, AuditReport, Live, audit};
use datadiff_diff_core::segment::Strategy;
use serde_json::{Value as Json, json};

use crate::cases::{Case, Expected, KeyKind, Kind, run_plan};
use crate::support::{Pair, no_env};

/// Cases per run in CI (each is two audits over two fresh tables).
const CASES: u64 = 60;

/// Composite-key cases per run in CI.
const COMPOSITE_CASES: u64 = 30;

/// Text-key cases per run in CI.
const TEXT_CASES: u64 = 30;

/// Cases of keys sharing a long prefix, and of uuid keys, per run in CI.
const SHARED_PREFIX_CASES: u64 = 20;

/// Date- and timestamp-keyed cases per run in CI.
const CALENDAR_CASES: u64 = 24;

/// The oracle's answer as the audit report words it.
fn report_of(expected: &Expected) -> Json {
    let examples: Vec<Json> = expected
        .examples
        .iter()
        .map(|(kind, key, fields)| match kind {
            Kind::Missing => json!({(key.report_field()): key.json(), "kind": "MISSING_IN_REPLICA"}),
            Kind::Extra => json!({(key.report_field()): key.json(), "kind": "EXTRA_IN_REPLICA"}),
            Kind::Changed => json!({(key.report_field()): key.json(), "kind": "CHANGED", "fields": fields}),
        })
        .collect();
    let differences = expected.missing + expected.extra + expected.changed;
    json!({
        "status": if differences == 0 { "PASS" } else { "BLOCK" },
        "reason": if differences > 0 { "ROW_DIFFERENCES" } else { "PARITY_VERIFIED" },
        "source_rows": expected.matched + expected.missing + expected.changed,
        "replica_rows": expected.matched + expected.extra + expected.changed,
        "matched": expected.matched,
        "missing": expected.missing,
        "extra": expected.extra,
        "changed": expected.changed,
        "difference_count": differences,
        "examples": examples,
        "examples_truncated": differences > expected.examples.len() as u64,
    })
}

/// The parts of a report the oracle predicts.
fn verdict(report: &AuditReport) -> Json {
    let json = serde_json::to_value(report).unwrap();
    let mut verdict = serde_json::Map::new();
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
        verdict.insert(field.to_owned(), json[field].clone());
    }
    Json::Object(verdict)
}

fn run(options: &AuditOptions, strategy: Strategy) -> Result<(AuditReport, bool), String> {
    let mut options = options.clone();
    options.strategy = strategy;
    let mut hashed = false;
    let report = audit(&options, &no_env(), &mut |progress| {
        if let AuditProgress::Hashing { .. } = progress {
            hashed = true;
        }
    })
    .map_err(|error| error.to_string())?;
    Ok((report, hashed))
}

/// Runs one case against real databases; the error says what disagreed. `Ok(true)` when the
/// segment strategy hashed.
fn check(pair: &Pair, case: &Case) -> Result<bool, String> {
    pair.source
        .client()
        .unwrap()
        .batch_execute(&case.create_sql(false, &[]))
        .map_err(|error| format!("source: {error}"))?;
    pair.replica
        .client()
        .unwrap()
        .batch_execute(&case.create_sql(true, &[]))
        .map_err(|error| format!("replica: {error}"))?;
    let mut options = pair.options("public.cases");
    options.key = case.key.columns().iter().map(|(name, _, _)| *name).collect::<Vec<_>>().join(",");
    options.allow_empty = true;
    options.max_examples = case.max_examples;
    options.empty_string_as_null = case.empty_string_as_null;
    options.segment_settings = case.settings;
    let expected = report_of(&case.expected());
    let (streamed, _) = run(&options, Strategy::Stream)?;
    if verdict(&streamed) != expected {
        return Err(format!("stream disagrees with the oracle:\n stream {}\n oracle {expected}", verdict(&streamed)));
    }
    let (segmented, hashed) = run(&options, Strategy::Segments)?;
    if verdict(&segmented) != expected {
        return Err(format!(
            "segments disagree with the oracle ({}):\n segments {}\n oracle   {expected}",
            segmented.strategy_reason,
            verdict(&segmented)
        ));
    }
    // A live audit's recheck reads the differing keys again by bound key values: on tables
    // nobody writes, every difference persists exactly as the first pass found it.
    let mut live = options.clone();
    live.cutover_ready = false;
    live.live = Some(Live { settle: Duration::ZERO, position: None });
    let (rechecked, _) = run(&live, Strategy::Stream)?;
    if verdict(&rechecked) != expected {
        return Err(format!(
            "the live recheck disagrees with the oracle:\n live   {}\n oracle {expected}",
            verdict(&rechecked)
        ));
    }
    let recheck = rechecked.live.as_ref().ok_or("a live audit without its live report")?;
    if recheck.in_flight != 0 || recheck.persisting != rechecked.difference_count {
        return Err(format!("a static table had keys in flight: {recheck:?}"));
    }
    let hashable = case.key.hashable();
    if hashable && segmented.strategy == "segments" && !hashed {
        return Err("the segment strategy said it hashed but never did".to_owned());
    }
    Ok(hashed)
}

#[test]
fn segments_stream_and_the_oracle_agree_on_random_tables_and_mutations() {
    let (seed, numbers) = run_plan(CASES);
    let replaying = numbers.len() == 1;
    let pair = Pair::same("SELECT 1");
    let mut segmented_cases = 0;
    for index in numbers {
        let case = crate::cases::case(seed, index);
        if let Err(disagreement) = check(&pair, &case) {
            panic!(
                "the differential harness found a disagreement: rerun with DATADIFF_DIFFERENTIAL_SEED={seed:#x} \
                 DATADIFF_DIFFERENTIAL_CASE={index}\ncase: {}\n{disagreement}",
                case.plan
            );
        }
        if case.key.hashable() && !case.source.is_empty() {
            segmented_cases += 1;
        }
    }
    assert!(segmented_cases > 0 || replaying, "no case could hash");
}

/// The same harness over composite keys: `(integer, integer)` (a line item's; segmented on
/// its first column) and `(text, integer)` (segmented on its text), with rows moved between key parts —
/// `(1, 2)` to `(2, 1)` — among the planted mutations.
#[test]
fn segments_stream_and_the_oracle_agree_on_composite_keys() {
    let (seed, numbers) = run_plan(COMPOSITE_CASES);
    let replaying = numbers.len() == 1;
    let pair = Pair::same("SELECT 1");
    let mut segmented_cases = 0;
    for index in numbers {
        let case = crate::cases::composite_case(seed, index);
        if let Err(disagreement) = check(&pair, &case) {
            panic!(
                "the differential harness found a disagreement over a composite key: rerun \
                 segments_stream_and_the_oracle_agree_on_composite_keys with DATADIFF_DIFFERENTIAL_SEED={seed:#x} \
                 DATADIFF_DIFFERENTIAL_CASE={index}\ncase: {}\n{disagreement}",
                case.plan
            );
        }
        if case.key.hashable() && !case.source.is_empty() {
            segmented_cases += 1;
        }
    }
    assert!(segmented_cases > 0 || replaying, "no composite case could hash");
}

/// Runs the harness over `cases` cases of `kinds` (the text-key sequence of the seed), and
/// asserts that segments really hashed some: a disagreement names the test to rerun and the
/// seed and case.
fn agree_on_hashed_keys(test: &str, shape: &str, cases: u64, kinds: &[KeyKind]) {
    let (seed, numbers) = run_plan(cases);
    let replaying = numbers.len() == 1;
    let pair = Pair::same("SELECT 1");
    let mut hashed_cases = 0;
    for index in numbers {
        let case = crate::cases::text_case(seed, index, kinds);
        match check(&pair, &case) {
            Ok(hashed) => hashed_cases += usize::from(hashed),
            Err(disagreement) => panic!(
                "the differential harness found a disagreement over {shape}: rerun {test} with \
                 DATADIFF_DIFFERENTIAL_SEED={seed:#x} DATADIFF_DIFFERENTIAL_CASE={index}\ncase: {}\n{disagreement}",
                case.plan
            ),
        }
    }
    assert!(hashed_cases > 0 || replaying, "no case of {shape} was hashed");
}

/// The same harness over text keys (`text` against `varchar`): bytewise order against a
/// locale's, a trailing blank, keys sharing prefixes longer than eight bytes (one segment
/// position: such a range is a leaf, streamed), keys differing only after byte 8, multi-byte
/// UTF-8 and the empty key, and composite keys whose first column is text. Segments must
/// really hash them.
#[test]
fn segments_stream_and_the_oracle_agree_on_text_keys() {
    agree_on_hashed_keys("segments_stream_and_the_oracle_agree_on_text_keys", "a text key", TEXT_CASES, &KeyKind::TEXT);
}

/// The same harness over keys whose bytes share a prefix longer than a segment position
/// (`customer-000000000123`, with suffixes and multi-byte UTF-8 after the digits: the search
/// positions them after the prefix both sides share) and over uuid keys. Segments must really
/// hash them.
#[test]
fn segments_stream_and_the_oracle_agree_on_keys_sharing_a_long_prefix_and_uuids() {
    agree_on_hashed_keys(
        "segments_stream_and_the_oracle_agree_on_keys_sharing_a_long_prefix_and_uuids",
        "keys sharing a long prefix",
        SHARED_PREFIX_CASES,
        &KeyKind::SHARED_PREFIX,
    );
}

/// The same harness over date and timestamp keys: a `timestamptz` key against a `timestamp`
/// replica (instants a microsecond apart share a segment position, ±infinity at the ends,
/// instants before 2000), a `date` key from 4714 BC to 5874897 AD, and a composite `(date,
/// integer)` key against `(timestamp, bigint)`, the date loaded as its midnight, with rows
/// moved by a microsecond or a day. Segments must really hash them.
#[test]
fn segments_stream_and_the_oracle_agree_on_date_and_timestamp_keys() {
    agree_on_hashed_keys(
        "segments_stream_and_the_oracle_agree_on_date_and_timestamp_keys",
        "a date or timestamp key",
        CALENDAR_CASES,
        &KeyKind::CALENDAR,
    );
}

/// Cases of the split harness per key shape, per run in CI.
const SPLIT_CASES: u64 = 6;

/// The audit with its scan divided into `parts` key ranges on `jobs` session pairs: its
/// report, and the parts it said it scanned.
fn run_split(
    options: &AuditOptions,
    strategy: Strategy,
    parts: usize,
    jobs: usize,
) -> Result<(AuditReport, u64), String> {
    let mut options = options.clone();
    options.strategy = strategy;
    options.parts = parts;
    options.jobs = jobs;
    let mut scanned_parts = 0;
    let report = audit(&options, &no_env(), &mut |progress| {
        if let AuditProgress::Parts { total, .. } = progress {
            scanned_parts = total;
        }
    })
    .map_err(|error| error.to_string())?;
    Ok((report, scanned_parts))
}

/// One case split several ways (2 and 3 parts, and more parts than rows), with both
/// strategies and one to three jobs: each report must be the oracle's, as the unsplit
/// audit's is. `Ok(true)` when the scan really was divided.
fn check_split(pair: &Pair, case: &Case) -> Result<bool, String> {
    pair.source
        .client()
        .unwrap()
        .batch_execute(&case.create_sql(false, &[]))
        .map_err(|error| format!("source: {error}"))?;
    pair.replica
        .client()
        .unwrap()
        .batch_execute(&case.create_sql(true, &[]))
        .map_err(|error| format!("replica: {error}"))?;
    let mut options = pair.options("public.cases");
    options.key = case.key.columns().iter().map(|(name, _, _)| *name).collect::<Vec<_>>().join(",");
    options.allow_empty = true;
    options.max_examples = case.max_examples;
    options.empty_string_as_null = case.empty_string_as_null;
    options.segment_settings = case.settings;
    let expected = report_of(&case.expected());
    let mut divided = false;
    let more_than_rows = case.source.len() + 5;
    for (parts, jobs, strategy) in [
        (2, 1, Strategy::Stream),
        (3, 2, Strategy::Segments),
        (more_than_rows, 3, Strategy::Stream),
        (more_than_rows, 2, Strategy::Segments),
    ] {
        let (report, scanned) = run_split(&options, strategy, parts, jobs)?;
        if verdict(&report) != expected {
            return Err(format!(
                "{parts} parts on {jobs} jobs ({strategy:?}) disagree with the oracle:\n split  {}\n oracle {expected}",
                verdict(&report)
            ));
        }
        divided |= scanned > 1;
    }
    Ok(divided)
}

/// The split scan (`--jobs`) over every key shape the harness plants: integer, composite,
/// text and uuid keys, each split into parts whose bounds fall on the source's own keys (so
/// planted differences sit on the first and last keys of parts), and into more parts than
/// rows: every report equals the oracle's, as the unsplit audit's does.
#[test]
fn split_scans_and_the_oracle_agree_on_every_key_shape() {
    let (seed, numbers) = run_plan(SPLIT_CASES);
    let pair = Pair::same("SELECT 1");
    let mut divided = 0;
    for index in numbers {
        let cases = [
            ("integer", crate::cases::case(seed, index)),
            ("composite", crate::cases::composite_case(seed, index)),
            ("text", crate::cases::text_case(seed, index, &KeyKind::TEXT)),
            ("shared prefix or uuid", crate::cases::text_case(seed, index, &KeyKind::SHARED_PREFIX)),
            ("date or timestamp", crate::cases::text_case(seed, index, &KeyKind::CALENDAR)),
        ];
        for (shape, case) in cases {
            match check_split(&pair, &case) {
                Ok(split) => divided += usize::from(split),
                Err(disagreement) => panic!(
                    "the split harness found a disagreement over a {shape} key: rerun \
                     split_scans_and_the_oracle_agree_on_every_key_shape with DATADIFF_DIFFERENTIAL_SEED={seed:#x} \
                     DATADIFF_DIFFERENTIAL_CASE={index}\ncase: {}\n{disagreement}",
                    case.plan
                ),
            }
        }
    }
    assert!(divided > 0, "no scan was divided into parts");
}
