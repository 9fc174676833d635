//! Errors of the pure core. They are data: `Clone` and `PartialEq`, carrying the datum that
//! identifies the problem (a side and a key, a text that failed to parse).

use std::fmt;

/// Which stream of a comparison something happened on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Side {
    /// The source (the replicated-from database).
    Source,
    /// The target (the replica).
    Target,
}

impl Side {
    /// `"source"` or `"target"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Side::Source => "source",
            Side::Target => "target",
        }
    }
}

impl fmt::Display for Side {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a merge stopped. `E` is the error type of the input streams.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MergeError<E> {
    /// An input stream returned an error.
    #[error("reading the {side} stream failed")]
    Read {
        /// The stream that failed.
        side: Side,
        /// The stream's error.
        #[source]
        source: E,
    },
    /// A key arrived twice in a row on one side.
    #[error("duplicate key {key} in the {side} stream")]
    DuplicateKey {
        /// The stream with the duplicate.
        side: Side,
        /// The duplicated key.
        key: String,
    },
    /// A key arrived after a greater one: the stream is not ordered as the merge orders keys
    /// (for text keys, typically a collation other than bytewise `"C"`).
    #[error("{side} stream is not in key order: {key} arrived after {previous}")]
    OutOfOrder {
        /// The unordered stream.
        side: Side,
        /// The key before.
        previous: String,
        /// The smaller key that followed it.
        key: String,
    },
}

/// Errors of the pure core other than merge errors.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Text that is not a decimal number. The text is not kept: it may be a row value.
    #[error("invalid numeric text")]
    InvalidNumeric,
}
