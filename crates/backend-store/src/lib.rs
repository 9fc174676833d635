//! The datadiff backend database.
//!
//! This crate will hold the PipelineWise-compatible migrations (Alembic revisions `001`–`004`
//! plus datadiff's own extension chain), the application connection pool and the DDL
//! connection with libpq-style TLS, the schema gate, and the typed repositories and reports
//! the runner uses (SPEC §3, §4, §6, §8; seed 000).
