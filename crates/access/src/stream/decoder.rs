//! Per-column decoders: binary COPY fields to canonical [`Key`]s and [`Value`]s.
//!
//! A decoder is chosen once per column from the catalog types of *both* sides
//! ([`plan_pair`]), so that the two sides of a column pair land in the same canonical variant
//! and compare with a plain `==`.
//!
//! **Direction.** The source is the truth and the replica may be the lossy side, so a pair
//! forgives only what the *source's* type cannot distinguish: the replica value is read as
//! the source's type would hold it, never the source rounded to the replica's. An exact
//! source (integer or numeric, any scale) against a float replica is equal only when the
//! replica holds the exact value's nearest float, which is what a loader stores and all the
//! replica's type can hold ([`Decoder::NumericAsFloat`], [`Decoder::IntAsFloat`] and their
//! `real` forms against [`Decoder::Float`]): a replica `3.7` for `4` or `1.1049` for `1.10`
//! is a changed field, not a coercion. A float source against an integer, numeric or
//! narrower float replica reads the replica as the nearest value of the source's float type
//! (the same decoders on the other side, and [`Decoder::Float`] for a `real` widened), so
//! `4` for `3.7`, `1.00` for `1.004` or `16777216` for `16777217` is a changed field. Every pair, its direction and the pairs that are errors are listed in
//! one table: `docs/comparison.md`, section "Comparing values across types" (it covers
//! `row_diff` and `audit`, which both plan their columns here).
//!
//! **Opt-in coercions.** [`plan_pair_with`] takes the [`Coercions`] a user declared
//! expected of the pipeline (today `empty_string_as_null`: target-postgres loads every `''`
//! as NULL); [`plan_pair`] is the exact comparison, the default.
//!
//! **Wire encodings.** Where both sides send equal values as equal bytes — the same integer
//! width, numerics of one declared scale (PostgreSQL stores them rounded to that scale, so
//! the digits and display scale agree), text of any kind, booleans, dates, times, timestamps
//! of either kind (both are microseconds, the naive side read as UTC), uuids, bytea — the
//! canonical encoding is the field's bytes as sent ([`Decoder::is_wire`]), and a reader
//! copies runs of such fields without looking at them.
//!
//! The binary formats are PostgreSQL's `*send` functions: big-endian integers and IEEE
//! floats; numeric as base-10000 digit groups; dates as days and timestamps as microseconds
//! since 2000-01-01 (shifted to the 1970 epoch here; ±infinity kept as the extreme values).

use datadiff_diff_core::merge::{Key, Numeric, Value};

use crate::error::Error;
use crate::stream::DecodeError;
use crate::stream::column::{ColumnType, Family};

/// Days from 1970-01-01 to 2000-01-01 (PostgreSQL's epoch).
const EPOCH_SHIFT_DAYS: i32 = 10_957;
/// Microseconds from 1970-01-01 to 2000-01-01.
const EPOCH_SHIFT_MICROS: i64 = 946_684_800_000_000;

/// How one field of one side is decoded into a [`Value`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Decoder {
    /// An integer of any width → `Value::Int`.
    Int,
    /// An integer whose other side has the same width → `Value::Int`; encoded as sent.
    IntSameWidth,
    /// An integer → `Value::Numeric`.
    IntAsNumeric,
    /// A numeric → `Value::Numeric`, normalised.
    Numeric,
    /// A numeric whose other side has the same declared scale → `Value::Numeric`; encoded as
    /// sent.
    NumericSameScale,
    /// A `real` or `double` → `Value::Float`.
    Float,
    /// A `real` or `double` → `Value::Float` at `real` precision.
    FloatAsReal,
    /// An integer → `Value::Float`, the nearest `double` (an integer replica of a `double`
    /// source).
    IntAsFloat,
    /// An integer → `Value::Float`, the nearest `real` (an integer replica of a `real`
    /// source).
    IntAsReal,
    /// A numeric → `Value::Float`, the `double` nearest to its decimal value (a numeric
    /// replica of a `double` source).
    NumericAsFloat,
    /// A numeric → `Value::Float`, the `real` nearest to its decimal value (a numeric replica
    /// of a `real` source).
    NumericAsReal,
    /// Text → `Value::Text`.
    Text,
    /// `char(n)` → `Value::Text` without trailing blanks.
    PaddedChar,
    /// Text → `Value::Text`, an empty string as `Value::Null` (the opt-in
    /// [`Coercions::empty_string_as_null`]).
    TextEmptyAsNull,
    /// `char(n)` → `Value::Text` without trailing blanks, an all-blank value as
    /// `Value::Null` (the opt-in [`Coercions::empty_string_as_null`]).
    PaddedCharEmptyAsNull,
    /// A uuid → `Value::Text`, lowercase hyphenated.
    UuidAsText,
    /// Text holding a uuid (the replica of a `uuid` source) → `Value::Text`, the uuid's
    /// lowercase hyphenated form when the text parses as PostgreSQL's uuid input does, the
    /// text as it is otherwise (never equal to a uuid's form, so a changed field).
    TextAsUuid,
    /// A `date` → `Value::Timestamp` at midnight UTC (a date against a timestamp).
    DateAsTimestamp,
    /// `boolean`.
    Bool,
    /// `date` → days since 1970-01-01.
    Date,
    /// `time` → microseconds since midnight.
    Time,
    /// `timestamp`/`timestamptz` → microseconds since 1970-01-01 UTC.
    Timestamp,
    /// `uuid` → `Value::Uuid`.
    Uuid,
    /// `bytea` → `Value::Bytes`.
    Bytes,
}

/// How the key field is decoded into a [`Key`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum KeyDecoder {
    /// An integer key of any width.
    Int,
    /// A uuid key.
    Uuid,
    /// A text key (`text`, `varchar`, `name`).
    Text,
    /// A `char(n)` key, right-trimmed.
    PaddedChar,
    /// A uuid key against a text key on the other side: its lowercase hyphenated text
    /// (which sorts as the uuid does, so the side keeps its uuid order).
    UuidAsText,
    /// A `date` key against a `date`: [`Key::Date`].
    Date,
    /// A `date` key against a `timestamp` or `timestamptz`: its midnight, [`Key::Timestamp`]
    /// (the date type's order is its midnights' order).
    DateAsTimestamp,
    /// A `timestamp` key (wall time, read as UTC): [`Key::Timestamp`].
    Timestamp,
    /// A `timestamptz` key (an instant, in UTC whatever the session's time zone):
    /// [`Key::Timestamp`].
    TimestampTz,
}

impl KeyDecoder {
    /// Text keys must be ordered bytewise by the database: `ORDER BY key COLLATE "C"`.
    pub fn needs_c_collation(self) -> bool {
        matches!(self, KeyDecoder::Text | KeyDecoder::PaddedChar)
    }

    /// Decodes a key field; `None` is a NULL key.
    pub fn decode(self, field: &[u8]) -> Result<Key, DecodeError> {
        match self {
            KeyDecoder::Int => Ok(Key::Int(int(field)?)),
            KeyDecoder::Uuid => Ok(Key::Uuid(uuid(field)?)),
            KeyDecoder::Text => Ok(Key::Text(text(field)?.to_owned())),
            KeyDecoder::PaddedChar => Ok(Key::Text(text(field)?.trim_end_matches(' ').to_owned())),
            KeyDecoder::UuidAsText => Ok(Key::Text(Key::Uuid(uuid(field)?).to_string())),
            KeyDecoder::Date => Ok(Key::Date(i32::from_be_bytes(fixed(field, "date")?))),
            KeyDecoder::DateAsTimestamp => Ok(Key::Timestamp(midnight_micros(fixed(field, "date")?))),
            KeyDecoder::Timestamp | KeyDecoder::TimestampTz => {
                Ok(Key::Timestamp(i64::from_be_bytes(fixed(field, "timestamp")?)))
            }
        }
    }

    /// The SQL type a key part decoded this way is read back into from its printed form
    /// ([`Key`]'s `Display`), for a statement that binds keys as text: `None` for an integer
    /// key (bound as `bigint`) and a text key (bound as it is).
    pub fn text_cast(self) -> Option<&'static str> {
        match self {
            KeyDecoder::Int | KeyDecoder::Text => None,
            KeyDecoder::Uuid | KeyDecoder::UuidAsText => Some("uuid"),
            KeyDecoder::PaddedChar => Some("bpchar"),
            KeyDecoder::Date | KeyDecoder::DateAsTimestamp => Some("date"),
            KeyDecoder::Timestamp => Some("timestamp"),
            KeyDecoder::TimestampTz => Some("timestamptz"),
        }
    }
}

/// A binary date (days since 2000-01-01) as its midnight in microseconds since 2000-01-01
/// (PostgreSQL's binary timestamp, a timestamp key); ±infinity as the extreme timestamps, as
/// `date::timestamp` does. A date past a timestamp's range (294276 AD) is no timestamp's
/// value: just inside the extremes, never equal to one.
fn midnight_micros(field: [u8; 4]) -> i64 {
    const DAY_MICROS: i64 = 86_400_000_000;
    match i32::from_be_bytes(field) {
        i32::MAX => i64::MAX,
        i32::MIN => i64::MIN,
        days => i64::from(days).checked_mul(DAY_MICROS).unwrap_or(if days > 0 { i64::MAX - 1 } else { i64::MIN + 1 }),
    }
}

/// Chooses the key decoders of both sides: both integer, both uuid, or both text-like; a
/// uuid against text (a replica that stores uuids as `character varying`) is compared as
/// the uuid's lowercase hyphenated text, the text side as it is stored.
pub fn plan_key(
    source: &ColumnType,
    target: &ColumnType,
    target_role: &str,
) -> Result<(KeyDecoder, KeyDecoder), Error> {
    let text_like = |family| matches!(family, Family::Text | Family::Char);
    if source.family == Family::Uuid && text_like(target.family) {
        return Ok((KeyDecoder::UuidAsText, text_key(target.family)));
    }
    if text_like(source.family) && target.family == Family::Uuid {
        return Ok((text_key(source.family), KeyDecoder::UuidAsText));
    }
    // A date against a timestamp (target-postgres' type for a date) is its midnight, as the
    // comparison table reads the pair's values.
    match (source.family, target.family) {
        (Family::Date, Family::Timestamp | Family::TimestampTz) => {
            return Ok((KeyDecoder::DateAsTimestamp, timestamp_key(target.family)));
        }
        (Family::Timestamp | Family::TimestampTz, Family::Date) => {
            return Ok((timestamp_key(source.family), KeyDecoder::DateAsTimestamp));
        }
        _ => {}
    }
    let side = |family| match family {
        Family::Integer => Some((0, KeyDecoder::Int)),
        Family::Uuid => Some((1, KeyDecoder::Uuid)),
        Family::Text => Some((2, KeyDecoder::Text)),
        Family::Char => Some((2, KeyDecoder::PaddedChar)),
        Family::Date => Some((3, KeyDecoder::Date)),
        Family::Timestamp | Family::TimestampTz => Some((4, timestamp_key(family))),
        _ => None,
    };
    match (side(source.family), side(target.family)) {
        (Some((a, source_decoder)), Some((b, target_decoder))) if a == b => Ok((source_decoder, target_decoder)),
        _ => Err(Error::KeyType {
            column: source.name.clone(),
            target_role: target_role.to_owned(),
            source_type: source.type_name.clone(),
            target_type: target.type_name.clone(),
        }),
    }
}

fn timestamp_key(family: Family) -> KeyDecoder {
    if family == Family::TimestampTz { KeyDecoder::TimestampTz } else { KeyDecoder::Timestamp }
}

fn text_key(family: Family) -> KeyDecoder {
    if family == Family::Char { KeyDecoder::PaddedChar } else { KeyDecoder::Text }
}

/// Known coercions of a replication pipeline that a user may declare expected (all off by
/// default: the default comparison is exact).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct Coercions {
    /// An empty string and NULL are one value in text-like columns (`text`, `varchar`,
    /// `char(n)`, enums), on either side: target-postgres loads every `''` as NULL.
    pub empty_string_as_null: bool,
}

impl Coercions {
    /// No coercion: the exact comparison.
    pub const NONE: Coercions = Coercions { empty_string_as_null: false };

    /// With or without [`Coercions::empty_string_as_null`].
    pub fn empty_string_as_null(self, on: bool) -> Coercions {
        Coercions { empty_string_as_null: on, ..self }
    }
}

/// Chooses the decoders of both sides of one compared column (see the module table),
/// comparing exactly.
pub fn plan_pair(source: &ColumnType, target: &ColumnType, target_role: &str) -> Result<(Decoder, Decoder), Error> {
    plan_pair_with(source, target, target_role, Coercions::NONE)
}

/// [`plan_pair`] with the declared [`Coercions`].
pub fn plan_pair_with(
    source: &ColumnType,
    target: &ColumnType,
    target_role: &str,
    coercions: Coercions,
) -> Result<(Decoder, Decoder), Error> {
    let pair = plan_exact(source, target, target_role)?;
    if !coercions.empty_string_as_null {
        return Ok(pair);
    }
    let nullable = |decoder| match decoder {
        Decoder::Text => Decoder::TextEmptyAsNull,
        Decoder::PaddedChar => Decoder::PaddedCharEmptyAsNull,
        other => other,
    };
    match pair {
        (a @ (Decoder::Text | Decoder::PaddedChar), b @ (Decoder::Text | Decoder::PaddedChar)) => {
            Ok((nullable(a), nullable(b)))
        }
        other => Ok(other),
    }
}

fn plan_exact(source: &ColumnType, target: &ColumnType, target_role: &str) -> Result<(Decoder, Decoder), Error> {
    use Family as F;
    let unsupported = |column: &ColumnType, role: &str| Error::UnsupportedType {
        role: role.to_owned(),
        column: column.name.clone(),
        type_name: column.type_name.clone(),
        pair: format!("{} on the source, {} on the {target_role}", source.type_name, target.type_name),
    };
    if source.family == F::Unsupported {
        return Err(unsupported(source, "source"));
    }
    if target.family == F::Unsupported {
        return Err(unsupported(target, target_role));
    }
    let text_like = |family| matches!(family, F::Text | F::Char | F::Enum);
    let text_decoder = |family| if family == F::Char { Decoder::PaddedChar } else { Decoder::Text };
    let pair = match (source.family, target.family) {
        (F::Integer, F::Integer) if source.type_name == target.type_name => {
            (Decoder::IntSameWidth, Decoder::IntSameWidth)
        }
        (F::Integer, F::Integer) => (Decoder::Int, Decoder::Int),
        (F::Numeric { scale: Some(a) }, F::Numeric { scale: Some(b) }) if a == b => {
            (Decoder::NumericSameScale, Decoder::NumericSameScale)
        }
        (F::Numeric { .. }, F::Numeric { .. }) => (Decoder::Numeric, Decoder::Numeric),
        (F::Numeric { .. }, F::Integer) => (Decoder::Numeric, Decoder::IntAsNumeric),
        (F::Integer, F::Numeric { .. }) => (Decoder::IntAsNumeric, Decoder::Numeric),
        // An exact source against a float replica: a loader that turns an exact value into a
        // float stores the nearest float, which is all the replica's type can hold; any
        // other float is a change (a replica 3.7 for 4, or 1.1049 for 1.10).
        (F::Numeric { .. }, F::Float8) => (Decoder::NumericAsFloat, Decoder::Float),
        (F::Numeric { .. }, F::Float4) => (Decoder::NumericAsReal, Decoder::Float),
        (F::Integer, F::Float8) => (Decoder::IntAsFloat, Decoder::Float),
        (F::Integer, F::Float4) => (Decoder::IntAsReal, Decoder::Float),
        // A float source against a narrower replica: the replica read as the source's float
        // type, never the source rounded to the replica's (its loss is a change).
        (F::Float8, F::Numeric { .. }) => (Decoder::Float, Decoder::NumericAsFloat),
        (F::Float4, F::Numeric { .. }) => (Decoder::FloatAsReal, Decoder::NumericAsReal),
        (F::Float8, F::Integer) => (Decoder::Float, Decoder::IntAsFloat),
        (F::Float4, F::Integer) => (Decoder::FloatAsReal, Decoder::IntAsReal),
        (F::Float8, F::Float8) | (F::Float4, F::Float4) | (F::Float8, F::Float4) => (Decoder::Float, Decoder::Float),
        (F::Float4, F::Float8) => (Decoder::FloatAsReal, Decoder::FloatAsReal),
        // A char(n) source cannot tell trailing blanks apart: the replica's are ignored too
        // (SQL's bpchar semantics), whatever its type.
        (F::Char, b) if text_like(b) => (Decoder::PaddedChar, Decoder::PaddedChar),
        (a, b) if text_like(a) && text_like(b) => (text_decoder(a), text_decoder(b)),
        // A uuid source cannot tell spellings of one uuid apart: the replica's text is read
        // as a uuid (an unparsable one stays itself, a changed field).
        (F::Uuid, F::Text) => (Decoder::UuidAsText, Decoder::TextAsUuid),
        (F::Uuid, b) if text_like(b) => (Decoder::UuidAsText, text_decoder(b)),
        (a, F::Uuid) if text_like(a) => (text_decoder(a), Decoder::UuidAsText),
        (F::Timestamp | F::TimestampTz, F::Timestamp | F::TimestampTz) => (Decoder::Timestamp, Decoder::Timestamp),
        (F::Bool, F::Bool) => (Decoder::Bool, Decoder::Bool),
        (F::Date, F::Date) => (Decoder::Date, Decoder::Date),
        // A date against a timestamp: the date is midnight (UTC, as a naive timestamp is
        // read), so a replica time other than midnight is a change.
        (F::Date, F::Timestamp | F::TimestampTz) => (Decoder::DateAsTimestamp, Decoder::Timestamp),
        (F::Timestamp | F::TimestampTz, F::Date) => (Decoder::Timestamp, Decoder::DateAsTimestamp),
        (F::Time, F::Time) => (Decoder::Time, Decoder::Time),
        (F::Uuid, F::Uuid) => (Decoder::Uuid, Decoder::Uuid),
        (F::Bytes, F::Bytes) => (Decoder::Bytes, Decoder::Bytes),
        _ => {
            return Err(Error::IncompatibleTypes {
                column: source.name.clone(),
                target_role: target_role.to_owned(),
                source_type: source.type_name.clone(),
                target_type: target.type_name.clone(),
            });
        }
    };
    Ok(pair)
}

impl Decoder {
    /// Decodes one non-NULL field. The error text never contains the value.
    pub fn decode(self, field: &[u8]) -> Result<Value, DecodeError> {
        Ok(match self {
            Decoder::Int | Decoder::IntSameWidth => Value::Int(int(field)?),
            Decoder::IntAsNumeric => Value::Numeric(Numeric::from_i64(int(field)?)),
            Decoder::Numeric | Decoder::NumericSameScale => Value::Numeric(numeric(field)?),
            Decoder::Float => Value::float(float(field)?),
            Decoder::FloatAsReal => Value::float(f64::from(float(field)? as f32)),
            Decoder::IntAsFloat => Value::float(int(field)? as f64),
            Decoder::IntAsReal => Value::float(f64::from(int(field)? as f32)),
            Decoder::NumericAsFloat => Value::float(parse_float(&numeric(field)?.to_string(), FloatWidth::Double)?),
            Decoder::NumericAsReal => Value::float(parse_float(&numeric(field)?.to_string(), FloatWidth::Real)?),
            Decoder::Text => Value::text(text(field)?),
            Decoder::PaddedChar => Value::padded_char(text(field)?),
            Decoder::TextEmptyAsNull | Decoder::PaddedCharEmptyAsNull if self.is_null(field) => Value::Null,
            Decoder::TextEmptyAsNull => Value::text(text(field)?),
            Decoder::PaddedCharEmptyAsNull => Value::padded_char(text(field)?),
            Decoder::UuidAsText => Value::text(Key::Uuid(uuid(field)?).to_string()),
            Decoder::TextAsUuid => {
                let text = text(field)?;
                match parse_uuid(text) {
                    Some(bytes) => Value::text(Key::Uuid(bytes).to_string()),
                    None => Value::text(text),
                }
            }
            Decoder::DateAsTimestamp => Value::Timestamp(date_as_micros(fixed(field, "date")?)),
            Decoder::Bool => match field {
                [byte] => Value::Bool(*byte != 0),
                _ => return Err(width_error("boolean", field)),
            },
            Decoder::Date => {
                let days = i32::from_be_bytes(fixed(field, "date")?);
                // ±infinity are i32::MAX/MIN: kept as the extremes.
                Value::Date(if days == i32::MAX || days == i32::MIN { days } else { days + EPOCH_SHIFT_DAYS })
            }
            Decoder::Time => Value::Time(i64::from_be_bytes(fixed(field, "time")?)),
            Decoder::Timestamp => {
                let micros = i64::from_be_bytes(fixed(field, "timestamp")?);
                Value::Timestamp(if micros == i64::MAX || micros == i64::MIN {
                    micros
                } else {
                    micros + EPOCH_SHIFT_MICROS
                })
            }
            Decoder::Uuid => Value::Uuid(uuid(field)?),
            Decoder::Bytes => Value::Bytes(field.into()),
        })
    }
}

impl Decoder {
    /// Whether a non-NULL field counts as NULL: an empty text (a blank `char(n)`) under
    /// [`Coercions::empty_string_as_null`].
    pub fn is_null(self, field: &[u8]) -> bool {
        match self {
            Decoder::TextEmptyAsNull => field.is_empty(),
            Decoder::PaddedCharEmptyAsNull => field.iter().all(|&byte| byte == b' '),
            _ => false,
        }
    }

    /// Whether this decoder's canonical encoding of a field is the field's bytes as sent
    /// (see the module docs), so a reader may copy them without calling
    /// [`Decoder::encode`].
    pub fn is_wire(self) -> bool {
        matches!(
            self,
            Decoder::IntSameWidth
                | Decoder::NumericSameScale
                | Decoder::Text
                | Decoder::Bool
                | Decoder::Date
                | Decoder::Time
                | Decoder::Timestamp
                | Decoder::Uuid
                | Decoder::Bytes
        )
    }

    /// Appends the canonical encoding of one non-NULL field to `out` (see
    /// [`EncodedRow`](crate::stream::EncodedRow)): the two sides of a column pair encode
    /// equal values to equal bytes, without building a [`Value`]. `scratch` is reused
    /// working space. The error text never contains the value.
    pub fn encode(self, field: &[u8], out: &mut Vec<u8>, scratch: &mut Vec<u8>) -> Result<(), DecodeError> {
        match self {
            Decoder::Int => out.extend_from_slice(&int(field)?.to_be_bytes()),
            Decoder::IntSameWidth => {
                int(field)?;
                out.extend_from_slice(field);
            }
            Decoder::NumericSameScale => {
                if field.len() < 8 {
                    return Err(width_error("numeric", field));
                }
                out.extend_from_slice(field);
            }
            Decoder::IntAsNumeric => {
                use std::io::Write as _;
                let _ = write!(out, "{}", int(field)?);
            }
            Decoder::Numeric => numeric_text(field, out, scratch)?,
            Decoder::Float => out.extend_from_slice(&canonical_bits(float(field)?).to_be_bytes()),
            Decoder::FloatAsReal => {
                out.extend_from_slice(&canonical_bits(f64::from(float(field)? as f32)).to_be_bytes());
            }
            Decoder::IntAsFloat => out.extend_from_slice(&canonical_bits(int(field)? as f64).to_be_bytes()),
            Decoder::IntAsReal => out.extend_from_slice(&canonical_bits(f64::from(int(field)? as f32)).to_be_bytes()),
            Decoder::NumericAsFloat | Decoder::NumericAsReal => {
                let width = if self == Decoder::NumericAsReal { FloatWidth::Real } else { FloatWidth::Double };
                // The decimal text is written where the bits will go, read, then replaced.
                let start = out.len();
                numeric_text(field, out, scratch)?;
                let value = std::str::from_utf8(&out[start..])
                    .map_err(|_| DecodeError::Unreadable("numeric"))
                    .and_then(|text| parse_float(text, width));
                out.truncate(start);
                out.extend_from_slice(&canonical_bits(value?).to_be_bytes());
            }
            // Compared as bytes: PostgreSQL sends UTF-8 to every client.
            Decoder::Text => out.extend_from_slice(field),
            Decoder::TextEmptyAsNull => out.extend_from_slice(field),
            Decoder::PaddedChar | Decoder::PaddedCharEmptyAsNull => {
                let end = field.iter().rposition(|&byte| byte != b' ').map_or(0, |at| at + 1);
                out.extend_from_slice(&field[..end]);
            }
            Decoder::UuidAsText => {
                use std::io::Write as _;
                let _ = write!(out, "{}", Key::Uuid(uuid(field)?));
            }
            Decoder::TextAsUuid => {
                use std::io::Write as _;
                match parse_uuid(text(field)?) {
                    Some(bytes) => {
                        let _ = write!(out, "{}", Key::Uuid(bytes));
                    }
                    None => out.extend_from_slice(field),
                }
            }
            Decoder::DateAsTimestamp => {
                // A timestamp's wire form: microseconds since 2000-01-01, ±infinity kept.
                let micros = match date_as_micros(fixed(field, "date")?) {
                    extreme @ (i64::MAX | i64::MIN) => extreme,
                    micros => micros - EPOCH_SHIFT_MICROS,
                };
                out.extend_from_slice(&micros.to_be_bytes());
            }
            Decoder::Bool => match field {
                [byte] => out.push(u8::from(*byte != 0)),
                _ => return Err(width_error("boolean", field)),
            },
            Decoder::Date => out.extend_from_slice(&fixed::<4>(field, "date")?),
            Decoder::Time => out.extend_from_slice(&fixed::<8>(field, "time")?),
            Decoder::Timestamp => out.extend_from_slice(&fixed::<8>(field, "timestamp")?),
            Decoder::Uuid => out.extend_from_slice(&uuid(field)?),
            Decoder::Bytes => out.extend_from_slice(field),
        }
        Ok(())
    }

    /// The [`Value`] an encoding made by [`Decoder::encode`] stands for: the same value
    /// [`Decoder::decode`] gives for the original field.
    pub fn decode_encoded(self, encoded: &[u8]) -> Result<Value, DecodeError> {
        match self {
            Decoder::IntAsNumeric | Decoder::Numeric => {
                let text = text(encoded)?;
                Numeric::parse(text).map(Value::Numeric).map_err(|_| DecodeError::Unreadable("encoded numeric"))
            }
            Decoder::FloatAsReal
            | Decoder::IntAsFloat
            | Decoder::IntAsReal
            | Decoder::NumericAsFloat
            | Decoder::NumericAsReal => Decoder::Float.decode(encoded),
            Decoder::PaddedChar
            | Decoder::PaddedCharEmptyAsNull
            | Decoder::TextEmptyAsNull
            | Decoder::UuidAsText
            | Decoder::TextAsUuid => Decoder::Text.decode(encoded),
            Decoder::DateAsTimestamp => Decoder::Timestamp.decode(encoded),
            other => other.decode(encoded),
        }
    }
}

/// A double's bits with `-0.0` as `0.0` and every NaN as one NaN (as [`Value::float`]).
pub(super) fn canonical_bits(value: f64) -> u64 {
    if value.is_nan() {
        f64::NAN.to_bits()
    } else if value == 0.0 {
        0.0f64.to_bits()
    } else {
        value.to_bits()
    }
}

/// Writes a binary numeric as normalised decimal text (as [`Numeric`] displays it).
fn numeric_text(field: &[u8], out: &mut Vec<u8>, digits: &mut Vec<u8>) -> Result<(), DecodeError> {
    let word = |at: usize| -> Result<u16, DecodeError> {
        field.get(at..at + 2).map(|b| u16::from_be_bytes([b[0], b[1]])).ok_or_else(|| width_error("numeric", field))
    };
    let ndigits = i32::from((word(0)? as i16).max(0));
    let weight = i32::from(word(2)? as i16);
    let sign = word(4)?;
    let special: &[u8] = match sign {
        0x0000 | 0x4000 => b"",
        0xC000 => b"NaN",
        0xD000 => b"Infinity",
        0xF000 => b"-Infinity",
        _ => return Err(DecodeError::NumericSign),
    };
    if !special.is_empty() {
        out.extend_from_slice(special);
        return Ok(());
    }
    if field.len() != 8 + 2 * ndigits as usize {
        return Err(width_error("numeric", field));
    }
    let group = |index: i32| -> u16 {
        if (0..ndigits).contains(&index) {
            let at = 8 + 2 * index as usize;
            u16::from_be_bytes([field[at], field[at + 1]])
        } else {
            0
        }
    };
    let push = |digits: &mut Vec<u8>, group: u16| {
        digits
            .extend_from_slice(&[group / 1000, group / 100 % 10, group / 10 % 10, group % 10].map(|d| b'0' + d as u8));
    };
    digits.clear();
    for index in 0..=weight {
        push(digits, group(index));
    }
    let point = digits.len();
    for index in (weight + 1)..ndigits {
        push(digits, group(index));
    }
    write_decimal(sign == 0x4000, digits, point, out);
    Ok(())
}

/// Writes `digits` (ASCII, the integer part before `point`) as normalised decimal text: no
/// leading zeros, no trailing fraction zeros, no `-0`.
pub(super) fn write_decimal(negative: bool, digits: &[u8], point: usize, out: &mut Vec<u8>) {
    let integer = &digits[..point];
    let integer = &integer[integer.iter().position(|&d| d != b'0').unwrap_or(integer.len())..];
    let fraction = &digits[point..];
    let fraction = &fraction[..fraction.iter().rposition(|&d| d != b'0').map_or(0, |at| at + 1)];
    if negative && !(integer.is_empty() && fraction.is_empty()) {
        out.push(b'-');
    }
    if integer.is_empty() {
        out.push(b'0');
    } else {
        out.extend_from_slice(integer);
    }
    if !fraction.is_empty() {
        out.push(b'.');
        out.extend_from_slice(fraction);
    }
}

/// A binary date (days since 2000-01-01) as microseconds since 1970-01-01 at midnight UTC:
/// [`midnight_micros`] moved to the Unix epoch (the extremes, and the markers just inside
/// them, kept).
fn date_as_micros(field: [u8; 4]) -> i64 {
    match midnight_micros(field) {
        marker if marker >= i64::MAX - 1 || marker <= i64::MIN + 1 => marker,
        micros => micros.checked_add(EPOCH_SHIFT_MICROS).unwrap_or(i64::MAX - 1),
    }
}

/// A uuid's 16 bytes from its text as PostgreSQL's `uuid_in` reads it: 32 hex digits of
/// either case, optionally in braces, with a hyphen allowed after any group of four digits.
fn parse_uuid(text: &str) -> Option<[u8; 16]> {
    let inner = match text.strip_prefix('{') {
        Some(rest) => rest.strip_suffix('}')?,
        None => text,
    };
    let mut bytes = [0u8; 16];
    let mut digits = 0usize;
    let mut hyphen_allowed = false;
    for character in inner.chars() {
        if character == '-' {
            if !hyphen_allowed {
                return None;
            }
            hyphen_allowed = false;
            continue;
        }
        let value = character.to_digit(16)? as u8;
        if digits == 32 {
            return None;
        }
        bytes[digits / 2] |= if digits.is_multiple_of(2) { value << 4 } else { value };
        digits += 1;
        hyphen_allowed = digits.is_multiple_of(4) && digits < 32;
    }
    (digits == 32 && !inner.ends_with('-')).then_some(bytes)
}

fn width_error(kind: &'static str, field: &[u8]) -> DecodeError {
    DecodeError::Width { kind, bytes: field.len() }
}

fn fixed<const N: usize>(field: &[u8], kind: &'static str) -> Result<[u8; N], DecodeError> {
    field.try_into().map_err(|_| width_error(kind, field))
}

fn int(field: &[u8]) -> Result<i64, DecodeError> {
    match field.len() {
        2 => Ok(i64::from(i16::from_be_bytes([field[0], field[1]]))),
        4 => Ok(i64::from(i32::from_be_bytes(fixed(field, "integer")?))),
        8 => Ok(i64::from_be_bytes(fixed(field, "integer")?)),
        _ => Err(width_error("integer", field)),
    }
}

fn float(field: &[u8]) -> Result<f64, DecodeError> {
    match field.len() {
        4 => Ok(f64::from(f32::from_be_bytes(fixed(field, "real")?))),
        8 => Ok(f64::from_be_bytes(fixed(field, "double")?)),
        _ => Err(width_error("floating-point", field)),
    }
}

/// The precision a decimal value is read at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum FloatWidth {
    /// `double precision`.
    Double,
    /// `real`, widened to a double afterwards (one rounding, straight to `real`).
    Real,
}

/// The float nearest to a numeric's decimal text (as [`Numeric`] displays it, or `NaN`,
/// `Infinity`, `-Infinity`), correctly rounded at `width`; beyond the range it is ±infinity,
/// as for PostgreSQL's cast.
pub(super) fn parse_float(text: &str, width: FloatWidth) -> Result<f64, DecodeError> {
    let special = match text {
        "NaN" => Some(f64::NAN),
        "Infinity" => Some(f64::INFINITY),
        "-Infinity" => Some(f64::NEG_INFINITY),
        _ => None,
    };
    if let Some(value) = special {
        return Ok(value);
    }
    let unreadable = |_| DecodeError::Unreadable("numeric");
    match width {
        FloatWidth::Double => text.parse::<f64>().map_err(unreadable),
        FloatWidth::Real => text.parse::<f32>().map(f64::from).map_err(unreadable),
    }
}

fn text(field: &[u8]) -> Result<&str, DecodeError> {
    std::str::from_utf8(field).map_err(|_| DecodeError::NotUtf8)
}

fn uuid(field: &[u8]) -> Result<[u8; 16], DecodeError> {
    fixed(field, "uuid")
}

/// PostgreSQL's binary numeric: ndigits, weight, sign, dscale (int16 each), then `ndigits`
/// base-10000 digit groups; group `i` is worth 10000^(weight - i).
fn numeric(field: &[u8]) -> Result<Numeric, DecodeError> {
    let word = |at: usize| -> Result<u16, DecodeError> {
        field.get(at..at + 2).map(|b| u16::from_be_bytes([b[0], b[1]])).ok_or_else(|| width_error("numeric", field))
    };
    let ndigits = word(0)? as i16;
    let weight = i32::from(word(2)? as i16);
    let sign = word(4)?;
    match sign {
        0x0000 | 0x4000 => {}
        0xC000 => return Numeric::parse("NaN").map_err(|_| DecodeError::Unreadable("numeric")),
        0xD000 => return Numeric::parse("Infinity").map_err(|_| DecodeError::Unreadable("numeric")),
        0xF000 => return Numeric::parse("-Infinity").map_err(|_| DecodeError::Unreadable("numeric")),
        _ => return Err(DecodeError::NumericSign),
    }
    let ndigits = i32::from(ndigits.max(0));
    if field.len() != 8 + 2 * ndigits as usize {
        return Err(width_error("numeric", field));
    }
    let digit = |index: i32| -> u16 {
        if (0..ndigits).contains(&index) { word(8 + 2 * index as usize).unwrap_or(0) } else { 0 }
    };
    let mut text = String::with_capacity(8 + 4 * (ndigits.max(weight + 1).max(1) as usize));
    if sign == 0x4000 {
        text.push('-');
    }
    if weight < 0 {
        text.push('0');
    } else {
        for index in 0..=weight {
            let group = digit(index);
            if index == 0 {
                text.push_str(&group.to_string());
            } else {
                push_group(&mut text, group);
            }
        }
    }
    if weight + 1 < ndigits {
        text.push('.');
        for index in (weight + 1)..ndigits {
            push_group(&mut text, digit(index));
        }
    }
    Numeric::parse(&text).map_err(|_| DecodeError::Unreadable("numeric"))
}

fn push_group(text: &mut String, group: u16) {
    let digits = [group / 1000, group / 100 % 10, group / 10 % 10, group % 10];
    text.extend(digits.iter().map(|&d| char::from(b'0' + d as u8)));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn column(name: &str, type_name: &str, family: Family) -> ColumnType {
        ColumnType { name: name.into(), type_name: type_name.into(), family }
    }

    fn numeric_bytes(ndigits: &[u16], weight: i16, negative: bool, dscale: u16) -> Vec<u8> {
        let mut bytes = Vec::new();
        bytes.extend((ndigits.len() as u16).to_be_bytes());
        bytes.extend(weight.to_be_bytes());
        bytes.extend(if negative { 0x4000u16 } else { 0 }.to_be_bytes());
        bytes.extend(dscale.to_be_bytes());
        for digit in ndigits {
            bytes.extend(digit.to_be_bytes());
        }
        bytes
    }

    fn show(value: &Value) -> String {
        value.canonical_text().unwrap()
    }

    #[test]
    fn binary_numerics_decode_to_their_decimal_value() {
        // 12345.678 = groups [1, 2345, 6780], weight 1.
        let value = Decoder::Numeric.decode(&numeric_bytes(&[1, 2345, 6780], 1, false, 3)).unwrap();
        assert_eq!(show(&value), "12345.678");
        // -0.00012 = groups [1, 2000] at weight -1 (0.0001 + 0.00002).
        let value = Decoder::Numeric.decode(&numeric_bytes(&[1, 2000], -1, true, 5)).unwrap();
        assert_eq!(show(&value), "-0.00012");
        // One leading zero group: weight -2.
        let value = Decoder::Numeric.decode(&numeric_bytes(&[1, 2000], -2, false, 9)).unwrap();
        assert_eq!(show(&value), "0.000000012");
        // 20000 = [2] at weight 1 (trailing zero groups are omitted on the wire).
        let value = Decoder::Numeric.decode(&numeric_bytes(&[2], 1, false, 0)).unwrap();
        assert_eq!(show(&value), "20000");
        // Zero has no digit groups.
        assert_eq!(show(&Decoder::Numeric.decode(&numeric_bytes(&[], 0, false, 2)).unwrap()), "0");
        assert!(Decoder::Numeric.decode(&[0, 1]).is_err());
    }

    /// A malformed field is a typed error saying what was wrong with its shape; its text
    /// never holds the field's bytes.
    #[test]
    fn malformed_fields_are_typed_errors_that_show_no_value() {
        assert_eq!(KeyDecoder::Uuid.decode(b"abc"), Err(DecodeError::Width { kind: "uuid", bytes: 3 }));
        assert_eq!(Decoder::Int.decode(b"abc"), Err(DecodeError::Width { kind: "integer", bytes: 3 }));
        assert_eq!(KeyDecoder::Text.decode(&[0xff, 0xfe]), Err(DecodeError::NotUtf8));
        let mut unknown_sign = numeric_bytes(&[1], 0, false, 0);
        unknown_sign[4..6].copy_from_slice(&0x1234u16.to_be_bytes());
        assert_eq!(Decoder::Numeric.decode(&unknown_sign), Err(DecodeError::NumericSign));
        let (mut out, mut scratch) = (Vec::new(), Vec::new());
        assert_eq!(Decoder::Numeric.encode(&unknown_sign, &mut out, &mut scratch), Err(DecodeError::NumericSign));
        let error = Decoder::Bool.decode(b"secret").unwrap_err();
        assert_eq!(error.to_string(), "a boolean field of 6 bytes");
        assert!(!error.to_string().contains("secret"));
    }

    #[test]
    fn an_exact_source_equals_only_the_nearest_float_of_a_float_replica() {
        let target = column("amount", "double precision", Family::Float8);
        let real = column("amount", "real", Family::Float4);
        let same = |source: &ColumnType, target: &ColumnType, exact: &[u8], float: &[u8]| {
            let (a, b) = plan_pair(source, target, "replica").unwrap();
            let equal = a.decode(exact).unwrap() == b.decode(float).unwrap();
            assert_eq!(equal, encode(a, exact) == encode(b, float), "the encoded path agrees");
            equal
        };
        let cents = column("amount", "numeric(12,2)", Family::Numeric { scale: Some(2) });
        let unscaled = column("amount", "numeric", Family::Numeric { scale: None });
        let integer = column("amount", "integer", Family::Integer);
        let f8 = |value: f64| value.to_be_bytes().to_vec();
        let f4 = |value: f32| value.to_be_bytes().to_vec();
        let nineteen_99 = numeric_bytes(&[19, 9900], 0, false, 2);
        let one_10 = numeric_bytes(&[1, 1000], 0, false, 2);
        assert!(same(&cents, &target, &nineteen_99, &f8(19.99)));
        assert!(!same(&cents, &target, &nineteen_99, &f8(19.98)));
        // The issue's corruptions: more digits than the source's scale are not forgiven.
        assert!(!same(&cents, &target, &one_10, &f8(1.1049)));
        assert!(same(&cents, &target, &one_10, &f8(1.1)));
        assert!(!same(&integer, &target, &4i32.to_be_bytes(), &f8(3.7)));
        assert!(same(&integer, &target, &4i32.to_be_bytes(), &f8(4.0)));
        // A sign is a change.
        assert!(!same(&cents, &target, &numeric_bytes(&[100], 0, true, 2), &f8(100.0)));
        // No declared scale is needed: the nearest double of any decimal is defined.
        let third = numeric_bytes(&[0, 3333, 3333, 3333, 3333, 3333], 0, false, 20);
        assert!(same(&unscaled, &target, &third, &f8(1.0 / 3.0)));
        // A real replica holds the nearest real.
        assert!(same(&cents, &real, &one_10, &f4(1.1)));
        assert!(!same(&cents, &real, &one_10, &f4(1.1001)));
        assert!(same(&integer, &real, &16_777_217i32.to_be_bytes(), &f4(16_777_216.0)), "the nearest real");
        assert!(!same(&integer, &real, &16_777_217i32.to_be_bytes(), &f4(16_777_218.0)));
    }

    #[test]
    fn a_narrower_replica_of_a_float_source_is_read_as_the_source_type() {
        let double = column("x", "double precision", Family::Float8);
        let real = column("x", "real", Family::Float4);
        let integer = column("x", "integer", Family::Integer);
        let cents = column("x", "numeric(12,2)", Family::Numeric { scale: Some(2) });
        let unscaled = column("x", "numeric", Family::Numeric { scale: None });
        let pair = |a: &ColumnType, b: &ColumnType| plan_pair(a, b, "replica").unwrap();
        let same = |(a, b): (Decoder, Decoder), source: &[u8], replica: &[u8]| {
            let equal = a.decode(source).unwrap() == b.decode(replica).unwrap();
            // The encoded path agrees with the value path.
            assert_eq!(equal, encode(a, source) == encode(b, replica));
            equal
        };
        let int = |value: i32| value.to_be_bytes().to_vec();
        let f8 = |value: f64| value.to_be_bytes().to_vec();
        let f4 = |value: f32| value.to_be_bytes().to_vec();
        // 1.00 = groups [1] at weight 0; 1.50 = [1, 5000]; 0.10 = [1000] at weight -1.
        let (one, one_and_a_half, a_tenth) = (
            numeric_bytes(&[1], 0, false, 2),
            numeric_bytes(&[1, 5000], 0, false, 2),
            numeric_bytes(&[1000], -1, false, 2),
        );

        // The issue's values: every rounding of the replica is a change.
        for (source, replica) in [(3.7, 4), (3.2, 3), (-0.4, 0), (2.5, 3)] {
            assert!(!same(pair(&double, &integer), &f8(source), &int(replica)), "{source} against {replica}");
        }
        assert!(!same(pair(&double, &cents), &f8(1.004), &one));
        assert!(!same(pair(&double, &real), &f8(16_777_217.0), &f4(16_777_216.0)));
        assert!(!same(pair(&real, &cents), &f4(0.125), &numeric_bytes(&[1300], -1, false, 2)));
        assert!(!same(pair(&double, &real), &f8(0.1), &f4(0.1)), "a real does not hold the double 0.1");

        // What the source cannot tell apart is equal.
        assert!(same(pair(&double, &integer), &f8(4.0), &int(4)));
        assert!(same(pair(&double, &integer), &f8(-0.0), &int(0)));
        assert!(same(pair(&double, &cents), &f8(1.5), &one_and_a_half));
        assert!(same(pair(&double, &cents), &f8(0.1), &a_tenth));
        assert!(same(pair(&double, &unscaled), &f8(0.1), &numeric_bytes(&[1000], -1, false, 1)));
        assert!(same(pair(&real, &cents), &f4(0.1), &a_tenth));
        assert!(same(pair(&real, &integer), &f4(16_777_216.0), &int(16_777_217)), "one real");
        assert!(same(pair(&real, &double), &f4(0.1), &f8(0.1)), "one real");
        assert!(same(pair(&double, &real), &f8(0.5), &f4(0.5)));
    }

    #[test]
    fn numerics_read_as_floats_are_correctly_rounded() {
        assert_eq!(parse_float("0.1", FloatWidth::Double), Ok(0.1));
        assert_eq!(parse_float("0.1", FloatWidth::Real), Ok(f64::from(0.1f32)));
        assert_eq!(parse_float("16777217", FloatWidth::Real), Ok(16_777_216.0));
        assert_eq!(parse_float("-Infinity", FloatWidth::Double), Ok(f64::NEG_INFINITY));
        assert!(parse_float("NaN", FloatWidth::Real).unwrap().is_nan());
        assert_eq!(parse_float(&format!("1{}", "0".repeat(400)), FloatWidth::Double), Ok(f64::INFINITY));
        let nan = [0u8, 0, 0, 0, 0xC0, 0, 0, 0];
        assert_eq!(Decoder::NumericAsFloat.decode(&nan).unwrap(), Value::float(f64::NAN));
        assert_eq!(encode(Decoder::NumericAsReal, &nan), encode(Decoder::Float, &f64::NAN.to_be_bytes()));
    }

    #[test]
    fn integers_of_any_width_and_numerics_compare_by_value() {
        let (a, b) = plan_pair(
            &column("n", "integer", Family::Integer),
            &column("n", "numeric(10,2)", Family::Numeric { scale: Some(2) }),
            "target",
        )
        .unwrap();
        assert_eq!(a.decode(&7i32.to_be_bytes()).unwrap(), b.decode(&numeric_bytes(&[7], 0, false, 2)).unwrap());
        assert_eq!(Decoder::Int.decode(&7i16.to_be_bytes()), Decoder::Int.decode(&7i64.to_be_bytes()));
    }

    #[test]
    fn same_types_are_compared_as_sent_and_others_canonically() {
        let scaled = |name: &str, scale: u32| column("n", name, Family::Numeric { scale: Some(scale) });
        let pair = |a: &ColumnType, b: &ColumnType| plan_pair(a, b, "target").unwrap();
        let bigint = column("n", "bigint", Family::Integer);
        let integer = column("n", "integer", Family::Integer);
        assert_eq!(pair(&bigint, &bigint), (Decoder::IntSameWidth, Decoder::IntSameWidth));
        assert_eq!(pair(&integer, &bigint), (Decoder::Int, Decoder::Int));
        assert_eq!(
            pair(&scaled("numeric(12,2)", 2), &scaled("numeric(14,2)", 2)),
            (Decoder::NumericSameScale, Decoder::NumericSameScale)
        );
        assert_eq!(
            pair(&scaled("numeric(12,2)", 2), &scaled("numeric(18,4)", 4)),
            (Decoder::Numeric, Decoder::Numeric)
        );
        let unscaled = column("n", "numeric", Family::Numeric { scale: None });
        assert_eq!(pair(&unscaled, &unscaled), (Decoder::Numeric, Decoder::Numeric), "1.5 and 1.50 differ as sent");
        let aware = column("t", "timestamp with time zone", Family::TimestampTz);
        let naive = column("t", "timestamp without time zone", Family::Timestamp);
        let (a, b) = pair(&aware, &naive);
        assert!(a.is_wire() && b.is_wire(), "both are UTC microseconds");
        let (a, b) = pair(&column("c", "text", Family::Text), &column("c", "character(4)", Family::Char));
        assert!(a.is_wire() && !b.is_wire());
        assert!(!Decoder::Float.is_wire(), "-0 and 0 are equal values with different bits");

        // A wire encoding is the field itself, and reads back as the value.
        let field = 7i32.to_be_bytes();
        assert_eq!(encode(Decoder::IntSameWidth, &field), field);
        assert_eq!(Decoder::IntSameWidth.decode_encoded(&field), Ok(Value::Int(7)));
        let field = numeric_bytes(&[19, 9900], 0, false, 2);
        assert_eq!(encode(Decoder::NumericSameScale, &field), field);
        assert_eq!(show(&Decoder::NumericSameScale.decode_encoded(&field).unwrap()), "19.99");
        assert_eq!(encode(Decoder::PaddedChar, b"ab  "), b"ab");
    }

    #[test]
    fn timestamps_and_dates_shift_to_the_unix_epoch() {
        let value = Decoder::Timestamp.decode(&0i64.to_be_bytes()).unwrap();
        assert_eq!(show(&value), "2000-01-01T00:00:00Z");
        assert_eq!(show(&Decoder::Date.decode(&(-1i32).to_be_bytes()).unwrap()), "1999-12-31");
        // ±infinity stay the extremes.
        assert_eq!(Decoder::Timestamp.decode(&i64::MAX.to_be_bytes()).unwrap(), Value::Timestamp(i64::MAX));
        assert_eq!(Decoder::Timestamp.decode(&i64::MIN.to_be_bytes()).unwrap(), Value::Timestamp(i64::MIN));
        assert_eq!(Decoder::Date.decode(&i32::MIN.to_be_bytes()).unwrap(), Value::Date(i32::MIN));
    }

    #[test]
    fn char_columns_are_trimmed_and_uuids_compare_with_their_text() {
        let (a, b) =
            plan_pair(&column("c", "character(5)", Family::Char), &column("c", "text", Family::Text), "target")
                .unwrap();
        assert_eq!(a.decode(b"ab   ").unwrap(), b.decode(b"ab").unwrap());
        let (a, b) =
            plan_pair(&column("u", "uuid", Family::Uuid), &column("u", "character varying", Family::Text), "target")
                .unwrap();
        let mut bytes = [0u8; 16];
        bytes[15] = 0xab;
        assert_eq!(a.decode(&bytes).unwrap(), b.decode(b"00000000-0000-0000-0000-0000000000ab").unwrap());
    }

    #[test]
    fn a_date_against_a_timestamp_is_midnight() {
        let date = column("booked_on", "date", Family::Date);
        let naive = column("booked_on", "timestamp without time zone", Family::Timestamp);
        let aware = column("booked_on", "timestamp with time zone", Family::TimestampTz);
        // 2026-07-22 is day 9699 after 2000-01-01; its midnight is 9699 * 86400 s.
        let day = 9699i32.to_be_bytes();
        let midnight = (9699i64 * 86_400_000_000).to_be_bytes();
        let a_second_later = (9699i64 * 86_400_000_000 + 1_000_000).to_be_bytes();
        for replica in [&naive, &aware] {
            let (a, b) = plan_pair(&date, replica, "replica").unwrap();
            assert_eq!(a.decode(&day).unwrap(), b.decode(&midnight).unwrap());
            assert_ne!(a.decode(&day).unwrap(), b.decode(&a_second_later).unwrap());
            assert_eq!(encode(a, &day), encode(b, &midnight));
            assert_ne!(encode(a, &day), encode(b, &a_second_later));
            assert_eq!(a.decode_encoded(&encode(a, &day)).unwrap(), a.decode(&day).unwrap());
            assert_eq!(show(&a.decode(&day).unwrap()), "2026-07-22T00:00:00Z");
        }
        // The other way round: a timestamp source with a time of day differs from its date.
        let (a, b) = plan_pair(&naive, &date, "replica").unwrap();
        assert_eq!(a.decode(&midnight).unwrap(), b.decode(&day).unwrap());
        assert_ne!(a.decode(&a_second_later).unwrap(), b.decode(&day).unwrap());
        // ±infinity stay the extremes.
        let (a, b) = plan_pair(&date, &naive, "replica").unwrap();
        assert_eq!(a.decode(&i32::MAX.to_be_bytes()).unwrap(), b.decode(&i64::MAX.to_be_bytes()).unwrap());
        assert_eq!(encode(a, &i32::MIN.to_be_bytes()), encode(b, &i64::MIN.to_be_bytes()));
        // A date past the timestamps' range is none of them.
        let far = (i32::MAX - 1).to_be_bytes();
        assert_ne!(a.decode(&far).unwrap(), b.decode(&i64::MAX.to_be_bytes()).unwrap());
        assert_eq!(a.decode_encoded(&encode(a, &far)).unwrap(), a.decode(&far).unwrap());
    }

    #[test]
    fn a_uuid_stored_as_text_compares_as_a_uuid() {
        let source = column("u", "uuid", Family::Uuid);
        let replica = column("u", "character varying", Family::Text);
        let (a, b) = plan_pair(&source, &replica, "replica").unwrap();
        let mut bytes = [0u8; 16];
        bytes[0] = 0x12;
        bytes[15] = 0xab;
        let same = |text: &str| {
            let equal = a.decode(&bytes).unwrap() == b.decode(text.as_bytes()).unwrap();
            assert_eq!(equal, encode(a, &bytes) == encode(b, text.as_bytes()), "{text}");
            equal
        };
        assert!(same("12000000-0000-0000-0000-0000000000ab"));
        assert!(same("12000000-0000-0000-0000-0000000000AB"), "one uuid in another case");
        assert!(same("{12000000000000000000-0000000000ab}"), "PostgreSQL's other spellings");
        assert!(!same("12000000-0000-0000-0000-0000000000ac"));
        assert!(!same("not a uuid"), "an unparsable replica value is a change");
        assert!(!same("12000000-0000-0000-0000-0000000000ab0"));
        assert!(!same("12000000-0000-0000-0000-0000000000a-b"));
        assert!(!same(""));
        assert_eq!(show(&b.decode(b"not a uuid").unwrap()), "not a uuid");

        // A text source keeps its case: another spelling on a uuid replica is a change.
        let (a, b) = plan_pair(&replica, &source, "replica").unwrap();
        assert_ne!(a.decode(b"12000000-0000-0000-0000-0000000000AB").unwrap(), b.decode(&bytes).unwrap());
    }

    #[test]
    fn a_uuid_key_stored_as_text_is_matched_by_its_text() {
        let source = column("id", "uuid", Family::Uuid);
        let replica = column("id", "character varying", Family::Text);
        let (a, b) = plan_key(&source, &replica, "replica").unwrap();
        assert_eq!((a, b), (KeyDecoder::UuidAsText, KeyDecoder::Text));
        assert!(!a.needs_c_collation(), "a uuid side keeps its own order, which is its text's");
        assert!(b.needs_c_collation());
        let mut bytes = [0u8; 16];
        bytes[15] = 0xab;
        assert_eq!(a.decode(&bytes).unwrap(), b.decode(b"00000000-0000-0000-0000-0000000000ab").unwrap());
        // Lowercase hex text sorts as the bytes do.
        let mut higher = bytes;
        higher[0] = 0xa0;
        assert!(a.decode(&bytes).unwrap() < a.decode(&higher).unwrap());
        let (a, b) = plan_key(&replica, &source, "replica").unwrap();
        assert_eq!((a, b), (KeyDecoder::Text, KeyDecoder::UuidAsText));
        assert!(plan_key(&source, &column("id", "integer", Family::Integer), "replica").is_err());
    }

    #[test]
    fn a_char_source_ignores_the_replica_blank_padding() {
        let source = column("code", "character(8)", Family::Char);
        let varchar = column("code", "character varying(8)", Family::Text);
        let (a, b) = plan_pair(&source, &varchar, "replica").unwrap();
        assert_eq!(a.decode(b"ab      ").unwrap(), b.decode(b"ab      ").unwrap());
        assert_eq!(encode(a, b"ab      "), encode(b, b"ab      "));
        assert_eq!(a.decode(b"ab      ").unwrap(), b.decode(b"ab").unwrap());
        assert_ne!(a.decode(b"ab      ").unwrap(), b.decode(b" ab").unwrap(), "leading blanks count");
        // A text source can tell trailing blanks apart: a padded replica is a change.
        let (a, b) = plan_pair(&varchar, &varchar, "replica").unwrap();
        assert_ne!(a.decode(b"ab").unwrap(), b.decode(b"ab  ").unwrap());
    }

    #[test]
    fn empty_strings_are_null_only_when_declared() {
        let text = column("note", "text", Family::Text);
        let padded = column("note", "character(3)", Family::Char);
        let (a, b) = plan_pair(&text, &text, "replica").unwrap();
        assert_ne!(a.decode(b"").unwrap(), Value::Null, "exact by default");
        assert!(!a.is_null(b"") && !b.is_null(b""));
        let coerced = Coercions::NONE.empty_string_as_null(true);
        let (a, b) = plan_pair_with(&text, &text, "replica", coerced).unwrap();
        assert_eq!((a, b), (Decoder::TextEmptyAsNull, Decoder::TextEmptyAsNull));
        assert_eq!(a.decode(b"").unwrap(), Value::Null);
        assert!(a.is_null(b"") && !a.is_null(b" "));
        assert_eq!(b.decode(b"x").unwrap(), Value::text("x"));
        let (a, _) = plan_pair_with(&padded, &text, "replica", coerced).unwrap();
        assert!(a.is_null(b"   "), "a blank char(n) is the empty string");
        assert_eq!(a.decode(b"ab ").unwrap(), Value::text("ab"));
        // Other types are untouched.
        let number = column("n", "integer", Family::Integer);
        assert_eq!(
            plan_pair_with(&number, &number, "replica", coerced).unwrap(),
            plan_pair(&number, &number, "replica").unwrap()
        );
        let id = column("u", "uuid", Family::Uuid);
        assert_eq!(plan_pair_with(&id, &text, "replica", coerced).unwrap(), (Decoder::UuidAsText, Decoder::TextAsUuid));
    }

    #[test]
    fn unsupported_and_incompatible_types_name_the_column() {
        let error =
            plan_pair(&column("doc", "json", Family::Unsupported), &column("doc", "jsonb", Family::Unsupported), "r")
                .unwrap_err();
        assert_eq!(
            error.to_string(),
            "column doc has type json on the source database, which datadiff cannot compare \
             (json on the source, jsonb on the r)"
        );
        let error =
            plan_pair(&column("tags", "text", Family::Text), &column("tags", "jsonb", Family::Unsupported), "replica")
                .unwrap_err();
        assert_eq!(
            error.to_string(),
            "column tags has type jsonb on the replica database, which datadiff cannot compare \
             (text on the source, jsonb on the replica)"
        );
        let error = plan_pair(&column("d", "date", Family::Date), &column("d", "boolean", Family::Bool), "replica")
            .unwrap_err();
        assert_eq!(error.to_string(), "column d cannot be compared: date on the source, boolean on the replica");
    }

    #[test]
    fn keys_must_share_a_family_and_text_keys_need_bytewise_order() {
        let int = column("id", "integer", Family::Integer);
        let big = column("id", "bigint", Family::Integer);
        assert_eq!(plan_key(&int, &big, "replica").unwrap(), (KeyDecoder::Int, KeyDecoder::Int));
        let text = column("id", "text", Family::Text);
        assert!(plan_key(&int, &text, "replica").is_err());
        let (key, _) = plan_key(&text, &column("id", "character(8)", Family::Char), "replica").unwrap();
        assert!(key.needs_c_collation());
        let enumerated = column("id", "mood", Family::Enum);
        assert!(plan_key(&enumerated, &enumerated, "replica").is_err());
        assert_eq!(KeyDecoder::PaddedChar.decode(b"k1  ").unwrap(), Key::Text("k1".into()));
    }

    #[test]
    fn date_and_timestamp_keys_pair_as_the_comparison_table_reads_their_values() {
        let date = column("day", "date", Family::Date);
        let naive = column("day", "timestamp without time zone", Family::Timestamp);
        let aware = column("day", "timestamp with time zone", Family::TimestampTz);
        assert_eq!(plan_key(&date, &date, "replica").unwrap(), (KeyDecoder::Date, KeyDecoder::Date));
        assert_eq!(plan_key(&date, &naive, "replica").unwrap(), (KeyDecoder::DateAsTimestamp, KeyDecoder::Timestamp));
        assert_eq!(plan_key(&aware, &date, "replica").unwrap(), (KeyDecoder::TimestampTz, KeyDecoder::DateAsTimestamp));
        assert_eq!(plan_key(&aware, &naive, "replica").unwrap(), (KeyDecoder::TimestampTz, KeyDecoder::Timestamp));
        assert!(plan_key(&date, &column("day", "integer", Family::Integer), "replica").is_err());
        assert!(plan_key(&column("t", "time without time zone", Family::Time), &naive, "replica").is_err());
        // A date's midnight equals the timestamp at midnight: 2026-07-01 is day 9,678.
        let day = KeyDecoder::DateAsTimestamp.decode(&9_678i32.to_be_bytes()).unwrap();
        let midnight = KeyDecoder::Timestamp.decode(&(9_678i64 * 86_400_000_000).to_be_bytes()).unwrap();
        assert_eq!(day, midnight);
        assert_eq!(day.to_string(), "2026-07-01T00:00:00Z");
        assert_eq!(KeyDecoder::Date.decode(&9_678i32.to_be_bytes()).unwrap().to_string(), "2026-07-01");
        // ±infinity keep their places at the ends.
        assert_eq!(KeyDecoder::DateAsTimestamp.decode(&i32::MAX.to_be_bytes()).unwrap(), Key::Timestamp(i64::MAX));
        assert_eq!(KeyDecoder::DateAsTimestamp.decode(&i32::MIN.to_be_bytes()).unwrap(), Key::Timestamp(i64::MIN));
        assert!(KeyDecoder::TimestampTz.decode(&[0; 4]).is_err());
    }

    fn encode(decoder: Decoder, field: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        decoder.encode(field, &mut out, &mut Vec::new()).unwrap();
        out
    }

    #[test]
    fn encodings_are_normalised_decimal_text_and_canonical_bits() {
        let text = |decoder, field: &[u8]| String::from_utf8(encode(decoder, field)).unwrap();
        assert_eq!(text(Decoder::Numeric, &numeric_bytes(&[1, 2345, 6780], 1, false, 3)), "12345.678");
        assert_eq!(text(Decoder::Numeric, &numeric_bytes(&[], 0, true, 2)), "0");
        assert_eq!(text(Decoder::IntAsNumeric, &(-42i16).to_be_bytes()), "-42");
        assert_eq!(encode(Decoder::Float, &(-0.0f64).to_be_bytes()), encode(Decoder::Float, &0.0f64.to_be_bytes()));
        assert_eq!(encode(Decoder::Int, &5i16.to_be_bytes()), encode(Decoder::Int, &5i64.to_be_bytes()));
        assert_eq!(text(Decoder::PaddedChar, b"ab  "), "ab");
    }

    proptest::proptest! {
        /// The encoded path and the `Value` path agree: decoding an encoding gives the value
        /// `decode` gives, and two fields encode equally exactly when their values are equal.
        #[test]
        fn encoding_agrees_with_decoding_for_numerics(
            groups in proptest::collection::vec(0u16..10_000, 0..6),
            weight in -4i16..6,
            negative in proptest::bool::ANY,
        ) {
            let field = numeric_bytes(&groups, weight, negative, 0);
            let decoder = Decoder::Numeric;
            let encoded = encode(decoder, &field);
            proptest::prop_assert_eq!(decoder.decode_encoded(&encoded).unwrap(), decoder.decode(&field).unwrap());
            // The encoding is exactly the normalised Display of diff-core's Numeric.
            let Value::Numeric(numeric) = decoder.decode(&field).unwrap() else { unreachable!() };
            proptest::prop_assert_eq!(String::from_utf8(encoded).unwrap(), numeric.to_string());
        }

        #[test]
        fn encoding_agrees_with_decoding_for_floats(value in proptest::num::f64::ANY, real in proptest::bool::ANY) {
            let field = if real { (value as f32).to_be_bytes().to_vec() } else { value.to_be_bytes().to_vec() };
            for decoder in [Decoder::Float, Decoder::FloatAsReal] {
                let encoded = encode(decoder, &field);
                proptest::prop_assert_eq!(decoder.decode_encoded(&encoded).unwrap(), decoder.decode(&field).unwrap());
            }
        }

        #[test]
        fn encoding_agrees_with_decoding_for_numerics_read_as_floats(
            groups in proptest::collection::vec(0u16..10_000, 0..6),
            weight in -4i16..6,
            negative in proptest::bool::ANY,
            integer in proptest::num::i64::ANY,
        ) {
            let field = numeric_bytes(&groups, weight, negative, 0);
            for decoder in [Decoder::NumericAsFloat, Decoder::NumericAsReal] {
                let encoded = encode(decoder, &field);
                proptest::prop_assert_eq!(decoder.decode_encoded(&encoded).unwrap(), decoder.decode(&field).unwrap());
            }
            for decoder in [Decoder::IntAsFloat, Decoder::IntAsReal] {
                let field = integer.to_be_bytes();
                let encoded = encode(decoder, &field);
                proptest::prop_assert_eq!(decoder.decode_encoded(&encoded).unwrap(), decoder.decode(&field).unwrap());
            }
        }

        #[test]
        fn equal_encodings_mean_equal_values(a in -3i64..3, b in -3i64..3, sa in 0u16..3) {
            // Integers against numerics with trailing zero fraction digits: 2 = 2.00.
            let left = numeric_bytes(&if a == 0 { vec![] } else { vec![a.unsigned_abs() as u16, sa * 1000] }, 0, a < 0, 4);
            let right = (b as i32).to_be_bytes();
            let same_value = Decoder::Numeric.decode(&left).unwrap() == Decoder::IntAsNumeric.decode(&right).unwrap();
            let same_bytes = encode(Decoder::Numeric, &left) == encode(Decoder::IntAsNumeric, &right);
            proptest::prop_assert_eq!(same_value, same_bytes);
        }
    }
}
