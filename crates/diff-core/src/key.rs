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
/// Keys may be printed and stored (they identify rows); row values never are.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Key {
    /// Any integer key (`smallint`, `integer`, `bigint`).
    Int(i64),
    /// A `uuid` key, ordered by its 16 bytes as PostgreSQL orders uuids.
    Uuid([u8; 16]),
    /// A text key (`text`, `varchar`, `char`), ordered bytewise.
    Text(String),
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Key::Int(value) => write!(f, "{value}"),
            Key::Uuid(bytes) => write_uuid(f, bytes),
            Key::Text(text) => f.write_str(text),
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
}
