//! Integration tests of source and replica access against throwaway PostgreSQL clusters.

mod session;
mod stream;
mod support;
