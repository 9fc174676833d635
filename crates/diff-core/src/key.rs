//! Row keys: the identity by which two streams are joined.

use std::fmt;

/// The key of a row, in the one order both sides of a comparison stream in.
///
/// Keys of one stream are all of one variant: the readers map each side's key column to the
/// same variant (an `integer` source key and a `bigint` replica key are both [`Key::Int`]).
/// Text keys order **bytewise** (by UTF-8 bytes, which is code point order): databases must
/// sort them the same way, which is why readers order text keys with `COLLATE "C"`. A
/// collation mismatch shows up as an out-of-order error in the merge, never as a wrong diff.
///
/// A composite key (several key columns, such as a line-item table's `(order_id, line_no)`)
/// is a [`Key::Composite`] of one part per key column, in the key's column order: it orders
/// lexicographically, part by part, each part as a single key of its kind orders — the order
/// of `ORDER BY a, b` with text parts under `COLLATE "C"` (PostgreSQL) or compared as binary
/// (MySQL). A single-column key is never a one-part composite: it stays the plain variant.
///
/// Date and timestamp keys keep PostgreSQL's own binary values (days and microseconds since
/// 2000-01-01, ±infinity as the type's extremes), so that they order as the database orders
/// them over the whole range, infinities included, and print in a form PostgreSQL reads back.
///
/// Keys may be printed and stored (they identify rows); row values never are.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Key {
    /// Any integer key (`smallint`, `integer`, `bigint`).
    Int(i64),
    /// A `uuid` key, ordered by its 16 bytes as PostgreSQL orders uuids.
    Uuid([u8; 16]),
    /// A text key (`text`, `varchar`, `char`), ordered bytewise.
    Text(String),
    /// A `date` key: days since 2000-01-01 (PostgreSQL's binary form); `infinity` and
    /// `-infinity` are `i32::MAX` and `i32::MIN`.
    Date(i32),
    /// A `timestamp` or `timestamptz` key, or a `date` key compared with one (its midnight):
    /// microseconds since 2000-01-01 00:00 UTC, a `timestamp` read as UTC (PostgreSQL's binary
    /// form); `infinity` and `-infinity` are `i64::MAX` and `i64::MIN`.
    Timestamp(i64),
    /// A composite key: one part per key column (at least two), none of them composite.
    /// Boxed so that a key stays as small as a text key (the merge moves keys by value).
    Composite(Box<[Key]>),
}

impl Key {
    /// The key of one row from its parts, one per key column in order: the part itself for a
    /// single key column, else [`Key::Composite`].
    ///
    /// # Panics
    ///
    /// When `parts` is empty: every key has a column.
    pub fn from_parts(mut parts: Vec<Key>) -> Key {
        assert!(!parts.is_empty(), "a key has at least one column");
        match parts.len() {
            1 => parts.pop().expect("one part"),
            _ => Key::Composite(parts.into_boxed_slice()),
        }
    }

    /// The key's parts, one per key column: the key itself for a single-column key.
    pub fn parts(&self) -> &[Key] {
        match self {
            Key::Composite(parts) => parts,
            single => std::slice::from_ref(single),
        }
    }
}

impl fmt::Display for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Key::Int(value) => write!(f, "{value}"),
            Key::Uuid(bytes) => write_uuid(f, bytes),
            Key::Text(text) => f.write_str(text),
            Key::Date(days) => write_date(f, *days),
            Key::Timestamp(micros) => write_timestamp(f, *micros),
            // `(1, 2)`: the parts in key column order.
            Key::Composite(parts) => {
                f.write_str("(")?;
                for (index, part) in parts.iter().enumerate() {
                    if index > 0 {
                        f.write_str(", ")?;
                    }
                    part.fmt(f)?;
                }
                f.write_str(")")
            }
        }
    }
}

/// Writes 16 bytes in the lowercase hyphenated form PostgreSQL prints uuids in.
pub(crate) fn write_uuid(f: &mut fmt::Formatter<'_>, bytes: &[u8; 16]) -> fmt::Result {
    for (index, byte) in bytes.iter().enumerate() {
        if matches!(index, 4 | 6 | 8 | 10) {
            f.write_str("-")?;
        }
        write!(f, "{byte:02x}")?;
    }
    Ok(())
}

const MICROS_PER_DAY: i64 = 86_400_000_000;

/// Days from 1970-01-01 to 2000-01-01, PostgreSQL's epoch.
const POSTGRES_EPOCH_DAYS: i64 = 10_957;

/// Writes a date key as PostgreSQL reads it back in any `DateStyle`: `2026-07-01`,
/// `0044-03-15 BC`, `infinity`.
fn write_date(f: &mut fmt::Formatter<'_>, days: i32) -> fmt::Result {
    match days {
        i32::MAX => f.write_str("infinity"),
        i32::MIN => f.write_str("-infinity"),
        days => write_day(f, i64::from(days), ""),
    }
}

/// Writes a timestamp key as ISO 8601 in UTC, the fraction only when non-zero, as PostgreSQL
/// reads it back into a `timestamptz` or (the zone ignored) a `timestamp`:
/// `2026-07-01T12:00:00Z`, `2026-07-01T12:00:00.000001Z`, `0044-03-15T12:00:00Z BC`,
/// `infinity`.
fn write_timestamp(f: &mut fmt::Formatter<'_>, micros: i64) -> fmt::Result {
    match micros {
        i64::MAX => f.write_str("infinity"),
        i64::MIN => f.write_str("-infinity"),
        micros => {
            let of_day = micros.rem_euclid(MICROS_PER_DAY);
            let (seconds, fraction) = (of_day / 1_000_000, of_day % 1_000_000);
            let time = format!("{:02}:{:02}:{:02}", seconds / 3600, seconds / 60 % 60, seconds % 60);
            let time = match fraction {
                0 => format!("T{time}Z"),
                fraction => format!("T{time}.{fraction:06}Z"),
            };
            write_day(f, micros.div_euclid(MICROS_PER_DAY), &time)
        }
    }
}

/// Writes the day `days` after 2000-01-01 (proleptic Gregorian), then `time`, then ` BC` for
/// a year before 1 AD (year 0 is 1 BC).
fn write_day(f: &mut fmt::Formatter<'_>, days: i64, time: &str) -> fmt::Result {
    let (year, month, day) = civil_from_days(days + POSTGRES_EPOCH_DAYS);
    let (year, era) = if year <= 0 { (1 - year, " BC") } else { (year, "") };
    write!(f, "{year:04}-{month:02}-{day:02}{time}{era}")
}

/// The proleptic Gregorian `(year, month, day)` of `days` since 1970-01-01 (year 0 is 1 BC):
/// H. Hinnant's `civil_from_days`, exact over every `i64` a date or timestamp key holds
/// (chrono's dates end in 262143 AD; PostgreSQL's run to 5874897 AD).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era = (day_of_era - day_of_era / 1_460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let shifted_month = (5 * day_of_year + 2) / 153;
    let day = (day_of_year - (153 * shifted_month + 2) / 5 + 1) as u32;
    let month = if shifted_month < 10 { shifted_month + 3 } else { shifted_month - 9 } as u32;
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use chrono::Datelike;

    use super::*;

    #[test]
    fn text_keys_order_bytewise_not_by_locale() {
        // A locale collation puts "a" before "B"; bytewise order puts "B" (0x42) first.
        assert!(Key::Text("B".into()) < Key::Text("a".into()));
        // Code point order: "z" < "é" (U+00E9), and "é" < "😀".
        assert!(Key::Text("z".into()) < Key::Text("é".into()));
        assert!(Key::Text("é".into()) < Key::Text("😀".into()));
    }

    #[test]
    fn uuid_keys_order_by_bytes_and_print_hyphenated() {
        let low = Key::Uuid([0; 16]);
        let mut bytes = [0u8; 16];
        bytes[0] = 0xab;
        bytes[15] = 0x01;
        let high = Key::Uuid(bytes);
        assert!(low < high);
        assert_eq!(high.to_string(), "ab000000-0000-0000-0000-000000000001");
    }

    #[test]
    fn integer_keys_order_numerically() {
        assert!(Key::Int(-5) < Key::Int(3));
        assert!(Key::Int(9) < Key::Int(10));
        assert_eq!(Key::Int(-42).to_string(), "-42");
    }

    #[test]
    fn composite_keys_order_part_by_part_and_print_in_parentheses() {
        let key = |order: i64, line: &str| Key::from_parts(vec![Key::Int(order), Key::Text(line.into())]);
        // The first part decides; the second only among equal first parts.
        assert!(key(1, "z") < key(2, "a"));
        assert!(key(2, "B") < key(2, "a"));
        // (1, 2) and (2, 1) are different rows.
        assert_ne!(key(1, "2"), key(2, "1"));
        assert_eq!(key(7, "a-1").to_string(), "(7, a-1)");
        assert_eq!(key(7, "a-1").parts(), &[Key::Int(7), Key::Text("a-1".into())]);
    }

    #[test]
    fn date_and_timestamp_keys_order_as_postgres_and_print_as_it_reads_them() {
        // Days and microseconds since 2000-01-01, as PostgreSQL sends them.
        assert_eq!(Key::Date(0).to_string(), "2000-01-01");
        assert_eq!(Key::Date(-1).to_string(), "1999-12-31");
        assert_eq!(Key::Date(9_678).to_string(), "2026-07-01");
        assert_eq!(Key::Date(60).to_string(), "2000-03-01");
        assert_eq!(Key::Date(i32::MAX).to_string(), "infinity");
        assert_eq!(Key::Date(i32::MIN).to_string(), "-infinity");
        // Day numbers from PostgreSQL (`'0044-03-15 BC'::date - '2000-01-01'`).
        assert_eq!(Key::Date(-746_117).to_string(), "0044-03-15 BC");
        assert_eq!(Key::Date(-730_119).to_string(), "0001-01-01");
        assert_eq!(Key::Date(-730_120).to_string(), "0001-12-31 BC");
        assert_eq!(Key::Date(2_922_096).to_string(), "10000-06-05");
        assert_eq!(Key::Timestamp(0).to_string(), "2000-01-01T00:00:00Z");
        assert_eq!(Key::Timestamp(-1).to_string(), "1999-12-31T23:59:59.999999Z");
        assert_eq!(Key::Timestamp(836_222_400_000_000).to_string(), "2026-07-01T12:00:00Z");
        assert_eq!(Key::Timestamp(836_222_400_000_120).to_string(), "2026-07-01T12:00:00.000120Z");
        assert_eq!(Key::Timestamp(i64::MAX).to_string(), "infinity");
        assert_eq!(Key::Timestamp(i64::MIN).to_string(), "-infinity");
        // PostgreSQL's last timestamp: 294276-12-31 23:59:59.999999.
        assert_eq!(Key::Timestamp(9_223_371_331_199_999_999).to_string(), "294276-12-31T23:59:59.999999Z");
        assert!(Key::Date(i32::MIN) < Key::Date(-746_117));
        assert!(Key::Date(-1) < Key::Date(0) && Key::Date(0) < Key::Date(i32::MAX));
        assert!(Key::Timestamp(i64::MIN) < Key::Timestamp(-1) && Key::Timestamp(1) < Key::Timestamp(i64::MAX));
    }

    #[test]
    fn date_keys_print_the_day_chrono_computes() {
        let epoch = chrono::NaiveDate::from_ymd_opt(2000, 1, 1).unwrap();
        // Every 997th day from 4713 BC to 9999 AD, and every day of 1999–2001.
        let days = (-2_451_545..2_921_938).step_by(997).chain(-400..800);
        for day in days {
            let date = epoch + chrono::Duration::days(i64::from(day));
            let expected = match date.year() {
                year if year <= 0 => format!("{:04}-{} BC", 1 - year, date.format("%m-%d")),
                _ => date.format("%Y-%m-%d").to_string(),
            };
            assert_eq!(Key::Date(day).to_string(), expected, "day {day}");
        }
    }

    #[test]
    fn a_single_part_is_the_plain_key() {
        assert_eq!(Key::from_parts(vec![Key::Int(3)]), Key::Int(3));
        assert_eq!(Key::Int(3).parts(), &[Key::Int(3)]);
        assert_eq!(Key::from_parts(vec![Key::Int(3)]).to_string(), "3");
    }

    #[test]
    fn a_key_stays_as_small_as_a_text_key() {
        assert_eq!(std::mem::size_of::<Key>(), std::mem::size_of::<String>());
    }
}
