//! Composite keys: their order is the tuple's, part by part, and the merge over them agrees
//! with a `BTreeMap` oracle keyed by plain Rust tuples.

use std::collections::{BTreeMap, BTreeSet};
use std::convert::Infallible;

use datadiff_diff_core::{
    Side,
    merge::{Change, Key, MergeError, Summary, Value, ValuesRow, merge},
};
use proptest::collection::btree_map;
use proptest::prelude::*;

/// A line-item key `(order_id, line_no)` and a `(text, int)` key, as plain tuples: Rust orders
/// `i64` numerically and `String` bytewise, the two orders the key's parts must follow.
type IntPair = (i64, i64);
type TextInt = (String, i64);

fn int_pair(key: &IntPair) -> Key {
    Key::from_parts(vec![Key::Int(key.0), Key::Int(key.1)])
}

fn text_int(key: &TextInt) -> Key {
    Key::from_parts(vec![Key::Text(key.0.clone()), Key::Int(key.1)])
}

/// Short strings over characters whose byte order differs from a locale's ("B" < "a", "é" > "z").
fn text_part() -> impl Strategy<Value = String> {
    proptest::collection::vec(prop_oneof![Just('a'), Just('B'), Just('z'), Just('é'), Just('-'), Just('1')], 0..3)
        .prop_map(|chars| chars.into_iter().collect())
}

fn rows<K: Clone>(side: &BTreeMap<K, u8>, key: impl Fn(&K) -> Key) -> Vec<Result<ValuesRow, Infallible>> {
    side.iter().map(|(k, &content)| Ok(ValuesRow { key: key(k), values: vec![Value::Int(content.into())] })).collect()
}

/// What the merge must say for each key, from the tuples alone.
fn oracle<K: Ord + Clone>(source: &BTreeMap<K, u8>, target: &BTreeMap<K, u8>) -> Vec<(K, &'static str)> {
    let keys: BTreeSet<K> = source.keys().chain(target.keys()).cloned().collect();
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

fn merged(
    source: Vec<Result<ValuesRow, Infallible>>,
    target: Vec<Result<ValuesRow, Infallible>>,
) -> Vec<(Key, &'static str)> {
    merge(source, target).map(|change| change.map(|change| (change.key().clone(), label(&change))).unwrap()).collect()
}

proptest! {
    #[test]
    fn composite_keys_order_as_their_tuples(a: IntPair, b: IntPair, c in (text_part(), -3i64..3), d in (text_part(), -3i64..3)) {
        prop_assert_eq!(int_pair(&a).cmp(&int_pair(&b)), a.cmp(&b));
        prop_assert_eq!(text_int(&c).cmp(&text_int(&d)), c.cmp(&d));
        prop_assert_eq!(int_pair(&a) == int_pair(&b), a == b);
    }

    #[test]
    fn the_merge_over_int_pairs_agrees_with_the_oracle(
        source in btree_map((-3i64..4, -3i64..4), 0u8..3, 0..30),
        target in btree_map((-3i64..4, -3i64..4), 0u8..3, 0..30),
    ) {
        let expected: Vec<(Key, &str)> =
            oracle(&source, &target).into_iter().map(|(key, outcome)| (int_pair(&key), outcome)).collect();
        prop_assert_eq!(merged(rows(&source, int_pair), rows(&target, int_pair)), expected);
    }

    #[test]
    fn the_merge_over_text_int_keys_agrees_with_the_oracle(
        source in btree_map((text_part(), 0i64..3), 0u8..3, 0..30),
        target in btree_map((text_part(), 0i64..3), 0u8..3, 0..30),
    ) {
        let expected: Vec<(Key, &str)> =
            oracle(&source, &target).into_iter().map(|(key, outcome)| (text_int(&key), outcome)).collect();
        prop_assert_eq!(merged(rows(&source, text_int), rows(&target, text_int)), expected);
    }

    #[test]
    fn swapped_parts_are_two_different_rows(first in -5i64..5, second in -5i64..5) {
        prop_assume!(first != second);
        // The source has (first, second), the target (second, first): one missing, one extra.
        let source = BTreeMap::from([((first, second), 0u8)]);
        let target = BTreeMap::from([((second, first), 0u8)]);
        let mut summary = Summary::new(10, vec!["note".to_owned()]);
        for change in merge(rows(&source, int_pair), rows(&target, int_pair)) {
            summary.record(&change.unwrap());
        }
        prop_assert_eq!((summary.matched, summary.missing, summary.extra), (0, 1, 1));
    }

    #[test]
    fn a_repeated_composite_key_is_a_duplicate(key: IntPair) {
        let row = || Ok::<_, Infallible>(ValuesRow { key: int_pair(&key), values: vec![Value::Int(0)] });
        let error = merge(vec![row()], vec![row(), row()]).find_map(Result::err);
        prop_assert_eq!(error, Some(MergeError::DuplicateKey { side: Side::Target, key: int_pair(&key).to_string() }));
    }
}
