//! Why the audit refused: preconditions, limits and safety checks that stop it (exit 2, no
//! report), as opposed to a verdict (PASS or BLOCK).

use std::fmt;

/// The seed's message for an unconfirmed cutover or invalid limits; kept as the opening of
/// every precondition refusal so operators recognise it.
pub const PRECONDITIONS: &str = "Pause source writes, drain CDC, confirm cutover_ready, and provide valid scan limits";

/// The seed's message for an inventory that is too large or has invalid CDC metadata.
pub const PREFLIGHT: &str = "Audit preflight failed. Check inventory counts and invalid CDC metadata.";

/// The largest `--max-rows` accepted.
pub const MAX_ROWS_LIMIT: i64 = 50_000_000;

/// The largest `--max-examples` accepted.
pub const MAX_EXAMPLES_LIMIT: i64 = 100;

/// A refusal. `Display` names what to fix (the flag, the table, the limit).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Refusal {
    /// Neither `--cutover-ready` nor `--live` was given.
    NotCutoverReady,
    /// `--max-rows` outside 1..=50,000,000.
    MaxRowsOutOfRange {
        /// The value given.
        max_rows: i64,
    },
    /// `--max-examples` outside 1..=100.
    MaxExamplesOutOfRange {
        /// The value given.
        max_examples: i64,
    },
    /// `--replica-metadata-table` or `--lsn-column` without the other two CDC metadata flags
    /// (`--deleted-column` alone is the replica-table form).
    IncompleteMetadataFlags,
    /// Both a metadata table's deleted flag and a replica-table deleted column were given.
    DeletedColumnTwice,
    /// The metadata table's deleted flag is neither boolean nor text.
    DeletedFlagType {
        /// The metadata table.
        table: String,
        /// The column.
        column: String,
        /// Its type as `format_type` prints it.
        type_name: String,
    },
    /// A `--column-map` entry is not `SOURCE=REPLICA`, or maps a source column twice.
    InvalidColumnMap {
        /// The entry as given (column names only).
        entry: String,
    },
    /// `--key` names a column twice.
    KeyColumnTwice {
        /// The repeated column.
        column: String,
    },
    /// `--key` or `--columns` is not a valid column list.
    InvalidColumnList {
        /// The flag.
        flag: &'static str,
    },
    /// `--columns` includes the key column.
    KeyInColumns {
        /// The key column.
        key: String,
    },
    /// `--exclude-columns` names the key column.
    KeyExcluded {
        /// The key column.
        key: String,
    },
    /// Both `--columns` and `--exclude-columns` were given.
    ColumnsAndExclusions,
    /// Both DSNs reach the same database.
    SameDatabase {
        /// The database name.
        database: String,
        /// The cluster's system identifier.
        system_identifier: String,
    },
    /// The inventory exceeds `--max-rows` or found invalid CDC metadata.
    Inventory {
        /// Source rows.
        source_rows: i64,
        /// Replica rows (non-deleted metadata rows when a metadata table is given).
        replica_rows: i64,
        /// Metadata rows with a NULL or negative LSN or a NULL deleted flag.
        invalid_metadata: i64,
        /// The limit.
        max_rows: i64,
    },
    /// The metadata recheck inside the scan's snapshot found invalid rows.
    InvalidMetadataInSnapshot {
        /// The metadata table.
        table: String,
    },
    /// A side produced more than `--max-rows` rows during the scan.
    RowLimitDuringScan {
        /// Which side (`source` or `replica`).
        role: String,
        /// The limit.
        max_rows: i64,
    },
    /// `--jobs` is out of range.
    JobsOutOfRange {
        /// The value given.
        jobs: usize,
    },
    /// The parts asked for are too many.
    PartsOutOfRange {
        /// The value given.
        parts: usize,
    },
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::NotCutoverReady => write!(
                f,
                "{PRECONDITIONS}: --cutover-ready was not given (confirm that source writes are paused and CDC is drained, \
                 or audit a replica that is still written with --live)"
            ),
            Refusal::MaxRowsOutOfRange { max_rows } => {
                write!(f, "{PRECONDITIONS}: --max-rows must be between 1 and {MAX_ROWS_LIMIT}, got {max_rows}")
            }
            Refusal::MaxExamplesOutOfRange { max_examples } => write!(
                f,
                "{PRECONDITIONS}: --max-examples must be between 1 and {MAX_EXAMPLES_LIMIT}, got {max_examples}"
            ),
            Refusal::IncompleteMetadataFlags => f.write_str(
                "--replica-metadata-table and --lsn-column go together with --deleted-column: give all three, \
                 --deleted-column alone (a deleted marker on the replica table itself), or none",
            ),
            Refusal::DeletedColumnTwice => {
                f.write_str("a deleted column is given both for the metadata table and for the replica table: give one")
            }
            Refusal::DeletedFlagType { table, column, type_name } => write!(
                f,
                "--deleted-column {column} of {table} has type {type_name}: with --replica-metadata-table the \
                 deleted flag must be boolean or text 'true'/'false'; a column whose non-NULL value marks a delete \
                 (such as _sdc_deleted_at) is given with --deleted-column alone, on the replica table"
            ),
            Refusal::InvalidColumnMap { entry } => write!(
                f,
                "--column-map {entry}: expected SOURCE=REPLICA (two column names, each source column mapped once)"
            ),
            Refusal::KeyColumnTwice { column } => {
                write!(f, "--key names the column {column} twice: each key column is given once")
            }
            Refusal::InvalidColumnList { flag } => {
                write!(f, "{flag} must be column names separated by commas (double-quote a name containing a comma)")
            }
            Refusal::KeyInColumns { key } => {
                write!(f, "--columns must not include the key column {key}: the key is always compared")
            }
            Refusal::KeyExcluded { key } => {
                write!(f, "--exclude-columns must not name the key column {key}: the key is always compared")
            }
            Refusal::ColumnsAndExclusions => write!(
                f,
                "--columns and --exclude-columns cannot be combined: list the compared columns, or the columns left out"
            ),
            Refusal::SameDatabase { database, system_identifier } => write!(
                f,
                "source and replica must be separate databases: both DSNs reach database {database} of the cluster \
                 with system identifier {system_identifier}"
            ),
            Refusal::Inventory { source_rows, replica_rows, invalid_metadata, max_rows } => {
                write!(
                    f,
                    "{PREFLIGHT} source={source_rows} replica={replica_rows} invalid_metadata={invalid_metadata}"
                )?;
                let mut problems = Vec::new();
                if source_rows > max_rows {
                    problems.push(format!("the source has more rows than --max-rows {max_rows}"));
                }
                if replica_rows > max_rows {
                    problems.push(format!("the replica has more rows than --max-rows {max_rows}"));
                }
                if *invalid_metadata > 0 {
                    problems.push(
                        "the metadata table has rows with a NULL or negative LSN or a NULL (or not 'true'/'false') \
                         deleted flag"
                            .to_owned(),
                    );
                }
                if !problems.is_empty() {
                    write!(f, " ({})", problems.join("; "))?;
                }
                Ok(())
            }
            Refusal::InvalidMetadataInSnapshot { table } => write!(
                f,
                "invalid replica CDC metadata: inside the scan's snapshot {table} has rows with a NULL or negative \
                 LSN or an invalid deleted flag (is CDC still writing? drain it first)"
            ),
            Refusal::JobsOutOfRange { jobs } => {
                write!(f, "{PRECONDITIONS}: --jobs must be between 1 and {}, got {jobs}", crate::MAX_JOBS)
            }
            Refusal::PartsOutOfRange { parts } => write!(
                f,
                "{PRECONDITIONS}: the parts must be at most {}, got {parts}",
                datadiff_access::split::MAX_PARTS
            ),
            Refusal::RowLimitDuringScan { role, max_rows } => write!(
                f,
                "row limit reached during comparison: the {role} produced more than --max-rows {max_rows} rows \
                 (rows were added since the inventory? pause writes first)"
            ),
        }
    }
}
