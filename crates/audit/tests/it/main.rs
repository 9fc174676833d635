//! Integration tests of the parity audit against throwaway PostgreSQL clusters.

mod audit;
mod memory;
mod replicas;
mod support;
