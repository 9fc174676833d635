//! The delivery marker of source-index warnings (`dd_index_warning_state`, runs note §5.2):
//! a warning is delivered at most once per identity, and remembered only after a
//! destination accepted it.

use chrono::{DateTime, Utc};
use datadiff_diff_core::attempt::CheckId;
use uuid::Uuid;

use crate::error::Error;
use crate::lock::AdvisoryLock;
use crate::store::Store;

/// What [`Store::deliver_index_warning`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WarningDelivery {
    /// A marker already existed: the closure was not called.
    AlreadyDelivered,
    /// The closure reported acceptance and the marker was written.
    Delivered,
    /// The closure reported that no destination accepted: nothing was written, so the next
    /// invocation tries again.
    NotAccepted,
}

impl Store {
    /// Delivers a source-index warning at most once: in one transaction, takes
    /// [`AdvisoryLock::IndexWarning`] (so a concurrent deliverer of the same warning — datadiff
    /// or PipelineWise — waits for this one to finish), looks for the marker, and only when
    /// there is none calls `deliver`, which sends to every destination and returns whether at
    /// least one accepted. Only then is `(warning_id, check_id, sent_at = now)` inserted and
    /// committed.
    ///
    /// A panic inside `deliver` (or a lost connection) rolls the transaction back: no marker,
    /// so the warning stays eligible (a crash between delivery and commit can duplicate it, as
    /// upstream's docs say). `warning_id` is the preflight crate's identity, `check_id` the
    /// routing check's revision.
    pub fn deliver_index_warning<F>(
        &self,
        warning_id: Uuid,
        check_id: CheckId,
        now: DateTime<Utc>,
        deliver: F,
    ) -> Result<WarningDelivery, Error>
    where
        F: FnOnce() -> bool,
    {
        let mut client = self.connection()?;
        let mut tx = client.transaction().map_err(Error::query("delivering an index warning"))?;
        AdvisoryLock::IndexWarning(warning_id).acquire(&mut tx)?;
        let marker = tx
            .query_opt("SELECT 1 FROM public.dd_index_warning_state WHERE warning_id = $1", &[&warning_id])
            .map_err(Error::query("reading an index warning marker"))?;
        if marker.is_some() {
            return Ok(WarningDelivery::AlreadyDelivered);
        }
        if !deliver() {
            return Ok(WarningDelivery::NotAccepted);
        }
        tx.execute(
            "INSERT INTO public.dd_index_warning_state (warning_id, check_id, sent_at) VALUES ($1, $2, $3)",
            &[&warning_id, &check_id.get(), &now],
        )
        .map_err(Error::query("writing an index warning marker"))?;
        tx.commit().map_err(Error::query("committing an index warning marker"))?;
        Ok(WarningDelivery::Delivered)
    }
}
