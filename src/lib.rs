//! datadiff proves, continuously and with evidence, that a PostgreSQL replica matches its
//! source.
//!
//! This facade re-exports each layer of the workspace so an embedding program can depend on
//! one crate:
//!
//! * [`core`]: canonical values, keys, the sorted-key merge diff and schedule math (pure);
//! * [`watermark`]: the verified-watermark model (pure);
//! * [`config`]: PipelineWise project directory to validated definitions;
//! * [`store`]: the backend database: migrations, connections, repositories, reports;
//! * [`preflight`]: source preflight verdicts and their gatherer;
//! * [`runner`]: sessions, check execution, scheduling, alerts and the parity audit.
//!
//! The `datadiff` binary is a thin shell over `datadiff_cli`.

pub use datadiff_backend_store as store;
pub use datadiff_config as config;
pub use datadiff_diff_core as core;
pub use datadiff_preflight as preflight;
pub use datadiff_runner as runner;
pub use datadiff_watermark as watermark;
