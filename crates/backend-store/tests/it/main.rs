//! Integration tests of the backend store against real PostgreSQL (testkit clusters).

mod adoption;
mod attempts;
mod catalog;
mod connection;
mod constraints;
mod definitions;
mod gate;
mod grants;
mod leases;
mod lifecycle;
mod migrate;
mod operator_guide;
mod overview;
mod parts;
mod reports;
mod support;
mod tls;
mod warnings;
mod watermarks;
