//! Rows as the readers deliver them: the key and the canonical encoding of every compared
//! field in one buffer.
//!
//! # Why not `ValuesRow`
//!
//! A [`ValuesRow`] holds a `Vec<Value>`: one allocation for the vector, one per text or
//! bytes field, and about six per `numeric` (parsing and normalising decimal text). On a
//! six-column table that was eight or more allocations a row, each freed by the merging
//! thread (a cross-thread free), and the reader ran at about 1.8× the cost of the bare
//! binary `COPY` (see `examples/stream_throughput.rs`). An [`EncodedRow`] allocates nothing
//! of its own (text keys aside): each field is appended to its batch's buffer in a canonical
//! byte form chosen per column pair by its [`Decoder`] (see [`Decoder::encode`]), and the
//! row is a shared reference to that buffer and its byte range. Equal values of compatible
//! types encode to equal bytes, so "same content" is one `memcmp`. [`EncodedRow::values`]
//! turns a row back into [`Value`]s (the same values [`Decoder::decode`] gives) when a
//! caller needs them. A batch's buffer is freed when its last row is dropped; the merge
//! keeps at most two rows per side, so memory stays bounded by the batches in flight.
//!
//! Framing: binary COPY's own — each field is its length as a big-endian `int32` (`-1` for
//! NULL) and its bytes. So NULL differs from an empty string, two buffers are equal exactly
//! when every field is, and a run of fields whose wire bytes already are their canonical
//! encoding ([`Decoder::is_wire`]: the same type on both sides) is copied straight from the
//! COPY tuple in one piece ([`BatchWriter::framed`]).

use std::fmt;
use std::ops::Range;
use std::sync::Arc;

use datadiff_diff_core::merge::{ChangedFields, Key, Keyed, Value, ValuesRow};

use crate::stream::DecodeError;
use crate::stream::decoder::Decoder;

/// A row's key and the canonical encoding of its compared fields.
#[derive(Clone)]
pub struct EncodedRow {
    key: Key,
    data: Arc<[u8]>,
    range: Range<usize>,
}

impl PartialEq for EncodedRow {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key && self.encoded() == other.encoded()
    }
}

impl Eq for EncodedRow {}

impl EncodedRow {
    /// A row on its own, from its key and the encoding of its fields (as a
    /// [`BatchWriter`] writes it).
    pub fn new(key: Key, fields: &[u8]) -> EncodedRow {
        EncodedRow { key, data: Arc::from(fields), range: 0..fields.len() }
    }

    /// A row from its key and the canonical encoding of each field in column order (`None`
    /// for NULL): rows a program builds itself, such as [`crate::compare::MemorySide`]'s.
    /// Equal fields must be equal bytes.
    pub fn from_fields<'a>(key: Key, fields: impl IntoIterator<Item = Option<&'a [u8]>>) -> EncodedRow {
        let mut encoded = Vec::new();
        for field in fields {
            match field {
                None => encoded.extend_from_slice(&(-1i32).to_be_bytes()),
                Some(bytes) => {
                    let length = i32::try_from(bytes.len()).unwrap_or(i32::MAX);
                    encoded.extend_from_slice(&length.to_be_bytes());
                    encoded.extend_from_slice(&bytes[..usize::try_from(length).unwrap_or(0)]);
                }
            }
        }
        EncodedRow::new(key, &encoded)
    }

    /// The framed fields, as one byte string.
    pub(crate) fn encoded(&self) -> &[u8] {
        &self.data[self.range.clone()]
    }

    /// The key.
    pub fn key(&self) -> &Key {
        &self.key
    }

    /// The encoded fields in column order: `None` for NULL.
    pub fn fields(&self) -> Fields<'_> {
        Fields { rest: self.encoded() }
    }

    /// The fields as values, given the decoders of this row's side (in column order).
    pub fn values(&self, decoders: &[Decoder]) -> Result<Vec<Value>, DecodeError> {
        self.fields()
            .zip(decoders)
            .map(|(field, decoder)| match field {
                None => Ok(Value::Null),
                Some(bytes) => decoder.decode_encoded(bytes),
            })
            .collect()
    }

    /// The row as a [`ValuesRow`].
    pub fn to_values_row(&self, decoders: &[Decoder]) -> Result<ValuesRow, DecodeError> {
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
        self.encoded() == other.encoded()
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
        let length = self.rest.get(..4).map(|b| i32::from_be_bytes([b[0], b[1], b[2], b[3]]))?;
        let Ok(length) = usize::try_from(length) else {
            self.rest = &self.rest[4..];
            return Some(None);
        };
        let field = self.rest.get(4..4 + length)?;
        self.rest = &self.rest[4 + length..];
        Some(Some(field))
    }
}

/// Builds a batch of rows in one buffer, reusing its allocations from batch to batch.
#[derive(Debug, Default)]
pub struct BatchWriter {
    buffer: Vec<u8>,
    scratch: Vec<u8>,
    rows: Vec<(Key, Range<usize>)>,
    row_start: usize,
}

impl BatchWriter {
    /// Starts a row.
    pub fn begin_row(&mut self) {
        self.row_start = self.buffer.len();
    }

    /// Appends a NULL to the row.
    pub fn null(&mut self) {
        self.buffer.extend_from_slice(&(-1i32).to_be_bytes());
    }

    /// Appends `field` encoded by `decoder` to the row (a NULL where the decoder counts
    /// the field as one, [`Decoder::is_null`]).
    pub fn field(&mut self, decoder: Decoder, field: &[u8]) -> Result<(), DecodeError> {
        if decoder.is_null(field) {
            self.null();
            return Ok(());
        }
        let at = self.buffer.len();
        self.buffer.extend_from_slice(&[0; 4]);
        decoder.encode(field, &mut self.buffer, &mut self.scratch)?;
        let length = i32::try_from(self.buffer.len() - at - 4).map_err(|_| DecodeError::TooLong)?;
        self.buffer[at..at + 4].copy_from_slice(&length.to_be_bytes());
        Ok(())
    }

    /// Appends one field written by `write` (its canonical encoding), framed.
    #[cfg(feature = "mysql")]
    pub(crate) fn field_with(
        &mut self,
        write: impl FnOnce(&mut Vec<u8>) -> Result<(), DecodeError>,
    ) -> Result<(), DecodeError> {
        let at = self.buffer.len();
        self.buffer.extend_from_slice(&[0; 4]);
        write(&mut self.buffer)?;
        let length = i32::try_from(self.buffer.len() - at - 4).map_err(|_| DecodeError::TooLong)?;
        self.buffer[at..at + 4].copy_from_slice(&length.to_be_bytes());
        Ok(())
    }

    /// Appends fields already framed as binary COPY frames them (see [`Tuple::framed`]),
    /// each of whose bytes is its canonical encoding.
    ///
    /// [`Tuple::framed`]: crate::stream::Tuple::framed
    pub fn framed(&mut self, fields: &[u8]) {
        self.buffer.extend_from_slice(fields);
    }

    /// Ends the row under `key`.
    pub fn end_row(&mut self, key: Key) {
        self.rows.push((key, self.row_start..self.buffer.len()));
        self.row_start = self.buffer.len();
    }

    /// Drops a row begun and not ended (its fields failed to encode).
    pub fn abandon_row(&mut self) {
        self.buffer.truncate(self.row_start);
    }

    /// Rows ended since the last [`BatchWriter::seal`].
    pub fn rows(&self) -> usize {
        self.rows.len()
    }

    /// Bytes written since the last [`BatchWriter::seal`].
    pub fn bytes(&self) -> usize {
        self.buffer.len()
    }

    /// Moves the ended rows into `batch`, sharing one copy of the buffer, and starts over.
    pub fn seal(&mut self, batch: &mut Vec<EncodedRow>) {
        self.abandon_row();
        if self.rows.is_empty() {
            return;
        }
        let data: Arc<[u8]> = Arc::from(self.buffer.as_slice());
        batch.extend(self.rows.drain(..).map(|(key, range)| EncodedRow { key, data: Arc::clone(&data), range }));
        self.buffer.clear();
        self.row_start = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(key: i64, fields: &[Option<(Decoder, &[u8])>]) -> EncodedRow {
        let mut writer = BatchWriter::default();
        // A row before it, so the row under test does not start at offset 0.
        writer.begin_row();
        writer.field(Decoder::Text, b"other").unwrap();
        writer.end_row(Key::Int(key - 1));
        writer.begin_row();
        for field in fields {
            match field {
                None => writer.null(),
                Some((decoder, bytes)) => writer.field(*decoder, bytes).unwrap(),
            }
        }
        writer.end_row(Key::Int(key));
        // A row that fails half-way is not part of the batch.
        writer.begin_row();
        writer.field(Decoder::Text, b"partial").unwrap();
        assert!(writer.field(Decoder::Int, b"bad").is_err());
        let mut batch = Vec::new();
        writer.seal(&mut batch);
        assert_eq!(batch.len(), 2);
        batch.pop().unwrap()
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
        assert_eq!(a, EncodedRow::new(Key::Int(1), a.encoded()));
        let values = a.values(&[Decoder::Text, Decoder::Text, Decoder::Int]).unwrap();
        assert_eq!(values, vec![Value::text("x"), Value::Null, Value::Int(7)]);
    }

    #[test]
    fn a_declared_empty_string_is_written_as_null() {
        let empty = row(1, &[Some((Decoder::TextEmptyAsNull, b""))]);
        assert_eq!(empty, row(1, &[None]));
        assert_ne!(row(1, &[Some((Decoder::Text, b""))]), row(1, &[None]), "exact by default");
        assert_eq!(row(1, &[Some((Decoder::PaddedCharEmptyAsNull, b"   "))]), row(1, &[None]));
        assert_eq!(empty.values(&[Decoder::TextEmptyAsNull]).unwrap(), vec![Value::Null]);
    }

    #[test]
    fn debug_shows_the_key_but_no_value() {
        let shown = format!("{:?}", row(7, &[Some((Decoder::Text, b"marker-xyz"))]));
        assert!(shown.contains('7') && !shown.contains("marker-xyz"), "{shown}");
    }
}
