//! One table's comparison divided into consecutive key sub-ranges ("parts"), each a unit of
//! work of its own: compared alone (both strategies, the part's key range added to the rows
//! each side compares), in parallel sessions or by other processes, and combined in key
//! order into exactly the outcome of one comparison ([`combine`]).
//!
//! # Split points
//!
//! A part is a half-open range of the **first key column**: part 0 holds every key below the
//! first bound, part `i` the keys from bound `i-1` (included) to bound `i` (excluded), the
//! last part every key from the last bound up — and the rows whose first key column is NULL,
//! which both sides' key order puts last (`ORDER BY key` sorts NULLs last), so a NULL key
//! still makes the part holding it fail exactly as it makes a whole stream fail. The ranges
//! are open at both ends: every row of either side lies in exactly one part, whatever keys a
//! side holds, so the parts' merges together meet every key a single merge meets, in the
//! same order.
//!
//! Bounds must order alike on both sides ([`SplitKey`]): an integer key (any width) is split
//! on numeric bounds; a uuid key (uuid on both sides) on uuid bounds, ordered by bytes as
//! PostgreSQL orders uuids; a text key (`text`/`varchar` on both sides) on text bounds
//! compared `COLLATE "C"`, byte order, the order both streams sort text keys by. A `char(n)`
//! key (its trailing blanks compared differently by `bpchar` and `text`) and a uuid compared
//! with text are not split: such a comparison stays one unit.
//!
//! The bounds are the source's key quantiles in the compared rows
//! (`percentile_disc(…) WITHIN GROUP (ORDER BY key)`, [`BoundsQuery`]), read over a
//! `TABLESAMPLE SYSTEM` sample when the rows are many ([`sample_percent`]): any bounds give
//! a correct split (the ranges cover every key); the quantiles only balance the parts. Equal
//! quantiles (more parts than rows) are merged, so a split never has an empty bound range
//! twice. Bounds are written into the SQL as literals built from their decoded values
//! (an integer, a uuid's 16 bytes, a text's bytes as hex through `decode`), never from text
//! a user gave: `COPY` takes no bind parameters.
//!
//! ```
//! use datadiff_access::split::{Part, SplitKey, parts};
//! use datadiff_diff_core::merge::Key;
//!
//! let parts = parts(vec![Key::Int(100), Key::Int(200)]);
//! assert_eq!(parts.len(), 3);
//! assert_eq!(parts[0].filter("id", SplitKey::Int), "(\"id\" < 100)");
//! assert_eq!(parts[1].filter("id", SplitKey::Int), "(\"id\" >= 100 AND \"id\" < 200)");
//! assert_eq!(parts[2].filter("id", SplitKey::Int), "(\"id\" >= 200 OR \"id\" IS NULL)");
//! assert_eq!(Part::whole().filter("id", SplitKey::Int), "true");
//! ```

use datadiff_diff_core::merge::{Key, Summary};
use datadiff_diff_core::plan::quoted_ident;
use datadiff_diff_core::segment::StrategyUsed;
use postgres::Client;

use crate::error::Error;
use crate::stream::KeyDecoder;
use crate::table::TableName;

/// The most parts one comparison is divided into.
pub const MAX_PARTS: usize = 4096;

/// Rows read for the bounds: above this many expected rows, the bounds come from a sample of
/// about this many ([`sample_percent`]).
pub const BOUND_SAMPLE_ROWS: u64 = 1_000_000;

/// How the first key column is split (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SplitKey {
    /// Integer on both sides: numeric bounds.
    Int,
    /// uuid on both sides: uuid bounds.
    Uuid,
    /// `text`/`varchar` on both sides: text bounds, `COLLATE "C"`.
    Text,
}

impl SplitKey {
    /// The stored spelling (`datadiff_run_divisions.split_key`): `int`, `uuid` or `text`.
    pub fn as_str(self) -> &'static str {
        match self {
            SplitKey::Int => "int",
            SplitKey::Uuid => "uuid",
            SplitKey::Text => "text",
        }
    }

    /// The split key [`SplitKey::as_str`] spells as `text`.
    pub fn parse(text: &str) -> Option<SplitKey> {
        match text {
            "int" => Some(SplitKey::Int),
            "uuid" => Some(SplitKey::Uuid),
            "text" => Some(SplitKey::Text),
            _ => None,
        }
    }

    /// A bound as stored text (a key value, never a row value): the integer, the uuid's
    /// hyphenated form, the text itself.
    pub fn bound_text(self, bound: &Key) -> String {
        match bound {
            Key::Text(text) => text.clone(),
            other => other.to_string(),
        }
    }

    /// The bound [`SplitKey::bound_text`] wrote as `text`, when it is one of this kind.
    pub fn bound_of_text(self, text: &str) -> Option<Key> {
        match self {
            SplitKey::Int | SplitKey::Uuid => decode_bound(self, text),
            SplitKey::Text => Some(Key::Text(text.to_owned())),
        }
    }

    /// How a first key column decoded by `source` and `target` is split, or why it is not.
    pub fn of(source: KeyDecoder, target: KeyDecoder) -> Result<SplitKey, NotSplittable> {
        match (source, target) {
            (KeyDecoder::Int, KeyDecoder::Int) => Ok(SplitKey::Int),
            (KeyDecoder::Uuid, KeyDecoder::Uuid) => Ok(SplitKey::Uuid),
            (KeyDecoder::Text, KeyDecoder::Text) => Ok(SplitKey::Text),
            (KeyDecoder::PaddedChar, _) | (_, KeyDecoder::PaddedChar) => Err(NotSplittable::PaddedChar),
            (KeyDecoder::Date | KeyDecoder::DateAsTimestamp | KeyDecoder::Timestamp | KeyDecoder::TimestampTz, _) => {
                Err(NotSplittable::Calendar)
            }
            _ => Err(NotSplittable::MixedKey),
        }
    }
}

/// Why a comparison stays one unit of work.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum NotSplittable {
    /// A `char(n)` key: `bpchar` and `text` compare trailing blanks differently.
    #[error("a char(n) key is not split (its trailing blanks compare differently on the two sides)")]
    PaddedChar,
    /// A uuid key compared with a text key.
    #[error("a uuid key compared with a text key is not split")]
    MixedKey,
    /// A date or timestamp key (divided by nobody yet: its stored bounds would need a
    /// spelling of their own).
    #[error("a date or timestamp key is not split")]
    Calendar,
    /// A MySQL or MariaDB source.
    #[error("a MySQL or MariaDB source is not split")]
    MySqlSource,
}

/// One part: the keys from `lower` (included; `None`: from the lowest) to `upper` (excluded;
/// `None`: to the highest, with the NULL keys).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Part {
    /// The part's place in key order, from 0.
    pub index: usize,
    /// The lowest key of the part, included.
    pub lower: Option<Key>,
    /// The key above the part, excluded.
    pub upper: Option<Key>,
}

impl Part {
    /// The one part of an unsplit comparison.
    pub fn whole() -> Part {
        Part { index: 0, lower: None, upper: None }
    }

    /// Whether this is the one part of an unsplit comparison.
    pub fn is_whole(&self) -> bool {
        self.lower.is_none() && self.upper.is_none()
    }

    /// The SQL condition selecting the part's rows by the first key column `column` (a
    /// column name, quoted here); `true` for the whole.
    pub fn filter(&self, column: &str, key: SplitKey) -> String {
        let column = match key {
            SplitKey::Text => format!("{} COLLATE \"C\"", quoted_ident(column)),
            SplitKey::Int | SplitKey::Uuid => quoted_ident(column),
        };
        match (&self.lower, &self.upper) {
            (None, None) => "true".to_owned(),
            (None, Some(upper)) => format!("({column} < {})", literal(upper)),
            (Some(lower), Some(upper)) => format!("({column} >= {} AND {column} < {})", literal(lower), literal(upper)),
            (Some(lower), None) => format!("({column} >= {} OR {column} IS NULL)", literal(lower)),
        }
    }
}

/// A bound as an SQL literal of its kind, from its decoded value.
fn literal(key: &Key) -> String {
    match key {
        Key::Int(value) => value.to_string(),
        Key::Uuid(bytes) => format!("'{}'::uuid", Key::Uuid(*bytes)),
        Key::Text(text) => format!("convert_from(decode('{}', 'hex'), 'UTF8') COLLATE \"C\"", hex(text.as_bytes())),
        // Never a bound (bounds are of the first key column).
        Key::Composite(parts) => literal(&parts[0]),
        // Never a bound (such keys are not split: [`NotSplittable::Calendar`]).
        Key::Date(_) | Key::Timestamp(_) => format!("'{key}'"),
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// The parts that `bounds` (ascending, distinct) divide the keys into: one more than the
/// bounds.
pub fn parts(bounds: Vec<Key>) -> Vec<Part> {
    let mut parts = Vec::with_capacity(bounds.len() + 1);
    let mut lower = None;
    for (index, bound) in bounds.into_iter().enumerate() {
        parts.push(Part { index, lower: lower.take(), upper: Some(bound.clone()) });
        lower = Some(bound);
    }
    parts.push(Part { index: parts.len(), lower, upper: None });
    parts
}

/// The share of a table's pages sampled for the bounds when `expected_rows` are compared:
/// `None` (every row) up to [`BOUND_SAMPLE_ROWS`].
pub fn sample_percent(expected_rows: Option<u64>) -> Option<f64> {
    let rows = expected_rows.filter(|rows| *rows > BOUND_SAMPLE_ROWS)?;
    Some((100.0 * BOUND_SAMPLE_ROWS as f64 / rows as f64).clamp(0.01, 100.0))
}

/// What [`read_bounds`] reads: the `parts - 1` quantiles of `key` (the first key column)
/// among the rows of `table` that `filter` keeps, over a `sample` percent of the pages when
/// given ([`sample_percent`]).
#[derive(Debug, Clone, Copy)]
pub struct BoundsQuery<'a> {
    /// The table.
    pub table: &'a TableName,
    /// The first key column's name.
    pub key: &'a str,
    /// How it is split.
    pub split: SplitKey,
    /// The compared rows' condition, when not every row is compared.
    pub filter: Option<&'a str>,
    /// The parts wanted (at most [`MAX_PARTS`]).
    pub parts: usize,
    /// The share of the pages sampled (repeatably: the same pages each time).
    pub sample: Option<f64>,
}

impl BoundsQuery<'_> {
    /// The statement: the quantiles as text, in key order (`COLLATE "C"` for text).
    pub fn sql(&self) -> String {
        let parts = self.parts.clamp(2, MAX_PARTS);
        let fractions: Vec<String> = (1..parts).map(|index| format!("{}", index as f64 / parts as f64)).collect();
        let column = quoted_ident(self.key);
        let order = match self.split {
            SplitKey::Text => format!("{column} COLLATE \"C\""),
            SplitKey::Int | SplitKey::Uuid => column.clone(),
        };
        // The bytes of a text bound, so that no client encoding stands between them and the bound.
        let value = match self.split {
            SplitKey::Text => "encode(convert_to(q, 'UTF8'), 'hex')",
            SplitKey::Int | SplitKey::Uuid => "q::text",
        };
        let sampled = match self.sample {
            Some(percent) => format!(" TABLESAMPLE SYSTEM ({percent}) REPEATABLE (0)"),
            None => String::new(),
        };
        let filter = self.filter.map(|filter| format!(" AND ({filter})")).unwrap_or_default();
        // The quantiles are computed on the key itself (its order); each is then read as text.
        format!(
            "SELECT {value} FROM pg_catalog.unnest((SELECT percentile_disc(ARRAY[{}]::float8[]) WITHIN GROUP \
             (ORDER BY {order}) FROM {}{sampled} WHERE {column} IS NOT NULL{filter})) AS q",
            fractions.join(", "),
            self.table.quoted(),
        )
    }
}

/// Reads the bounds dividing the rows `query` names into about `query.parts` parts (fewer
/// when they have fewer distinct keys; none for one part or no rows): ascending, distinct, as
/// keys of the split's kind. `role` names the side in errors.
pub fn read_bounds(client: &mut Client, role: &str, query: &BoundsQuery<'_>) -> Result<Vec<Key>, Error> {
    if query.parts < 2 {
        return Ok(Vec::new());
    }
    let table = query.table;
    let rows = client
        .query(query.sql().as_str(), &[])
        .map_err(Error::query(role, format!("reading the split points of {table}")))?;
    let mut bounds: Vec<Key> = Vec::with_capacity(rows.len());
    for row in rows {
        let text: Option<String> = row.try_get(0).map_err(Error::query(role, "reading a split point"))?;
        let Some(text) = text else { continue };
        let bound = decode_bound(query.split, &text)
            .ok_or_else(|| Error::SplitPoint { role: role.to_owned(), table: table.to_string() })?;
        if bounds.last().is_none_or(|last| *last < bound) {
            bounds.push(bound);
        }
    }
    Ok(bounds)
}

/// A bound read as text ([`BoundsQuery::sql`]) as a key.
fn decode_bound(split: SplitKey, text: &str) -> Option<Key> {
    match split {
        SplitKey::Int => text.parse().ok().map(Key::Int),
        SplitKey::Uuid => {
            let digits: String = text.chars().filter(|c| *c != '-').collect();
            let bytes = unhex(&digits)?;
            Some(Key::Uuid(bytes.try_into().ok()?))
        }
        SplitKey::Text => String::from_utf8(unhex(text)?).ok().map(Key::Text),
    }
}

fn unhex(digits: &str) -> Option<Vec<u8>> {
    if !digits.len().is_multiple_of(2) {
        return None;
    }
    (0..digits.len()).step_by(2).map(|at| u8::from_str_radix(digits.get(at..at + 2)?, 16).ok()).collect()
}

/// The summaries of a comparison's parts, in part (key) order, as the summary of one
/// comparison: the counts summed, the first `max_examples` differences in key order.
pub fn combine<K: Clone>(
    parts: impl IntoIterator<Item = Summary<K>>,
    max_examples: usize,
    field_names: Vec<String>,
) -> Summary<K> {
    let mut combined = Summary::new(max_examples, field_names);
    for part in parts {
        combined.matched += part.matched;
        combined.missing += part.missing;
        combined.extra += part.extra;
        combined.changed += part.changed;
        let room = max_examples.saturating_sub(combined.examples.len());
        combined.examples.extend(part.examples.into_iter().take(room));
    }
    combined
}

/// The strategy of a split comparison: its first part's (every part decides alike: the same
/// strategy asked for, the whole comparison's row count, the same links).
pub fn combined_strategy(parts: &[StrategyUsed]) -> Option<StrategyUsed> {
    parts.first().cloned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use datadiff_diff_core::merge::{DifferenceKind, Example};

    fn summary(matched: u64, examples: &[i64]) -> Summary<Key> {
        let mut summary = Summary::new(3, vec!["a".to_owned()]);
        summary.matched = matched;
        summary.missing = examples.len() as u64;
        summary.examples = examples
            .iter()
            .map(|key| Example { kind: DifferenceKind::MissingInTarget, key: Key::Int(*key), fields: Vec::new() })
            .collect();
        summary
    }

    #[test]
    fn combined_parts_keep_the_first_examples_in_key_order_and_sum_the_counts() {
        let combined = combine([summary(5, &[1, 2]), summary(0, &[]), summary(7, &[10, 11, 12])], 3, vec!["a".into()]);
        assert_eq!((combined.matched, combined.missing), (12, 5));
        let keys: Vec<&Key> = combined.examples.iter().map(|example| &example.key).collect();
        assert_eq!(keys, [&Key::Int(1), &Key::Int(2), &Key::Int(10)]);
        assert!(combined.examples_truncated());
    }

    #[test]
    fn bounds_are_literals_built_from_their_values() {
        let parts = parts(vec![Key::Text("it's".to_owned())]);
        assert_eq!(
            parts[0].filter("code", SplitKey::Text),
            "(\"code\" COLLATE \"C\" < convert_from(decode('69742773', 'hex'), 'UTF8') COLLATE \"C\")"
        );
        let uuid = Key::Uuid([0xab; 16]);
        assert_eq!(
            parts_of(uuid)[1].filter("id", SplitKey::Uuid),
            "(\"id\" >= 'abababab-abab-abab-abab-abababababab'::uuid OR \"id\" IS NULL)"
        );
        assert_eq!(decode_bound(SplitKey::Uuid, "abababab-abab-abab-abab-abababababab"), Some(Key::Uuid([0xab; 16])));
        assert_eq!(decode_bound(SplitKey::Text, "69742773"), Some(Key::Text("it's".to_owned())));
        assert_eq!(decode_bound(SplitKey::Text, "zz"), None);
        assert_eq!(decode_bound(SplitKey::Int, "-7"), Some(Key::Int(-7)));
    }

    fn parts_of(bound: Key) -> Vec<Part> {
        parts(vec![bound])
    }

    #[test]
    fn keys_that_order_differently_on_the_two_sides_are_not_split() {
        assert_eq!(SplitKey::of(KeyDecoder::PaddedChar, KeyDecoder::Text), Err(NotSplittable::PaddedChar));
        assert_eq!(SplitKey::of(KeyDecoder::Uuid, KeyDecoder::Text), Err(NotSplittable::MixedKey));
        assert_eq!(SplitKey::of(KeyDecoder::Text, KeyDecoder::Text), Ok(SplitKey::Text));
    }

    #[test]
    fn stored_bounds_read_back_as_the_same_keys() {
        let uuid = Key::Uuid([0xab; 16]);
        for (split, bound) in
            [(SplitKey::Int, Key::Int(-7)), (SplitKey::Uuid, uuid), (SplitKey::Text, Key::Text("it's é".to_owned()))]
        {
            assert_eq!(SplitKey::parse(split.as_str()), Some(split));
            assert_eq!(split.bound_of_text(&split.bound_text(&bound)), Some(bound));
        }
        assert_eq!(SplitKey::Int.bound_of_text("x"), None);
        assert_eq!(SplitKey::parse("bigint"), None);
    }

    #[test]
    fn many_rows_are_sampled() {
        assert_eq!(sample_percent(Some(10)), None);
        assert_eq!(sample_percent(None), None);
        assert_eq!(sample_percent(Some(100_000_000)), Some(1.0));
    }
}
