//! The merge against a naive `BTreeMap` oracle.

use std::collections::{BTreeMap, BTreeSet};
use std::convert::Infallible;

use datadiff_diff_core::{
    Side,
    merge::{Batches, Change, DigestRow, Key, MergeError, Summary, Value, ValuesRow, merge},
};
use proptest::collection::{btree_map, vec};
use proptest::prelude::*;

type Row = DigestRow<i64>;

fn rows(side: &BTreeMap<i64, u8>) -> Vec<Row> {
    side.iter().map(|(&key, &content)| DigestRow { key, digest: [content; 32] }).collect()
}

/// What the merge must say for each key, computed without the merge.
fn oracle(source: &BTreeMap<i64, u8>, target: &BTreeMap<i64, u8>) -> Vec<(i64, &'static str)> {
    let keys: BTreeSet<i64> = source.keys().chain(target.keys()).copied().collect();
    keys.into_iter()
        .map(|key| {
            let outcome = match (source.get(&key), target.get(&key)) {
                (Some(a), Some(b)) if a == b => "same",
                (Some(_), Some(_)) => "changed",
                (Some(_), None) => "missing",
                (None, Some(_)) => "extra",
                (None, None) => unreachable!("key came from one of the maps"),
            };
            (key, outcome)
        })
        .collect()
}

fn label<R>(change: &Change<R>) -> &'static str {
    match change {
        Change::Same { .. } => "same",
        Change::Changed { .. } => "changed",
        Change::MissingInTarget(_) => "missing",
        Change::ExtraInTarget(_) => "extra",
    }
}

fn ok(row: Row) -> Result<Row, Infallible> {
    Ok(row)
}

/// Splits `rows` into batches whose sizes cycle through `sizes` (each at least 1, plus an
/// empty batch now and then).
fn batched(rows: Vec<Row>, sizes: &[usize]) -> Vec<Result<Vec<Row>, Infallible>> {
    let mut batches = Vec::new();
    let mut rest = rows.as_slice();
    let mut turn = 0;
    while !rest.is_empty() {
        let size = sizes[turn % sizes.len()];
        turn += 1;
        if size == 0 {
            batches.push(Ok(Vec::new()));
            continue;
        }
        let take = size.min(rest.len());
        batches.push(Ok(rest[..take].to_vec()));
        rest = &rest[take..];
    }
    batches
}

fn side_strategy() -> impl Strategy<Value = BTreeMap<i64, u8>> {
    btree_map(-50i64..150, 0u8..3, 0..120)
}

proptest! {
    #[test]
    fn every_key_lands_in_exactly_one_outcome_in_strictly_increasing_order(
        source in side_strategy(),
        target in side_strategy(),
    ) {
        let changes: Vec<(i64, &str)> = merge(rows(&source).into_iter().map(ok), rows(&target).into_iter().map(ok))
            .map(|change| change.map(|change| (*change.key(), label(&change))))
            .collect::<Result<_, _>>()
            .unwrap();
        prop_assert_eq!(&changes, &oracle(&source, &target));
        prop_assert!(changes.windows(2).all(|pair| pair[0].0 < pair[1].0));
    }

    #[test]
    fn summary_counts_match_the_oracle(source in side_strategy(), target in side_strategy(), cap in 0usize..10) {
        let expected = oracle(&source, &target);
        let count = |kind: &str| expected.iter().filter(|(_, outcome)| *outcome == kind).count() as u64;
        let mut summary = Summary::new(cap, Vec::new());
        for change in merge(rows(&source).into_iter().map(ok), rows(&target).into_iter().map(ok)) {
            summary.record(&change.unwrap());
        }
        prop_assert_eq!(summary.matched, count("same"));
        prop_assert_eq!(summary.changed, count("changed"));
        prop_assert_eq!(summary.missing, count("missing"));
        prop_assert_eq!(summary.extra, count("extra"));
        prop_assert_eq!(summary.source_rows(), source.len() as u64);
        prop_assert_eq!(summary.target_rows(), target.len() as u64);
        let differences: Vec<i64> = expected.iter().filter(|(_, outcome)| *outcome != "same").map(|(key, _)| *key).collect();
        let kept: Vec<i64> = summary.examples.iter().map(|example| example.key).collect();
        prop_assert_eq!(&kept[..], &differences[..differences.len().min(cap)]);
        prop_assert_eq!(summary.examples_truncated(), differences.len() > cap);
    }

    #[test]
    fn results_do_not_depend_on_input_batching(
        source in side_strategy(),
        target in side_strategy(),
        source_sizes in vec(0usize..7, 1..5),
        target_sizes in vec(0usize..7, 1..5),
    ) {
        let whole: Vec<(i64, &str)> = merge(rows(&source).into_iter().map(ok), rows(&target).into_iter().map(ok))
            .map(|change| change.map(|change| (*change.key(), label(&change))).unwrap())
            .collect();
        // Batch sizes of zero only: treat as single rows so the stream still advances.
        let fix = |sizes: Vec<usize>| if sizes.iter().all(|&size| size == 0) { vec![1] } else { sizes };
        let source_batches = Batches::new(batched(rows(&source), &fix(source_sizes)), |_| {});
        let target_batches = Batches::new(batched(rows(&target), &fix(target_sizes)), |_| {});
        let in_batches: Vec<(i64, &str)> = merge(source_batches, target_batches)
            .map(|change| change.map(|change| (*change.key(), label(&change))).unwrap())
            .collect();
        prop_assert_eq!(whole, in_batches);
    }

    #[test]
    fn a_swapped_pair_of_keys_is_an_out_of_order_error_on_that_side(
        side in side_strategy().prop_filter("two keys to swap", |side| side.len() >= 2),
        other in side_strategy(),
        at in any::<prop::sample::Index>(),
        swap_source in any::<bool>(),
    ) {
        let mut unsorted = rows(&side);
        let position = at.index(unsorted.len() - 1);
        unsorted.swap(position, position + 1);
        let (expected_side, result) = if swap_source {
            (Side::Source, merge(unsorted.into_iter().map(ok), rows(&other).into_iter().map(ok)).find_map(Result::err))
        } else {
            (Side::Target, merge(rows(&other).into_iter().map(ok), unsorted.into_iter().map(ok)).find_map(Result::err))
        };
        match result {
            Some(MergeError::OutOfOrder { side, .. }) => prop_assert_eq!(side, expected_side),
            other => prop_assert!(false, "expected an out-of-order error, got {:?}", other),
        }
    }

    #[test]
    fn a_repeated_key_is_a_duplicate_error_naming_it(
        side in side_strategy().prop_filter("a key to repeat", |side| !side.is_empty()),
        at in any::<prop::sample::Index>(),
    ) {
        let mut with_duplicate = rows(&side);
        let position = at.index(with_duplicate.len());
        let repeated = with_duplicate[position];
        with_duplicate.insert(position, repeated);
        let error = merge(rows(&side).into_iter().map(ok), with_duplicate.into_iter().map(ok)).find_map(Result::err);
        prop_assert_eq!(error, Some(MergeError::DuplicateKey { side: Side::Target, key: repeated.key.to_string() }));
    }

    #[test]
    fn text_keys_merge_in_bytewise_order(
        source in btree_map("[a-zA-Z0-9éß😀]{0,4}", 0u8..2, 0..40),
        target in btree_map("[a-zA-Z0-9éß😀]{0,4}", 0u8..2, 0..40),
    ) {
        let to_rows = |side: &BTreeMap<String, u8>| -> Vec<Result<ValuesRow, Infallible>> {
            side.iter()
                .map(|(key, &content)| Ok(ValuesRow { key: Key::Text(key.clone()), values: vec![Value::Int(content.into())] }))
                .collect()
        };
        let mut summary = Summary::new(0, Vec::new());
        for change in merge(to_rows(&source), to_rows(&target)) {
            summary.record(&change.unwrap());
        }
        let both = source.keys().filter(|key| target.contains_key(*key)).count() as u64;
        prop_assert_eq!(summary.matched + summary.changed, both);
        prop_assert_eq!(summary.missing, source.len() as u64 - both);
        prop_assert_eq!(summary.extra, target.len() as u64 - both);
    }
}
