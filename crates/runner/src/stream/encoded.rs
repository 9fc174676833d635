//! Rows as the readers deliver them: the key and the canonical encoding of every compared
//! field in one buffer.
//!
//! # Why not `ValuesRow`
//!
//! A [`ValuesRow`] holds a `Vec<Value>`: one allocation for the vector, one per text or
//! bytes field, and about six per `numeric` (parsing and normalising decimal text). On a
//! six-column table that was eight or more allocations a row, and the reader ran at about
//! 1.8× the cost of the bare binary `COPY` (see `examples/stream_throughput.rs`). An
//! [`EncodedRow`] is one allocation (plus the key's for text keys): each field is appended
//! to a buffer in a canonical byte form chosen per column pair by its [`Decoder`] (see
//! [`Decoder::encode`]), so equal values of compatible types encode to equal bytes and
//! "same content" is one `memcmp`. [`EncodedRow::values`] turns a row back into
//! [`Value`]s (the same values [`Decoder::decode`] gives) when a caller needs them.
//!
//! Framing: a NULL field is the byte `0`; any other field is the byte `1`, its length as a
//! little-endian `u32`, and its bytes. So NULL differs from an empty string, and two
//! buffers are equal exactly when every field is.

use std::fmt;

use datadiff_diff_core::{ChangedFields, Key, Keyed, Value, ValuesRow};

use crate::stream::decoder::Decoder;

/// A row's key and the canonical encoding of its compared fields.
#[derive(Clone, PartialEq, Eq)]
pub struct EncodedRow {
    key: Key,
    fields: Box<[u8]>,
}

impl EncodedRow {
    /// A row from its key and an encoding built with [`FieldWriter`].
    pub fn new(key: Key, fields: Box<[u8]>) -> EncodedRow {
        EncodedRow { key, fields }
    }

    /// The key.
    pub fn key(&self) -> &Key {
        &self.key
    }

    /// The encoded fields in column order: `None` for NULL.
    pub fn fields(&self) -> Fields<'_> {
        Fields { rest: &self.fields }
    }

    /// The fields as values, given the decoders of this row's side (in column order).
    pub fn values(&self, decoders: &[Decoder]) -> Result<Vec<Value>, String> {
        self.fields()
            .zip(decoders)
            .map(|(field, decoder)| match field {
                None => Ok(Value::Null),
                Some(bytes) => decoder.decode_encoded(bytes),
            })
            .collect()
    }

    /// The row as a [`ValuesRow`].
    pub fn to_values_row(&self, decoders: &[Decoder]) -> Result<ValuesRow, String> {
        Ok(ValuesRow { key: self.key.clone(), values: self.values(decoders)? })
    }
}

/// Values are never shown: a `Debug` of a row must not leak its contents into a log.
impl fmt::Debug for EncodedRow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "EncodedRow({}, {} fields)", self.key, self.fields().count())
    }
}

impl Keyed for EncodedRow {
    type Key = Key;

    fn key(&self) -> &Key {
        &self.key
    }

    fn same_content(&self, other: &Self) -> bool {
        self.fields == other.fields
    }
}

impl ChangedFields for EncodedRow {
    fn changed_fields(&self, other: &Self) -> Vec<usize> {
        let mut mine = self.fields();
        let mut theirs = other.fields();
        let mut changed = Vec::new();
        let mut index = 0;
        loop {
            match (mine.next(), theirs.next()) {
                (None, None) => return changed,
                (a, b) => {
                    if a != b {
                        changed.push(index);
                    }
                }
            }
            index += 1;
        }
    }
}

/// The fields of an [`EncodedRow`].
#[derive(Debug, Clone)]
pub struct Fields<'a> {
    rest: &'a [u8],
}

impl<'a> Iterator for Fields<'a> {
    type Item = Option<&'a [u8]>;

    fn next(&mut self) -> Option<Self::Item> {
        let (&tag, rest) = self.rest.split_first()?;
        if tag == 0 {
            self.rest = rest;
            return Some(None);
        }
        let length = rest.get(..4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)?;
        let field = rest.get(4..4 + length)?;
        self.rest = &rest[4 + length..];
        Some(Some(field))
    }
}

/// Builds the field buffer of one row after another, reusing its allocations.
#[derive(Debug, Default)]
pub struct FieldWriter {
    buffer: Vec<u8>,
    scratch: Vec<u8>,
}

impl FieldWriter {
    /// Starts a new row.
    pub fn clear(&mut self) {
        self.buffer.clear();
    }

    /// Appends a NULL.
    pub fn null(&mut self) {
        self.buffer.push(0);
    }

    /// Appends `field` encoded by `decoder`.
    pub fn field(&mut self, decoder: Decoder, field: &[u8]) -> Result<(), String> {
        self.buffer.push(1);
        let at = self.buffer.len();
        self.buffer.extend_from_slice(&[0; 4]);
        decoder.encode(field, &mut self.buffer, &mut self.scratch)?;
        let length = u32::try_from(self.buffer.len() - at - 4).map_err(|_| "a field over 4 GiB".to_owned())?;
        self.buffer[at..at + 4].copy_from_slice(&length.to_le_bytes());
        Ok(())
    }

    /// The row's fields, copied into their own allocation.
    pub fn finish(&self) -> Box<[u8]> {
        Box::from(self.buffer.as_slice())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(key: i64, fields: &[Option<(Decoder, &[u8])>]) -> EncodedRow {
        let mut writer = FieldWriter::default();
        for field in fields {
            match field {
                None => writer.null(),
                Some((decoder, bytes)) => writer.field(*decoder, bytes).unwrap(),
            }
        }
        EncodedRow::new(Key::Int(key), writer.finish())
    }

    #[test]
    fn null_differs_from_empty_and_changed_fields_are_named_by_index() {
        let a = row(1, &[Some((Decoder::Text, b"x")), None, Some((Decoder::Int, &7i32.to_be_bytes()))]);
        let b = row(
            1,
            &[Some((Decoder::Text, b"x")), Some((Decoder::Text, b"")), Some((Decoder::Int, &7i64.to_be_bytes()))],
        );
        assert!(!a.same_content(&b));
        assert_eq!(a.changed_fields(&b), vec![1]);
        assert_eq!(a.fields().count(), 3);
        let values = a.values(&[Decoder::Text, Decoder::Text, Decoder::Int]).unwrap();
        assert_eq!(values, vec![Value::text("x"), Value::Null, Value::Int(7)]);
    }

    #[test]
    fn debug_shows_the_key_but_no_value() {
        let shown = format!("{:?}", row(7, &[Some((Decoder::Text, b"marker-xyz"))]));
        assert!(shown.contains('7') && !shown.contains("marker-xyz"), "{shown}");
    }
}
