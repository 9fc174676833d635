//! Integration tests of the command line through its testable entry point, `datadiff_cli::run`.

mod audit;
mod service;
mod usage;
