//! The vocabulary of runs: ids, statuses and trigger types, spelt as the backend stores them.

use std::fmt;
use std::str::FromStr;

use uuid::Uuid;

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub struct $name(Uuid);

        impl $name {
            /// Wraps a uuid.
            pub const fn new(id: Uuid) -> Self {
                $name(id)
            }

            /// The uuid.
            pub fn get(self) -> Uuid {
                self.0
            }
        }

        /// Lowercase hyphenated, as PostgreSQL prints uuids and upstream's reasons render them.
        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                self.0.hyphenated().fmt(f)
            }
        }
    };
}

id_type!(
    /// A check definition revision (`dd_check_definitions.check_id`).
    CheckId
);
id_type!(
    /// An attempt (`dd_run_attempts.run_id`).
    RunId
);
id_type!(
    /// A preflight record (`dd_preflight_log.preflight_id`).
    PreflightId
);

/// A text outside a closed vocabulary.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {vocabulary} '{text}'")]
pub struct UnknownName {
    /// Which vocabulary (`run status`, `trigger type`).
    pub vocabulary: &'static str,
    /// The text.
    pub text: String,
}

macro_rules! vocabulary {
    ($(#[$doc:meta])* $name:ident, $label:literal, { $($(#[$vdoc:meta])* $variant:ident => $text:literal,)+ }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name {
            $($(#[$vdoc])* $variant,)+
        }

        impl $name {
            /// The stored spelling.
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text,)+
                }
            }
        }

        impl FromStr for $name {
            type Err = UnknownName;

            fn from_str(text: &str) -> Result<Self, UnknownName> {
                match text {
                    $($text => Ok($name::$variant),)+
                    _ => Err(UnknownName { vocabulary: $label, text: text.to_owned() }),
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

vocabulary!(
    /// The status of an attempt (`dd_run_attempts.status`).
    RunStatus, "run status", {
        /// In progress; the attempt holds the slot's lease.
        Running => "RUNNING",
        /// Every check passed.
        Pass => "PASS",
        /// Some check found a difference, none failed to run.
        Fail => "FAIL",
        /// Some check, the preflight or the attempt itself could not complete.
        Error => "ERROR",
        /// A historical first run found no timestamps before its cutoff on either side.
        Deferred => "DEFERRED",
    }
);

impl RunStatus {
    /// PASS, FAIL or ERROR: an outcome that replaces the slot state and moves coverage.
    pub fn is_outcome(self) -> bool {
        matches!(self, RunStatus::Pass | RunStatus::Fail | RunStatus::Error)
    }

    /// FAIL or ERROR.
    pub fn is_failure(self) -> bool {
        matches!(self, RunStatus::Fail | RunStatus::Error)
    }
}

vocabulary!(
    /// Why an attempt was started (`dd_run_attempts.trigger_type`).
    TriggerType, "trigger type", {
        /// A due cron slot.
        Scheduled => "SCHEDULED",
        /// `--force`.
        Manual => "MANUAL",
        /// An automatic retry of a failed slot, at most once per cron interval.
        Retry => "RETRY",
        /// `rerun_data_diff_check` with a remediation reference.
        Remediation => "REMEDIATION",
    }
);

vocabulary!(
    /// The verdict of a source preflight (`dd_preflight_log.status`): decided by the
    /// `datadiff-preflight` crate, persisted by the store, read by the attempt rules.
    PreflightStatus, "preflight status", {
        /// The source may be scanned: a usable leading timestamp index exists, the table is
        /// small enough to scan without one, or the definition reads no data at all.
        Pass => "PASS",
        /// The source table has at least 100,000 rows and no usable leading timestamp index.
        Blocked => "BLOCKED",
        /// The facts could not be gathered (catalog lookup or count failed, malformed count),
        /// or the run failed before a preflight was decided.
        Error => "ERROR",
    }
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn preflight_statuses_are_the_stored_texts() {
        for (status, text) in
            [(PreflightStatus::Pass, "PASS"), (PreflightStatus::Blocked, "BLOCKED"), (PreflightStatus::Error, "ERROR")]
        {
            assert_eq!((status.as_str(), status.to_string()), (text, text.to_owned()));
            assert_eq!(text.parse::<PreflightStatus>(), Ok(status));
        }
        for text in ["pass", "Blocked", "", "SKIPPED"] {
            assert_eq!(
                text.parse::<PreflightStatus>(),
                Err(UnknownName { vocabulary: "preflight status", text: text.to_owned() })
            );
        }
    }

    #[test]
    fn statuses_and_triggers_round_trip_through_their_stored_text() {
        for status in [RunStatus::Running, RunStatus::Pass, RunStatus::Fail, RunStatus::Error, RunStatus::Deferred] {
            assert_eq!(status.as_str().parse::<RunStatus>(), Ok(status));
        }
        for trigger in [TriggerType::Scheduled, TriggerType::Manual, TriggerType::Retry, TriggerType::Remediation] {
            assert_eq!(trigger.to_string().parse::<TriggerType>(), Ok(trigger));
        }
        assert_eq!(
            "pass".parse::<RunStatus>(),
            Err(UnknownName { vocabulary: "run status", text: "pass".into() }),
            "stored text is upper case and matched exactly"
        );
    }

    #[test]
    fn ids_print_lowercase_hyphenated() {
        let id = RunId::new(Uuid::from_u128(0xABCDEF01_2345_6789_ABCD_EF0123456789));
        assert_eq!(id.to_string(), "abcdef01-2345-6789-abcd-ef0123456789");
    }

    #[test]
    fn only_pass_fail_error_are_outcomes() {
        assert!(RunStatus::Pass.is_outcome() && RunStatus::Error.is_outcome());
        assert!(!RunStatus::Deferred.is_outcome() && !RunStatus::Running.is_outcome());
        assert!(RunStatus::Fail.is_failure() && !RunStatus::Pass.is_failure());
    }
}
