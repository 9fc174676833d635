//! The live audit (`--live`): an audit of a replica that is still being written, whose
//! differences are rechecked until they agree or a settle period passes.
//!
//! # What it does
//!
//! The first pass is the ordinary audit (segments or stream, in the two repeatable-read
//! snapshots). A replica behind its source shows, in that pass, the keys its replication has
//! not applied yet next to the keys it really lost. So every key that differed (missing,
//! extra or changed; up to [`MAX_TRACKED_KEYS`], not only the report's examples) is read again
//! on both sides — read-only sessions, the keys bound as parameters, the same decoders and
//! comparison rules as the first pass, composite keys included — in rounds, with a short
//! backoff between them ([`FIRST_BACKOFF`] doubling up to [`MAX_BACKOFF`]), until every key
//! agrees or `--settle` ([`DEFAULT_SETTLE`] by default) has passed since the first pass ended.
//! At least one round always runs, even when the settle period is already over.
//!
//! * A key that agrees in a round (the same values on both sides, or gone from both) has
//!   **converged**: it is counted in `live.in_flight` and leaves the report's differences.
//! * A key that still differs in the last round **persists**: it is reported as without
//!   `--live` (counted as missing, extra or changed as the last round saw it, named in the
//!   examples), and the verdict is BLOCK, exit 1.
//!
//! The report's counts are the first pass's with the rechecked keys' last state:
//! `matched` gains the converged keys present on both sides, `missing`, `extra` and
//! `changed` are the persisting keys'. A first pass with more than [`MAX_TRACKED_KEYS`]
//! differing keys is reported as it is, with no recheck (`live.tracked` is false): that many
//! differences are not lag to wait out; audit again once the replica has caught up.
//!
//! # What is proven
//!
//! Without a position: every key equal in the first pass was equal in the two snapshots;
//! every converged key was read equal on both sides in one round (source read first, the
//! replica after it); every persisting key differed in the first pass and in each of the
//! `live.rounds` rounds over the settle period. Keys equal in the first pass are not read
//! again: a difference that appears after the first pass is for the next audit.
//!
//! With `--position subscription:NAME` (native logical replication): before the replica's
//! snapshot of the first pass and before the replica's read of each round, the audit reads
//! the source's WAL position `X` (`pg_current_wal_lsn()`, inside the source's snapshot of
//! that pass or round, after its rows were read or its snapshot taken) and waits — within the
//! settle period — until the subscription on the replica has applied at least `X`
//! (`pg_stat_subscription.latest_end_lsn` of its apply worker, which the apply worker only
//! moves after applying every transaction the source committed before it). Every source
//! transaction visible in the source's read was then applied on the replica when the replica
//! was read. The report's `live.position` says the last `X`, the replica's applied position
//! then, and whether every wait reached its position; `live.proven_at` is given only when
//! every wait did, and names the first pass's `X` (the earliest): the parity of the table (the
//! first pass) and of every once-differing key (each round) was then proven with the replica
//! having applied every source transaction committed before that position.
//! `pg_stat_subscription` and `pg_subscription_rel` are readable by any role on PostgreSQL 15
//! and later: no grant is needed.
//!
//! With `--position column:NAME`: a column of the replica (of `--replica-metadata-table` when
//! one is given, else of the replica table) holding the numeric source LSN of the change that
//! last wrote each row, as a Debezium-fed replica's `_cdc_lsn`. The replica counts as having
//! reached `X` once the column's maximum is at or past `X` (as a number). This assumes the
//! loader applies changes in source order (one partition, one sink task): it then proves the
//! same as a subscription; with parallel sinks it only says the loader has seen `X`. A table no
//! write touches after `X` never reaches it: the report then says so and gives no
//! `proven_at`; the verdict is still decided by the differences alone.
//!
//! # Limits
//!
//! * A difference that the replication itself overwrites before the settle period ends (a
//!   value changed on the replica, then replaced by the source's next update of the row) is
//!   indistinguishable from a change in flight: it converged, the replica now holds the
//!   source's values, and it is counted in `in_flight`. A row deleted on the replica is not
//!   restored by a later update of the source (native logical replication skips an update of
//!   a missing row), so it persists and is reported.
//! * A key the source rewrites faster than the replica applies (a hot row) may never read
//!   equal within the settle period: it is reported as persisting (a false BLOCK, never a
//!   false PASS). Raise `--settle` or audit at a quieter time.
//! * Differences are looked for in the first pass only; a row that diverges after it is
//!   found by the next audit.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use datadiff_access::stream::{BatchWriter, Decoder, EncodedRow, KeyDecoder};
use datadiff_access::{Error as AccessError, Session, TableName};
use datadiff_diff_core::merge::{Example, Key, Summary, merge};
use datadiff_diff_core::plan::quoted_ident;
use postgres::types::{FromSql, ToSql, Type};
use serde::Serialize;

use crate::error::Error;
use crate::watch::{Role, Watch};

/// The settle period when `--settle` is not given.
pub const DEFAULT_SETTLE: Duration = Duration::from_secs(60);

/// The most differing keys a live audit rechecks; a first pass with more is reported as it is.
pub const MAX_TRACKED_KEYS: usize = 100_000;

/// The wait after the first round that left keys differing; doubled after each such round.
pub const FIRST_BACKOFF: Duration = Duration::from_millis(200);

/// The longest wait between two rounds.
pub const MAX_BACKOFF: Duration = Duration::from_secs(2);

/// Keys read per statement in a round.
const KEYS_PER_STATEMENT: usize = 1_000;

/// How the replica says how far it has applied its source (`--position`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Position {
    /// A native logical replication subscription on the replica, by name.
    Subscription(String),
    /// A column holding the source LSN of each row's last change (`_cdc_lsn`).
    Column(String),
}

impl Position {
    /// `subscription` or `column`.
    pub fn kind(&self) -> &'static str {
        match self {
            Position::Subscription(_) => "subscription",
            Position::Column(_) => "column",
        }
    }

    /// The subscription's or the column's name.
    pub fn name(&self) -> &str {
        match self {
            Position::Subscription(name) | Position::Column(name) => name,
        }
    }

    /// The argument as given: `subscription:NAME` or `column:NAME`.
    pub fn argument(&self) -> String {
        format!("{}:{}", self.kind(), self.name())
    }
}

/// A `--position` that is neither `subscription:NAME` nor `column:NAME`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("--position {given:?}: expected subscription:NAME or column:NAME")]
pub struct PositionSyntaxError {
    /// The text given.
    pub given: String,
}

impl std::str::FromStr for Position {
    type Err = PositionSyntaxError;

    fn from_str(text: &str) -> Result<Position, PositionSyntaxError> {
        let error = || PositionSyntaxError { given: text.to_owned() };
        let (kind, name) = text.split_once(':').ok_or_else(error)?;
        if name.is_empty() {
            return Err(error());
        }
        match kind {
            "subscription" => Ok(Position::Subscription(name.to_owned())),
            "column" => Ok(Position::Column(name.to_owned())),
            _ => Err(error()),
        }
    }
}

/// A live audit's settings (`--live`, `--settle`, `--position`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Live {
    /// How long differing keys are rechecked after the first pass (and, with a position, how
    /// long the audit waits for the replica to reach it).
    pub settle: Duration,
    /// Where the replica says how far it has applied, if it says.
    pub position: Option<Position>,
}

impl Default for Live {
    fn default() -> Live {
        Live { settle: DEFAULT_SETTLE, position: None }
    }
}

/// Why a `--position` cannot be used on this replica (exit 2).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PositionError {
    /// No subscription of that name in the replica's database.
    #[error("--position {argument}: the replica database has no subscription named {name}")]
    UnknownSubscription {
        /// The argument.
        argument: String,
        /// The subscription.
        name: String,
    },
    /// The subscription does not replicate the replica table, or its initial copy is not done.
    #[error(
        "--position {argument}: the subscription does not replicate {table} (or its initial copy is not done: \
         state {state})"
    )]
    TableNotSubscribed {
        /// The argument.
        argument: String,
        /// The replica table.
        table: String,
        /// `pg_subscription_rel.srsubstate`, or `none`.
        state: String,
    },
    /// The position column does not exist.
    #[error("--position {argument}: {table} on the replica database has no column {column}")]
    ColumnMissing {
        /// The argument.
        argument: String,
        /// The table looked in.
        table: String,
        /// The column.
        column: String,
    },
    /// The position column is not an integer or numeric column.
    #[error(
        "--position {argument}: column {column} of {table} is {type_name}; a position column holds the numeric \
         source LSN (bigint or numeric)"
    )]
    ColumnType {
        /// The argument.
        argument: String,
        /// The table.
        table: String,
        /// The column.
        column: String,
        /// Its type.
        type_name: String,
    },
    /// Reading the position failed (no privilege, a source that cannot report its WAL
    /// position such as a standby).
    #[error("--position {argument}: cannot read {what} on the {role} database: {message}")]
    Unreadable {
        /// The argument.
        argument: String,
        /// `source` or `replica`.
        role: String,
        /// What was read.
        what: String,
        /// The server's message.
        message: String,
    },
}

/// The live part of a report (`live` in the JSON).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LiveReport {
    /// Keys that differed in the first pass and agreed in a later round.
    pub in_flight: u64,
    /// Keys that still differed in the last round (the report's differences).
    pub persisting: u64,
    /// Where the replica said how far it had applied, when `--position` was given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub position: Option<PositionReport>,
    /// The source position at which parity was proven: only when `--position` was given and
    /// every wait reached its position.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub proven_at: Option<ProvenAt>,
    /// Recheck rounds run after the first pass.
    pub rounds: u32,
    /// The settle period, in seconds.
    pub settle_seconds: u64,
    /// False when the first pass found more than [`MAX_TRACKED_KEYS`] differing keys and
    /// nothing was rechecked.
    pub tracked: bool,
}

/// The position the last wait looked for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PositionReport {
    /// `subscription` or `column`.
    pub kind: &'static str,
    /// The subscription or column.
    pub name: String,
    /// Whether every wait reached its source position.
    pub reached: bool,
    /// The replica's applied position at the last wait (`latest_end_lsn`, or the column's
    /// maximum), when it had one.
    pub replica_applied: Option<String>,
    /// The source's WAL position of the last wait (`pg_lsn` text).
    pub source_lsn: String,
}

/// Where parity was proven: the first pass's wait. Every comparison the verdict rests on (the
/// first pass, each round) was made with the replica at or past its own source position, and
/// each of those is at or past this one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProvenAt {
    /// The replica's applied position when the first pass read it (subscription LSN, or the
    /// column's maximum).
    pub replica_applied: String,
    /// The source's WAL position of the first pass (`pg_lsn` text).
    pub source_lsn: String,
}

/// The source's WAL position: as `pg_lsn` text and as a number.
#[derive(Debug, Clone)]
pub(crate) struct SourceLsn {
    text: String,
    number: String,
}

/// What a wait for the replica found.
#[derive(Debug, Clone)]
pub(crate) struct Reached {
    source: SourceLsn,
    applied: Option<String>,
    reached: bool,
}

/// A checked `--position` on the replica.
#[derive(Debug, Clone)]
pub(crate) struct Anchor {
    position: Position,
    /// For a column: the quoted table holding it.
    column_table: Option<TableName>,
    /// Every wait so far, the last one last.
    pub(crate) waits: Vec<Reached>,
}

impl Anchor {
    /// Checks `position` on the replica: the subscription exists and replicates `table` (ready),
    /// or the column exists with a numeric type on `column_table`.
    pub(crate) fn check(
        replica: &mut Session,
        position: &Position,
        table: &TableName,
        column_table: &TableName,
    ) -> Result<Anchor, Error> {
        let argument = position.argument();
        let unreadable = |what: &str, error: postgres::Error| PositionError::Unreadable {
            argument: argument.clone(),
            role: "replica".to_owned(),
            what: what.to_owned(),
            message: datadiff_access::one_line(&error),
        };
        match position {
            Position::Subscription(name) => {
                let row = replica
                    .client()
                    .query_opt(
                        "SELECT (SELECT r.srsubstate::text FROM pg_catalog.pg_subscription_rel r \
                          WHERE r.srsubid = s.oid AND r.srrelid = to_regclass($2)) \
                           FROM pg_catalog.pg_subscription s \
                          WHERE s.subname = $1 \
                            AND s.subdbid = (SELECT oid FROM pg_catalog.pg_database WHERE datname = current_database())",
                        &[name, &table.quoted()],
                    )
                    .map_err(|error| unreadable("the subscription", error))?;
                let Some(row) = row else {
                    return Err(PositionError::UnknownSubscription { argument, name: name.clone() }.into());
                };
                let state: Option<String> = row.get(0);
                if !matches!(state.as_deref(), Some("r" | "s")) {
                    return Err(PositionError::TableNotSubscribed {
                        argument,
                        table: table.to_string(),
                        state: state.unwrap_or_else(|| "none".to_owned()),
                    }
                    .into());
                }
                Ok(Anchor { position: position.clone(), column_table: None, waits: Vec::new() })
            }
            Position::Column(column) => {
                let columns = datadiff_access::stream::read_columns(replica, column_table)?;
                let Some(found) = columns.iter().find(|found| &found.name == column) else {
                    return Err(PositionError::ColumnMissing {
                        argument,
                        table: column_table.to_string(),
                        column: column.clone(),
                    }
                    .into());
                };
                let numeric = matches!(found.type_name.as_str(), "bigint" | "integer" | "smallint" | "numeric" | "oid")
                    || found.type_name.starts_with("numeric(");
                if !numeric {
                    return Err(PositionError::ColumnType {
                        argument,
                        table: column_table.to_string(),
                        column: column.clone(),
                        type_name: found.type_name.clone(),
                    }
                    .into());
                }
                Ok(Anchor { position: position.clone(), column_table: Some(column_table.clone()), waits: Vec::new() })
            }
        }
    }

    /// The source's WAL position, read on `source` (inside its snapshot when it has one).
    pub(crate) fn source_lsn(&self, source: &mut Session) -> Result<SourceLsn, Error> {
        let row = source
            .client()
            .query_one(
                "SELECT l::text, (l - '0/0'::pg_lsn)::text FROM (SELECT pg_catalog.pg_current_wal_lsn() AS l) AS p",
                &[],
            )
            .map_err(|error| PositionError::Unreadable {
                argument: self.position.argument(),
                role: "source".to_owned(),
                what: "the WAL position (pg_current_wal_lsn())".to_owned(),
                message: datadiff_access::one_line(&error),
            })?;
        Ok(SourceLsn { text: row.get(0), number: row.get(1) })
    }

    /// The replica's applied position and whether it is at or past `target`.
    fn applied(&self, replica: &mut Session, target: &SourceLsn) -> Result<(Option<String>, bool), Error> {
        let argument = self.position.argument();
        let unreadable = |what: &str, error: postgres::Error| PositionError::Unreadable {
            argument: argument.clone(),
            role: "replica".to_owned(),
            what: what.to_owned(),
            message: datadiff_access::one_line(&error),
        };
        match (&self.position, &self.column_table) {
            (Position::Subscription(name), _) => {
                let row = replica
                    .client()
                    .query_opt(
                        "SELECT st.latest_end_lsn::text, coalesce(st.latest_end_lsn >= $2::text::pg_lsn, false) \
                           FROM pg_catalog.pg_subscription s \
                           LEFT JOIN pg_catalog.pg_stat_subscription st ON st.subid = s.oid AND st.relid IS NULL \
                          WHERE s.subname = $1 \
                            AND s.subdbid = (SELECT oid FROM pg_catalog.pg_database WHERE datname = current_database()) \
                          ORDER BY st.latest_end_lsn DESC NULLS LAST LIMIT 1",
                        &[name, &target.text],
                    )
                    .map_err(|error| unreadable("the subscription's progress (pg_stat_subscription)", error))?;
                Ok(row.map_or((None, false), |row| (row.get(0), row.get(1))))
            }
            (Position::Column(column), Some(table)) => {
                let sql = format!(
                    "SELECT m::text, coalesce(m >= $1::text::numeric, false) FROM (SELECT max({})::numeric AS m FROM {}) AS p",
                    quoted_ident(column),
                    table.quoted()
                );
                let row = replica
                    .client()
                    .query_one(sql.as_str(), &[&target.number])
                    .map_err(|error| unreadable(&format!("the maximum of {column} in {table}"), error))?;
                Ok((row.get(0), row.get(1)))
            }
            (Position::Column(_), None) => Ok((None, false)),
        }
    }

    /// Waits until the replica has applied `target` or `deadline` passes; polls with backoff.
    /// Records the wait. Runs outside any transaction of `replica`.
    pub(crate) fn wait(
        &mut self,
        replica: &mut Session,
        watch: &Watch,
        target: SourceLsn,
        deadline: Instant,
    ) -> Result<bool, Error> {
        let mut pause = Duration::from_millis(20);
        loop {
            let (applied, reached) = {
                let _busy = watch.busy("reading the replica's position", &[Role::Replica]);
                self.applied(replica, &target)?
            };
            let now = Instant::now();
            if reached || now >= deadline {
                tracing::info!(
                    source_lsn = %target.text,
                    replica_applied = applied.as_deref().unwrap_or("none"),
                    reached,
                    "replica position"
                );
                self.waits.push(Reached { source: target, applied, reached });
                return Ok(reached);
            }
            std::thread::sleep(pause.min(deadline - now));
            pause = (pause * 2).min(Duration::from_millis(500));
        }
    }

    /// The report's `position` and `proven_at`.
    fn report(&self) -> (Option<PositionReport>, Option<ProvenAt>) {
        let Some(last) = self.waits.last() else { return (None, None) };
        let reached = self.waits.iter().all(|wait| wait.reached);
        let position = PositionReport {
            kind: self.position.kind(),
            name: self.position.name().to_owned(),
            reached,
            replica_applied: last.applied.clone(),
            source_lsn: last.source.text.clone(),
        };
        // The first wait's position is the earliest: every later one is at or past it.
        let first = &self.waits[0];
        let proven = match (reached, &first.applied) {
            (true, Some(applied)) => {
                Some(ProvenAt { replica_applied: applied.clone(), source_lsn: first.source.text.clone() })
            }
            _ => None,
        };
        (Some(position), proven)
    }
}

/// How one side reads keys again: its table, key columns with their decoders, compared
/// columns with theirs, and the rows it compares (the replica's live rows).
pub(crate) struct KeyReader {
    pub(crate) table: TableName,
    pub(crate) keys: Vec<(String, KeyDecoder)>,
    pub(crate) columns: Vec<(String, Decoder)>,
    pub(crate) live: Option<String>,
}

/// A field as the server sent it (binary), or NULL.
struct Raw<'a>(Option<&'a [u8]>);

impl<'a> FromSql<'a> for Raw<'a> {
    fn from_sql(_: &Type, raw: &'a [u8]) -> Result<Self, Box<dyn std::error::Error + Sync + Send>> {
        Ok(Raw(Some(raw)))
    }

    fn from_sql_null(_: &Type) -> Result<Self, Box<dyn std::error::Error + Sync + Send>> {
        Ok(Raw(None))
    }

    fn accepts(_: &Type) -> bool {
        true
    }
}

/// One key column's bound values: integers as `int8[]`, the others as `text[]`.
enum Bound {
    Ints(Vec<i64>),
    Texts(Vec<String>),
}

impl KeyReader {
    /// `SELECT keys, columns FROM table WHERE (keys) IN (SELECT … FROM unnest($1, …)) [AND live]`:
    /// one array parameter per key column, each element cast to the column's comparison
    /// type (a uuid from its text, a `char(n)` as `bpchar`).
    fn sql(&self) -> String {
        let names: Vec<String> = self
            .keys
            .iter()
            .map(|(name, _)| name)
            .chain(self.columns.iter().map(|(name, _)| name))
            .map(|name| quoted_ident(name))
            .collect();
        let key_list: Vec<String> = self.keys.iter().map(|(name, _)| quoted_ident(name)).collect();
        let mut arrays = Vec::new();
        let mut picks = Vec::new();
        for (index, (_, decoder)) in self.keys.iter().enumerate() {
            let parameter = index + 1;
            // Integers bound as such; every other key as its printed form, read back into the
            // column's type (a uuid, a padded char, a date or a timestamp).
            let (array, pick) = match (decoder, decoder.text_cast()) {
                (KeyDecoder::Int, _) => (format!("${parameter}::int8[]"), format!("u.k{index}")),
                (_, Some(cast)) => (format!("${parameter}::text[]"), format!("u.k{index}::{cast}")),
                (_, None) => (format!("${parameter}::text[]"), format!("u.k{index}")),
            };
            arrays.push(array);
            picks.push(pick);
        }
        let aliases: Vec<String> = (0..self.keys.len()).map(|index| format!("k{index}")).collect();
        let mut sql = format!(
            "SELECT {} FROM {} WHERE ({}) IN (SELECT {} FROM unnest({}) AS u({}))",
            names.join(", "),
            self.table.quoted(),
            key_list.join(", "),
            picks.join(", "),
            arrays.join(", "),
            aliases.join(", ")
        );
        if let Some(live) = &self.live {
            sql.push_str(&format!(" AND ({live})"));
        }
        sql
    }

    /// The rows of `keys` (sorted, at most one per key) on `session`, in key order: the
    /// rows whose decoded key is one of `keys` (a uuid read from text may come back in its
    /// canonical form, another key).
    fn read(&self, session: &mut Session, keys: &[Key]) -> Result<Vec<EncodedRow>, Error> {
        let role = session.role().to_owned();
        let bound: Vec<Bound> = (0..self.keys.len())
            .map(|index| {
                let parts = keys.iter().map(|key| &key.parts()[index]);
                match self.keys[index].1 {
                    KeyDecoder::Int => Bound::Ints(
                        parts.map(|part| if let Key::Int(value) = part { *value } else { i64::MIN }).collect(),
                    ),
                    _ => Bound::Texts(parts.map(ToString::to_string).collect()),
                }
            })
            .collect();
        let parameters: Vec<&(dyn ToSql + Sync)> = bound
            .iter()
            .map(|bound| match bound {
                Bound::Ints(values) => values as &(dyn ToSql + Sync),
                Bound::Texts(values) => values as &(dyn ToSql + Sync),
            })
            .collect();
        let sql = self.sql();
        let rows = session
            .client()
            .query(sql.as_str(), &parameters)
            .map_err(AccessError::query(&role, format!("rereading differing keys of {}", self.table)))?;
        let wanted: BTreeSet<&Key> = keys.iter().collect();
        let decode_error =
            |column: &str, problem| AccessError::Decode { role: role.clone(), column: column.to_owned(), problem };
        let mut writer = BatchWriter::default();
        let key_fields = self.keys.len();
        for row in &rows {
            let mut parts = Vec::with_capacity(key_fields);
            for (index, (name, decoder)) in self.keys.iter().enumerate() {
                let Raw(field) = row.get::<_, Raw<'_>>(index);
                let field = field.ok_or_else(|| AccessError::NullKey { role: role.clone(), column: name.clone() })?;
                parts.push(decoder.decode(field).map_err(|problem| decode_error(name, problem))?);
            }
            let key = Key::from_parts(parts);
            if !wanted.contains(&key) {
                continue;
            }
            writer.begin_row();
            for (offset, (name, decoder)) in self.columns.iter().enumerate() {
                match row.get::<_, Raw<'_>>(key_fields + offset).0 {
                    None => writer.null(),
                    Some(bytes) => writer.field(*decoder, bytes).map_err(|problem| decode_error(name, problem))?,
                }
            }
            writer.end_row(key);
        }
        let mut batch = Vec::with_capacity(writer.rows());
        writer.seal(&mut batch);
        batch.sort_by(|a, b| a.key().cmp(b.key()));
        Ok(batch)
    }
}

/// The recheck of a live audit: the first pass's differing keys, read again in rounds.
pub(crate) struct Recheck<'a> {
    pub(crate) live: &'a Live,
    pub(crate) watch: &'a Watch,
    pub(crate) source: KeyReader,
    pub(crate) replica: KeyReader,
    pub(crate) field_names: Vec<String>,
    pub(crate) max_examples: usize,
    pub(crate) anchor: Option<Anchor>,
}

impl Recheck<'_> {
    /// Rechecks `first`'s differing keys (all kept as its examples) until they agree or the
    /// settle period, counted from `settle_from`, passes; returns the report's summary and the
    /// live part of the report. The sessions must be outside any transaction.
    pub(crate) fn run(
        mut self,
        source: &mut Session,
        replica: &mut Session,
        first: Summary<Key>,
        settle_from: Instant,
    ) -> Result<(Summary<Key>, LiveReport), Error> {
        let deadline = settle_from + self.live.settle;
        let settle_seconds = self.live.settle.as_secs();
        if first.examples_truncated() {
            // More than MAX_TRACKED_KEYS: reported as found, examples cut to --max-examples.
            let mut summary = first;
            summary.examples.truncate(self.max_examples);
            let summary = with_examples(summary, self.max_examples, &self.field_names);
            let (position, _) = self.anchor.as_ref().map_or((None, None), Anchor::report);
            let persisting = summary.difference_count();
            let live = LiveReport {
                in_flight: 0,
                persisting,
                position,
                // Nothing was rechecked: no key was proven at a position.
                proven_at: None,
                rounds: 0,
                settle_seconds,
                tracked: false,
            };
            return Ok((summary, live));
        }
        let mut pending: Vec<Key> = first.examples.iter().map(|example| example.key.clone()).collect();
        let mut last: Vec<Example<Key>> = first.examples.clone();
        let mut counts = (0u64, 0u64, 0u64); // missing, extra, changed of the last round
        counts.0 = first.missing;
        counts.1 = first.extra;
        counts.2 = first.changed;
        let mut matched = first.matched;
        let mut in_flight = 0u64;
        let mut rounds = 0u32;
        let mut backoff = FIRST_BACKOFF;
        while !pending.is_empty() {
            rounds += 1;
            let round = self.round(source, replica, &pending, deadline)?;
            let converged = pending.len() as u64 - round.difference_count();
            in_flight += converged;
            matched += round.matched;
            counts = (round.missing, round.extra, round.changed);
            tracing::info!(round = rounds, converged, differing = round.difference_count(), "rechecked differing keys");
            pending = round.examples.iter().map(|example| example.key.clone()).collect();
            last = round.examples;
            let now = Instant::now();
            if pending.is_empty() || now >= deadline {
                break;
            }
            std::thread::sleep(backoff.min(deadline - now));
            backoff = (backoff * 2).min(MAX_BACKOFF);
        }
        let mut summary = Summary::new(self.max_examples, self.field_names.clone());
        summary.matched = matched;
        (summary.missing, summary.extra, summary.changed) = counts;
        summary.examples = last.into_iter().take(self.max_examples).collect();
        let (position, proven_at) = self.anchor.as_ref().map_or((None, None), Anchor::report);
        let live = LiveReport {
            in_flight,
            persisting: summary.difference_count(),
            position,
            proven_at,
            rounds,
            settle_seconds,
            tracked: true,
        };
        Ok((summary, live))
    }

    /// One round: the source's rows of `keys` in a snapshot (with its WAL position when
    /// anchored), the wait for the replica, the replica's rows in a snapshot, merged. The
    /// summary's examples are the keys that still differ (all of them).
    fn round(
        &mut self,
        source: &mut Session,
        replica: &mut Session,
        keys: &[Key],
        deadline: Instant,
    ) -> Result<Summary<Key>, Error> {
        let source_rows = {
            let _busy = self.watch.busy("rereading differing keys", &[Role::Source]);
            source.begin_snapshot()?;
            let mut rows = Vec::new();
            for chunk in keys.chunks(KEYS_PER_STATEMENT) {
                rows.extend(self.source.read(source, chunk)?);
            }
            let lsn = match &self.anchor {
                Some(anchor) => Some(anchor.source_lsn(source)?),
                None => None,
            };
            source.finish()?;
            (rows, lsn)
        };
        let (source_rows, lsn) = source_rows;
        if let (Some(anchor), Some(lsn)) = (self.anchor.as_mut(), lsn) {
            anchor.wait(replica, self.watch, lsn, deadline)?;
        }
        let replica_rows = {
            let _busy = self.watch.busy("rereading differing keys", &[Role::Replica]);
            replica.begin_snapshot()?;
            let mut rows = Vec::new();
            for chunk in keys.chunks(KEYS_PER_STATEMENT) {
                rows.extend(self.replica.read(replica, chunk)?);
            }
            replica.finish()?;
            rows
        };
        let mut summary = Summary::new(MAX_TRACKED_KEYS, self.field_names.clone());
        let ok = |rows: Vec<EncodedRow>| rows.into_iter().map(Ok::<_, std::convert::Infallible>);
        for change in merge(ok(source_rows), ok(replica_rows)) {
            // Rows come sorted and filtered to the keys asked for; a key twice on a side (a
            // table without a unique key) is the merge's error, as in the first pass.
            let change = change.map_err(|error| AccessError::Merge { message: error.to_string() })?;
            summary.record(&change);
        }
        Ok(summary)
    }
}

/// `summary` with at most `max_examples` examples kept.
fn with_examples(summary: Summary<Key>, max_examples: usize, names: &[String]) -> Summary<Key> {
    let mut kept = Summary::new(max_examples, names.to_vec());
    kept.matched = summary.matched;
    kept.missing = summary.missing;
    kept.extra = summary.extra;
    kept.changed = summary.changed;
    kept.examples = summary.examples.into_iter().take(max_examples).collect();
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_parse_and_name_the_argument() {
        assert_eq!("subscription:orders_sub".parse(), Ok(Position::Subscription("orders_sub".to_owned())));
        assert_eq!("column:_cdc_lsn".parse(), Ok(Position::Column("_cdc_lsn".to_owned())));
        for bad in ["", "subscription", "subscription:", "lsn:x", "Column:x"] {
            let error = bad.parse::<Position>().unwrap_err();
            assert_eq!(error.to_string(), format!("--position {bad:?}: expected subscription:NAME or column:NAME"));
        }
    }

    #[test]
    fn the_key_query_binds_one_array_per_key_column() {
        let reader = KeyReader {
            table: "public.lines".parse().unwrap(),
            keys: vec![("order".to_owned(), KeyDecoder::Int), ("code".to_owned(), KeyDecoder::PaddedChar)],
            columns: vec![],
            live: Some("NOT \"gone\"".to_owned()),
        };
        assert_eq!(
            reader.sql(),
            "SELECT \"order\", \"code\" FROM \"public\".\"lines\" WHERE (\"order\", \"code\") IN (SELECT u.k0, \
             u.k1::bpchar FROM unnest($1::int8[], $2::text[]) AS u(k0, k1)) AND (NOT \"gone\")"
        );
    }
}
