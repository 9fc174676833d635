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
//! non-negative `bigint` that orders as the uuid does), and a segment of positions is the
//! uuid range from `…0000` to `…ffff`, so its rows are found through the key's index.
//!
//! A text key's position ([`Position::Text`]) is the first 60 bits of its UTF-8 bytes,
//! zero-padded (the first eight bytes as 16 hex digits, of which 15 are read as a
//! non-negative `bigint`): non-decreasing in byte order, the `COLLATE "C"` order both streams
//! sort text keys by, whatever the column's collation (the empty key is position 0). A
//! `char(n)` key is positioned by its right-trimmed text ([`Position::PaddedText`]), its
//! canonical form, so it meets a `text` replica's key; a uuid compared with text
//! ([`KeyDecoder::UuidAsText`]) is positioned by its lowercase hyphenated text (`uuid::text`,
//! what the merge compares). Both sides compute the same function of the same canonical key,
//! so a row falls in the same segment on both.
//!
//! A text segment's rows are selected by the position expression itself
//! (`position BETWEEN first AND last`), not by a key range: exact on both sides whatever the
//! column's collation, but not served by the key's index (a `key COLLATE "C" >= low` range
//! would be, only where the index's collation is `"C"`), so each level reads the table once
//! on each side. Measured once on one machine (PostgreSQL 15, 1 M rows of an md5 key and an
//! md5 value, warm cache): the whole table's digest took 0.76 s against 0.37 s for a `bigint`
//! key, and one narrow segment 0.38 s (a sequential scan) against 1 ms through an integer
//! key's index. Keys that share their first 7.5 bytes share a position, and a range of
//! equal positions cannot be split further: it becomes one larger leaf, streamed and compared
//! exactly — the answer stays exact, only the saving shrinks (keys like `customer-000123`
//! all fall into one leaf). Skipping the common prefix of the lowest and highest key is not
//! done yet.
//!
//! A composite key ([`plan_composite_hashing`], [`SegmentQuery::with_keys`]) is positioned by
//! its first column (an integer, a uuid or text): a segment holds every row whose first column lies
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

use std::time::{Duration, Instant};

use datadiff_diff_core::{
    plan::quoted_ident,
    segment::{ChildDigest, Digest, Link, Overview, Search, SearchSettings, Segment, Split, Step},
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
}

impl Position {
    /// The position of a key decoded by `key`, when it has one. A uuid compared with text
    /// ([`KeyDecoder::UuidAsText`]) is positioned as its text (`uuid::text`, its lowercase
    /// hyphenated form, which is what the merge compares), like the text on the other side.
    pub fn of(key: KeyDecoder) -> Option<Position> {
        match key {
            KeyDecoder::Int => Some(Position::Integer),
            KeyDecoder::Uuid => Some(Position::Uuid),
            KeyDecoder::Text | KeyDecoder::UuidAsText => Some(Position::Text),
            KeyDecoder::PaddedChar => Some(Position::PaddedText),
        }
    }

    /// The key in its canonical form, as hashed in the row (`key` quoted).
    fn key_field(self, key: &str) -> String {
        match self {
            Position::Integer => integer_fields(key),
            Position::Uuid => key.to_owned(),
            Position::Text => format!("({key}::text COLLATE \"C\")"),
            Position::PaddedText => format!("(pg_catalog.rtrim({key}::text, ' ') COLLATE \"C\")"),
        }
    }

    /// The SQL of the position of `key` (a quoted column or any SQL expression of the key's
    /// type): a non-negative `bigint`, non-decreasing in the key's order (bytewise for text).
    pub fn sql(self, key: &str) -> String {
        match self {
            Position::Integer => format!("{key}::bigint"),
            Position::Uuid => format!("('x' || pg_catalog.translate({key}::text, '-', ''))::bit(60)::bigint"),
            Position::Text => text_position(&format!("{key}::text")),
            Position::PaddedText => text_position(&format!("pg_catalog.rtrim({key}::text, ' ')")),
        }
    }

    /// What a segment's bounds compare: the key itself where its index orders it as its
    /// positions do (integers, uuids), else the position's expression (text: see the module
    /// docs).
    fn ranged(self, key: &str) -> String {
        match self {
            Position::Integer | Position::Uuid => key.to_owned(),
            Position::Text | Position::PaddedText => self.sql(key),
        }
    }

    /// The SQL type of [`Position::ranged`] (the bounds' type).
    fn ranged_type(self) -> &'static str {
        match self {
            Position::Uuid => "uuid",
            Position::Integer | Position::Text | Position::PaddedText => "bigint",
        }
    }

    /// The lowest and highest key of the positions `first..=last`, as SQL literals (of
    /// [`Position::ranged`]).
    fn bounds(self, segment: Segment) -> (String, String) {
        match self {
            Position::Integer | Position::Text | Position::PaddedText => {
                (segment.first.to_string(), segment.last.to_string())
            }
            Position::Uuid => (uuid_literal(segment.first, '0'), uuid_literal(segment.last, 'f')),
        }
    }
}

/// The position of the text `text` (an SQL expression): its first 60 bits in byte order —
/// the first eight bytes of its UTF-8 form, zero-padded, as 16 hex digits, of which the first
/// 15 are read as a non-negative `bigint`.
fn text_position(text: &str) -> String {
    format!(
        "('x' || pg_catalog.rpad(pg_catalog.encode(pg_catalog.substr(pg_catalog.convert_to({text}, 'UTF8'), 1, 8), \
         'hex'), 16, '0'))::bit(60)::bigint"
    )
}

/// The uuid whose first 60 bits are `position` and whose other 68 bits are all `fill`.
fn uuid_literal(position: i64, fill: char) -> String {
    let bits = position.clamp(0, (1i64 << 60) - 1);
    let hex = format!("{bits:015x}{}", fill.to_string().repeat(17));
    format!("'{}-{}-{}-{}-{}'::uuid", &hex[0..8], &hex[8..12], &hex[12..16], &hex[16..20], &hex[20..32])
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
    /// The key has no integer position (a key type no position is defined for): names the
    /// source's key column.
    #[error("the key {0} has no integer position (only integer, uuid and text keys are segmented)")]
    Key(String),
    /// A composite key whose first column has no integer position (names the key's columns,
    /// comma-separated): its segments are ranges of the first column.
    #[error(
        "the composite key ({0}) has no integer position: its first column must be an integer, uuid or text to be segmented"
    )]
    CompositeKey(String),
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
    let fields = |(column, decoder): (&str, KeyDecoder)| {
        let field = quoted_ident(column);
        match decoder {
            KeyDecoder::Int => integer_fields(&field),
            KeyDecoder::Uuid => field,
            KeyDecoder::PaddedChar => format!("(pg_catalog.rtrim({field}::text, ' ') COLLATE \"C\")"),
            // Text, and a uuid read as its text (`uuid::text` is its lowercase hyphenated form).
            _ => format!("({field}::text COLLATE \"C\")"),
        }
    };
    (fields(source), fields(target))
}

/// [`plan_hashing`] for a key of several columns, `(source column, source decoder, target
/// decoder)` each in key order, the target's own column names beside (`target_keys`): the
/// position is the first column's (an integer, a uuid or text, see [`Position::of`]), the
/// other key columns are hashed before the compared columns. A segment is then a range of the
/// first column, every row with that first column in it: equal digests still mean equal rows,
/// whole keys included. A first column with few distinct values makes few segments (a leaf
/// then holds every row of its first-column values, streamed and compared exactly).
pub fn plan_composite_hashing<'a>(
    keys: &[(&str, KeyDecoder, KeyDecoder)],
    target_keys: &[&str],
    columns: impl IntoIterator<Item = ((&'a ColumnType, Decoder), (&'a ColumnType, Decoder))>,
) -> Result<(SideHashing, SideHashing), Unhashable> {
    let names = || keys.iter().map(|(name, _, _)| *name).collect::<Vec<_>>().join(",");
    let Some(((first, source_first, target_first), rest)) = keys.split_first() else {
        return Err(Unhashable::CompositeKey(names()));
    };
    let (mut source, mut target) =
        plan_hashing((first, *source_first, *target_first), columns).map_err(|error| match error {
            Unhashable::Key(_) => Unhashable::CompositeKey(names()),
            other => other,
        })?;
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
    let (key_column, source_key, target_key) = key;
    let (Some(source_position), Some(target_position)) = (Position::of(source_key), Position::of(target_key)) else {
        return Err(Unhashable::Key(key_column.to_owned()));
    };
    let mut source = SideHashing { position: source_position, fields: Vec::new() };
    let mut target = SideHashing { position: target_position, fields: Vec::new() };
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
#[derive(Debug, Clone)]
pub struct SegmentQuery {
    role: String,
    table: TableName,
    /// The key column (a composite key's first column), quoted: the position's.
    key: String,
    /// A composite key's other columns, quoted (empty for a single-column key).
    other_keys: Vec<String>,
    position: Position,
    row_hash: String,
    filter: Option<String>,
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
            other_keys: Vec::new(),
            position,
            filter: filter.map(str::to_owned),
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

    /// The rows a query hashes, as a subquery named `hashed`: this side's rows where `condition`
    /// holds, each with `columns` and its row hash `h`. `OFFSET 0` keeps the server from
    /// merging it into the outer query, which would compute the row hash once per use in
    /// [`ROW_DIGEST`].
    fn rows(&self, columns: &str, condition: Option<&str>) -> String {
        let conditions: Vec<&str> = [condition, self.filter.as_deref()].into_iter().flatten().collect();
        let filter = match conditions.as_slice() {
            [] => String::new(),
            [only] => format!(" WHERE {only}"),
            [first, second] => format!(" WHERE ({first}) AND ({second})"),
            _ => unreachable!("at most two conditions"),
        };
        format!(
            "(SELECT {columns}, {hash} AS h FROM {table}{filter} OFFSET 0) AS hashed",
            hash = self.row_hash,
            table = self.table.quoted(),
        )
    }

    /// The overview's `SELECT`: first and last position, rows, digest sum, and whether every
    /// key is non-NULL and (when `check_duplicates`) distinct.
    pub fn overview_sql(&self, check_duplicates: bool) -> String {
        let distinct = match check_duplicates {
            true => "count(DISTINCT row_key) = count(*)",
            false => "true",
        };
        let position = self.position.sql(&self.key);
        if self.other_keys.is_empty() {
            return format!(
                "SELECT min(row_position), max(row_position), count(*), sum({ROW_DIGEST})::text, count(row_key) = count(*), \
                 {distinct} FROM {rows}",
                rows = self.rows(&format!("{key} AS row_key, {position} AS row_position", key = self.key), None),
            );
        }
        // A composite key: the row of its columns (a row with a NULL part is not NULL itself,
        // so NULL parts are counted apart).
        let keys: Vec<&str> =
            std::iter::once(self.key.as_str()).chain(self.other_keys.iter().map(String::as_str)).collect();
        let any_null: Vec<String> = keys.iter().map(|key| format!("{key} IS NULL")).collect();
        format!(
            "SELECT min(row_position), max(row_position), count(*), sum({ROW_DIGEST})::text, \
             count(*) FILTER (WHERE row_key_null) = 0, {distinct} FROM {rows}",
            rows = self.rows(
                &format!(
                    "ROW({keys}) AS row_key, ({any_null}) AS row_key_null, {position} AS row_position",
                    keys = keys.join(", "),
                    any_null = any_null.join(" OR "),
                ),
                None
            ),
        )
    }

    /// The rows' overview (`Ok(None)`: no row). [`KeysNotUsable`] when a key is NULL or,
    /// with `check_duplicates`, repeated.
    pub fn overview(
        &self,
        client: &mut Client,
        check_duplicates: bool,
    ) -> Result<Result<Option<Overview>, KeysNotUsable>, Error> {
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
        Ok(Ok(Some(Overview {
            first: row.try_get(0).map_err(read)?,
            last: row.try_get(1).map_err(read)?,
            rows: u64::try_from(rows).unwrap_or(0),
            hash: row.try_get(3).map_err(read)?,
        })))
    }

    /// A level's `SELECT` over several splits, bound: `$1` first positions, `$2` widths, `$3`
    /// lowest keys and `$4` highest keys (text arrays, ascending: splits are disjoint and in
    /// key order), `$5` and `$6` the lowest and highest key of all. One pass over the rows
    /// from `$5` to `$6`: `width_bucket` finds a row's split by binary search among the
    /// lowest keys, and only rows inside their split are hashed. (A join of the splits to the
    /// table leaves the plan to the server, which may scan the table once per split.)
    pub fn level_sql(&self) -> String {
        let key_type = self.position.ranged_type();
        let ranged = self.position.ranged(&self.key);
        let split = format!("pg_catalog.width_bucket({ranged}, $3::text[]::{key_type}[])");
        let rows = self.rows(
            &format!("{split} AS row_split, {position} AS row_position", position = self.position.sql(&self.key)),
            Some(&format!(
                "{ranged} BETWEEN $5::text::{key_type} AND $6::text::{key_type} \
                 AND {ranged} <= ($4::text[]::{key_type}[])[{split}]"
            )),
        );
        format!(
            "SELECT (row_split - 1)::bigint, (row_position - ($1::bigint[])[row_split]) / ($2::bigint[])[row_split], \
             count(*), sum({ROW_DIGEST})::text FROM {rows} GROUP BY 1, 2"
        )
    }

    /// The `SELECT` of a level with one split, written with literals so that the server
    /// plans it for the range it covers (a first level reads the whole table).
    pub fn single_split_sql(&self, split: &Split) -> String {
        let (low, high) = self.position.bounds(split.segment);
        let rows = self.rows(
            &format!("{position} AS row_position", position = self.position.sql(&self.key)),
            Some(&format!("{key} BETWEEN {low} AND {high}", key = self.position.ranged(&self.key))),
        );
        format!(
            "SELECT 0::bigint, (row_position - ({first})::bigint) / ({width})::bigint, count(*), sum({ROW_DIGEST})::text \
             FROM {rows} GROUP BY 2",
            first = split.segment.first,
            width = i64::try_from(split.width).unwrap_or(i64::MAX),
        )
    }

    /// What each side holds in every non-empty child of `splits`.
    pub fn level(&self, client: &mut Client, splits: &[Split]) -> Result<Vec<ChildDigest>, Error> {
        let rows = match splits {
            [split] => client.query(self.single_split_sql(split).as_str(), &[]),
            _ => {
                let firsts: Vec<i64> = splits.iter().map(|split| split.segment.first).collect();
                let widths: Vec<i64> =
                    splits.iter().map(|split| i64::try_from(split.width).unwrap_or(i64::MAX)).collect();
                let (lows, highs): (Vec<String>, Vec<String>) = splits
                    .iter()
                    .map(|split| {
                        let (low, high) = self.position.bounds(split.segment);
                        (unquote_literal(&low), unquote_literal(&high))
                    })
                    .unzip();
                let (Some(lowest), Some(highest)) = (lows.first(), highs.last()) else {
                    return Ok(Vec::new());
                };
                client.query(self.level_sql().as_str(), &[&firsts, &widths, &lows, &highs, lowest, highest])
            }
        }
        .map_err(Error::query(&self.role, "segment hashes"))?;
        rows.iter()
            .map(|row| {
                let read = |error| Error::query(&self.role, "segment hashes")(error);
                let split: i64 = row.try_get(0).map_err(read)?;
                let child: i64 = row.try_get(1).map_err(read)?;
                let rows: i64 = row.try_get(2).map_err(read)?;
                Ok(ChildDigest {
                    split: usize::try_from(split).unwrap_or(usize::MAX),
                    child: u64::try_from(child).unwrap_or(u64::MAX),
                    digest: Digest { rows: u64::try_from(rows).unwrap_or(0), hash: row.try_get(3).map_err(read)? },
                })
            })
            .collect()
    }

    /// The predicate keeping the rows of `leaves` (for the stream's `WHERE`, with literals:
    /// `COPY` binds nothing).
    pub fn leaves_filter(&self, leaves: &[Segment]) -> String {
        let ranges: Vec<String> = leaves
            .iter()
            .map(|leaf| {
                let (low, high) = self.position.bounds(*leaf);
                format!("{} BETWEEN {low} AND {high}", self.position.ranged(&self.key))
            })
            .collect();
        format!("({})", ranges.join(" OR "))
    }
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
    let (source_overview, target_overview) = match (source_overview?, target_overview?) {
        (Ok(source), Ok(target)) => (source, target),
        (Err(why), _) => return Ok(SegmentOutcome::StreamAll(format!("on the source, {why}"))),
        (_, Err(why)) => return Ok(SegmentOutcome::StreamAll(format!("on the target, {why}"))),
    };
    let first = [&source_overview, &target_overview].into_iter().flatten().map(|overview| overview.first).min();
    let last = [&source_overview, &target_overview].into_iter().flatten().map(|overview| overview.last).max();
    if let (Some(first), Some(last)) = (first, last)
        && (Segment { first, last }).positions() > i64::MAX as u64
    {
        return Ok(SegmentOutcome::StreamAll("the keys span more than 2^63 positions".to_owned()));
    }
    let mut search = Search::new(settings, source_overview, target_overview);
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
                if let Err(unknown) = search.record(&source_digests, &target_digests) {
                    return Ok(SegmentOutcome::StreamAll(unknown.to_string()));
                }
            }
        }
    }
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

/// The text of a literal `'…'::type` or a number, as a bind parameter's text.
fn unquote_literal(literal: &str) -> String {
    match literal.strip_prefix('\'') {
        Some(rest) => rest.split('\'').next().unwrap_or_default().to_owned(),
        None => literal.to_owned(),
    }
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
