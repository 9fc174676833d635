//! The verdict of a preflight.

use std::fmt;
use std::str::FromStr;

use crate::error::Error;

/// The outcome of a preflight, as stored in `dd_preflight_log.status`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum PreflightStatus {
    /// The source may be scanned: a usable leading timestamp index exists, the table is small
    /// enough to scan without one, or the definition reads no data at all.
    #[serde(rename = "PASS")]
    Pass,
    /// The source table has at least 100,000 rows and no usable leading timestamp index.
    #[serde(rename = "BLOCKED")]
    Blocked,
    /// The facts could not be gathered (catalog lookup or count failed, malformed count), or
    /// the run failed before a preflight was decided.
    #[serde(rename = "ERROR")]
    Error,
}

impl PreflightStatus {
    /// The database text: `PASS`, `BLOCKED` or `ERROR`.
    pub fn as_str(self) -> &'static str {
        match self {
            PreflightStatus::Pass => "PASS",
            PreflightStatus::Blocked => "BLOCKED",
            PreflightStatus::Error => "ERROR",
        }
    }
}

impl fmt::Display for PreflightStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for PreflightStatus {
    type Err = Error;

    /// Parses the exact database text (case-sensitive, as the CHECK constraint is).
    fn from_str(text: &str) -> Result<Self, Error> {
        match text {
            "PASS" => Ok(PreflightStatus::Pass),
            "BLOCKED" => Ok(PreflightStatus::Blocked),
            "ERROR" => Ok(PreflightStatus::Error),
            _ => Err(Error::UnknownStatus { text: text.to_owned() }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn database_texts_round_trip() {
        for (status, text) in
            [(PreflightStatus::Pass, "PASS"), (PreflightStatus::Blocked, "BLOCKED"), (PreflightStatus::Error, "ERROR")]
        {
            assert_eq!(status.as_str(), text);
            assert_eq!(status.to_string(), text);
            assert_eq!(text.parse::<PreflightStatus>(), Ok(status));
        }
    }

    #[test]
    fn other_texts_are_rejected_with_the_text() {
        for text in ["pass", "Blocked", "", "SKIPPED"] {
            assert_eq!(text.parse::<PreflightStatus>(), Err(Error::UnknownStatus { text: text.to_owned() }));
        }
    }

    #[test]
    fn serde_uses_the_database_texts() {
        assert_eq!(serde_json::to_string(&PreflightStatus::Blocked).ok().as_deref(), Some("\"BLOCKED\""));
        let parsed: Result<PreflightStatus, _> = serde_json::from_str("\"ERROR\"");
        assert_eq!(parsed.ok(), Some(PreflightStatus::Error));
    }
}
