//! Integration tests of source and replica access against throwaway PostgreSQL clusters.

mod client_cert;
mod mysql_side;
mod session;
mod stream;
mod support;
