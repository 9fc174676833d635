//! Row keys: the identity by which two streams are joined.

use std::fmt;

/// The key of a row, in the one order both sides of a comparison stream in.
///
/// Keys of one stream are all of one variant: the readers map each side's key column to the
/// same variant (an `integer` source key and a `bigint` replica key are both [`Key::Int`]).
/// Text keys order **bytewise** (by UTF-8 bytes, which is code point order): databases must
/// sort them the same way, which is why readers order text keys with `COLLATE "C"`. A
/// collation mismatch shows up as an out-of-order error in the merge, never as a wrong diff.
///
/// A composite key (several key columns, such as a line-item table's `(order_id, line_no)`)
/// is a [`Key::Composite`] of one part per key column, in the key's column order: it orders
/// lexicographically, part by part, each part as a single key of its kind orders — the order
/// of `ORDER BY a, b` with text parts under `COLLATE "C"` (PostgreSQL) or compared as binary
/// (MySQL). A single-column key is never a one-part composite: it stays the plain variant.
///
/// Keys may be printed and stored (they identify rows); row values never are.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Key {
    /// Any integer key (`smallint`, `integer`, `bigint`).
    Int(i64),
    /// A `uuid` key, ordered by its 16 bytes as PostgreSQL orders uuids.
    Uuid([u8; 16]),
    /// A text key (`text`, `varchar`, `char`), ordered bytewise.
    Text(String),
    /// A composite key: one part per key column (at least two), none of them composite.
    /// Boxed so that a key stays as small as a text key (the merge moves keys by value).
    Composite(Box<[Key]>),
}

impl Key {
    /// The key of one row from its parts, one per key column in order: the part itself for a
    /// single key column, else [`Key::Composite`].
    ///
    /// # Panics
    ///
    /// When `parts` is empty: every key has a column.
    pub fn from_parts(mut parts: Vec<Key>) -> Key {
        assert!(!parts.is_empty(), "a key has at least one column");
        match parts.len() {
            1 => parts.pop().expect("one part"),
            _ => Key::Composite(parts.into_boxed_slice()),
        }
    }

    /// The key's parts, one per key column: the key itself for a single-column key.
    pub fn parts(&self) -> &[Key] {
        match self {
            Key::Composite(parts) => parts,
            single => std::slice::from_ref(single),
        }
    }
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Key::Int(value) => write!(f, "{value}"),
            Key::Uuid(bytes) => write_uuid(f, bytes),
            Key::Text(text) => f.write_str(text),
            // `(1, 2)`: the parts in key column order.
            Key::Composite(parts) => {
                f.write_str("(")?;
                for (index, part) in parts.iter().enumerate() {
                    if index > 0 {
                        f.write_str(", ")?;
                    }
                    part.fmt(f)?;
                }
                f.write_str(")")
            }
        }
    }
}

/// Writes 16 bytes in the lowercase hyphenated form PostgreSQL prints uuids in.
pub(crate) fn write_uuid(f: &mut fmt::Formatter<'_>, bytes: &[u8; 16]) -> fmt::Result {
    for (index, byte) in bytes.iter().enumerate() {
        if matches!(index, 4 | 6 | 8 | 10) {
            f.write_str("-")?;
        }
        write!(f, "{byte:02x}")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_keys_order_bytewise_not_by_locale() {
        // A locale collation puts "a" before "B"; bytewise order puts "B" (0x42) first.
        assert!(Key::Text("B".into()) < Key::Text("a".into()));
        // Code point order: "z" < "é" (U+00E9), and "é" < "😀".
        assert!(Key::Text("z".into()) < Key::Text("é".into()));
        assert!(Key::Text("é".into()) < Key::Text("😀".into()));
    }

    #[test]
    fn uuid_keys_order_by_bytes_and_print_hyphenated() {
        let low = Key::Uuid([0; 16]);
        let mut bytes = [0u8; 16];
        bytes[0] = 0xab;
        bytes[15] = 0x01;
        let high = Key::Uuid(bytes);
        assert!(low < high);
        assert_eq!(high.to_string(), "ab000000-0000-0000-0000-000000000001");
    }

    #[test]
    fn integer_keys_order_numerically() {
        assert!(Key::Int(-5) < Key::Int(3));
        assert!(Key::Int(9) < Key::Int(10));
        assert_eq!(Key::Int(-42).to_string(), "-42");
    }

    #[test]
    fn composite_keys_order_part_by_part_and_print_in_parentheses() {
        let key = |order: i64, line: &str| Key::from_parts(vec![Key::Int(order), Key::Text(line.into())]);
        // The first part decides; the second only among equal first parts.
        assert!(key(1, "z") < key(2, "a"));
        assert!(key(2, "B") < key(2, "a"));
        // (1, 2) and (2, 1) are different rows.
        assert_ne!(key(1, "2"), key(2, "1"));
        assert_eq!(key(7, "a-1").to_string(), "(7, a-1)");
        assert_eq!(key(7, "a-1").parts(), &[Key::Int(7), Key::Text("a-1".into())]);
    }

    #[test]
    fn a_single_part_is_the_plain_key() {
        assert_eq!(Key::from_parts(vec![Key::Int(3)]), Key::Int(3));
        assert_eq!(Key::Int(3).parts(), &[Key::Int(3)]);
        assert_eq!(Key::from_parts(vec![Key::Int(3)]).to_string(), "3");
    }

    #[test]
    fn a_key_stays_as_small_as_a_text_key() {
        assert_eq!(std::mem::size_of::<Key>(), std::mem::size_of::<String>());
    }
}
