//! A side whose rows are held in memory: streamed through the same batches and channels as a
//! database's rows, and hashed by key segment as a database hashes them — the pipeline's
//! unit tests run on it, and a program can compare rows it already holds.
//!
//! Hashing follows the database sides' contract ([`crate::segment`]): a row's position is its
//! integer key, or a uuid's or a text key's first 60 bits (of its bytes, zero-padded); a row's
//! hash is a 64-bit SipHash of its key and encoded fields, and a segment's digest is its row
//! count and the sum of its rows' hashes (exact in the overview, modulo 2⁶⁴ in a level). Two
//! different sets of rows digest alike only by a 64-bit coincidence, as in the databases.

use std::collections::BTreeMap;
use std::hash::{Hash, Hasher};
use std::thread::Scope;

use datadiff_diff_core::Side;
use datadiff_diff_core::merge::Key;
use datadiff_diff_core::segment::{ChildDigest, Digest, Link, Overview, Segment, Split};
use datadiff_diff_core::sketch::{Sketch, SketchCell, SketchShape};

use super::{CompareSide, HashFacts, RowSet};
use crate::error::Error;
use crate::segment::{HashSide, KeysNotUsable};
use crate::stream::{EncodedRow, RowStream, StreamOptions};

/// A [`MemorySide`] asked to hash rows whose keys have no position.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the {role} rows cannot be hashed: key {key} has no position (composite keys need a first part)")]
pub struct MemoryError {
    /// The side's role name.
    pub role: String,
    /// The key without a position.
    pub key: String,
}

/// Rows held in memory, as one side of a comparison (see the module docs).
///
/// The rows are streamed in the order given: rows out of key order or with a repeated key
/// make the merge stop as a database's would.
#[derive(Debug, Clone)]
pub struct MemorySide {
    side: Side,
    role: String,
    rows: Vec<EncodedRow>,
    link: Link,
    supported: bool,
    unique_key: bool,
    batch_rows: usize,
    failure: Option<usize>,
    endless: bool,
    never_hashes: Option<String>,
    hashing_statements: usize,
}

impl MemorySide {
    /// `rows` as the `side` of a comparison: on this machine, able to hash, its key unique,
    /// streamed in batches of 1,024 rows.
    pub fn new(side: Side, rows: Vec<EncodedRow>) -> MemorySide {
        MemorySide {
            side,
            role: side.to_string(),
            rows,
            link: Link::Local,
            supported: true,
            unique_key: true,
            batch_rows: StreamOptions::default().batch_rows,
            failure: None,
            endless: false,
            never_hashes: None,
            hashing_statements: 0,
        }
    }

    /// The side as if reached over `link` (a [`Link::Measured`] one is what a probe reports).
    pub fn with_link(mut self, link: Link) -> MemorySide {
        self.link = link;
        self
    }

    /// The side as a server that cannot hash (PostgreSQL before 14).
    pub fn without_hashing(mut self) -> MemorySide {
        self.supported = false;
        self
    }

    /// Whether the key has a unique index (without one, the overview looks for duplicates).
    pub fn with_unique_key(mut self, unique: bool) -> MemorySide {
        self.unique_key = unique;
        self
    }

    /// Streams `rows` rows per batch (at least one).
    pub fn with_batch_rows(mut self, rows: usize) -> MemorySide {
        self.batch_rows = rows.max(1);
        self
    }

    /// Makes the stream fail after `rows` rows, as a lost connection would.
    pub fn failing_after(mut self, rows: usize) -> MemorySide {
        self.failure = Some(rows);
        self
    }

    /// Makes the stream go on after its rows, a row a millisecond under ever greater integer
    /// keys, until it is stopped: a server that does not answer in full.
    pub fn endless(mut self) -> MemorySide {
        self.endless = true;
        self
    }

    /// The side as a database that never hashes (every comparison with it streams, for
    /// `why`).
    pub fn never_hashing(mut self, why: impl Into<String>) -> MemorySide {
        self.never_hashes = Some(why.into());
        self
    }

    /// Hashing statements answered so far (overviews and levels).
    pub fn hashing_statements(&self) -> usize {
        self.hashing_statements
    }

    /// A row's position, as the database sides compute it.
    fn position(&self, key: &Key) -> Result<i64, MemoryError> {
        match key {
            Key::Int(value) => Ok(*value),
            Key::Uuid(bytes) => {
                let mut first = [0u8; 8];
                first.copy_from_slice(&bytes[..8]);
                Ok((u64::from_be_bytes(first) >> 4) as i64)
            }
            // A text key's position is its first 60 bits in byte order (UTF-8, zero-padded).
            Key::Text(text) => {
                let mut first = [0u8; 8];
                let bytes = text.as_bytes();
                let length = bytes.len().min(8);
                first[..length].copy_from_slice(&bytes[..length]);
                Ok((u64::from_be_bytes(first) >> 4) as i64)
            }
            // A date key's position is its binary value; a timestamp's, its value's top 62 bits.
            Key::Date(days) => Ok(i64::from(*days)),
            Key::Timestamp(micros) => Ok(*micros >> 2),
            // A composite key's position is its first part's, as on a database.
            Key::Composite(parts) => match parts.first() {
                Some(first @ (Key::Int(_) | Key::Uuid(_) | Key::Text(_) | Key::Date(_) | Key::Timestamp(_))) => {
                    self.position(first)
                }
                _ => Err(MemoryError { role: self.role.clone(), key: key.to_string() }),
            },
        }
    }

    /// Each row's position and hash.
    fn hashed(&self) -> Result<Vec<(i64, u64)>, MemoryError> {
        self.rows
            .iter()
            .map(|row| {
                let mut hasher = std::hash::DefaultHasher::new();
                row.key().hash(&mut hasher);
                row.encoded().hash(&mut hasher);
                Ok((self.position(row.key())?, hasher.finish()))
            })
            .collect()
    }
}

impl HashSide for MemorySide {
    type Error = MemoryError;

    fn overview(&mut self, check_duplicates: bool) -> Result<Result<Option<Overview>, KeysNotUsable>, MemoryError> {
        self.hashing_statements += 1;
        if check_duplicates {
            let mut keys: Vec<&Key> = self.rows.iter().map(EncodedRow::key).collect();
            keys.sort_unstable();
            if keys.windows(2).any(|pair| pair[0] == pair[1]) {
                return Ok(Err(KeysNotUsable::DuplicateKey));
            }
        }
        let hashed = self.hashed()?;
        let (Some(first), Some(last)) =
            (hashed.iter().map(|(position, _)| *position).min(), hashed.iter().map(|(position, _)| *position).max())
        else {
            return Ok(Ok(None));
        };
        let sum: u128 = hashed.iter().map(|(_, hash)| u128::from(*hash)).sum();
        Ok(Ok(Some(Overview { first, last, rows: hashed.len() as u64, hash: sum.to_string() })))
    }

    /// The exact quantiles of the positions inside `span`, for every key kind (a database
    /// samples text keys only): the search's result does not depend on them, so the
    /// pipeline's tests cover both ways of splitting the first level.
    fn split_points(&mut self, span: Segment, count: u64) -> Result<Vec<i64>, MemoryError> {
        let mut positions: Vec<i64> = self
            .hashed()?
            .into_iter()
            .map(|(position, _)| position)
            .filter(|position| span.first <= *position && *position <= span.last)
            .collect();
        positions.sort_unstable();
        let count = usize::try_from(count).unwrap_or(usize::MAX).clamp(1, positions.len().max(1));
        Ok((1..count).filter_map(|piece| positions.get(piece * positions.len() / count).copied()).collect())
    }

    fn level(&mut self, splits: &[Split]) -> Result<Vec<ChildDigest>, MemoryError> {
        self.hashing_statements += 1;
        let mut children: BTreeMap<(usize, u64), (u64, u64)> = BTreeMap::new();
        for (position, hash) in self.hashed()? {
            // Splits are disjoint and ascending: the last one starting at or before the row.
            let index = splits.partition_point(|split| split.segment.first <= position);
            let Some(split_index) = index.checked_sub(1) else { continue };
            let split = splits[split_index];
            if position > split.segment.last {
                continue;
            }
            let offset = (i128::from(position) - i128::from(split.segment.first)) as u128;
            let child = (offset / u128::from(split.width.max(1))) as u64;
            let entry = children.entry((split_index, child)).or_default();
            entry.0 += 1;
            entry.1 = entry.1.wrapping_add(hash);
        }
        Ok(children
            .into_iter()
            .map(|((split, child), (rows, sum))| ChildDigest { split, child, digest: Digest { rows, hash: sum } })
            .collect())
    }

    fn sketches(&self) -> bool {
        true
    }

    /// A sketch of every row, its non-empty cells only.
    fn sketch(&mut self, shape: SketchShape) -> Result<Vec<SketchCell>, MemoryError> {
        self.hashing_statements += 1;
        let mut sketch = Sketch::new(shape);
        for (position, hash) in self.hashed()? {
            sketch.add(position, hash);
        }
        Ok(sketch.cells().iter().filter(|cell| cell.rows != 0).copied().collect())
    }
}

impl CompareSide for MemorySide {
    fn side(&self) -> Side {
        self.side
    }

    fn never_hashes(&self) -> Option<&str> {
        self.never_hashes.as_deref()
    }

    fn is_local(&self) -> bool {
        self.link == Link::Local
    }

    fn prepare(&mut self, probe_link: bool) -> Result<HashFacts, MemoryError> {
        Ok(HashFacts {
            unsupported: (!self.supported).then(|| format!("the {} server cannot hash", self.role)),
            link: (probe_link && self.supported).then_some(self.link),
            unique_key: self.unique_key,
        })
    }

    fn stream<'scope, 'env>(
        &'scope mut self,
        scope: &'scope Scope<'scope, 'env>,
        rows: RowSet<'_>,
    ) -> RowStream<'scope> {
        let selected: Vec<EncodedRow> = match rows {
            RowSet::All => self.rows.clone(),
            RowSet::Leaves(leaves) => self
                .rows
                .iter()
                .filter(|row| {
                    self.position(row.key()).is_ok_and(|position| leaves.iter().any(|leaf| in_segment(leaf, position)))
                })
                .cloned()
                .collect(),
        };
        let role = self.role.clone();
        let mut rows: Vec<Result<EncodedRow, Error>> = selected.into_iter().map(Ok).collect();
        if let Some(after) = self.failure {
            rows.truncate(after);
            let lost = std::io::Error::new(std::io::ErrorKind::ConnectionReset, format!("lost after {after} rows"));
            rows.push(Err(Error::Stream { role: role.clone(), source: lost }));
        }
        let options = StreamOptions { batch_rows: self.batch_rows, ..StreamOptions::default() };
        if !self.endless {
            return RowStream::from_rows(scope, role, rows, options);
        }
        let after = match self.rows.last().map(EncodedRow::key) {
            Some(Key::Int(last)) => last.saturating_add(1),
            _ => 0,
        };
        let more = (after..).map(|key| {
            std::thread::sleep(std::time::Duration::from_millis(1));
            Ok(EncodedRow::from_fields(Key::Int(key), []))
        });
        RowStream::from_rows(scope, role, rows.into_iter().chain(more), options)
    }
}

fn in_segment(segment: &Segment, position: i64) -> bool {
    segment.first <= position && position <= segment.last
}
