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
//! Rows travel in batches (1,024 rows or 1 MiB of encoded fields, whichever comes first, by
//! default) over a bounded `crossbeam-channel` (4 batches by default), so a slow consumer
//! stops the reader after a bounded amount of data: memory is flat whatever the table size.
//! A batch's rows share one buffer ([`EncodedRow`]), so a batch costs one allocation, not
//! one per row or per field. The consumer flattens batches with [`Batches`], which hands
//! each emptied `Vec` back over a second channel for the reader to refill, so batch buffers
//! are allocated a handful of times per stream, not per batch.
//!
//! A stream dropped before its end (the other side failed, a row limit was hit) cancels the
//! running COPY on the server, so the reader thread stops promptly and the scope can join it.
//! The session is then in an aborted transaction, if it was in one: roll it back.

use std::io::BufRead;
use std::ops::Range;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::Scope;

use crossbeam_channel::{Receiver, Sender};
use datadiff_diff_core::Batches;

use crate::error::Error;
use crate::session::{Canceller, Session};
use crate::stream::copy::{CopyParser, Flow};
use crate::stream::decoder::{Decoder, KeyDecoder};
use crate::stream::encoded::{BatchWriter, EncodedRow};
use crate::table::{TableName, quote_ident};

/// What one side streams: a `SELECT` of the key then the compared columns, ordered by key,
/// and the decoder of each field.
#[derive(Debug, Clone)]
pub struct RowQuery {
    select: String,
    key_column: String,
    key: KeyDecoder,
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
        RowQuery { select: select.into(), key_column: key_column.into(), key, columns }
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
        let mut select = format!("SELECT {}", quote_ident(key_column));
        for (name, _) in &columns {
            select.push_str(", ");
            select.push_str(&quote_ident(name));
        }
        select.push_str(" FROM ");
        select.push_str(&table.quoted());
        if let Some(filter) = filter {
            select.push_str(" WHERE ");
            select.push_str(filter);
        }
        select.push_str(" ORDER BY ");
        select.push_str(&quote_ident(key_column));
        if key.needs_c_collation() {
            select.push_str(" COLLATE \"C\"");
        }
        RowQuery::new(select, key_column, key, columns)
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

type Batch = Vec<EncodedRow>;

/// A batch is sent when its rows' encodings reach this size, even with fewer rows than
/// `batch_rows`, so wide rows do not make batches large.
const BATCH_BYTES: usize = 1 << 20;
type Recycle<'scope> = Box<dyn FnMut(Batch) + Send + 'scope>;

/// The rows of one side, in key order, as an iterator of [`EncodedRow`]s for
/// [`datadiff_diff_core::merge`].
///
/// Made by [`RowStream::spawn`]; yields `Err` once and then ends when reading or decoding
/// fails. Dropping it before the end cancels the query.
pub struct RowStream<'scope> {
    role: String,
    rows: Batches<crossbeam_channel::IntoIter<Result<Batch, Error>>, EncodedRow, Recycle<'scope>>,
    completed: Arc<AtomicBool>,
    canceller: Canceller,
    finished: bool,
}

impl std::fmt::Debug for RowStream<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RowStream").field("role", &self.role).field("finished", &self.finished).finish_non_exhaustive()
    }
}

impl<'scope> RowStream<'scope> {
    /// Starts streaming `query` on `session` from a new thread of `scope`.
    pub fn spawn<'env>(
        scope: &'scope Scope<'scope, 'env>,
        session: &'scope mut Session,
        query: RowQuery,
        options: StreamOptions,
    ) -> RowStream<'scope> {
        let role = session.role().to_owned();
        let canceller = session.canceller();
        let batch_rows = options.batch_rows.max(1);
        let (sender, receiver) = crossbeam_channel::bounded::<Result<Batch, Error>>(options.queued_batches.max(1));
        let (recycle_sender, recycled) = crossbeam_channel::bounded::<Batch>(options.queued_batches.max(1) + 2);
        let completed = Arc::new(AtomicBool::new(false));
        let reader_completed = Arc::clone(&completed);
        let dispatch = tracing::dispatcher::get_default(Clone::clone);
        scope.spawn(move || {
            tracing::dispatcher::with_default(&dispatch, || {
                let role = session.role().to_owned();
                let mut batch: Batch = Vec::with_capacity(batch_rows);
                let mut writer = BatchWriter::default();
                match read(session, &query, &mut writer, &mut batch, batch_rows, &sender, &recycled) {
                    Ok(Flow::Continue) => reader_completed.store(true, Ordering::Release),
                    Ok(Flow::Stop) => tracing::debug!(%role, "row stream abandoned by its consumer"),
                    Err(error) => {
                        // The rows before the error first, then the error; a gone consumer
                        // needs neither.
                        reader_completed.store(true, Ordering::Release);
                        writer.seal(&mut batch);
                        if batch.is_empty() || sender.send(Ok(batch)).is_ok() {
                            let _ = sender.send(Err(error));
                        }
                    }
                }
            });
        });
        let recycle: Recycle<'scope> = Box::new(move |batch: Batch| {
            let _ = recycle_sender.try_send(batch);
        });
        RowStream { role, rows: Batches::new(receiver, recycle), completed, canceller, finished: false }
    }

    /// The side's role name.
    pub fn role(&self) -> &str {
        &self.role
    }
}

impl Iterator for RowStream<'_> {
    type Item = Result<EncodedRow, Error>;

    fn next(&mut self) -> Option<Self::Item> {
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
                    Some(Err(Error::ReaderLost { role: self.role.clone() }))
                }
            }
        }
    }
}

impl Drop for RowStream<'_> {
    fn drop(&mut self) {
        if !self.finished {
            tracing::debug!(role = %self.role, "cancelling an unfinished row stream");
            self.canceller.cancel();
        }
    }
}

/// The reader thread's work. `Ok(Flow::Stop)` when the consumer went away.
fn read(
    session: &mut Session,
    query: &RowQuery,
    writer: &mut BatchWriter,
    batch: &mut Batch,
    batch_rows: usize,
    sender: &Sender<Result<Batch, Error>>,
    recycled: &Receiver<Batch>,
) -> Result<Flow, Error> {
    let role = session.role().to_owned();
    let copy = query.copy_sql();
    let mut reader =
        session.client().copy_out(copy.as_str()).map_err(Error::query(&role, "starting the row stream"))?;
    let mut parser = CopyParser::new(1 + query.columns.len());
    let mut carry: Vec<u8> = Vec::new();
    let decode_error =
        |column: &str, problem: String| Error::Decode { role: role.clone(), column: column.to_owned(), problem };
    let malformed = |problem: &'static str| decode_error("COPY stream", problem.to_owned());
    let mut on_row = |data: &[u8], spans: &[Option<Range<usize>>]| -> Result<Flow, Error> {
        let Some(key_span) = spans[0].clone() else {
            return Err(Error::NullKey { role: role.clone(), column: query.key_column.clone() });
        };
        let key = query.key.decode(&data[key_span]).map_err(|problem| decode_error(&query.key_column, problem))?;
        writer.begin_row();
        for ((name, decoder), span) in query.columns.iter().zip(&spans[1..]) {
            match span {
                None => writer.null(),
                Some(range) => {
                    writer.field(*decoder, &data[range.clone()]).map_err(|problem| decode_error(name, problem))?;
                }
            }
        }
        writer.end_row(key);
        if writer.rows() >= batch_rows || writer.bytes() >= BATCH_BYTES {
            writer.seal(batch);
            let next = recycled.try_recv().unwrap_or_else(|_| Vec::with_capacity(batch_rows));
            if sender.send(Ok(std::mem::replace(batch, next))).is_err() {
                return Ok(Flow::Stop);
            }
        }
        Ok(Flow::Continue)
    };
    loop {
        let chunk = reader.fill_buf().map_err(|source| Error::Stream { role: role.clone(), source })?;
        if chunk.is_empty() {
            break;
        }
        let length = chunk.len();
        let flow = if carry.is_empty() {
            let (used, flow) = parser.parse(chunk, &mut on_row, malformed)?;
            carry.extend_from_slice(&chunk[used..]);
            flow
        } else {
            carry.extend_from_slice(chunk);
            let (used, flow) = parser.parse(&carry, &mut on_row, malformed)?;
            carry.drain(..used);
            flow
        };
        reader.consume(length);
        if flow == Flow::Stop {
            return Ok(Flow::Stop);
        }
    }
    if !parser.is_complete() || !carry.is_empty() {
        return Err(malformed("the COPY stream ended in the middle of a row"));
    }
    writer.seal(batch);
    if !batch.is_empty() && sender.send(Ok(std::mem::take(batch))).is_err() {
        return Ok(Flow::Stop);
    }
    Ok(Flow::Continue)
}
