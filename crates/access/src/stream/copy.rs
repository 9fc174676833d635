//! The binary `COPY` format: a signature header, then tuples of length-prefixed fields, then
//! a trailer.
//!
//! ```text
//! header:  "PGCOPY\n\xff\r\n\0"  flags:int32  extension_length:int32  extension bytes
//! tuple:   field_count:int16  { length:int32 (-1 = NULL)  bytes }*
//! trailer: -1:int16
//! ```
//!
//! [`CopyParser::parse`] works on whatever bytes are at hand and reports how many it used:
//! PostgreSQL sends one `CopyData` message per row, so the reader normally parses each
//! message in place with no copy, and only a tuple split across messages is gathered in a
//! carry buffer.

use std::ops::Range;

const SIGNATURE: &[u8; 11] = b"PGCOPY\n\xff\r\n\0";

/// Incremental parser of one binary COPY stream.
#[derive(Debug)]
pub struct CopyParser {
    fields: usize,
    header_done: bool,
    trailer_seen: bool,
    /// Where each field of the current tuple starts (its length word), then where the tuple
    /// ends: `fields + 1` offsets, written in place for every tuple.
    starts: Vec<usize>,
}

/// One parsed tuple: its fields' bytes, and its fields as they were framed on the wire
/// (a big-endian `int32` length, `-1` for NULL, then the bytes), so that a run of fields can
/// be copied in one piece.
#[derive(Debug, Clone, Copy)]
pub struct Tuple<'a> {
    data: &'a [u8],
    /// `len() + 1` offsets: each field's length word, then the tuple's end.
    starts: &'a [usize],
}

impl<'a> Tuple<'a> {
    /// The number of fields.
    pub fn len(&self) -> usize {
        self.starts.len() - 1
    }

    /// Whether the tuple has no field.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Field `index`'s bytes, `None` for NULL.
    pub fn field(&self, index: usize) -> Option<&'a [u8]> {
        let (start, end) = (self.starts[index], self.starts[index + 1]);
        // The parser checked every length: a NULL is exactly its length word.
        (end - start > 4 || length_at(self.data, start) == Some(0)).then(|| &self.data[start + 4..end])
    }

    /// Fields `range`, framed as on the wire (length words included).
    pub fn framed(&self, range: Range<usize>) -> &'a [u8] {
        &self.data[self.starts[range.start]..self.starts[range.end]]
    }
}

/// What [`CopyParser::parse`] asks of its row callback's caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    /// Keep going.
    Continue,
    /// Stop parsing (the consumer went away).
    Stop,
}

impl CopyParser {
    /// A parser for tuples of exactly `fields` fields.
    pub fn new(fields: usize) -> CopyParser {
        CopyParser { fields, header_done: false, trailer_seen: false, starts: vec![0; fields + 1] }
    }

    /// Whether the trailer has been read (the stream is complete).
    pub fn is_complete(&self) -> bool {
        self.trailer_seen
    }

    /// Parses complete tuples from the start of `data`, calling `row` with each [`Tuple`].
    /// Returns the number of bytes consumed and whether the callback asked to stop; an
    /// incomplete tuple at the end is left unconsumed.
    pub fn parse<E>(
        &mut self,
        data: &[u8],
        mut row: impl FnMut(&Tuple<'_>) -> Result<Flow, E>,
        malformed: impl Fn(&'static str) -> E,
    ) -> Result<(usize, Flow), E> {
        let mut at = 0;
        if !self.header_done {
            if data.len() < SIGNATURE.len() + 8 {
                return Ok((0, Flow::Continue));
            }
            if &data[..SIGNATURE.len()] != SIGNATURE {
                return Err(malformed("the COPY stream does not start with the binary signature"));
            }
            let extension = length_at(data, SIGNATURE.len() + 4).unwrap_or(0);
            let extension = usize::try_from(extension).map_err(|_| malformed("a negative COPY header extension"))?;
            let header = SIGNATURE.len() + 8 + extension;
            if data.len() < header {
                return Ok((0, Flow::Continue));
            }
            self.header_done = true;
            at = header;
        }
        while at < data.len() {
            if self.trailer_seen {
                return Err(malformed("data after the COPY trailer"));
            }
            let Some(count) = data.get(at..at + 2).map(|b| i16::from_be_bytes([b[0], b[1]])) else { break };
            if count == -1 {
                self.trailer_seen = true;
                at += 2;
                continue;
            }
            if usize::try_from(count).ok() != Some(self.fields) {
                return Err(malformed("a COPY tuple with an unexpected number of fields"));
            }
            let Some(end) = self.scan(data, at + 2) else { break };
            at = end;
            let tuple = Tuple { data, starts: &self.starts };
            if row(&tuple)? == Flow::Stop {
                return Ok((at, Flow::Stop));
            }
        }
        Ok((at, Flow::Continue))
    }

    /// Records where each field of the tuple whose fields start at `cursor` begins; the
    /// tuple's end, or `None` when it is not complete in `data`.
    fn scan(&mut self, data: &[u8], mut cursor: usize) -> Option<usize> {
        for start in &mut self.starts[..self.fields] {
            *start = cursor;
            let length = length_at(data, cursor)?;
            cursor += 4;
            // A negative length is a NULL (-1): no bytes follow.
            if let Ok(length) = usize::try_from(length) {
                cursor = cursor.checked_add(length).filter(|end| *end <= data.len())?;
            }
        }
        self.starts[self.fields] = cursor;
        Some(cursor)
    }
}

fn length_at(data: &[u8], at: usize) -> Option<i32> {
    data.get(at..at + 4).map(|b| i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stream(rows: &[&[Option<&[u8]>]]) -> Vec<u8> {
        let mut bytes = SIGNATURE.to_vec();
        bytes.extend(0i32.to_be_bytes());
        bytes.extend(0i32.to_be_bytes());
        for row in rows {
            bytes.extend((row.len() as i16).to_be_bytes());
            for field in *row {
                match field {
                    Some(data) => {
                        bytes.extend((data.len() as i32).to_be_bytes());
                        bytes.extend(*data);
                    }
                    None => bytes.extend((-1i32).to_be_bytes()),
                }
            }
        }
        bytes.extend((-1i16).to_be_bytes());
        bytes
    }

    fn collect(parser: &mut CopyParser, data: &[u8], out: &mut Vec<Vec<Option<Vec<u8>>>>) -> usize {
        let (used, _) = parser
            .parse(
                data,
                |tuple| {
                    out.push((0..tuple.len()).map(|index| tuple.field(index).map(<[u8]>::to_vec)).collect());
                    Ok::<_, String>(Flow::Continue)
                },
                |problem| problem.to_owned(),
            )
            .unwrap();
        used
    }

    #[test]
    fn parses_rows_and_nulls_whatever_the_chunking() {
        let bytes = stream(&[&[Some(b"ab"), None], &[Some(b""), Some(b"xyz")]]);
        let expected = vec![vec![Some(b"ab".to_vec()), None], vec![Some(Vec::new()), Some(b"xyz".to_vec())]];
        for chunk_size in [1, 2, 3, 7, 1000] {
            let mut parser = CopyParser::new(2);
            let mut carry: Vec<u8> = Vec::new();
            let mut rows = Vec::new();
            for chunk in bytes.chunks(chunk_size) {
                carry.extend_from_slice(chunk);
                let used = collect(&mut parser, &carry, &mut rows);
                carry.drain(..used);
            }
            assert!(carry.is_empty() && parser.is_complete(), "chunk size {chunk_size}");
            assert_eq!(rows, expected, "chunk size {chunk_size}");
        }
    }

    #[test]
    fn rejects_a_wrong_signature_and_a_wrong_width() {
        let mut parser = CopyParser::new(1);
        let error = parser.parse(&[0u8; 40], |_| Ok(Flow::Continue), |problem| problem).unwrap_err();
        assert!(error.contains("signature"));
        let bytes = stream(&[&[Some(b"a"), Some(b"b")]]);
        let error = CopyParser::new(1).parse(&bytes, |_| Ok(Flow::Continue), |problem| problem).unwrap_err();
        assert!(error.contains("number of fields"));
    }

    #[test]
    fn runs_of_fields_come_framed_as_on_the_wire() {
        let bytes = stream(&[&[Some(b"key"), None, Some(b"xy")]]);
        let mut parser = CopyParser::new(3);
        let mut framed = Vec::new();
        parser
            .parse(
                &bytes,
                |tuple| {
                    assert_eq!((tuple.field(0), tuple.field(1)), (Some(&b"key"[..]), None));
                    framed.push(tuple.framed(1..3).to_vec());
                    framed.push(tuple.framed(2..3).to_vec());
                    framed.push(tuple.framed(1..2).to_vec());
                    Ok::<_, String>(Flow::Continue)
                },
                |problem| problem.to_owned(),
            )
            .unwrap();
        let mut expected = (-1i32).to_be_bytes().to_vec();
        expected.extend(2i32.to_be_bytes());
        expected.extend(b"xy");
        assert_eq!(framed, vec![expected.clone(), expected[4..].to_vec(), expected[..4].to_vec()]);
    }
}
