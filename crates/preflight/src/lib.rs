//! Source preflight: may this table be scanned, and what did we see?
//!
//! This crate will hold a pure verdict over catalog facts (indexes, bounded row count) that
//! produces the preflight record PipelineWise stores, a thin gatherer reading those facts from
//! PostgreSQL, and the index-warning identity (SPEC §7; config note §3).
