//! Integration tests of the alerts: deliveries to local HTTP servers and log files, and
//! source-index warnings remembered in a real backend (throwaway PostgreSQL clusters).

mod context;
mod delivery;
mod server;
mod warnings;
