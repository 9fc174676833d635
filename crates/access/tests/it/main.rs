//! Integration tests of source and replica access against throwaway PostgreSQL clusters.

mod client_cert;
mod session;
mod stream;
mod support;
