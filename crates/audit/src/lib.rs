//! The parity audit (SPEC §9): prove that a replica table equals its source before a
//! cutover, or block it. No backend database.
//!
//! The flow, in order (each step only when the previous one passed):
//!
//! 1. **Preconditions**, before any connection: `cutover_ready`, `max_rows` in
//!    1..=50,000,000, `max_examples` in 1..=100, one key column, the metadata flags together.
//! 2. **Separate databases**: both sessions connect (read-only, 10 s connect timeout,
//!    15 min statement timeout) and compare `pg_control_system().system_identifier` and
//!    `current_database()`. (The seed compares server address, port and database; the
//!    address is NULL over a Unix socket, so two socket DSNs to one database would pass.) A
//!    physical standby shares its primary's system identifier, so a database and its own
//!    streaming standby count as one database too: they are copies by construction.
//! 3. **Columns**: the key and the compared columns are resolved on both sides and a decoder
//!    pair is chosen per column, so an incomparable type fails before any table is read (the
//!    pairs of the stream decoders, as for `row_diff`: the replica is read as the
//!    source's type would hold it; the table is in `docs/operator-guide.md` §8).
//! 4. **Inventory**: the source row count; the replica's from the metadata table's
//!    non-deleted rows when one is given (with tombstones and invalid metadata rows counted),
//!    else from the replica table. Either count above `max_rows`, or any invalid metadata
//!    row, refuses.
//! 5. **Snapshots**: `REPEATABLE READ READ ONLY` on both sides; the metadata check runs again
//!    inside the replica's snapshot (CDC may have written since the inventory).
//! 6. **Scan**: both tables stream ordered by key (text keys `COLLATE "C"`) on their own
//!    reader threads through the merge core; a side exceeding `max_rows` during the scan
//!    refuses (no report). Memory is flat: bounded channels and at most `max_examples`
//!    examples.
//! 7. **Report**: PASS/BLOCK with the seed's reason, counts and examples (keys and column
//!    names only, never a value).
//!
//! Refusals ([`Refusal`], wrapped in [`Error::Refused`]) and errors end the audit without a
//! report; callers exit 2 for both.

mod error;
mod refusal;
mod report;

use std::time::Instant;

use datadiff_diff_core::{Key, MergeError, Summary, merge, quoted_ident};

pub use refusal::{MAX_EXAMPLES_LIMIT, MAX_ROWS_LIMIT, PRECONDITIONS, PREFLIGHT, Refusal};
pub use report::{AuditExample, AuditReport, CAVEAT, ExampleKind, Reason, ReportKey, Status};

use datadiff_access::Dsn;
use datadiff_access::Environment;
use datadiff_access::Error as AccessError;

pub use crate::error::Error;
use datadiff_access::stream::{self, ColumnType, Decoder, KeyDecoder, RowQuery, RowStream, StreamOptions};
use datadiff_access::{Session, SessionSettings};
use datadiff_access::{TableName, split_identifiers};

/// The replica's CDC metadata: a table with an LSN and a deleted flag per row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CdcMetadata {
    /// The metadata table (for Debezium-style replicas, the table with tombstones).
    pub table: TableName,
    /// The LSN column: NULL or negative is invalid.
    pub lsn_column: String,
    /// The boolean deleted flag: NULL is invalid; replica rows are the rows where it is false.
    pub deleted_column: String,
}

/// What to audit and how.
///
/// The DSNs are held as given and never shown: `Debug` redacts them.
#[derive(Clone)]
pub struct AuditOptions {
    /// The source DSN (libpq URI or key=value).
    pub source: String,
    /// The replica DSN.
    pub replica: String,
    /// The source table.
    pub table: TableName,
    /// The replica table; the source table's name when `None`.
    pub replica_table: Option<TableName>,
    /// The key column as given to `--key` (double quotes allowed); one column only.
    pub key: String,
    /// The compared columns; `None` compares every column both tables share except the key.
    pub columns: Option<Vec<String>>,
    /// The replica's CDC metadata, when it has some.
    pub metadata: Option<CdcMetadata>,
    /// The operator's confirmation that source writes are paused and CDC is drained.
    pub cutover_ready: bool,
    /// Refuse when either side has more rows than this (1..=50,000,000).
    pub max_rows: i64,
    /// Examples kept in the report (1..=100).
    pub max_examples: i64,
    /// Let two empty tables pass.
    pub allow_empty: bool,
}

impl std::fmt::Debug for AuditOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuditOptions")
            .field("source", &"<redacted>")
            .field("replica", &"<redacted>")
            .field("table", &self.table)
            .field("replica_table", &self.replica_table)
            .field("key", &self.key)
            .field("columns", &self.columns)
            .field("metadata", &self.metadata)
            .field("cutover_ready", &self.cutover_ready)
            .field("max_rows", &self.max_rows)
            .field("max_examples", &self.max_examples)
            .field("allow_empty", &self.allow_empty)
            .finish()
    }
}

impl AuditOptions {
    /// Options with the seed's defaults: key `id`, every shared column, no metadata table,
    /// not cutover-ready, `max_rows` 5,000,000, `max_examples` 20, empty tables blocked.
    pub fn new(source: impl Into<String>, replica: impl Into<String>, table: TableName) -> AuditOptions {
        AuditOptions {
            source: source.into(),
            replica: replica.into(),
            table,
            replica_table: None,
            key: "id".to_owned(),
            columns: None,
            metadata: None,
            cutover_ready: false,
            max_rows: 5_000_000,
            max_examples: 20,
            allow_empty: false,
        }
    }

    /// Checks the preconditions that need no database and returns the key column's name.
    pub fn validate(&self) -> Result<String, Refusal> {
        if !self.cutover_ready {
            return Err(Refusal::NotCutoverReady);
        }
        if !(1..=MAX_ROWS_LIMIT).contains(&self.max_rows) {
            return Err(Refusal::MaxRowsOutOfRange { max_rows: self.max_rows });
        }
        if !(1..=MAX_EXAMPLES_LIMIT).contains(&self.max_examples) {
            return Err(Refusal::MaxExamplesOutOfRange { max_examples: self.max_examples });
        }
        let key = match split_identifiers(&self.key, ',') {
            Some(parts) if parts.len() > 1 => return Err(Refusal::CompositeKey { key: self.key.clone() }),
            Some(parts) => parts.into_iter().next().filter(|name| !name.is_empty()),
            None => None,
        };
        let key = key.ok_or(Refusal::InvalidColumnList { flag: "--key" })?;
        if let Some(columns) = &self.columns {
            if columns.iter().any(String::is_empty) {
                return Err(Refusal::InvalidColumnList { flag: "--columns" });
            }
            if columns.contains(&key) {
                return Err(Refusal::KeyInColumns { key });
            }
        }
        Ok(key)
    }

    fn replica_table(&self) -> &TableName {
        self.replica_table.as_ref().unwrap_or(&self.table)
    }
}

/// Progress of a running audit, for a progress bar.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum AuditProgress {
    /// The inventory passed; the scan will read about this many rows per side. Sent before
    /// the scan's snapshots are taken.
    Inventory {
        /// Source rows.
        source_rows: u64,
        /// Replica rows.
        replica_rows: u64,
    },
    /// Rows read so far by the scan.
    Scanned {
        /// Source rows read.
        source_rows: u64,
        /// Replica rows read.
        replica_rows: u64,
    },
}

/// How often (in merged keys) the scan reports progress.
const PROGRESS_EVERY: u64 = 16_384;

/// Runs the audit. `progress` is called with the inventory and periodically during the scan.
pub fn audit(
    options: &AuditOptions,
    environment: &Environment,
    progress: &mut dyn FnMut(AuditProgress),
) -> Result<AuditReport, Error> {
    let started = Instant::now();
    let key = options.validate().map_err(Error::Refused)?;
    let source_dsn = Dsn::parse("source", &options.source, environment)?;
    let replica_dsn = Dsn::parse("replica", &options.replica, environment)?;

    let (source, replica) = std::thread::scope(|scope| {
        let dispatch = tracing::dispatcher::get_default(Clone::clone);
        let source = scope.spawn(move || {
            tracing::dispatcher::with_default(&dispatch, || Session::connect(&source_dsn, SessionSettings::audit()))
        });
        let replica = Session::connect(&replica_dsn, SessionSettings::audit());
        (source.join().unwrap_or(Err(AccessError::ReaderLost { role: "source".to_owned() })), replica)
    });
    let (mut source, mut replica) = (source?, replica?);

    let source_identity = source.identity()?;
    let replica_identity = replica.identity()?;
    if source_identity == replica_identity {
        return Err(Error::Refused(Refusal::SameDatabase {
            database: source_identity.database,
            system_identifier: source_identity.system_identifier,
        }));
    }

    let plan = Plan::resolve(&mut source, &mut replica, options, &key)?;
    tracing::info!(columns = ?plan.names, key = %key, "comparing columns");

    let inventory = inventory(&mut source, &mut replica, options)?;
    tracing::info!(
        source_rows = inventory.source_rows,
        replica_rows = inventory.replica_rows,
        tombstones = inventory.tombstones,
        invalid_metadata = inventory.invalid_metadata,
        "inventory"
    );
    if inventory.source_rows > options.max_rows
        || inventory.replica_rows > options.max_rows
        || inventory.invalid_metadata > 0
    {
        return Err(Error::Refused(Refusal::Inventory {
            source_rows: inventory.source_rows,
            replica_rows: inventory.replica_rows,
            invalid_metadata: inventory.invalid_metadata,
            max_rows: options.max_rows,
        }));
    }
    progress(AuditProgress::Inventory {
        source_rows: u64::try_from(inventory.source_rows).unwrap_or(0),
        replica_rows: u64::try_from(inventory.replica_rows).unwrap_or(0),
    });

    source.begin_snapshot()?;
    replica.begin_snapshot()?;
    // Take both snapshots now, the replica's with the metadata recheck.
    source.client().batch_execute("SELECT 1").map_err(AccessError::query("source", "taking the snapshot"))?;
    if let Some(metadata) = &options.metadata {
        let sql =
            format!("SELECT EXISTS (SELECT 1 FROM {} WHERE {})", metadata.table.quoted(), invalid_predicate(metadata));
        let invalid: bool = replica
            .client()
            .query_one(sql.as_str(), &[])
            .map_err(AccessError::query("replica", format!("rechecking the CDC metadata of {}", metadata.table)))?
            .get(0);
        if invalid {
            return Err(Error::Refused(Refusal::InvalidMetadataInSnapshot { table: metadata.table.to_string() }));
        }
    } else {
        replica.client().batch_execute("SELECT 1").map_err(AccessError::query("replica", "taking the snapshot"))?;
    }

    let max_examples = usize::try_from(options.max_examples).unwrap_or(1);
    let max_rows = u64::try_from(options.max_rows).unwrap_or(0);
    let source_query = RowQuery::for_table(&options.table, &key, plan.source_key, plan.source_decoders(), None);
    let replica_query =
        RowQuery::for_table(options.replica_table(), &key, plan.replica_key, plan.replica_decoders(), None);
    let mut summary: Summary<Key> = Summary::new(max_examples, plan.names.clone());
    std::thread::scope(|scope| -> Result<(), Error> {
        let source_rows = RowStream::spawn(scope, &mut source, source_query, StreamOptions::default());
        let replica_rows = RowStream::spawn(scope, &mut replica, replica_query, StreamOptions::default());
        let mut merged = 0u64;
        for change in merge(source_rows, replica_rows) {
            let change = change.map_err(|error| Error::from(merge_error(error, options)))?;
            summary.record(&change);
            if summary.source_rows() > max_rows {
                return Err(Error::Refused(Refusal::RowLimitDuringScan {
                    role: "source".to_owned(),
                    max_rows: options.max_rows,
                }));
            }
            if summary.target_rows() > max_rows {
                return Err(Error::Refused(Refusal::RowLimitDuringScan {
                    role: "replica".to_owned(),
                    max_rows: options.max_rows,
                }));
            }
            merged += 1;
            if merged.is_multiple_of(PROGRESS_EVERY) {
                progress(AuditProgress::Scanned {
                    source_rows: summary.source_rows(),
                    replica_rows: summary.target_rows(),
                });
            }
        }
        Ok(())
    })?;
    progress(AuditProgress::Scanned { source_rows: summary.source_rows(), replica_rows: summary.target_rows() });
    source.finish()?;
    replica.finish()?;

    let report = AuditReport::from_summary(&summary, options.allow_empty, started.elapsed().as_secs_f64());
    tracing::info!(
        status = %report.status,
        reason = %report.reason,
        source_rows = report.source_rows,
        replica_rows = report.replica_rows,
        differences = report.difference_count,
        "audit finished"
    );
    Ok(report)
}

/// The key and compared columns with the decoders of each side.
struct Plan {
    names: Vec<String>,
    source_key: KeyDecoder,
    replica_key: KeyDecoder,
    decoders: Vec<(Decoder, Decoder)>,
}

impl Plan {
    fn resolve(source: &mut Session, replica: &mut Session, options: &AuditOptions, key: &str) -> Result<Plan, Error> {
        let replica_table = options.replica_table();
        let source_columns = stream::read_columns(source, &options.table)?;
        let replica_columns = stream::read_columns(replica, replica_table)?;
        let find = |columns: &[ColumnType], role: &str, table: &TableName, name: &str| {
            columns.iter().find(|column| column.name == name).cloned().ok_or_else(|| AccessError::ColumnNotFound {
                role: role.to_owned(),
                table: table.to_string(),
                column: name.to_owned(),
            })
        };
        let source_key = find(&source_columns, "source", &options.table, key)?;
        let replica_key = find(&replica_columns, "replica", replica_table, key)?;
        let (source_key, replica_key) = stream::plan_key(&source_key, &replica_key, "replica")?;
        let names: Vec<String> = match &options.columns {
            Some(columns) => columns.clone(),
            None => source_columns
                .iter()
                .filter(|column| column.name != key && replica_columns.iter().any(|other| other.name == column.name))
                .map(|column| column.name.clone())
                .collect(),
        };
        let mut decoders = Vec::with_capacity(names.len());
        for name in &names {
            let source_column = find(&source_columns, "source", &options.table, name)?;
            let replica_column = find(&replica_columns, "replica", replica_table, name)?;
            decoders.push(stream::plan_pair(&source_column, &replica_column, "replica")?);
        }
        Ok(Plan { names, source_key, replica_key, decoders })
    }

    fn source_decoders(&self) -> Vec<(String, Decoder)> {
        self.names.iter().cloned().zip(self.decoders.iter().map(|pair| pair.0)).collect()
    }

    fn replica_decoders(&self) -> Vec<(String, Decoder)> {
        self.names.iter().cloned().zip(self.decoders.iter().map(|pair| pair.1)).collect()
    }
}

/// The inventory counts.
struct Inventory {
    source_rows: i64,
    replica_rows: i64,
    tombstones: i64,
    invalid_metadata: i64,
}

fn invalid_predicate(metadata: &CdcMetadata) -> String {
    let lsn = quoted_ident(&metadata.lsn_column);
    let deleted = quoted_ident(&metadata.deleted_column);
    format!("{lsn} IS NULL OR {lsn} < 0 OR {deleted} IS NULL")
}

fn inventory(source: &mut Session, replica: &mut Session, options: &AuditOptions) -> Result<Inventory, Error> {
    let count = |session: &mut Session, table: &TableName| -> Result<i64, Error> {
        let role = session.role().to_owned();
        let sql = format!("SELECT count(*)::bigint FROM {}", table.quoted());
        let row = session
            .client()
            .query_one(sql.as_str(), &[])
            .map_err(AccessError::query(&role, format!("counting the rows of {table}")))?;
        Ok(row.get(0))
    };
    std::thread::scope(|scope| {
        let dispatch = tracing::dispatcher::get_default(Clone::clone);
        let source_count =
            scope.spawn(move || tracing::dispatcher::with_default(&dispatch, || count(source, &options.table)));
        let replica = match &options.metadata {
            None => count(replica, options.replica_table()).map(|rows| (rows, 0, 0)),
            Some(metadata) => {
                let deleted = quoted_ident(&metadata.deleted_column);
                let sql = format!(
                    "SELECT count(*) FILTER (WHERE NOT {deleted})::bigint, count(*) FILTER (WHERE {deleted})::bigint, \
                     count(*) FILTER (WHERE {})::bigint FROM {}",
                    invalid_predicate(metadata),
                    metadata.table.quoted()
                );
                replica
                    .client()
                    .query_one(sql.as_str(), &[])
                    .map(|row| (row.get(0), row.get(1), row.get(2)))
                    .map_err(AccessError::query("replica", format!("counting the CDC metadata of {}", metadata.table)))
                    .map_err(Error::from)
            }
        };
        let source_rows =
            source_count.join().unwrap_or(Err(AccessError::ReaderLost { role: "source".to_owned() }.into()))?;
        let (replica_rows, tombstones, invalid_metadata) = replica?;
        Ok(Inventory { source_rows, replica_rows, tombstones, invalid_metadata })
    })
}

fn merge_error(error: MergeError<AccessError>, options: &AuditOptions) -> AccessError {
    let table = |role: &str| {
        if role == "source" { options.table.to_string() } else { options.replica_table().to_string() }
    };
    let role = |side: datadiff_diff_core::Side| match side {
        datadiff_diff_core::Side::Source => "source",
        datadiff_diff_core::Side::Target => "replica",
    };
    match error {
        MergeError::Read { source, .. } => source,
        MergeError::DuplicateKey { side, key } => {
            AccessError::DuplicateKey { role: role(side).to_owned(), table: table(role(side)), key }
        }
        MergeError::OutOfOrder { side, previous, key } => {
            AccessError::OutOfOrder { role: role(side).to_owned(), table: table(role(side)), previous, key }
        }
        other => AccessError::Merge { message: other.to_string() },
    }
}
