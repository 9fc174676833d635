//! A difference-sized sketch of one side's rows: where the two sides differ, found in one
//! pass over each, whatever their sizes — no SQL, no I/O.
//!
//! Each side sums its rows into the cells of an invertible Bloom lookup table: a row (its
//! position and its 64-bit hash) is added to one cell of each of [`SKETCH_TABLES`] tables,
//! chosen by its hash ([`SketchShape::cell`]). A cell holds its rows' count, the sum of their
//! positions, the sum of their hashes and the sum of a check of each hash ([`check`]), all
//! wrapping. Subtracting the target's sketch from the source's cancels every row the two
//! sides share, and leaves only the rows of one side: the **differences**, each a source row
//! (count +1) or a target row (count −1); a changed row is one of each. A cell left with one
//! difference shows it whole (its position and hash, confirmed by the check); taking it out
//! of its other cells uncovers more, until every cell is empty ([`Sketch::differences`]).
//! That succeeds, with high probability, while the differences number under about four in
//! five of a table's cells, so the sketch's size — hence the bytes it moves — is chosen from
//! the number of differences it must find, not from the table's size.
//!
//! **The sketch never proves anything.** It names positions; the caller then reads both
//! sides' digests of the rows at those positions and keeps the named positions only when
//! the rest of both sides still agrees — the counts and hash totals of the whole side, less
//! those at the named positions, equal on both sides: the segment search's own proof (see
//! [`crate::segment`]). A sketch that fails to peel, or names wrong positions, only costs its
//! bytes: the search goes on from its first level.
//!
//! ```
//! use datadiff_diff_core::sketch::{Sketch, SketchShape};
//!
//! let shape = SketchShape::with_cells(64);
//! let (mut source, mut target) = (Sketch::new(shape), Sketch::new(shape));
//! for key in 1..1_000i64 {
//!     let hash = (key as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
//!     source.add(key, hash);
//!     if key != 500 {
//!         target.add(key, hash);
//!     }
//! }
//! let differences = source.minus(&target).differences().expect("one difference peels");
//! assert_eq!(differences.len(), 1);
//! assert_eq!((differences[0].position, differences[0].source), (500, true));
//! ```

/// How many tables a row is added to (one cell of each).
pub const SKETCH_TABLES: u32 = 3;

/// The most cells of one table: three such tables find about 1,500 differences. A
/// database's pass over its rows slows as the cells grow (each row updates a cell of each
/// table, and the cells stop fitting the processor's caches): measured in PostgreSQL 15 on a
/// million rows, 1,000 cells cost about 1.5 times a first level's pass, 12,000 cells about
/// 3 times and 99,000 cells 3.5 times (BENCHMARKS.md). A table whose drift needs a larger
/// sketch is searched by the levels, which stay cheap there.
pub const MAX_TABLE_CELLS: u32 = 1 << 10;

/// The fewest cells of one table: two differences falling in the same cell of every table
/// cannot be peeled, and with 64 cells a table a pair does so once in 262,144.
pub const MIN_TABLE_CELLS: u32 = 64;

/// Differences a table's cells are sized for, per cell: peeling three tables succeeds with
/// high probability below about 0.8 differences per cell and fails above; half a difference
/// per cell leaves room for the small tables' variance.
pub const DIFFERENCES_PER_CELL: f64 = 0.5;

/// The number of cells per table, and the cells a row's hash chooses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SketchShape {
    /// Cells in each of the [`SKETCH_TABLES`] tables.
    pub table_cells: u32,
}

impl SketchShape {
    /// Tables of `table_cells` cells each, within [`MIN_TABLE_CELLS`] and
    /// [`MAX_TABLE_CELLS`].
    pub fn with_cells(table_cells: u32) -> SketchShape {
        SketchShape { table_cells: table_cells.clamp(MIN_TABLE_CELLS, MAX_TABLE_CELLS) }
    }

    /// The shape that finds about `differences` differences (rows on one side only, a
    /// changed row counting twice), or `None` when that takes more than the largest shape.
    pub fn for_differences(differences: u64) -> Option<SketchShape> {
        let cells = (differences as f64 / DIFFERENCES_PER_CELL / f64::from(SKETCH_TABLES)).ceil();
        (cells <= f64::from(MAX_TABLE_CELLS)).then(|| SketchShape::with_cells(cells as u32))
    }

    /// Cells in all tables.
    pub fn cells(self) -> u32 {
        self.table_cells * SKETCH_TABLES
    }

    /// The differences it finds with high probability (see [`DIFFERENCES_PER_CELL`]).
    pub fn differences(self) -> u64 {
        (f64::from(self.cells()) * DIFFERENCES_PER_CELL) as u64
    }

    /// The cell (an index over all tables: table `t`'s cells follow table `t − 1`'s) a row
    /// of `hash` is added to in `table`: 21 bits of the hash, from bit `21·table`, modulo the
    /// table's cells. SQL computes it as `table·cells + ((hash >> 21·table) & 2097151) % cells`
    /// on the hash as a signed `bigint` (an arithmetic shift), as here.
    pub fn cell(self, table: u32, hash: u64) -> u32 {
        let bits = ((hash as i64) >> (21 * table)) & 0x1f_ffff;
        table * self.table_cells + (bits as u32) % self.table_cells
    }
}

/// The check of a row's hash summed beside it: `(hash >> 32) · ((hash & 65535) | 1)` on the
/// hash as a signed 64-bit integer (at most 2⁴⁷ in magnitude, so SQL's `bigint` computes it
/// without overflow), kept modulo 2³². A cell holding one difference has its hash's check;
/// one holding several almost never does (the check is not additive).
pub fn check(hash: u64) -> u32 {
    let signed = hash as i64;
    ((signed >> 32) * ((signed & 0xffff) | 1)) as u32
}

/// One cell of a side's sketch, as a database answers it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SketchCell {
    /// The cell's index over all tables ([`SketchShape::cell`]).
    pub index: u32,
    /// Rows added (negative after a subtraction: more target rows).
    pub rows: i64,
    /// The sum of their positions, modulo 2⁶⁴.
    pub positions: u64,
    /// The sum of their hashes, modulo 2⁶⁴.
    pub hashes: u64,
    /// The sum of their hashes' [`check`]s, modulo 2³².
    pub checks: u32,
}

/// A difference the sketch found: a row on one side that the other side does not hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct SketchDifference {
    /// The row's position.
    pub position: i64,
    /// Whether the source holds it (otherwise the target does).
    pub source: bool,
    /// The row's hash.
    pub hash: u64,
}

/// One side's sketch, or the difference of two (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sketch {
    shape: SketchShape,
    cells: Vec<SketchCell>,
}

/// A side's answer naming a cell outside the sketch's shape, or one cell twice.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("sketch: cell {index} is not one of the {cells} cells asked for, once")]
pub struct UnknownCell {
    /// The cell answered.
    pub index: u32,
    /// Cells in the shape.
    pub cells: u32,
}

impl Sketch {
    /// An empty sketch of `shape`.
    pub fn new(shape: SketchShape) -> Sketch {
        let cells = (0..shape.cells()).map(|index| SketchCell { index, ..SketchCell::default() }).collect();
        Sketch { shape, cells }
    }

    /// The sketch a side answered: its non-empty cells, each once.
    pub fn from_cells(shape: SketchShape, answered: &[SketchCell]) -> Result<Sketch, UnknownCell> {
        let mut sketch = Sketch::new(shape);
        let mut seen = vec![false; sketch.cells.len()];
        for cell in answered {
            let unknown = UnknownCell { index: cell.index, cells: shape.cells() };
            let slot = usize::try_from(cell.index).map_err(|_| unknown)?;
            match seen.get_mut(slot) {
                Some(seen) if !*seen => *seen = true,
                _ => return Err(unknown),
            }
            sketch.cells[slot] = *cell;
        }
        Ok(sketch)
    }

    /// Its shape.
    pub fn shape(&self) -> SketchShape {
        self.shape
    }

    /// Its cells, in index order.
    pub fn cells(&self) -> &[SketchCell] {
        &self.cells
    }

    /// Adds a row at `position` whose hash is `hash` (as a database's sketch does).
    pub fn add(&mut self, position: i64, hash: u64) {
        self.apply(position, hash, 1);
    }

    /// This sketch less `other` (of the same shape): what is left are the rows of one side
    /// only.
    pub fn minus(mut self, other: &Sketch) -> Sketch {
        for (mine, theirs) in self.cells.iter_mut().zip(&other.cells) {
            mine.rows = mine.rows.wrapping_sub(theirs.rows);
            mine.positions = mine.positions.wrapping_sub(theirs.positions);
            mine.hashes = mine.hashes.wrapping_sub(theirs.hashes);
            mine.checks = mine.checks.wrapping_sub(theirs.checks);
        }
        self
    }

    /// The differences of a subtracted sketch ([`Sketch::minus`]), in position order; `None`
    /// when they do not all peel (too many for its cells, or a coincidence). Every returned
    /// difference was confirmed by its cell's check and its cells; the caller still proves
    /// the rest equal (see the module docs).
    pub fn differences(mut self) -> Option<Vec<SketchDifference>> {
        let mut found = Vec::new();
        let mut pending: Vec<usize> = (0..self.cells.len()).collect();
        while let Some(slot) = pending.pop() {
            let Some(difference) = self.single(slot) else { continue };
            if found.len() >= self.cells.len() {
                return None;
            }
            found.push(difference);
            let sign = if difference.source { -1 } else { 1 };
            for table in 0..SKETCH_TABLES {
                let cell = self.shape.cell(table, difference.hash) as usize;
                self.apply_at(cell, difference.position, difference.hash, sign);
                pending.push(cell);
            }
        }
        if self.cells.iter().any(|cell| *cell != SketchCell { index: cell.index, ..SketchCell::default() }) {
            return None;
        }
        found.sort_unstable();
        Some(found)
    }

    /// The one difference cell `slot` holds, if it holds exactly one.
    fn single(&self, slot: usize) -> Option<SketchDifference> {
        let cell = self.cells[slot];
        let source = match cell.rows {
            1 => true,
            -1 => false,
            _ => return None,
        };
        let signed = |value: u64| if source { value } else { value.wrapping_neg() };
        let hash = signed(cell.hashes);
        let checks = if source { cell.checks } else { cell.checks.wrapping_neg() };
        let table = slot as u32 / self.shape.table_cells;
        (check(hash) == checks && self.shape.cell(table, hash) as usize == slot).then(|| SketchDifference {
            position: signed(cell.positions) as i64,
            source,
            hash,
        })
    }

    fn apply(&mut self, position: i64, hash: u64, sign: i64) {
        for table in 0..SKETCH_TABLES {
            let cell = self.shape.cell(table, hash) as usize;
            self.apply_at(cell, position, hash, sign);
        }
    }

    fn apply_at(&mut self, slot: usize, position: i64, hash: u64, sign: i64) {
        let cell = &mut self.cells[slot];
        let (position, hash, checked) = match sign {
            1 => (position as u64, hash, check(hash)),
            _ => ((position as u64).wrapping_neg(), hash.wrapping_neg(), check(hash).wrapping_neg()),
        };
        cell.rows = cell.rows.wrapping_add(sign);
        cell.positions = cell.positions.wrapping_add(position);
        cell.hashes = cell.hashes.wrapping_add(hash);
        cell.checks = cell.checks.wrapping_add(checked);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn mix(value: u64) -> u64 {
        let mut z = value.wrapping_add(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Rows `1..=rows` on both sides; the source misses `missing`, the target misses `extra`,
    /// and `changed` differ in their hash.
    fn sides(rows: i64, missing: &[i64], extra: &[i64], changed: &[i64], shape: SketchShape) -> (Sketch, Sketch) {
        let (mut source, mut target) = (Sketch::new(shape), Sketch::new(shape));
        for key in 1..=rows {
            let hash = mix(key as u64);
            if !missing.contains(&key) {
                source.add(key, hash);
            }
            if !extra.contains(&key) {
                target.add(key, if changed.contains(&key) { mix(hash) } else { hash });
            }
        }
        (source, target)
    }

    #[test]
    fn equal_sides_leave_no_difference() {
        let (source, target) = sides(5_000, &[], &[], &[], SketchShape::with_cells(64));
        assert_eq!(source.minus(&target).differences(), Some(Vec::new()));
    }

    #[test]
    fn a_missing_an_extra_and_a_changed_row_are_found_with_their_sides() {
        let (source, target) = sides(5_000, &[17], &[4_000], &[2_500], SketchShape::with_cells(64));
        let found = source.minus(&target).differences().expect("four differences peel from 192 cells");
        let named: Vec<(i64, bool)> = found.iter().map(|difference| (difference.position, difference.source)).collect();
        assert_eq!(named, vec![(17, false), (2_500, false), (2_500, true), (4_000, true)]);
        assert_eq!(found.iter().find(|difference| difference.position == 4_000).map(|d| d.hash), Some(mix(4_000)));
    }

    #[test]
    fn differences_up_to_the_shapes_size_peel() {
        // 0.03 % of a million rows: 100 missing, 100 extra, 100 changed (400 differences).
        let keys = |residue: i64| -> Vec<i64> { (0..100).map(|run| run * 10_000 + residue).collect() };
        let shape = SketchShape::for_differences(400).unwrap();
        let (source, target) = sides(1_000_000, &keys(1), &keys(2), &keys(3), shape);
        let found = source.minus(&target).differences().expect("400 differences peel from their shape");
        assert_eq!(found.len(), 400);
        assert_eq!(found.iter().filter(|difference| difference.source).count(), 200);
    }

    #[test]
    fn more_differences_than_the_cells_hold_fail_to_peel() {
        let missing: Vec<i64> = (1..=400).map(|key| key * 7).collect();
        let (source, target) = sides(5_000, &missing, &[], &[], SketchShape::with_cells(64));
        assert_eq!(source.minus(&target).differences(), None);
    }

    #[test]
    fn shapes_are_sized_by_the_differences() {
        assert_eq!(SketchShape::for_differences(0), Some(SketchShape::with_cells(MIN_TABLE_CELLS)));
        let shape = SketchShape::for_differences(1_500).unwrap();
        assert!(shape.differences() >= 1_500 && shape.differences() < 1_510, "{shape:?}");
        assert_eq!(SketchShape::for_differences(u64::from(MAX_TABLE_CELLS) * 2), None);
    }

    #[test]
    fn cells_are_chosen_as_sql_computes_them() {
        // (-1 >> 21) & 2097151 in SQL's bigint arithmetic is 2097151.
        let shape = SketchShape::with_cells(1_000);
        assert_eq!(shape.cell(1, u64::MAX), 1_000 + 2_097_151 % 1_000);
        assert_eq!(shape.cell(0, 5), 5);
        assert_eq!(shape.cell(2, 3 << 42), 2_000 + 3);
        // (hash >> 32) * ((hash & 65535) | 1): -1 * 65535.
        assert_eq!(check(u64::MAX), (-65_535i64) as u32);
    }

    proptest! {
        /// Whenever the differences peel, they are exactly the rows of one side only.
        #[test]
        fn peeled_differences_are_exactly_the_rows_of_one_side(
            missing in proptest::collection::btree_set(1i64..3_000, 0..40),
            extra in proptest::collection::btree_set(1i64..3_000, 0..40),
            changed in proptest::collection::btree_set(1i64..3_000, 0..40),
            table_cells in 64u32..128,
        ) {
            let shape = SketchShape::with_cells(table_cells);
            let missing: Vec<i64> = missing.into_iter().collect();
            let extra: Vec<i64> = extra.into_iter().filter(|key| !missing.contains(key)).collect();
            let changed: Vec<i64> =
                changed.into_iter().filter(|key| !missing.contains(key) && !extra.contains(key)).collect();
            let (source, target) = sides(3_000, &missing, &extra, &changed, shape);
            let mut expected: Vec<(i64, bool)> = missing.iter().map(|key| (*key, false))
                .chain(extra.iter().map(|key| (*key, true)))
                .chain(changed.iter().flat_map(|key| [(*key, true), (*key, false)]))
                .collect();
            expected.sort_unstable();
            if let Some(peeled) = source.minus(&target).differences() {
                let named: Vec<(i64, bool)> = peeled.iter().map(|difference| (difference.position, difference.source)).collect();
                prop_assert_eq!(named, expected);
            }
        }
    }
}
