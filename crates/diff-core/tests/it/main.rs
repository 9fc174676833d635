//! Integration tests of the pure core through its public API.

mod checks_mysql;
mod checks_postgres;
mod composite_key_properties;
mod merge_properties;
mod segment_properties;
mod tick_properties;
