//! `datadiff audit`: the parity audit before a cutover (SPEC §9).

use std::path::PathBuf;

use anyhow::Context;
use clap::{Args, ValueEnum};
use datadiff_access::TableName;
use datadiff_audit::{self as audit, AuditOptions, AuditProgress, CdcMetadata, Refusal, Status};

use crate::console::Console;
use crate::exit::Exit;
use crate::logging::Invocation;
use crate::output_file::OutputFile;
use crate::progress::ScanProgress;

/// Verify that a replica table equals its source before a cutover. Exits 0 on PASS, 1 on
/// BLOCK, 2 on a refusal or an error.
///
/// Read-only, in repeatable-read snapshots; stream both tables by key with flat memory. The
/// report holds counts, keys and column names, never a row value. Passwords may come from the
/// DSN, PGPASSWORD or a password file (PGPASSFILE or ~/.pgpass) and are never printed.
#[derive(Debug, Args)]
pub(crate) struct AuditArgs {
    /// Source connection string: a libpq URI (postgresql://user@host/db) or key=value pairs;
    /// sslmode disable, prefer, require, verify-ca or verify-full, sslrootcert.
    #[arg(long, value_name = "DSN", hide_env_values = true)]
    source: String,
    /// Replica connection string (a different database than the source).
    #[arg(long, value_name = "DSN", hide_env_values = true)]
    replica: String,
    /// The source table, schema.table (names are matched exactly; quote a part with a dot).
    #[arg(long, value_name = "S.T")]
    table: TableName,
    /// The replica table, when its name differs from the source table's.
    #[arg(long, value_name = "S.T")]
    replica_table: Option<TableName>,
    /// The key: one column, or several comma-separated (a composite key), each integer, uuid,
    /// text, date or timestamp, the whole key unique on both sides.
    #[arg(long, value_name = "COLUMN", default_value = "id")]
    key: String,
    /// Columns to compare, comma-separated [default: every source column except the key;
    /// each must have a replica column under its exact name, its lower-cased name or a
    /// --column-map, or the audit refuses, naming it].
    #[arg(long, value_name = "A,B")]
    columns: Option<String>,
    /// Source columns to leave out of the default comparison (comma-separated); the report
    /// lists them.
    #[arg(long, value_name = "A,B", conflicts_with = "columns")]
    exclude_columns: Option<String>,
    #[command(flatten)]
    replica_columns: Box<ReplicaColumnArgs>,
    /// Confirm that source writes are paused and CDC is drained (the audit cannot prove it);
    /// to audit a replica that is still written, use --live instead.
    #[arg(long)]
    cutover_ready: bool,
    #[command(flatten)]
    live: Box<LiveArgs>,
    /// Refuse when either table has more rows than this (1 to 50000000).
    #[arg(long, value_name = "N", default_value_t = 5_000_000, allow_negative_numbers = true)]
    max_rows: i64,
    /// Differences kept as examples in the report (1 to 100).
    #[arg(long, value_name = "N", default_value_t = 20, allow_negative_numbers = true)]
    max_examples: i64,
    /// Let two empty tables pass (by default they block: a wrong target, most likely).
    #[arg(long)]
    allow_empty: bool,
    /// Each session's statement timeout (`15min`, `1h`, ...; at most `24d20h31min23s`): the
    /// longest any step may take, the whole scan included. The audit also gives up on a
    /// server that has not answered a step within it plus 5 s.
    #[arg(long, value_name = "DURATION", default_value = "15min", value_parser = statement_timeout)]
    statement_timeout: std::time::Duration,
    /// Compare an empty string and NULL as one value in text-like columns (target-postgres
    /// loads every '' as NULL); off by default: the comparison is exact.
    #[arg(long)]
    empty_string_as_null: bool,
    /// How the scan reads the rows: `stream` every row through the comparison, or hash
    /// `segments` of keys in both databases and stream only the segments that differ (far
    /// fewer bytes over a slow link); `auto` streams small tables, servers on this machine
    /// (Unix sockets, loopback addresses) and fast links (a probe of 400 MB/s or more), and
    /// hashes otherwise. The answer is the same.
    #[arg(long, value_name = "STRATEGY", default_value = "auto", value_parser = strategy)]
    strategy: datadiff_diff_core::segment::Strategy,
    /// Divide the table into N consecutive key ranges and compare them on N pairs of sessions
    /// at once (1 to 64), every pair in the audit's own two snapshots; the report is the same
    /// as with 1. Integer, uuid and text keys (a composite key by its first column) are
    /// divided; a char(n) key, or a uuid compared with text, is scanned as one unit.
    #[arg(long, value_name = "N", default_value_t = 1)]
    jobs: usize,
    /// Write the JSON report to FILE instead of stdout: a regular file or a new path (a
    /// symbolic link is followed; a device, FIFO, socket or directory is refused). A report an
    /// earlier run left there is removed when the audit starts, so an audit that ends without
    /// a report (exit 2, a signal) leaves none.
    #[arg(long, value_name = "FILE")]
    report: Option<PathBuf>,
    /// Also write the verdict as Prometheus metrics (the text format of `report metrics`:
    /// `datadiff_audit_*` families labelled by both tables) to FILE, atomically, for a
    /// node_exporter textfile directory. The path is checked as --report's is, before the
    /// audit starts; an audit that ends without a report leaves an earlier file as it was.
    #[arg(long, value_name = "FILE")]
    metrics: Option<PathBuf>,
    /// Output format of the report on stdout.
    #[arg(long, value_enum, default_value_t = OutputFormat::Json)]
    output_format: OutputFormat,
    #[command(flatten)]
    verbosity: crate::logging::Verbosity,
}

/// How replica columns are found and deleted rows told apart (boxed: it keeps the command
/// enum small).
#[derive(Debug, Args)]
struct ReplicaColumnArgs {
    /// The replica column of a source column, when it has neither the same name nor its
    /// lower-cased name (repeatable; split at the first "=").
    #[arg(long, value_name = "SOURCE=REPLICA")]
    column_map: Vec<String>,
    /// The replica's CDC metadata table (replica rows are counted from its non-deleted rows).
    #[arg(long, value_name = "S.T")]
    replica_metadata_table: Option<TableName>,
    /// The metadata table's LSN column (NULL or negative is invalid).
    #[arg(long, value_name = "COLUMN")]
    lsn_column: Option<String>,
    /// With the metadata table: its deleted flag, boolean or text 'true'/'false' (NULL is
    /// invalid). Alone: a column of the replica table marking deleted rows, which leave the
    /// comparison as tombstones: a boolean when true, text when not NULL and not 'false'
    /// (Debezium's __deleted), any other type when not NULL (_sdc_deleted_at).
    #[arg(long, value_name = "COLUMN")]
    deleted_column: Option<String>,
}

/// The live audit's flags (boxed: it keeps the command enum small).
#[derive(Debug, Args)]
struct LiveArgs {
    /// Audit a replica that is still written: the keys that differ are read again on both
    /// sides until they agree (counted as in_flight) or --settle passes; those that persist are
    /// reported. Replaces --cutover-ready.
    #[arg(long)]
    live: bool,
    /// With --live: how long differing keys are rechecked (and, with --position, how long the
    /// audit waits for the replica to reach the source's position), e.g. `60s`, `5min`.
    #[arg(long, value_name = "DURATION", requires = "live", value_parser = settle)]
    settle: Option<std::time::Duration>,
    /// With --live: where the replica says how far it has applied its source, so that parity is
    /// proven at a source WAL position: `subscription:NAME` (a native logical replication
    /// subscription on the replica) or `column:NAME` (a column holding each row's source LSN,
    /// such as _cdc_lsn).
    #[arg(long, value_name = "subscription:NAME|column:NAME", requires = "live", value_parser = position)]
    position: Option<audit::Position>,
}

/// Report formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum OutputFormat {
    /// Pretty JSON, keys sorted.
    Json,
}

impl AuditArgs {
    /// `-v` given after the command name.
    pub(crate) fn verbosity(&self) -> u8 {
        self.verbosity.count()
    }

    fn options(&self) -> Result<AuditOptions, Refusal> {
        let replica = &self.replica_columns;
        let (metadata, deleted_column) =
            match (&replica.replica_metadata_table, &replica.lsn_column, &replica.deleted_column) {
                (None, None, deleted) => (None, deleted.clone()),
                (Some(table), Some(lsn), Some(deleted)) => (
                    Some(CdcMetadata {
                        table: table.clone(),
                        lsn_column: lsn.clone(),
                        deleted_column: deleted.clone(),
                    }),
                    None,
                ),
                _ => return Err(Refusal::IncompleteMetadataFlags),
            };
        let column_map = replica
            .column_map
            .iter()
            .map(|entry| match entry.split_once('=') {
                Some((source, replica)) => Ok((source.to_owned(), replica.to_owned())),
                None => Err(Refusal::InvalidColumnMap { entry: entry.clone() }),
            })
            .collect::<Result<Vec<_>, _>>()?;
        let columns = match &self.columns {
            None => None,
            Some(text) => {
                Some(datadiff_access::parse_column_list(text).ok_or(Refusal::InvalidColumnList { flag: "--columns" })?)
            }
        };
        let exclude_columns = match &self.exclude_columns {
            None => Vec::new(),
            Some(text) => datadiff_access::parse_column_list(text)
                .ok_or(Refusal::InvalidColumnList { flag: "--exclude-columns" })?,
        };
        let mut options = AuditOptions::new(self.source.clone(), self.replica.clone(), self.table.clone());
        options.exclude_columns = exclude_columns;
        options.replica_table = self.replica_table.clone();
        options.key = self.key.clone();
        options.columns = columns;
        options.metadata = metadata;
        options.deleted_column = deleted_column;
        options.column_map = column_map;
        options.cutover_ready = self.cutover_ready;
        options.live = self.live.live.then(|| audit::Live {
            settle: self.live.settle.unwrap_or(audit::DEFAULT_SETTLE),
            position: self.live.position.clone(),
        });
        options.max_rows = self.max_rows;
        options.max_examples = self.max_examples;
        options.allow_empty = self.allow_empty;
        options.statement_timeout = self.statement_timeout;
        options.empty_string_as_null = self.empty_string_as_null;
        options.strategy = self.strategy;
        options.jobs = self.jobs;
        Ok(options)
    }
}

/// `--strategy`: `auto`, `stream` or `segments`.
pub(crate) fn strategy(text: &str) -> Result<datadiff_diff_core::segment::Strategy, String> {
    text.parse().map_err(|error: datadiff_diff_core::segment::UnknownStrategy| error.to_string())
}

/// `--settle`, in the definitions' duration grammar (positive).
fn settle(text: &str) -> Result<std::time::Duration, String> {
    let duration = datadiff_diff_core::definition::Duration::parse(text).map_err(|error| error.to_string())?;
    Ok(std::time::Duration::from_secs(u64::try_from(duration.seconds()).unwrap_or(1).max(1)))
}

/// `--position`: `subscription:NAME` or `column:NAME`.
fn position(text: &str) -> Result<audit::Position, String> {
    text.parse().map_err(|error: audit::PositionSyntaxError| error.to_string())
}

/// `--statement-timeout`, in the definitions' duration grammar.
fn statement_timeout(text: &str) -> Result<std::time::Duration, String> {
    let duration =
        datadiff_diff_core::definition::Duration::parse_statement_timeout(text).map_err(|error| error.to_string())?;
    Ok(std::time::Duration::from_secs(u64::try_from(duration.seconds()).unwrap_or(1).max(1)))
}

/// Runs the audit and prints or writes its report.
///
/// With `--report`, the path holds this audit's report or nothing from the moment the audit
/// starts: the path is checked first (a regular file, a new path, or a symbolic link to
/// either; a device, FIFO, socket or directory is refused, exit 2, untouched), then a report an
/// earlier run left there is removed — so whatever ends this audit without a report (a
/// refusal, an error, SIGTERM, SIGINT, SIGHUP, even SIGKILL or a power cut) no earlier PASS
/// can be read as its verdict — and the new report is written to a new file in the same
/// directory and renamed over the path (a reader never sees half a report).
///
/// With `--metrics`, that path is checked first (a bad one costs no earlier report) and the
/// verdict's metrics are written the same atomic way after the report; an audit that ends
/// without a report leaves an earlier metrics file as it was.
pub(crate) fn run(args: &AuditArgs, console: &mut Console) -> anyhow::Result<Exit> {
    // Checked first: a bad --metrics path must not cost an earlier --report.
    let metrics_file = match &args.metrics {
        Some(path) => {
            if args.report.as_deref() == Some(path.as_path()) {
                anyhow::bail!("--metrics {}: the same path as --report; give each its own file", path.display());
            }
            Some(OutputFile::check("--metrics", "the metrics", path)?)
        }
        None => None,
    };
    let report_file = match &args.report {
        Some(path) => {
            let file = OutputFile::check("--report", "the report", path)?;
            if file.remove_earlier()? {
                tracing::info!(path = %path.display(), "removed the earlier report: this audit writes its own or none");
            }
            Some(file)
        }
        None => None,
    };
    // The start line comes with the inventory: refusals and connection errors before it stay
    // one line.
    let mut invocation = None;
    let result = args.options().map_err(datadiff_audit::Error::Refused).and_then(|options| {
        let progress = ScanProgress::new(console.stderr_is_terminal());
        let result = audit::audit(&options, console.environment(), &mut |event| {
            if let (None, AuditProgress::Inventory { source_rows, replica_rows }) = (&invocation, event) {
                invocation =
                    Some(Invocation::start("audit", &format!("source_rows={source_rows} replica_rows={replica_rows}")));
            }
            progress.update(event);
        });
        progress.finish();
        result
    });
    let report = result?;
    let json = report.to_json();
    let stderr = console.stderr();
    match &report_file {
        Some(file) => {
            file.write(json.as_bytes())?;
            let line = format!("{} (report: {})", report.summary_line(), file.path().display());
            writeln!(console.stdout(), "{line}").context("writing to stdout")?;
        }
        None => {
            console.stdout().write_all(json.as_bytes()).context("writing the report to stdout")?;
            stderr.line(&report.summary_line());
        }
    }
    if let Some(file) = &metrics_file {
        let replica_table = args.replica_table.as_ref().unwrap_or(&args.table);
        file.write(audit::audit_metrics(&report, &args.table, replica_table).as_bytes())?;
    }
    let exit = match report.status {
        Status::Pass => Exit::Success,
        Status::Block => Exit::Failure,
    };
    if let Some(invocation) = invocation {
        invocation.finish_audit(report.status == Status::Pass, exit);
    }
    Ok(exit)
}
