//! Source preflight for datadiff: before a check reads a window of a source table, decide
//! whether that scan is safe (a usable index on the timestamp column, or a small table) and
//! record what was seen, as PipelineWise's data-diff does (SPEC §7; config note §3).
//!
//! # Overview
//!
//! Facts in, findings out:
//!
//! * [`gather`] (the thin shell) reads [`CatalogFacts`] from the source inside the caller's
//!   read-only transaction: every [`IndexFact`] of the table, and a bounded row count
//!   ([`RowCount`]) only when no usable index leads with the timestamp column.
//! * [`CatalogFacts::verdict`] (pure) turns facts into a [`PreflightRecord`]: a
//!   [`PreflightStatus`](datadiff_diff_core::attempt::PreflightStatus) (PASS, BLOCKED, ERROR), upstream's findings texts, the evidence
//!   (`index_metadata`, `has_leading_index`, `table_rows`, `row_limit`), the caller's
//!   [`QueryFingerprint`], and the `index_warning` flag that drives warning alerts.
//!   [`preflight`] is the two in one call, with [`DEFAULT_ROW_LIMIT`].
//! * [`preflight_with`] decides over indexes the caller read itself — a MySQL or MariaDB
//!   source's [`MySqlIndex`](datadiff_diff_core::mysql::MySqlIndex)es from
//!   `information_schema.STATISTICS` — with the same bands and texts ([`SourceIndex`] is what
//!   the verdict asks of an index).
//! * [`PreflightRecord::metadata_only`] (fingerprinted by a [`MetadataOnlyScope`]) and
//!   [`PreflightRecord::placeholder`] build the records of definitions that read no data and
//!   of runs that failed before a preflight was decided.
//! * [`IndexWarningIdentity`] → [`IndexWarningId`]: the UUID v5 a source-index warning is
//!   remembered under, identical to upstream's.
//!
//! Bands for an unindexed table (count bounded at 100,000): below 50,000 PASS; 50,000 to
//! 99,999 PASS with `index_warning`; 100,000 BLOCKED. Any failure is an ERROR record, never a
//! panic or an `Err`: the run records it as evidence and stops before reading data.
//!
//! ```no_run
//! use datadiff_diff_core::attempt::PreflightStatus;
//! use datadiff_preflight::{preflight, QueryFingerprint, SourceTable};
//!
//! # fn main() -> Result<(), postgres::Error> {
//! let mut source = postgres::Client::connect("host=replica dbname=payments user=reader", postgres::NoTls)?;
//! let mut transaction = source.build_transaction().read_only(true).start()?;
//! let check_sql = r#"SELECT COUNT(*) FROM "public"."transfers" WHERE "updated_at" >= $1 AND "updated_at" < $2"#;
//! let table = SourceTable { schema: "public", table: "transfers", timestamp_column: "updated_at" };
//!
//! let record = preflight(&mut transaction, &table, QueryFingerprint::of_sql(check_sql));
//! match record.status {
//!     PreflightStatus::Pass => { /* run the check's queries in the same transaction */ }
//!     PreflightStatus::Blocked | PreflightStatus::Error => {
//!         // The run is ERROR; its error text is `diff_core::Outcome::preflight_stopped`'s.
//!         eprintln!("preflight {}: {:?}", record.status, record.findings);
//!     }
//! }
//! // Store `record` in dd_preflight_log; send an index warning when `record.index_warning`.
//! # Ok(())
//! # }
//! ```
//!
//! # Decisions where upstream is silent
//!
//! * Error texts of failed queries are `source index lookup failed: <message>` and
//!   `bounded source row count failed: <message>`, with the server's primary message only
//!   (never its DETAIL, which can quote row values). Upstream stores the driver's text.
//! * A count that reaches its limit blocks even with a limit below 100,000 (an unknown size
//!   fails closed); with the default limit this is upstream's rule exactly.
//! * A pure expression index is not listed in `index_metadata`, as upstream's query drops
//!   it; a mixed index lists its column parts only (and is unusable).
//!
//! # What it does not do
//!
//! It opens no connection and no transaction, sets no timeout (the caller's transaction
//! carries `statement_timeout`), writes nothing to the backend (that is
//! `datadiff-backend-store`), sends no alert (the runner delivers warnings under the advisory
//! lock named by [`IndexWarningId::advisory_lock_name`]), and never looks at the window:
//! the verdict is the same for any window of a definition.

mod error;
mod facts;
mod fingerprint;
mod gatherer;
mod index;
mod record;

pub use datadiff_diff_core::attempt::{IndexWarningId, IndexWarningIdentity};
pub use error::Error;
pub use facts::{BLOCKING_ROWS, CatalogFacts, DEFAULT_ROW_LIMIT, RowCount, WARNING_ROWS};
pub use fingerprint::{MetadataOnlyScope, QueryFingerprint};
pub use gatherer::{SourceTable, gather, preflight, preflight_with};
pub use index::{IndexFact, SourceIndex};
pub use record::PreflightRecord;
