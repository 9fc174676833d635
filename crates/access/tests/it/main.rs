//! Integration tests of source and replica access against throwaway PostgreSQL clusters.

mod client_cert;
#[cfg(feature = "mysql")]
mod mysql_side;
mod segment;
mod session;
mod stream;
mod support;
