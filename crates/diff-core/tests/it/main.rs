//! Integration tests of the pure core through its public API.

mod merge_properties;
