//! The verified watermark of a check definition: which contiguous interval of its timestamp
//! column is proven equal between source and target, what blocks it, and how far checks have
//! looked.
//!
//! This crate will hold the pure coverage model, computed exactly as PipelineWise's data-diff
//! computes it (SPEC §6, runs note §4): effective slots, full recomputation, the incremental
//! advance for in-order appends, event types and reasons. It does no I/O and never reads the
//! clock; time is an argument.
