//! A reader thread per side: `COPY (SELECT …) TO STDOUT (FORMAT binary)` decoded into
//! [`EncodedRow`]s and handed to the merging thread in batches.
//!
//! # Design
//!
//! Each side runs on its own scoped thread, so the two databases stream concurrently and the
//! merge runs on the caller's thread: an attempt takes as long as the slower side, not the
//! sum. Binary COPY is the cheapest way to get rows out of PostgreSQL (no per-row protocol
//! messages beyond `CopyData`, no text formatting of numbers and timestamps on the server,
//! no parsing here), and it streams: the server sends rows as it produces them.
//!
//! Two drivers feed the same decoding ([`RowDecoder`]: binary COPY parsed in place, each
//! field encoded canonically into its batch's buffer):
//!
//! * [`RowStream::spawn`] reads on a caller's [`Session`] with rust-postgres' synchronous
//!   `copy_out`, inside whatever transaction or snapshot the session holds (the audit reads
//!   its repeatable-read snapshots so);
//! * [`RowStream::connect`] opens a connection of its own to an [`Endpoint`] and drains the
//!   COPY with tokio-postgres in one `block_on`, about three times cheaper per row on the
//!   client (see [`Endpoint`]); `row_diff` reads so.
//!
//! Rows travel in batches (1,024 rows or 1 MiB of encoded fields, whichever comes first, by
//! default) over a bounded `crossbeam-channel` (4 batches by default), so a slow consumer
//! stops the reader after a bounded amount of data: memory is flat whatever the table size.
//! A batch's rows share one buffer ([`EncodedRow`]), so a batch costs one allocation, not
//! one per row or per field. The consumer flattens batches with [`Batches`], which hands
//! each emptied `Vec` back over a second channel for the reader to refill, so batch buffers
//! are allocated a handful of times per stream, not per batch.
//!
//! A stream dropped before its end (the other side failed, a row limit was hit), or stopped
//! through its [`StreamStopper`], stops its reader promptly so the scope can join it: a
//! session's COPY is cancelled on the server (the session is then in an aborted
//! transaction, if it was in one: roll it back); an own connection's query is cancelled and
//! the connection dropped.

use std::io::BufRead;
use std::ops::Range;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::Scope;

use crossbeam_channel::{Receiver, Sender};
use datadiff_diff_core::{
    merge::{Batches, Key},
    plan::quoted_ident,
};

use crate::error::Error;
use crate::session::{Canceller, Session};
use crate::stream::DecodeError;
use crate::stream::copy::{CopyParser, Flow, Tuple};
use crate::stream::decoder::{Decoder, KeyDecoder};
use crate::stream::encoded::{BatchWriter, EncodedRow};
use crate::stream::endpoint::{Endpoint, StopSignal};
#[cfg(feature = "mysql")]
use crate::stream::mysql::MySqlStop;
use crate::table::TableName;

/// What one side streams: a `SELECT` of the key then the compared columns, ordered by key,
/// and the decoder of each field. A composite key is several key fields, first, in key order
/// ([`RowQuery::for_table_keys`]): the rows' keys are then [`Key::Composite`]s.
///
/// [`Key::Composite`]: datadiff_diff_core::merge::Key::Composite
#[derive(Debug, Clone)]
pub struct RowQuery {
    select: String,
    /// The key columns and their decoders, in key order (at least one).
    keys: Vec<(String, KeyDecoder)>,
    columns: Vec<(String, Decoder)>,
}

impl RowQuery {
    /// A query from its own `SELECT`, which must return the key first and then one column
    /// per decoder, ordered by the key in bytewise order (`COLLATE "C"` for text keys).
    ///
    /// `COPY` takes no bind parameters: a caller filtering rows (a time window, soft
    /// deletes) writes its predicate with literals it formats itself from typed values.
    pub fn new(
        select: impl Into<String>,
        key_column: impl Into<String>,
        key: KeyDecoder,
        columns: Vec<(String, Decoder)>,
    ) -> RowQuery {
        RowQuery::with_keys(select, vec![(key_column.into(), key)], columns)
    }

    /// A query from its own `SELECT` returning every key column first, in key order, then one
    /// column per decoder, ordered by the key columns in turn (each bytewise, as
    /// [`RowQuery::new`] says).
    ///
    /// # Panics
    ///
    /// When `keys` is empty.
    pub fn with_keys(
        select: impl Into<String>,
        keys: Vec<(String, KeyDecoder)>,
        columns: Vec<(String, Decoder)>,
    ) -> RowQuery {
        assert!(!keys.is_empty(), "a row query has at least one key column");
        RowQuery { select: select.into(), keys, columns }
    }

    /// `SELECT key, columns… FROM table [WHERE filter] ORDER BY key [COLLATE "C"]`, every
    /// identifier quoted. `filter` is an SQL predicate written by the caller.
    pub fn for_table(
        table: &TableName,
        key_column: &str,
        key: KeyDecoder,
        columns: Vec<(String, Decoder)>,
        filter: Option<&str>,
    ) -> RowQuery {
        RowQuery::for_table_keys(table, vec![(key_column.to_owned(), key)], columns, filter)
    }

    /// [`RowQuery::for_table`] with any number of key columns (a composite key):
    /// `SELECT a, b, columns… FROM table [WHERE filter] ORDER BY a [COLLATE "C"], b …`.
    ///
    /// # Panics
    ///
    /// When `keys` is empty.
    pub fn for_table_keys(
        table: &TableName,
        keys: Vec<(String, KeyDecoder)>,
        columns: Vec<(String, Decoder)>,
        filter: Option<&str>,
    ) -> RowQuery {
        let names = keys.iter().map(|(name, _)| name).chain(columns.iter().map(|(name, _)| name));
        let mut select = format!("SELECT {}", names.map(|name| quoted_ident(name)).collect::<Vec<_>>().join(", "));
        select.push_str(" FROM ");
        select.push_str(&table.quoted());
        if let Some(filter) = filter {
            select.push_str(" WHERE ");
            select.push_str(filter);
        }
        select.push_str(" ORDER BY ");
        select.push_str(&order_by(&keys));
        RowQuery::with_keys(select, keys, columns)
    }

    /// The `SELECT`.
    pub fn select_sql(&self) -> &str {
        &self.select
    }

    /// The decoders of the compared columns, in order (for [`EncodedRow::values`]).
    pub fn decoders(&self) -> Vec<Decoder> {
        self.columns.iter().map(|(_, decoder)| *decoder).collect()
    }

    /// The `COPY` statement that streams it.
    pub fn copy_sql(&self) -> String {
        format!("COPY ({}) TO STDOUT (FORMAT binary)", self.select)
    }
}

/// The `ORDER BY` list of key columns: each quoted, a text key `COLLATE "C"` (bytewise, the
/// merge's order).
pub(crate) fn order_by(keys: &[(String, KeyDecoder)]) -> String {
    let order: Vec<String> = keys
        .iter()
        .map(|(name, key)| match key.needs_c_collation() {
            true => format!("{} COLLATE \"C\"", quoted_ident(name)),
            false => quoted_ident(name),
        })
        .collect();
    order.join(", ")
}

/// Batch and queue sizes of a stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamOptions {
    /// Rows per batch.
    pub batch_rows: usize,
    /// Full batches that may wait in the channel before the reader blocks.
    pub queued_batches: usize,
}

impl Default for StreamOptions {
    fn default() -> Self {
        StreamOptions { batch_rows: 1024, queued_batches: 4 }
    }
}

pub(super) type Batch = Vec<EncodedRow>;

/// A batch is sent when its rows' encodings reach this size, even with fewer rows than
/// `batch_rows`, so wide rows do not make batches large.
const BATCH_BYTES: usize = 1 << 20;
type Recycle<'scope> = Box<dyn FnMut(Batch) + Send + 'scope>;

/// Stops a [`RowStream`]'s reader (and its query) from any thread, as dropping the stream
/// does: for an interruption that must not wait for the next row, or a deadline.
#[derive(Debug, Clone)]
pub struct StreamStopper {
    how: Stopper,
    completed: Arc<AtomicBool>,
}

#[derive(Debug, Clone)]
pub(super) enum Stopper {
    /// The reader shares the caller's session: cancel the running COPY on the server (the
    /// session must stay usable afterwards).
    Cancel(Canceller),
    /// The reader has its own connection: wake it, and it cancels the query and drops the
    /// connection.
    Wake(Arc<StopSignal>),
    /// The reader has its own MySQL session: flag it and `KILL QUERY` its statement.
    #[cfg(feature = "mysql")]
    MySql(Arc<MySqlStop>),
    /// The reader has no server: a flag it checks per row.
    Flag(Arc<AtomicBool>),
}

impl StreamStopper {
    /// Stops the reader; best effort, idempotent. The stream then ends with an error.
    pub fn stop(&self) {
        match &self.how {
            Stopper::Cancel(canceller) => canceller.cancel(),
            Stopper::Wake(stop) => stop.stop(),
            #[cfg(feature = "mysql")]
            Stopper::MySql(stop) => stop.stop(),
            Stopper::Flag(stopped) => stopped.store(true, Ordering::Release),
        }
    }

    /// Whether the reader has read the whole answer (every row, or the server's error): a
    /// stream that has not is still waiting for its server.
    pub fn reader_completed(&self) -> bool {
        self.completed.load(Ordering::Acquire)
    }
}

/// The rows of one side, in key order, as an iterator of [`EncodedRow`]s for
/// [`datadiff_diff_core::merge`].
///
/// Made by [`RowStream::spawn`] (on a caller's [`Session`]) or [`RowStream::connect`] (on a
/// connection of its own, see [`Endpoint`]); yields `Err` once and then ends when reading or
/// decoding fails. Dropping it before the end stops the reader thread and the query.
pub struct RowStream<'scope> {
    role: String,
    rows: Batches<crossbeam_channel::IntoIter<Result<Batch, Box<Error>>>, EncodedRow, Recycle<'scope>>,
    completed: Arc<AtomicBool>,
    stopper: StreamStopper,
    finished: bool,
}

impl std::fmt::Debug for RowStream<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RowStream").field("role", &self.role).field("finished", &self.finished).finish_non_exhaustive()
    }
}

impl<'scope> RowStream<'scope> {
    /// Starts streaming `query` on `session` from a new thread of `scope`, with rust-postgres'
    /// synchronous `copy_out`. A stream dropped early cancels the query; the session is then
    /// in an aborted transaction, if it was in one.
    pub fn spawn<'env>(
        scope: &'scope Scope<'scope, 'env>,
        session: &'scope mut Session,
        query: RowQuery,
        options: StreamOptions,
    ) -> RowStream<'scope> {
        let role = session.role().to_owned();
        let stopper = Stopper::Cancel(session.canceller());
        RowStream::start(scope, role, options, stopper, move |decoder, out| read_session(session, &query, decoder, out))
    }

    /// Starts streaming `query` from a new thread of `scope` on a connection of its own to
    /// `endpoint`, drained by tokio-postgres in a single-threaded runtime (see [`Endpoint`]
    /// for why). The connection is made on the reader thread, within the endpoint's connect
    /// timeout, and closed when the stream ends; a stream dropped early drops the connection,
    /// which ends the query on the server.
    pub fn connect<'env>(
        scope: &'scope Scope<'scope, 'env>,
        endpoint: Endpoint,
        query: RowQuery,
        options: StreamOptions,
    ) -> RowStream<'scope> {
        let role = endpoint.role().to_owned();
        let stop = Arc::new(StopSignal::default());
        let reader_stop = Arc::clone(&stop);
        RowStream::start(scope, role, options, Stopper::Wake(stop), move |decoder, out| {
            endpoint.stream(&query, decoder, out, &reader_stop)
        })
    }

    /// Streams `rows` in their order from a new thread of `scope`, through the same batches
    /// and channels as a database's rows: rows a program holds in memory
    /// ([`crate::compare::MemorySide`]). An `Err` ends the stream with that error after the
    /// rows before it; a stream stopped or dropped early stops at its next row.
    pub fn from_rows<'env, I>(
        scope: &'scope Scope<'scope, 'env>,
        role: impl Into<String>,
        rows: I,
        options: StreamOptions,
    ) -> RowStream<'scope>
    where
        I: IntoIterator<Item = Result<EncodedRow, Error>> + Send + 'scope,
    {
        let stopped = Arc::new(AtomicBool::new(false));
        let reader_stopped = Arc::clone(&stopped);
        RowStream::start(scope, role.into(), options, Stopper::Flag(stopped), move |decoder, out| {
            for row in rows {
                if reader_stopped.load(Ordering::Acquire) {
                    return Ok(Flow::Stop);
                }
                let row = row?;
                let writer = decoder.writer();
                writer.begin_row();
                writer.framed(row.encoded());
                writer.end_row(row.key().clone());
                if decoder.row_ended(out) == Flow::Stop {
                    return Ok(Flow::Stop);
                }
            }
            Ok(decoder.flush_rows(out))
        })
    }

    /// The channels and the reader thread, whatever drives the COPY.
    pub(super) fn start<'env>(
        scope: &'scope Scope<'scope, 'env>,
        role: String,
        options: StreamOptions,
        stopper: Stopper,
        read: impl FnOnce(&mut RowDecoder, &BatchOut) -> Result<Flow, Error> + Send + 'scope,
    ) -> RowStream<'scope> {
        let batch_rows = options.batch_rows.max(1);
        let (sender, receiver) = crossbeam_channel::bounded::<Result<Batch, Box<Error>>>(options.queued_batches.max(1));
        let (recycle_sender, recycled) = crossbeam_channel::bounded::<Batch>(options.queued_batches.max(1) + 2);
        let completed = Arc::new(AtomicBool::new(false));
        let reader_completed = Arc::clone(&completed);
        let dispatch = tracing::dispatcher::get_default(Clone::clone);
        let reader_role = role.clone();
        scope.spawn(move || {
            tracing::dispatcher::with_default(&dispatch, || {
                let out = BatchOut { sender, recycled, batch_rows };
                let mut decoder = RowDecoder::new(batch_rows);
                match read(&mut decoder, &out) {
                    Ok(Flow::Continue) => reader_completed.store(true, Ordering::Release),
                    Ok(Flow::Stop) => tracing::debug!(role = %reader_role, "row stream abandoned by its consumer"),
                    Err(error) => {
                        // The rows before the error first, then the error; a gone consumer
                        // needs neither.
                        reader_completed.store(true, Ordering::Release);
                        if decoder.flush(&out) == Flow::Continue {
                            let _ = out.sender.send(Err(Box::new(error)));
                        }
                    }
                }
            });
        });
        let recycle: Recycle<'scope> = Box::new(move |batch: Batch| {
            let _ = recycle_sender.try_send(batch);
        });
        let stopper = StreamStopper { how: stopper, completed: Arc::clone(&completed) };
        RowStream { role, rows: Batches::new(receiver, recycle), completed, stopper, finished: false }
    }

    /// The side's role name.
    pub fn role(&self) -> &str {
        &self.role
    }

    /// A handle that stops this stream's reader from another thread.
    pub fn stopper(&self) -> StreamStopper {
        self.stopper.clone()
    }

    /// The next row with its (rare) error boxed: an item as small as the row, which the merge
    /// moves through fewer bytes than an [`Error`] (about a tenth of its time per row).
    pub fn next_boxed(&mut self) -> Option<Result<EncodedRow, Box<Error>>> {
        if self.finished {
            return None;
        }
        match self.rows.next() {
            Some(Ok(row)) => Some(Ok(row)),
            Some(Err(error)) => {
                self.finished = true;
                Some(Err(error))
            }
            None => {
                self.finished = true;
                if self.completed.load(Ordering::Acquire) {
                    None
                } else {
                    Some(Err(Box::new(Error::ReaderLost { role: self.role.clone() })))
                }
            }
        }
    }
}

impl Iterator for RowStream<'_> {
    type Item = Result<EncodedRow, Error>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_boxed().map(|row| row.map_err(|error| *error))
    }
}

impl Drop for RowStream<'_> {
    fn drop(&mut self) {
        if !self.finished {
            tracing::debug!(role = %self.role, "stopping an unfinished row stream");
            self.stopper.stop();
        }
    }
}

/// Where a reader's batches go: the channel to the consumer, and the emptied batches the
/// consumer hands back for reuse.
pub(super) struct BatchOut {
    sender: Sender<Result<Batch, Box<Error>>>,
    recycled: Receiver<Batch>,
    batch_rows: usize,
}

impl BatchOut {
    /// Sends `batch`, leaving an empty (recycled when possible) one in its place;
    /// [`Flow::Stop`] when the consumer is gone.
    fn send(&self, batch: &mut Batch) -> Flow {
        let next = self.recycled.try_recv().unwrap_or_else(|_| Vec::with_capacity(self.batch_rows));
        match self.sender.send(Ok(std::mem::replace(batch, next))) {
            Ok(()) => Flow::Continue,
            Err(_) => Flow::Stop,
        }
    }
}

/// Turns a binary COPY stream, chunk by chunk, into batches of [`EncodedRow`]s: the work
/// both readers share, whatever delivers the chunks.
pub(super) struct RowDecoder {
    parser: Option<(CopyParser, Vec<Segment>)>,
    carry: Vec<u8>,
    writer: BatchWriter,
    batch: Batch,
    batch_rows: usize,
}

impl RowDecoder {
    fn new(batch_rows: usize) -> RowDecoder {
        RowDecoder {
            parser: None,
            carry: Vec::new(),
            writer: BatchWriter::default(),
            batch: Vec::with_capacity(batch_rows),
            batch_rows,
        }
    }

    /// Decodes the complete rows of `chunk` (and of what an earlier chunk left over) into
    /// the current batch, sending each full batch to `out`. PostgreSQL sends one `CopyData`
    /// message per row, so a chunk is normally parsed in place; only a row split across
    /// chunks is gathered in the carry buffer.
    pub(super) fn feed(&mut self, role: &str, query: &RowQuery, chunk: &[u8], out: &BatchOut) -> Result<Flow, Error> {
        let RowDecoder { parser, carry, writer, batch, batch_rows } = self;
        let key_fields = query.keys.len();
        let (parser, segments) = parser.get_or_insert_with(|| {
            (CopyParser::new(key_fields + query.columns.len()), segments(key_fields, &query.columns))
        });
        let decode_error = |column: &str, problem: DecodeError| Error::Decode {
            role: role.to_owned(),
            column: column.to_owned(),
            problem,
        };
        let malformed = |problem: &'static str| decode_error("COPY stream", DecodeError::Framing(problem));
        let mut on_row = |tuple: &Tuple<'_>| -> Result<Flow, Error> {
            let key_part = |index: usize| -> Result<Key, Error> {
                let (name, decoder) = &query.keys[index];
                let Some(field) = tuple.field(index) else {
                    return Err(Error::NullKey { role: role.to_owned(), column: name.clone() });
                };
                decoder.decode(field).map_err(|problem| decode_error(name, problem))
            };
            let key = match key_fields {
                1 => key_part(0)?,
                _ => Key::from_parts((0..key_fields).map(key_part).collect::<Result<_, _>>()?),
            };
            writer.begin_row();
            for segment in segments.iter() {
                match segment {
                    Segment::Framed(fields) => writer.framed(tuple.framed(fields.clone())),
                    Segment::Encode(field) => match tuple.field(*field) {
                        None => writer.null(),
                        Some(bytes) => {
                            let (name, decoder) = &query.columns[*field - key_fields];
                            writer.field(*decoder, bytes).map_err(|problem| decode_error(name, problem))?;
                        }
                    },
                }
            }
            writer.end_row(key);
            if writer.rows() >= *batch_rows || writer.bytes() >= BATCH_BYTES {
                writer.seal(batch);
                return Ok(out.send(batch));
            }
            Ok(Flow::Continue)
        };
        if carry.is_empty() {
            let (used, flow) = parser.parse(chunk, &mut on_row, malformed)?;
            carry.extend_from_slice(&chunk[used..]);
            Ok(flow)
        } else {
            carry.extend_from_slice(chunk);
            let (used, flow) = parser.parse(carry, &mut on_row, malformed)?;
            carry.drain(..used);
            Ok(flow)
        }
    }

    /// The end of the COPY data: the stream must have ended with its trailer; the last
    /// batch is sent.
    pub(super) fn finish(&mut self, role: &str, out: &BatchOut) -> Result<Flow, Error> {
        let complete = self.parser.as_ref().is_some_and(|(parser, _)| parser.is_complete());
        if !complete || !self.carry.is_empty() {
            return Err(Error::Decode {
                role: role.to_owned(),
                column: "COPY stream".to_owned(),
                problem: DecodeError::Framing("the COPY stream ended in the middle of a row"),
            });
        }
        Ok(self.flush(out))
    }

    /// The writer rows are written to (by a reader that does not parse COPY).
    pub(super) fn writer(&mut self) -> &mut BatchWriter {
        &mut self.writer
    }

    /// After a row written through [`RowDecoder::writer`]: sends the batch when it is full.
    pub(super) fn row_ended(&mut self, out: &BatchOut) -> Flow {
        if self.writer.rows() >= self.batch_rows || self.writer.bytes() >= BATCH_BYTES {
            self.writer.seal(&mut self.batch);
            return out.send(&mut self.batch);
        }
        Flow::Continue
    }

    /// The end of a stream written through [`RowDecoder::writer`]: the last batch is sent.
    pub(super) fn flush_rows(&mut self, out: &BatchOut) -> Flow {
        self.flush(out)
    }

    /// Sends the rows decoded so far, if any.
    fn flush(&mut self, out: &BatchOut) -> Flow {
        self.writer.seal(&mut self.batch);
        if self.batch.is_empty() { Flow::Continue } else { out.send(&mut self.batch) }
    }
}

/// How a tuple's compared fields (after the key fields) become a row's encoding.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Segment {
    /// A run of fields whose wire bytes are their encoding: copied as framed on the wire.
    Framed(Range<usize>),
    /// One field encoded by its decoder.
    Encode(usize),
}

/// The segments of a row whose compared fields follow `key_fields` key fields: consecutive
/// wire fields merged into one copy.
fn segments(key_fields: usize, columns: &[(String, Decoder)]) -> Vec<Segment> {
    let mut segments: Vec<Segment> = Vec::new();
    for (index, (_, decoder)) in columns.iter().enumerate() {
        let field = index + key_fields;
        match segments.last_mut() {
            Some(Segment::Framed(run)) if decoder.is_wire() && run.end == field => run.end = field + 1,
            _ if decoder.is_wire() => segments.push(Segment::Framed(field..field + 1)),
            _ => segments.push(Segment::Encode(field)),
        }
    }
    segments
}

/// The synchronous reader: rust-postgres' `copy_out` on the caller's session.
fn read_session(
    session: &mut Session,
    query: &RowQuery,
    decoder: &mut RowDecoder,
    out: &BatchOut,
) -> Result<Flow, Error> {
    let role = session.role().to_owned();
    let copy = query.copy_sql();
    let mut reader =
        session.client().copy_out(copy.as_str()).map_err(Error::query(&role, "starting the row stream"))?;
    loop {
        let chunk = reader.fill_buf().map_err(|source| Error::Stream { role: role.clone(), source })?;
        if chunk.is_empty() {
            break;
        }
        let length = chunk.len();
        let flow = decoder.feed(&role, query, chunk, out)?;
        reader.consume(length);
        if flow == Flow::Stop {
            return Ok(Flow::Stop);
        }
    }
    decoder.finish(&role, out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_of_wire_fields_are_copied_in_one_piece() {
        use Decoder as D;
        let columns = |decoders: &[Decoder]| -> Vec<(String, Decoder)> {
            decoders.iter().map(|decoder| ("c".to_owned(), *decoder)).collect()
        };
        assert_eq!(
            segments(1, &columns(&[D::Timestamp, D::IntSameWidth, D::NumericSameScale, D::Text])),
            vec![Segment::Framed(1..5)]
        );
        assert_eq!(
            segments(1, &columns(&[D::Timestamp, D::NumericAsFloat, D::Text, D::Text, D::PaddedChar, D::Int])),
            vec![
                Segment::Framed(1..2),
                Segment::Encode(2),
                Segment::Framed(3..5),
                Segment::Encode(5),
                Segment::Encode(6)
            ]
        );
        assert!(segments(1, &[]).is_empty());
    }
}
