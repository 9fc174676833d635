//! The segment strategy's SQL: each database hashes its own rows by key segment, so only
//! hashes cross the link, and then the rows of the few segments whose hashes differ (see
//! [`datadiff_diff_core::segment`] for the search itself).
//!
//! # The digest
//!
//! A row's hash is `hash_record_extended(ROW(key, fields…), HASH_SEED)` ([`HASH_SEED`]:
//! not 0, so that NULL never hashes as a special value does): PostgreSQL's own 64-bit hash
//! of each field by its type's hash function, combined. A segment's digest is the count of
//! its rows and the exact (`numeric`) sum of each row's [`ROW_DIGEST`], the row hash mixed
//! through a 64-bit Jenkins hash. The mix is what makes the sum sound: the record hash is
//! `31·h₁ + h₂ + …`, linear in the field hashes, so a plain sum of row hashes cannot see one
//! column's values permuted among the rows of a segment (two swapped values cancel).
//!
//! Three of PostgreSQL's type hashes lose information, and the lost part is hashed beside
//! the value ([`hash_pair`]): `numeric`'s ignores the sign and tells no special value from
//! another (a sign code is added); `bigint`'s folds its 64 bits into 32 (`1` and `2^32` hash
//! alike: the high half is added); `timestamp`'s, `timestamptz`'s and `time`'s fold their
//! microseconds likewise (their binary forms, `timestamp_send(…)`, the eight bytes of the
//! microseconds, are hashed instead).
//!
//! A level's answer is packed ([`packed`]): one `bytea` per side holding each non-empty
//! child's split, index, count and hash total (the exact sum wrapped to 64 bits), each index
//! and count in the narrowest integer the level's splits allow ([`Packing`]): 14 bytes a
//! child for a level of small regions, 18 for a large table's first level, against about 65
//! as a row of text and numbers. The overview keeps its exact sum (one row: nothing to save).
//! With one-position children ([`Split::row_digests`]) the same answer carries a digest per
//! position, so a small differing child costs 14–16 bytes a row and side, and only its
//! differing rows are streamed.
//!
//! Before the first level, each side answers its **sketch** ([`SegmentQuery::sketch`]; see
//! [`datadiff_diff_core::sketch`]): one pass grouping the rows by their cell in each of the
//! sketch's three tables at once (`GROUPING SETS`), the cells packed 28 bytes each. When the
//! sketches name the differing positions, each side's digests at those positions are read
//! as a level of one-position splits (through the index), which proves the rest equal or
//! not (see [`datadiff_diff_core::segment`]).
//!
//! A level of several splits reads each split's rows through the key's index where one
//! serves ([`SegmentQuery::indexed_level_sql`]: an integer or uuid key with a unique index, a
//! text key whose index orders by bytes) and the splits hold few of the table's rows
//! ([`SegmentQuery::reads_through_index`]): at most half where the rows lie in about the
//! key's order (`pg_stats.correlation`, [`MIN_KEY_CORRELATION`]), at most a sixteenth where
//! they do not (random uuids: each row read costs a heap page). Later levels then cost the
//! rows of their splits, not a pass over the table. Elsewhere one pass finds each row's
//! split by binary search ([`SegmentQuery::level_sql`]).
//!
//! The rows of the leaves the search leaves over are streamed by one query per side
//! ([`SegmentQuery::leaves_filter`]). With row digests a leaf is often one differing row, so
//! a large table with scattered drift has tens of thousands of them: a uuid key with a
//! unique index, and a text key whose index orders by bytes, find the leaves' keys through
//! it (the leaves written as positions, or as hex key ranges after the common prefix); other
//! keys' leaves, up to [`OR_LEAVES`], are selected by one `BETWEEN` each; beyond, an integer
//! key's narrow leaves list their keys, and anything else takes one pass with a binary
//! search per row — never a row tested against every leaf.
//!
//! Measured on 1 M rows of seven columns, CPU time of one server process (BENCHMARKS.md):
//! the mixed, widened digest costs about 1.3× the bare record hash, and stays well below
//! `hashtextextended(ROW(…)::text)` (3×) or an md5 per row.
//!
//! # Which pairs are hashed
//!
//! A type's hash function agrees with its equality operator, and PostgreSQL keeps the hashes
//! of compatible types equal for equal values (`smallint`/`integer`/`bigint`, `real`/`double
//! precision`, `timestamp`/`timestamptz` as microseconds). A column pair is hashed only where
//! SQL computes the comparison's canonical value on both sides exactly ([`hash_pair`]):
//! equal hashes then mean equal canonical rows, and a pair hashed in a form the other side
//! spells differently only makes its segments differ (they are streamed and compared
//! exactly). An exact number against a float replica hashes the exact side cast to the
//! float (`numeric::float8` rounds as the decoders do), guarded so that a value the cast
//! would reject hashes as a marker instead. Every other pair — a uuid held as text, a date
//! against a timestamp, a float read as a `real` — makes the table unhashable: it is streamed.
//!
//! Text fields are hashed as `text COLLATE "C"` (bytes, whatever the column's collation);
//! `char(n)` right-trimmed; with `empty_string_as_null`, `''` as NULL — the canonical forms.
//!
//! # Positions
//!
//! Segments are ranges of `i64` positions ([`datadiff_diff_core::segment::Segment`]): an
//! integer key is its own position; a uuid key's position is its first 60 bits (a
//! non-negative `bigint` that orders as the uuid does, read from its binary form,
//! `uuid_send`: reading its text cost three times as much per row), and a segment of
//! positions is the uuid range from `…0000` to `…ffff`, so its rows are found through the
//! key's index. A uuid overview's span is its lowest and highest uuid, found through the
//! index too: no position is computed per row there.
//!
//! A text key's position ([`Position::Text`]) is 60 bits of its UTF-8 bytes, zero-padded (eight
//! bytes as 16 hex digits, of which 15 are read as a non-negative `bigint`), taken **after
//! the common prefix** of the lowest and highest key of both sides ([`common_prefix`],
//! [`Position::sql_after`]): every compared key starts with that prefix, so the 60 bits cover
//! the part of the keys that varies (`customer-000000123` … `customer-000120000` are
//! positioned by what follows `customer-0000`). The overview returns each side's lowest and
//! highest key (`COLLATE "C"`), the search gives both sides the same prefix
//! ([`HashSide::segment_query`]) and repositions the overviews' spans. The position is
//! non-decreasing in byte order, the `COLLATE "C"` order both streams sort text keys by,
//! whatever the column's collation (the empty key, and the prefix itself, are position 0). A
//! `char(n)` key is positioned by its right-trimmed text ([`Position::PaddedText`]), its
//! canonical form, so it meets a `text` replica's key; a uuid compared with text
//! ([`KeyDecoder::UuidAsText`]) is positioned by its lowercase hyphenated text (`uuid::text`,
//! what the merge compares). Both sides compute the same function of the same canonical key,
//! so a row falls in the same segment on both.
//!
//! A date or timestamp key ([`Position::Calendar`]) is positioned by its binary value, read
//! from its binary form (`date_send`, `timestamp_send`, `timestamptz_send`): a date's days
//! since 2000-01-01; a timestamp's microseconds since then (a `timestamptz` in UTC whatever
//! the session's zone, a `timestamp` as UTC), shifted right by two bits so that the whole
//! range, ±infinity included, spans less than 2^63 positions; a date compared with a
//! timestamp as its midnight (`date::timestamp`). The row hash reads the binary form itself,
//! so keys sharing a position still hash apart. Its first level is cut at quantiles, as a text
//! key's is. A segment compares the key itself with the lowest and highest key of its
//! positions ([`Position::bounds`], and [`Position::bounds_sql`] where the server derives them
//! from bound positions with integer day and microsecond arithmetic, clamped to the type's
//! finite range and the infinities), so the key's index finds a segment's rows, as an
//! integer key's; a date compared with a timestamp is selected by its position expression.
//!
//! A text key's first level is cut at quantiles of its positions, read from a row sample of
//! the source ([`SegmentQuery::split_points`]), not into children of equal width: digits use
//! 10 of each byte's 256 values, so equal widths leave most rows in a few children, and with
//! drift the next levels would read most of the table.
//!
//! A text segment's rows are selected by the position expression itself (`position BETWEEN
//! first AND last`): exact on both sides whatever the column's collation. Where the side's
//! key column (`text` or `varchar`, in a UTF-8 database) has a valid btree index that orders
//! by bytes — collation `"C"` or `"POSIX"`, the database's default when that is `C`/`POSIX`
//! (libc), or a `text_pattern_ops` operator class ([`KeyRange`], read by the overview) — a key
//! range around the segment is added ([`text_key_range`]): `key >= low AND key < high`,
//! bounds derived from the positions as bytes, widened where they are not UTF-8, so it never
//! drops a row the positions keep, and the index finds a narrow segment's rows. Measured once
//! (PostgreSQL 15, 1 M rows, warm cache) before the range: one narrow text segment took 0.38 s
//! (a sequential scan) against 1 ms through an integer key's index. Keys that still share 7.5
//! bytes after the common prefix share a position, and a range of equal positions cannot be
//! split further: it becomes one larger leaf, streamed and compared exactly.
//!
//! A composite key ([`plan_composite_hashing`], [`SegmentQuery::with_keys`]) is positioned by
//! its first column (an integer, a uuid, text, a date or a timestamp): a segment holds every row whose first column lies
//! in it, and the other key columns are hashed with the row, in the form the merge compares
//! them ([`key_part_fields`]), so a row moved between key parts changes its segment's digest.
//! The overview checks NULLs in every key column and duplicates of the whole key (unless a
//! unique index covers a subset of the key columns: [`has_unique_key_columns`]).
//!
//! # Answers the search cannot trust
//!
//! The overview ([`SegmentQuery::overview`]) also counts NULL keys and, when the key column
//! has no unique index, duplicate keys: a full stream reports those as errors, which equal
//! hashes would hide, so the caller streams instead.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use datadiff_diff_core::{
    merge::Key,
    plan::quoted_ident,
    segment::{ChildDigest, Digest, Link, Overview, Search, SearchSettings, Segment, Split, Step},
    sketch::{Sketch, SketchCell, SketchShape},
};
use postgres::Client;

use crate::error::Error;
use crate::stream::{ColumnType, Decoder, Family, KeyDecoder};
use crate::table::TableName;

/// The seed of every row hash. A NULL field adds 0 to its row's hash, and some types hash
/// special values to the seed itself or one below it (a zero `double precision` and a
/// `numeric` NaN hash to the seed, a zero `numeric` to the seed less one): with seed 0, NULL
/// and NaN would be one value. Any seed above 1 keeps them apart.
pub const HASH_SEED: i64 = 0x6464;

/// A row's digest, from its row hash `h` (a `bigint`, see [`SegmentQuery`]): a segment's
/// digest sums them. `hash_record_extended` is linear in its fields' hashes, so a plain sum
/// of row hashes is blind to any permutation of one column's values among a segment's rows
/// (two rows with their values swapped sum alike). Each row hash is therefore mixed first,
/// through PostgreSQL's 64-bit Jenkins hash: the high half, hashed with [`HASH_SEED`], seeds
/// the hash of the low half. (`hashint8extended` alone would fold the 64 bits into 32.) A
/// different set of rows then sums alike only by a 64-bit coincidence.
pub const ROW_DIGEST: &str = "pg_catalog.hashint8extended(h & 4294967295, pg_catalog.hashint8extended(h >> 32, 25700))";

/// The least `pg_stats.correlation` (in magnitude) between a key column and its rows' heap
/// order for which the rows count as lying in key order: below it rows of one split are
/// scattered over the table, and a level reads its splits through the key's index only when
/// they hold few rows ([`SCATTERED_INDEX_SHARE`]).
pub const MIN_KEY_CORRELATION: f32 = 0.5;

/// A level reads its splits through the key's index when they hold at most
/// `1 / ORDERED_INDEX_SHARE` of the table's rows, and the rows lie in key order
/// ([`SegmentQuery::reads_through_index`]): reading nearly every row through the index costs
/// more than one pass.
pub const ORDERED_INDEX_SHARE: u64 = 2;

/// As [`ORDERED_INDEX_SHARE`], where the rows are scattered: each row read through the index
/// then costs a heap page of its own.
pub const SCATTERED_INDEX_SHARE: u64 = 16;

/// The oldest server with `hash_record_extended` (PostgreSQL 14).
pub const MIN_SERVER_VERSION: i32 = 140_000;

/// How a key maps to its position.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Position {
    /// An integer key is its own position.
    Integer,
    /// A uuid key's position is its first 60 bits.
    Uuid,
    /// A text key's position is the first 60 bits of its UTF-8 bytes, zero-padded (see the
    /// module docs): its segments are selected by the position itself.
    Text,
    /// A `char(n)` key: [`Position::Text`] of its right-trimmed text, the canonical form.
    PaddedText,
    /// A `date`, `timestamp` or `timestamptz` key: its binary value (days or microseconds
    /// since 2000-01-01, ±infinity the extremes), which orders as the key does. Segments
    /// compare the key with their first and last keys ([`CalendarKey::key_bounds`]), except a
    /// date compared with a timestamp, selected by its position expression.
    Calendar(CalendarKey),
}

/// How a date or timestamp key is positioned: by PostgreSQL's binary form of the value
/// the comparison reads ([`KeyDecoder::Date`] and the others).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CalendarKey {
    /// A `date` against a `date`: days since 2000-01-01.
    Date,
    /// A `date` against a timestamp: its midnight's microseconds since 2000-01-01.
    DateAsTimestamp,
    /// A `timestamp` (wall time, read as UTC): microseconds since 2000-01-01.
    Timestamp,
    /// A `timestamptz`: microseconds since 2000-01-01 UTC, whatever the session's zone.
    TimestampTz,
}

/// PostgreSQL's finite `date` range in days since 2000-01-01: 4714-11-24 BC to 5874897-12-31.
const MIN_DATE: i32 = -2_451_545;
const MAX_DATE: i32 = 2_145_031_948;

/// PostgreSQL's finite `timestamp` range in microseconds since 2000-01-01: 4714-11-24 BC
/// 00:00 to 294276-12-31 23:59:59.999999.
const MIN_TIMESTAMP: i64 = -211_813_488_000_000_000;
const MAX_TIMESTAMP: i64 = 9_223_371_331_199_999_999;

const DAY_MICROS: i64 = 86_400_000_000;

/// The day `days` after 2000-01-01 (a `bigint` expression within the finite range) as a date.
fn date_of(days: &str) -> String {
    format!("(DATE '2000-01-01' + ({days})::integer)")
}

/// `text` as a literal of the type `ty`.
fn literal(text: &str, ty: &str) -> String {
    format!("'{text}'::{ty}")
}

impl CalendarKey {
    /// The SQL of the position of `key`: its binary form read as a signed integer — a date's
    /// days; a timestamp's microseconds shifted right by two bits (four microseconds a
    /// position), so that the whole range, ±infinity included, spans less than the 2^63
    /// positions a search can split (keys within four microseconds share a position: their
    /// segment is streamed and compared exactly).
    fn sql(self, key: &str) -> String {
        let send = self.send_sql(key);
        match self {
            CalendarKey::Date => format!("('x' || pg_catalog.encode({send}, 'hex'))::bit(32)::integer::bigint"),
            _ => format!("(('x' || pg_catalog.encode({send}, 'hex'))::bit(64)::bigint >> 2)"),
        }
    }

    /// How segments bound the key itself (its column's type), so that its index serves them;
    /// `None` for a date compared with a timestamp, positioned by its midnight, whose
    /// segments are selected by the position expression.
    pub fn key_bounds(self) -> Option<KeyBounds> {
        match self {
            CalendarKey::Date => Some(KeyBounds::Date),
            CalendarKey::DateAsTimestamp => None,
            CalendarKey::Timestamp => Some(KeyBounds::Timestamp),
            CalendarKey::TimestampTz => Some(KeyBounds::TimestampTz),
        }
    }

    /// The SQL of the key's binary form (`date_send`, `timestamp_send`, `timestamptz_send`:
    /// big-endian days or microseconds since 2000-01-01, UTC), the field the row hash reads:
    /// the same bytes for a `timestamp`, a `timestamptz` and a date's midnight of one instant,
    /// hashed whole (the types' own hashes fold the microseconds; read as an integer, it cost
    /// twice as much per row).
    fn send_sql(self, key: &str) -> String {
        match self {
            CalendarKey::Date => format!("pg_catalog.date_send({key})"),
            CalendarKey::DateAsTimestamp => format!("pg_catalog.timestamp_send({key}::timestamp)"),
            CalendarKey::Timestamp => format!("pg_catalog.timestamp_send({key})"),
            CalendarKey::TimestampTz => format!("pg_catalog.timestamptz_send({key})"),
        }
    }
}

/// The first and last key of a date or timestamp key's positions, for segments that compare
/// the key column itself ([`CalendarKey::key_bounds`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyBounds {
    /// A `date` column: a position is a day.
    Date,
    /// A `timestamp` column: a position is four microseconds.
    Timestamp,
    /// A `timestamptz` column: a position is four microseconds, in UTC.
    TimestampTz,
}

impl KeyBounds {
    /// The key column's type, for literals and arrays of bounds.
    fn type_name(self) -> &'static str {
        match self {
            KeyBounds::Date => "date",
            KeyBounds::Timestamp => "timestamp",
            KeyBounds::TimestampTz => "timestamptz",
        }
    }

    /// The lowest key whose position is at least `position` (as PostgreSQL reads it back,
    /// see [`Key`]'s `Display`): the first day or microsecond of the position, clamped to the
    /// type's finite range, or an infinity where only that key lies beyond.
    fn lowest_text(self, position: i64) -> String {
        let key = match self {
            KeyBounds::Date => match i128::from(position) {
                day if day <= i128::from(i32::MIN) => Key::Date(i32::MIN),
                day if day > i128::from(MAX_DATE) => Key::Date(i32::MAX),
                day => Key::Date(day.max(i128::from(MIN_DATE)) as i32),
            },
            KeyBounds::Timestamp | KeyBounds::TimestampTz => match i128::from(position) * 4 {
                _ if position <= i64::MIN >> 2 => Key::Timestamp(i64::MIN),
                micros if micros > i128::from(MAX_TIMESTAMP) => Key::Timestamp(i64::MAX),
                micros => Key::Timestamp(micros.max(i128::from(MIN_TIMESTAMP)) as i64),
            },
        };
        key.to_string()
    }

    /// The highest key whose position is at most `position` (see
    /// [`KeyBounds::lowest_text`]): the last day or microsecond of the position.
    fn highest_text(self, position: i64) -> String {
        let key = match self {
            KeyBounds::Date => match i128::from(position) {
                day if day >= i128::from(i32::MAX) => Key::Date(i32::MAX),
                day if day < i128::from(MIN_DATE) => Key::Date(i32::MIN),
                day => Key::Date(day.min(i128::from(MAX_DATE)) as i32),
            },
            KeyBounds::Timestamp | KeyBounds::TimestampTz => match i128::from(position) * 4 + 3 {
                _ if position >= i64::MAX >> 2 => Key::Timestamp(i64::MAX),
                micros if micros < i128::from(MIN_TIMESTAMP) => Key::Timestamp(i64::MIN),
                micros => Key::Timestamp(micros.min(i128::from(MAX_TIMESTAMP)) as i64),
            },
        };
        key.to_string()
    }

    /// [`KeyBounds::lowest_text`] and [`KeyBounds::highest_text`] as SQL literals.
    fn literals(self, segment: Segment) -> (String, String) {
        let ty = self.type_name();
        (literal(&self.lowest_text(segment.first), ty), literal(&self.highest_text(segment.last), ty))
    }

    /// [`KeyBounds::lowest_text`] in SQL, of the `bigint` expression `position`, as a value
    /// of the key's type (exact: integer day and microsecond arithmetic, no float rounding).
    fn lowest_sql(self, position: &str) -> String {
        let position = &format!("({position})");
        let ty = self.type_name();
        match self {
            KeyBounds::Date => format!(
                "(CASE WHEN {position} <= {int_min} THEN '-infinity'::date WHEN {position} > {MAX_DATE} \
                 THEN 'infinity'::date WHEN {position} < {MIN_DATE} THEN {min} ELSE {day} END)",
                int_min = i32::MIN,
                min = literal(&self.lowest_text(MIN_DATE.into()), ty),
                day = date_of(position),
            ),
            KeyBounds::Timestamp | KeyBounds::TimestampTz => format!(
                "(CASE WHEN {position} <= {first} THEN '-infinity'::{ty} WHEN {position} > {last} \
                 THEN 'infinity'::{ty} WHEN {position} < {lowest} THEN {min} ELSE {instant} END)",
                first = i64::MIN >> 2,
                last = MAX_TIMESTAMP / 4,
                lowest = MIN_TIMESTAMP / 4,
                min = literal(&self.lowest_text(MIN_TIMESTAMP / 4), ty),
                instant = self.instant_of(&format!("{position} * 4")),
            ),
        }
    }

    /// [`KeyBounds::highest_text`] in SQL (see [`KeyBounds::lowest_sql`]).
    fn highest_sql(self, position: &str) -> String {
        let position = &format!("({position})");
        let ty = self.type_name();
        match self {
            KeyBounds::Date => format!(
                "(CASE WHEN {position} >= {int_max} THEN 'infinity'::date WHEN {position} < {MIN_DATE} \
                 THEN '-infinity'::date WHEN {position} > {MAX_DATE} THEN {max} ELSE {day} END)",
                int_max = i32::MAX,
                max = literal(&self.highest_text(MAX_DATE.into()), ty),
                day = date_of(position),
            ),
            KeyBounds::Timestamp | KeyBounds::TimestampTz => format!(
                "(CASE WHEN {position} >= {last} THEN 'infinity'::{ty} WHEN {position} < {lowest} \
                 THEN '-infinity'::{ty} WHEN {position} > {highest} THEN {max} ELSE {instant} END)",
                last = i64::MAX >> 2,
                lowest = MIN_TIMESTAMP / 4,
                highest = MAX_TIMESTAMP / 4,
                max = literal(&self.highest_text(MAX_TIMESTAMP / 4), ty),
                instant = self.instant_of(&format!("{position} * 4 + 3")),
            ),
        }
    }

    /// The instant `micros` microseconds after 2000-01-01 UTC (a `bigint` expression within
    /// the type's finite range) as a value of the key's type: whole days, then microseconds,
    /// each a product exact in a float (under 2^53), so the sum is exact.
    fn instant_of(self, micros: &str) -> String {
        let naive = format!(
            "(TIMESTAMP '2000-01-01 00:00:00' + (({micros}) / {DAY_MICROS}) * INTERVAL '1 day' + \
             (({micros}) % {DAY_MICROS}) * INTERVAL '1 microsecond')"
        );
        match self {
            KeyBounds::TimestampTz => format!("({naive} AT TIME ZONE 'UTC')"),
            _ => naive,
        }
    }
}

impl Position {
    /// The position of a key decoded by `key` (every key decoder has one). A uuid compared with text
    /// ([`KeyDecoder::UuidAsText`]) is positioned as its text (`uuid::text`, its lowercase
    /// hyphenated form, which is what the merge compares), like the text on the other side.
    pub fn of(key: KeyDecoder) -> Position {
        match key {
            KeyDecoder::Int => Position::Integer,
            KeyDecoder::Uuid => Position::Uuid,
            KeyDecoder::Text | KeyDecoder::UuidAsText => Position::Text,
            KeyDecoder::PaddedChar => Position::PaddedText,
            KeyDecoder::Date => Position::Calendar(CalendarKey::Date),
            KeyDecoder::DateAsTimestamp => Position::Calendar(CalendarKey::DateAsTimestamp),
            KeyDecoder::Timestamp => Position::Calendar(CalendarKey::Timestamp),
            KeyDecoder::TimestampTz => Position::Calendar(CalendarKey::TimestampTz),
        }
    }

    /// How segments bound a date or timestamp key itself ([`CalendarKey::key_bounds`]).
    fn key_bounds(self) -> Option<KeyBounds> {
        match self {
            Position::Calendar(calendar) => calendar.key_bounds(),
            _ => None,
        }
    }

    /// The key in its canonical form, as hashed in the row (`key` quoted).
    fn key_field(self, key: &str) -> String {
        match self {
            Position::Integer => integer_fields(key),
            Position::Uuid => key.to_owned(),
            Position::Text => format!("({key}::text COLLATE \"C\")"),
            Position::PaddedText => format!("(pg_catalog.rtrim({key}::text, ' ') COLLATE \"C\")"),
            // The exact value (a timestamp's own hash folds it), as its binary form.
            Position::Calendar(calendar) => calendar.send_sql(key),
        }
    }

    /// The SQL of the position of `key` (a quoted column or any SQL expression of the key's
    /// type): a non-negative `bigint`, non-decreasing in the key's order (bytewise for text).
    pub fn sql(self, key: &str) -> String {
        self.sql_after(key, 0)
    }

    /// [`Position::sql`] of a text key whose first `skip` bytes are skipped (the common prefix
    /// of every key compared, see [`common_prefix`]): the first 60 bits of the bytes after it.
    /// Integer and uuid positions skip nothing.
    pub fn sql_after(self, key: &str, skip: usize) -> String {
        match self {
            Position::Integer => format!("{key}::bigint"),
            // The uuid's binary form is its 16 bytes: the first eight, as hex, read as bits
            // (a third of the cost of reading its text).
            Position::Uuid => {
                format!(
                    "('x' || pg_catalog.encode(pg_catalog.substr(pg_catalog.uuid_send({key}), 1, 8), 'hex'))::bit(60)::bigint"
                )
            }
            Position::Text => text_position(&format!("{key}::text"), skip),
            Position::PaddedText => text_position(&format!("pg_catalog.rtrim({key}::text, ' ')"), skip),
            Position::Calendar(calendar) => calendar.sql(key),
        }
    }

    /// The SQL of the key's canonical text (`COLLATE "C"`, its bytes' order), for text
    /// positions; `None` for integers and uuids.
    fn canonical_text(self, key: &str) -> Option<String> {
        match self {
            Position::Integer | Position::Uuid | Position::Calendar(_) => None,
            Position::Text | Position::PaddedText => Some(self.key_field(key)),
        }
    }

    /// What a segment's bounds compare: the key itself where its index orders it as its
    /// positions do (integers, uuids), else the position's expression after `skip` bytes
    /// (text: see the module docs; dates and timestamps).
    fn ranged(self, key: &str, skip: usize) -> String {
        match self {
            Position::Integer | Position::Uuid => key.to_owned(),
            Position::Calendar(_) if self.key_bounds().is_some() => key.to_owned(),
            Position::Text | Position::PaddedText | Position::Calendar(_) => self.sql_after(key, skip),
        }
    }

    /// The lowest key of the position `first` and the highest of the position `last` (SQL
    /// `bigint` expressions), as SQL expressions of what segments compare: the key itself for
    /// an integer, a uuid, a date or a timestamp key, else the position. A level binds its
    /// splits as positions (eight bytes each, in binary) and the server derives the keys,
    /// where a uuid's bounds as text took 36 characters each.
    pub fn bounds_sql(self, first: &str, last: &str) -> (String, String) {
        if let Some(bounds) = self.key_bounds() {
            return (bounds.lowest_sql(first), bounds.highest_sql(last));
        }
        match self {
            Position::Integer | Position::Text | Position::PaddedText | Position::Calendar(_) => {
                (first.to_owned(), last.to_owned())
            }
            Position::Uuid => {
                let uuid = |position: &str, fill: char| {
                    format!(
                        "(pg_catalog.lpad(pg_catalog.to_hex(LEAST(GREATEST({position}, 0), {most})), 15, '0') || '{fill}')::uuid",
                        most = (1i64 << 60) - 1,
                        fill = fill.to_string().repeat(17),
                    )
                };
                (uuid(first, '0'), uuid(last, 'f'))
            }
        }
    }

    /// The lowest and highest key of the positions `first..=last`, as SQL literals of what
    /// segments compare (see [`Position::bounds_sql`]).
    pub fn bounds(self, segment: Segment) -> (String, String) {
        if let Some(bounds) = self.key_bounds() {
            return bounds.literals(segment);
        }
        match self {
            Position::Integer | Position::Text | Position::PaddedText | Position::Calendar(_) => {
                (segment.first.to_string(), segment.last.to_string())
            }
            Position::Uuid => (uuid_literal(segment.first, '0'), uuid_literal(segment.last, 'f')),
        }
    }
}

/// The position of the text `text` (an SQL expression) after its first `skip` bytes: the
/// next 60 bits in byte order — the (up to) eight bytes of its UTF-8 form after `skip`, as
/// hex digits read as a bit string, cut or zero-padded on the right to 60 bits (an explicit
/// cast to `bit(60)` does both), as a non-negative `bigint`.
///
/// The UTF-8 form is `textsend`'s: the text in the session's client encoding, which is UTF8
/// in every session datadiff opens (the driver sets it at startup, and nothing changes it).
/// `convert_to(text, 'UTF8')` gives the same bytes but validates them first: with `rpad`
/// where the cast now pads, it cost twice as much per row (about 300 ms against 150 ms a
/// million keys, one process; BENCHMARKS.md), a third of a text-keyed sketch's pass.
fn text_position(text: &str, skip: usize) -> String {
    format!(
        "('x' || pg_catalog.encode(pg_catalog.substr(pg_catalog.textsend({text}), {start}, 8), 'hex'))::bit(60)::bigint",
        start = skip + 1
    )
}

/// The position of `bytes` (a text key's UTF-8 form) after its first `skip` bytes, as the SQL
/// of [`Position::sql_after`] computes it.
pub fn text_position_of(bytes: &[u8], skip: usize) -> i64 {
    let rest = bytes.get(skip..).unwrap_or_default();
    let mut first = [0u8; 8];
    let length = rest.len().min(8);
    first[..length].copy_from_slice(&rest[..length]);
    (u64::from_be_bytes(first) >> 4) as i64
}

/// The common byte prefix of the lowest and highest key (UTF-8): every key between them in
/// byte order starts with it, so positions skip it ([`Position::sql_after`]).
pub fn common_prefix<'a>(lowest: &'a [u8], highest: &[u8]) -> &'a [u8] {
    let length = lowest.iter().zip(highest).take_while(|(low, high)| low == high).count();
    &lowest[..length]
}

/// The bytes a text key must be at least (byte order) for its position after `prefix` to be
/// at least `position`: the prefix, then the position's 60 bits as 7.5 bytes without their
/// trailing zero bytes (a text holds no zero byte, so a key is at least this exactly when its
/// position is at least `position`).
fn position_floor(prefix: &[u8], position: i64) -> Vec<u8> {
    let bits = (position.clamp(0, POSITION_END - 1) as u64) << 4;
    let mut bytes = prefix.to_vec();
    bytes.extend_from_slice(&bits.to_be_bytes());
    while bytes.len() > prefix.len() && bytes.last() == Some(&0) {
        bytes.pop();
    }
    bytes
}

/// One past the largest position (positions are 60 bits).
const POSITION_END: i64 = 1 << 60;

/// A key range (byte order) holding every text key whose position after `prefix` lies in
/// `segment` — and maybe more, which the position predicate beside it removes: `(lowest,
/// below)`, `below` `None` for no upper bound. A key's position is at least `p` exactly when
/// the key is at least the floor of `p` (the prefix, then `p`'s 60 bits as bytes without
/// their trailing zero bytes), so the range is from the floor of the first
/// position to below the floor of the one past the last — both written as text: a floor cut
/// at a zero byte (no text holds one) is exact as its start followed by U+0001; one cut at
/// bytes that are not UTF-8 is widened to its valid start (low) or that start's
/// successor (high: its last character grown by one code point).
pub fn text_key_range(prefix: &[u8], segment: Segment) -> (String, Option<String>) {
    let (lowest, below, _) = text_key_range_exactly(prefix, segment);
    (lowest, below)
}

/// [`text_key_range`], and whether the range holds exactly the keys of the segment's
/// positions (no bound was widened past bytes that are not UTF-8).
fn text_key_range_exactly(prefix: &[u8], segment: Segment) -> (String, Option<String>, bool) {
    let (lowest, low_exact) = match valid_start(&position_floor(prefix, segment.first)) {
        (start, Cut::Zero) => (start + "\u{1}", true),
        (start, Cut::Whole) => (start, true),
        (start, Cut::Invalid) => (start, false),
    };
    let mut high_exact = true;
    let below = segment.last.checked_add(1).filter(|next| *next < POSITION_END).and_then(|next| {
        match valid_start(&position_floor(prefix, next)) {
            (start, Cut::Zero) => Some(start + "\u{1}"),
            (start, Cut::Whole) => Some(start),
            (start, Cut::Invalid) => {
                high_exact = false;
                successor(&start)
            }
        }
    });
    (lowest, below, low_exact && high_exact)
}

/// Where [`valid_start`] stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cut {
    /// At the end: every byte was taken.
    Whole,
    /// At a zero byte.
    Zero,
    /// At bytes that are not UTF-8.
    Invalid,
}

/// The longest start of `bytes` that is UTF-8 without a zero byte, and why it stopped.
fn valid_start(bytes: &[u8]) -> (String, Cut) {
    let (valid, invalid) = match std::str::from_utf8(bytes) {
        Ok(text) => (text.len(), false),
        Err(error) => (error.valid_up_to(), true),
    };
    let text = String::from_utf8_lossy(&bytes[..valid]).into_owned();
    match text.find('\0') {
        Some(zero) => (text[..zero].to_owned(), Cut::Zero),
        None if invalid => (text, Cut::Invalid),
        None => (text, Cut::Whole),
    }
}

/// The smallest text above every text that starts with `text`: its last character that can
/// grow, grown by one code point (the characters after it dropped); `None` when none can (the
/// empty text, or only U+10FFFF).
fn successor(text: &str) -> Option<String> {
    let mut characters: Vec<char> = text.chars().collect();
    while let Some(last) = characters.pop() {
        let next = (u32::from(last) + 1..=0x10_FFFF).find_map(char::from_u32);
        if let Some(next) = next {
            characters.push(next);
            return Some(characters.into_iter().collect());
        }
    }
    None
}

/// The uuid whose first 60 bits are `position` and whose other 68 bits are all `fill`.
fn uuid_literal(position: i64, fill: char) -> String {
    format!("'{}'::uuid", uuid_text(position, fill))
}

/// The uuid (as text, hyphenated) whose first 60 bits are `position` and whose other bits
/// are `fill` (`'0'`: the lowest uuid of the position, `'f'`: the highest).
fn uuid_text(position: i64, fill: char) -> String {
    let bits = position.clamp(0, (1i64 << 60) - 1);
    let hex = format!("{bits:015x}{}", fill.to_string().repeat(17));
    format!("{}-{}-{}-{}-{}", &hex[0..8], &hex[8..12], &hex[12..16], &hex[16..20], &hex[20..32])
}

/// The SQL hashing one compared column pair on each side, `(column, decoder)` of the source
/// and of the target: one or more `ROW` fields per side, in the pair's canonical form, such
/// that the two sides' fields hash alike exactly when the canonical values are equal (up to
/// 64-bit hash collisions). `None` where SQL cannot hash the pair's canonical value exactly
/// (see the module docs): the table is then streamed.
pub fn hash_pair(source: (&ColumnType, Decoder), target: (&ColumnType, Decoder)) -> Option<(String, String)> {
    let (source_column, source_decoder) = source;
    let (target_column, target_decoder) = target;
    let (source_field, target_field) = (quoted_ident(&source_column.name), quoted_ident(&target_column.name));
    let integers = |decoder| matches!(decoder, Decoder::Int | Decoder::IntSameWidth);
    if integers(source_decoder) && integers(target_decoder) {
        // int2 and int4 hash all their bits; a bigint (or a type of another name, such as a
        // domain) gets its high half beside it, on both sides alike.
        let narrow = |column: &ColumnType| matches!(column.type_name.as_str(), "smallint" | "integer");
        return Some(match narrow(source_column) && narrow(target_column) {
            true => (source_field, target_field),
            false => (integer_fields(&source_field), integer_fields(&target_field)),
        });
    }
    let source_fields = hash_expression(source_column, source_decoder)?;
    let target_fields = hash_expression(target_column, target_decoder)?;
    // A float read against a numeric's nearest float carries the numeric side's out-of-range
    // marker field as NULL (see `nearest_float_fields`).
    let is_nearest_float = |decoder| matches!(decoder, Decoder::NumericAsFloat | Decoder::NumericAsReal);
    match (is_nearest_float(source_decoder), is_nearest_float(target_decoder)) {
        (false, false) => Some((source_fields, target_fields)),
        (true, false) if target_decoder == Decoder::Float => {
            Some((source_fields, format!("{target_fields}, NULL::text")))
        }
        (false, true) if source_decoder == Decoder::Float => {
            Some((format!("{source_fields}, NULL::text"), target_fields))
        }
        _ => None,
    }
}

/// The SQL hashing one field of `column` decoded by `decoder` (see [`hash_pair`], which
/// pairs them; integers against integers are paired there).
fn hash_expression(column: &ColumnType, decoder: Decoder) -> Option<String> {
    let field = quoted_ident(&column.name);
    Some(match decoder {
        Decoder::Numeric | Decoder::NumericSameScale => numeric_fields(&field),
        Decoder::IntAsNumeric => numeric_fields(&format!("({field})::numeric")),
        // float8's hash reads all eight bytes (float4 is widened first), with -0 as 0 and
        // one NaN.
        Decoder::Float => field,
        // `integer → float` casts round to the nearest float, as the decoders do, and never
        // fail.
        Decoder::IntAsFloat => format!("({field})::float8"),
        Decoder::IntAsReal => format!("({field})::float4"),
        Decoder::NumericAsFloat => nearest_float_fields(&field, "float8", "1e300", "1e-300"),
        Decoder::NumericAsReal => nearest_float_fields(&field, "float4", "1e37", "1e-37"),
        // Their hashes fold 64-bit microseconds into 32 bits (values 2^32 µs apart, about
        // 71.6 minutes, can hash alike): their binary forms, the microseconds themselves
        // (a naive timestamp's as UTC, as its canonical value is), are hashed instead.
        Decoder::Timestamp if column.family == Family::Timestamp => format!("pg_catalog.timestamp_send({field})"),
        Decoder::Timestamp if column.family == Family::TimestampTz => {
            format!("pg_catalog.timestamptz_send({field})")
        }
        Decoder::Time => format!("pg_catalog.time_send({field})"),
        Decoder::Bool | Decoder::Date | Decoder::Uuid | Decoder::Bytes => field,
        Decoder::Text => format!("({field}::text COLLATE \"C\")"),
        Decoder::PaddedChar => format!("(pg_catalog.rtrim({field}::text, ' ') COLLATE \"C\")"),
        Decoder::TextEmptyAsNull => format!("(NULLIF({field}::text, '') COLLATE \"C\")"),
        Decoder::PaddedCharEmptyAsNull => {
            format!("(NULLIF(pg_catalog.rtrim({field}::text, ' '), '') COLLATE \"C\")")
        }
        _ => return None,
    })
}

/// A `bigint`'s fields: the value, and its high 32 bits. `bigint`'s hash folds the two
/// halves into 32 bits (`1` and `4294967296` hash alike), so the high half is hashed beside
/// it; with both, the pair of hashes is one-to-one (cast to `bigint` first: every width
/// then shifts alike).
fn integer_fields(value: &str) -> String {
    format!("{value}, (({value})::bigint >> 32)")
}

/// A numeric's nearest float (`numeric::float8` reads the decimal text as `strtod` does,
/// correctly rounded, as the decoder does), and a marker. The cast fails outside the float's
/// range (a finite value that would round to infinity or a non-zero one that would round to
/// zero), so only values safely inside it are cast (`max`, `min`: magnitudes; zero, NaN and
/// the infinities cast too); any other value hashes as NULL beside its text in the marker
/// field, which the float side of the pair fills with NULL: such a row never hashes like a
/// float's, and its segment is streamed and compared exactly.
fn nearest_float_fields(value: &str, float: &str, max: &str, min: &str) -> String {
    let castable = format!(
        "(pg_catalog.abs({value}) <= {max} AND ({value} = 0 OR pg_catalog.abs({value}) >= {min}) \
         OR pg_catalog.abs({value}) >= 'Infinity')"
    );
    format!("CASE WHEN {castable} THEN ({value})::{float} END, CASE WHEN NOT {castable} THEN ({value})::text END")
}

/// A numeric's fields: the value, and a code for its sign. `numeric`'s hash reads the
/// digits and the weight but neither the sign (`100` and `-100` hash alike) nor which
/// special value it is (NaN and both infinities hash alike), so the code tells those apart:
/// -1 negative (`-Infinity` too), 1 zero or positive, 2 `Infinity`, 3 `NaN`, NULL for NULL.
fn numeric_fields(value: &str) -> String {
    format!(
        "{value}, CASE WHEN {value} < 0 THEN -1 WHEN {value} = 'Infinity' THEN 2 WHEN {value} = 'NaN' THEN 3 \
         WHEN {value} IS NOT NULL THEN 1 END"
    )
}

/// Why a table is streamed rather than hashed by segment (the reason a comparison stores).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unhashable {
    /// No key column was given (a caller's mistake: every comparison has a key).
    #[error("no key column to position rows by")]
    NoKey,
    /// A column pair whose SQL equality is not the comparison's: names the source's column.
    #[error("column {0} is compared across types in a way SQL cannot hash")]
    Column(String),
}

/// How one side hashes its rows: its key's position and the hash fields of its compared
/// columns, in stream order (for [`SegmentQuery::new`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SideHashing {
    /// How the side's key (its first column, for a composite key) maps to a position.
    pub position: Position,
    /// The side's hash expressions: a composite key's other columns ([`key_part_fields`]), then
    /// the compared columns ([`hash_pair`]).
    pub fields: Vec<String>,
}

/// The hash fields of a composite key's column after the first (which is hashed as the
/// position's key): `(column, decoder)` of each side, decoded as the merge compares them —
/// integers of any width alike, uuids by their bytes, text as `text COLLATE "C"` (`char(n)`
/// right-trimmed, a uuid against text as its lowercase hyphenated text).
pub fn key_part_fields(source: (&str, KeyDecoder), target: (&str, KeyDecoder)) -> (String, String) {
    // Each decoder's key has a position, whose canonical field is the one the merge compares
    // (a uuid read as text: `uuid::text`, its lowercase hyphenated form).
    let fields = |(column, decoder): (&str, KeyDecoder)| Position::of(decoder).key_field(&quoted_ident(column));
    (fields(source), fields(target))
}

/// [`plan_hashing`] for a key of several columns, `(source column, source decoder, target
/// decoder)` each in key order, the target's own column names beside (`target_keys`): the
/// position is the first column's (any key type has one, see [`Position::of`]), the
/// other key columns are hashed before the compared columns. A segment is then a range of the
/// first column, every row with that first column in it: equal digests still mean equal rows,
/// whole keys included. A first column with few distinct values makes few segments (a leaf
/// then holds every row of its first-column values, streamed and compared exactly).
pub fn plan_composite_hashing<'a>(
    keys: &[(&str, KeyDecoder, KeyDecoder)],
    target_keys: &[&str],
    columns: impl IntoIterator<Item = ((&'a ColumnType, Decoder), (&'a ColumnType, Decoder))>,
) -> Result<(SideHashing, SideHashing), Unhashable> {
    let Some(((first, source_first, target_first), rest)) = keys.split_first() else {
        return Err(Unhashable::NoKey);
    };
    let (mut source, mut target) = plan_hashing((first, *source_first, *target_first), columns)?;
    let mut source_keys = Vec::with_capacity(rest.len());
    let mut target_keys_fields = Vec::with_capacity(rest.len());
    for ((name, source_decoder, target_decoder), target_name) in rest.iter().zip(target_keys.iter().skip(1)) {
        let (source_field, target_field) = key_part_fields((name, *source_decoder), (target_name, *target_decoder));
        source_keys.push(source_field);
        target_keys_fields.push(target_field);
    }
    source_keys.append(&mut source.fields);
    target_keys_fields.append(&mut target.fields);
    source.fields = source_keys;
    target.fields = target_keys_fields;
    Ok((source, target))
}

/// Both sides' hashing of a comparison — the key pair `(source key column, source decoder,
/// target decoder)` and each compared column pair with its decoders — or why its rows cannot
/// be hashed: a key without a position first, else the first pair [`hash_pair`] cannot hash.
pub fn plan_hashing<'a>(
    key: (&str, KeyDecoder, KeyDecoder),
    columns: impl IntoIterator<Item = ((&'a ColumnType, Decoder), (&'a ColumnType, Decoder))>,
) -> Result<(SideHashing, SideHashing), Unhashable> {
    let (_, source_key, target_key) = key;
    let mut source = SideHashing { position: Position::of(source_key), fields: Vec::new() };
    let mut target = SideHashing { position: Position::of(target_key), fields: Vec::new() };
    for (source_column, target_column) in columns {
        let (source_field, target_field) =
            hash_pair(source_column, target_column).ok_or_else(|| Unhashable::Column(source_column.0.name.clone()))?;
        source.fields.push(source_field);
        target.fields.push(target_field);
    }
    Ok((source, target))
}

/// One side's segment queries: the table, its key and the hashed fields, over the rows a
/// filter keeps (the same rows its stream reads).
///
/// Clones share what the side learns while it searches ([`SegmentQuery::key_bytes`], the
/// skipped prefix, the key range its index serves): they are one side's queries.
#[derive(Debug, Clone)]
pub struct SegmentQuery {
    role: String,
    table: TableName,
    /// The key column (a composite key's first column), quoted: the position's.
    key: String,
    /// The key column's name (unquoted), for the catalog.
    key_name: String,
    /// A composite key's other columns, quoted (empty for a single-column key).
    other_keys: Vec<String>,
    position: Position,
    row_hash: String,
    filter: Option<String>,
    frame: Arc<Mutex<Frame>>,
}

/// What one side's queries learned while searching (see [`SegmentQuery`]).
#[derive(Debug, Default)]
struct Frame {
    /// The lowest and highest key's UTF-8 bytes (text positions), from the overview.
    keys: Option<[Vec<u8>; 2]>,
    /// The bytes every compared key starts with, which text positions skip.
    prefix: Vec<u8>,
    /// How this side writes a key range its index serves (text keys); `None`: none does,
    /// and segments are selected by the position expression alone.
    range: Option<KeyRange>,
    /// Whether an integer or uuid key of one column has a unique index (the overview was
    /// told not to look for duplicates), or a text key one that orders by bytes ([`KeyRange`]):
    /// a level of several splits over few rows then reads each split's rows through it
    /// ([`SegmentQuery::reads_through_index`]).
    indexed: bool,
    /// Whether the rows lie in about the key's order ([`MIN_KEY_CORRELATION`]).
    heap_ordered: bool,
    /// This side's rows, from the overview.
    rows: u64,
    /// Whether the key is one column with a unique index (whatever the rows' order): a
    /// stream of many uuid leaves finds their keys through it ([`SegmentQuery::leaves_filter`]).
    key_indexed: bool,
    /// Whether the relation is a table or a materialized view, which `TABLESAMPLE` reads
    /// ([`SegmentQuery::split_points`]).
    samplable: bool,
    /// Whether this side's session has JIT compilation switched off (see
    /// [`SegmentQuery::level`]).
    jit_off: bool,
}

/// What the catalog says of the compared relation ([`SegmentQuery::overview`] reads it).
struct TableFacts {
    /// Whether the rows lie in about the key's order ([`MIN_KEY_CORRELATION`]).
    heap_ordered: bool,
    /// Whether it is a table or a materialized view, which `TABLESAMPLE` reads.
    samplable: bool,
}

/// How a text key range is written so that the side's btree index serves it (see
/// [`SegmentQuery::key_range`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyRange {
    /// `key COLLATE collation >= low AND key COLLATE collation < high`: an index in a
    /// byte-order collation (`"C"`, `"POSIX"`, or the database's default when it is one of
    /// them), named here as SQL.
    Collated(String),
    /// `key ~>=~ low AND key ~<~ high`: a `text_pattern_ops` (or `varchar_pattern_ops`) index.
    Pattern,
}

impl KeyRange {
    /// The condition keeping `key` at least `low` and, when there is one, below `high` (SQL
    /// text expressions), as the side's index serves it.
    fn condition(&self, key: &str, low: &str, high: Option<&str>) -> String {
        let (at_least, less_than, key) = match self {
            KeyRange::Collated(collation) => (">=", "<", format!("{key} COLLATE {collation}")),
            KeyRange::Pattern => ("~>=~", "~<~", key.to_owned()),
        };
        match high {
            Some(high) => format!("{key} {at_least} {low} AND {key} {less_than} {high}"),
            None => format!("{key} {at_least} {low}"),
        }
    }

    /// The `ORDER BY` item putting `key` in byte order (`descending`: highest first), as the
    /// side's index serves it.
    fn order(&self, key: &str, descending: bool) -> String {
        match (self, descending) {
            (KeyRange::Collated(collation), false) => format!("{key} COLLATE {collation}"),
            (KeyRange::Collated(collation), true) => format!("{key} COLLATE {collation} DESC"),
            (KeyRange::Pattern, false) => format!("{key} USING ~<~"),
            (KeyRange::Pattern, true) => format!("{key} USING ~>~"),
        }
    }
}

/// `bytes` in hex, two digits a byte.
fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// The SQL text literal of `text`, spelled by its UTF-8 bytes in hex (nothing to escape).
fn text_literal(text: &str) -> String {
    format!("pg_catalog.convert_from(pg_catalog.decode('{}', 'hex'), 'UTF8')", hex(text.as_bytes()))
}

impl SegmentQuery {
    /// The queries of one side: `fields` are this side's hash expressions of the compared
    /// columns ([`hash_pair`]), in stream order; `filter` an SQL predicate written by the
    /// caller (the stream's). `role` names the side in errors.
    pub fn new(
        role: impl Into<String>,
        table: &TableName,
        key_column: &str,
        position: Position,
        fields: &[String],
        filter: Option<&str>,
    ) -> SegmentQuery {
        let key = quoted_ident(key_column);
        let mut row = position.key_field(&key);
        for field in fields {
            row.push_str(", ");
            row.push_str(field);
        }
        SegmentQuery {
            role: role.into(),
            table: table.clone(),
            row_hash: format!("pg_catalog.hash_record_extended(ROW({row}), {HASH_SEED})"),
            key,
            key_name: key_column.to_owned(),
            other_keys: Vec::new(),
            position,
            filter: filter.map(str::to_owned),
            frame: Arc::default(),
        }
    }

    /// [`SegmentQuery::new`] for a key of several columns, in key order: segments are
    /// positions of the first; `fields` hash the other key columns first
    /// ([`plan_composite_hashing`]); the overview's NULL and duplicate checks read every key
    /// column.
    ///
    /// # Panics
    ///
    /// When `key_columns` is empty.
    pub fn with_keys(
        role: impl Into<String>,
        table: &TableName,
        key_columns: &[String],
        position: Position,
        fields: &[String],
        filter: Option<&str>,
    ) -> SegmentQuery {
        let (first, others) = key_columns.split_first().expect("a key has at least one column");
        let mut query = SegmentQuery::new(role, table, first, position, fields, filter);
        query.other_keys = others.iter().map(|column| quoted_ident(column)).collect();
        query
    }
    /// The role name its errors carry (`source`, `replica`, ...).
    pub fn role(&self) -> &str {
        &self.role
    }

    fn frame(&self) -> std::sync::MutexGuard<'_, Frame> {
        self.frame.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Whether a level of `splits` reads each split's rows through the key's index
    /// ([`SegmentQuery::indexed_level_sql`]) rather than in one pass over the table: where an
    /// index serves the key (see the last overview), and the splits hold few of the table's
    /// rows — at most half where the rows lie in about the key's order, at most a sixteenth
    /// where they do not (each row then costs a heap page of its own: random uuids).
    pub fn reads_through_index(&self, splits: &[Split]) -> bool {
        let frame = self.frame();
        if !frame.indexed {
            return false;
        }
        let level_rows = splits.iter().fold(0u64, |sum, split| sum.saturating_add(split.rows));
        let share = if frame.heap_ordered { ORDERED_INDEX_SHARE } else { SCATTERED_INDEX_SHARE };
        level_rows.saturating_mul(share) <= frame.rows
    }

    /// What the catalog says of the relation, in one round trip: whether its rows lie in
    /// about the key's order (`pg_stats.correlation` of the key column at least
    /// [`MIN_KEY_CORRELATION`] in magnitude), or no statistics say otherwise (never analyzed,
    /// a view) — reading a split through the index costs a heap page per row when they do
    /// not: random uuids, say, where one pass over the table is cheaper — and whether it is a
    /// table or a materialized view (`TABLESAMPLE` reads nothing else).
    fn table_facts(&self, client: &mut Client) -> Result<TableFacts, Error> {
        let row = client
            .query_one(
                "SELECT (SELECT max(abs(correlation)) FROM pg_catalog.pg_stats \
                 WHERE schemaname = $1 AND tablename = $2 AND attname = $3), \
                 (SELECT relkind IN ('r', 'm') FROM pg_catalog.pg_class JOIN pg_catalog.pg_namespace \
                 ON pg_namespace.oid = relnamespace WHERE nspname = $1 AND relname = $2)",
                &[&self.table.schema, &self.table.name, &self.key_name],
            )
            .map_err(Error::query(&self.role, "reading the key's statistics"))?;
        let correlation: Option<f32> =
            row.try_get(0).map_err(Error::query(&self.role, "reading the key's statistics"))?;
        let samplable: Option<bool> =
            row.try_get(1).map_err(Error::query(&self.role, "reading the key's statistics"))?;
        Ok(TableFacts {
            heap_ordered: correlation.is_none_or(|correlation| correlation >= MIN_KEY_CORRELATION),
            samplable: samplable == Some(true),
        })
    }

    /// Positions inside `span` that cut this side's rows into about `count` pieces of equal
    /// row counts, for the first level's splits ([`Search::split_first_level_at`]), read
    /// from a sample of about [`SAMPLED_ROWS_PER_PIECE`] rows a piece (`TABLESAMPLE
    /// BERNOULLI`, `REPEATABLE` so that a run repeats its splits). Only for text keys, whose
    /// positions may fill few of a span's equal-width children; other keys, and relations
    /// that are not tables, keep equal widths (no point).
    ///
    /// A row sample reads every page but positions only the rows it keeps: about a tenth of
    /// a hashing pass. A sample of pages (`SYSTEM`) reads fewer, but where the rows lie in
    /// key order (sequential text keys) each page is a run of neighbouring keys, and a few
    /// hundred such runs misplace the quantiles by thousands of rows (measured on 40,000
    /// sequential keys: a piece of 20 rows where 2,000 were asked).
    pub fn split_points(&self, client: &mut Client, span: Segment, count: u64) -> Result<Vec<i64>, Error> {
        let rows = {
            let frame = self.frame();
            if !frame.samplable || !self.quantile_splits() || count < 2 || frame.rows == 0 {
                return Ok(Vec::new());
            }
            frame.rows
        };
        // A first level's children (at most 65,536 by default); never more pieces than rows.
        let count = count.min(MAX_SPLIT_POINTS).min(rows);
        let percent = (100.0 * (count * SAMPLED_ROWS_PER_PIECE) as f64 / rows as f64).clamp(0.001, 100.0);
        let fractions: Vec<f64> = (1..count).map(|piece| piece as f64 / count as f64).collect();
        let row = client
            .query_one(self.split_points_sql(span).as_str(), &[&fractions, &(percent as f32)])
            .map_err(Error::query(&self.role, "sampling split points"))?;
        let points: Option<Vec<Option<i64>>> =
            row.try_get(0).map_err(Error::query(&self.role, "sampling split points"))?;
        Ok(points.unwrap_or_default().into_iter().flatten().collect())
    }

    /// [`SegmentQuery::split_points`]'s `SELECT`, bound: `$1` the fractions (`float8[]`), `$2`
    /// the share of pages sampled, in percent (`real`).
    fn split_points_sql(&self, span: Segment) -> String {
        format!(
            "SELECT pg_catalog.percentile_disc($1::float8[]) WITHIN GROUP (ORDER BY row_position) \
             FROM (SELECT {position} AS row_position FROM {table} TABLESAMPLE BERNOULLI ($2::real) REPEATABLE (0){filter}) \
             AS sampled WHERE row_position BETWEEN {first} AND {last}",
            position = self.position_sql(),
            table = self.table.quoted(),
            filter = self.where_clause(None),
            first = span.first,
            last = span.last,
        )
    }

    /// The lowest and highest key's UTF-8 bytes its last overview found (text positions only).
    pub fn key_bytes(&self) -> Option<[Vec<u8>; 2]> {
        self.frame().keys.clone()
    }

    /// Makes every later level and leaf filter position text keys after `prefix`, which
    /// every compared key starts with (the search gives both sides the same one:
    /// [`common_prefix`] of both sides' lowest and highest key).
    pub fn skip_prefix(&self, prefix: &[u8]) {
        self.frame().prefix = prefix.to_vec();
    }

    /// The bytes text positions skip.
    pub fn skipped_prefix(&self) -> Vec<u8> {
        self.frame().prefix.clone()
    }

    /// How this side writes a key range its index serves, as its last overview found.
    pub fn key_range(&self) -> Option<KeyRange> {
        self.frame().range.clone()
    }

    /// The position of a text key's `bytes` after the skipped prefix.
    pub fn text_position(&self, bytes: &[u8]) -> i64 {
        text_position_of(bytes, self.frame().prefix.len())
    }

    /// The SQL of the key's position, after the skipped prefix.
    fn position_sql(&self) -> String {
        self.position.sql_after(&self.key, self.frame().prefix.len())
    }

    /// The SQL of what segment bounds compare ([`Position::ranged`]).
    fn ranged_sql(&self) -> String {
        self.position.ranged(&self.key, self.frame().prefix.len())
    }

    /// The key-range predicate that lets the side's index find the rows of `segment`, when
    /// one serves text keys ([`KeyRange`]): it keeps every row the position predicate keeps
    /// (and maybe a few more, which that predicate, always beside it, removes).
    pub fn range_sql(&self, segment: Segment) -> Option<String> {
        if self.position != Position::Text {
            return None;
        }
        let frame = self.frame();
        let range = frame.range.as_ref()?;
        let (low, below) = text_key_range(&frame.prefix, segment);
        Some(range.condition(&self.key, &text_literal(&low), below.as_deref().map(text_literal).as_deref()))
    }

    /// The predicate keeping the rows of `segment`: its positions and, where the side's index
    /// serves one, the key range around them.
    fn segment_predicate(&self, segment: Segment) -> String {
        let (low, high) = self.position.bounds(segment);
        let positions = format!("{} BETWEEN {low} AND {high}", self.ranged_sql());
        match self.range_sql(segment) {
            Some(range) => format!("({range} AND {positions})"),
            None => positions,
        }
    }

    /// The rows a query hashes, as a subquery named `hashed`: this side's rows where `condition`
    /// holds, each with `columns` and its row hash `h`. `OFFSET 0` keeps the server from
    /// merging it into the outer query, which would compute the row hash once per use in
    /// [`ROW_DIGEST`].
    fn rows(&self, columns: &str, condition: Option<&str>) -> String {
        format!(
            "(SELECT {columns}, {hash} AS h FROM {table}{filter} OFFSET 0) AS hashed",
            hash = self.row_hash,
            table = self.table.quoted(),
            filter = self.where_clause(condition),
        )
    }

    /// ` WHERE …` of `condition` and the side's filter (empty when neither).
    fn where_clause(&self, condition: Option<&str>) -> String {
        let conditions: Vec<&str> = [condition, self.filter.as_deref()].into_iter().flatten().collect();
        match conditions.as_slice() {
            [] => String::new(),
            [only] => format!(" WHERE {only}"),
            [first, second] => format!(" WHERE ({first}) AND ({second})"),
            _ => unreachable!("at most two conditions"),
        }
    }

    /// The overview's `SELECT`: first and last position, rows, digest sum, whether every key
    /// is non-NULL and (when `check_duplicates`) distinct, and the lowest and highest key's
    /// UTF-8 bytes. An integer key's span is its `min` and `max`; a uuid key's comes from its
    /// lowest and highest uuid (found through its index, where it has one: no position is
    /// computed per row); a text key's from its lowest and highest key in byte order (through
    /// its index where one orders it bytewise, see [`SegmentQuery::find_key_range`]), whose
    /// bytes the search reads to skip their common prefix (first and last are then NULL).
    /// Reads what the last [`SegmentQuery::overview`] found of the side's index.
    pub fn overview_sql(&self, check_duplicates: bool) -> String {
        let distinct = match check_duplicates {
            true => "count(DISTINCT row_key) = count(*)",
            false => "true",
        };
        let (span, span_columns) = match self.position {
            Position::Integer | Position::Calendar(_) => (
                "min(row_position), max(row_position)".to_owned(),
                format!(", {} AS row_position", self.position_sql()),
            ),
            Position::Uuid => {
                let end = |order: &str| {
                    format!(
                        "(SELECT {position} FROM {table}{filter} ORDER BY {key} {order} LIMIT 1)",
                        position = self.position_sql(),
                        table = self.table.quoted(),
                        filter = self.where_clause(Some(&format!("{} IS NOT NULL", self.key))),
                        key = self.key,
                    )
                };
                (format!("{}, {}", end("ASC"), end("DESC")), String::new())
            }
            Position::Text | Position::PaddedText => {
                let text = self.position.canonical_text(&self.key).unwrap_or_default();
                ("NULL::bigint, NULL::bigint".to_owned(), format!(", {text} AS row_text"))
            }
        };
        let bytes = match self.position.canonical_text(&self.key) {
            Some(_) => {
                "pg_catalog.convert_to(min(row_text), 'UTF8'), pg_catalog.convert_to(max(row_text), 'UTF8')".to_owned()
            }
            None => "NULL::bytea, NULL::bytea".to_owned(),
        };
        // A text key its index orders bytewise: its lowest and highest key are read through
        // the index, as a uuid key's are (no key is compared per row: about a seventh of the
        // pass at a million keys).
        let frame = self.frame();
        let (bytes, span_columns) = match (self.position, &frame.range) {
            (Position::Text, Some(range)) if frame.key_indexed => {
                let end = |descending: bool| {
                    format!(
                        "(SELECT pg_catalog.convert_to({key}::text, 'UTF8') FROM {table}{filter} ORDER BY {order} LIMIT 1)",
                        key = self.key,
                        table = self.table.quoted(),
                        filter = self.where_clause(Some(&format!("{} IS NOT NULL", self.key))),
                        order = range.order(&self.key, descending),
                    )
                };
                (format!("{}, {}", end(false), end(true)), String::new())
            }
            _ => (bytes, span_columns),
        };
        drop(frame);
        if self.other_keys.is_empty() {
            return format!(
                "SELECT {span}, count(*), sum({ROW_DIGEST})::text, count(row_key) = count(*), {distinct}, {bytes} FROM {rows}",
                rows = self.rows(&format!("{key} AS row_key{span_columns}", key = self.key), None),
            );
        }
        // A composite key: the row of its columns (a row with a NULL part is not NULL itself,
        // so NULL parts are counted apart).
        let keys: Vec<&str> =
            std::iter::once(self.key.as_str()).chain(self.other_keys.iter().map(String::as_str)).collect();
        let any_null: Vec<String> = keys.iter().map(|key| format!("{key} IS NULL")).collect();
        format!(
            "SELECT {span}, count(*), sum({ROW_DIGEST})::text, \
             count(*) FILTER (WHERE row_key_null) = 0, {distinct}, {bytes} FROM {rows}",
            rows = self.rows(
                &format!(
                    "ROW({keys}) AS row_key, ({any_null}) AS row_key_null{span_columns}",
                    keys = keys.join(", "),
                    any_null = any_null.join(" OR "),
                ),
                None
            ),
        )
    }

    /// How the side's key column is indexed for a byte-order range ([`KeyRange`]), for a text
    /// key of type `text` or `varchar` in a UTF-8 database: a valid, non-partial btree index
    /// led by the key column, in a byte-order collation or with a pattern operator class.
    pub fn find_key_range(&self, client: &mut Client) -> Result<Option<KeyRange>, Error> {
        if self.position != Position::Text {
            return Ok(None);
        }
        let row = client
            .query_one(
                "SELECT pg_catalog.getdatabaseencoding() = 'UTF8', (SELECT form FROM (\
                 SELECT CASE WHEN o.opcname IN ('text_pattern_ops', 'varchar_pattern_ops') THEN 'pattern' \
                 WHEN i.indcollation[0] = 100 THEN CASE WHEN d.datcollate IN ('C', 'POSIX') \
                 AND coalesce(pg_catalog.to_jsonb(d) ->> 'datlocprovider', 'c') = 'c' THEN 'pg_catalog.\"default\"' END \
                 WHEN c.collprovider = 'c' AND c.collcollate IN ('C', 'POSIX') \
                 THEN pg_catalog.quote_ident(n.nspname) || '.' || pg_catalog.quote_ident(c.collname) END AS form \
                 FROM pg_catalog.pg_index i \
                 JOIN pg_catalog.pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0] \
                 JOIN pg_catalog.pg_opclass o ON o.oid = i.indclass[0] \
                 JOIN pg_catalog.pg_am m ON m.oid = o.opcmethod AND m.amname = 'btree' \
                 LEFT JOIN pg_catalog.pg_collation c ON c.oid = i.indcollation[0] \
                 LEFT JOIN pg_catalog.pg_namespace n ON n.oid = c.collnamespace \
                 JOIN pg_catalog.pg_database d ON d.datname = pg_catalog.current_database() \
                 WHERE i.indrelid = $1::text::regclass AND i.indisvalid AND i.indpred IS NULL \
                 AND a.attname = $2 AND a.atttypid IN ('text'::regtype, 'varchar'::regtype)) AS forms \
                 WHERE form IS NOT NULL ORDER BY form = 'pattern', form LIMIT 1)",
                &[&self.table.quoted(), &self.key_name],
            )
            .map_err(Error::query(&self.role, "reading the key's indexes"))?;
        let read = |error| Error::query(&self.role, "reading the key's indexes")(error);
        let utf8: bool = row.try_get(0).map_err(read)?;
        let form: Option<String> = row.try_get(1).map_err(read)?;
        Ok(match (utf8, form.as_deref()) {
            (false, _) | (_, None) => None,
            (true, Some("pattern")) => Some(KeyRange::Pattern),
            (true, Some(collation)) => Some(KeyRange::Collated(collation.to_owned())),
        })
    }

    /// The rows' overview (`Ok(None)`: no row). [`KeysNotUsable`] when a key is NULL or,
    /// with `check_duplicates`, repeated. A text key's span is positioned after the prefix
    /// skipped so far (none until the search sets one); the lowest and highest key's bytes
    /// are kept ([`SegmentQuery::key_bytes`]), and so is the key range the side's index
    /// serves ([`SegmentQuery::find_key_range`]).
    pub fn overview(
        &self,
        client: &mut Client,
        check_duplicates: bool,
    ) -> Result<Result<Option<Overview>, KeysNotUsable>, Error> {
        let range = self.find_key_range(client)?;
        let TableFacts { heap_ordered, samplable } = self.table_facts(client)?;
        {
            // A new search: nothing skipped until both sides' keys are known.
            let mut frame = self.frame();
            frame.range = range;
            frame.prefix.clear();
            frame.keys = None;
            frame.key_indexed = !check_duplicates && self.other_keys.is_empty();
            frame.heap_ordered = heap_ordered;
            frame.samplable = samplable;
            frame.rows = 0;
            frame.indexed = frame.key_indexed
                && match self.position {
                    Position::Integer | Position::Uuid => true,
                    Position::Text => frame.range.is_some(),
                    Position::Calendar(calendar) => calendar.key_bounds().is_some(),
                    Position::PaddedText => false,
                };
        }
        let row = client
            .query_one(self.overview_sql(check_duplicates).as_str(), &[])
            .map_err(Error::query(&self.role, "segment overview"))?;
        let read = |error| Error::query(&self.role, "segment overview")(error);
        let rows: i64 = row.try_get(2).map_err(read)?;
        if !row.try_get::<_, bool>(4).map_err(read)? {
            return Ok(Err(KeysNotUsable::NullKey));
        }
        if !row.try_get::<_, bool>(5).map_err(read)? {
            return Ok(Err(KeysNotUsable::DuplicateKey));
        }
        if rows == 0 {
            return Ok(Ok(None));
        }
        self.frame().rows = u64::try_from(rows).unwrap_or(0);
        let lowest: Option<Vec<u8>> = row.try_get(6).map_err(read)?;
        let highest: Option<Vec<u8>> = row.try_get(7).map_err(read)?;
        let (first, last) = match (lowest, highest) {
            (Some(lowest), Some(highest)) => {
                let span = (self.text_position(&lowest), self.text_position(&highest));
                self.frame().keys = Some([lowest, highest]);
                span
            }
            _ => (row.try_get::<_, i64>(0).map_err(read)?, row.try_get::<_, i64>(1).map_err(read)?),
        };
        Ok(Ok(Some(Overview {
            first,
            last,
            rows: u64::try_from(rows).unwrap_or(0),
            hash: row.try_get(3).map_err(read)?,
        })))
    }

    /// A level's `SELECT` over several splits, bound: `$1` first positions, `$2` widths and `$3`
    /// last positions (`bigint` arrays, ascending: splits are disjoint and in key order). One
    /// pass over the rows from the first split's lowest key to the last one's highest:
    /// `width_bucket` finds a row's split by binary search among the splits' lowest keys, and
    /// only rows inside their split are hashed. (A join of the splits to the
    /// table leaves the plan to the server, which may scan the table once per split.)
    pub fn level_sql(&self, packing: Packing) -> String {
        self.level_sql_within(None, packing)
    }

    /// [`SegmentQuery::level_sql`], the rows further kept by `range` (a key range around
    /// all the splits, [`SegmentQuery::range_sql`]).
    fn level_sql_within(&self, range: Option<&str>, packing: Packing) -> String {
        let ranged = match self.computed_position() {
            true => "row_position".to_owned(),
            false => self.ranged_sql(),
        };
        let (lowest, highest) =
            self.position.bounds_sql("($1::bigint[])[1]", "($3::bigint[])[pg_catalog.cardinality($3::bigint[])]");
        let (lows, highs) = match self.position {
            Position::Uuid | Position::Calendar(_) if !self.computed_position() => {
                let (low, high) = self.position.bounds_sql("position", "position");
                (
                    format!(
                        "ARRAY(SELECT {low} FROM pg_catalog.unnest($1::bigint[]) WITH ORDINALITY AS firsts (position, split) \
                         ORDER BY split)"
                    ),
                    format!(
                        "ARRAY(SELECT {high} FROM pg_catalog.unnest($3::bigint[]) WITH ORDINALITY AS lasts (position, split) \
                         ORDER BY split)"
                    ),
                )
            }
            _ => ("$1::bigint[]".to_owned(), "$3::bigint[]".to_owned()),
        };
        let split = format!("pg_catalog.width_bucket({ranged}, {lows})");
        let in_splits = format!("{ranged} BETWEEN {lowest} AND {highest} AND {ranged} <= ({highs})[{split}]");
        let rows = match self.computed_position() {
            true => self.positioned_rows(&format!("{split} AS row_split, row_position"), range, &in_splits),
            false => {
                let range = range.map(|range| format!("{range} AND ")).unwrap_or_default();
                self.rows(
                    &format!("{split} AS row_split, {position} AS row_position", position = self.position_sql()),
                    Some(&format!("{range}{in_splits}")),
                )
            }
        };
        packed(
            &format!(
                "SELECT (row_split - 1)::bigint, (row_position - ($1::bigint[])[row_split]) / ($2::bigint[])[row_split], \
             count(*), sum({ROW_DIGEST}) FROM {rows} GROUP BY 1, 2"
            ),
            packing,
        )
    }

    /// A level's `SELECT` over several splits of an integer or uuid key with a unique index,
    /// bound as [`SegmentQuery::level_sql`]'s `$1`–`$3`: each split's rows are read through
    /// the index (`key BETWEEN` its lowest and highest key, one index range scan per split),
    /// so a level costs the rows of its splits, not a pass over the whole table. (Without
    /// such an index the server would scan the table once per split: [`level_sql`] is used
    /// instead.)
    ///
    /// [`level_sql`]: SegmentQuery::level_sql
    ///
    /// A text key's splits are bound as key ranges (`$3` lowest keys, `$4` the keys they stay
    /// below: [`text_key_range`], each as its bytes after the keys' common prefix, which the
    /// statement writes once) with `$5` their last positions: each split's rows are read
    /// through the index by its range and kept by their positions.
    pub fn indexed_level_sql(&self, packing: Packing) -> String {
        if self.computed_position() {
            let prefix = hex(&self.frame().prefix);
            let bound = |suffix: &str| {
                format!("pg_catalog.convert_from('\\x{prefix}'::bytea || segment_splits.{suffix}, 'UTF8')")
            };
            let range = self.key_range().unwrap_or(KeyRange::Pattern).condition(
                &self.key,
                &bound("split_low"),
                Some(&bound("split_high")),
            );
            let rows = self.positioned_rows(
                "row_position",
                Some(&range),
                "row_position BETWEEN segment_splits.split_first AND segment_splits.split_last",
            );
            return packed(
                &format!(
                    "SELECT segment_splits.split_index - 1, (row_position - segment_splits.split_first) / \
                 segment_splits.split_width, count(*), sum({ROW_DIGEST}) \
                 FROM ROWS FROM (pg_catalog.unnest($1::bigint[]), pg_catalog.unnest($2::bigint[]), \
                 pg_catalog.unnest($3::bytea[]), pg_catalog.unnest($4::bytea[]), pg_catalog.unnest($5::bigint[])) \
                 WITH ORDINALITY AS segment_splits (split_first, split_width, split_low, split_high, split_last, \
                 split_index) CROSS JOIN LATERAL {rows} GROUP BY 1, 2"
                ),
                packing,
            );
        }
        let (low, high) = self.position.bounds_sql("segment_splits.split_first", "segment_splits.split_last");
        let rows = self.rows(
            &format!("{position} AS row_position", position = self.position_sql()),
            Some(&format!("{key} BETWEEN {low} AND {high}", key = self.key)),
        );
        packed(
            &format!(
                "SELECT segment_splits.split_index - 1, (row_position - segment_splits.split_first) / \
             segment_splits.split_width, count(*), sum({ROW_DIGEST}) \
             FROM ROWS FROM (pg_catalog.unnest($1::bigint[]), pg_catalog.unnest($2::bigint[]), \
             pg_catalog.unnest($3::bigint[])) \
             WITH ORDINALITY AS segment_splits (split_first, split_width, split_last, split_index) \
             CROSS JOIN LATERAL {rows} GROUP BY 1, 2"
            ),
            packing,
        )
    }

    /// The key ranges of `splits` (lowest keys, keys they stay below) when a text key's level
    /// reads each split through its index ([`SegmentQuery::indexed_level_sql`]); `None` when
    /// it does not, or when a split has no upper bound (its positions reach the last one).
    fn indexed_text_ranges(&self, splits: &[Split]) -> Option<TextRanges> {
        let frame = self.frame();
        if !frame.indexed || self.position != Position::Text {
            return None;
        }
        // Each bound less the keys' common prefix, which the statement writes once.
        let suffix = |bound: String| bound.as_bytes().strip_prefix(frame.prefix.as_slice()).map(<[u8]>::to_vec);
        splits
            .iter()
            .map(|split| {
                let (low, below) = text_key_range(&frame.prefix, split.segment);
                Some((suffix(low)?, suffix(below?)?))
            })
            .collect::<Option<Vec<_>>>()
            .map(|ranges| ranges.into_iter().unzip())
    }

    /// Whether segments compare the key's position, an expression (text, a date against a
    /// timestamp), computed once per row in a subquery of its own
    /// ([`SegmentQuery::positioned_rows`]), rather than the key itself.
    fn computed_position(&self) -> bool {
        match self.position {
            Position::Text | Position::PaddedText => true,
            Position::Calendar(calendar) => calendar.key_bounds().is_none(),
            Position::Integer | Position::Uuid => false,
        }
    }

    /// Whether the key's values may fill few of a span's equal-width children (text, dates
    /// and timestamps), so that the first level is cut at quantiles
    /// ([`SegmentQuery::split_points`]).
    fn quantile_splits(&self) -> bool {
        matches!(self.position, Position::Text | Position::PaddedText | Position::Calendar(_))
    }

    /// [`SegmentQuery::rows`] for a text key: the rows `range` (a key range, when the side's
    /// index serves one) and the side's filter keep, each positioned once (`row_position`),
    /// then those whose position meets `condition` hashed. (Written beside each use, the
    /// position expression would be computed once per use, per row.)
    fn positioned_rows(&self, columns: &str, range: Option<&str>, condition: &str) -> String {
        format!(
            "(SELECT {columns}, {hash} AS h FROM (SELECT *, {position} AS row_position FROM {table}{filter} OFFSET 0) \
             AS positioned WHERE {condition} OFFSET 0) AS hashed",
            hash = self.row_hash,
            position = self.position_sql(),
            table = self.table.quoted(),
            filter = self.where_clause(range),
        )
    }

    /// The `SELECT` of a level with one split, written with literals so that the server
    /// plans it for the range it covers (a first level reads the whole table).
    pub fn single_split_sql(&self, split: &Split, packing: Packing) -> String {
        let rows = match self.computed_position() {
            true => self.positioned_rows(
                "row_position",
                self.range_sql(split.segment).as_deref(),
                &format!("row_position BETWEEN {} AND {}", split.segment.first, split.segment.last),
            ),
            false => self.rows(
                &format!("{position} AS row_position", position = self.position_sql()),
                Some(&self.segment_predicate(split.segment)),
            ),
        };
        packed(
            &format!(
                "SELECT 0::bigint, (row_position - ({first})::bigint) / ({width})::bigint, count(*), sum({ROW_DIGEST}) \
             FROM {rows} GROUP BY 2",
                first = split.segment.first,
                width = i64::try_from(split.width).unwrap_or(i64::MAX),
            ),
            packing,
        )
    }

    /// The side's sketch of `shape` over all its rows (see [`datadiff_diff_core::sketch`]):
    /// one `bytea` of its non-empty cells ([`unpack_cells`]). The rows are grouped by their
    /// cell in each of the sketch's three tables at once (`GROUPING SETS`: one pass, a hash
    /// table per set). Each row's digest is computed once (a fenced subquery), then its cell
    /// in each table ([`SketchShape::cell`]) and its [`datadiff_diff_core::sketch::check`],
    /// as the sketch computes them. Measured at a million uuid-keyed rows, under load: about
    /// 1.6 s against 1.0–1.3 s for a first level's pass (BENCHMARKS.md). The sketch is a
    /// pass of its own (with the level's children as a fourth set, the statement cost about
    /// as much as both), and the first level runs only when it does not settle the search.
    pub fn sketch_sql(&self, shape: SketchShape) -> String {
        const MODULUS: &str = "18446744073709551616::numeric";
        const HALF: &str = "9223372036854775808::numeric";
        const MODULUS_32: &str = "4294967296::numeric";
        let cells = shape.table_cells;
        let wrapped = |sum: &str| format!("((({sum}) % {MODULUS}) + {MODULUS}) % {MODULUS}");
        let signed = |wrapped: &str| {
            format!(
                "pg_catalog.int8send(({wrapped} - CASE WHEN {wrapped} >= {HALF} THEN {MODULUS} ELSE 0 END)::bigint)"
            )
        };
        // Every row, each positioned once (no condition reads the position: a text key's
        // needs no subquery of its own, as a level's does).
        let rows = self.rows(&format!("{position} AS row_position", position = self.position_sql()), None);
        format!(
            "SELECT pg_catalog.string_agg(pg_catalog.int4send(cell::int4) || pg_catalog.int4send(rows::int4) || {positions} || \
             {total} || pg_catalog.int4send((checks - CASE WHEN checks >= 2147483648 THEN {MODULUS_32} ELSE 0 END)::int4), \
             ''::bytea) \
             FROM (SELECT COALESCE(cell_0, cell_1, cell_2) AS cell, count(*) AS rows, {total_wrapped} AS total_wrapped, \
             {positions_wrapped} AS positions_wrapped, \
             (((sum(row_check) % {MODULUS_32}) + {MODULUS_32}) % {MODULUS_32}) AS checks \
             FROM (SELECT row_position, d, (d & 2097151) % {cells} AS cell_0, \
             {cells} + ((d >> 21) & 2097151) % {cells} AS cell_1, {two_cells} + ((d >> 42) & 2097151) % {cells} AS cell_2, \
             (d >> 32) * ((d & 65535) | 1) AS row_check \
             FROM (SELECT row_position, {ROW_DIGEST} AS d FROM {rows} OFFSET 0) AS digested) AS sketched \
             GROUP BY GROUPING SETS ((cell_0), (cell_1), (cell_2))) AS grouped",
            total = signed("total_wrapped"),
            positions = signed("positions_wrapped"),
            total_wrapped = wrapped("sum(d)"),
            positions_wrapped = wrapped("sum(row_position)"),
            two_cells = 2 * u64::from(cells),
        )
    }

    /// The side's sketch of `shape`: its non-empty cells ([`SegmentQuery::sketch_sql`]).
    pub fn sketch(&self, client: &mut Client, shape: SketchShape) -> Result<Vec<SketchCell>, Error> {
        let row = client
            .query_one(self.sketch_sql(shape).as_str(), &[])
            .map_err(Error::query(&self.role, "segment sketch"))?;
        let cells: Option<Vec<u8>> = row.try_get(0).map_err(Error::query(&self.role, "segment sketch"))?;
        unpack_cells(cells.as_deref().unwrap_or_default())
            .ok_or_else(|| Error::Protocol { role: self.role.clone(), what: "segment sketch" })
    }

    /// Switches the session's JIT compilation off, once: the planner estimates a level read
    /// through the index (a lateral index scan per split, bounds it cannot see) far above
    /// `jit_above_cost`, and compiling it took about 100 ms on PostgreSQL 15 where the
    /// level itself took 10 (300 uuid positions, BENCHMARKS.md), and as much again for the
    /// stream of the leaves that follows. The passes over a whole table ran as fast with
    /// JIT as without (measured at a million rows). The session is this side's own.
    fn switch_jit_off(&self, client: &mut Client) -> Result<(), Error> {
        if self.frame().jit_off {
            return Ok(());
        }
        client.batch_execute("SET jit = off").map_err(Error::query(&self.role, "switching JIT off"))?;
        self.frame().jit_off = true;
        Ok(())
    }

    /// What each side holds in every non-empty child of `splits`.
    pub fn level(&self, client: &mut Client, splits: &[Split]) -> Result<Vec<ChildDigest>, Error> {
        let packing = Packing::for_splits(splits);
        let rows = match splits {
            [split] => client.query(self.single_split_sql(split, packing).as_str(), &[]),
            _ => {
                let firsts: Vec<i64> = splits.iter().map(|split| split.segment.first).collect();
                let widths: Vec<i64> =
                    splits.iter().map(|split| i64::try_from(split.width).unwrap_or(i64::MAX)).collect();
                let lasts: Vec<i64> = splits.iter().map(|split| split.segment.last).collect();
                let (Some(first), Some(last)) = (splits.first(), splits.last()) else {
                    return Ok(Vec::new());
                };
                let through_index = self.reads_through_index(splits);
                if through_index {
                    self.switch_jit_off(client)?;
                }
                let text_ranges = if through_index { self.indexed_text_ranges(splits) } else { None };
                if let Some((lows, highs)) = text_ranges {
                    let sql = self.indexed_level_sql(packing);
                    client.query(sql.as_str(), &[&firsts, &widths, &lows, &highs, &lasts])
                } else if through_index && !self.computed_position() {
                    let sql = self.indexed_level_sql(packing);
                    client.query(sql.as_str(), &[&firsts, &widths, &lasts])
                } else {
                    let range = self.range_sql(Segment { first: first.segment.first, last: last.segment.last });
                    let sql = self.level_sql_within(range.as_deref(), packing);
                    client.query(sql.as_str(), &[&firsts, &widths, &lasts])
                }
            }
        }
        .map_err(Error::query(&self.role, "segment hashes"))?;
        let mut children = Vec::new();
        for row in &rows {
            let packed: Option<Vec<u8>> =
                row.try_get(0).map_err(|error| Error::query(&self.role, "segment hashes")(error))?;
            children.extend(
                unpack_children(packed.as_deref().unwrap_or_default(), packing)
                    .ok_or_else(|| Error::Protocol { role: self.role.clone(), what: "segment hashes" })?,
            );
        }
        Ok(children)
    }

    /// The predicate keeping the rows of `leaves` (for the stream's `WHERE`, with literals:
    /// `COPY` binds nothing). Leaves are ascending and disjoint, and there may be tens of
    /// thousands of them (one per differing row): the predicate is chosen so that the server
    /// never tests every row against every leaf.
    ///
    /// * A uuid key with a unique index, any number of leaves: the keys in the leaves are
    ///   found through the index, one range scan per leaf, and then fetched by key (the
    ///   leaves written as first positions and widths); likewise a text key whose index
    ///   orders by bytes (the leaves written as hex key ranges after the common prefix, and
    ///   the rows found kept by their positions).
    /// * Up to [`OR_LEAVES`] leaves: one `BETWEEN` per leaf, joined by `OR`, which the server
    ///   answers with one index scan per leaf where the key has an index.
    /// * More, with an integer key: the keys of each leaf of at most [`LISTED_POSITIONS`]
    ///   positions are listed (`key = ANY(…)`: index probes, or one hashed lookup per row),
    ///   and the wider leaves, when few, keep their `BETWEEN`.
    /// * Otherwise — and always for a text key whose index serves no byte-order range — each
    ///   row's position finds the one leaf it may fall in by `width_bucket` among the leaves'
    ///   first positions (a binary search), and the row is kept when its position is at most
    ///   that leaf's last: one pass over the rows between the first and the last leaf.
    pub fn leaves_filter(&self, leaves: &[Segment]) -> String {
        let (Some(lowest), Some(highest)) = (leaves.first(), leaves.last()) else {
            return "false".to_owned();
        };
        let computed = self.computed_position();
        if computed && leaves.len() > 1 && self.range_sql(*lowest).is_none() {
            return self.bucketed_leaves(leaves);
        }
        if computed && let Some(filter) = self.text_leaves_through_index(leaves) {
            return filter;
        }
        let by_key = self.position == Position::Uuid || self.position.key_bounds().is_some();
        if by_key && self.frame().key_indexed {
            return self.keyed_leaves_through_index(leaves);
        }
        if leaves.len() <= OR_LEAVES {
            return self.leaves_or(leaves);
        }
        let bucketed =
            || self.bounded(Segment { first: lowest.first, last: highest.last }, &self.bucketed_leaves(leaves));
        match self.position {
            Position::Integer => {
                let (listed, wide): (Vec<Segment>, Vec<Segment>) =
                    leaves.iter().partition(|leaf| leaf.positions() <= LISTED_POSITIONS);
                if wide.len() > OR_LEAVES {
                    return self
                        .bounded(Segment { first: lowest.first, last: highest.last }, &self.bucketed_leaves(leaves));
                }
                let keys: Vec<String> =
                    listed.iter().flat_map(|leaf| (leaf.first..=leaf.last).map(|key| key.to_string())).collect();
                let mut arms = vec![format!("{} = ANY('{{{}}}'::bigint[])", self.ranged_sql(), keys.join(","))];
                arms.extend(wide.iter().map(|leaf| self.segment_predicate(*leaf)));
                format!("({})", arms.join(" OR "))
            }
            _ => bucketed(),
        }
    }

    /// A uuid, date or timestamp key with a unique index: the keys in the leaves, found
    /// through the index (one range scan per leaf) and then fetched by key. The leaves are
    /// written as their first positions and their widths in positions (a one-position leaf:
    /// `0`), and the server derives each leaf's lowest and highest key
    /// ([`Position::bounds_sql`]): about 20 bytes a leaf, where its two uuids as text take 80.
    fn keyed_leaves_through_index(&self, leaves: &[Segment]) -> String {
        let key = self.ranged_sql();
        let firsts: Vec<String> = leaves.iter().map(|leaf| leaf.first.to_string()).collect();
        let widths: Vec<String> =
            leaves.iter().map(|leaf| (i128::from(leaf.last) - i128::from(leaf.first)).to_string()).collect();
        let (low, high) = self.position.bounds_sql("leaf.first", "leaf.first + leaf.width");
        format!(
            "({key} = ANY(ARRAY(SELECT leaf_keys.key FROM ROWS FROM (pg_catalog.unnest('{{{firsts}}}'::bigint[]), \
             pg_catalog.unnest('{{{widths}}}'::bigint[])) AS leaf (first, width) CROSS JOIN LATERAL \
             (SELECT {key} AS key FROM {table} WHERE {key} BETWEEN {low} AND {high}) AS leaf_keys)))",
            firsts = firsts.join(","),
            widths = widths.join(","),
            table = self.table.quoted(),
        )
    }

    /// A text key whose index orders by bytes ([`KeyRange`]): the keys in each leaf's key
    /// range ([`text_key_range`]), found through the index (one range scan per leaf), and
    /// where a range was widened past bytes that are not UTF-8, kept by their positions too
    /// ([`SegmentQuery::bucketed_leaves`]). Each range is written as the hex of what follows
    /// the keys' common prefix: about 35 bytes a leaf, where a range of two text literals
    /// took 180. `None` where the index serves no range, or a leaf reaches the last position
    /// (its range has no end).
    fn text_leaves_through_index(&self, leaves: &[Segment]) -> Option<String> {
        if self.position != Position::Text {
            return None;
        }
        let (prefix, range) = {
            let frame = self.frame();
            (frame.prefix.clone(), frame.range.clone()?)
        };
        let suffix_hex = |text: &str| -> Option<String> {
            let bytes = text.as_bytes().strip_prefix(prefix.as_slice())?;
            // Quoted: an empty element (the prefix itself) must be `""` in an array literal.
            Some(format!("\"{}\"", hex(bytes)))
        };
        let mut lows = Vec::with_capacity(leaves.len());
        let mut highs = Vec::with_capacity(leaves.len());
        let mut exact = true;
        for leaf in leaves {
            let (low, below, exactly) = text_key_range_exactly(&prefix, *leaf);
            lows.push(suffix_hex(&low)?);
            highs.push(suffix_hex(&below?)?);
            exact &= exactly;
        }
        let prefix_hex = hex(&prefix);
        let bound = |column: &str| {
            format!("pg_catalog.convert_from(pg_catalog.decode('{prefix_hex}' || {column}, 'hex'), 'UTF8')")
        };
        let within = range.condition(&self.key, &bound("leaf.low"), Some(&bound("leaf.high")));
        Some(format!(
            "({key} = ANY(ARRAY(SELECT leaf_keys.key FROM ROWS FROM (pg_catalog.unnest('{{{lows}}}'::text[]), \
             pg_catalog.unnest('{{{highs}}}'::text[])) AS leaf (low, high) CROSS JOIN LATERAL \
             (SELECT {key} AS key FROM {table} WHERE {within}) AS leaf_keys)){positions})",
            key = self.key,
            lows = lows.join(","),
            highs = highs.join(","),
            table = self.table.quoted(),
            positions = match exact {
                true => String::new(),
                false => format!(" AND {}", self.bucketed_leaves(leaves)),
            },
        ))
    }

    /// One `BETWEEN` per leaf, joined by `OR`.
    fn leaves_or(&self, leaves: &[Segment]) -> String {
        let ranges: Vec<String> = leaves.iter().map(|leaf| self.segment_predicate(*leaf)).collect();
        format!("({})", ranges.join(" OR "))
    }

    /// `predicate`, with the segment `span` around it (so that an index can skip the rows
    /// outside the leaves' span).
    fn bounded(&self, span: Segment, predicate: &str) -> String {
        format!("({} AND {predicate})", self.segment_predicate(span))
    }

    /// The row is kept when its position is at most the last position of the leaf whose first
    /// position `width_bucket` finds at or below it (one binary search a row).
    fn bucketed_leaves(&self, leaves: &[Segment]) -> String {
        let (array, ranged) = match (self.position, self.position.key_bounds()) {
            (_, Some(bounds)) => (format!("{}[]", bounds.type_name()), self.ranged_sql()),
            (Position::Text | Position::PaddedText | Position::Calendar(_), None) => {
                ("bigint[]".to_owned(), self.position_sql())
            }
            (Position::Integer, None) => ("bigint[]".to_owned(), self.ranged_sql()),
            (Position::Uuid, None) => ("uuid[]".to_owned(), self.ranged_sql()),
        };
        let position = self.position;
        let bound = move |leaf: &Segment| match (position, position.key_bounds()) {
            (Position::Uuid, _) => (uuid_text(leaf.first, '0'), uuid_text(leaf.last, 'f')),
            // Quoted: a key such as `0044-03-15 BC` holds a blank.
            (_, Some(bounds)) => {
                (format!("\"{}\"", bounds.lowest_text(leaf.first)), format!("\"{}\"", bounds.highest_text(leaf.last)))
            }
            _ => (leaf.first.to_string(), leaf.last.to_string()),
        };
        let (firsts, lasts): (Vec<String>, Vec<String>) = leaves.iter().map(bound).unzip();
        format!(
            "(('{{{lasts}}}'::{array})[pg_catalog.width_bucket({ranged}, '{{{firsts}}}'::{array})] >= {ranged})",
            lasts = lasts.join(","),
            firsts = firsts.join(","),
        )
    }
}

/// The key ranges of a text level's splits, each bound as its bytes after the keys' common
/// prefix: the lowest keys, and the keys they stay below.
type TextRanges = (Vec<Vec<u8>>, Vec<Vec<u8>>);

/// The most pieces [`SegmentQuery::split_points`] cuts a table into.
pub const MAX_SPLIT_POINTS: u64 = 1 << 20;

/// Rows sampled per first-level piece of a text key ([`SegmentQuery::split_points`]): a
/// piece's bounds are then within a few percent of the quantiles they stand for.
pub const SAMPLED_ROWS_PER_PIECE: u64 = 32;

/// Up to this many leaves, a stream selects them by one `BETWEEN` each, joined by `OR`: the
/// server answers that with one index scan per leaf (measured: 1,000 leaves of 10 M rows in
/// 0.16 s), but past a few thousand it tests each row against every leaf (10,000 leaves took
/// 31 s, 30,000 did not finish in 5 minutes).
pub const OR_LEAVES: usize = 1_000;

/// An integer-keyed leaf of at most this many positions has its keys listed when a stream
/// selects many leaves ([`SegmentQuery::leaves_filter`]).
pub const LISTED_POSITIONS: u64 = 64;

/// One field's width in a level's packed answer ([`Packing`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum FieldWidth {
    /// `smallint`, two bytes.
    Two,
    /// `integer`, four bytes.
    Four,
    /// `bigint`, eight bytes.
    Eight,
}

impl FieldWidth {
    /// The narrowest width holding every value from 0 to `most`.
    pub fn holding(most: u64) -> FieldWidth {
        [FieldWidth::Two, FieldWidth::Four]
            .into_iter()
            .find(|width| most <= width.most() as u64)
            .unwrap_or(FieldWidth::Eight)
    }

    /// Its bytes.
    pub fn bytes(self) -> usize {
        match self {
            FieldWidth::Two => 2,
            FieldWidth::Four => 4,
            FieldWidth::Eight => 8,
        }
    }

    /// The SQL type and its binary output function.
    fn sql(self) -> (&'static str, &'static str) {
        match self {
            FieldWidth::Two => ("int2", "pg_catalog.int2send"),
            FieldWidth::Four => ("int4", "pg_catalog.int4send"),
            FieldWidth::Eight => ("int8", "pg_catalog.int8send"),
        }
    }

    /// Its largest value (a signed integer of its bytes).
    fn most(self) -> i64 {
        i64::MAX >> (64 - 8 * self.bytes())
    }
}

/// How a level's children are packed ([`packed`]): the split's index, the child's index and
/// its rows each in the narrowest integer the level's splits allow, then the hash total
/// modulo 2⁶⁴ in eight bytes, big-endian. A level of a few thousand small splits packs a
/// child in 14 bytes (2 + 2 + 2 + 8; 16 for a uuid's row digests, whose child indexes take
/// four), a first level of a large table in 18, where one layout for every level took 28.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Packing {
    /// The split's index.
    pub split: FieldWidth,
    /// The child's index in its split.
    pub child: FieldWidth,
    /// The child's rows.
    pub rows: FieldWidth,
}

/// A child's rows are packed in a width holding this many times its split's rows (a side
/// read in `READ COMMITTED` may gain rows between levels); a count beyond the width is
/// written as its largest value, which only sizes the next split (the hash still tells the
/// sets apart).
pub const ROWS_HEADROOM: u64 = 8;

impl Packing {
    /// The narrowest packing for the children of `splits`.
    pub fn for_splits(splits: &[Split]) -> Packing {
        let most_children = splits.iter().map(Split::children).max().unwrap_or(1);
        let most_rows = splits.iter().map(|split| split.rows).max().unwrap_or(u64::MAX);
        Packing {
            split: FieldWidth::holding(splits.len().saturating_sub(1) as u64),
            child: FieldWidth::holding(most_children.saturating_sub(1)),
            rows: FieldWidth::holding(most_rows.saturating_mul(ROWS_HEADROOM)),
        }
    }

    /// The bytes of one child.
    pub fn child_bytes(self) -> usize {
        self.split.bytes() + self.child.bytes() + self.rows.bytes() + 8
    }
}

/// A level's answer packed into one `bytea` (NULL when no child holds a row): the children of
/// `children`, a `SELECT` of split index, child index, rows (`bigint`s) and the `numeric` sum
/// of the rows' [`ROW_DIGEST`]s, each as [`Packing::child_bytes`] bytes, the sum wrapped to
/// 64 bits. Rows come back in binary: 14 to 28 bytes a child, against about 65 as a row of
/// four columns with the sum as text. The wrapped sum is as strong as the exact one: two sets
/// of rows whose digests sum alike modulo 2⁶⁴ are still a 64-bit coincidence.
pub fn packed(children: &str, packing: Packing) -> String {
    const MODULUS: &str = "18446744073709551616::numeric";
    let field = |width: FieldWidth, value: &str| {
        let (sql_type, send) = width.sql();
        format!("{send}({value}::{sql_type})")
    };
    format!(
        "SELECT pg_catalog.string_agg({split} || {child} || {rows} || pg_catalog.int8send((wrapped - CASE WHEN wrapped >= 9223372036854775808::numeric \
         THEN {MODULUS} ELSE 0 END)::bigint), ''::bytea) \
         FROM (SELECT split, child, rows, ((total % {MODULUS}) + {MODULUS}) % {MODULUS} AS wrapped \
         FROM ({children}) AS children (split, child, rows, total)) AS wrapped_children",
        split = field(packing.split, "split"),
        child = field(packing.child, "child"),
        rows = field(packing.rows, &format!("LEAST(rows, {})", packing.rows.most())),
    )
}

/// The bytes of one sketch cell in a side's sketch ([`SegmentQuery::sketch_sql`]): its index and rows (four bytes each), its
/// positions' and hashes' sums (eight each) and its checks' (four), big-endian.
pub const CELL_BYTES: usize = 28;

/// The cells of a side's sketch; `None` when its length is not a whole
/// number of cells, or a cell's index is negative.
pub fn unpack_cells(bytes: &[u8]) -> Option<Vec<SketchCell>> {
    if !bytes.len().is_multiple_of(CELL_BYTES) {
        return None;
    }
    bytes
        .chunks_exact(CELL_BYTES)
        .map(|cell| {
            let word = |at: usize| u32::from_be_bytes([cell[at], cell[at + 1], cell[at + 2], cell[at + 3]]);
            let long = |at: usize| (u64::from(word(at)) << 32) | u64::from(word(at + 4));
            Some(SketchCell {
                index: u32::try_from(word(0) as i32).ok()?,
                rows: i64::from(word(4) as i32),
                positions: long(8),
                hashes: long(16),
                checks: word(24),
            })
        })
        .collect()
}

/// The children of a level answer packed as `packing` says ([`packed`]); `None` when its
/// length is not a whole number of children.
pub fn unpack_children(bytes: &[u8], packing: Packing) -> Option<Vec<ChildDigest>> {
    let child_bytes = packing.child_bytes();
    if !bytes.len().is_multiple_of(child_bytes) {
        return None;
    }
    // Big-endian, sign-extended from the field's width (the values are never negative).
    let int = |bytes: &[u8]| -> i64 {
        let first = bytes.first().map_or(0, |byte| i64::from(*byte as i8));
        bytes[1..].iter().fold(first, |value, byte| (value << 8) | i64::from(*byte))
    };
    let (split_end, child_end) = (packing.split.bytes(), packing.split.bytes() + packing.child.bytes());
    let rows_end = child_end + packing.rows.bytes();
    Some(
        bytes
            .chunks_exact(child_bytes)
            .map(|child| ChildDigest {
                split: usize::try_from(int(&child[..split_end])).unwrap_or(usize::MAX),
                child: u64::try_from(int(&child[split_end..child_end])).unwrap_or(u64::MAX),
                digest: Digest {
                    rows: u64::try_from(int(&child[child_end..rows_end])).unwrap_or(0),
                    hash: int(&child[rows_end..]) as u64,
                },
            })
            .collect(),
    )
}

/// A side the search can ask: something that answers a [`SegmentQuery`]'s overview and
/// levels for its rows (see [`crate::compare::CompareSide`], whose sides all are one).
pub trait HashSide {
    /// Its failure.
    type Error: Send;

    /// The overview of the side's rows ([`SegmentQuery::overview`] on a database).
    fn overview(&mut self, check_duplicates: bool) -> Result<Result<Option<Overview>, KeysNotUsable>, Self::Error>;

    /// What the side holds in every non-empty child of `splits` ([`SegmentQuery::level`] on a
    /// database).
    fn level(&mut self, splits: &[Split]) -> Result<Vec<ChildDigest>, Self::Error>;

    /// The side's segment queries, when it has some: through them the search makes both
    /// sides' text positions skip the keys' common prefix (see [`common_prefix`]). `None`
    /// (the default): positions skip nothing, on either side.
    fn segment_query(&self) -> Option<&SegmentQuery> {
        None
    }

    /// Positions inside `span` that cut the side's rows into about `count` pieces of equal
    /// row counts ([`SegmentQuery::split_points`] on a database), for the first level's splits
    /// ([`Search::split_first_level_at`]). Empty (the default): the first level splits the
    /// span into children of equal width.
    fn split_points(&mut self, span: Segment, count: u64) -> Result<Vec<i64>, Self::Error> {
        let _ = (span, count);
        Ok(Vec::new())
    }

    /// Whether the side answers [`HashSide::sketch`] (false, the default: the search starts
    /// with the first level).
    fn sketches(&self) -> bool {
        false
    }

    /// The side's sketch of `shape` over all its rows, its non-empty cells
    /// ([`SegmentQuery::sketch`] on a database). Asked only when both sides
    /// [`HashSide::sketches`]; the default answers an empty sketch, which the search then
    /// fails to prove and goes on from its first level.
    fn sketch(&mut self, shape: SketchShape) -> Result<Vec<SketchCell>, Self::Error> {
        let _ = shape;
        Ok(Vec::new())
    }
}

/// Makes both sides' text positions skip the common prefix of the lowest and highest key of
/// both sides (every compared key starts with it) and repositions their overviews' spans: the
/// 60 bits of a position then cover the part of the keys that varies. Nothing changes unless
/// both sides have segment queries over text keys.
fn frame_text_keys(
    source: Option<&SegmentQuery>,
    target: Option<&SegmentQuery>,
    overviews: [&mut Option<Overview>; 2],
) {
    let (Some(source), Some(target)) = (source, target) else {
        return;
    };
    let bytes: Vec<[Vec<u8>; 2]> = [source, target]
        .into_iter()
        .zip(&overviews)
        .filter(|(_, overview)| overview.is_some())
        .filter_map(|(query, _)| query.key_bytes())
        .collect();
    let (Some(lowest), Some(highest)) =
        (bytes.iter().map(|[low, _]| low).min(), bytes.iter().map(|[_, high]| high).max())
    else {
        return;
    };
    let prefix = common_prefix(lowest, highest);
    for (query, overview) in [source, target].into_iter().zip(overviews) {
        query.skip_prefix(prefix);
        if let (Some(overview), Some([low, high])) = (overview.as_mut(), query.key_bytes()) {
            overview.first = query.text_position(&low);
            overview.last = query.text_position(&high);
        }
    }
}

/// Where the search is, for progress.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Both sides compute their overview.
    Overview,
    /// Both sides hash the children of `splits` splits (levels count from 1).
    Level {
        /// The level.
        level: u32,
        /// Splits hashed at it.
        splits: usize,
    },
    /// Both sides sum their rows into a sketch of `cells` cells, before the first level.
    Sketch {
        /// Cells in the sketch.
        cells: u32,
    },
    /// Both sides read their digests at the `positions` positions the sketch named, to
    /// prove every other row equal.
    Settle {
        /// Positions read.
        positions: usize,
    },
}

/// What the hashes decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SegmentOutcome {
    /// Rows outside `leaves` are proven equal (`matched` on each side); every difference is
    /// in `leaves` (none when empty), which are streamed.
    Searched {
        /// Rows proven equal by their hashes.
        matched: u64,
        /// The segments left to stream.
        leaves: Vec<Segment>,
        /// Levels hashed after the overview.
        levels: u32,
    },
    /// The hashes cannot decide (a NULL or duplicate key, a span too wide): stream it all.
    StreamAll(String),
}

/// Runs the segment search over both sides, each side's statement on its own thread, and
/// says where the differences are. `phase` hears each step before it runs.
pub fn search<S, T, E>(
    source: (&mut S, bool),
    target: (&mut T, bool),
    settings: SearchSettings,
    phase: &mut dyn FnMut(Phase),
) -> Result<SegmentOutcome, E>
where
    S: HashSide<Error = E> + Send,
    T: HashSide<Error = E> + Send,
    E: Send,
{
    let (source_side, source_duplicates) = source;
    let (target_side, target_duplicates) = target;
    phase(Phase::Overview);
    let (source_overview, target_overview) =
        concurrently(|| source_side.overview(source_duplicates), || target_side.overview(target_duplicates));
    let (mut source_overview, mut target_overview) = match (source_overview?, target_overview?) {
        (Ok(source), Ok(target)) => (source, target),
        (Err(why), _) => return Ok(SegmentOutcome::StreamAll(format!("on the source, {why}"))),
        (_, Err(why)) => return Ok(SegmentOutcome::StreamAll(format!("on the target, {why}"))),
    };
    frame_text_keys(
        source_side.segment_query(),
        target_side.segment_query(),
        [&mut source_overview, &mut target_overview],
    );
    let first = [&source_overview, &target_overview].into_iter().flatten().map(|overview| overview.first).min();
    let last = [&source_overview, &target_overview].into_iter().flatten().map(|overview| overview.last).max();
    if let (Some(first), Some(last)) = (first, last)
        && (Segment { first, last }).positions() > i64::MAX as u64
    {
        return Ok(SegmentOutcome::StreamAll("the keys span more than 2^63 positions".to_owned()));
    }
    let mut search = Search::new(settings, source_overview, target_overview);
    // The sketch first: when it settles the search, the first level (and a text key's
    // sample for its split points) is never read.
    if let Some(shape) = search.sketch_shape() {
        if source_side.sketches() && target_side.sketches() {
            settle_by_sketch(&mut search, (&mut *source_side, &mut *target_side), shape, phase)?;
        }
        search.sketch_tried();
    }
    if let Some(first) = search.first_level() {
        search.split_first_level_at(&source_side.split_points(first.segment, first.children())?);
    }
    loop {
        match search.step() {
            Step::Done => {
                return Ok(SegmentOutcome::Searched {
                    matched: search.matched(),
                    leaves: Vec::new(),
                    levels: search.level(),
                });
            }
            Step::Stream(leaves) => {
                return Ok(SegmentOutcome::Searched {
                    matched: search.matched(),
                    leaves: leaves.to_vec(),
                    levels: search.level(),
                });
            }
            Step::Hash(splits) => {
                let splits = splits.to_vec();
                phase(Phase::Level { level: search.level() + 1, splits: splits.len() });
                let (source_digests, target_digests) =
                    concurrently(|| source_side.level(&splits), || target_side.level(&splits));
                let (source_digests, target_digests) = (source_digests?, target_digests?);
                if let Err(unknown) = search.record(source_digests, target_digests) {
                    return Ok(SegmentOutcome::StreamAll(unknown.to_string()));
                }
            }
        }
    }
}

/// The sketch step of [`search`]: both sides' sketches of `shape`, and when they peel, both
/// sides' digests at the positions they name, which end the search there when they prove
/// the rest equal ([`Search::settle_at`]). Otherwise nothing changes.
fn settle_by_sketch<S, T, E>(
    search: &mut Search,
    (source_side, target_side): (&mut S, &mut T),
    shape: SketchShape,
    phase: &mut dyn FnMut(Phase),
) -> Result<(), E>
where
    S: HashSide<Error = E> + Send,
    T: HashSide<Error = E> + Send,
    E: Send,
{
    phase(Phase::Sketch { cells: shape.cells() });
    let (source_cells, target_cells) = concurrently(|| source_side.sketch(shape), || target_side.sketch(shape));
    let (source_cells, target_cells) = (source_cells?, target_cells?);
    let sketches = Sketch::from_cells(shape, &source_cells)
        .and_then(|source| Sketch::from_cells(shape, &target_cells).map(|target| (source, target)));
    let positions = match sketches {
        Ok((source, target)) => search.sketched_positions(source, &target),
        Err(unknown) => {
            tracing::debug!(%unknown, "a side's sketch is malformed: the search goes on");
            None
        }
    };
    let Some(positions) = positions else {
        tracing::debug!(cells = shape.cells(), "the sketch did not peel: the search goes on");
        return Ok(());
    };
    phase(Phase::Settle { positions: positions.len() });
    let proof = Search::position_splits(&positions);
    let (source_digests, target_digests) = concurrently(|| source_side.level(&proof), || target_side.level(&proof));
    let (source_digests, target_digests) = (source_digests?, target_digests?);
    if !search.settle_at(&positions, &source_digests, &target_digests) {
        tracing::debug!(positions = positions.len(), "the sketch's positions were not proven: the search goes on");
    }
    Ok(())
}

/// Runs `source` on a scoped thread (with this thread's log subscriber) and `target` on this
/// one, and returns both answers: one statement per side at the same time.
pub fn concurrently<A: Send, B>(source: impl FnOnce() -> A + Send, target: impl FnOnce() -> B) -> (A, B) {
    std::thread::scope(|scope| {
        let dispatch = tracing::dispatcher::get_default(Clone::clone);
        let source = scope.spawn(move || tracing::dispatcher::with_default(&dispatch, source));
        let target = target();
        match source.join() {
            Ok(source) => (source, target),
            Err(panic) => std::panic::resume_unwind(panic),
        }
    })
}

/// Keys a full stream would stop on, which the hashes would not see.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum KeysNotUsable {
    /// A NULL key.
    #[error("a key is NULL")]
    NullKey,
    /// A key appears twice.
    #[error("a key appears more than once")]
    DuplicateKey,
}

/// Whether the server can hash rows ([`MIN_SERVER_VERSION`]).
pub fn server_supports_segments(client: &mut Client, role: &str) -> Result<bool, Error> {
    let row = client
        .query_one("SELECT pg_catalog.current_setting('server_version_num')::int", &[])
        .map_err(Error::query(role, "reading the server version"))?;
    let version: i32 = row.try_get(0).map_err(Error::query(role, "reading the server version"))?;
    Ok(version >= MIN_SERVER_VERSION)
}

/// Whether `column` of `table` has a unique, valid, non-partial index of its own (a primary
/// key or a unique constraint on it alone): then its keys cannot repeat.
pub fn has_unique_key(client: &mut Client, role: &str, table: &TableName, column: &str) -> Result<bool, Error> {
    let row = client
        .query_one(
            "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_index i \
             JOIN pg_catalog.pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0] \
             WHERE i.indrelid = $1::text::regclass AND i.indisunique AND i.indisvalid \
             AND i.indnkeyatts = 1 AND i.indpred IS NULL AND i.indexprs IS NULL AND a.attname = $2)",
            &[&table.quoted(), &column],
        )
        .map_err(Error::query(role, "reading the key's indexes"))?;
    row.try_get(0).map_err(Error::query(role, "reading the key's indexes"))
}

/// Whether `table` has a valid unique index (no predicate, no expression) whose key columns
/// are all among `columns`: then the rows' `columns` are distinct (a composite key's
/// [`has_unique_key`]; NULL parts are found by the overview).
pub fn has_unique_key_columns(
    client: &mut Client,
    role: &str,
    table: &TableName,
    columns: &[String],
) -> Result<bool, Error> {
    let row = client
        .query_one(
            "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_index i \
             WHERE i.indrelid = $1::text::regclass AND i.indisunique AND i.indisvalid \
             AND i.indpred IS NULL AND i.indexprs IS NULL \
             AND NOT EXISTS (SELECT 1 FROM pg_catalog.generate_series(0, i.indnkeyatts - 1) AS n \
             JOIN pg_catalog.pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[n] \
             WHERE a.attname <> ALL ($2::text[])))",
            &[&table.quoted(), &columns],
        )
        .map_err(Error::query(role, "reading the key's indexes"))?;
    row.try_get(0).map_err(Error::query(role, "reading the key's indexes"))
}

/// The bytes of each answer of the link probe ([`probe_link`]).
pub const PROBE_BYTES: usize = 192 * 1024;

/// What `auto` needs to know of a side's link ([`datadiff_diff_core::segment::streams`]):
/// [`Link::Local`] when every host `config` may connect to is a Unix-domain socket or a
/// loopback address (`localhost`, 127.0.0.0/8, `::1`), else a probe ([`probe_link`]).
pub fn link(client: &mut Client, config: &postgres::Config, role: &str) -> Result<Link, Error> {
    if local_only(config) {
        return Ok(Link::Local);
    }
    probe_link(client, role).map(Link::Measured)
}

/// Whether every host of `config` is on this machine: a Unix-domain socket, `localhost` or
/// a loopback address (and every `hostaddr` a loopback address).
pub fn local_only(config: &postgres::Config) -> bool {
    let hosts = config.get_hosts();
    let local_host = |host: &postgres::config::Host| match host {
        postgres::config::Host::Unix(_) => true,
        postgres::config::Host::Tcp(name) => {
            name.eq_ignore_ascii_case("localhost")
                || name.trim_matches(['[', ']']).parse::<std::net::IpAddr>().is_ok_and(|address| address.is_loopback())
        }
    };
    !hosts.is_empty()
        && hosts.iter().all(local_host)
        && config.get_hostaddrs().iter().all(std::net::IpAddr::is_loopback)
}

/// Measures how fast a server's answers reach this client: two answers of [`PROBE_BYTES`]
/// each, the second timed less a one-byte round trip (the first empties whatever burst a
/// shaping link allows). Bytes per second.
pub fn probe_link(client: &mut Client, role: &str) -> Result<f64, Error> {
    let timed = |client: &mut Client, bytes: usize| -> Result<Duration, Error> {
        let started = Instant::now();
        client
            .query_one("SELECT pg_catalog.repeat('x', $1)", &[&(bytes as i32)])
            .map_err(Error::query(role, "probing the link"))?;
        Ok(started.elapsed())
    };
    timed(client, PROBE_BYTES)?;
    let round_trip = timed(client, 1)?;
    let answer = timed(client, PROBE_BYTES)?;
    let transfer = answer.saturating_sub(round_trip).max(Duration::from_micros(1));
    Ok(PROBE_BYTES as f64 / transfer.as_secs_f64())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_key_ranges_hold_every_key_of_their_positions() {
        let keys: Vec<&[u8]> = vec![
            b"customer-000000000001",
            b"customer-000000000002",
            b"customer-000000099999",
            b"customer-000000100000",
            b"customer-0000001",
            b"customer-00000010",
            "customer-0000\u{e9}t\u{e9}".as_bytes(),
            "customer-0000\u{1F600}".as_bytes(),
            b"customer-0000",
        ];
        let lowest = keys.iter().min().unwrap();
        let highest = keys.iter().max().unwrap();
        let prefix = common_prefix(lowest, highest);
        assert_eq!(prefix, b"customer-0000");
        let positions: Vec<i64> = keys.iter().map(|key| text_position_of(key, prefix.len())).collect();
        // Every segment around every key's position, and a few that cut between them.
        let mut segments = Vec::new();
        for &position in &positions {
            for (below, above) in [(0, 0), (1, 0), (0, 1), (5, 7), (1 << 40, 1 << 30)] {
                segments
                    .push(Segment { first: (position - below).max(0), last: (position + above).min(POSITION_END - 1) });
            }
        }
        segments.push(Segment { first: 0, last: POSITION_END - 1 });
        for segment in segments {
            let (low, below) = text_key_range(prefix, segment);
            for (key, position) in keys.iter().zip(&positions) {
                if (segment.first..=segment.last).contains(position) {
                    assert!(*key >= low.as_bytes(), "{segment:?}: {:?} below {low:?}", String::from_utf8_lossy(key));
                    if let Some(below) = &below {
                        assert!(
                            *key < below.as_bytes(),
                            "{segment:?}: {:?} not below {below:?}",
                            String::from_utf8_lossy(key)
                        );
                    }
                }
            }
        }
        // The bounds are the floors themselves where those are valid UTF-8 …
        let at = |key: &[u8]| text_position_of(key, prefix.len());
        let segment = Segment { first: at(b"customer-0000001"), last: at(b"customer-00000010") };
        let (low, below) = text_key_range(prefix, segment);
        assert_eq!(low, "customer-0000001");
        // … and the one past a position whose last bytes are zero stops at them, exactly.
        assert_eq!(below.as_deref(), Some("customer-00000010\u{1}"));
        assert_eq!(successor("a\u{10FFFF}"), Some("b".to_owned()));
        assert_eq!(successor("\u{D7FF}"), Some("\u{E000}".to_owned()));
        assert_eq!(successor(""), None);
    }

    proptest::proptest! {
        /// The attack on the key range: whatever the keys (any characters but NUL, control
        /// bytes and multi-byte ones included, sharing a prefix that may end inside a
        /// character) and whatever segment, a key whose position lies in the segment lies
        /// inside its range. A key the range dropped would be hashed in no segment on either
        /// side, and a difference in it would PASS.
        #[test]
        fn a_key_range_never_drops_a_key_of_its_segment(
            shared in "[a\u{1}\u{7f}\u{e9}\u{ff}\u{800}\u{1F600}-]{0,6}",
            tails in proptest::collection::vec("[^\u{0}]{0,12}", 1..12),
            cuts in proptest::collection::vec((0i64..1 << 60, 0i64..1 << 40), 1..8),
        ) {
            let keys: Vec<String> = tails.iter().map(|tail| format!("{shared}{tail}")).collect();
            let lowest = keys.iter().map(String::as_bytes).min().unwrap();
            let highest = keys.iter().map(String::as_bytes).max().unwrap();
            let prefix = common_prefix(lowest, highest);
            let mut segments: Vec<Segment> = cuts
                .iter()
                .map(|&(first, width)| Segment { first, last: (first + width).min(POSITION_END - 1) })
                .collect();
            for key in &keys {
                let at = text_position_of(key.as_bytes(), prefix.len());
                segments.push(Segment { first: at, last: at });
                segments.push(Segment { first: (at - 1).max(0), last: at });
            }
            for segment in segments {
                let (low, below, exact) = text_key_range_exactly(prefix, segment);
                for key in &keys {
                    let at = text_position_of(key.as_bytes(), prefix.len());
                    let in_range = key.as_bytes() >= low.as_bytes()
                        && below.as_ref().is_none_or(|below| key.as_bytes() < below.as_bytes());
                    if (segment.first..=segment.last).contains(&at) {
                        proptest::prop_assert!(key.as_bytes() >= low.as_bytes(), "{segment:?}: {key:?} below {low:?}");
                        if let Some(below) = &below {
                            proptest::prop_assert!(key.as_bytes() < below.as_bytes(), "{segment:?}: {key:?} not below {below:?}");
                        }
                    } else if exact {
                        // An exact range (a leaf's keys selected by it alone) holds no other key.
                        proptest::prop_assert!(!in_range, "{segment:?}: {key:?} at {at} inside the exact range {low:?}..{below:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn text_positions_skip_the_prefix_and_pad_short_keys() {
        assert_eq!(text_position_of(b"", 0), 0);
        assert_eq!(text_position_of(b"abc", 3), 0);
        assert_eq!(text_position_of(b"xa", 1), 0x61 << 52);
        assert_eq!(text_position_of(b"x\x01\x02\x03\x04\x05\x06\x07\xf8", 1), 0x0010_2030_4050_607f);
        assert_eq!(common_prefix(b"abc", b"abd"), b"ab");
        assert_eq!(common_prefix(b"", b"abd"), b"");
        assert!(Position::Text.sql_after("k", 13).contains("textsend(k::text), 14, 8)"));
    }

    #[test]
    fn uuid_positions_map_to_the_uuid_range_they_cover() {
        let segment = Segment { first: 0x0012_3456_789a_bcde, last: 0x0012_3456_789a_bcdf };
        let (low, high) = Position::Uuid.bounds(segment);
        assert_eq!(low, "'01234567-89ab-cde0-0000-000000000000'::uuid");
        assert_eq!(high, "'01234567-89ab-cdff-ffff-ffffffffffff'::uuid");
    }

    fn column(name: &str, type_name: &str, family: Family) -> ColumnType {
        ColumnType { name: name.to_owned(), type_name: type_name.to_owned(), family }
    }

    #[test]
    fn only_pairs_whose_canonical_value_sql_computes_exactly_are_hashed() {
        let (a, b) = ("a", "b");
        let pair = |source: (&str, Family, Decoder), target: (&str, Family, Decoder)| {
            hash_pair((&column(a, source.0, source.1), source.2), (&column(b, target.0, target.1), target.2))
        };
        let int = |type_name| (type_name, Family::Integer, Decoder::IntSameWidth);
        assert_eq!(pair(int("integer"), int("integer")), Some(("\"a\"".to_owned(), "\"b\"".to_owned())));
        // A bigint on either side: the high half beside the value, on both.
        assert_eq!(
            pair(("integer", Family::Integer, Decoder::Int), ("bigint", Family::Integer, Decoder::Int)),
            Some(("\"a\", ((\"a\")::bigint >> 32)".to_owned(), "\"b\", ((\"b\")::bigint >> 32)".to_owned()))
        );
        let text = |family, decoder| ("text", family, decoder);
        assert_eq!(
            pair(text(Family::Char, Decoder::PaddedChar), text(Family::Text, Decoder::PaddedChar))
                .map(|(source, _)| source),
            Some("(pg_catalog.rtrim(\"a\"::text, ' ') COLLATE \"C\")".to_owned())
        );
        // NULLIF is syntax, not a pg_catalog function.
        assert_eq!(
            pair(text(Family::Text, Decoder::TextEmptyAsNull), text(Family::Text, Decoder::TextEmptyAsNull))
                .map(|(source, _)| source),
            Some("(NULLIF(\"a\"::text, '') COLLATE \"C\")".to_owned())
        );
        // Timestamps by their microseconds, whichever kind.
        let naive = ("timestamp without time zone", Family::Timestamp, Decoder::Timestamp);
        let zoned = ("timestamp with time zone", Family::TimestampTz, Decoder::Timestamp);
        assert_eq!(
            pair(zoned, naive),
            Some(("pg_catalog.timestamptz_send(\"a\")".to_owned(), "pg_catalog.timestamp_send(\"b\")".to_owned()))
        );
        // An exact number against a float: its guarded nearest float, and an empty marker on
        // the float's side.
        let numeric = ("numeric(12,2)", Family::Numeric { scale: Some(2) }, Decoder::NumericAsFloat);
        let double = ("double precision", Family::Float8, Decoder::Float);
        let (exact, float) = pair(numeric, double).unwrap();
        assert!(exact.contains("THEN (\"a\")::float8 END, CASE WHEN NOT"), "{exact}");
        assert_eq!(float, "\"b\", NULL::text");
        let uuid = ("uuid", Family::Uuid, Decoder::UuidAsText);
        assert_eq!(pair(uuid, ("text", Family::Text, Decoder::TextAsUuid)), None);
        let date = ("date", Family::Date, Decoder::DateAsTimestamp);
        assert_eq!(pair(date, naive), None);
        let real = ("real", Family::Float4, Decoder::FloatAsReal);
        assert_eq!(pair(real, ("double precision", Family::Float8, Decoder::FloatAsReal)), None);
    }

    #[test]
    fn row_digests_mix_the_whole_row_hash_with_the_seed() {
        assert!(ROW_DIGEST.ends_with(&format!(", {HASH_SEED}))")), "{ROW_DIGEST}");
        let query = SegmentQuery::new("source", &TableName::new("public", "t"), "id", Position::Integer, &[], None);
        let sql = query.overview_sql(false);
        assert!(sql.contains("hash_record_extended(ROW(\"id\", ((\"id\")::bigint >> 32)), 25700) AS h"), "{sql}");
        assert!(sql.contains(&format!("sum({ROW_DIGEST})")), "{sql}");
        assert!(sql.contains("OFFSET 0) AS hashed"), "{sql}");
    }

    #[test]
    fn packed_children_unpack_to_their_fields_and_a_torn_answer_is_refused() {
        let wide = Packing { split: FieldWidth::Four, child: FieldWidth::Eight, rows: FieldWidth::Eight };
        let mut bytes = Vec::new();
        for (split, child, rows, hash) in [(0i32, 7i64, 3i64, -1i64), (2, 1 << 40, 1, i64::MIN)] {
            bytes.extend_from_slice(&split.to_be_bytes());
            bytes.extend_from_slice(&child.to_be_bytes());
            bytes.extend_from_slice(&rows.to_be_bytes());
            bytes.extend_from_slice(&hash.to_be_bytes());
        }
        assert_eq!(bytes.len(), 2 * 28);
        let children = unpack_children(&bytes, wide).unwrap();
        assert_eq!(
            children,
            vec![
                ChildDigest { split: 0, child: 7, digest: Digest { rows: 3, hash: u64::MAX } },
                ChildDigest { split: 2, child: 1 << 40, digest: Digest { rows: 1, hash: 1 << 63 } },
            ]
        );
        assert_eq!(unpack_children(&bytes[..bytes.len() - 1], wide), None);
        assert_eq!(unpack_children(&[], wide), Some(Vec::new()));
        // The narrowest: 2 + 4 + 2 + 8 bytes, the largest values of each width.
        let narrow = Packing { split: FieldWidth::Two, child: FieldWidth::Four, rows: FieldWidth::Two };
        let mut bytes = Vec::new();
        bytes.extend_from_slice(&i16::MAX.to_be_bytes());
        bytes.extend_from_slice(&i32::MAX.to_be_bytes());
        bytes.extend_from_slice(&i16::MAX.to_be_bytes());
        bytes.extend_from_slice(&0x0123_4567_89ab_cdefi64.to_be_bytes());
        let children = unpack_children(&bytes, narrow).unwrap();
        let digest = Digest { rows: 32_767, hash: 0x0123_4567_89ab_cdef };
        assert_eq!(children, vec![ChildDigest { split: 32_767, child: i32::MAX as u64, digest }]);
        let query = SegmentQuery::new("source", &TableName::new("public", "t"), "id", Position::Integer, &[], None);
        let split = Split::new(Segment { first: 1, last: 100 }, 4).holding(100);
        let sql = query.single_split_sql(&split, Packing::for_splits(&[split]));
        assert!(sql.starts_with("SELECT pg_catalog.string_agg(pg_catalog.int2send(split::int2) || pg_catalog.int2send(child::int2) || pg_catalog.int2send(LEAST(rows, 32767)::int2)"), "{sql}");
        assert!(sql.contains("% 18446744073709551616::numeric"), "{sql}");
    }

    #[test]
    fn each_field_is_packed_in_the_narrowest_width_its_level_allows() {
        let split = |last: i64, fanout: u64, rows: u64| Split::new(Segment { first: 0, last }, fanout).holding(rows);
        // A first level of 100 M rows: one split, 48,829 children.
        let first = Packing::for_splits(&[split(99_999_999, 48_829, 100_000_000)]);
        assert_eq!(first, Packing { split: FieldWidth::Two, child: FieldWidth::Four, rows: FieldWidth::Four });
        assert_eq!(first.child_bytes(), 18);
        // Ten thousand regions of a later level: 14 bytes a child; their row digests with a
        // uuid's positions: 16.
        let regions: Vec<Split> = (0..10_000).map(|index| split(index * 100 + 99, 6, 100)).collect();
        assert_eq!(Packing::for_splits(&regions).child_bytes(), 14);
        let uuid_rows: Vec<Split> = (0..10_000)
            .map(|index| {
                Split::row_digests(Segment { first: index << 40, last: (index << 40) + (1 << 39) }).holding(16)
            })
            .collect();
        assert_eq!(Packing::for_splits(&uuid_rows).child_bytes(), 16);
        // Rows not known, or beyond 2^28 (8 × headroom past 2^31): eight bytes.
        assert_eq!(Packing::for_splits(&[Split::new(Segment { first: 0, last: 9 }, 2)]).rows, FieldWidth::Eight);
        assert_eq!(Packing::for_splits(&[split(9, 2, 1 << 28)]).rows, FieldWidth::Eight);
        assert_eq!(Packing::for_splits(&[split(9, 2, 4095)]).rows, FieldWidth::Two);
        assert_eq!(Packing::for_splits(&[split(9, 2, 4096)]).rows, FieldWidth::Four);
        // 32,769 splits need four bytes for the last one's index.
        let many: Vec<Split> = (0..32_769).map(|index| split(index, 1, 1)).collect();
        assert_eq!(Packing::for_splits(&many).split, FieldWidth::Four);
        assert_eq!(Packing::for_splits(&many[..32_768]).split, FieldWidth::Two);
        assert_eq!(FieldWidth::holding(u64::MAX), FieldWidth::Eight);
    }

    #[test]
    fn sockets_and_loopback_addresses_are_local_and_other_hosts_are_probed() {
        let config = |text: &str| text.parse::<postgres::Config>().unwrap();
        assert!(local_only(&config("host=/run/postgresql dbname=app")));
        assert!(local_only(&config("host=localhost,127.0.0.2 dbname=app")));
        assert!(local_only(&config("postgresql://app@[::1]:5433/app")));
        assert!(!local_only(&config("host=db.internal dbname=app")));
        assert!(!local_only(&config("host=localhost,10.0.0.7 dbname=app")));
        assert!(!local_only(&config("host=localhost hostaddr=10.0.0.7 dbname=app")));
    }

    #[test]
    fn leaves_become_one_predicate_of_key_ranges() {
        let query = SegmentQuery::new(
            "source",
            &TableName::new("public", "events"),
            "id",
            Position::Integer,
            &["\"note\"".to_owned()],
            Some("\"ts\" >= 1"),
        );
        let leaves = [Segment { first: -3, last: 7 }, Segment { first: 20, last: 20 }];
        assert_eq!(query.leaves_filter(&leaves), "(\"id\" BETWEEN -3 AND 7 OR \"id\" BETWEEN 20 AND 20)");
        assert!(query.overview_sql(false).contains("FROM \"public\".\"events\" WHERE \"ts\" >= 1 OFFSET 0"));
    }
}
