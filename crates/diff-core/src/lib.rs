//! The pure core of datadiff: canonical values and keys, the sorted-key merge diff and its
//! bounded summary.
//!
//! # Overview: one public module per job
//!
//! * [`merge`]: canonical values and keys ([`merge::Value`], [`merge::Key`]: one
//!   representation per meaning, so that compatible column types compare equal with a plain
//!   `==` and keys order bytewise); [`merge::merge`], a pull iterator over two key-ordered
//!   streams of [`merge::Keyed`] rows producing one [`merge::Change`] per key (out-of-order or
//!   duplicate keys are a [`merge::MergeError`] naming the side and the key);
//!   [`merge::Summary`], exact counts and the first N differences, by key and field name only;
//!   [`merge::Batches`], rows arriving in batches flattened for the merge.
//! * [`definition`]: a validated [`definition::CheckDefinition`] with its canonical JSON and
//!   hash, a revision as the backend keeps it ([`definition::StoredDefinition`]), the check
//!   types, durations, `sslmode`, the Python-style JSON encoder.
//! * [`schedule`]: the schedule math of slots and windows ([`schedule::Schedule`],
//!   [`schedule::Window`]) and the tick's pure order of work ([`schedule::CheckTickPlan`]).
//! * [`attempt`]: the pure rules of attempts — which slots are due, whether an attempt may
//!   start, retries, remediation links, stale sweeps ([`attempt::decide_start`],
//!   [`attempt::due_slots`], [`attempt::decide_remediation`], [`attempt::stale_cutoff`], the
//!   lag-aware [`attempt::Horizon`] that holds back a window the replica has not applied) —
//!   with the run vocabulary ([`attempt::RunStatus`], [`attempt::TriggerType`], the id
//!   newtypes), results and verdicts ([`attempt::CheckResult`]), the historical start and
//!   how an attempt ends ([`attempt::Outcome`]: status aggregation, ERROR beating FAIL, and
//!   PipelineWise's `error` texts), and what it comes to ([`attempt::RunSummary`]: the line
//!   `run_data_diff_checks` prints and alerts read, with [`attempt::CheckIdentity`] and the
//!   source-index warning's [`attempt::IndexWarningIdentity`]).
//! * [`plan`]: one attempt of the aggregate checks planned from a definition and both tables'
//!   catalog columns ([`plan::AggregatePlan`]): column resolution and the timestamp gate
//!   ([`plan::TableColumns`], [`plan::ColumnPlan`]), type-family compatibility, the
//!   `schema_compatibility` result, the `row_checksum` descriptors, the PostgreSQL aggregate
//!   and `MIN` SQL ([`plan::MetricQuery`], [`plan::quote_ident`]).
//! * [`mysql`]: PipelineWise's SQL forms for a MySQL or MariaDB source.
//! * [`exposition`]: the Prometheus text format that `report metrics` and `audit --metrics`
//!   write.
//!
//! [`Side`] and [`Error`] stay at the root: every job uses them.
//!
//! ```
//! use datadiff_diff_core::merge::{Key, Summary, Value, ValuesRow, merge};
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
//! # Ok::<(), datadiff_diff_core::merge::MergeError<std::convert::Infallible>>(())
//! ```
//!
//! # What it does not do
//!
//! No I/O and no clock: this crate never touches a file, a socket, the environment or the
//! current time. Readers that stream rows from databases live in `datadiff-runner`; so does
//! executing the SQL that [`plan::AggregatePlan`] builds. That SQL is PostgreSQL's; the [`mysql`]
//! module holds PipelineWise's forms for a MySQL or MariaDB source (backtick quoting, the
//! column and index lookups, the aggregates and `row_checksum`, the session statements).
//! Snowflake targets are imported but not run by datadiff.

pub mod attempt;
mod batches;
mod canonical_json;
mod check;
mod checksum;
mod column;
pub mod definition;
mod duration;
mod error;
pub mod exposition;
mod family;
mod historical;
mod horizon;
mod index_warning;
mod key;
pub mod merge;
pub mod mysql;
mod outcome;
pub mod plan;
mod query;
mod replica;
mod row;
mod row_diff_settings;
mod run;
mod run_summary;
pub mod schedule;
pub mod segment;
pub mod sketch;
mod sslmode;
mod summary;
mod tick;
mod time;
mod value;
mod verdict;

pub use error::{Error, Side};
