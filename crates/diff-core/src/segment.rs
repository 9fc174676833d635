//! The pure half of the segment strategy: which key segments to hash next, which to stream,
//! and how many rows the hashes proved equal — no SQL, no I/O.
//!
//! Over a slow link, streaming every row costs the table's size in bytes. The segment
//! strategy lets each database hash its own rows instead and moves only hashes, plus the rows
//! of the few small segments whose hashes differ:
//!
//! 1. **Overview.** Each side reports its rows' key span, count and hash total
//!    ([`Overview`]). Equal overviews prove the sides equal: nothing else is read.
//! 2. **Levels.** Otherwise the span is split into children of one width ([`Split`]); each
//!    side answers a [`ChildDigest`] per non-empty child. Children with equal digests are
//!    proven equal (their rows count as matched); each differing child is split again while
//!    it holds more than [`SearchSettings::leaf_rows`] rows and is wider than one key.
//!    A differing child of at most [`SearchSettings::digest_rows`] rows is split into
//!    children of one position each ([`Split::row_digests`]): each side answers one digest
//!    per position holding rows, so only the positions whose rows differ remain.
//! 3. **Leaves.** What is left — small differing children, single differing positions — is
//!    streamed through the merge core, in key order, like a full stream restricted to those
//!    keys.
//!
//! **The sketch.** Before the first level, each side sums its rows into a sketch
//! ([`crate::sketch`]: one pass, about 28 bytes per difference it can find) sized to find a
//! difference per [`SearchSettings::sketch_rows`] rows ([`Search::sketch_shape`]). When the
//! two sketches peel ([`Search::sketched_positions`]), they name the positions where the
//! sides differ, wherever those lie: both sides then read their digests at those positions,
//! and when each side's overview less them leaves the same count and hash total on both
//! sides, every other row is proven equal by that one comparison, and the named positions
//! are the leaves ([`Search::settle_at`]). The search ends after that one pass, whether the
//! differences cluster or scatter. A sketch that does not peel (more differences than it was
//! sized for) or whose positions are not proven changes nothing but the pass it cost
//! ([`Search::sketch_tried`]): the search goes on with its first level.
//!
//! Because a difference can only sit in a differing child, and every differing child ends as
//! a leaf, the leaves hold every difference, in the order a full stream meets them: the merge
//! over the leaves gives the same missing, extra and changed counts and the same first
//! examples as a full stream, and [`Search::matched`] plus the leaves' matched rows give the
//! same matched count. The one assumption is that two different sets of rows do not have
//! equal counts and equal hash totals (a 64-bit hash per row: about 2⁻⁶⁴ per comparison).
//!
//! A row digest is a segment digest like any other (a count and a hash total, of the rows at
//! one position: one row for an integer key, maybe a few for a uuid's or a text's 60-bit
//! prefix), so the argument above covers it: equal digests prove that position's rows equal,
//! and every differing position is streamed.
//!
//! **Bytes.** Over a slow link the search is sized by the differences: a level's digest is a
//! few bytes per non-empty child, a streamed row its whole image. A region of sparse drift
//! costs a few narrow levels ([`SearchSettings::max_fanout`] children each) and one level of
//! row digests, then only its differing rows' images; the first level costs a digest per
//! [`SearchSettings::first_level_rows`] rows of the table.
//!
//! **Dense drift.** When more than half of the first level's non-empty children differ (three
//! in four of a later level's; at least [`DENSE_CHILDREN`]) and they are already small (at most
//! [`SearchSettings::digest_rows`] × [`SearchSettings::max_fanout`] rows each, on average: 128
//! by default), splitting further would cost more scans than it saves: every differing child
//! of that level becomes a leaf at once (a table that differs everywhere is streamed, as the
//! stream strategy would, after a few levels that cost about a byte per row). Larger children
//! that mostly differ are split on: each holds at least one difference, and locating one
//! costs a few dozen digests, far less than streaming a child of thousands of rows (scattered
//! drift, such as random uuid keys with 0.03 % of rows differing, makes nearly half of the
//! first level's children differ).
//!
//! **Sparse keys.** Children are of equal width in positions, and keys may fill few of them
//! (text keys use a few byte values of each byte: the digits of `customer-000123`). A
//! differing child is split into as many children as its rows would fill leaves, times how
//! sparsely its split's keys filled their children (at most [`MAX_SPARSE_FANOUT`]): only
//! non-empty children are answered, so a wide split of sparse keys costs no more than a
//! narrow one of dense keys, and the search reaches small leaves in as few levels.
//!
//! Keys are **positions**: an `i64` per key that orders as the key does (an integer key
//! itself; for a uuid key, a prefix of its bits). Segments are inclusive ranges of positions.
//!
//! ```
//! use datadiff_diff_core::segment::{Overview, Search, SearchSettings, Step};
//!
//! let side = |rows, hash: &str| Some(Overview { first: 1, last: 1000, rows, hash: hash.to_owned() });
//! // Equal overviews: proven equal without reading a row.
//! let search = Search::new(SearchSettings::default(), side(1000, "42"), side(1000, "42"));
//! assert!(matches!(search.step(), Step::Done));
//! assert_eq!(search.matched(), 1000);
//! // Different ones: the first level splits the span.
//! let search = Search::new(SearchSettings::default(), side(1000, "42"), side(999, "41"));
//! let Step::Hash(splits) = search.step() else { panic!() };
//! assert_eq!(splits[0].segment.first, 1);
//! ```

use crate::sketch::{Sketch, SketchShape};

/// An inclusive range of key positions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Segment {
    /// The first position in the segment.
    pub first: i64,
    /// The last position in the segment (inclusive).
    pub last: i64,
}

impl Segment {
    /// The number of positions it covers (at least 1; `u64` holds any `i64` span).
    pub fn positions(&self) -> u64 {
        (i128::from(self.last) - i128::from(self.first) + 1).clamp(1, i128::from(u64::MAX)) as u64
    }
}

/// One segment to split into children of `width` positions each (the last one may be
/// narrower): child `i` covers `first + i·width ..= min(first + (i+1)·width - 1, last)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Split {
    /// The segment split.
    pub segment: Segment,
    /// Positions per child (at least 1).
    pub width: u64,
    /// The most rows either side held in the segment when the search split it
    /// ([`u64::MAX`]: not known). A side may read a level's few rows through its index rather
    /// than pass over the whole table.
    pub rows: u64,
}

impl Split {
    /// A split of `segment` into at most `fanout` children of equal width.
    pub fn new(segment: Segment, fanout: u64) -> Split {
        let fanout = fanout.max(1);
        let width = segment.positions().div_ceil(fanout).max(1);
        Split { segment, width, rows: u64::MAX }
    }

    /// This split, knowing that either side holds at most `rows` rows in its segment.
    pub fn holding(self, rows: u64) -> Split {
        Split { rows, ..self }
    }

    /// A split of `segment` into children of one position each: each side answers one digest
    /// per position that holds rows (the rows' **row digests**), and only the positions whose
    /// digests differ are streamed. A segment of more than [`MAX_ROW_DIGEST_CHILDREN`]
    /// positions (a uuid's or a text key's 60-bit positions spread its few rows over billions
    /// of them) gets children of as many positions as keep it to that many: its rows still
    /// fall one to a child but by a coincidence, and rows sharing a child share its digest,
    /// compared like any other.
    pub fn row_digests(segment: Segment) -> Split {
        let width = segment.positions().div_ceil(MAX_ROW_DIGEST_CHILDREN).max(1);
        Split { segment, width, rows: u64::MAX }
    }

    /// How many children it has.
    pub fn children(&self) -> u64 {
        self.segment.positions().div_ceil(self.width)
    }

    /// Child `index` (`None` past the last one).
    pub fn child(&self, index: u64) -> Option<Segment> {
        if index >= self.children() {
            return None;
        }
        let first = i128::from(self.segment.first) + i128::from(index) * i128::from(self.width);
        let last = (first + i128::from(self.width) - 1).min(i128::from(self.segment.last));
        Some(Segment { first: first as i64, last: last as i64 })
    }
}

/// One side's rows in the compared set, in one statement: the span of their positions, how
/// many there are and their hash total (compared as text: a database's exact sum).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Overview {
    /// The smallest position.
    pub first: i64,
    /// The largest position.
    pub last: i64,
    /// Rows.
    pub rows: u64,
    /// The sum of the rows' hashes, as the database wrote it.
    pub hash: String,
}

/// What one side holds in one child of one split.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Digest {
    /// Rows.
    pub rows: u64,
    /// The sum of the rows' hashes modulo 2⁶⁴: as strong as the exact sum, since two
    /// different sets of rows summing alike modulo 2⁶⁴ is still a 64-bit coincidence.
    pub hash: u64,
}

/// One row of a side's answer to a level: the split (its index in [`Step::Hash`]'s list),
/// the child and what the side holds there. Children with no row are left out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChildDigest {
    /// Index of the split in the level's list.
    pub split: usize,
    /// Index of the child in its split.
    pub child: u64,
    /// The side's rows there.
    pub digest: Digest,
}

/// The most children of a later split whose parent's keys filled few of its children (see
/// [`Search::record`]).
pub const MAX_SPARSE_FANOUT: u64 = 1 << 20;

/// The most children of a row-digest split ([`Split::row_digests`]): a child's index then
/// fits in 31 bits, which a database's answer packs in four bytes.
pub const MAX_ROW_DIGEST_CHILDREN: u64 = (1 << 31) - 1;

/// A one-position child's count at or above this (a database packs the counts of
/// [`Search::position_splits`] in two bytes and writes a larger count as 32,767) is not
/// trusted by [`Search::settle_at`].
pub const ROWS_BEYOND_PACKING: u64 = 32_767;

/// The fewest differing children that make a level's drift dense (see the module docs): two
/// of a small table's three first-level children differing is not drift everywhere.
pub const DENSE_CHILDREN: usize = 8;

/// The search's tuning (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SearchSettings {
    /// A differing child with at most this many rows (on the larger side) is streamed, not
    /// split again.
    pub leaf_rows: u64,
    /// A differing child with more than [`SearchSettings::leaf_rows`] rows but at most this
    /// many is split into children of one position each (**row digests**): each side answers
    /// a digest per non-empty position, and only the positions whose digests differ are
    /// streamed. A larger child is split into at most [`SearchSettings::max_fanout`] children
    /// of about this many rows.
    pub digest_rows: u64,
    /// The first level aims at this many rows per child.
    pub first_level_rows: u64,
    /// The most children of the first split.
    pub max_first_fanout: u64,
    /// The most children of a later split.
    pub max_fanout: u64,
    /// Levels after which every differing child is streamed.
    pub max_levels: u32,
    /// Rows per difference the first level's sketch is sized to find (see
    /// [`Search::sketch_shape`]); 0: no sketch.
    pub sketch_rows: u64,
}

impl Default for SearchSettings {
    /// Children of one row streamed, of up to 16 rows answered by row digests, about 2,048
    /// rows per first-level child (at most 65,536 children), at most 8 children per later
    /// split, 16 levels, and a first-level sketch sized for a difference per 2,000 rows.
    ///
    /// Tuned for bytes over a slow link with sparse drift: a level's digest costs 14–18 bytes
    /// per non-empty child and side (PostgreSQL's packed answer), a streamed row its whole
    /// image (about 100 bytes in the benchmarks), so a differing region costs about three
    /// narrow levels (5–6 children: [`balanced_fanout`]) and a row-digest level of at most 16
    /// rows — about 1 KB, whatever the table's size — and the first level 18 bytes per 2,048
    /// rows of the table (BENCHMARKS.md).
    fn default() -> Self {
        SearchSettings {
            leaf_rows: 1,
            digest_rows: 16,
            first_level_rows: 2_048,
            max_first_fanout: 65_536,
            max_fanout: 8,
            max_levels: 16,
            sketch_rows: 2_000,
        }
    }
}

/// A level's answer that cannot belong to it: the database computed children differently
/// (a child the level does not have, or one child answered twice).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("segment hashes: the {side} answered child {child} of split {split}, which the level does not have once")]
pub struct UnknownChild {
    /// `source` or `target`.
    pub side: &'static str,
    /// The split index answered.
    pub split: usize,
    /// The child index answered.
    pub child: u64,
}

/// What the search needs next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step<'a> {
    /// Both sides' digests of every child of these splits ([`Search::record`]); they are
    /// disjoint and in ascending key order.
    Hash(&'a [Split]),
    /// Stream these segments (ascending, disjoint, adjacent ones joined) through the merge
    /// core; the search is then over.
    Stream(&'a [Segment]),
    /// Nothing left: every row is accounted for by [`Search::matched`].
    Done,
}

/// The search over one comparison (see the module docs).
#[derive(Debug, Clone)]
pub struct Search {
    settings: SearchSettings,
    splits: Vec<Split>,
    leaves: Vec<Segment>,
    matched: u64,
    level: u32,
    finished: bool,
    /// Both sides' rows and hash totals (modulo 2⁶⁴) when their overviews differ: what a
    /// sketch's positions are proven against ([`Search::settle_at`]).
    totals: Option<[Digest; 2]>,
    /// Both sides' span, when both have rows.
    span: Option<Segment>,
    /// Whether the sketch was tried ([`Search::sketch_tried`]).
    sketch_tried: bool,
}

impl Search {
    /// Starts from both sides' overviews (`None`: the side has no row).
    pub fn new(settings: SearchSettings, source: Option<Overview>, target: Option<Overview>) -> Search {
        let mut search = Search {
            settings,
            splits: Vec::new(),
            leaves: Vec::new(),
            matched: 0,
            level: 0,
            finished: false,
            totals: None,
            span: None,
            sketch_tried: false,
        };
        let (span, rows) = match (source, target) {
            (None, None) => (None, 0),
            (Some(source), Some(target)) if source == target => {
                search.matched = source.rows;
                (None, 0)
            }
            // Every row of a side facing none differs: streamed at once.
            (Some(one), None) | (None, Some(one)) => {
                search.leaves.push(Segment { first: one.first, last: one.last });
                (None, 0)
            }
            (Some(source), Some(target)) => {
                search.totals = [&source, &target]
                    .map(|overview| {
                        let hash = overview.hash.trim().parse::<i128>().ok()?;
                        Some(Digest { rows: overview.rows, hash: hash as u64 })
                    })
                    .into_iter()
                    .collect::<Option<Vec<Digest>>>()
                    .map(|totals| [totals[0], totals[1]]);
                (
                    Some(Segment { first: source.first.min(target.first), last: source.last.max(target.last) }),
                    source.rows.max(target.rows),
                )
            }
        };
        search.span = span;
        match span {
            None => search.finished = search.leaves.is_empty(),
            Some(span) if rows <= settings.leaf_rows || span.positions() == 1 => search.leaves.push(span),
            Some(span) if rows <= settings.digest_rows => search.splits.push(Split::row_digests(span).holding(rows)),
            Some(span) => {
                let fanout = rows.div_ceil(settings.first_level_rows.max(1)).clamp(2, settings.max_first_fanout.max(2));
                search.splits.push(Split::new(span, fanout).holding(rows));
            }
        }
        search
    }

    /// Replaces the first level's equal-width split by splits starting at `points`, one child
    /// each: positions of a sample of one side's keys at about equal row counts (about
    /// [`SearchSettings::first_level_rows`] apart). Where keys fill few of the span's
    /// equal-width children (text keys of digits use 10 of each byte's 256 values), those
    /// few children each hold many rows, and with drift nearly all of them differ: the next
    /// levels then read most of the table. Children at the keys' quantiles hold about as many
    /// rows each whatever the keys' distribution. Any points give the same result (a row
    /// lies in exactly one split); only the rows a level reads depend on them. Does nothing
    /// but before the first level of a split search, or when no point lies inside the span.
    pub fn split_first_level_at(&mut self, points: &[i64]) {
        let Some(first) = self.first_level() else { return };
        let mut starts: Vec<i64> = points
            .iter()
            .copied()
            .filter(|point| first.segment.first < *point && *point <= first.segment.last)
            .collect();
        if starts.is_empty() {
            return;
        }
        starts.push(first.segment.first);
        starts.sort_unstable();
        starts.dedup();
        let lasts = starts.iter().skip(1).map(|next| next - 1).chain([first.segment.last]);
        self.splits = starts
            .iter()
            .zip(lasts)
            .map(|(&start, last)| Split::new(Segment { first: start, last }, 1).holding(first.rows))
            .collect();
    }

    /// The first level's split, which [`Search::split_first_level_at`] may cut at points
    /// instead (its segment, the span, and its children, the pieces asked for): `None` once
    /// the first level is recorded, or when there is none or it is one of row digests.
    pub fn first_level(&self) -> Option<Split> {
        match self.splits.as_slice() {
            [first] if self.level == 0 && first.rows > self.settings.digest_rows => Some(*first),
            _ => None,
        }
    }

    /// The shape of the sketch each side sums its rows into before the first level (see
    /// [`crate::sketch`]), or `None`: no sketch (the settings' [`SearchSettings::sketch_rows`]
    /// is 0, it was tried, the first level is recorded or there is none, or the overviews' row counts
    /// differ by more than four times what a sketch of the table's size would find — drift
    /// that dense is the search's, and its sketch would cost more than it saves). Sized to
    /// find a difference per [`SearchSettings::sketch_rows`] rows of the larger side, or
    /// twice the row counts' difference when that is more; `None` too when that takes more
    /// than [`crate::sketch::MAX_TABLE_CELLS`] cells a table (about 3 million rows at the
    /// default: a sketch that large costs several level passes, see there).
    pub fn sketch_shape(&self) -> Option<SketchShape> {
        // Before the first level, cut at quantiles or not: each of its splits holds the
        // larger side's rows (`holding`), and only a level of row digests is too small to
        // sketch.
        let rows = match self.splits.first() {
            Some(first) if self.level == 0 && !self.sketch_tried && first.rows > self.settings.digest_rows => {
                first.rows
            }
            _ => return None,
        };
        let [source, target] = self.totals?;
        if self.settings.sketch_rows == 0 {
            return None;
        }
        let budget = rows.max(1).div_ceil(self.settings.sketch_rows);
        let apart = source.rows.abs_diff(target.rows);
        if apart > budget.saturating_mul(4) {
            return None;
        }
        SketchShape::for_differences(budget.max(apart.saturating_mul(2)))
    }

    /// Records that the sketch was tried (settled or not): [`Search::sketch_shape`] is `None`
    /// from then on, and the search goes on from its first level unless it settled.
    pub fn sketch_tried(&mut self) {
        self.sketch_tried = true;
    }

    /// The positions where both sides' sketches (of [`Search::sketch_shape`]) say they
    /// differ, ascending and distinct; `None` when the difference does not peel, or names a
    /// position outside both sides' span, or as many more source rows than target rows as
    /// the overviews do not count. Nothing is proven yet: see [`Search::settle_at`].
    pub fn sketched_positions(&self, source: Sketch, target: &Sketch) -> Option<Vec<i64>> {
        let [source_totals, target_totals] = self.totals?;
        let span = self.span?;
        let differences = source.minus(target).differences()?;
        let source_only = differences.iter().filter(|difference| difference.source).count() as i128;
        let target_only = differences.len() as i128 - source_only;
        if source_only - target_only != i128::from(source_totals.rows) - i128::from(target_totals.rows) {
            return None;
        }
        let mut positions: Vec<i64> = differences.iter().map(|difference| difference.position).collect();
        positions.dedup();
        positions.iter().all(|position| span.first <= *position && *position <= span.last).then_some(positions)
    }

    /// The splits that read each side's digest of the rows at `positions` (one split of one
    /// one-position child each): the answers [`Search::settle_at`] proves the rest with.
    pub fn position_splits(positions: &[i64]) -> Vec<Split> {
        positions
            .iter()
            .map(|&position| Split { segment: Segment { first: position, last: position }, width: 1, rows: 1 })
            .collect()
    }

    /// Ends the search at `positions` (from [`Search::sketched_positions`]) when both sides'
    /// rows outside them are proven equal: each side's overview less its digests at those
    /// positions (answers to [`Search::position_splits`]) leaves the same count and hash
    /// total — the proof every child of a level gets. The positions are then the leaves,
    /// streamed and compared row by row, and every other row is matched. Returns whether it
    /// did; otherwise (a wrong position, a row that changed between the statements, a count
    /// beyond its packed width) nothing changes and the search goes on from its first level.
    pub fn settle_at(&mut self, positions: &[i64], source: &[ChildDigest], target: &[ChildDigest]) -> bool {
        let Some([source_totals, target_totals]) = self.totals else { return false };
        let outside = |totals: Digest, answer: &[ChildDigest]| -> Option<Digest> {
            let mut rows = 0u64;
            let mut hash = 0u64;
            for child in answer {
                if child.split >= positions.len() || child.child != 0 || child.digest.rows >= ROWS_BEYOND_PACKING {
                    return None;
                }
                rows = rows.checked_add(child.digest.rows)?;
                hash = hash.wrapping_add(child.digest.hash);
            }
            Some(Digest { rows: totals.rows.checked_sub(rows)?, hash: totals.hash.wrapping_sub(hash) })
        };
        let (Some(source), Some(target)) = (outside(source_totals, source), outside(target_totals, target)) else {
            return false;
        };
        if source != target {
            return false;
        }
        self.matched = source.rows;
        // The sketch counts as the one level hashed.
        self.level += 1;
        self.splits.clear();
        self.leaves =
            join_adjacent(positions.iter().map(|&position| Segment { first: position, last: position }).collect());
        self.finished = self.leaves.is_empty();
        true
    }

    /// What is needed next.
    pub fn step(&self) -> Step<'_> {
        if self.finished {
            Step::Done
        } else if !self.splits.is_empty() {
            Step::Hash(&self.splits)
        } else {
            Step::Stream(&self.leaves)
        }
    }

    /// Records both sides' digests of the splits [`Search::step`] asked for, and plans the
    /// next step. An answer naming a child the level does not have, or one child twice, is an
    /// error (nothing is recorded then). The answers are sorted here and walked side by side:
    /// a level of a large table with scattered drift has hundreds of thousands of children,
    /// held once, in their answers.
    pub fn record(&mut self, mut source: Vec<ChildDigest>, mut target: Vec<ChildDigest>) -> Result<(), UnknownChild> {
        for (side, answer) in [("source", &mut source), ("target", &mut target)] {
            answer.sort_unstable_by_key(|row| (row.split, row.child));
            let unknown = |row: &ChildDigest| UnknownChild { side, split: row.split, child: row.child };
            if let Some(row) =
                answer.iter().find(|row| self.splits.get(row.split).is_none_or(|split| row.child >= split.children()))
            {
                return Err(unknown(row));
            }
            if let Some(pair) =
                answer.windows(2).find(|pair| (pair[0].split, pair[0].child) == (pair[1].split, pair[1].child))
            {
                return Err(unknown(&pair[1]));
            }
        }
        let children = BothSides { source: source.iter().peekable(), target: target.iter().peekable() };
        self.level += 1;
        let mut matched = 0u64;
        let mut differing = Vec::new();
        let mut answered = 0usize;
        // Non-empty children per split: how sparsely the keys fill its positions.
        let mut filled = vec![0u64; self.splits.len()];
        for (split, child, source, target) in children {
            answered += 1;
            filled[split] += 1;
            match (source, target) {
                (Some(source), Some(target)) if source == target => matched += source.rows,
                (Some(_), None) | (None, Some(_)) => {
                    // Rows on one side only: every one of them differs, streamed at once.
                    self.leaves.push(self.splits[split].child(child).unwrap_or(self.splits[split].segment));
                }
                _ => {
                    let rows = source.map_or(0, |digest| digest.rows).max(target.map_or(0, |digest| digest.rows));
                    let segment = self.splits[split].child(child).unwrap_or(self.splits[split].segment);
                    differing.push((split, segment, rows));
                }
            }
        }
        self.matched += matched;
        // Dense drift: most children differ, and they are already small (at most a split's
        // worth of row digests each, on average). Children that differ but still hold many rows —
        // keys that fill few of the positions, such as text keys of a few characters — are
        // split again instead.
        // Later levels split each differing child into a few children, where a region of a
        // few differing rows often spans half of them: only most of them differing (three in
        // four) is dense there.
        let differing_rows: u64 = differing.iter().map(|(_, _, rows)| rows).sum();
        let most = match self.level {
            1 => differing.len() * 2 > answered,
            _ => differing.len() * 4 > answered * 3,
        };
        let small = self.settings.digest_rows.max(1).saturating_mul(self.settings.max_fanout.max(2));
        let dense = most
            && differing.len() >= DENSE_CHILDREN
            && differing_rows <= (differing.len() as u64).saturating_mul(small);
        let last_level = self.level >= self.settings.max_levels;
        let sparseness = |split: usize| {
            let children = self.splits[split].children();
            (children / filled[split].max(1)).max(1)
        };
        let mut next = Vec::new();
        for (split, segment, rows) in differing {
            if dense || last_level || rows <= self.settings.leaf_rows || segment.positions() == 1 {
                self.leaves.push(segment);
            } else if rows <= self.settings.digest_rows {
                next.push(Split::row_digests(segment).holding(rows));
            } else {
                // As few children as reach row digests in the fewest levels, times how
                // sparsely the split's keys filled its children: only non-empty children are
                // answered.
                let fanout = balanced_fanout(rows.div_ceil(self.settings.digest_rows.max(1)), self.settings.max_fanout);
                let fanout = fanout.saturating_mul(sparseness(split)).min(MAX_SPARSE_FANOUT.max(fanout));
                next.push(Split::new(segment, fanout).holding(rows));
            }
        }
        self.splits = next;
        if self.splits.is_empty() {
            self.leaves.sort_unstable();
            self.leaves = join_adjacent(std::mem::take(&mut self.leaves));
            self.finished = self.leaves.is_empty();
        }
        Ok(())
    }

    /// Rows proven equal by their hashes so far (on each side).
    pub fn matched(&self) -> u64 {
        self.matched
    }

    /// Levels recorded so far.
    pub fn level(&self) -> u32 {
        self.level
    }
}

/// Two sorted answers walked side by side: each child either answered, with the source's and
/// the target's digest (`None`: no row there).
struct BothSides<'a> {
    source: std::iter::Peekable<std::slice::Iter<'a, ChildDigest>>,
    target: std::iter::Peekable<std::slice::Iter<'a, ChildDigest>>,
}

impl<'a> Iterator for BothSides<'a> {
    /// Split, child, the source's digest, the target's.
    type Item = (usize, u64, Option<&'a Digest>, Option<&'a Digest>);

    fn next(&mut self) -> Option<Self::Item> {
        let place = |row: &ChildDigest| (row.split, row.child);
        let (source, target) = match (self.source.peek(), self.target.peek()) {
            (None, None) => return None,
            (Some(source), Some(target)) => match place(source).cmp(&place(target)) {
                std::cmp::Ordering::Less => (self.source.next(), None),
                std::cmp::Ordering::Greater => (None, self.target.next()),
                std::cmp::Ordering::Equal => (self.source.next(), self.target.next()),
            },
            (Some(_), None) => (self.source.next(), None),
            (None, Some(_)) => (None, self.target.next()),
        };
        let (split, child) = source.or(target).map(place)?;
        Some((split, child, source.map(|row| &row.digest), target.map(|row| &row.digest)))
    }
}

/// How a comparison reads its rows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Strategy {
    /// Stream when the link is fast enough that streaming wins ([`streams`]), else segments.
    #[default]
    Auto,
    /// Stream every row through the merge core.
    Stream,
    /// Hash by segment in the databases; stream only the segments that differ (a table whose
    /// columns cannot be hashed is streamed all the same).
    Segments,
}

impl Strategy {
    /// The name as written in configuration and on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            Strategy::Auto => "auto",
            Strategy::Stream => "stream",
            Strategy::Segments => "segments",
        }
    }
}

impl std::fmt::Display for Strategy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A strategy name that is not one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown strategy {0:?}: expected auto, stream or segments")]
pub struct UnknownStrategy(pub String);

impl std::str::FromStr for Strategy {
    type Err = UnknownStrategy;

    fn from_str(text: &str) -> Result<Strategy, UnknownStrategy> {
        match text {
            "auto" => Ok(Strategy::Auto),
            "stream" => Ok(Strategy::Stream),
            "segments" => Ok(Strategy::Segments),
            other => Err(UnknownStrategy(other.to_owned())),
        }
    }
}

/// What `auto` knows of one side's link.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Link {
    /// A Unix-domain socket or a loopback address: the server is on this machine.
    Local,
    /// A TCP connection whose answers arrived at this many bytes per second (a probe).
    Measured(f64),
}

/// The link speed from which `auto` streams over a network: 400 MB/s (3.2 Gbit/s). Behind
/// 1 Gbit/s the 181 MB of a 1 M-row comparison alone take 1.5 s, longer than hashing it in
/// the databases; a 10 Gbit/s link streams at the servers' own pace.
pub const STREAM_FROM_BYTES_PER_SECOND: f64 = 400e6;

/// The most rows `auto` streams without looking at the links: 10,000 rows are about 2 MB, a
/// sixth of a second even behind 100 Mbit/s, less than hashing would save.
pub const AUTO_STREAM_ROWS: u64 = 10_000;

/// Whether `strategy` streams over these links: `stream` always, `segments` never, `auto`
/// when both sides are local or measured at [`STREAM_FROM_BYTES_PER_SECOND`] or more.
pub fn streams(strategy: Strategy, source: Link, target: Link) -> bool {
    let fast = |link| match link {
        Link::Local => true,
        Link::Measured(bytes_per_second) => bytes_per_second >= STREAM_FROM_BYTES_PER_SECOND,
    };
    match strategy {
        Strategy::Stream => true,
        Strategy::Segments => false,
        Strategy::Auto => fast(source) && fast(target),
    }
}

/// How a comparison read its rows and why: for the log and the stored result, so that a
/// run's choice (and `auto`'s measurements) can be read afterwards.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StrategyUsed {
    /// [`Strategy::Stream`] or [`Strategy::Segments`], never `auto`.
    pub strategy: Strategy,
    /// Why, in one line (no values: row counts, link speeds, column names).
    pub reason: String,
}

impl StrategyUsed {
    /// Every row was streamed, because of `reason`.
    pub fn stream(reason: impl Into<String>) -> StrategyUsed {
        StrategyUsed { strategy: Strategy::Stream, reason: reason.into() }
    }

    /// Segments were hashed, because of `reason`.
    pub fn segments(reason: impl Into<String>) -> StrategyUsed {
        StrategyUsed { strategy: Strategy::Segments, reason: reason.into() }
    }

    /// `auto`'s decision over these links, with the figures it decided on.
    pub fn auto(source: Link, target: Link) -> StrategyUsed {
        let figures = format!("source {}, target {}", source, target);
        if streams(Strategy::Auto, source, target) {
            StrategyUsed::stream(format!(
                "auto: both links are fast ({figures}; streams from {} MB/s)",
                STREAM_FROM_BYTES_PER_SECOND / 1e6
            ))
        } else {
            StrategyUsed::segments(format!(
                "auto: a link is slow ({figures}; streams from {} MB/s)",
                STREAM_FROM_BYTES_PER_SECOND / 1e6
            ))
        }
    }
}

impl std::fmt::Display for Link {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Link::Local => f.write_str("on this machine"),
            Link::Measured(bytes_per_second) => write!(f, "{:.1} MB/s", bytes_per_second / 1e6),
        }
    }
}

/// The fanout that divides a child into `pieces` in the fewest levels of at most `max_fanout`
/// children each, with the fewest children per level: the smallest `f` (at least 2) with
/// `f^levels ≥ pieces`. 128 pieces with at most 8 children a level take three levels of 6
/// (then 5, then 5), not 8, 8 and 2.
pub fn balanced_fanout(pieces: u64, max_fanout: u64) -> u64 {
    let max_fanout = max_fanout.max(2);
    let (mut levels, mut reach) = (1u32, max_fanout);
    while reach < pieces {
        reach = reach.saturating_mul(max_fanout);
        levels += 1;
    }
    (2..max_fanout).find(|fanout| fanout.saturating_pow(levels) >= pieces).unwrap_or(max_fanout)
}

/// Sorted segments with touching neighbours joined.
fn join_adjacent(sorted: Vec<Segment>) -> Vec<Segment> {
    let mut joined: Vec<Segment> = Vec::with_capacity(sorted.len());
    for segment in sorted {
        match joined.last_mut() {
            Some(previous) if i128::from(previous.last) + 1 >= i128::from(segment.first) => {
                previous.last = previous.last.max(segment.last);
            }
            _ => joined.push(segment),
        }
    }
    joined
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_streams_only_when_both_links_are_fast() {
        let (socket, fast, slow) = (Link::Local, Link::Measured(900e6), Link::Measured(12.5e6));
        assert!(streams(Strategy::Auto, socket, fast));
        assert!(!streams(Strategy::Auto, fast, slow));
        assert!(!streams(Strategy::Auto, Link::Measured(125e6), socket), "1 Gbit/s hashes");
        assert!(streams(Strategy::Stream, slow, slow));
        assert!(!streams(Strategy::Segments, socket, socket));
        assert_eq!("segments".parse::<Strategy>(), Ok(Strategy::Segments));
        assert!("fast".parse::<Strategy>().unwrap_err().to_string().contains("auto, stream or segments"));
    }

    #[test]
    fn children_cover_the_segment_exactly_once() {
        let split = Split::new(Segment { first: -5, last: 94 }, 7);
        assert_eq!(split.width, 15);
        assert_eq!(split.children(), 7);
        assert_eq!(split.child(0), Some(Segment { first: -5, last: 9 }));
        assert_eq!(split.child(6), Some(Segment { first: 85, last: 94 }));
        assert_eq!(split.child(7), None);
    }

    #[test]
    fn fanouts_reach_row_digests_in_the_fewest_levels_with_the_fewest_children() {
        assert_eq!(balanced_fanout(128, 8), 6);
        assert_eq!(balanced_fanout(22, 8), 5);
        assert_eq!(balanced_fanout(5, 8), 5);
        assert_eq!(balanced_fanout(64, 8), 8);
        assert_eq!(balanced_fanout(1, 8), 2);
        assert_eq!(balanced_fanout(u64::MAX, 8), 8);
        assert_eq!(balanced_fanout(10, 0), 2);
    }

    #[test]
    fn row_digests_are_one_position_a_child_up_to_a_31_bit_child_index() {
        let narrow = Split::row_digests(Segment { first: 40, last: 55 });
        assert_eq!((narrow.width, narrow.children()), (1, 16));
        let uuid_region = Split::row_digests(Segment { first: 0, last: (1 << 40) - 1 });
        assert_eq!(uuid_region.width, 513);
        assert!(uuid_region.children() <= MAX_ROW_DIGEST_CHILDREN);
        let whole = Split::row_digests(Segment { first: i64::MIN, last: i64::MAX });
        assert!(whole.children() <= MAX_ROW_DIGEST_CHILDREN, "{}", whole.children());
        assert_eq!(whole.child(whole.children() - 1).map(|child| child.last), Some(i64::MAX));
    }

    #[test]
    fn the_whole_i64_range_splits_without_overflow() {
        let split = Split::new(Segment { first: i64::MIN, last: i64::MAX }, 4);
        assert_eq!(split.child(3).map(|child| child.last), Some(i64::MAX));
        assert_eq!(split.child(0).map(|child| child.first), Some(i64::MIN));
    }

    /// The first level's answer of one side: `filled` non-empty children (every
    /// `stride`-th), `rows` each, hashed `hash`.
    fn answer(filled: u64, stride: u64, rows: u64, hash: u64) -> Vec<ChildDigest> {
        (0..filled)
            .map(|index| ChildDigest {
                split: 0,
                child: index * stride,
                digest: Digest { rows, hash: hash.wrapping_add(index) },
            })
            .collect()
    }

    #[test]
    fn keys_filling_few_children_are_split_again_widely_not_streamed() {
        // 100,000 rows over a span of 2^50 positions, as text keys of digits fill it: the
        // first level's ~196 children hold them in 10, and every one of those differs.
        let side = |hash: &str| Some(Overview { first: 0, last: (1 << 50) - 1, rows: 100_000, hash: hash.into() });
        // Leaves of 64 rows, no row digests (fanouts aim at 8 rows), 512 rows a first-level
        // child, 64 a later split.
        let settings = SearchSettings {
            leaf_rows: 64,
            digest_rows: 8,
            first_level_rows: 512,
            max_fanout: 64,
            ..SearchSettings::default()
        };
        let mut search = Search::new(settings, side("a"), side("b"));
        let Step::Hash([first]) = search.step() else { panic!("one split first") };
        let children = first.children();
        assert!(children > 150, "{children}");
        let stride = children / 10;
        search.record(answer(10, stride, 10_000, 1 << 40), answer(10, stride, 10_000, 1 << 50)).unwrap();
        let Step::Hash(splits) = search.step() else { panic!("large differing children are split again") };
        assert_eq!(splits.len(), 10);
        // 10,000 rows: 36 children a level (two levels of at most 64 reach 8 rows), times 19
        // (the parent's keys filled 1 child in ~19): about 680 children each, only the
        // non-empty ones answered.
        assert!(splits.iter().all(|split| split.children() > 600), "{:?}", splits[0]);
        // Small children that mostly differ are still dense drift: streamed at once.
        let side = |hash: &str| Some(Overview { first: 0, last: 99_999, rows: 100_000, hash: hash.into() });
        let mut search = Search::new(settings, side("a"), side("b"));
        let Step::Hash([first]) = search.step() else { panic!("one split first") };
        let children = first.children();
        search.record(answer(children, 1, 512, 1 << 40), answer(children, 1, 512, 1 << 50)).unwrap();
        assert!(matches!(search.step(), Step::Stream(leaves) if leaves.len() == 1), "adjacent leaves joined");
    }

    #[test]
    fn an_answer_outside_the_level_is_refused() {
        let side = |rows| Some(Overview { first: 0, last: 9999, rows, hash: rows.to_string() });
        let mut search = Search::new(SearchSettings::default(), side(5000), side(4999));
        let digest = Digest { rows: 1, hash: 1 };
        let error = search.clone().record(vec![ChildDigest { split: 0, child: 10_000, digest }], vec![]).unwrap_err();
        assert_eq!((error.side, error.split, error.child), ("source", 0, 10_000));
        let twice = vec![ChildDigest { split: 0, child: 2, digest }; 2];
        let error = search.clone().record(vec![], twice).unwrap_err();
        assert_eq!((error.side, error.split, error.child), ("target", 0, 2));
        let once = vec![ChildDigest { split: 0, child: 2, digest }];
        search.record(once.clone(), once).unwrap();
    }

    #[test]
    fn one_empty_side_streams_the_other_sides_span() {
        let search = Search::new(
            SearchSettings::default(),
            Some(Overview { first: 3, last: 9, rows: 7, hash: "x".into() }),
            None,
        );
        assert_eq!(search.step(), Step::Stream(&[Segment { first: 3, last: 9 }]));
    }
}
