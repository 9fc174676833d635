//! Exit codes (SPEC §8, §9).

use std::process::ExitCode;

/// How a command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// 0: success (the audit passed).
    Success,
    /// 1: a check failed (the audit blocked the cutover).
    Failure,
    /// 2: usage, configuration, connection or schema problems; refusals.
    Error,
}

impl Exit {
    /// The numeric code.
    pub fn code(self) -> u8 {
        match self {
            Exit::Success => 0,
            Exit::Failure => 1,
            Exit::Error => 2,
        }
    }
}

impl From<Exit> for ExitCode {
    fn from(exit: Exit) -> ExitCode {
        ExitCode::from(exit.code())
    }
}

/// The exit codes, as every command's `--help` ends (`after_help`): the whole program's, then
/// each command's own.
pub(crate) mod help {
    /// `datadiff --help`.
    pub(crate) const PROGRAM: &str = "Exit codes:
  0  success
  1  an attempt FAILed or ERRORed (a source or target that cannot be reached is an ERROR attempt), a failure
     alert no destination accepted, report watermarks --max-lag failed, an import_config tap missing from the
     YAML, a doctor finding FAILed, audit BLOCK
  2  usage, configuration, backend connection or schema problems, an unknown run; audit refusals and errors";
    /// `validate`.
    pub(crate) const VALIDATE: &str = "Exit codes:
  0  the project is valid (warnings are printed)
  2  a problem: every one is listed with its file, YAML path and line";
    /// `import_config`.
    pub(crate) const IMPORT: &str = "Exit codes:
  0  imported
  1  a tap given with --taps is missing from the YAML (its definitions were deactivated)
  2  usage, configuration, backend connection or schema problems";
    /// `list_data_diff_checks`, `migrate`.
    pub(crate) const PLAIN: &str = "Exit codes:
  0  success
  2  usage, configuration, backend connection or schema problems";
    /// `run_data_diff_checks`.
    pub(crate) const RUN: &str = "Exit codes:
  0  every attempt PASSed, or was DEFERRED or SKIPPED
  1  an attempt FAILed or ERRORed (an unreachable source or target is an ERROR attempt), or a failure alert
     no destination accepted
  2  usage, configuration, backend connection or schema problems, an unknown --target, --tap or --check, or
     the backend went away mid-run";
    /// `rerun_data_diff_check`.
    pub(crate) const RERUN: &str = "Exit codes:
  0  the remediation PASSed, was DEFERRED, or was SKIPPED after a lost lease
  1  it FAILed or ERRORed, the slot has a RUNNING attempt, or a failure alert no destination accepted
  2  an unknown or non-failed run, an empty reference; usage, configuration, backend problems";
    /// `doctor`.
    pub(crate) const DOCTOR: &str = "Exit codes:
  0  no finding FAILed
  1  a finding FAILed
  2  the project cannot be loaded";
    /// `report` and its reports.
    pub(crate) const REPORT: &str = "Exit codes:
  0  success
  1  watermarks --max-lag found a definition BLOCKED, not run, or lagging more
  2  usage, configuration, backend connection or schema problems, an unknown run id";
    /// `audit`.
    pub(crate) const AUDIT: &str = "Exit codes:
  0  PASS: the tables hold the same rows
  1  BLOCK: differences, or two empty tables without --allow-empty
  2  a refusal or an error (one line on stderr; no report is written)";
    /// `demo`.
    #[cfg(feature = "demo")]
    pub(crate) const DEMO: &str = "Exit codes:
  0  the story ran as told
  2  no PostgreSQL server binaries (the line says what to install), or a step that did not end as the story
     expects";
}
