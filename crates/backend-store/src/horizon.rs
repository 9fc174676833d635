//! The replica horizons scheduled checks observed (`checks.<name>.horizon`), kept in
//! `public.datadiff_replica_horizons` (extension 2) so that `report metrics` can show the
//! replica's applied lag between ticks. One row per check name, overwritten by each reading;
//! a reading that does not know the position keeps the newest known horizon, so the applied
//! lag of a paused replica keeps growing instead of disappearing.

use chrono::{DateTime, Utc};
use postgres::GenericClient;

use crate::error::Error;
use crate::rows::get;
use crate::store::Store;

/// A check's latest horizon reading, as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplicaHorizon {
    /// The setting read: `subscription:NAME` or `column:NAME`.
    pub horizon: String,
    /// When it was read (the tick's `now`).
    pub observed_at: DateTime<Utc>,
    /// The newest known horizon: every source change before it was applied on the replica.
    /// `None` before a reading knew one.
    pub applied_up_to: Option<DateTime<Utc>>,
    /// Whether the latest reading knew the position (false: a paused or disabled
    /// subscription, a replica still behind, an empty column).
    pub known: bool,
    /// What the replica reported, in words.
    pub position: String,
}

impl Store {
    /// Records `full_check_name`'s horizon reading (`applied_up_to` as read: `None` when the
    /// reading did not know the position, which keeps the newest known one of the same
    /// setting). Does nothing, successfully, on a backend without extension 2 (`datadiff
    /// migrate` creates the table): the horizon then only gates the tick.
    pub fn record_replica_horizon(
        &self,
        full_check_name: &str,
        horizon: &str,
        observed_at: DateTime<Utc>,
        applied_up_to: Option<DateTime<Utc>>,
        position: &str,
    ) -> Result<(), Error> {
        let mut connection = self.connection()?;
        if !has_table(&mut *connection)? {
            return Ok(());
        }
        connection
            .execute(
                "INSERT INTO public.datadiff_replica_horizons AS h \
                        (full_check_name, horizon, observed_at, applied_up_to, known, position) \
                 VALUES ($1, $2, $3, $4::timestamptz, $4::timestamptz IS NOT NULL, $5) \
                 ON CONFLICT (full_check_name) DO UPDATE SET \
                        horizon = EXCLUDED.horizon, observed_at = EXCLUDED.observed_at, \
                        applied_up_to = CASE WHEN EXCLUDED.known THEN EXCLUDED.applied_up_to \
                                             WHEN h.horizon = EXCLUDED.horizon THEN h.applied_up_to END, \
                        known = EXCLUDED.known, position = EXCLUDED.position",
                &[&full_check_name, &horizon, &observed_at, &applied_up_to, &position],
            )
            .map_err(Error::query("recording the replica horizon"))?;
        Ok(())
    }
}

fn has_table(client: &mut impl GenericClient) -> Result<bool, Error> {
    client
        .query_one("SELECT to_regclass('public.datadiff_replica_horizons') IS NOT NULL", &[])
        .map_err(Error::query("looking for datadiff_replica_horizons"))?
        .try_get(0)
        .map_err(Error::query("looking for datadiff_replica_horizons"))
}

/// Every stored reading, by check name (none without extension 2).
pub(crate) fn replica_horizons(
    client: &mut impl GenericClient,
) -> Result<std::collections::HashMap<String, ReplicaHorizon>, Error> {
    if !has_table(client)? {
        return Ok(std::collections::HashMap::new());
    }
    let rows = client
        .query(
            "SELECT full_check_name, horizon, observed_at, applied_up_to, known, position \
               FROM public.datadiff_replica_horizons",
            &[],
        )
        .map_err(Error::query("reading datadiff_replica_horizons"))?;
    rows.iter()
        .map(|row| {
            Ok((
                get(row, "full_check_name")?,
                ReplicaHorizon {
                    horizon: get(row, "horizon")?,
                    observed_at: get(row, "observed_at")?,
                    applied_up_to: get(row, "applied_up_to")?,
                    known: get(row, "known")?,
                    position: get(row, "position")?,
                },
            ))
        })
        .collect()
}
