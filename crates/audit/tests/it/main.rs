//! Integration tests of the parity audit against throwaway PostgreSQL clusters.

mod audit;
mod cases;
mod composite;
mod deadline;
mod differential;
mod live;
mod logical;
mod memory;
mod replicas;
mod segments;
mod support;
mod verdicts;
