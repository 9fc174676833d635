//! The parity audit (SPEC §9): prove that a replica table equals its source before a
//! cutover, or block it. No backend database.
//!
//! The flow, in order (each step only when the previous one passed):
//!
//! 1. **Preconditions**, before any connection: `cutover_ready` or `live`, `max_rows` in
//!    1..=50,000,000, `max_examples` in 1..=100, one key column, the metadata flags together
//!    (or `--deleted-column` alone), a well-formed column map.
//! 2. **Separate databases**: both sessions connect (read-only, 10 s connect timeout, the
//!    statement timeout: 15 min by default) and compare `pg_control_system().system_identifier` and
//!    `current_database()`. (The seed compares server address, port and database; the
//!    address is NULL over a Unix socket, so two socket DSNs to one database would pass.) A
//!    physical standby shares its primary's system identifier, so a database and its own
//!    streaming standby count as one database too: they are copies by construction.
//! 3. **Columns**: the key and the compared columns are matched on both sides (exact name,
//!    else the name lower-cased as pipelinewise-target-postgres writes it, or an explicit
//!    map: see [`ColumnMatchError`]'s module rule, `columns.rs`) and a decoder pair is chosen
//!    per column, so an incomparable type fails before any table is read (the pairs of the
//!    stream decoders, as for `row_diff`: the replica is read as the source's type would
//!    hold it; the table is in `docs/comparison.md`). The deleted marker's column is
//!    found and its type read (see `tombstone.rs`).
//! 4. **Inventory**: the source row count; the replica's from the metadata table's
//!    non-deleted rows when one is given (with tombstones and invalid metadata rows counted),
//!    from the replica table's live rows (and tombstones) with a deleted column alone, else
//!    from the replica table. Either count above `max_rows`, or any invalid metadata row,
//!    refuses.
//! 5. **Snapshots**: `REPEATABLE READ READ ONLY` on both sides; the metadata check runs again
//!    inside the replica's snapshot (CDC may have written since the inventory), and the
//!    tombstones the report gives are counted there.
//! 6. **Scan**: both tables stream ordered by key (text keys `COLLATE "C"`) on their own
//!    reader threads through the merge core, the replica's deleted rows left out when a
//!    deleted column is given alone; a side exceeding `max_rows` during the scan refuses (no
//!    report). Memory is flat: bounded channels and at most `max_examples` examples.
//!    With the segment strategy ([`AuditOptions::strategy`]; `auto` picks it over a slow link
//!    for tables above 10,000 rows) both snapshots first hash their rows by key segment
//!    ([`datadiff_access::segment`]) and only the segments whose hashes differ are streamed;
//!    the report is the same.
//! 7. **Report**: PASS/BLOCK with the seed's reason, counts and examples (keys and column
//!    names only, never a value), both sides' identities, the times and the version.
//!
//! 8. **Live** ([`AuditOptions::live`], `--live`): the keys that differed are read again on
//!    both sides until they agree (counted as `in_flight`) or the settle period passes, the
//!    replica's reads anchored to a source WAL position when a [`Position`] is given; see the
//!    `live` module (`live.rs`) for exactly what is proven with and without a position.
//!
//! Refusals ([`Refusal`], wrapped in [`Error::Refused`]) and errors end the audit without a
//! report; callers exit 2 for both.
//!
//! # Embedding
//!
//! A cutover script's gate: audit one table, print the report's JSON (keys and column names,
//! never a value), and go on only on PASS.
//!
//! ```no_run
//! use datadiff_access::{Environment, TableName};
//! use datadiff_audit::{AuditOptions, AuditProgress, Error, Status, audit};
//!
//! let mut options = AuditOptions::new(
//!     "postgresql://auditor@source.internal/app",
//!     "postgresql://auditor@replica.internal/app",
//!     TableName::new("public", "transfers"),
//! );
//! options.cutover_ready = true; // source writes are paused, CDC is drained
//! let mut progress = |step: AuditProgress| eprintln!("{step:?}");
//! match audit(&options, &Environment::process(), &mut progress) {
//!     Ok(report) => {
//!         println!("{}", serde_json::to_string_pretty(&report)?);
//!         if report.status != Status::Pass {
//!             std::process::exit(1); // BLOCK: the replica differs; keep the source
//!         }
//!     }
//!     Err(Error::Refused(refusal)) => eprintln!("refused: {refusal}"),
//!     Err(error) => eprintln!("audit failed: {error}"),
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod columns;
mod error;
mod live;
mod metrics;
mod parts;
mod refusal;
mod report;
mod scan;
mod tombstone;
mod watch;

use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant, SystemTime};

use datadiff_diff_core::{
    Side,
    merge::MergeError,
    plan::quoted_ident,
    segment::{SearchSettings, Strategy},
};

pub use columns::ColumnMatchError;
pub use live::{
    DEFAULT_SETTLE, FIRST_BACKOFF, Live, LiveReport, MAX_BACKOFF, MAX_TRACKED_KEYS, Position, PositionError,
    PositionReport, PositionSyntaxError, ProvenAt,
};
pub use metrics::audit_metrics;
pub use refusal::{MAX_EXAMPLES_LIMIT, MAX_ROWS_LIMIT, PRECONDITIONS, PREFLIGHT, Refusal};
pub use report::{
    AuditExample, AuditReport, CAVEAT, CompositeReportKey, DATADIFF_VERSION, ExampleKind, LIVE_CAVEAT, Provenance,
    Reason, ReportKey, SideIdentity, Status,
};

use datadiff_access::Dsn;
use datadiff_access::Environment;
use datadiff_access::Error as AccessError;

pub use crate::error::Error;
use datadiff_access::compare::{CompareError, Compared, Comparison, compare};
use datadiff_access::segment::{self, SideHashing, Unhashable};
use datadiff_access::stream::{self, ColumnType, Decoder, KeyDecoder};
use datadiff_access::{Session, SessionSettings};
use datadiff_access::{TableName, split_identifiers};

use crate::columns::{Selection, Tables, check_deleted_marker, match_columns};
use crate::scan::{ScanHooks, SideRows, SnapshotSide};
use crate::tombstone::DeletedMarker;
use crate::watch::{BOTH, Role, Watch};

/// The replica's CDC metadata: a table with an LSN and a deleted flag per row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CdcMetadata {
    /// The metadata table (for Debezium-style replicas, the table with tombstones).
    pub table: TableName,
    /// The LSN column: NULL or negative is invalid.
    pub lsn_column: String,
    /// The deleted flag, boolean or text `'true'`/`'false'`: NULL (or other text) is
    /// invalid; replica rows are the rows where it is false.
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
    /// The compared columns; `None` compares every source column except the key and
    /// [`AuditOptions::exclude_columns`], each of which must have a replica column.
    pub columns: Option<Vec<String>>,
    /// Source columns left out of the comparison (without [`AuditOptions::columns`]); the
    /// report lists them.
    pub exclude_columns: Vec<String>,
    /// The replica's CDC metadata, when it has some.
    pub metadata: Option<CdcMetadata>,
    /// A deleted marker on the replica table itself (no metadata table): a boolean (true is
    /// deleted), text (any non-NULL value but `'false'` is deleted: Debezium's `__deleted`,
    /// PipelineWise's `_sdc_deleted_at` text) or any other type (any non-NULL value is
    /// deleted). Deleted rows leave the comparison and are counted as tombstones.
    pub deleted_column: Option<String>,
    /// Replica column names for source columns, `(source, replica)`, taken before the exact
    /// and lower-cased names.
    pub column_map: Vec<(String, String)>,
    /// The operator's confirmation that source writes are paused and CDC is drained.
    pub cutover_ready: bool,
    /// A live audit (`--live`): differing keys are rechecked until they agree or the settle
    /// period passes (see the `live` module); replaces [`AuditOptions::cutover_ready`].
    pub live: Option<Live>,
    /// Refuse when either side has more rows than this (1..=50,000,000).
    pub max_rows: i64,
    /// Examples kept in the report (1..=100).
    pub max_examples: i64,
    /// Let two empty tables pass.
    pub allow_empty: bool,
    /// Each session's `statement_timeout` (the seed's 15 minutes by default); the audit also
    /// gives up on a server that has not answered a step within it plus
    /// [`datadiff_access::ANSWER_GRACE`].
    pub statement_timeout: Duration,
    /// Compare an empty string and NULL as one value in text-like columns (the opt-in
    /// coercion of `--empty-string-as-null`; target-postgres loads every `''` as NULL).
    pub empty_string_as_null: bool,
    /// How the scan reads the rows: `auto` (the default) streams over a fast link and hashes
    /// key segments in the databases over a slow one (see [`datadiff_access::segment`]).
    pub strategy: Strategy,
    /// The segment search's tuning (leaf size, fan-outs); the defaults suit tables of any
    /// size, smaller values exercise the search on small tables.
    pub segment_settings: SearchSettings,
    /// Pairs of sessions scanning the table's parts at once (`--jobs`, 1..=64; default 1:
    /// one scan on the audit's own sessions). See [`AuditOptions::parts`].
    pub jobs: usize,
    /// Key sub-ranges the scan is divided into (the `parts` module, `parts.rs`): `0` (the
    /// default) for as many as [`AuditOptions::jobs`]; at most
    /// [`datadiff_access::split::MAX_PARTS`]. With one part (and one job) the scan is one
    /// unit, as before. The report is the same whatever the parts.
    pub parts: usize,
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
            .field("exclude_columns", &self.exclude_columns)
            .field("metadata", &self.metadata)
            .field("deleted_column", &self.deleted_column)
            .field("column_map", &self.column_map)
            .field("cutover_ready", &self.cutover_ready)
            .field("live", &self.live)
            .field("max_rows", &self.max_rows)
            .field("max_examples", &self.max_examples)
            .field("allow_empty", &self.allow_empty)
            .field("statement_timeout", &self.statement_timeout)
            .field("empty_string_as_null", &self.empty_string_as_null)
            .field("strategy", &self.strategy)
            .field("segment_settings", &self.segment_settings)
            .field("jobs", &self.jobs)
            .field("parts", &self.parts)
            .finish()
    }
}

impl AuditOptions {
    /// Options with the seed's defaults: key `id`, every shared column, no metadata table, no
    /// deleted column, no column map, not cutover-ready, `max_rows` 5,000,000, `max_examples`
    /// 20, empty tables blocked, the seed's 15-minute statement timeout.
    pub fn new(source: impl Into<String>, replica: impl Into<String>, table: TableName) -> AuditOptions {
        AuditOptions {
            source: source.into(),
            replica: replica.into(),
            table,
            replica_table: None,
            key: "id".to_owned(),
            columns: None,
            exclude_columns: Vec::new(),
            metadata: None,
            deleted_column: None,
            column_map: Vec::new(),
            cutover_ready: false,
            live: None,
            max_rows: 5_000_000,
            max_examples: 20,
            allow_empty: false,
            statement_timeout: datadiff_access::AUDIT_STATEMENT_TIMEOUT,
            empty_string_as_null: false,
            strategy: Strategy::Auto,
            segment_settings: SearchSettings::default(),
            jobs: 1,
            parts: 0,
        }
    }

    /// The parts the scan is divided into: [`AuditOptions::parts`], or as many as the jobs.
    pub fn part_count(&self) -> usize {
        match self.parts {
            0 => self.jobs.max(1),
            parts => parts,
        }
    }

    /// Checks the preconditions that need no database and returns the key columns' names,
    /// in key order (one for a single-column key, several for a composite key).
    pub fn validate(&self) -> Result<Vec<String>, Refusal> {
        if !self.cutover_ready && self.live.is_none() {
            return Err(Refusal::NotCutoverReady);
        }
        if !(1..=MAX_ROWS_LIMIT).contains(&self.max_rows) {
            return Err(Refusal::MaxRowsOutOfRange { max_rows: self.max_rows });
        }
        if !(1..=MAX_JOBS).contains(&self.jobs) {
            return Err(Refusal::JobsOutOfRange { jobs: self.jobs });
        }
        if self.parts > datadiff_access::split::MAX_PARTS {
            return Err(Refusal::PartsOutOfRange { parts: self.parts });
        }
        if !(1..=MAX_EXAMPLES_LIMIT).contains(&self.max_examples) {
            return Err(Refusal::MaxExamplesOutOfRange { max_examples: self.max_examples });
        }
        let keys = split_identifiers(&self.key, ',')
            .filter(|parts| !parts.is_empty() && parts.iter().all(|name| !name.is_empty()))
            .ok_or(Refusal::InvalidColumnList { flag: "--key" })?;
        for (index, key) in keys.iter().enumerate() {
            if keys[..index].contains(key) {
                return Err(Refusal::KeyColumnTwice { column: key.clone() });
            }
        }
        if let Some(columns) = &self.columns {
            if columns.iter().any(String::is_empty) {
                return Err(Refusal::InvalidColumnList { flag: "--columns" });
            }
            if let Some(key) = keys.iter().find(|key| columns.contains(key)) {
                return Err(Refusal::KeyInColumns { key: key.clone() });
            }
        }
        if !self.exclude_columns.is_empty() {
            if self.columns.is_some() {
                return Err(Refusal::ColumnsAndExclusions);
            }
            if self.exclude_columns.iter().any(String::is_empty) {
                return Err(Refusal::InvalidColumnList { flag: "--exclude-columns" });
            }
            if let Some(key) = keys.iter().find(|key| self.exclude_columns.contains(key)) {
                return Err(Refusal::KeyExcluded { key: key.clone() });
            }
        }
        if self.metadata.is_some() && self.deleted_column.is_some() {
            return Err(Refusal::DeletedColumnTwice);
        }
        if self.deleted_column.as_deref() == Some("") {
            return Err(Refusal::InvalidColumnList { flag: "--deleted-column" });
        }
        for (index, (source, replica)) in self.column_map.iter().enumerate() {
            let twice = self.column_map[..index].iter().any(|(other, _)| other == source);
            if source.is_empty() || replica.is_empty() || twice {
                return Err(Refusal::InvalidColumnMap { entry: format!("{source}={replica}") });
            }
        }
        Ok(keys)
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
    /// The scan hashes key segments in both databases (the segment strategy): `level` 0 is
    /// the whole table's overview, then each level splits the segments that differed.
    Hashing {
        /// The level being hashed.
        level: u32,
    },
    /// The first level's sketches named where the sides differ: both read their digests at
    /// those positions, to prove every other row equal.
    Settling {
        /// Positions read.
        positions: u64,
    },
    /// The scan in parts (`--jobs`): `done` of `total` parts compared.
    Parts {
        /// Parts compared.
        done: u64,
        /// Parts in all.
        total: u64,
    },
    /// Rows read so far by the scan (with segments: rows proven equal by their hashes
    /// included).
    Scanned {
        /// Source rows read.
        source_rows: u64,
        /// Replica rows read.
        replica_rows: u64,
    },
}

/// The most pairs of sessions an audit scans with (`--jobs`).
pub const MAX_JOBS: usize = 64;

/// How often (in merged keys) the scan reports progress.
const PROGRESS_EVERY: u64 = 16_384;

/// How often the caller looks at the audit's deadline.
const WATCH_POLL: Duration = Duration::from_millis(100);

/// What the audit's helper thread tells its caller.
enum Event {
    /// A progress step; the helper waits for the acknowledgement, so the callback runs
    /// between the audit's steps as it always did (the inventory before the snapshots).
    Progress(AuditProgress, mpsc::SyncSender<()>),
    Done(Box<Result<AuditReport, Error>>),
}

/// Runs the audit. `progress` is called with the inventory and periodically during the scan.
///
/// The audit runs on a helper thread while this one watches its deadline (see the `watch`
/// module): a server that does not answer a step within the statement timeout plus
/// [`datadiff_access::ANSWER_GRACE`] ends the audit with [`Error::NoAnswer`].
pub fn audit(
    options: &AuditOptions,
    environment: &Environment,
    progress: &mut dyn FnMut(AuditProgress),
) -> Result<AuditReport, Error> {
    let watch = Arc::new(Watch::default());
    let (sender, events) = mpsc::channel();
    let (owned_options, owned_environment, helper_watch) = (options.clone(), environment.clone(), Arc::clone(&watch));
    let dispatch = tracing::dispatcher::get_default(Clone::clone);
    std::thread::Builder::new()
        .name("datadiff-audit".to_owned())
        .spawn(move || {
            tracing::dispatcher::with_default(&dispatch, || {
                let progress_sender = sender.clone();
                let (acknowledge, acknowledged) = mpsc::sync_channel(1);
                let mut forward = |step| {
                    if progress_sender.send(Event::Progress(step, acknowledge.clone())).is_ok() {
                        let _ = acknowledged.recv();
                    }
                };
                let result = audit_watched(&owned_options, &owned_environment, &helper_watch, &mut forward);
                let _ = sender.send(Event::Done(Box::new(result)));
            });
        })
        .map_err(|_| Error::Thread("cannot be started"))?;
    let deadline = options.statement_timeout + datadiff_access::ANSWER_GRACE;
    loop {
        match events.recv_timeout(WATCH_POLL) {
            Ok(Event::Progress(step, acknowledge)) => {
                progress(step);
                let _ = acknowledge.send(());
            }
            Ok(Event::Done(result)) => return *result,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                if let Some((roles, step)) = watch.overdue(deadline) {
                    watch.cancel();
                    tracing::warn!(step, "no answer: the audit's connections are abandoned");
                    return Err(watch::no_answer(&roles, step, options.statement_timeout));
                }
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => return Err(Error::Thread("stopped unexpectedly")),
        }
    }
}

/// The audit itself, marking on `watch` what it waits for.
fn audit_watched(
    options: &AuditOptions,
    environment: &Environment,
    watch: &Watch,
    progress: &mut dyn FnMut(AuditProgress),
) -> Result<AuditReport, Error> {
    let started = Instant::now();
    let started_at = SystemTime::now();
    let keys = options.validate().map_err(Error::Refused)?;
    let source_dsn = Dsn::parse("source", &options.source, environment)?;
    let replica_dsn = Dsn::parse("replica", &options.replica, environment)?;

    let links = (source_dsn.clone(), replica_dsn.clone());
    let settings = SessionSettings { statement_timeout: Some(options.statement_timeout), read_only: true };
    let connecting = watch.busy("connecting", &BOTH);
    let (source, replica) = std::thread::scope(|scope| {
        let dispatch = tracing::dispatcher::get_default(Clone::clone);
        let source = scope
            .spawn(move || tracing::dispatcher::with_default(&dispatch, || Session::connect(&source_dsn, settings)));
        let replica = Session::connect(&replica_dsn, settings);
        (source.join().unwrap_or(Err(AccessError::ReaderLost { role: "source".to_owned() })), replica)
    });
    let (mut source, mut replica) = (source?, replica?);
    watch.set_canceller(Role::Source, source.canceller());
    watch.set_canceller(Role::Replica, replica.canceller());

    let source_identity = source.identity()?;
    let replica_identity = replica.identity()?;
    drop(connecting);
    if source_identity == replica_identity {
        return Err(Error::Refused(Refusal::SameDatabase {
            database: source_identity.database,
            system_identifier: source_identity.system_identifier,
        }));
    }

    let reading = watch.busy("reading the catalogs", &BOTH);
    let plan = Plan::resolve(&mut source, &mut replica, options, &keys)?;
    drop(reading);
    tracing::info!(columns = ?plan.names, replica_columns = ?plan.replica_names, key = ?keys, "comparing columns");

    let counting = watch.busy("counting rows", &BOTH);
    let inventory = inventory(&mut source, &mut replica, options, plan.marker.as_ref())?;
    drop(counting);
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

    // With a position, the replica's snapshot waits (within the settle period) until the
    // replica has applied the source's WAL position read in the source's snapshot.
    let mut anchor = match options.live.as_ref().and_then(|live| live.position.as_ref()) {
        Some(position) => {
            let _checking = watch.busy("checking the replica's position", &[Role::Replica]);
            let column_table = options.metadata.as_ref().map_or(options.replica_table(), |metadata| &metadata.table);
            Some(live::Anchor::check(&mut replica, position, options.replica_table(), column_table)?)
        }
        None => None,
    };
    let mut snapshots = Some(watch.busy("taking the snapshots", &BOTH));
    source.begin_snapshot()?;
    // Take both snapshots now; the replica's with the metadata recheck and the tombstone
    // count, so the report's tombstones are those of the scanned snapshot.
    match (anchor.as_mut(), &options.live) {
        (Some(anchor), Some(live)) => {
            let lsn = anchor.source_lsn(&mut source)?;
            drop(snapshots.take());
            anchor.wait(&mut replica, watch, lsn, Instant::now() + live.settle)?;
            snapshots = Some(watch.busy("taking the snapshots", &BOTH));
        }
        _ => {
            source.client().batch_execute("SELECT 1").map_err(AccessError::query("source", "taking the snapshot"))?;
        }
    }
    replica.begin_snapshot()?;
    let tombstones = match (&options.metadata, &plan.marker) {
        (Some(metadata), Some(marker)) => {
            let sql = format!(
                "SELECT count(*) FILTER (WHERE {}) > 0, count(*) FILTER (WHERE {})::bigint FROM {}",
                invalid_predicate(metadata, marker),
                marker.deleted_sql(),
                metadata.table.quoted()
            );
            let row = replica
                .client()
                .query_one(sql.as_str(), &[])
                .map_err(AccessError::query("replica", format!("rechecking the CDC metadata of {}", metadata.table)))?;
            if row.get::<_, bool>(0) {
                return Err(Error::Refused(Refusal::InvalidMetadataInSnapshot { table: metadata.table.to_string() }));
            }
            row.get::<_, i64>(1)
        }
        (None, Some(marker)) => {
            let table = options.replica_table();
            let sql =
                format!("SELECT count(*) FILTER (WHERE {})::bigint FROM {}", marker.deleted_sql(), table.quoted());
            replica
                .client()
                .query_one(sql.as_str(), &[])
                .map_err(AccessError::query("replica", format!("counting the tombstones of {table}")))?
                .get::<_, i64>(0)
        }
        (_, None) => {
            replica.client().batch_execute("SELECT 1").map_err(AccessError::query("replica", "taking the snapshot"))?;
            0
        }
    };

    drop(snapshots);

    let inventory_rows = u64::try_from(inventory.source_rows.max(inventory.replica_rows)).unwrap_or(0);
    let max_examples = usize::try_from(options.max_examples).unwrap_or(1);
    // A live audit keeps every differing key (up to a bound) for its recheck.
    let kept_examples = if options.live.is_some() { MAX_TRACKED_KEYS } else { max_examples };
    // With a deleted column on the replica table itself, only its live rows are compared.
    let live = match (&options.metadata, &plan.marker) {
        (None, Some(marker)) => Some(marker.live_sql()),
        _ => None,
    };
    let (source_hashing, replica_hashing) = match &plan.hashes {
        Ok((source, replica)) => (Some(source), Some(replica)),
        Err(_) => (None, None),
    };
    let source_rows = SideRows {
        table: options.table.clone(),
        keys: plan.source_keys(),
        columns: plan.source_decoders(),
        live: None,
    };
    let replica_rows = SideRows {
        table: options.replica_table().clone(),
        keys: plan.replica_keys(),
        columns: plan.replica_decoders(),
        live: live.clone(),
    };
    let mut comparison = Comparison::new(kept_examples, plan.names.clone());
    comparison.strategy = options.strategy;
    comparison.counted_rows = Some(inventory_rows);
    comparison.unhashable = plan.hashes.as_ref().err().map(ToString::to_string);
    comparison.settings = options.segment_settings;
    let split = match options.part_count() {
        1 => None,
        parts => split_plan(&mut source, options, &plan, parts, inventory_rows)?,
    };
    let compared = if let Some((split, bounds)) = split {
        let scan = parts::PartScan {
            settings,
            comparison: comparison.clone(),
            split,
            parts: datadiff_access::split::parts(bounds),
            jobs: options.jobs,
            max_rows: options.max_rows,
        };
        tracing::info!(parts = scan.parts.len(), jobs = options.jobs, "the scan is divided into key ranges");
        let source_snapshot = parts::export_snapshot(&mut source)?;
        let replica_snapshot = parts::export_snapshot(&mut replica)?;
        let source_side =
            parts::PartSide { dsn: &links.0, rows: source_rows, hashing: source_hashing, snapshot: source_snapshot };
        let replica_side =
            parts::PartSide { dsn: &links.1, rows: replica_rows, hashing: replica_hashing, snapshot: replica_snapshot };
        parts::scan(scan, source_side, replica_side, &mut *progress).map_err(|error| match error {
            CompareError::NoAnswer(sides) => {
                let roles: Vec<Role> = sides
                    .iter()
                    .map(|side| match side {
                        Side::Source => Role::Source,
                        Side::Target => Role::Replica,
                    })
                    .collect();
                watch::no_answer(&roles, "scanning", options.statement_timeout)
            }
            other => scan_error(other, options),
        })
    } else {
        let mut source_side = SnapshotSide::new(&mut source, Side::Source, &links.0, source_rows, source_hashing);
        let mut replica_side = SnapshotSide::new(&mut replica, Side::Target, &links.1, replica_rows, replica_hashing);
        let mut hooks = ScanHooks::new(watch, &mut *progress, options.max_rows);
        compare(&mut source_side, &mut replica_side, &comparison, &mut hooks)
            .map_err(|error| scan_error(error, options))
    };
    let Compared { summary, strategy, .. } = compared?;
    progress(AuditProgress::Scanned { source_rows: summary.source_rows(), replica_rows: summary.target_rows() });
    let ending = watch.busy("ending the snapshots", &BOTH);
    source.finish()?;
    replica.finish()?;
    drop(ending);

    let (summary, live_report) = match &options.live {
        None => (summary, None),
        Some(settings) => {
            let recheck = live::Recheck {
                live: settings,
                watch,
                source: live::KeyReader {
                    table: options.table.clone(),
                    keys: plan.source_keys(),
                    columns: plan.source_decoders(),
                    live: None,
                },
                replica: live::KeyReader {
                    table: options.replica_table().clone(),
                    keys: plan.replica_keys(),
                    columns: plan.replica_decoders(),
                    live,
                },
                field_names: plan.names.clone(),
                max_examples,
                anchor: anchor.take(),
            };
            let (summary, report) = recheck.run(&mut source, &mut replica, summary, Instant::now())?;
            (summary, Some(report))
        }
    };

    let provenance = Provenance {
        source: SideIdentity {
            columns: plan.names.clone(),
            database: source_identity.database,
            deleted_column: None,
            key: plan.source_key_names.join(","),
            metadata_table: None,
            system_identifier: source_identity.system_identifier,
            table: options.table.to_string(),
        },
        replica: SideIdentity {
            columns: plan.replica_names.clone(),
            database: replica_identity.database,
            deleted_column: plan.marker.as_ref().map(|marker| marker.column().to_owned()),
            key: plan.replica_key_names.join(","),
            metadata_table: options.metadata.as_ref().map(|metadata| metadata.table.to_string()),
            system_identifier: replica_identity.system_identifier,
            table: options.replica_table().to_string(),
        },
        started_at,
        finished_at: SystemTime::now(),
        duration_seconds: started.elapsed().as_secs_f64(),
        tombstones: u64::try_from(tombstones).unwrap_or(0),
        excluded_columns: plan.excluded.clone(),
        strategy,
        key_columns: plan.source_key_names.clone(),
    };
    let mut report = AuditReport::from_summary(&summary, options.allow_empty, provenance);
    if live_report.is_some() {
        report.caveat = report::LIVE_CAVEAT;
    }
    report.live = live_report;
    tracing::info!(
        status = %report.status,
        reason = %report.reason,
        source_rows = report.source_rows,
        replica_rows = report.replica_rows,
        tombstones = report.tombstones,
        differences = report.difference_count,
        in_flight = report.live.as_ref().map(|live| live.in_flight),
        "audit finished"
    );
    Ok(report)
}

/// How the scan is divided: the first key column's split and the bounds read in the source's
/// snapshot; `None` when it stays one unit (a key that cannot be split, said in the log, or
/// too few distinct keys).
fn split_plan(
    source: &mut Session,
    options: &AuditOptions,
    plan: &Plan,
    parts: usize,
    inventory_rows: u64,
) -> Result<Option<(datadiff_access::split::SplitKey, Vec<datadiff_diff_core::merge::Key>)>, Error> {
    use datadiff_access::split::{self, SplitKey};
    let (source_key, replica_key) = plan.key_decoders[0];
    let key = match SplitKey::of(source_key, replica_key) {
        Ok(key) => key,
        Err(why) => {
            tracing::info!(reason = %why, "the scan stays one unit");
            return Ok(None);
        }
    };
    let query = split::BoundsQuery {
        table: &options.table,
        key: &plan.source_key_names[0],
        split: key,
        filter: None,
        parts,
        sample: split::sample_percent(Some(inventory_rows)),
    };
    let bounds = split::read_bounds(source.client(), "source", &query)?;
    Ok((!bounds.is_empty()).then_some((key, bounds)))
}

/// The key and compared columns with the decoders of each side, and the deleted marker.
struct Plan {
    /// The compared columns' source names.
    names: Vec<String>,
    /// The replica names of the same columns, in the same order.
    replica_names: Vec<String>,
    /// The key columns' names on each side, in key order (several for a composite key).
    source_key_names: Vec<String>,
    replica_key_names: Vec<String>,
    /// The key columns' decoders (source, replica), in key order.
    key_decoders: Vec<(KeyDecoder, KeyDecoder)>,
    decoders: Vec<(Decoder, Decoder)>,
    /// The deleted marker: the metadata table's flag, or the replica table's column.
    marker: Option<DeletedMarker>,
    /// Source columns left out on request (see [`columns`]).
    excluded: Vec<String>,
    /// How each side hashes its rows by key segment, or why they cannot be hashed
    /// ([`segment::plan_hashing`]).
    hashes: Result<(SideHashing, SideHashing), Unhashable>,
}

impl Plan {
    fn resolve(
        source: &mut Session,
        replica: &mut Session,
        options: &AuditOptions,
        keys: &[String],
    ) -> Result<Plan, Error> {
        let replica_table = options.replica_table();
        let source_columns = stream::read_columns(source, &options.table)?;
        let replica_columns = stream::read_columns(replica, replica_table)?;
        let find = |columns: &[ColumnType], table: &TableName, name: &str| {
            columns.iter().find(|column| column.name == name).cloned().ok_or_else(|| AccessError::ColumnNotFound {
                role: "replica".to_owned(),
                table: table.to_string(),
                column: name.to_owned(),
            })
        };
        let marker = match (&options.metadata, &options.deleted_column) {
            (Some(metadata), _) => {
                let metadata_columns = stream::read_columns(replica, &metadata.table)?;
                find(&metadata_columns, &metadata.table, &metadata.lsn_column)?;
                let flag = find(&metadata_columns, &metadata.table, &metadata.deleted_column)?;
                Some(DeletedMarker::flag(&flag, &metadata.table.to_string()).map_err(Error::Refused)?)
            }
            (None, Some(column)) => Some(DeletedMarker::on_replica(&find(&replica_columns, replica_table, column)?)),
            (None, None) => None,
        };
        let skip = match (&options.metadata, &marker) {
            (None, Some(marker)) => Some(marker.column()),
            _ => None,
        };
        let (source_table, replica_table_text) = (options.table.to_string(), replica_table.to_string());
        let tables = Tables {
            source_table: &source_table,
            source: &source_columns,
            replica_table: &replica_table_text,
            replica: &replica_columns,
        };
        if let Some(marker) = skip {
            check_deleted_marker(&tables, &options.column_map, marker)?;
        }
        let selection = Selection {
            requested: options.columns.as_deref(),
            excluded: &options.exclude_columns,
            map: &options.column_map,
            skip_replica: skip,
        };
        let key_names: Vec<&str> = keys.iter().map(String::as_str).collect();
        let matched = match_columns(&tables, &key_names, selection)?;
        let key_decoders = matched
            .keys
            .iter()
            .map(|key| stream::plan_key(&key.source, &key.replica, "replica"))
            .collect::<Result<Vec<_>, _>>()?;
        let mut decoders = Vec::with_capacity(matched.columns.len());
        let coercions = stream::Coercions::NONE.empty_string_as_null(options.empty_string_as_null);
        for column in &matched.columns {
            let (source_decoder, replica_decoder) =
                stream::plan_pair_with(&column.source, &column.replica, "replica", coercions)?;
            decoders.push((source_decoder, replica_decoder));
        }
        let column_pairs = matched.columns.iter().zip(&decoders).map(|(column, (source_decoder, replica_decoder))| {
            ((&column.source, *source_decoder), (&column.replica, *replica_decoder))
        });
        let hashes = match (matched.keys.as_slice(), key_decoders.as_slice()) {
            ([key], [(source_key, replica_key)]) => {
                segment::plan_hashing((&key.source.name, *source_key, *replica_key), column_pairs)
            }
            (keys, decoders) => {
                let source_keys: Vec<(&str, KeyDecoder, KeyDecoder)> = keys
                    .iter()
                    .zip(decoders)
                    .map(|(key, (source, replica))| (key.source.name.as_str(), *source, *replica))
                    .collect();
                let replica_keys: Vec<&str> = keys.iter().map(|key| key.replica.name.as_str()).collect();
                segment::plan_composite_hashing(&source_keys, &replica_keys, column_pairs)
            }
        };
        Ok(Plan {
            names: matched.columns.iter().map(|column| column.source.name.clone()).collect(),
            replica_names: matched.columns.iter().map(|column| column.replica.name.clone()).collect(),
            source_key_names: matched.keys.iter().map(|key| key.source.name.clone()).collect(),
            replica_key_names: matched.keys.iter().map(|key| key.replica.name.clone()).collect(),
            key_decoders,
            decoders,
            marker,
            excluded: matched.excluded,
            hashes,
        })
    }

    fn source_keys(&self) -> Vec<(String, KeyDecoder)> {
        self.source_key_names.iter().cloned().zip(self.key_decoders.iter().map(|pair| pair.0)).collect()
    }

    fn replica_keys(&self) -> Vec<(String, KeyDecoder)> {
        self.replica_key_names.iter().cloned().zip(self.key_decoders.iter().map(|pair| pair.1)).collect()
    }

    fn source_decoders(&self) -> Vec<(String, Decoder)> {
        self.names.iter().cloned().zip(self.decoders.iter().map(|pair| pair.0)).collect()
    }

    fn replica_decoders(&self) -> Vec<(String, Decoder)> {
        self.replica_names.iter().cloned().zip(self.decoders.iter().map(|pair| pair.1)).collect()
    }
}

/// The inventory counts.
struct Inventory {
    source_rows: i64,
    replica_rows: i64,
    tombstones: i64,
    invalid_metadata: i64,
}

/// The metadata rows that refuse the audit: a NULL or negative LSN, an invalid deleted flag.
fn invalid_predicate(metadata: &CdcMetadata, marker: &DeletedMarker) -> String {
    let lsn = quoted_ident(&metadata.lsn_column);
    let flag = marker.invalid_sql().unwrap_or_else(|| "false".to_owned());
    format!("{lsn} IS NULL OR {lsn} < 0 OR {flag}")
}

fn inventory(
    source: &mut Session,
    replica: &mut Session,
    options: &AuditOptions,
    marker: Option<&DeletedMarker>,
) -> Result<Inventory, Error> {
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
        // The plan always has a marker when a metadata table is given.
        let replica = match marker {
            None => count(replica, options.replica_table()).map(|rows| (rows, 0, 0)),
            Some(marker) => {
                let (table, invalid, action) = match &options.metadata {
                    Some(metadata) => (
                        &metadata.table,
                        invalid_predicate(metadata, marker),
                        format!("counting the CDC metadata of {}", metadata.table),
                    ),
                    None => (
                        options.replica_table(),
                        "false".to_owned(),
                        format!("counting the live rows and tombstones of {}", options.replica_table()),
                    ),
                };
                let sql = format!(
                    "SELECT count(*) FILTER (WHERE {})::bigint, count(*) FILTER (WHERE {})::bigint, \
                     count(*) FILTER (WHERE {invalid})::bigint FROM {}",
                    marker.live_sql(),
                    marker.deleted_sql(),
                    table.quoted()
                );
                replica
                    .client()
                    .query_one(sql.as_str(), &[])
                    .map(|row| (row.get(0), row.get(1), row.get(2)))
                    .map_err(AccessError::query("replica", action))
                    .map_err(Error::from)
            }
        };
        let source_rows =
            source_count.join().unwrap_or(Err(AccessError::ReaderLost { role: "source".to_owned() }.into()))?;
        let (replica_rows, tombstones, invalid_metadata) = replica?;
        Ok(Inventory { source_rows, replica_rows, tombstones, invalid_metadata })
    })
}

/// The audit's error for a scan that stopped.
fn scan_error(error: CompareError<AccessError, Refusal>, options: &AuditOptions) -> Error {
    match error {
        CompareError::Side(error) => Error::Access(error),
        CompareError::Merge(error) => Error::from(merge_error(error, options)),
        CompareError::Stopped(refusal) => Error::Refused(refusal),
        // The audit watches its own deadline (see the `watch` module) and is never interrupted.
        CompareError::NoAnswer(_) | CompareError::Interrupted => Error::Thread("stopped unexpectedly"),
    }
}

fn merge_error(error: MergeError<Box<AccessError>>, options: &AuditOptions) -> AccessError {
    let table = |role: &str| {
        if role == "source" { options.table.to_string() } else { options.replica_table().to_string() }
    };
    let role = |side: datadiff_diff_core::Side| match side {
        datadiff_diff_core::Side::Source => "source",
        datadiff_diff_core::Side::Target => "replica",
    };
    match error {
        MergeError::Read { source, .. } => *source,
        MergeError::DuplicateKey { side, key } => {
            AccessError::DuplicateKey { role: role(side).to_owned(), table: table(role(side)), key }
        }
        MergeError::OutOfOrder { side, previous, key } => {
            AccessError::OutOfOrder { role: role(side).to_owned(), table: table(role(side)), previous, key }
        }
        other => AccessError::Merge { message: other.to_string() },
    }
}
