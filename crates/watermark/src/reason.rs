//! The `reason` texts of the watermark, in PipelineWise's exact wording.

use std::fmt;

use datadiff_diff_core::attempt::{RunId, RunStatus};

/// Why the watermark is where it is. `Display` renders upstream's text; run ids are lowercase
/// hyphenated UUIDs.
///
/// A [`Coverage`](crate::Coverage) keeps the rendered text rather than this enum because the
/// incremental rule carries a previous state's reason over verbatim, whatever wrote it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Reason {
    /// A slot's historical start is unresolved, so no bounds can be claimed.
    UnresolvedStart {
        /// The first such slot's run (by `scheduled_for`).
        run_id: RunId,
    },
    /// The definition has only `schema_compatibility`: no data was compared.
    MetadataOnly,
    /// A failed or errored slot sits at the verified end.
    Boundary {
        /// The blocking run.
        run_id: RunId,
        /// Its status.
        status: RunStatus,
    },
    /// Nothing failed at the end, but no passing window covers the next interval.
    Uncovered,
    /// Passing windows cover everything observed.
    AllCovered,
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reason::UnresolvedStart { run_id } => {
                write!(f, "Run {run_id} has not resolved its historical comparison start")
            }
            Reason::MetadataOnly => f.write_str("Metadata-only checks cannot advance table coverage"),
            Reason::Boundary { run_id, status } => {
                write!(f, "Run {run_id} has status {status} at the coverage boundary")
            }
            Reason::Uncovered => f.write_str("No successful run covers the next timestamp interval"),
            Reason::AllCovered => f.write_str("All observed timestamp intervals are covered by successful runs"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RUN: RunId = RunId::new(uuid::Uuid::from_u128(0x0123_4567_89AB_CDEF_0123_4567_89AB_CDEF));

    #[test]
    fn reasons_use_upstream_wording_and_lowercase_hyphenated_ids() {
        assert_eq!(
            Reason::UnresolvedStart { run_id: RUN }.to_string(),
            "Run 01234567-89ab-cdef-0123-456789abcdef has not resolved its historical comparison start"
        );
        assert_eq!(Reason::MetadataOnly.to_string(), "Metadata-only checks cannot advance table coverage");
        assert_eq!(
            Reason::Boundary { run_id: RUN, status: RunStatus::Fail }.to_string(),
            "Run 01234567-89ab-cdef-0123-456789abcdef has status FAIL at the coverage boundary"
        );
        assert_eq!(
            Reason::Boundary { run_id: RUN, status: RunStatus::Error }.to_string(),
            "Run 01234567-89ab-cdef-0123-456789abcdef has status ERROR at the coverage boundary"
        );
        assert_eq!(Reason::Uncovered.to_string(), "No successful run covers the next timestamp interval");
        assert_eq!(Reason::AllCovered.to_string(), "All observed timestamp intervals are covered by successful runs");
    }
}
