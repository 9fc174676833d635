//! What sending an invocation's alerts came to: the typed outcomes the CLI maps to its exit
//! code and stderr.

use datadiff_diff_core::attempt::{CheckId, IndexWarningId, SummaryStatus};

use crate::delivery::DeliveryReceipt;

/// What became of one alert.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AlertDelivery {
    /// The check's tap has `send_alert: false`: nothing was sent.
    Muted,
    /// No alert destination is configured: nothing was sent.
    NoDestination,
    /// Handed to every destination; see [`DeliveryReceipt::accepted`].
    Sent(DeliveryReceipt),
}

/// One check's failure alert.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FailureAlertOutcome {
    /// `target/tap/schema/table`.
    pub full_check_name: String,
    /// The definition revision.
    pub check_id: CheckId,
    /// The representative failure's status (FAIL or ERROR).
    pub status: SummaryStatus,
    /// How many FAIL/ERROR summaries of the check the alert stands for.
    pub failed_attempts: usize,
    /// What became of it.
    pub delivery: AlertDelivery,
}

impl FailureAlertOutcome {
    /// Whether the alert was sent and no destination accepted it.
    pub fn undelivered(&self) -> bool {
        matches!(&self.delivery, AlertDelivery::Sent(receipt) if !receipt.accepted())
    }
}

/// The failure alerts of one invocation, one per failed check, in first-seen order.
///
/// Failure alerts are not best effort (SPEC §7): when [`FailureAlertReport::undelivered_line`]
/// is `Some`, the command prints that line on stderr and exits 1.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FailureAlertReport {
    /// One per failed check.
    pub alerts: Vec<FailureAlertOutcome>,
}

impl FailureAlertReport {
    /// How many alerts at least one destination accepted.
    pub fn delivered(&self) -> usize {
        self.alerts
            .iter()
            .filter(|alert| matches!(&alert.delivery, AlertDelivery::Sent(receipt) if receipt.accepted()))
            .count()
    }

    /// The alerts no destination accepted.
    pub fn undelivered(&self) -> Vec<&FailureAlertOutcome> {
        self.alerts.iter().filter(|alert| alert.undelivered()).collect()
    }

    /// One line for stderr when some alert was not delivered: `failure alert not delivered
    /// for <check> (<destination>: <problem>; ...)`, the checks separated by `, `.
    pub fn undelivered_line(&self) -> Option<String> {
        let undelivered = self.undelivered();
        if undelivered.is_empty() {
            return None;
        }
        let checks: Vec<String> = undelivered
            .iter()
            .map(|alert| match &alert.delivery {
                AlertDelivery::Sent(receipt) => format!("{} ({})", alert.full_check_name, receipt.failure_text()),
                _ => alert.full_check_name.clone(),
            })
            .collect();
        let noun = if checks.len() == 1 { "failure alert" } else { "failure alerts" };
        Some(format!("{noun} not delivered for {}", checks.join(", ")))
    }
}

/// What became of one pending index warning.
#[derive(Debug)]
pub enum WarningResult {
    /// Every observation's tap has `send_alert: false`: nothing was sent.
    Muted,
    /// No alert destination is configured: nothing was sent (still pending).
    NoDestination,
    /// Its marker already existed: it was delivered before (by datadiff or PipelineWise).
    AlreadyDelivered,
    /// At least one destination accepted it and the marker was written.
    Delivered(DeliveryReceipt),
    /// No destination accepted it: no marker, so the next invocation tries again.
    NotAccepted(DeliveryReceipt),
    /// The backend failed (taking the lock, reading or writing the marker); the receipt is
    /// there when the destinations had already been called.
    BackendFailed {
        /// The store's error.
        error: datadiff_backend_store::Error,
        /// What the destinations answered, when they were called.
        receipt: Option<DeliveryReceipt>,
    },
}

/// One pending index warning.
#[derive(Debug)]
pub struct WarningOutcome {
    /// Its identity.
    pub warning_id: IndexWarningId,
    /// The routing check (the latest observation whose tap has alerts enabled), or the latest
    /// observation when every tap is muted.
    pub full_check_name: String,
    /// The routing check's revision (the one the marker names).
    pub check_id: CheckId,
    /// What became of it.
    pub result: WarningResult,
}

/// The index warnings of one invocation. Best effort: nothing in it changes the exit code.
#[derive(Debug, Default)]
pub struct WarningReport {
    /// One per pending warning, in first-seen order.
    pub warnings: Vec<WarningOutcome>,
}

impl WarningReport {
    /// How many warnings were delivered (and remembered) by this invocation.
    pub fn delivered(&self) -> usize {
        self.warnings.iter().filter(|warning| matches!(warning.result, WarningResult::Delivered(_))).count()
    }
}
