//! The crate's error type.
//!
//! Preflight failures are not errors of this crate: a catalog lookup or a count that fails is
//! a verdict (an ERROR [`PreflightRecord`](crate::PreflightRecord) carrying the failure text),
//! because upstream records it as evidence and the run goes on to record its outcome. The
//! errors here are about reading back values this crate defines, and are plain data.

/// Why a value of this crate could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A fingerprint that is not 64 lowercase hexadecimal digits.
    #[error("query fingerprint {text:?} is not 64 lowercase hexadecimal digits")]
    InvalidFingerprint {
        /// The text that was read.
        text: String,
    },
}
