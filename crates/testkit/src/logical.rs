//! Native logical replication between two throwaway clusters: a publication on a source
//! database, a subscription on a replica database, and the waits a test needs — the initial
//! copy done, every change applied, the subscription paused and resumed.
//!
//! The tables must exist on both sides with the same columns (logical replication copies rows,
//! not DDL); the source cluster must run with
//! [`ClusterOptions::logical_replication`](crate::ClusterOptions::logical_replication).
//!
//! ```no_run
//! use datadiff_testkit::{Cluster, ClusterOptions, LogicalReplication};
//!
//! let source = Cluster::start_with(ClusterOptions::new().logical_replication())?;
//! let replica = Cluster::start()?;
//! let (shop, warehouse) = (source.fresh_database()?, replica.fresh_database()?);
//! for database in [&shop, &warehouse] {
//!     database.client()?.batch_execute("CREATE TABLE orders (id int PRIMARY KEY, total numeric)")?;
//! }
//! let replication = LogicalReplication::start(&shop, &warehouse, "orders_sub", &["public.orders"])?;
//! shop.client()?.batch_execute("INSERT INTO orders VALUES (1, 9.99)")?;
//! replication.wait_caught_up()?; // the replica now holds the row
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::time::{Duration, Instant};

use crate::cluster::{Database, quote_ident, quote_literal};
use crate::error::Error;

/// How long a wait may take before it is an error (a slow, shared CI machine included).
const PATIENCE: Duration = Duration::from_secs(120);
/// How often a wait asks.
const POLL: Duration = Duration::from_millis(50);

/// A publication on a source database and its subscription on a replica database; dropping it
/// drops the subscription (and with it the replication slot) and the publication.
#[derive(Debug)]
pub struct LogicalReplication<'s, 'r> {
    source: &'s Database<'s>,
    replica: &'r Database<'r>,
    name: String,
}

impl<'s, 'r> LogicalReplication<'s, 'r> {
    /// Publishes `tables` (`schema.table`, or a table name on the search path) of `source`
    /// as the publication `name`, subscribes `replica` to it under the same name (copying the
    /// rows there now), and returns once the initial copy of every table is done.
    pub fn start(
        source: &'s Database<'s>,
        replica: &'r Database<'r>,
        name: &str,
        tables: &[&str],
    ) -> Result<LogicalReplication<'s, 'r>, Error> {
        let quoted_tables: Vec<String> = tables
            .iter()
            .map(|table| match table.split_once('.') {
                Some((schema, table)) => format!("{}.{}", quote_ident(schema), quote_ident(table)),
                None => quote_ident(table),
            })
            .collect();
        source
            .client()?
            .batch_execute(&format!("CREATE PUBLICATION {} FOR TABLE {}", quote_ident(name), quoted_tables.join(", ")))
            .map_err(Error::pg(format!("publishing {} as {name}", tables.join(", "))))?;
        let cluster = source.cluster();
        let connection = format!(
            "host={} port={} dbname={} user={} password={}",
            cluster.host(),
            cluster.port(),
            source.name(),
            crate::SUPERUSER,
            cluster.superuser_password()
        );
        // CREATE SUBSCRIPTION cannot run inside a transaction block: a statement of its own.
        replica
            .client()?
            .batch_execute(&format!(
                "CREATE SUBSCRIPTION {name} CONNECTION {connection} PUBLICATION {name}",
                name = quote_ident(name),
                connection = quote_literal(&connection),
            ))
            .map_err(Error::pg(format!("subscribing to {name}")))?;
        let replication = LogicalReplication { source, replica, name: name.to_owned() };
        replication.wait_copied()?;
        Ok(replication)
    }

    /// The publication's and the subscription's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Waits until every table's initial copy is done (`pg_subscription_rel` ready or
    /// synchronised for each).
    pub fn wait_copied(&self) -> Result<(), Error> {
        let mut client = self.replica.client()?;
        wait_until(&format!("the initial copy of subscription {}", self.name), || {
            let row = client
                .query_one(
                    "SELECT count(*) FILTER (WHERE r.srsubstate NOT IN ('r', 's')), count(*) \
                       FROM pg_catalog.pg_subscription s \
                       JOIN pg_catalog.pg_subscription_rel r ON r.srsubid = s.oid \
                      WHERE s.subname = $1",
                    &[&self.name],
                )
                .map_err(Error::pg("reading the subscription's table states"))?;
            let (copying, tables): (i64, i64) = (row.get(0), row.get(1));
            Ok(tables > 0 && copying == 0)
        })
    }

    /// Waits until every table of the subscription is ready (`pg_subscription_rel` state
    /// `r`): its initial copy done *and* the apply worker past the copy's end, the state a
    /// replica position is read in (a table still `s`, synchronised, is not yet).
    pub fn wait_ready(&self) -> Result<(), Error> {
        let mut client = self.replica.client()?;
        wait_until(&format!("every table of subscription {} to be ready", self.name), || {
            let row = client
                .query_one(
                    "SELECT count(*) FILTER (WHERE r.srsubstate <> 'r'), count(*) \
                       FROM pg_catalog.pg_subscription s \
                       JOIN pg_catalog.pg_subscription_rel r ON r.srsubid = s.oid \
                      WHERE s.subname = $1",
                    &[&self.name],
                )
                .map_err(Error::pg("reading the subscription's table states"))?;
            let (not_ready, tables): (i64, i64) = (row.get(0), row.get(1));
            Ok(tables > 0 && not_ready == 0)
        })
    }

    /// Waits until the replica has applied every change the source had written when this was
    /// called: the subscription's WAL sender reports a replay position at or past the source's
    /// current WAL position (how PostgreSQL's own tests wait for a logical subscriber).
    pub fn wait_caught_up(&self) -> Result<(), Error> {
        let mut client = self.source.client()?;
        let target: String = client
            .query_one("SELECT pg_catalog.pg_current_wal_lsn()::text", &[])
            .map_err(Error::pg("reading the source's WAL position"))?
            .get(0);
        wait_until(&format!("subscription {} to apply the source's WAL up to {target}", self.name), || {
            let caught_up = client
                .query_opt(
                    "SELECT replay_lsn >= $1::text::pg_lsn FROM pg_catalog.pg_stat_replication \
                      WHERE application_name = $2 AND state = 'streaming'",
                    &[&target, &self.name],
                )
                .map_err(Error::pg("reading the subscription's replay position"))?
                .and_then(|row| row.get::<_, Option<bool>>(0));
            Ok(caught_up == Some(true))
        })
    }

    /// Stops applying changes (`ALTER SUBSCRIPTION … DISABLE`): the source keeps its changes
    /// in the replication slot, and the replica lags until [`LogicalReplication::resume`].
    pub fn pause(&self) -> Result<(), Error> {
        self.alter("DISABLE")?;
        // Disabling returns before the apply worker exits: wait until its WAL sender is gone,
        // so that nothing more is applied.
        let mut client = self.source.client()?;
        wait_until(&format!("subscription {} to stop", self.name), || {
            let senders: i64 = client
                .query_one(
                    "SELECT count(*) FROM pg_catalog.pg_stat_replication WHERE application_name = $1",
                    &[&self.name],
                )
                .map_err(Error::pg("reading the source's WAL senders"))?
                .get(0);
            Ok(senders == 0)
        })
    }

    /// Applies changes again (`ALTER SUBSCRIPTION … ENABLE`), from where it paused.
    pub fn resume(&self) -> Result<(), Error> {
        self.alter("ENABLE")
    }

    fn alter(&self, action: &str) -> Result<(), Error> {
        self.replica
            .client()?
            .batch_execute(&format!("ALTER SUBSCRIPTION {} {action}", quote_ident(&self.name)))
            .map_err(Error::pg(format!("ALTER SUBSCRIPTION {} {action}", self.name)))
    }
}

impl Drop for LogicalReplication<'_, '_> {
    fn drop(&mut self) {
        // Best effort: the clusters are thrown away anyway, but a test that goes on with the
        // same databases should not find a subscription still applying.
        if let Ok(mut client) = self.replica.client() {
            let _ = client.batch_execute(&format!("DROP SUBSCRIPTION IF EXISTS {}", quote_ident(&self.name)));
        }
        if let Ok(mut client) = self.source.client() {
            let _ = client.batch_execute(&format!("DROP PUBLICATION IF EXISTS {}", quote_ident(&self.name)));
        }
    }
}

/// Polls `done` until it says yes, or fails naming `what` after [`PATIENCE`].
fn wait_until(what: &str, mut done: impl FnMut() -> Result<bool, Error>) -> Result<(), Error> {
    let started = Instant::now();
    loop {
        if done()? {
            return Ok(());
        }
        if started.elapsed() > PATIENCE {
            return Err(Error::Timeout { what: what.to_owned(), waited: PATIENCE });
        }
        std::thread::sleep(POLL);
    }
}
