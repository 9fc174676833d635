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
