//! datadiff proves, continuously and with evidence, that a PostgreSQL replica matches its
//! source.
//!
//! This facade re-exports each layer of the workspace so an embedding program can depend on
//! one crate:
//!
//! * [`core`]: canonical values, keys, the sorted-key merge diff and schedule math (pure);
//! * [`watermark`]: the verified-watermark model (pure);
//! * [`config`]: PipelineWise project directory to validated definitions;
//! * [`connect`]: how every PostgreSQL connection is made: libpq-style connection strings,
//!   the password and service files, `sslmode` and TLS, connect deadlines, keepalives;
//! * [`store`]: the backend database: migrations, connections, repositories, reports;
//! * [`preflight`]: source preflight verdicts and their gatherer;
//! * [`access`]: source and replica access: connections, read-only sessions, catalog reads,
//!   ordered row streams;
//! * [`audit`]: the standalone parity audit of two whole tables (no backend);
//! * [`runner`]: attempts, `row_diff`, the scheduling tick, retries, remediation, signals;
//! * [`alerts`]: index warnings and failure alerts from run summaries.
//!
//! The layers are wired by the caller: the runner produces run summaries, the alerts read
//! them. An embedding program verifying continuously, as a cron-driven
//! `run_data_diff_checks` would, with its alerts:
//!
//! ```no_run
//! use std::time::Duration;
//!
//! use datadiff::access::Environment;
//! use datadiff::alerts::Dispatcher;
//! use datadiff::runner::{Connections, Selection, TickContext, backend_config, open_backend, tick};
//!
//! let project = datadiff::config::load("/srv/pipelinewise", None)?;
//! let store = open_backend(backend_config(project.backend.as_ref().ok_or("no backend_db")?))?;
//! let context = TickContext::new(store, Connections::from_project(&project))
//!     .with_selection(Selection::all())
//!     .with_signal_handling(true);
//! loop {
//!     let report = tick(&context)?; // its `now`: the context's clock, read once
//!     let now = report.now;
//!     // A dispatcher per invocation: an endpoint that timed out is not retried within it.
//!     let dispatcher = Dispatcher::from_project(&project, &Environment::process());
//!     dispatcher.send_index_warnings(context.store(), &report.summaries, now);
//!     if let Some(line) = dispatcher.send_failure_alerts(&report.summaries, now).undelivered_line() {
//!         eprintln!("{line}");
//!     }
//!     std::thread::sleep(Duration::from_secs(60));
//! }
//! # #[allow(unreachable_code)]
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The `datadiff` binary is a thin shell over `datadiff_cli`. The command line and its demo
//! are the default features `cli` and `demo`; with `default-features = false` this crate
//! brings the libraries alone:
//!
//! ```toml
//! [dependencies]
//! datadiff = { version = "0.1", default-features = false }
//! ```

pub use datadiff_access as access;
pub use datadiff_alerts as alerts;
pub use datadiff_audit as audit;
pub use datadiff_backend_store as store;
pub use datadiff_config as config;
pub use datadiff_connect as connect;
pub use datadiff_diff_core as core;
pub use datadiff_preflight as preflight;
pub use datadiff_runner as runner;
pub use datadiff_watermark as watermark;
