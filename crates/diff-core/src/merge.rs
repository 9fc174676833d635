//! The sorted-key merge: two key-ordered row streams in, one change per key out.
//!
//! # Design
//!
//! [`merge`] is a pull iterator in the spirit of itertools' `merge_join_by`: the caller owns
//! both input iterators (database cursors, channel receivers, slices) and pulls changes at its
//! own pace, so memory is one row of lookahead per side whatever the stream length. Nothing
//! is allocated per row; rows move from the inputs to the output.
//!
//! Each side keeps one row of lookahead beyond the row being compared. When a row leaves a
//! side, the next row is read and its key checked to be strictly greater, so out-of-order
//! and duplicate keys are reported without cloning keys. A collation mismatch between the
//! databases and the merge's bytewise order therefore surfaces as
//! [`MergeError::OutOfOrder`] — never as a silently wrong diff.
//!
//! After the first error the iterator is exhausted.

pub use crate::batches::Batches;
pub use crate::error::MergeError;
pub use crate::key::Key;
pub use crate::row::{DigestRow, Keyed, ValuesRow};
pub use crate::summary::{ChangedFields, DifferenceKind, Example, Summary};
pub use crate::value::{Float, Numeric, Value};

use std::cmp::Ordering;
use std::marker::PhantomData;

use crate::error::Side;

/// The outcome for one key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change<R> {
    /// Present on both sides with equal content.
    Same {
        /// The source row.
        source: R,
        /// The target row.
        target: R,
    },
    /// Present in the source only.
    MissingInTarget(R),
    /// Present in the target only.
    ExtraInTarget(R),
    /// Present on both sides with different content.
    Changed {
        /// The source row.
        source: R,
        /// The target row.
        target: R,
    },
}

impl<R: Keyed> Change<R> {
    /// The key this change is about.
    pub fn key(&self) -> &R::Key {
        match self {
            Change::Same { source, .. } | Change::Changed { source, .. } => source.key(),
            Change::MissingInTarget(row) | Change::ExtraInTarget(row) => row.key(),
        }
    }

    /// True for [`Change::Same`].
    pub fn is_same(&self) -> bool {
        matches!(self, Change::Same { .. })
    }
}

/// Merges two streams ordered by strictly increasing key.
///
/// ```
/// use datadiff_diff_core::merge::{merge, Change, DigestRow};
///
/// let row = |key: i64, byte: u8| Ok::<_, std::convert::Infallible>(DigestRow { key, digest: [byte; 32] });
/// let source = vec![row(1, 0), row(2, 0), row(4, 0)];
/// let target = vec![row(1, 0), row(2, 9), row(3, 0)];
/// let changes: Vec<_> = merge(source, target).map(|change| change.unwrap()).collect();
/// assert!(changes[0].is_same());
/// assert!(matches!(changes[1], Change::Changed { .. }));
/// assert!(matches!(changes[2], Change::ExtraInTarget(DigestRow { key: 3, .. })));
/// assert!(matches!(changes[3], Change::MissingInTarget(DigestRow { key: 4, .. })));
/// ```
pub fn merge<R, E, S, T>(source: S, target: T) -> Merge<R, E, S::IntoIter, T::IntoIter>
where
    R: Keyed,
    S: IntoIterator<Item = Result<R, E>>,
    T: IntoIterator<Item = Result<R, E>>,
{
    Merge {
        source: Cursor::new(Side::Source, source.into_iter()),
        target: Cursor::new(Side::Target, target.into_iter()),
        started: false,
        failed: false,
        error: PhantomData,
    }
}

/// The iterator returned by [`merge`].
pub struct Merge<R, E, S, T> {
    source: Cursor<R, S>,
    target: Cursor<R, T>,
    started: bool,
    failed: bool,
    /// `E` only appears in the item types of `S` and `T`.
    error: PhantomData<fn() -> E>,
}

/// One side: the row being compared (`head`) and the input it comes from.
struct Cursor<R, I> {
    side: Side,
    input: I,
    head: Option<R>,
}

impl<R, E, I> Cursor<R, I>
where
    R: Keyed,
    I: Iterator<Item = Result<R, E>>,
{
    fn new(side: Side, input: I) -> Self {
        Cursor { side, input, head: None }
    }

    fn read(&mut self) -> Result<Option<R>, MergeError<E>> {
        match self.input.next() {
            None => Ok(None),
            Some(Ok(row)) => Ok(Some(row)),
            Some(Err(source)) => Err(MergeError::Read { side: self.side, source }),
        }
    }

    fn fill(&mut self) -> Result<(), MergeError<E>> {
        self.head = self.read()?;
        Ok(())
    }

    /// Takes the head, reads its successor and checks the successor's key is greater.
    fn advance(&mut self) -> Result<Option<R>, MergeError<E>> {
        let Some(current) = self.head.take() else { return Ok(None) };
        let next = self.read()?;
        if let Some(next_row) = &next {
            match next_row.key().cmp(current.key()) {
                Ordering::Greater => {}
                Ordering::Equal => {
                    return Err(MergeError::DuplicateKey { side: self.side, key: current.key().to_string() });
                }
                Ordering::Less => {
                    return Err(MergeError::OutOfOrder {
                        side: self.side,
                        previous: current.key().to_string(),
                        key: next_row.key().to_string(),
                    });
                }
            }
        }
        self.head = next;
        Ok(Some(current))
    }
}

impl<R, E, S, T> Merge<R, E, S, T>
where
    R: Keyed,
    S: Iterator<Item = Result<R, E>>,
    T: Iterator<Item = Result<R, E>>,
{
    fn step(&mut self) -> Result<Option<Change<R>>, MergeError<E>> {
        if !self.started {
            self.started = true;
            self.source.fill()?;
            self.target.fill()?;
        }
        let order = match (&self.source.head, &self.target.head) {
            (None, None) => return Ok(None),
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (Some(source), Some(target)) => source.key().cmp(target.key()),
        };
        let change = match order {
            Ordering::Less => self.source.advance()?.map(Change::MissingInTarget),
            Ordering::Greater => self.target.advance()?.map(Change::ExtraInTarget),
            Ordering::Equal => {
                let source = self.source.advance()?;
                let target = self.target.advance()?;
                match (source, target) {
                    (Some(source), Some(target)) if source.same_content(&target) => {
                        Some(Change::Same { source, target })
                    }
                    (Some(source), Some(target)) => Some(Change::Changed { source, target }),
                    _ => None,
                }
            }
        };
        Ok(change)
    }
}

impl<R, E, S, T> Iterator for Merge<R, E, S, T>
where
    R: Keyed,
    S: Iterator<Item = Result<R, E>>,
    T: Iterator<Item = Result<R, E>>,
{
    type Item = Result<Change<R>, MergeError<E>>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        match self.step() {
            Ok(change) => change.map(Ok),
            Err(error) => {
                self.failed = true;
                Some(Err(error))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type Row = DigestRow<i64>;

    fn rows(keys: &[(i64, u8)]) -> Vec<Result<Row, String>> {
        keys.iter().map(|&(key, byte)| Ok(DigestRow { key, digest: [byte; 32] })).collect()
    }

    fn outcome(change: &Change<Row>) -> (&'static str, i64) {
        let kind = match change {
            Change::Same { .. } => "same",
            Change::MissingInTarget(_) => "missing",
            Change::ExtraInTarget(_) => "extra",
            Change::Changed { .. } => "changed",
        };
        (kind, *change.key())
    }

    #[test]
    fn every_key_gets_one_outcome_in_key_order() {
        let source = rows(&[(1, 0), (3, 0), (5, 1), (7, 0)]);
        let target = rows(&[(2, 0), (3, 0), (5, 2), (8, 0)]);
        let got: Vec<_> = merge(source, target).map(|change| outcome(&change.unwrap())).collect();
        assert_eq!(got, vec![("missing", 1), ("extra", 2), ("same", 3), ("changed", 5), ("missing", 7), ("extra", 8)]);
    }

    #[test]
    fn empty_sides_are_all_missing_or_all_extra() {
        let got: Vec<_> = merge(rows(&[(1, 0), (2, 0)]), rows(&[])).map(|change| outcome(&change.unwrap())).collect();
        assert_eq!(got, vec![("missing", 1), ("missing", 2)]);
        let got: Vec<_> = merge(rows(&[]), rows(&[(4, 0)])).map(|change| outcome(&change.unwrap())).collect();
        assert_eq!(got, vec![("extra", 4)]);
        assert_eq!(merge(rows(&[]), rows(&[])).count(), 0);
    }

    #[test]
    fn a_duplicate_key_names_its_side_and_key_and_ends_the_merge() {
        let source = rows(&[(1, 0), (2, 0)]);
        let target = rows(&[(1, 0), (2, 0), (2, 0), (3, 0)]);
        let results: Vec<_> = merge(source, target).collect();
        let error = results.last().unwrap().as_ref().unwrap_err();
        assert_eq!(error, &MergeError::DuplicateKey { side: Side::Target, key: "2".into() });
        assert_eq!(error.to_string(), "duplicate key 2 in the target stream");
    }

    #[test]
    fn a_key_out_of_order_names_both_keys() {
        let source = rows(&[(1, 0), (5, 0), (4, 0)]);
        let target = rows(&[(1, 0)]);
        let error = merge(source, target).find_map(Result::err).unwrap();
        assert_eq!(error, MergeError::OutOfOrder { side: Side::Source, previous: "5".into(), key: "4".into() });
    }

    #[test]
    fn a_read_error_is_passed_through_with_its_side() {
        let source = rows(&[(1, 0)]);
        let target = vec![Ok(DigestRow { key: 1, digest: [0; 32] }), Err("connection reset".to_owned())];
        let error = merge(source, target).find_map(Result::err).unwrap();
        assert_eq!(error, MergeError::Read { side: Side::Target, source: "connection reset".into() });
    }

    #[test]
    fn borrowed_rows_merge_without_moving_them() {
        let source: Vec<Row> = vec![DigestRow { key: 1, digest: [0; 32] }];
        let target: Vec<Row> = vec![DigestRow { key: 1, digest: [1; 32] }];
        let ok = |row| Ok::<_, std::convert::Infallible>(row);
        let changes: Vec<_> = merge(source.iter().map(ok), target.iter().map(ok)).collect();
        assert!(matches!(changes[0], Ok(Change::Changed { .. })));
    }
}
