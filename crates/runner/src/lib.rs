//! The datadiff runner: everything that talks to source and replica databases.
//!
//! This crate will hold the read-only source and target sessions, check execution (the
//! aggregate checks and `row_diff`), attempts and their transactions, scheduling ticks,
//! retries, remediation, stale sweeps, alert delivery and the standalone parity audit
//! (SPEC §4, §5, §7, §9, §10).
