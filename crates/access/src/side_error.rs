//! The typed failure of a database side ([`SideError`]): which side, which step, what kind of
//! failure — and, as its `Display`, the one line an attempt stores and prints (a server
//! error's primary message only, never its DETAIL, which can quote row values).

use datadiff_diff_core::Side;

/// What kind of failure a [`SideError`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SideErrorKind {
    /// The connection could not be made (refused, TLS, authentication, its deadline).
    Connect,
    /// A statement got no answer within its deadline; the connection was given up.
    Timeout,
    /// The catalog could not be read.
    Catalog,
    /// The server refused or failed a statement (or the session could not run it).
    Server,
    /// An answer could not be read (an unreadable value, a row of the wrong shape).
    Decode,
}

/// A database side's failure: `side`, `step` and `kind` for a program, and the line an
/// attempt stores for a person ([`std::fmt::Display`]).
///
/// ```
/// use datadiff_access::{SideError, SideErrorKind};
/// use datadiff_diff_core::Side;
///
/// let error = SideError::failed(Side::Target, "MIN query", SideErrorKind::Server, "relation \"t\" does not exist");
/// assert_eq!(error.to_string(), "target MIN query failed: relation \"t\" does not exist");
/// assert_eq!((error.side, error.step.as_str(), error.kind), (Side::Target, "MIN query", SideErrorKind::Server));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SideError {
    /// Which side failed.
    pub side: Side,
    /// The step that failed, as the line names it (`catalog read`, `MIN query`, `connect`…).
    pub step: String,
    /// What kind of failure it is.
    pub kind: SideErrorKind,
    /// The whole line.
    line: String,
}

impl SideError {
    /// A failure whose whole line is `line`.
    pub fn new(side: Side, step: impl Into<String>, kind: SideErrorKind, line: impl Into<String>) -> SideError {
        SideError { side, step: step.into(), kind, line: line.into() }
    }

    /// `<side> <step> failed: <why>`, the form of most steps' failures.
    pub fn failed(side: Side, step: &str, kind: SideErrorKind, why: impl std::fmt::Display) -> SideError {
        SideError::new(side, step, kind, format!("{side} {step} failed: {why}"))
    }

    /// `cannot connect to the <side> database <address>: <why>`.
    pub fn cannot_connect(side: Side, address: &str, why: impl std::fmt::Display) -> SideError {
        SideError::new(
            side,
            "connect",
            SideErrorKind::Connect,
            format!("cannot connect to the {side} database {address}: {why}"),
        )
    }

    /// The same failure, of `kind`.
    pub fn with_kind(self, kind: SideErrorKind) -> SideError {
        SideError { kind, ..self }
    }
}

impl std::fmt::Display for SideError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.line)
    }
}

impl std::error::Error for SideError {}

/// The stored line, as text: what the callers that kept the line as a `String` read
/// (`contains`, `starts_with`…).
impl std::ops::Deref for SideError {
    type Target = str;

    fn deref(&self) -> &str {
        &self.line
    }
}

impl From<SideError> for String {
    fn from(error: SideError) -> String {
        error.line
    }
}
