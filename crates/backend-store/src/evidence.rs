//! One attempt's whole record, as `report run --run-id` prints it: the attempt row, its
//! definition's name and revision, its preflight record, and its results — read in one
//! transaction, so the parts always belong together.

use chrono::{DateTime, Utc};
use datadiff_diff_core::attempt::{CheckResult, PreflightId, PreflightStatus, RunId};

use crate::attempt::Attempt;
use crate::error::Error;
use crate::result::results_of;
use crate::rows::{self, ATTEMPT_COLUMNS, get, parse};
use crate::store::Store;

/// A stored `dd_preflight_log` row, without its index metadata.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredPreflight {
    /// Its id.
    pub preflight_id: PreflightId,
    /// PASS, BLOCKED or ERROR.
    pub status: PreflightStatus,
    /// When it was decided.
    pub checked_at: DateTime<Utc>,
    /// SHA-256 hex of the fingerprinted query.
    pub query_fingerprint: String,
    /// Its findings (the stored JSON array's strings; anything else in it is left out).
    pub findings: Vec<String>,
    /// Why it is ERROR.
    pub error: Option<String>,
    /// The bounded row count, when one was made.
    pub table_rows: Option<i64>,
    /// The bound of that count.
    pub row_limit: Option<i64>,
    /// Whether a usable index leads with the timestamp column, when looked up.
    pub has_leading_index: Option<bool>,
}

/// Everything the backend keeps about one attempt (from [`Store::run_evidence`]).
#[derive(Debug, Clone, PartialEq)]
pub struct RunEvidence {
    /// The `dd_run_attempts` row.
    pub attempt: Attempt,
    /// Its definition's `full_check_name`.
    pub full_check_name: String,
    /// Its definition's revision.
    pub revision: i32,
    /// Its preflight record, when one was linked.
    pub preflight: Option<StoredPreflight>,
    /// Its `dd_run_results` rows, in its definition's declared check order (`row_diff` last).
    pub results: Vec<CheckResult>,
}

impl Store {
    /// The whole record of run `run_id` (one transaction); an unknown run is
    /// [`Error::UnknownRun`].
    pub fn run_evidence(&self, run_id: RunId) -> Result<RunEvidence, Error> {
        const READING: &str = "reading a run";
        let mut client = self.connection()?;
        let mut tx = client.transaction().map_err(Error::query(READING))?;
        let row = tx
            .query_opt(
                &format!(
                    "SELECT {columns}, d.full_check_name, d.revision \
                       FROM public.dd_run_attempts a \
                       JOIN public.dd_check_definitions d ON d.check_id = a.check_id \
                      WHERE a.run_id = $1",
                    columns =
                        ATTEMPT_COLUMNS.split(", ").map(|column| format!("a.{column}")).collect::<Vec<_>>().join(", ")
                ),
                &[&run_id.get()],
            )
            .map_err(Error::query(READING))?
            .ok_or(Error::UnknownRun(run_id))?;
        let attempt = rows::attempt(&row)?;
        let full_check_name: String = get(&row, "full_check_name")?;
        let revision: i32 = get(&row, "revision")?;
        let preflight = match attempt.preflight_id {
            None => None,
            Some(preflight_id) => tx
                .query_opt(
                    "SELECT status, checked_at, query_fingerprint, findings, error, table_rows, row_limit, \
                            has_leading_index \
                       FROM public.dd_preflight_log WHERE preflight_id = $1",
                    &[&preflight_id.get()],
                )
                .map_err(Error::query(READING))?
                .map(|row| {
                    let findings: serde_json::Value = get(&row, "findings")?;
                    Ok::<_, Error>(StoredPreflight {
                        preflight_id,
                        status: parse("dd_preflight_log.status", get(&row, "status")?)?,
                        checked_at: get(&row, "checked_at")?,
                        query_fingerprint: get::<String>(&row, "query_fingerprint")?.trim_end().to_owned(),
                        findings: findings
                            .as_array()
                            .map(|items| items.iter().filter_map(|item| item.as_str().map(str::to_owned)).collect())
                            .unwrap_or_default(),
                        error: get(&row, "error")?,
                        table_rows: get(&row, "table_rows")?,
                        row_limit: get(&row, "row_limit")?,
                        has_leading_index: get(&row, "has_leading_index")?,
                    })
                })
                .transpose()?,
        };
        let results = results_of(&mut tx, run_id)?;
        tx.commit().map_err(Error::query(READING))?;
        Ok(RunEvidence { attempt, full_check_name, revision, preflight, results })
    }
}
