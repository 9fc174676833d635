//! The watermark state row (`dd_watermark_state`): the current coverage of one check
//! definition and the evaluation that produced it.

use chrono::{DateTime, Utc};
use datadiff_diff_core::attempt::{CheckId, RunId};

use crate::coverage::Coverage;
use crate::error::Violation;
use crate::event::EventType;

/// A row of `dd_watermark_state`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WatermarkState {
    /// The check definition (primary key).
    pub check_id: CheckId,
    /// The current coverage.
    pub coverage: Coverage,
    /// The run evaluated last (`last_evaluated_run_id`).
    pub last_evaluated_run_id: RunId,
    /// How that evaluation changed the watermark.
    pub event_type: EventType,
    /// 1 for the first evaluation, one more for each evaluated attempt since.
    pub state_version: i64,
    /// The time of the last evaluation (the attempt's `finished_at` or the sweep time).
    pub updated_at: DateTime<Utc>,
}

impl WatermarkState {
    /// The first CHECK constraint of `dd_watermark_state` this row breaks, if any.
    pub fn violation(&self) -> Option<Violation> {
        if self.state_version < 1 {
            return Some(Violation::StateVersion(self.state_version));
        }
        self.coverage.violation()
    }
}
