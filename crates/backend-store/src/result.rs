//! The evidence an attempt leaves: per-check results (`dd_run_results`, diff-core's
//! [`CheckResult`]) and `row_diff` differences (`datadiff_run_differences`), written by
//! [`Store::finish_attempt`] and read back here.
//!
//! [`Store::finish_attempt`]: crate::Store::finish_attempt

use datadiff_diff_core::{
    attempt::{CheckResult, ResultType, RunId},
    merge::DifferenceKind,
};
use postgres::Transaction;

use crate::error::Error;
use crate::rows::{get, parse};
use crate::store::Store;

/// One `row_diff` difference to store: the key and the differing column names only, never
/// a row value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Difference {
    /// The result's check type (`row_diff`).
    pub check_type: ResultType,
    /// Missing in the target, extra in the target, or changed.
    pub kind: DifferenceKind,
    /// The row's canonical key as JSON (`{"id": "42"}`-style: column names and key values).
    pub key: serde_json::Value,
    /// The differing compared columns: non-empty exactly for [`DifferenceKind::Changed`].
    pub fields: Vec<String>,
}

/// A stored difference, with its position.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredDifference {
    /// The result's check type.
    pub check_type: ResultType,
    /// Its position within the check type's differences, from 1, in key order.
    pub ordinal: i32,
    /// Its kind.
    pub kind: DifferenceKind,
    /// The row's key.
    pub key: serde_json::Value,
    /// The differing columns (empty unless changed).
    pub fields: Vec<String>,
}

pub(crate) fn difference_kind(text: String) -> Result<DifferenceKind, Error> {
    [DifferenceKind::MissingInTarget, DifferenceKind::ExtraInTarget, DifferenceKind::Changed]
        .into_iter()
        .find(|kind| kind.as_str() == text)
        .ok_or(Error::UnexpectedValue { column: "datadiff_run_differences.kind", value: text })
}

/// The `dd_run_results` rows of `run_id` in its definition's declared check order (`row_diff`
/// and any other type outside `checks` after them, by name). `dd_run_results` is upstream's
/// table, so a backend without datadiff's extension table has them too.
pub(crate) fn results_of(tx: &mut Transaction<'_>, run_id: RunId) -> Result<Vec<CheckResult>, Error> {
    let rows = tx
        .query(
            "SELECT r.check_type, r.status, r.source_value, r.target_value, r.source_query_seconds, \
                    r.target_query_seconds, r.error \
               FROM public.dd_run_results r \
               JOIN public.dd_run_attempts a ON a.run_id = r.run_id \
               JOIN public.dd_check_definitions d ON d.check_id = a.check_id \
               LEFT JOIN LATERAL ( \
                    SELECT declared.position FROM jsonb_array_elements_text(d.checks) \
                      WITH ORDINALITY AS declared(name, position) \
                     WHERE declared.name = r.check_type LIMIT 1) declared ON TRUE \
              WHERE r.run_id = $1 \
              ORDER BY declared.position NULLS LAST, r.check_type",
            &[&run_id.get()],
        )
        .map_err(Error::query("reading results"))?;
    rows.iter()
        .map(|row| {
            Ok(CheckResult {
                check_type: parse("dd_run_results.check_type", get(row, "check_type")?)?,
                status: parse("dd_run_results.status", get(row, "status")?)?,
                source_value: get::<Option<serde_json::Value>>(row, "source_value")?.unwrap_or_default(),
                target_value: get::<Option<serde_json::Value>>(row, "target_value")?.unwrap_or_default(),
                source_query_seconds: get(row, "source_query_seconds")?,
                target_query_seconds: get(row, "target_query_seconds")?,
                error: get(row, "error")?,
            })
        })
        .collect()
}

impl Store {
    /// The results of a run, in its definition's declared check order (`row_diff` and any
    /// other type outside `checks` after them, by name). A run without results (DEFERRED,
    /// run-level errors, RUNNING) gives an empty list; an unknown run [`Error::UnknownRun`].
    /// A JSON `null` value reads as [`serde_json::Value::Null`], and so does an SQL NULL (which
    /// neither tool writes).
    pub fn run_results(&self, run_id: RunId) -> Result<Vec<CheckResult>, Error> {
        let mut client = self.connection()?;
        let mut tx = client.transaction().map_err(Error::query("reading results"))?;
        let exists = tx
            .query_opt("SELECT 1 FROM public.dd_run_attempts WHERE run_id = $1", &[&run_id.get()])
            .map_err(Error::query("reading results"))?;
        if exists.is_none() {
            return Err(Error::UnknownRun(run_id));
        }
        let results = results_of(&mut tx, run_id)?;
        tx.commit().map_err(Error::query("reading results"))?;
        Ok(results)
    }

    /// The `row_diff` differences of a run (`report differences --run-id`), by check type
    /// and ordinal (none on a backend without the extension table); an unknown run is
    /// [`Error::UnknownRun`].
    pub fn run_differences(&self, run_id: RunId) -> Result<Vec<StoredDifference>, Error> {
        let mut client = self.connection()?;
        let mut tx = client.transaction().map_err(Error::query("reading differences"))?;
        let exists = tx
            .query_opt("SELECT 1 FROM public.dd_run_attempts WHERE run_id = $1", &[&run_id.get()])
            .map_err(Error::query("reading differences"))?;
        if exists.is_none() {
            return Err(Error::UnknownRun(run_id));
        }
        // A backend PipelineWise migrated has no extension table, so no evidence either.
        let table: bool = tx
            .query_one("SELECT to_regclass('public.datadiff_run_differences') IS NOT NULL", &[])
            .and_then(|row| row.try_get(0))
            .map_err(Error::query("reading differences"))?;
        if !table {
            return Ok(Vec::new());
        }
        let rows = tx
            .query(
                "SELECT check_type, ordinal, kind, key, fields FROM public.datadiff_run_differences \
                 WHERE run_id = $1 ORDER BY check_type, ordinal",
                &[&run_id.get()],
            )
            .map_err(Error::query("reading differences"))?;
        tx.commit().map_err(Error::query("reading differences"))?;
        rows.iter()
            .map(|row| {
                Ok(StoredDifference {
                    check_type: parse("datadiff_run_differences.check_type", get(row, "check_type")?)?,
                    ordinal: get(row, "ordinal")?,
                    kind: difference_kind(get(row, "kind")?)?,
                    key: get(row, "key")?,
                    fields: get(row, "fields")?,
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn difference_kinds_round_trip_their_stored_text() {
        for kind in [DifferenceKind::MissingInTarget, DifferenceKind::ExtraInTarget, DifferenceKind::Changed] {
            assert_eq!(difference_kind(kind.as_str().to_owned()).ok(), Some(kind));
        }
        assert!(difference_kind("MISSING_IN_REPLICA".to_owned()).is_err());
    }
}
