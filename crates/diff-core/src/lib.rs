//! The pure core of datadiff: canonical values and keys, the sorted-key merge diff and its
//! bounded summary.
//!
//! # Overview
//!
//! * [`Key`] and [`Value`]: one representation per meaning, so that compatible column types
//!   compare equal with a plain `==` and keys order bytewise.
//! * [`merge`]: a pull iterator over two key-ordered streams of [`Keyed`] rows producing one
//!   [`Change`] per key; out-of-order or duplicate keys are a [`MergeError`] naming the side
//!   and the key.
//! * [`Summary`]: exact counts and the first N differences, by key and field name only.
//! * [`Batches`]: rows arriving in batches (from reader threads) flattened for the merge,
//!   with the emptied batches recycled.
//! * [`CheckDefinition`], [`CheckType`], [`Schedule`], [`Window`], [`Duration`]: a validated
//!   definition with its canonical JSON and hash, and the schedule math of slots and windows.
//! * [`decide_start`], [`due_slots`], [`decide_remediation`], [`stale_cutoff`]: the pure rules of
//!   attempts (which slots are due, whether an attempt may start, retries, remediation links),
//!   with the run vocabulary [`RunStatus`], [`TriggerType`] and the id newtypes.
//! * [`AggregatePlan`]: one attempt of the aggregate checks planned from a definition and both
//!   tables' catalog columns — column resolution and the timestamp gate ([`TableColumns`],
//!   [`ColumnPlan`]), [`TypeFamily`] compatibility, the `schema_compatibility` result, the
//!   `row_checksum` descriptors ([`ChecksumPlan`]), the PostgreSQL aggregate and `MIN` SQL
//!   ([`MetricQuery`], [`MinimumQuery`], [`quote_ident`]), metric verdicts ([`CheckResult`]),
//!   the historical start ([`resolve_historical_start`]) and how the attempt ends
//!   ([`Outcome`]: status aggregation, ERROR beating FAIL, and PipelineWise's `error` texts).
//!
//! ```
//! use datadiff_diff_core::{merge, Key, Summary, Value, ValuesRow};
//!
//! let row = |id: i64, status: &str| {
//!     Ok::<_, std::convert::Infallible>(ValuesRow { key: Key::Int(id), values: vec![Value::text(status)] })
//! };
//! let source = vec![row(1, "paid"), row(2, "open")];
//! let replica = vec![row(1, "paid"), row(2, "paid"), row(3, "void")];
//!
//! let mut summary = Summary::new(20, vec!["status".to_owned()]);
//! for change in merge(source, replica) {
//!     summary.record(&change?);
//! }
//! assert_eq!((summary.matched, summary.changed, summary.extra), (1, 1, 1));
//! assert_eq!(summary.examples[0].fields, vec!["status"]);
//! # Ok::<(), datadiff_diff_core::MergeError<std::convert::Infallible>>(())
//! ```
//!
//! # What it does not do
//!
//! No I/O and no clock: this crate never touches a file, a socket, the environment or the
//! current time. Readers that stream rows from databases live in `datadiff-runner`; so does
//! executing the SQL that [`AggregatePlan`] builds. That SQL is PostgreSQL's; the [`mysql`]
//! module holds PipelineWise's forms for a MySQL or MariaDB source (backtick quoting, the
//! column and index lookups, the aggregates and `row_checksum`, the session statements).
//! Snowflake targets are imported but not run by datadiff.

mod attempt;
mod batches;
mod canonical_json;
mod check;
mod checksum;
mod column;
mod definition;
mod duration;
mod error;
mod family;
mod historical;
mod key;
mod merge;
pub mod mysql;
mod outcome;
mod plan;
mod query;
mod row;
mod run;
mod schedule;
mod sslmode;
mod summary;
mod tick;
mod time;
mod value;
mod verdict;

pub use attempt::{
    AttemptFacts, Bounds, MAX_CATCH_UP, NewAttempt, NewRemediation, RemediationRefusal, RevisionHistory,
    STALE_SWEEP_ERROR, Skip, SkipReason, StartDecision, StartKind, StartRequest, decide_remediation, decide_start,
    due_slots, is_retry_candidate, stale_cutoff,
};
pub use batches::Batches;
pub use canonical_json::{PythonSeparators, python_json, python_json_with};
pub use check::{CheckType, UnknownCheckType};
pub use checksum::{CHECKSUM_OFFSET, ChecksumColumn, ChecksumKind, ChecksumPlan, UnsupportedComparison};
pub use column::{CatalogColumn, ColumnError, ColumnPair, ColumnPlan, ColumnSelection, TIMESTAMP_TYPES, TableColumns};
pub use definition::{
    CheckDefinition, DefinitionError, Extensions, RowDiffSettings, SourceType, TargetType, UnknownConnectorType,
};
pub use duration::{Duration, DurationError, DurationLimit};
pub use error::{Error, MergeError, Side};
pub use family::{TypeFamily, lookup_name};
pub use historical::{HistoricalStart, resolve_historical_start};
pub use key::Key;
pub use merge::{Change, Merge, merge};
pub use outcome::{Outcome, Signal, aggregate_status, python_isoformat, results_error};
pub use plan::{AggregatePlan, PlanError};
pub use query::{
    IdentifierError, MetricQuery, MinimumQuery, Placeholders, QueryError, SOFT_DELETE_COLUMN, qualified_table,
    quote_ident, quoted_ident,
};
pub use row::{DigestRow, Keyed, ValuesRow};
pub use run::{CheckId, PreflightId, PreflightStatus, RunId, RunStatus, TriggerType, UnknownName};
pub use schedule::{FiresAfter, GAP_HORIZON_YEARS, Gap, Schedule, ScheduleError, Window};
pub use sslmode::{SslMode, UnknownSslMode};
pub use summary::{ChangedFields, DifferenceKind, Example, Summary};
pub use tick::{CheckTickPlan, TickFacts, TickStep};
pub use value::{Float, Numeric, Value};
pub use verdict::{
    CheckResult, ResultStatus, ResultType, RowDiffCounts, in_declared_order, metric_passes, result_value,
};
