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
    spans: Vec<Option<Range<usize>>>,
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
        CopyParser { fields, header_done: false, trailer_seen: false, spans: Vec::with_capacity(fields) }
    }

    /// Whether the trailer has been read (the stream is complete).
    pub fn is_complete(&self) -> bool {
        self.trailer_seen
    }

    /// Parses complete tuples from the start of `data`, calling `row(data, spans)` for each,
    /// where `spans[i]` is the byte range of field `i` in `data` (`None` for NULL). Returns
    /// the number of bytes consumed and whether the callback asked to stop; an incomplete
    /// tuple at the end is left unconsumed.
    pub fn parse<E>(
        &mut self,
        data: &[u8],
        mut row: impl FnMut(&[u8], &[Option<Range<usize>>]) -> Result<Flow, E>,
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
            let extension = read_i32(data, SIGNATURE.len() + 4).unwrap_or(0);
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
            let Some(count) = read_i16(data, at) else { break };
            if count == -1 {
                self.trailer_seen = true;
                at += 2;
                continue;
            }
            if usize::try_from(count).ok() != Some(self.fields) {
                return Err(malformed("a COPY tuple with an unexpected number of fields"));
            }
            let mut cursor = at + 2;
            self.spans.clear();
            let mut complete = true;
            for _ in 0..self.fields {
                let Some(length) = read_i32(data, cursor) else {
                    complete = false;
                    break;
                };
                cursor += 4;
                if length < 0 {
                    self.spans.push(None);
                    continue;
                }
                let end = cursor + length as usize;
                if end > data.len() {
                    complete = false;
                    break;
                }
                self.spans.push(Some(cursor..end));
                cursor = end;
            }
            if !complete {
                break;
            }
            at = cursor;
            if row(data, &self.spans)? == Flow::Stop {
                return Ok((at, Flow::Stop));
            }
        }
        Ok((at, Flow::Continue))
    }
}

fn read_i16(data: &[u8], at: usize) -> Option<i16> {
    data.get(at..at + 2).map(|b| i16::from_be_bytes([b[0], b[1]]))
}

fn read_i32(data: &[u8], at: usize) -> Option<i32> {
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
                |data, spans| {
                    out.push(spans.iter().map(|span| span.clone().map(|range| data[range].to_vec())).collect());
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
        let error = parser.parse(&[0u8; 40], |_, _| Ok(Flow::Continue), |problem| problem).unwrap_err();
        assert!(error.contains("signature"));
        let bytes = stream(&[&[Some(b"a"), Some(b"b")]]);
        let error = CopyParser::new(1).parse(&bytes, |_, _| Ok(Flow::Continue), |problem| problem).unwrap_err();
        assert!(error.contains("number of fields"));
    }
}
