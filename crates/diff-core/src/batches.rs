//! Rows that arrive in batches (from reader threads over a bounded channel) flattened into
//! the row iterator the merge pulls, with each emptied batch handed back for reuse so a
//! steady-state stream allocates nothing.

/// Flattens an iterator of row batches into an iterator of rows.
///
/// Each emptied `Vec` is passed to `recycle` (typically a channel back to the reader thread,
/// which refills it) instead of being freed. An `Err` batch is yielded as one `Err` row.
///
/// ```
/// use datadiff_diff_core::merge::Batches;
///
/// let batches = vec![Ok::<_, String>(vec![1, 2]), Ok(vec![]), Ok(vec![3])];
/// let mut returned = 0;
/// let rows: Vec<_> = Batches::new(batches, |_empty: Vec<i32>| returned += 1).collect();
/// assert_eq!(rows, vec![Ok(1), Ok(2), Ok(3)]);
/// assert_eq!(returned, 3);
/// ```
pub struct Batches<I, R, F> {
    batches: I,
    /// The current batch in reverse order, so rows leave by `pop` and the allocation stays.
    current: Vec<R>,
    recycle: F,
    holding: bool,
}

impl<I, R, E, F> Batches<I, R, F>
where
    I: Iterator<Item = Result<Vec<R>, E>>,
    F: FnMut(Vec<R>),
{
    /// Wraps `batches`; `recycle` receives every emptied batch.
    pub fn new(batches: impl IntoIterator<IntoIter = I>, recycle: F) -> Self {
        Batches { batches: batches.into_iter(), current: Vec::new(), recycle, holding: false }
    }
}

impl<I, R, E, F> Iterator for Batches<I, R, F>
where
    I: Iterator<Item = Result<Vec<R>, E>>,
    F: FnMut(Vec<R>),
{
    type Item = Result<R, E>;

    fn next(&mut self) -> Option<Result<R, E>> {
        loop {
            if let Some(row) = self.current.pop() {
                return Some(Ok(row));
            }
            if self.holding {
                self.holding = false;
                (self.recycle)(std::mem::take(&mut self.current));
            }
            match self.batches.next()? {
                Ok(mut batch) => {
                    batch.reverse();
                    self.current = batch;
                    self.holding = true;
                }
                Err(error) => return Some(Err(error)),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_batch_becomes_an_error_row_in_place() {
        let batches = vec![Ok(vec![1]), Err("broken"), Ok(vec![2])];
        let rows: Vec<_> = Batches::new(batches, |_| {}).collect();
        assert_eq!(rows, vec![Ok(1), Err("broken"), Ok(2)]);
    }

    #[test]
    fn emptied_batches_come_back_with_their_capacity() {
        let mut capacities = Vec::new();
        let batches = vec![Ok::<_, ()>(Vec::with_capacity(64)), Ok(vec![7; 3])];
        let rows: Vec<_> = Batches::new(batches, |empty: Vec<i32>| capacities.push(empty.capacity())).collect();
        assert_eq!(rows, vec![Ok(7), Ok(7), Ok(7)]);
        assert_eq!(capacities[0], 64);
        assert!(capacities[1] >= 3);
    }
}
