//! Rows as the merge sees them: a key, and content that is equal or not.

use std::fmt;

use crate::key::Key;
use crate::value::Value;

/// A row the merge can join: it has an ordered key and can say whether its content equals
/// another row's.
///
/// The merge never looks inside a row beyond these two methods, so readers choose the
/// representation: a digest per row ([`DigestRow`]) for speed, or the canonical values
/// ([`ValuesRow`]) when changed rows must name their differing fields.
pub trait Keyed {
    /// The key type; its `Ord` is the order both streams arrive in.
    type Key: Ord + fmt::Display;

    /// The row's key.
    fn key(&self) -> &Self::Key;

    /// Whether this row's compared content equals `other`'s (keys are already equal).
    fn same_content(&self, other: &Self) -> bool;
}

/// Rows borrowed from a slice merge as well as owned rows.
impl<R: Keyed> Keyed for &R {
    type Key = R::Key;

    fn key(&self) -> &R::Key {
        (**self).key()
    }

    fn same_content(&self, other: &Self) -> bool {
        (**self).same_content(*other)
    }
}

/// A row reduced to its key and a digest of its compared fields.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct DigestRow<K> {
    /// The row's key.
    pub key: K,
    /// A collision-resistant digest (for example BLAKE3) of the row's canonical fields.
    pub digest: [u8; 32],
}

impl<K: Ord + fmt::Display> Keyed for DigestRow<K> {
    type Key = K;

    fn key(&self) -> &K {
        &self.key
    }

    fn same_content(&self, other: &Self) -> bool {
        self.digest == other.digest
    }
}

impl<K: fmt::Display> fmt::Debug for DigestRow<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DigestRow({})", self.key)
    }
}

/// A row with its key and the canonical values of its compared fields, in column order.
#[derive(Clone, PartialEq, Eq)]
pub struct ValuesRow {
    /// The row's key.
    pub key: Key,
    /// The compared fields, in the order of the comparison's column list.
    pub values: Vec<Value>,
}

impl ValuesRow {
    /// Indexes of the fields whose values differ from `other`'s. Fields present on only one
    /// side (rows of different widths) count as differing.
    pub fn differing_fields<'a>(&'a self, other: &'a ValuesRow) -> impl Iterator<Item = usize> + 'a {
        let width = self.values.len().max(other.values.len());
        (0..width).filter(move |&index| self.values.get(index) != other.values.get(index))
    }
}

impl Keyed for ValuesRow {
    type Key = Key;

    fn key(&self) -> &Key {
        &self.key
    }

    fn same_content(&self, other: &Self) -> bool {
        self.values == other.values
    }
}

impl fmt::Debug for ValuesRow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The key identifies the row and may be shown; the values may not.
        write!(f, "ValuesRow({}, {} fields)", self.key, self.values.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn differing_fields_names_each_unequal_position() {
        let source = ValuesRow { key: Key::Int(1), values: vec![Value::Int(1), Value::Null, Value::text("a")] };
        let target = ValuesRow { key: Key::Int(1), values: vec![Value::Int(1), Value::text(""), Value::text("b")] };
        assert_eq!(source.differing_fields(&target).collect::<Vec<_>>(), vec![1, 2]);
        assert!(!source.same_content(&target));
        assert!(source.same_content(&source.clone()));
    }

    #[test]
    fn rows_of_different_widths_differ_in_the_extra_fields() {
        let narrow = ValuesRow { key: Key::Int(1), values: vec![Value::Int(1)] };
        let wide = ValuesRow { key: Key::Int(1), values: vec![Value::Int(1), Value::Null] };
        assert_eq!(narrow.differing_fields(&wide).collect::<Vec<_>>(), vec![1]);
    }

    #[test]
    fn debug_shows_the_key_but_no_value() {
        let row = ValuesRow { key: Key::Int(7), values: vec![Value::text("marker-xyz")] };
        let shown = format!("{row:?}");
        assert!(shown.contains('7') && !shown.contains("marker-xyz"), "{shown}");
    }
}
