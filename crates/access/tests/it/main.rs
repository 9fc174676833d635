//! Integration tests of source and replica access against throwaway PostgreSQL clusters.

mod mysql_side;
mod session;
mod stream;
mod support;
