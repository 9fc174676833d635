//! Integration tests of the runner against throwaway PostgreSQL clusters.

mod audit;
mod memory;
mod session;
mod stream;
mod support;
