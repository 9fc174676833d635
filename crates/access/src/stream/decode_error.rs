//! Why one streamed field could not be decoded.

/// Why one field of a streamed row could not be decoded into its canonical form.
///
/// The text says what was wrong with the field's *shape* (its width, its encoding, its
/// kind), never the value itself, so it may be logged and stored. It is the `problem` of
/// [`Error::Decode`](crate::Error::Decode), which names the side and the column.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// A binary field whose width no value of its type has (`a uuid field of 3 bytes`).
    #[error("a {kind} field of {bytes} bytes")]
    Width {
        /// The type the field was read as (`integer`, `uuid`, `numeric`...).
        kind: &'static str,
        /// The field's width in bytes.
        bytes: usize,
    },
    /// A binary numeric whose sign word is none of PostgreSQL's.
    #[error("a numeric with an unknown sign word")]
    NumericSign,
    /// Text (or a text key) that is not valid UTF-8.
    #[error("text that is not valid UTF-8")]
    NotUtf8,
    /// A decimal text that does not read as a number (`numeric`, `encoded numeric`,
    /// `decimal`).
    #[error("an unreadable {0}")]
    Unreadable(&'static str),
    /// A field longer than a row frame can hold.
    #[error("a field over 2 GiB")]
    TooLong,
    /// An unsigned integer key beyond `bigint`'s range (MySQL's `BIGINT UNSIGNED`).
    #[error("an unsigned key beyond the bigint range")]
    KeyOutOfRange,
    /// A key value of a kind the planned key type does not produce (MySQL's protocol).
    #[error("a key value of an unexpected kind ({0})")]
    UnexpectedKeyKind(&'static str),
    /// A value of a kind the column's planned encoder does not take (MySQL's protocol).
    #[error("a {found} value where {planned} was planned")]
    UnexpectedValueKind {
        /// The kind of value received (`bytes`, `int`, `date`...).
        found: &'static str,
        /// The encoder planned for the column.
        planned: String,
    },
    /// A date that is no calendar date (MySQL's zero dates, `2024-02-30`).
    #[error("a date that is not a calendar date")]
    NotACalendarDate,
    /// A date or time of day outside the range the comparison represents (`date`,
    /// `time of day`).
    #[error("a {0} out of range")]
    OutOfRange(&'static str),
    /// The row framing itself is broken (`COPY stream`): a truncated stream, a row of the
    /// wrong width, data where none was expected.
    #[error("{0}")]
    Framing(&'static str),
    /// A value of a type the comparison does not read (an aggregate of type `jsonb`).
    #[error("type {0} is not supported")]
    UnsupportedType(String),
    /// A row with another number of columns than the query asked for.
    #[error("{found} columns, {expected} expected")]
    ColumnCount {
        /// Columns received.
        found: usize,
        /// Columns asked for.
        expected: usize,
    },
}
