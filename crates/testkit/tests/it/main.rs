//! Integration tests of the throwaway clusters and MariaDB servers against the real server
//! binaries.

mod cleanup;
mod clusters;
#[cfg(feature = "mariadb")]
mod mariadb;
mod tls;
