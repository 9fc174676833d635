//! The pipeline against in-memory sides: its strategy rules, its failures, and its
//! comparison's properties — segments, stream and an independent oracle agree on random rows
//! with planted swaps, sign flips, moved, deleted, inserted and changed rows.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use datadiff_diff_core::Side;
use datadiff_diff_core::merge::{DifferenceKind, Example, Key, MergeError, Summary};
use datadiff_diff_core::segment::{Link, SearchSettings, Strategy, StrategyUsed};
use proptest::prelude::*;
use proptest::strategy::Strategy as _;

use super::*;

/// A row of two nullable integer fields, encoded as 8 big-endian bytes each.
fn row(key: Key, fields: &[Option<i64>]) -> EncodedRow {
    let bytes: Vec<Option<[u8; 8]>> = fields.iter().map(|field| field.map(i64::to_be_bytes)).collect();
    EncodedRow::from_fields(key, bytes.iter().map(|field| field.as_ref().map(|bytes| &bytes[..])))
}

fn int_rows(keys: impl IntoIterator<Item = i64>) -> Vec<EncodedRow> {
    keys.into_iter().map(|key| row(Key::Int(key), &[Some(key * 3), None])).collect()
}

fn comparison(strategy: Strategy) -> Comparison<'static> {
    let mut comparison = Comparison::new(10, vec!["a".to_owned(), "b".to_owned()]);
    comparison.strategy = strategy;
    comparison
}

/// Hooks that remember what they heard.
#[derive(Default)]
struct Heard {
    streamed: Vec<String>,
    prepared: bool,
    phases: Vec<Phase>,
    searched: Option<Option<Found>>,
    recorded: u64,
    stop_after: Option<u64>,
    source_rows: Arc<AtomicU64>,
}

struct Meter(Arc<AtomicU64>);

impl RowMeter for Meter {
    fn row(&mut self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

impl Hooks for Heard {
    type Stop = String;
    type Meter = Meter;

    fn streaming(&mut self, strategy: &StrategyUsed) {
        self.streamed.push(strategy.reason.clone());
    }

    fn preparing(&mut self) {
        self.prepared = true;
    }

    fn hashing(&mut self, phase: Phase) {
        self.phases.push(phase);
    }

    fn searched(&mut self, _strategy: &StrategyUsed, found: Option<&Found>) {
        self.searched = Some(found.copied());
    }

    fn source_meter(&mut self) -> Option<Meter> {
        Some(Meter(Arc::clone(&self.source_rows)))
    }

    fn recorded(&mut self, _summary: &Summary<Key>) -> Result<(), String> {
        self.recorded += 1;
        match self.stop_after {
            Some(limit) if self.recorded > limit => Err(format!("more than {limit} rows")),
            _ => Ok(()),
        }
    }
}

type Outcome = Result<Compared, CompareError<MemoryError, String>>;

fn run(source: &mut MemorySide, target: &mut MemorySide, comparison: &Comparison<'_>, heard: &mut Heard) -> Outcome {
    compare(source, target, comparison, heard)
}

#[test]
fn each_rule_of_the_strategy_is_worded_as_the_callers_store_it() {
    let reason = |strategy: Strategy, source: MemorySide, target: MemorySide, counted: Option<u64>| {
        let mut comparison = comparison(strategy);
        comparison.counted_rows = counted;
        let (mut source, mut target) = (source, target);
        let compared = run(&mut source, &mut target, &comparison, &mut Heard::default()).unwrap();
        (compared.strategy.strategy, compared.strategy.reason)
    };
    let side = |side| MemorySide::new(side, int_rows(1..=50));
    let (source, target) = (side(Side::Source), side(Side::Target));
    assert_eq!(
        reason(Strategy::Stream, source.clone(), target.clone(), None),
        (Strategy::Stream, "stream requested".into())
    );
    assert_eq!(
        reason(Strategy::Auto, source.clone(), target.clone(), Some(50)),
        (Strategy::Stream, "auto: 50 rows (at most 10000 stream outright)".into())
    );
    assert_eq!(
        reason(Strategy::Auto, source.clone(), target.clone(), Some(50_000)),
        (
            Strategy::Stream,
            "auto: both links are fast (source on this machine, target on this machine; streams from 400 MB/s)".into()
        )
    );
    let slow = |side: MemorySide| side.with_link(Link::Measured(12.5e6));
    assert_eq!(
        reason(Strategy::Auto, slow(source.clone()), target.clone(), None),
        (
            Strategy::Segments,
            "auto: a link is slow (source 12.5 MB/s, target on this machine; streams from 400 MB/s)".into()
        )
    );
    let fast = |side: MemorySide| side.with_link(Link::Measured(900e6));
    assert_eq!(reason(Strategy::Auto, fast(source.clone()), fast(target.clone()), None).0, Strategy::Stream);
    assert_eq!(
        reason(Strategy::Segments, source.clone(), target.clone(), None),
        (Strategy::Segments, "segments requested".into())
    );
    assert_eq!(
        reason(Strategy::Segments, source.clone(), target.clone().without_hashing(), None),
        (Strategy::Stream, "the target server cannot hash".into())
    );
    // A side whose database never hashes streams whatever was asked, first of all.
    assert_eq!(
        reason(Strategy::Segments, source.clone().never_hashing("engine X streams"), target.clone(), None),
        (Strategy::Stream, "engine X streams".into())
    );
    let mut unhashable = comparison(Strategy::Segments);
    unhashable.unhashable = Some("column b is compared across types in a way SQL cannot hash".into());
    let (mut source, mut target) = (source, target);
    let mut heard = Heard::default();
    let compared = run(&mut source, &mut target, &unhashable, &mut heard).unwrap();
    assert_eq!(compared.strategy.reason, "column b is compared across types in a way SQL cannot hash");
    assert_eq!(heard.streamed, vec![compared.strategy.reason.clone()]);
    assert!(!heard.prepared && source.hashing_statements() == 0, "nothing asked of the servers");
}

#[test]
fn equal_sides_are_proven_by_their_overviews_without_a_stream() {
    let mut source = MemorySide::new(Side::Source, int_rows(1..=5_000));
    let mut target = MemorySide::new(Side::Target, int_rows(1..=5_000));
    let mut heard = Heard::default();
    let compared = run(&mut source, &mut target, &comparison(Strategy::Segments), &mut heard).unwrap();
    assert_eq!(compared.summary.matched, 5_000);
    assert_eq!(compared.summary.difference_count(), 0);
    assert_eq!(compared.streamed, [Duration::ZERO; 2]);
    assert_eq!(heard.phases, vec![Phase::Overview]);
    assert_eq!(heard.searched, Some(Some(Found { matched: 5_000, segments: 0, levels: 0 })));
    assert_eq!(heard.source_rows.load(Ordering::Relaxed), 0, "no row streamed");
    assert_eq!(source.hashing_statements(), 1);
}

#[test]
fn one_changed_row_streams_only_its_segment() {
    let mut source = MemorySide::new(Side::Source, int_rows(1..=20_000));
    let mut changed = int_rows(1..=20_000);
    changed[12_344] = row(Key::Int(12_345), &[Some(0), None]);
    let mut target = MemorySide::new(Side::Target, changed);
    let mut heard = Heard::default();
    let compared = run(&mut source, &mut target, &comparison(Strategy::Segments), &mut heard).unwrap();
    assert_eq!((compared.summary.matched, compared.summary.changed), (19_999, 1));
    assert_eq!(
        compared.summary.examples,
        vec![Example { kind: DifferenceKind::Changed, key: Key::Int(12_345), fields: vec!["a".to_owned()] }]
    );
    let streamed = heard.source_rows.load(Ordering::Relaxed);
    assert!((1..=64).contains(&streamed), "{streamed} source rows streamed");
    assert!(matches!(heard.searched, Some(Some(Found { segments: 1, .. }))), "{:?}", heard.searched);
}

#[test]
fn duplicate_keys_leave_the_hashes_undecided_and_the_stream_reports_them() {
    let mut source = MemorySide::new(Side::Source, int_rows([1, 2, 2, 3])).with_unique_key(false);
    let mut target = MemorySide::new(Side::Target, int_rows([1, 2, 3]));
    let mut heard = Heard::default();
    let error = run(&mut source, &mut target, &comparison(Strategy::Segments), &mut heard).unwrap_err();
    assert_eq!(heard.streamed, vec!["the hashes cannot decide: on the source, a key appears more than once"]);
    assert_eq!(heard.searched, Some(None));
    assert!(
        matches!(&error, CompareError::Merge(MergeError::DuplicateKey { side: Side::Source, key }) if key == "2"),
        "{error:?}"
    );
}

#[test]
fn rows_out_of_key_order_and_lost_streams_stop_the_merge() {
    let mut source = MemorySide::new(Side::Source, int_rows([1, 3, 2]));
    let mut target = MemorySide::new(Side::Target, int_rows([1, 2, 3]));
    let error = run(&mut source, &mut target, &comparison(Strategy::Stream), &mut Heard::default()).unwrap_err();
    assert!(matches!(error, CompareError::Merge(MergeError::OutOfOrder { side: Side::Source, .. })), "{error:?}");
    let mut source = MemorySide::new(Side::Source, int_rows(1..=100));
    let mut target = MemorySide::new(Side::Target, int_rows(1..=100)).failing_after(40).with_batch_rows(7);
    let error = run(&mut source, &mut target, &comparison(Strategy::Stream), &mut Heard::default()).unwrap_err();
    let CompareError::Merge(MergeError::Read { side: Side::Target, source }) = error else { panic!("{error:?}") };
    assert_eq!(source.to_string(), "reading the target stream failed");
}

#[test]
fn a_hook_stops_the_merge_with_its_own_reason() {
    let mut source = MemorySide::new(Side::Source, int_rows(1..=1_000));
    let mut target = MemorySide::new(Side::Target, int_rows(1..=1_000)).with_batch_rows(3);
    let mut heard = Heard { stop_after: Some(10), ..Heard::default() };
    let error = run(&mut source, &mut target, &comparison(Strategy::Stream), &mut heard).unwrap_err();
    assert!(matches!(&error, CompareError::Stopped(reason) if reason == "more than 10 rows"), "{error:?}");
    assert_eq!(heard.recorded, 11);
}

#[test]
fn streams_that_do_not_end_meet_the_deadline_and_an_interruption_stops_them() {
    let mut deadline = comparison(Strategy::Stream);
    deadline.deadline = Some(Duration::from_millis(100));
    let mut source = MemorySide::new(Side::Source, int_rows(1..=10)).endless();
    let mut target = MemorySide::new(Side::Target, int_rows(1..=10));
    let error = run(&mut source, &mut target, &deadline, &mut Heard::default()).unwrap_err();
    assert!(matches!(&error, CompareError::NoAnswer(sides) if sides == &[Side::Source]), "{error:?}");

    let interrupted = AtomicBool::new(true);
    let asked = || interrupted.load(Ordering::Relaxed);
    let mut stream = comparison(Strategy::Stream);
    stream.interrupted = Some(&asked);
    let mut source = MemorySide::new(Side::Source, int_rows(1..=10)).endless();
    let mut target = MemorySide::new(Side::Target, int_rows(1..=10)).endless();
    let error = run(&mut source, &mut target, &stream, &mut Heard::default()).unwrap_err();
    assert!(matches!(error, CompareError::Interrupted), "{error:?}");
    // Before hashing too: nothing is hashed once interrupted.
    let mut segments = comparison(Strategy::Segments);
    segments.interrupted = Some(&asked);
    let mut source = MemorySide::new(Side::Source, int_rows(1..=10));
    let mut target = MemorySide::new(Side::Target, int_rows(1..=10));
    let error = run(&mut source, &mut target, &segments, &mut Heard::default()).unwrap_err();
    assert!(matches!(error, CompareError::Interrupted), "{error:?}");
    assert_eq!(source.hashing_statements(), 0);
}

// --- The comparison's properties ---------------------------------------------------------

/// How the keys of a random case are made.
#[derive(Debug, Clone, Copy)]
enum KeyKind {
    /// Integers, some near the ends of `i64`.
    Int,
    /// Uuids, some sharing their first 60 bits (one segment position).
    Uuid,
    /// Composite `(integer, integer)` keys, seven per first part (one segment position): a
    /// row moved to a near key stays in its first part, and only the second part tells.
    Pair,
}

fn key_of(kind: KeyKind, seed: i64) -> Key {
    match kind {
        KeyKind::Int => Key::Int(match seed % 97 {
            0 => i64::MAX - seed.abs() % 7,
            1 => i64::MIN + seed.abs() % 7,
            _ => seed,
        }),
        KeyKind::Uuid => {
            let mut bytes = [0u8; 16];
            // Few distinct prefixes: many uuids share a position.
            bytes[..8].copy_from_slice(&((seed.rem_euclid(13) as u64) << 8).to_be_bytes());
            bytes[8..].copy_from_slice(&seed.to_be_bytes());
            Key::Uuid(bytes)
        }
        // Lexicographic order of (seed / 7, seed % 7) is the seeds' order.
        KeyKind::Pair => Key::from_parts(vec![Key::Int(seed.div_euclid(7)), Key::Int(seed.rem_euclid(7))]),
    }
}

/// A planted mutation of the target.
#[derive(Debug, Clone)]
enum Mutation {
    /// A new value in one field.
    Change { row: usize, field: usize, value: Option<i64> },
    /// Two rows' values of one field swapped (a permutation a plain sum cannot see).
    Swap { first: usize, second: usize, field: usize },
    /// One field's sign flipped.
    SignFlip { row: usize, field: usize },
    /// A row under a new key.
    Move { row: usize, key: i64 },
    /// A row gone.
    Delete { row: usize },
    /// A row that is not in the source.
    Insert { key: i64, values: [Option<i64>; 2] },
}

fn value() -> impl proptest::strategy::Strategy<Value = Option<i64>> {
    prop_oneof![1 => Just(None), 1 => Just(Some(0)), 1 => Just(Some(i64::MIN)), 6 => any::<i64>().prop_map(Some)]
}

fn mutation() -> impl proptest::strategy::Strategy<Value = Mutation> {
    let row = 0usize..400;
    let field = 0usize..2;
    let key = -2_000i64..2_000;
    prop_oneof![
        (row.clone(), field.clone(), value()).prop_map(|(row, field, value)| Mutation::Change { row, field, value }),
        (row.clone(), row.clone(), field.clone()).prop_map(|(first, second, field)| Mutation::Swap {
            first,
            second,
            field
        }),
        (row.clone(), field).prop_map(|(row, field)| Mutation::SignFlip { row, field }),
        (row.clone(), key.clone()).prop_map(|(row, key)| Mutation::Move { row, key }),
        row.prop_map(|row| Mutation::Delete { row }),
        (key, value(), value()).prop_map(|(key, a, b)| Mutation::Insert { key, values: [a, b] }),
    ]
}

/// One random comparison: the source's rows (by key), the mutations planted in the target,
/// and how the pipeline is tuned.
#[derive(Debug, Clone)]
struct Case {
    kind: KeyKind,
    source: BTreeMap<i64, [Option<i64>; 2]>,
    mutations: Vec<Mutation>,
    settings: SearchSettings,
    batch_rows: (usize, usize),
    unique_key: bool,
    max_examples: usize,
    links: (Link, Link),
}

fn case() -> impl proptest::strategy::Strategy<Value = Case> {
    let kind = prop_oneof![Just(KeyKind::Int), Just(KeyKind::Uuid), Just(KeyKind::Pair)];
    let source = prop::collection::btree_map(-2_000i64..2_000, (value(), value()).prop_map(|(a, b)| [a, b]), 0..300);
    let settings = (1u64..8, 0u64..12, 1u64..32, 2u64..9, 2u64..9, 1u32..6, prop_oneof![Just(0u64), 1u64..100])
        .prop_map(
            |(leaf_rows, digest_rows, first_level_rows, max_first_fanout, max_fanout, max_levels, sketch_rows)| {
                SearchSettings {
                    leaf_rows,
                    digest_rows,
                    first_level_rows,
                    max_first_fanout,
                    max_fanout,
                    max_levels,
                    sketch_rows,
                }
            },
        );
    let link = prop_oneof![Just(Link::Local), Just(Link::Measured(1e6)), Just(Link::Measured(1e9))];
    (
        kind,
        source,
        prop::collection::vec(mutation(), 0..12),
        settings,
        (1usize..40, 1usize..40),
        any::<bool>(),
        1usize..6,
        (link.clone(), link),
    )
        .prop_map(|(kind, source, mutations, settings, batch_rows, unique_key, max_examples, links)| Case {
            kind,
            source,
            mutations,
            settings,
            batch_rows,
            unique_key,
            max_examples,
            links,
        })
}

impl Case {
    /// The target: the source with the mutations applied (a mutation naming a row past the
    /// end, or a key already taken, plants nothing).
    fn target(&self) -> BTreeMap<i64, [Option<i64>; 2]> {
        let mut target = self.source.clone();
        for mutation in &self.mutations {
            let keys: Vec<i64> = target.keys().copied().collect();
            let key = |row: &usize| keys.get(*row).copied();
            match *mutation {
                Mutation::Change { ref row, field, value } => {
                    if let Some(key) = key(row) {
                        target.entry(key).and_modify(|values| values[field] = value);
                    }
                }
                Mutation::Swap { ref first, ref second, field } => {
                    if let (Some(first), Some(second)) = (key(first), key(second)) {
                        let (a, b) = (target[&first][field], target[&second][field]);
                        target.entry(first).and_modify(|values| values[field] = b);
                        target.entry(second).and_modify(|values| values[field] = a);
                    }
                }
                Mutation::SignFlip { ref row, field } => {
                    if let Some(key) = key(row) {
                        target.entry(key).and_modify(|values| values[field] = values[field].map(i64::wrapping_neg));
                    }
                }
                Mutation::Move { ref row, key: new } => {
                    if let Some(old) = key(row).filter(|_| !target.contains_key(&new)) {
                        let values = target.remove(&old).unwrap_or_default();
                        target.insert(new, values);
                    }
                }
                Mutation::Delete { ref row } => {
                    if let Some(key) = key(row) {
                        target.remove(&key);
                    }
                }
                Mutation::Insert { key, values } => {
                    target.entry(key).or_insert(values);
                }
            }
        }
        target
    }

    /// Rows in the order their keys sort (a uuid's order is not its seed's).
    fn rows(&self, values: &BTreeMap<i64, [Option<i64>; 2]>) -> Vec<EncodedRow> {
        let mut rows: BTreeMap<Key, EncodedRow> = BTreeMap::new();
        for (seed, fields) in values {
            let key = key_of(self.kind, *seed);
            rows.insert(key.clone(), row(key, fields));
        }
        rows.into_values().collect()
    }

    /// The oracle: a plain comparison of the two maps by key, written without the merge.
    fn expected(&self) -> Summary<Key> {
        let keyed = |values: &BTreeMap<i64, [Option<i64>; 2]>| -> BTreeMap<Key, [Option<i64>; 2]> {
            values.iter().map(|(seed, fields)| (key_of(self.kind, *seed), *fields)).collect()
        };
        let (source, target) = (keyed(&self.source), keyed(&self.target()));
        let mut summary = Summary::new(self.max_examples, vec!["a".to_owned(), "b".to_owned()]);
        let mut keys: Vec<&Key> = source.keys().chain(target.keys()).collect();
        keys.sort();
        keys.dedup();
        for key in keys {
            let example = match (source.get(key), target.get(key)) {
                (Some(left), Some(right)) if left == right => {
                    summary.matched += 1;
                    continue;
                }
                (Some(left), Some(right)) => {
                    summary.changed += 1;
                    let fields = ["a", "b"].iter().enumerate().filter(|(index, _)| left[*index] != right[*index]);
                    let fields = fields.map(|(_, name)| (*name).to_owned()).collect();
                    Example { kind: DifferenceKind::Changed, key: key.clone(), fields }
                }
                (Some(_), None) => {
                    summary.missing += 1;
                    Example { kind: DifferenceKind::MissingInTarget, key: key.clone(), fields: Vec::new() }
                }
                (None, Some(_)) => {
                    summary.extra += 1;
                    Example { kind: DifferenceKind::ExtraInTarget, key: key.clone(), fields: Vec::new() }
                }
                (None, None) => continue,
            };
            if summary.examples.len() < self.max_examples {
                summary.examples.push(example);
            }
        }
        summary
    }

    /// The pipeline's answer with `strategy`, and whether it hashed.
    fn compared(&self, strategy: Strategy) -> (Summary<Key>, StrategyUsed) {
        let mut source = MemorySide::new(Side::Source, self.rows(&self.source))
            .with_batch_rows(self.batch_rows.0)
            .with_unique_key(self.unique_key)
            .with_link(self.links.0);
        let mut target = MemorySide::new(Side::Target, self.rows(&self.target()))
            .with_batch_rows(self.batch_rows.1)
            .with_unique_key(self.unique_key)
            .with_link(self.links.1);
        let mut comparison = Comparison::new(self.max_examples, vec!["a".to_owned(), "b".to_owned()]);
        comparison.strategy = strategy;
        comparison.settings = self.settings;
        let compared = compare(&mut source, &mut target, &comparison, &mut Quiet).unwrap_or_else(|error| {
            panic!("{strategy}: {error:?}");
        });
        (compared.summary, compared.strategy)
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 192, ..ProptestConfig::default() })]

    #[test]
    fn segments_stream_and_the_oracle_agree(case in case()) {
        let expected = case.expected();
        let (streamed, _) = case.compared(Strategy::Stream);
        prop_assert_eq!(&streamed, &expected, "stream");
        let (segmented, used) = case.compared(Strategy::Segments);
        prop_assert_eq!(&segmented, &expected, "segments ({})", used.reason);
        let (auto, _) = case.compared(Strategy::Auto);
        prop_assert_eq!(&auto, &expected, "auto");
    }
}
