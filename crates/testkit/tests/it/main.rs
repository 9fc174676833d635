//! Integration tests of the throwaway clusters against the real server binaries.

mod cleanup;
mod clusters;
mod tls;
