//! The scan's progress bar (rows/s and ETA), drawn on stderr only when it is a terminal.

use datadiff_runner::audit::AuditProgress;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// A progress bar fed by [`AuditProgress`] events; invisible when stderr is not a terminal.
pub(crate) struct ScanProgress {
    bar: Option<ProgressBar>,
}

impl ScanProgress {
    /// A bar on the process's stderr when `terminal`, else nothing.
    pub(crate) fn new(terminal: bool) -> ScanProgress {
        if !terminal {
            return ScanProgress { bar: None };
        }
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
        let style = ProgressStyle::with_template(
            "{spinner} [{elapsed_precise}] {bar:32} {human_pos}/{human_len} rows  {per_sec:0}  ETA {eta}",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar());
        bar.set_style(style);
        ScanProgress { bar: Some(bar) }
    }

    /// Updates the bar.
    pub(crate) fn update(&self, progress: AuditProgress) {
        let Some(bar) = &self.bar else { return };
        match progress {
            AuditProgress::Inventory { source_rows, replica_rows } => bar.set_length(source_rows.max(replica_rows)),
            AuditProgress::Scanned { source_rows, replica_rows } => bar.set_position(source_rows.max(replica_rows)),
            _ => {}
        }
    }

    /// Removes the bar.
    pub(crate) fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

/// A spinner with the elapsed time for work whose size is unknown in advance (a tick),
/// drawn on stderr only when it is a terminal.
pub(crate) struct Spinner {
    bar: Option<ProgressBar>,
}

impl Spinner {
    /// A spinner saying `message` when `terminal`, else nothing.
    pub(crate) fn new(terminal: bool, message: &'static str) -> Spinner {
        if !terminal {
            return Spinner { bar: None };
        }
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
        let style = ProgressStyle::with_template("{spinner} [{elapsed_precise}] {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_spinner());
        bar.set_style(style);
        bar.set_message(message);
        bar.enable_steady_tick(std::time::Duration::from_millis(120));
        Spinner { bar: Some(bar) }
    }

    /// Removes the spinner.
    pub(crate) fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}
