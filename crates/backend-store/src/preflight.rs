//! Preflight records (`dd_preflight_log`), one per attempt, linked under the attempt's row
//! lock (config note §3.6; runs note §3.1 T2).
//!
//! The store does not depend on `datadiff-preflight` (the store depends on the pure crates
//! only): the runner fills a [`NewPreflight`] from its `PreflightRecord` (the status, of the
//! pure layer's vocabulary,
//! fingerprint text, `index_metadata_json()`, `findings_json()`, and the three counts).

use chrono::{DateTime, Utc};
use datadiff_diff_core::attempt::{CheckId, PreflightId, PreflightStatus, RunId, RunStatus};
use uuid::Uuid;

use crate::error::Error;
use crate::rows::{get, parse};
use crate::store::Store;

/// A `dd_preflight_log` row to write (its id, check and `checked_at` are the store's).
#[derive(Debug, Clone, PartialEq)]
pub struct NewPreflight {
    /// The verdict.
    pub status: PreflightStatus,
    /// SHA-256 hex of the fingerprinted query (64 lowercase hex characters).
    pub query_fingerprint: String,
    /// The `index_metadata` JSON (an array of index objects).
    pub index_metadata: serde_json::Value,
    /// The `findings` JSON (an array of strings).
    pub findings: serde_json::Value,
    /// Why it is ERROR.
    pub error: Option<String>,
    /// The bounded row count, when one was made.
    pub table_rows: Option<i64>,
    /// The bound of the count, when one was made.
    pub row_limit: Option<i64>,
    /// Whether a usable index leads with the timestamp column, when looked up.
    pub has_leading_index: Option<bool>,
}

fn valid_fingerprint(text: &str) -> bool {
    text.len() == 64 && text.bytes().all(|byte| matches!(byte, b'0'..=b'9' | b'a'..=b'f'))
}

impl Store {
    /// Records the preflight of RUNNING attempt `run_id` of `check_id` (T2), with
    /// `checked_at = now`, and returns its id: under a `FOR UPDATE` lock on the attempt,
    /// an attempt that is no longer RUNNING is [`Error::LeaseLost`] and another check's
    /// attempt [`Error::PreflightCheckMismatch`] (nothing written); an attempt that already
    /// links a preflight returns that id without writing (one preflight per attempt);
    /// otherwise the row is inserted and linked.
    pub fn record_preflight(
        &self,
        run_id: RunId,
        check_id: CheckId,
        preflight: &NewPreflight,
        now: DateTime<Utc>,
    ) -> Result<PreflightId, Error> {
        if !valid_fingerprint(&preflight.query_fingerprint) {
            return Err(Error::InvalidFingerprint(preflight.query_fingerprint.clone()));
        }
        let mut client = self.connection()?;
        let mut tx = client.transaction().map_err(Error::query("recording a preflight"))?;
        let row = tx
            .query_opt(
                "SELECT check_id, status, preflight_id FROM public.dd_run_attempts WHERE run_id = $1 FOR UPDATE",
                &[&run_id.get()],
            )
            .map_err(Error::query("locking the attempt of a preflight"))?
            .ok_or(Error::UnknownRun(run_id))?;
        let status: RunStatus = parse("dd_run_attempts.status", get(&row, "status")?)?;
        if status != RunStatus::Running {
            return Err(Error::LeaseLost { run_id, status });
        }
        let expected = CheckId::new(get(&row, "check_id")?);
        if expected != check_id {
            return Err(Error::PreflightCheckMismatch { run_id, expected, given: check_id });
        }
        if let Some(linked) = get::<Option<Uuid>>(&row, "preflight_id")? {
            return Ok(PreflightId::new(linked));
        }
        let preflight_id = Uuid::new_v4();
        tx.execute(
            "INSERT INTO public.dd_preflight_log (preflight_id, check_id, status, checked_at, query_fingerprint, \
             index_metadata, findings, error, table_rows, row_limit, has_leading_index) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
            &[
                &preflight_id,
                &check_id.get(),
                &preflight.status.as_str(),
                &now,
                &preflight.query_fingerprint,
                &preflight.index_metadata,
                &preflight.findings,
                &preflight.error,
                &preflight.table_rows,
                &preflight.row_limit,
                &preflight.has_leading_index,
            ],
        )
        .map_err(Error::query("inserting a preflight"))?;
        tx.execute(
            "UPDATE public.dd_run_attempts SET preflight_id = $2 WHERE run_id = $1",
            &[&run_id.get(), &preflight_id],
        )
        .map_err(Error::query("linking a preflight"))?;
        tx.commit().map_err(Error::query("committing a preflight"))?;
        Ok(PreflightId::new(preflight_id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fingerprints_are_64_lowercase_hex_characters() {
        assert!(valid_fingerprint(&"a".repeat(64)));
        assert!(!valid_fingerprint(&"A".repeat(64)));
        assert!(!valid_fingerprint(&"a".repeat(63)));
        assert!(!valid_fingerprint(&"g".repeat(64)));
    }
}
