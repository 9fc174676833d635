//! `rerun_data_diff_check`: see [`remediate`].

use datadiff_backend_store::Attempt;
use datadiff_diff_core::attempt::{CheckIdentity, RunId, RunSummary, Signal};

use crate::error::Error;
use crate::execute::execute_started;
use crate::signals::Interruption;
use crate::tick::{TickContext, interrupted};

/// What a remediation did.
#[derive(Debug, Clone, PartialEq)]
pub struct RemediationReport {
    /// The remediated run as it was when the remediation started; `None` when nothing was
    /// started (a route datadiff does not execute).
    pub original: Option<Attempt>,
    /// The remediation attempt's summary: PASS, FAIL, ERROR, DEFERRED, or SKIPPED after a
    /// lost lease (or for a route datadiff does not execute). Its `run_id` is the
    /// remediation's, `rerun_of_run_id` the root original, `attempt` its number.
    pub summary: RunSummary,
    /// The signal that interrupted it, when the process survived the signal.
    pub interrupted: Option<Signal>,
}

/// Remediates `run_id` with the operator's `reference` (an incident or repair id), recording
/// times from the context's clock: `rerun_data_diff_check --run-id X --remediation-ref R`, a
/// REMEDIATION attempt of a failed run with the run's exact definition revision (runs note
/// §2.2). The context's selection, force and jobs do not apply; its signal handling does.
///
/// The store decides and refuses
/// ([`Store::start_remediation`](datadiff_backend_store::Store::start_remediation)): only a
/// FAIL or ERROR run, a non-empty reference, never while the slot has a RUNNING attempt —
/// refusals carry upstream's messages, and [`Error::is_invalid_rerun`] tells the CLI which
/// ones exit 2 (unknown run, not failed, empty reference; a running slot exits 1). A run of
/// a route datadiff does not execute yet is reported SKIPPED without starting anything. The
/// new attempt is the slot's next number, linked to the root original run (`rerun_of_run_id`), with the original's window
/// (or the slot's resolved one); it then runs like any attempt, with the revision's own
/// checks, columns and statement timeout, and its finish repairs coverage like any terminal
/// attempt. No stale sweep runs here, as upstream.
///
/// The caller alerts as after a run (SPEC §7), with the report's summary: pending
/// source-index warnings (`datadiff_alerts::Dispatcher::send_index_warnings`) before printing,
/// then a FAIL or ERROR remediation (`send_failure_alerts`), as upstream's
/// `_alert_data_diff_failures([summary])`.
///
/// `Err`: the store refused (unknown run, not FAIL/ERROR, empty reference — see
/// [`Error::is_invalid_rerun`] — or the slot has a RUNNING attempt), or the backend failed.
pub fn remediate(context: &TickContext, run_id: RunId, reference: &str) -> Result<RemediationReport, Error> {
    let store = context.store();
    let backend = |action: String| move |source| Error::Backend { action, source };
    // A route datadiff does not execute yet is reported without starting anything.
    if let Some(original) = store.attempt(run_id).map_err(backend(format!("reading run {run_id}")))?
        && let Some(definition) =
            store.definition(original.check_id).map_err(backend(format!("reading the definition of run {run_id}")))?
        && let Some(reason) = definition.definition.unsupported_route()
    {
        let summary = RunSummary::not_attempted(CheckIdentity::of(&definition), original.scheduled_for, reason);
        return Ok(RemediationReport { original: Some(original), summary, interrupted: None });
    }
    let interruption = Interruption::default();
    let executed = context.guarded(&interruption, || {
        let remediation = store
            .start_remediation(run_id, reference, context.clock().now())
            .map_err(backend(format!("starting a remediation of run {run_id}")))?;
        let summary = match execute_started(
            store,
            context.connections(),
            &remediation.definition,
            remediation.attempt.clone(),
            context.options(),
        ) {
            Ok(summary) => summary,
            Err(Error::Interrupted { run_id }) => {
                interrupted(context, &remediation.definition, run_id, interruption.signal())
            }
            Err(error) => return Err(error),
        };
        Ok(RemediationReport { original: Some(remediation.original), summary, interrupted: None })
    })??;
    Ok(RemediationReport { interrupted: interruption.signal(), ..executed })
}
