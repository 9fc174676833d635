//! The differential harness's cases: random tables over every type pair of the comparison
//! table, planted mutations, and an oracle written here, independently of the comparison
//! code (a plain per-row comparison over this file's model of each value). Every value of a
//! pair's pool belongs to an equality class written by hand from the comparison table
//! (docs/comparison.md); two cells are equal exactly when their classes are.
//!
//! The audit's harness (`differential.rs`) and `row_diff`'s (the runner's
//! `differential.rs`, which includes this file) drive the same cases through their own
//! entry points.
#![allow(dead_code, reason = "two test binaries include this file, and each uses a part of it")]

use std::collections::BTreeMap;
use std::fmt::Write as _;

use datadiff_diff_core::segment::SearchSettings;
use serde_json::{Value as Json, json};

/// The seed CI runs with.
pub(crate) const FIXED_SEED: u64 = 0x2027_0027_0000_0001;

/// One value of a pair's pool: its literal on the source (`None`: the source type cannot
/// hold it), on the replica (`None`: the replica type cannot), and its equality class. Class
/// 0 is NULL; [`EMPTY`] marks the empty string of a text-like pair (one class with NULL under
/// `empty_string_as_null`).
type Entry = (Option<&'static str>, Option<&'static str>, u16);

/// The empty-string class of text-like pools.
const EMPTY: u16 = 1;

/// A compared column's pair of types and its pool.
pub(crate) struct TypePair {
    source: &'static str,
    replica: &'static str,
    entries: &'static [Entry],
    /// Text-like on both sides: `empty_string_as_null` applies.
    text_like: bool,
}

const NULL: Entry = (Some("NULL"), Some("NULL"), 0);

/// Every pair of the comparison table that compares (the errors are tested elsewhere), with
/// hostile values. Equal classes are what the comparison forgives, written from the table.
pub(crate) const PAIRS: &[TypePair] = &[
    TypePair {
        source: "bigint",
        replica: "bigint",
        text_like: false,
        entries: &[
            NULL,
            (Some("0"), Some("0"), 10),
            (Some("1"), Some("1"), 11),
            // bigint's hash folds 64 bits into 32: 1 and 2^32 hash alike.
            (Some("4294967296"), Some("4294967296"), 12),
            (Some("-1"), Some("-1"), 13),
            (Some("4294967297"), Some("4294967297"), 14),
            (Some("9223372036854775807"), Some("9223372036854775807"), 15),
            (Some("-9223372036854775808"), Some("-9223372036854775808"), 16),
            (Some("-4294967297"), Some("-4294967297"), 17),
        ],
    },
    TypePair {
        source: "integer",
        replica: "bigint",
        text_like: false,
        entries: &[
            NULL,
            (Some("0"), Some("0"), 10),
            (Some("1"), Some("1"), 11),
            (Some("-1"), Some("-1"), 12),
            (Some("2147483647"), Some("2147483647"), 13),
            (Some("-2147483648"), Some("-2147483648"), 14),
            (None, Some("4294967296"), 15),
            (None, Some("2147483648"), 16),
        ],
    },
    TypePair {
        source: "smallint",
        replica: "integer",
        text_like: false,
        entries: &[NULL, (Some("7"), Some("7"), 10), (Some("-7"), Some("-7"), 11), (None, Some("70000"), 12)],
    },
    TypePair {
        source: "numeric(12,2)",
        replica: "numeric(12,2)",
        text_like: false,
        entries: &[
            NULL,
            (Some("100.00"), Some("100"), 10),
            (Some("-100.00"), Some("-100.00"), 11),
            (Some("1.00"), Some("1"), 12),
            (Some("10000.00"), Some("10000.00"), 13),
            (Some("0.01"), Some("0.01"), 14),
            (Some("-0.01"), Some("-0.01"), 15),
            (Some("0"), Some("-0.00"), 16),
            (Some("'NaN'"), Some("'NaN'"), 17),
            (Some("9999999999.99"), Some("9999999999.99"), 18),
            (Some("1.10"), Some("1.1"), 19),
        ],
    },
    TypePair {
        source: "numeric",
        replica: "numeric(20,4)",
        text_like: false,
        entries: &[
            NULL,
            (Some("1.5"), Some("1.5000"), 10),
            (Some("-1.5"), Some("-1.5"), 11),
            (Some("15000"), Some("15000"), 12),
            (Some("0.0015"), Some("0.0015"), 13),
            (Some("'NaN'"), Some("'NaN'"), 14),
            (Some("0"), Some("0.0000"), 15),
            (Some("1234567890123456.0001"), Some("1234567890123456.0001"), 16),
            (None, Some("1234567890123456.0002"), 17),
        ],
    },
    TypePair {
        source: "numeric",
        replica: "numeric",
        text_like: false,
        entries: &[
            NULL,
            (Some("'Infinity'"), Some("'Infinity'"), 10),
            (Some("'-Infinity'"), Some("'-Infinity'"), 11),
            (Some("'NaN'"), Some("'NaN'"), 12),
            (Some("2.50"), Some("2.5"), 13),
            (Some("-2.5"), Some("-2.50000"), 14),
            (Some("0.000000000000000000001"), Some("1e-21"), 15),
            (Some("1e30"), Some("1000000000000000000000000000000"), 16),
            (Some("1e26"), Some("1e26"), 17),
        ],
    },
    TypePair {
        source: "numeric(10,0)",
        replica: "integer",
        text_like: false,
        entries: &[
            NULL,
            (Some("5"), Some("5"), 10),
            (Some("-5"), Some("-5"), 11),
            (Some("0"), Some("0"), 12),
            (Some("1000000"), Some("1000000"), 13),
            (None, Some("6"), 14),
        ],
    },
    TypePair {
        source: "integer",
        replica: "numeric(12,2)",
        text_like: false,
        entries: &[
            NULL,
            (Some("5"), Some("5.00"), 10),
            (Some("-5"), Some("-5"), 11),
            (Some("50000"), Some("50000.00"), 12),
            (None, Some("5.01"), 13),
            (None, Some("0.5"), 14),
        ],
    },
    // An exact source against a float replica: equal only to the nearest float.
    TypePair {
        source: "numeric(12,2)",
        replica: "double precision",
        text_like: false,
        entries: &[
            NULL,
            (Some("100.00"), Some("100"), 10),
            (Some("-100.00"), Some("-100"), 11),
            (Some("1.10"), Some("1.1"), 12),
            // The nearest double of 1.10, spelt with more digits.
            (None, Some("1.1000000000000001"), 12),
            (None, Some("1.1049"), 13),
            (Some("0.00"), Some("'-0'"), 14),
            (Some("10000.00"), Some("10000"), 15),
            (Some("0.01"), Some("0.01"), 16),
            (Some("19.99"), Some("19.99"), 17),
            (None, Some("19.989999999999995"), 18),
            (Some("'NaN'"), Some("'NaN'"), 19),
            (None, Some("'Infinity'"), 20),
            (None, Some("'-Infinity'"), 21),
        ],
    },
    TypePair {
        source: "numeric",
        replica: "double precision",
        text_like: false,
        entries: &[
            NULL,
            (Some("'Infinity'"), Some("'Infinity'"), 10),
            (Some("'-Infinity'"), Some("'-Infinity'"), 11),
            (Some("'NaN'"), Some("'NaN'"), 12),
            (Some("0.333333333333333333333333"), Some("0.3333333333333333"), 13),
            (None, Some("0.33333333333333337"), 14),
            // Beyond a double's range: the nearest double is infinite (and the segment hash
            // cannot cast it: its marker streams the segment).
            (Some("1e400"), None, 10),
            (Some("1e-400"), Some("0"), 15),
            (Some("0"), Some("0"), 15),
            (Some("4.9e-324"), Some("4.9e-324"), 16),
            (Some("-1e300"), Some("-1e300"), 17),
        ],
    },
    TypePair {
        source: "bigint",
        replica: "double precision",
        text_like: false,
        entries: &[
            NULL,
            (Some("4"), Some("4"), 10),
            (None, Some("3.7"), 11),
            (Some("-4"), Some("-4"), 12),
            // 2^53 + 1 is stored as its nearest double, 2^53.
            (Some("9007199254740993"), Some("9007199254740992"), 13),
            (Some("9007199254740992"), Some("9007199254740992"), 13),
            (Some("9007199254740995"), Some("9007199254740996"), 14),
            (None, Some("9007199254740994"), 15),
        ],
    },
    TypePair {
        source: "integer",
        replica: "real",
        text_like: false,
        entries: &[
            NULL,
            (Some("16777217"), Some("16777216"), 10),
            (Some("16777216"), Some("16777216"), 10),
            (Some("3"), Some("3"), 11),
            (None, Some("3.0000002"), 12),
            (None, Some("16777218"), 13),
        ],
    },
    TypePair {
        source: "numeric(12,2)",
        replica: "real",
        text_like: false,
        entries: &[
            NULL,
            (Some("1.10"), Some("1.1"), 10),
            (None, Some("1.1000001"), 11),
            (Some("-1.10"), Some("-1.1"), 12),
            (Some("0.00"), Some("0"), 13),
        ],
    },
    // A float source against a narrower replica: the replica read as the source's float.
    TypePair {
        source: "double precision",
        replica: "numeric",
        text_like: false,
        entries: &[
            NULL,
            (Some("0.1"), Some("0.1"), 10),
            (Some("1.004"), Some("1.004"), 11),
            (None, Some("1.00"), 12),
            (Some("-2.5"), Some("-2.50"), 13),
            (Some("'NaN'"), Some("'NaN'"), 14),
            (Some("'Infinity'"), Some("'Infinity'"), 15),
            (Some("'-Infinity'"), Some("'-Infinity'"), 16),
            (Some("0.30000000000000004"), Some("0.30000000000000004"), 17),
            (None, Some("0.3"), 18),
        ],
    },
    TypePair {
        source: "double precision",
        replica: "integer",
        text_like: false,
        entries: &[
            NULL,
            (Some("4"), Some("4"), 10),
            (Some("3.7"), None, 11),
            (None, Some("3"), 12),
            (Some("'-0'"), Some("0"), 13),
            (Some("0"), Some("0"), 13),
        ],
    },
    TypePair {
        source: "real",
        replica: "bigint",
        text_like: false,
        entries: &[
            NULL,
            (Some("16777216"), Some("16777217"), 10),
            (Some("16777216"), Some("16777216"), 10),
            (Some("2.5"), None, 11),
            (None, Some("2"), 12),
            (None, Some("3"), 13),
        ],
    },
    TypePair {
        source: "double precision",
        replica: "double precision",
        text_like: false,
        entries: &[
            NULL,
            (Some("0"), Some("'-0'"), 10),
            (Some("'-0'"), Some("0"), 10),
            (Some("'NaN'"), Some("'NaN'"), 11),
            (Some("'Infinity'"), Some("'Infinity'"), 12),
            (Some("'-Infinity'"), Some("'-Infinity'"), 13),
            (Some("1.5"), Some("1.5"), 14),
            (Some("-1.5"), Some("-1.5"), 15),
            (Some("1e308"), Some("1e308"), 16),
            (Some("5e-324"), Some("5e-324"), 17),
            (Some("0.1"), Some("0.1"), 18),
            (None, Some("0.10000000000000002"), 19),
        ],
    },
    TypePair {
        source: "real",
        replica: "double precision",
        text_like: false,
        entries: &[
            NULL,
            (Some("0.1"), Some("0.1"), 10),
            (None, Some("0.10000000149011612"), 10),
            (None, Some("0.1000001"), 11),
            (Some("'NaN'"), Some("'NaN'"), 12),
            (Some("-3"), Some("-3"), 13),
        ],
    },
    TypePair {
        source: "double precision",
        replica: "real",
        text_like: false,
        entries: &[
            NULL,
            (Some("0.5"), Some("0.5"), 10),
            (Some("0.1"), None, 11),
            (None, Some("0.1"), 12),
            (Some("'Infinity'"), Some("'Infinity'"), 13),
            (Some("-0.5"), Some("-0.5"), 14),
        ],
    },
    TypePair {
        source: "text",
        replica: "character varying",
        text_like: true,
        entries: &[
            NULL,
            (Some("''"), Some("''"), EMPTY),
            (Some("'a'"), Some("'a'"), 10),
            (Some("'a '"), Some("'a '"), 11),
            (Some("' a'"), Some("' a'"), 12),
            (Some("'A'"), Some("'A'"), 13),
            (Some("'ä'"), Some("'ä'"), 14),
            (Some("'a' || chr(776)"), Some("'a' || chr(776)"), 15),
            (Some("'NULL'"), Some("'NULL'"), 16),
            (Some("'it''s'"), Some("'it''s'"), 17),
            (Some("E'tab\\there'"), Some("E'tab\\there'"), 18),
            (Some("'🦀'"), Some("'🦀'"), 19),
        ],
    },
    TypePair {
        source: "character(6)",
        replica: "character varying(10)",
        text_like: true,
        entries: &[
            NULL,
            (Some("''"), Some("''"), EMPTY),
            (None, Some("'      '"), EMPTY),
            (Some("'ab'"), Some("'ab    '"), 10),
            (None, Some("'ab'"), 10),
            (None, Some("'ab '"), 10),
            (Some("' ab'"), Some("' ab'"), 11),
            (Some("'AB'"), Some("'AB'"), 12),
            (Some("'ab c'"), Some("'ab c'"), 13),
        ],
    },
    TypePair {
        source: "character varying(8)",
        replica: "character(8)",
        text_like: true,
        entries: &[
            NULL,
            (Some("''"), Some("''"), EMPTY),
            (Some("'xy'"), Some("'xy'"), 10),
            (Some("'xy '"), None, 11),
            (Some("'x y'"), Some("'x y'"), 12),
        ],
    },
    TypePair {
        source: "uuid",
        replica: "uuid",
        text_like: false,
        entries: &[
            NULL,
            (Some("'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'"), Some("'A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11'"), 10),
            (Some("'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a12'"), Some("'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a12'"), 11),
            (Some("'00000000-0000-0000-0000-000000000000'"), Some("'00000000-0000-0000-0000-000000000000'"), 12),
        ],
    },
    TypePair {
        source: "uuid",
        replica: "text",
        text_like: false,
        entries: &[
            NULL,
            (Some("'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'"), Some("'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'"), 10),
            (None, Some("'A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11'"), 10),
            (None, Some("'{a0eebc999c0b4ef8bb6d6bb9bd380a11}'"), 10),
            (None, Some("'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a1'"), 11),
            (None, Some("''"), 12),
            (Some("'ffffffff-ffff-ffff-ffff-ffffffffffff'"), Some("'ffffffff-ffff-ffff-ffff-ffffffffffff'"), 13),
        ],
    },
    TypePair {
        source: "timestamp with time zone",
        replica: "timestamp without time zone",
        text_like: false,
        entries: &[
            NULL,
            (Some("'2026-07-01 12:00:00+02'"), Some("'2026-07-01 10:00:00'"), 10),
            (None, Some("'2026-07-01 12:00:00'"), 11),
            (Some("'2000-01-01 00:00:00.000005+00'"), Some("'2000-01-01 00:00:00.000005'"), 12),
            // The timestamp hash folds microseconds into 32 bits: this one hashes as the one
            // above.
            (Some("'2000-01-01 01:11:34.9673+00'"), Some("'2000-01-01 01:11:34.9673'"), 13),
            (Some("'infinity'"), Some("'infinity'"), 14),
            (Some("'-infinity'"), Some("'-infinity'"), 15),
            (Some("'1969-12-31 23:59:59.999999+00'"), Some("'1969-12-31 23:59:59.999999'"), 16),
        ],
    },
    TypePair {
        source: "timestamp without time zone",
        replica: "timestamp without time zone",
        text_like: false,
        entries: &[
            NULL,
            (Some("'2000-01-01 00:00:00.000005'"), Some("'2000-01-01 00:00:00.000005'"), 10),
            (Some("'2000-01-01 01:11:34.9673'"), Some("'2000-01-01 01:11:34.9673'"), 11),
            (Some("'2026-07-01 10:00:00'"), Some("'2026-07-01 10:00:00'"), 12),
            (None, Some("'2026-07-01 10:00:00.000001'"), 13),
        ],
    },
    TypePair {
        source: "date",
        replica: "date",
        text_like: false,
        entries: &[
            NULL,
            (Some("'2026-07-01'"), Some("'2026-07-01'"), 10),
            (Some("'2026-07-02'"), Some("'2026-07-02'"), 11),
            (Some("'infinity'"), Some("'infinity'"), 12),
            (Some("'4713-01-01 BC'"), Some("'4713-01-01 BC'"), 13),
        ],
    },
    TypePair {
        source: "date",
        replica: "timestamp without time zone",
        text_like: false,
        entries: &[
            NULL,
            (Some("'2026-07-01'"), Some("'2026-07-01 00:00:00'"), 10),
            (None, Some("'2026-07-01 00:00:01'"), 11),
            (Some("'2026-07-02'"), Some("'2026-07-02'"), 12),
        ],
    },
    TypePair {
        source: "time without time zone",
        replica: "time without time zone",
        text_like: false,
        entries: &[
            NULL,
            (Some("'00:00:00.000005'"), Some("'00:00:00.000005'"), 10),
            // The time hash folds too: this one hashes as the one above.
            (Some("'01:11:34.9673'"), Some("'01:11:34.9673'"), 11),
            (Some("'24:00:00'"), Some("'24:00:00'"), 12),
            (Some("'00:00:00'"), Some("'00:00:00'"), 13),
        ],
    },
    TypePair {
        source: "boolean",
        replica: "boolean",
        text_like: false,
        entries: &[NULL, (Some("true"), Some("true"), 10), (Some("false"), Some("false"), 11)],
    },
    TypePair {
        source: "bytea",
        replica: "bytea",
        text_like: false,
        entries: &[
            NULL,
            (Some("'\\x'"), Some("'\\x'"), 10),
            (Some("'\\x00'"), Some("'\\x00'"), 11),
            (Some("'\\x0000'"), Some("'\\x0000'"), 12),
            (Some("'\\xff00'"), Some("'\\xff00'"), 13),
            (Some("'\\x00ff'"), Some("'\\x00ff'"), 14),
        ],
    },
];

/// A key type: the SQL types of both sides and how a key number is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum KeyKind {
    Bigint,
    IntegerAgainstBigint,
    Uuid,
    Text,
    /// A composite key `(id integer, id2 integer)`, the replica's first column `bigint`: a
    /// line item's `(order_id, line_no)`.
    IntPair,
    /// A composite key `(id text, id2 integer)`, the replica's `(varchar, bigint)`: a link
    /// table keyed by a code and a number.
    TextInt,
    /// A text key whose keys share long prefixes (equal segment positions), differ only after
    /// byte 8, or start with multi-byte UTF-8, the empty key among them.
    PrefixedText,
    /// A text key whose keys all share a prefix longer than a position (`customer-000000…`,
    /// then digits, a suffix or multi-byte UTF-8): the search skips the prefix both sides
    /// share.
    SharedPrefixText,
    /// A `timestamptz` key against a `timestamp` replica (naive UTC, as target-postgres
    /// writes it): instants a microsecond apart (one segment position), before and after
    /// 2000-01-01, and ±infinity.
    Instant,
    /// A `date` key against a `date`: days from before 1 AD to 5874897 AD (the type's last),
    /// neighbours, and ±infinity.
    Day,
    /// A composite key `(id date, id2 integer)` against a `(timestamp, bigint)` replica: a
    /// fact table keyed by day and store, the date loaded as its midnight; days before
    /// 2000, a century ahead and `infinity`.
    DayStore,
}

impl KeyKind {
    /// The composite key kinds (not in [`KeyKind::ALL`], so that the single-key cases of a
    /// seed stay what they were).
    pub(crate) const COMPOSITE: [KeyKind; 2] = [KeyKind::IntPair, KeyKind::TextInt];

    /// Every composite key kind, for [`KeyKind::is_composite`].
    const ALL_COMPOSITE: [KeyKind; 3] = [KeyKind::IntPair, KeyKind::TextInt, KeyKind::DayStore];

    /// The text key kinds of the text-key runs (their own sequence, like
    /// [`KeyKind::COMPOSITE`]): the single text keys, and a composite key led by text.
    pub(crate) const TEXT: [KeyKind; 3] = [KeyKind::Text, KeyKind::PrefixedText, KeyKind::TextInt];

    /// The single-column text key kinds (for scheduled checks' single key column).
    pub(crate) const SINGLE_TEXT: [KeyKind; 2] = [KeyKind::Text, KeyKind::PrefixedText];

    /// Keys whose bytes share a long prefix, and uuids (their own runs).
    pub(crate) const SHARED_PREFIX: [KeyKind; 2] = [KeyKind::SharedPrefixText, KeyKind::Uuid];

    /// Date and timestamp keys (their own runs).
    pub(crate) const CALENDAR: [KeyKind; 3] = [KeyKind::Instant, KeyKind::Day, KeyKind::DayStore];

    /// The key columns' names and SQL types `(name, source type, replica type)`.
    pub(crate) fn columns(self) -> Vec<(&'static str, &'static str, &'static str)> {
        match self {
            KeyKind::IntPair => vec![("id", "integer", "bigint"), ("id2", "integer", "integer")],
            KeyKind::TextInt => vec![("id", "text", "character varying"), ("id2", "integer", "bigint")],
            KeyKind::DayStore => vec![("id", "date", "timestamp without time zone"), ("id2", "integer", "bigint")],
            single => {
                let (source, replica) = single.types();
                vec![("id", source, replica)]
            }
        }
    }

    /// Whether the segment strategy can hash this key (every key kind has a position: an
    /// integer, a uuid's or a text's first 60 bits, a composite key's first column's).
    pub(crate) fn hashable(self) -> bool {
        true
    }

    /// Whether the key has several columns.
    pub(crate) fn is_composite(self) -> bool {
        KeyKind::ALL_COMPOSITE.contains(&self)
    }

    const ALL: [KeyKind; 4] = [KeyKind::Bigint, KeyKind::IntegerAgainstBigint, KeyKind::Uuid, KeyKind::Text];

    pub(crate) fn types(self) -> (&'static str, &'static str) {
        match self {
            KeyKind::Bigint => ("bigint", "bigint"),
            KeyKind::IntegerAgainstBigint => ("integer", "bigint"),
            KeyKind::Uuid => ("uuid", "uuid"),
            KeyKind::Text | KeyKind::TextInt | KeyKind::PrefixedText | KeyKind::SharedPrefixText => {
                ("text", "character varying")
            }
            KeyKind::IntPair => ("integer", "bigint"),
            KeyKind::Instant => ("timestamp with time zone", "timestamp without time zone"),
            KeyKind::Day => ("date", "date"),
            KeyKind::DayStore => ("date", "timestamp without time zone"),
        }
    }

    /// Key number `n` on this key type: integers (with 2^32 apart pairs, which bigint hashes
    /// alike), uuids spread over the whole range, and text keys that C collation orders
    /// differently from most others (case, accents, a trailing blank).
    pub(crate) fn key(self, n: i64) -> OracleKey {
        match self {
            KeyKind::Bigint => OracleKey::Int(if n % 7 == 3 { n + 4_294_967_296 } else { n - 500 }),
            KeyKind::IntegerAgainstBigint => OracleKey::Int(n * 3 - 700),
            KeyKind::Uuid => {
                let mixed = (n as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
                OracleKey::Text(format!(
                    "{:08x}-{:04x}-4{:03x}-8{:03x}-{:012x}",
                    mixed >> 32,
                    (mixed >> 16) & 0xffff,
                    n & 0xfff,
                    (mixed >> 4) & 0xfff,
                    n as u64 & 0xffff_ffff_ffff
                ))
            }
            KeyKind::Text => OracleKey::Text(match n % 4 {
                0 => format!("k{n}"),
                1 => format!("K{n}"),
                2 => format!("é{n}"),
                _ => format!("k{n} "),
            }),
            KeyKind::PrefixedText => OracleKey::Text(match n % 5 {
                _ if n == 0 => String::new(),
                0 => format!("customer-{n:06}"),
                1 => format!("abcdefgh{n}"),
                2 => format!("😀{n}"),
                3 => format!("Ωé{n}"),
                _ => format!("customer-{n:06}-x"),
            }),
            KeyKind::SharedPrefixText => OracleKey::Text(match n.rem_euclid(5) {
                1 => format!("customer-{n:012}-é"),
                2 => format!("customer-{n:012}😀"),
                3 => format!("customer-{n:012}-x"),
                _ => format!("customer-{n:012}"),
            }),
            // Few second parts per first part, and first parts that are also second parts, so
            // that swapped parts land on keys of the table.
            KeyKind::IntPair => OracleKey::Pair(Box::new(OracleKey::Int(n / 3 - 2)), Box::new(OracleKey::Int(n % 3))),
            KeyKind::TextInt => {
                let OracleKey::Text(text) = KeyKind::Text.key(n / 3) else { unreachable!("a text key") };
                OracleKey::Pair(Box::new(OracleKey::Text(text)), Box::new(OracleKey::Int(n % 3 - 1)))
            }
            // Microseconds since 2000-01-01 UTC. Whole seconds of 2026 and the same seconds
            // plus 1 or 2 µs (one position: four microseconds), hours after 2000 and days
            // before it, and the infinities.
            KeyKind::Instant => OracleKey::Instant(match n.rem_euclid(5) {
                _ if n == 1 => i64::MAX,
                _ if n == 2 => i64::MIN,
                0 => JULY_2026 + n * 1_000_000,
                1 => JULY_2026 + (n - 1) * 1_000_000 + 1,
                2 => -(n * DAY_MICROS) - 7,
                3 => JULY_2026 + (n - 3) * 1_000_000 + 2,
                _ => n * 3_600_000_000 + 123_456,
            }),
            // Days since 2000-01-01: neighbours around 2026, days before 2000 and before 1 AD,
            // the type's last day and some near it, and the infinities.
            KeyKind::Day => OracleKey::Day(match n.rem_euclid(4) {
                _ if n == 1 => i64::from(i32::MAX),
                _ if n == 2 => i64::from(i32::MIN),
                _ if n == 3 => 2_145_031_948,
                0 => 9_678 + n,
                1 => -(n * 997),
                2 => -746_117 - n,
                _ => 2_145_031_948 - n * 1_000,
            }),
            // Three stores a day; days from before 2000, one a century ahead in seven, and
            // `infinity`.
            KeyKind::DayStore => {
                let day = match n / 3 {
                    0 => None,
                    days if days % 7 == 5 => Some(days + 36_500),
                    days => Some(days - 10),
                };
                let midnight = day.map_or(i64::MAX, |day| day * DAY_MICROS);
                OracleKey::Pair(Box::new(OracleKey::Instant(midnight)), Box::new(OracleKey::Int(n % 3 - 1)))
            }
        }
    }

    pub(crate) fn literal(self, key: &OracleKey) -> String {
        match key {
            OracleKey::Int(value) => value.to_string(),
            OracleKey::Text(text) => format!("'{}'", text.replace('\'', "''")),
            // The same literal for a date (its midnight), a `timestamp` (the zone ignored) and a
            // `timestamptz`.
            OracleKey::Instant(micros) => format!("'{}'", instant_literal(*micros)),
            OracleKey::Day(days) => format!("'{}'", day_report(*days)),
            OracleKey::Pair(first, second) => format!("{}, {}", self.literal(first), self.literal(second)),
        }
    }
}

/// A key as the oracle orders it: integers numerically, uuids and text by their bytes (a
/// uuid's lowercase text orders as its bytes do).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum OracleKey {
    Int(i64),
    Text(String),
    /// A composite key `(id, id2)`: ordered by its first part, then its second.
    Pair(Box<OracleKey>, Box<OracleKey>),
    /// A date or timestamp: microseconds since 2000-01-01 UTC, `i64::MAX` and `i64::MIN`
    /// for `infinity` and `-infinity`.
    Instant(i64),
    /// A date: days since 2000-01-01, `i32::MAX` and `i32::MIN` for the infinities.
    Day(i64),
}

/// A day as PostgreSQL reads and an audit report writes it: `2026-07-01`, `0044-03-15 BC`,
/// `infinity` (by chrono).
pub(crate) fn day_report(days: i64) -> String {
    match days {
        days if days == i64::from(i32::MAX) => "infinity".to_owned(),
        days if days == i64::from(i32::MIN) => "-infinity".to_owned(),
        days => {
            // Past chrono's last year, whole 400-year cycles (146,097 days each) back.
            let cycles = if days > 50_000_000 { (days - 1_000_000) / 146_097 } else { 0 };
            let day =
                chrono::NaiveDate::from_ymd_opt(2000, 1, 1).unwrap() + chrono::Duration::days(days - cycles * 146_097);
            match i64::from(chrono::Datelike::year(&day)) + cycles * 400 {
                year if year <= 0 => format!("{:04}-{} BC", 1 - year, day.format("%m-%d")),
                year => format!("{year:04}-{}", day.format("%m-%d")),
            }
        }
    }
}

const DAY_MICROS: i64 = 86_400_000_000;

/// 2026-07-01 12:00:00 UTC, in microseconds since 2000-01-01.
const JULY_2026: i64 = 836_222_400_000_000;

/// The instant `micros` after 2000-01-01 UTC, by chrono: `2026-07-01 12:00:00.000001+00`.
fn instant_literal(micros: i64) -> String {
    match micros {
        i64::MAX => "infinity".to_owned(),
        i64::MIN => "-infinity".to_owned(),
        micros => (instant(micros)).format("%Y-%m-%d %H:%M:%S%.6f+00").to_string(),
    }
}

fn instant(micros: i64) -> chrono::NaiveDateTime {
    let epoch = chrono::NaiveDate::from_ymd_opt(2000, 1, 1).unwrap().and_hms_opt(0, 0, 0).unwrap();
    epoch + chrono::Duration::microseconds(micros)
}

/// The instant as an audit report names it: ISO 8601 in UTC, the fraction only when not zero.
pub(crate) fn instant_report(micros: i64) -> String {
    match micros {
        i64::MAX => "infinity".to_owned(),
        i64::MIN => "-infinity".to_owned(),
        micros => {
            let at = instant(micros);
            match micros.rem_euclid(1_000_000) {
                0 => at.format("%Y-%m-%dT%H:%M:%SZ").to_string(),
                _ => at.format("%Y-%m-%dT%H:%M:%S%.6fZ").to_string(),
            }
        }
    }
}

impl OracleKey {
    pub(crate) fn json(&self) -> Json {
        match self {
            OracleKey::Int(value) => json!(value),
            OracleKey::Text(text) => json!(text),
            OracleKey::Pair(first, second) => json!({"id": first.json(), "id2": second.json()}),
            OracleKey::Instant(micros) => json!(instant_report(*micros)),
            OracleKey::Day(days) => json!(day_report(*days)),
        }
    }

    /// The report's field for this key: `id` for a single key, `key` for a composite one.
    pub(crate) fn report_field(&self) -> &'static str {
        match self {
            OracleKey::Pair(..) => "key",
            _ => "id",
        }
    }
}

/// One row: a pool entry index per column.
pub(crate) type Row = Vec<usize>;

/// A case: the columns' pairs, the key type, both sides' rows, the options.
pub(crate) struct Case {
    pub(crate) pairs: Vec<usize>,
    pub(crate) key: KeyKind,
    pub(crate) source: BTreeMap<OracleKey, Row>,
    pub(crate) replica: BTreeMap<OracleKey, Row>,
    pub(crate) empty_string_as_null: bool,
    pub(crate) max_examples: i64,
    pub(crate) settings: SearchSettings,
    /// Whether the key is the table's primary key (else the table has no index: the
    /// segment levels then read the table in one pass instead of through the key's index,
    /// and the overview looks for duplicate keys).
    pub(crate) primary_key: bool,
    /// What the case holds, for a failure's message.
    pub(crate) plan: String,
}

/// A difference as the oracle names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Missing,
    Extra,
    Changed,
}

/// What a comparison of a case must answer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Expected {
    pub(crate) matched: u64,
    pub(crate) missing: u64,
    pub(crate) extra: u64,
    pub(crate) changed: u64,
    /// The first differences in key order (at most the case's `max_examples`): the kind, the
    /// key and, for a changed row, its fields.
    pub(crate) examples: Vec<(Kind, OracleKey, Vec<String>)>,
}

/// SplitMix64: a small, well-mixed, reproducible generator (no dependency).
pub(crate) struct Random(pub(crate) u64);

impl Random {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, bound: usize) -> usize {
        (self.next() % bound.max(1) as u64) as usize
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
}

fn source_entries(pair: &TypePair) -> Vec<usize> {
    (0..pair.entries.len()).filter(|index| pair.entries[*index].0.is_some()).collect()
}

fn replica_entries(pair: &TypePair) -> Vec<usize> {
    (0..pair.entries.len()).filter(|index| pair.entries[*index].1.is_some()).collect()
}

/// The replica entry that holds what source entry `index` holds: itself when the replica can
/// hold it, else another entry of its class (the case is skipped when there is none).
fn faithful(pair: &TypePair, index: usize) -> Option<usize> {
    if pair.entries[index].1.is_some() {
        return Some(index);
    }
    let class = pair.entries[index].2;
    (0..pair.entries.len()).find(|other| pair.entries[*other].1.is_some() && pair.entries[*other].2 == class)
}

impl Case {
    pub(crate) fn generate(random: &mut Random) -> Case {
        Case::generate_with(random, &KeyKind::ALL, 5)
    }

    /// A case whose key is one of `kinds`, with at most `max_columns` compared columns.
    pub(crate) fn generate_with(random: &mut Random, kinds: &[KeyKind], max_columns: usize) -> Case {
        let mut plan = String::new();
        let columns = 1 + random.below(max_columns);
        let pairs: Vec<usize> = (0..columns).map(|_| random.below(PAIRS.len())).collect();
        let key = kinds[random.below(kinds.len())];
        let rows = match random.below(10) {
            0 => 0,
            1 => 1 + random.below(3),
            _ => 20 + random.below(300),
        };
        let mut source = BTreeMap::new();
        let mut replica = BTreeMap::new();
        let mut numbers: Vec<i64> = Vec::new();
        for n in 0..rows as i64 * 2 {
            if random.chance(50) || numbers.len() + (rows as i64 * 2 - n) as usize <= rows {
                numbers.push(n);
            }
            if numbers.len() == rows {
                break;
            }
        }
        for n in &numbers {
            let mut row = Vec::with_capacity(pairs.len());
            let mut faithful_row = Vec::with_capacity(pairs.len());
            for &pair in &pairs {
                let choices = source_entries(&PAIRS[pair]);
                let mut entry = choices[random.below(choices.len())];
                // Skip entries without a faithful replica spelling (they start as a change).
                while faithful(&PAIRS[pair], entry).is_none() {
                    entry = choices[random.below(choices.len())];
                }
                row.push(entry);
                faithful_row.push(faithful(&PAIRS[pair], entry).unwrap_or(entry));
            }
            source.insert(key.key(*n), row);
            replica.insert(key.key(*n), faithful_row);
        }
        let mut next_key = rows as i64 * 2 + 10;
        let mutations = random.below(9);
        for _ in 0..mutations {
            let keys: Vec<OracleKey> = replica.keys().cloned().collect();
            let column = random.below(pairs.len());
            let pool = replica_entries(&PAIRS[pairs[column]]);
            match (random.below(8), keys.is_empty()) {
                (_, true) | (0, _) => {
                    let row: Row = pairs
                        .iter()
                        .map(|&pair| {
                            let pool = replica_entries(&PAIRS[pair]);
                            pool[random.below(pool.len())]
                        })
                        .collect();
                    let _ = writeln!(plan, "insert {:?}", key.key(next_key));
                    replica.insert(key.key(next_key), row);
                    next_key += 1;
                }
                (1, _) => {
                    let victim = &keys[random.below(keys.len())];
                    let _ = writeln!(plan, "delete {victim:?}");
                    replica.remove(victim);
                }
                (2, _) => {
                    // A moved row: its values under a new key — for a pair of integers, sometimes
                    // the key with its parts swapped, (1, 2) to (2, 1), or another second part.
                    let victim = keys[random.below(keys.len())].clone();
                    let row = replica.remove(&victim).unwrap_or_default();
                    let swapped = match &victim {
                        OracleKey::Pair(first, second) if key == KeyKind::IntPair && random.chance(80) => {
                            Some(match (random.chance(50), second.as_ref()) {
                                (true, _) => OracleKey::Pair(second.clone(), first.clone()),
                                // Within its first part: only the second part tells it moved.
                                (false, OracleKey::Int(part)) => {
                                    OracleKey::Pair(first.clone(), Box::new(OracleKey::Int(part + 3)))
                                }
                                (false, _) => victim.clone(),
                            })
                        }
                        _ => None,
                    };
                    let moved = swapped.unwrap_or_else(|| {
                        next_key += 1;
                        key.key(next_key - 1)
                    });
                    let _ = writeln!(plan, "move {victim:?} to {moved:?}");
                    replica.insert(moved, row);
                }
                (3, _) => {
                    // A duplicated row: a copy under a new key.
                    let original = keys[random.below(keys.len())].clone();
                    let row = replica[&original].clone();
                    let _ = writeln!(plan, "duplicate {original:?} as {:?}", key.key(next_key));
                    replica.insert(key.key(next_key), row);
                    next_key += 1;
                }
                (4 | 5, _) => {
                    // Two rows' values of one column exchanged.
                    let (a, b) = (&keys[random.below(keys.len())], &keys[random.below(keys.len())]);
                    let _ = writeln!(plan, "swap column {column} of {a:?} and {b:?}");
                    let value_a = replica[a][column];
                    let value_b = replica[b][column];
                    replica.get_mut(a).unwrap()[column] = value_b;
                    replica.get_mut(b).unwrap()[column] = value_a;
                }
                (6, _) => {
                    // One column's values rotated among a run of rows.
                    let start = random.below(keys.len());
                    let run: Vec<OracleKey> = keys.iter().skip(start).take(2 + random.below(6)).cloned().collect();
                    let _ = writeln!(plan, "rotate column {column} over {} rows from {:?}", run.len(), run[0]);
                    let values: Vec<usize> = run.iter().map(|key| replica[key][column]).collect();
                    for (index, key) in run.iter().enumerate() {
                        replica.get_mut(key).unwrap()[column] = values[(index + 1) % values.len()];
                    }
                }
                _ => {
                    // A value replaced: a sign flip, a scale shift, NULL, '' or padding, as the
                    // pool has them.
                    let victim = &keys[random.below(keys.len())];
                    let entry = pool[random.below(pool.len())];
                    let _ = writeln!(plan, "set column {column} of {victim:?} to entry {entry}");
                    replica.get_mut(victim).unwrap()[column] = entry;
                }
            }
        }
        let moves_within_a_position =
            matches!(key, KeyKind::IntPair | KeyKind::DayStore | KeyKind::Instant | KeyKind::Day);
        if moves_within_a_position && !replica.is_empty() && random.chance(70) {
            // One more row moved where only the key tells it moved: to another second part of
            // its first part, or with its parts swapped (integer pairs); an instant a
            // microsecond later or earlier, most often in the same segment position.
            let keys: Vec<OracleKey> = replica.keys().cloned().collect();
            let victim = keys[random.below(keys.len())].clone();
            let moved = match &victim {
                OracleKey::Pair(first, second) => Some(match (random.chance(50), second.as_ref()) {
                    (false, OracleKey::Int(part)) => OracleKey::Pair(first.clone(), Box::new(OracleKey::Int(part + 3))),
                    _ if key == KeyKind::IntPair => OracleKey::Pair(second.clone(), first.clone()),
                    _ => OracleKey::Pair(first.clone(), Box::new(OracleKey::Int(-7))),
                }),
                OracleKey::Day(days) if (-2_451_545..2_145_031_948).contains(days) => {
                    Some(OracleKey::Day(if random.chance(50) { days + 1 } else { (days - 1).max(-2_451_545) }))
                }
                OracleKey::Instant(micros) if *micros != i64::MAX && *micros != i64::MIN => {
                    Some(OracleKey::Instant(if random.chance(70) { micros + 1 } else { micros - 1 }))
                }
                _ => None,
            };
            if let Some(moved) = moved {
                let row = replica.remove(&victim).unwrap_or_default();
                let _ = writeln!(plan, "move {victim:?} to {moved:?}");
                replica.insert(moved, row);
            }
        }
        let settings = SearchSettings {
            leaf_rows: 1 + random.below(8) as u64,
            first_level_rows: 2 + random.below(40) as u64,
            max_fanout: 2 + random.below(6) as u64,
            // Row digests from 0 (never) to 23 rows: both the streamed and the row-digest
            // leaves.
            digest_rows: random.below(24) as u64,
            // Half the cases without the first level's sketch (the levels then locate every
            // difference), half with one sized for a difference per 1 to 60 rows (it names
            // them, or fails to peel and the levels go on).
            sketch_rows: if random.chance(50) { 0 } else { 1 + random.below(60) as u64 },
            ..SearchSettings::default()
        };
        let empty_string_as_null = random.chance(25);
        let max_examples = 1 + random.below(12) as i64;
        let columns_text: Vec<String> =
            pairs.iter().map(|&pair| format!("{} -> {}", PAIRS[pair].source, PAIRS[pair].replica)).collect();
        let plan = format!(
            "key {key:?}, {} source rows, columns [{}], empty_string_as_null {empty_string_as_null}, \
             max_examples {max_examples}, {settings:?}\n{plan}",
            source.len(),
            columns_text.join(", ")
        );
        // Drawn last: the cases of a seed keep what they held before.
        let primary_key = !random.chance(25);
        let plan = format!("primary key {primary_key}, {plan}");
        Case { pairs, key, source, replica, empty_string_as_null, max_examples, settings, primary_key, plan }
    }

    /// The table `public.cases` of one side, with `extra` columns (`name type default`, the
    /// same on every row) after the compared ones.
    pub(crate) fn create_sql(&self, replica: bool, extra: &[(&str, &str, &str)]) -> String {
        let key_columns = self.key.columns();
        let mut sql = "DROP TABLE IF EXISTS public.cases; CREATE TABLE public.cases (".to_owned();
        for (index, (name, source, replica_type)) in key_columns.iter().enumerate() {
            let separator = if index == 0 { "" } else { ", " };
            let _ = write!(sql, "{separator}{name} {}", if replica { replica_type } else { source });
        }
        let key_names: Vec<&str> = key_columns.iter().map(|(name, _, _)| *name).collect();
        if self.primary_key {
            let _ = write!(sql, ", PRIMARY KEY ({})", key_names.join(", "));
        }
        for (column, &pair) in self.pairs.iter().enumerate() {
            let pair = &PAIRS[pair];
            let _ = write!(sql, ", c{column} {}", if replica { pair.replica } else { pair.source });
        }
        for (name, type_name, default) in extra {
            let _ = write!(sql, ", {name} {type_name} NOT NULL DEFAULT {default}");
        }
        sql.push_str(");");
        let rows = if replica { &self.replica } else { &self.source };
        if !rows.is_empty() {
            let values: Vec<String> = rows
                .iter()
                .map(|(key, row)| {
                    let mut values = self.key.literal(key);
                    for (column, &entry) in row.iter().enumerate() {
                        let (source, replica_literal, _) = PAIRS[self.pairs[column]].entries[entry];
                        let literal = if replica { replica_literal } else { source };
                        values.push_str(", ");
                        values.push_str(literal.unwrap_or("NULL"));
                    }
                    format!("({values})")
                })
                .collect();
            let names: Vec<String> = (0..self.pairs.len()).map(|column| format!("c{column}")).collect();
            let _ = write!(
                sql,
                "INSERT INTO public.cases ({}, {}) VALUES {};",
                key_names.join(", "),
                names.join(", "),
                values.join(", ")
            );
        }
        sql
    }

    /// The class of a cell, as the comparison must see it.
    fn class(&self, column: usize, entry: usize) -> u16 {
        let pair = &PAIRS[self.pairs[column]];
        match pair.entries[entry].2 {
            EMPTY if self.empty_string_as_null && pair.text_like => 0,
            class => class,
        }
    }

    /// The oracle: a plain per-row comparison, in key order.
    pub(crate) fn expected(&self) -> Expected {
        let mut expected = Expected::default();
        let keys: std::collections::BTreeSet<&OracleKey> = self.source.keys().chain(self.replica.keys()).collect();
        let limit = self.max_examples as usize;
        for key in keys {
            let example = match (self.source.get(key), self.replica.get(key)) {
                (Some(_), None) => {
                    expected.missing += 1;
                    Some((Kind::Missing, key.clone(), Vec::new()))
                }
                (None, Some(_)) => {
                    expected.extra += 1;
                    Some((Kind::Extra, key.clone(), Vec::new()))
                }
                (Some(source), Some(replica)) => {
                    let fields: Vec<String> = (0..self.pairs.len())
                        .filter(|&column| self.class(column, source[column]) != self.class(column, replica[column]))
                        .map(|column| format!("c{column}"))
                        .collect();
                    if fields.is_empty() {
                        expected.matched += 1;
                        None
                    } else {
                        expected.changed += 1;
                        Some((Kind::Changed, key.clone(), fields))
                    }
                }
                (None, None) => None,
            };
            if let Some(example) = example
                && expected.examples.len() < limit
            {
                expected.examples.push(example);
            }
        }
        expected
    }
}

pub(crate) fn env_u64(name: &str) -> Option<u64> {
    let text = std::env::var(name).ok()?;
    match text.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => text.parse().ok(),
    }
}

/// The case `index` of the run seeded `seed`.
pub(crate) fn case(seed: u64, index: u64) -> Case {
    let mut random = Random(seed ^ index.wrapping_mul(0xd134_2543_de82_ef95));
    Case::generate(&mut random)
}

/// The composite-key case `index` of the run seeded `seed` (its own sequence: the single-key
/// cases of a seed stay what they were).
pub(crate) fn composite_case(seed: u64, index: u64) -> Case {
    let mut random = Random(seed ^ index.wrapping_mul(0x2545_f491_4f6c_dd1d) ^ 0x636f_6d70);
    // Few columns: most cases then hash, and the key's own parts carry the test.
    Case::generate_with(&mut random, &KeyKind::COMPOSITE, 2)
}

/// The text-key case `index` of the run seeded `seed`, keyed by one of `kinds` (its own
/// sequence, as composite cases).
pub(crate) fn text_case(seed: u64, index: u64, kinds: &[KeyKind]) -> Case {
    let mut random = Random(seed ^ index.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0x7465_7874);
    Case::generate_with(&mut random, kinds, 3)
}

/// The run's seed and case numbers: `DATADIFF_DIFFERENTIAL_SEED` (default [`FIXED_SEED`]),
/// `DATADIFF_DIFFERENTIAL_CASES` (default `cases`), or the one `DATADIFF_DIFFERENTIAL_CASE`.
pub(crate) fn run_plan(cases: u64) -> (u64, Vec<u64>) {
    let seed = env_u64("DATADIFF_DIFFERENTIAL_SEED").unwrap_or(FIXED_SEED);
    let numbers = match env_u64("DATADIFF_DIFFERENTIAL_CASE") {
        Some(one) => vec![one],
        None => (0..env_u64("DATADIFF_DIFFERENTIAL_CASES").unwrap_or(cases)).collect(),
    };
    (seed, numbers)
}
