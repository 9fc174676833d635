//! Integration tests of the connection crate against throwaway PostgreSQL clusters.

mod lazy_tls;
mod rejected;
