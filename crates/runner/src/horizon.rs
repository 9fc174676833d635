//! Reading the replica's horizon (`checks.<name>.horizon`): how far the replica has applied,
//! as a time, before a tick attempts a due slot. The rule that uses it is diff-core's
//! [`Horizon`]; this module only reads, on read-only sessions opened as an attempt opens them.
//!
//! # `subscription:NAME` (PostgreSQL native logical replication)
//!
//! 1. `t` = the tick's `now` (never later than the real clock), taken **before** anything is
//!    read;
//! 2. on the source: its WAL position `L` — `pg_current_wal_insert_lsn()`, or
//!    `pg_last_wal_replay_lsn()` when the source session reads a physical standby. Every
//!    transaction committed on the source before `t` ends at or before `L`;
//! 3. on the replica, the subscription `NAME` (in the replica's database) must replicate the
//!    check's replica table, in state ready (`pg_subscription_rel.srsubstate = 'r'`); its
//!    **applied position** `A` is the apply worker's `pg_stat_subscription.latest_end_lsn`,
//!    the position of the last keepalive it processed — set only after every change sent
//!    before it was applied (`received_lsn` is not used: PostgreSQL updates it *before* it
//!    applies the message);
//! 4. if `A ≥ L`, every change committed before `t` is applied: the horizon is `t`. The
//!    replica is asked again every 100 ms until [`SETTLE`] has passed (a busy source's
//!    position moves on, its replica catches up a few milliseconds later);
//! 5. otherwise — the subscription disabled (no apply worker), its worker gone, the table not
//!    ready, or `A` still behind `L` after [`SETTLE`] — the horizon is **unknown** and every
//!    due slot is SKIPPED with the position in its reason.
//!
//! `pg_stat_replication.replay_lag` is not used for the horizon: it is the lag *last measured*
//! and stays on display while an apply worker is stuck (until the WAL sender times out), so
//! `now − replay_lag` can claim changes the replica has not applied.
//!
//! # `column:NAME`
//!
//! The horizon is `max(NAME)` over the replica table (read-only, `NULL` on an empty table:
//! unknown). `NAME` is a replica column of type `timestamp with time zone`, `timestamp
//! without time zone` (read as UTC, as PipelineWise's loaders write `_sdc_batched_at`) or an
//! integer type holding epoch milliseconds (Debezium's `__source_ts_ms`). It proves what the
//! column proves: that the replica applies changes in source order and stamps each with a
//! source-side time; index it, the maximum is read at every tick with a due slot.
//!
//! A reading that cannot be made — an unknown subscription or column, a table the
//! subscription does not replicate, a column of another type, a refused statement (a missing
//! privilege) — is a [`HorizonError`]: the tick reports the check ERROR without a run and
//! attempts nothing.

use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use datadiff_access::{SideConfig, SideError, SideSession};
use datadiff_diff_core::attempt::{Horizon, HorizonSource};
use datadiff_diff_core::definition::CheckDefinition;

use crate::clock::Clock;
use crate::connections::Route;

/// How long a subscription reading waits for the replica to apply the source's position.
pub const SETTLE: Duration = Duration::from_secs(10);
/// How often it asks.
const POLL: Duration = Duration::from_millis(100);
/// The statement timeout of the reading's sessions.
const STATEMENT_TIMEOUT: Duration = Duration::from_secs(30);

/// Why a horizon could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HorizonError {
    /// A side refused or failed a statement (a missing privilege among them), or could not be
    /// reached.
    #[error("reading the horizon {horizon}")]
    Side {
        /// The setting.
        horizon: String,
        /// The side's failure.
        #[source]
        source: SideError,
    },
    /// The replica's database has no subscription of that name.
    #[error("horizon subscription:{name}: the replica's database has no subscription named '{name}'")]
    UnknownSubscription {
        /// The subscription's name.
        name: String,
    },
    /// The subscription does not replicate the check's replica table.
    #[error("horizon subscription:{name}: the subscription does not replicate {table}")]
    NotSubscribed {
        /// The subscription's name.
        name: String,
        /// `schema.table` on the replica.
        table: String,
    },
    /// The replica table has no such column.
    #[error("horizon column:{column}: the replica table {table} has no column '{column}'")]
    UnknownColumn {
        /// The column.
        column: String,
        /// `schema.table` on the replica.
        table: String,
    },
    /// The column's type says no time.
    #[error(
        "horizon column:{column} of {table} is {type_name}: it must be timestamp with time zone, timestamp without time zone (read as UTC) or an integer of epoch milliseconds"
    )]
    ColumnType {
        /// The column.
        column: String,
        /// `schema.table` on the replica.
        table: String,
        /// Its type as PostgreSQL formats it.
        type_name: String,
    },
    /// The check's source is not PostgreSQL (a subscription needs one).
    #[error("horizon subscription:{name} needs a PostgreSQL source")]
    NotPostgres {
        /// The subscription's name.
        name: String,
    },
}

/// Reads `source`'s horizon for `definition` over `route`'s sessions, at the tick's `now`.
pub fn read(
    route: &Route,
    definition: &CheckDefinition,
    source: &HorizonSource,
    now: DateTime<Utc>,
) -> Result<Horizon, HorizonError> {
    let table = (definition.target_schema.clone(), definition.target_table.clone());
    match source {
        HorizonSource::Subscription(name) => {
            if route.mysql_source.is_some() {
                return Err(HorizonError::NotPostgres { name: name.clone() });
            }
            subscription(&route.source, &route.target, name, table, now.min(Clock::System.now()))
        }
        HorizonSource::Column(column) => self::column(&route.target, column, table),
    }
}

fn open(config: &SideConfig, horizon: &str) -> Result<SideSession, HorizonError> {
    SideSession::open(config, STATEMENT_TIMEOUT).map_err(side(horizon))
}

fn side(horizon: &str) -> impl Fn(SideError) -> HorizonError {
    let horizon = horizon.to_owned();
    move |source| HorizonError::Side { horizon: horizon.clone(), source }
}

/// What the replica says of the subscription at one moment.
struct Applied {
    enabled: bool,
    worker: bool,
    /// `latest_end_lsn`, as text.
    position: Option<String>,
    /// `position >= L`.
    caught_up: bool,
    /// The table's `srsubstate`, `None` when the subscription does not replicate it.
    table_state: Option<String>,
}

fn subscription(
    source: &SideConfig,
    replica: &SideConfig,
    name: &str,
    (schema, table): (String, String),
    at: DateTime<Utc>,
) -> Result<Horizon, HorizonError> {
    let setting = format!("subscription:{name}");
    let mut source_session = open(source, &setting)?;
    let source_position = source_session
        .with_client("WAL position read", |client| {
            client
                .query_one(
                    "SELECT (CASE WHEN pg_catalog.pg_is_in_recovery() THEN pg_catalog.pg_last_wal_replay_lsn() \
                                  ELSE pg_catalog.pg_current_wal_insert_lsn() END)::text",
                    &[],
                )
                .and_then(|row| row.try_get::<_, Option<String>>(0))
        })
        .map_err(side(&setting))?
        .map_err(|error| side(&setting)(source_session.failure("WAL position read", &error)))?
        .unwrap_or_else(|| "0/0".to_owned());
    let mut replica_session = open(replica, &setting)?;
    let started = Instant::now();
    loop {
        let applied = applied(&mut replica_session, &setting, name, &schema, &table, &source_position)?;
        let Some(applied) = applied else {
            return Err(HorizonError::UnknownSubscription { name: name.to_owned() });
        };
        let Some(state) = applied.table_state.as_deref() else {
            return Err(HorizonError::NotSubscribed { name: name.to_owned(), table: format!("{schema}.{table}") });
        };
        let at_position = applied.position.as_deref().map_or(String::new(), |lsn| format!(" at {lsn}"));
        let unknown = |why: String| Horizon { applied_up_to: None, position: why };
        if state != "r" {
            return Ok(unknown(format!(
                "subscription {name}: {schema}.{table} is not ready (table state '{state}'), its initial copy is not done"
            )));
        }
        if !applied.enabled {
            return Ok(unknown(format!("subscription {name}{at_position} is disabled: nothing is being applied")));
        }
        if !applied.worker {
            return Ok(unknown(format!("subscription {name}{at_position} has no apply worker running")));
        }
        if applied.caught_up {
            let lsn = applied.position.unwrap_or_default();
            return Ok(Horizon {
                applied_up_to: Some(at),
                position: format!("subscription {name} at {lsn}, the source was at {source_position}"),
            });
        }
        if started.elapsed() >= SETTLE {
            return Ok(unknown(format!(
                "subscription {name}{at_position} has not applied the source's position {source_position} within {} s",
                SETTLE.as_secs()
            )));
        }
        std::thread::sleep(POLL);
    }
}

/// The subscription's state on the replica (`None`: no such subscription in its database).
fn applied(
    session: &mut SideSession,
    setting: &str,
    name: &str,
    schema: &str,
    table: &str,
    source_position: &str,
) -> Result<Option<Applied>, HorizonError> {
    let params = (name.to_owned(), schema.to_owned(), table.to_owned(), source_position.to_owned());
    let read = session
        .with_client("subscription read", move |client| {
            let (name, schema, table, position) = &params;
            let row = client.query_opt(
                "SELECT s.subenabled, worker.pid IS NOT NULL, worker.applied::text, \
                        coalesce(worker.applied >= $4::text::pg_lsn, false), rel.srsubstate::text \
                   FROM pg_catalog.pg_subscription s \
                   LEFT JOIN LATERAL ( \
                        SELECT max(st.pid) AS pid, max(st.latest_end_lsn) AS applied \
                          FROM pg_catalog.pg_stat_subscription st \
                         WHERE st.subid = s.oid AND st.relid IS NULL AND st.pid IS NOT NULL) worker ON true \
                   LEFT JOIN pg_catalog.pg_subscription_rel rel ON rel.srsubid = s.oid AND rel.srrelid = ( \
                        SELECT c.oid FROM pg_catalog.pg_class c \
                          JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace \
                         WHERE n.nspname = $2 AND c.relname = $3) \
                  WHERE s.subname = $1 \
                    AND s.subdbid = (SELECT oid FROM pg_catalog.pg_database WHERE datname = pg_catalog.current_database())",
                &[name, schema, table, position],
            )?;
            row.map(|row| {
                Ok::<_, postgres::Error>(Applied {
                    enabled: row.try_get(0)?,
                    worker: row.try_get(1)?,
                    position: row.try_get(2)?,
                    caught_up: row.try_get(3)?,
                    table_state: row.try_get(4)?,
                })
            })
            .transpose()
        })
        .map_err(side(setting))?;
    read.map_err(|error| side(setting)(session.failure("subscription read", &error)))
}

fn column(replica: &SideConfig, column: &str, (schema, table): (String, String)) -> Result<Horizon, HorizonError> {
    let setting = format!("column:{column}");
    let qualified = format!("{schema}.{table}");
    let mut session = open(replica, &setting)?;
    let params = (schema.clone(), table.clone(), column.to_owned());
    let type_name = session
        .with_client("horizon column type read", move |client| {
            let (schema, table, column) = &params;
            client
                .query_opt(
                    "SELECT pg_catalog.format_type(a.atttypid, NULL) FROM pg_catalog.pg_attribute a \
                       JOIN pg_catalog.pg_class c ON c.oid = a.attrelid \
                       JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace \
                      WHERE n.nspname = $1 AND c.relname = $2 AND a.attname = $3 AND a.attnum > 0 AND NOT a.attisdropped",
                    &[schema, table, column],
                )
                .and_then(|row| row.map(|row| row.try_get::<_, String>(0)).transpose())
        })
        .map_err(side(&setting))?
        .map_err(|error| side(&setting)(session.failure("horizon column type read", &error)))?;
    let Some(type_name) = type_name else {
        return Err(HorizonError::UnknownColumn { column: column.to_owned(), table: qualified });
    };
    // Names the catalog just returned: never empty, never with NUL.
    let quote = |name: &str| {
        datadiff_diff_core::plan::quote_ident(name)
            .map_err(|_| HorizonError::UnknownColumn { column: column.to_owned(), table: qualified.clone() })
    };
    let quoted = quote(column)?;
    let from = format!("{}.{}", quote(&schema)?, quote(&table)?);
    let select = match type_name.as_str() {
        "timestamp with time zone" => format!("SELECT max({quoted}) FROM {from}"),
        "timestamp without time zone" => format!("SELECT max({quoted}) AT TIME ZONE 'UTC' FROM {from}"),
        "bigint" | "integer" | "smallint" => {
            format!("SELECT pg_catalog.to_timestamp(max({quoted})::numeric / 1000) FROM {from}")
        }
        _ => {
            return Err(HorizonError::ColumnType { column: column.to_owned(), table: qualified, type_name });
        }
    };
    let newest = session
        .with_client("horizon column read", move |client| {
            client.query_one(&select, &[]).and_then(|row| row.try_get::<_, Option<DateTime<Utc>>>(0))
        })
        .map_err(side(&setting))?
        .map_err(|error| side(&setting)(session.failure("horizon column read", &error)))?;
    let position = match newest {
        Some(newest) => {
            format!("column {column} of {qualified}: newest {}", datadiff_diff_core::attempt::python_isoformat(newest))
        }
        None => format!("column {column} of {qualified} holds no value"),
    };
    Ok(Horizon { applied_up_to: newest, position })
}
