//! End-to-end tests: the real `datadiff` binary against throwaway PostgreSQL clusters (one
//! shared cluster for the binary, fresh databases per test), asserting exit codes and
//! backend rows more than printed text.

mod alerts;
mod backend_lost;
mod composite_keys;
mod config;
mod demo;
mod deploy;
mod dlt;
mod docs;
mod doctor;
mod evidence;
mod guards;
mod guides;
mod horizon;
mod import;
mod list;
mod live;
mod logical;
mod metrics;
mod migrate;
mod mysql;
mod outputs;
mod pipe;
mod readme;
mod replica_naming;
mod report;
mod rerun;
mod run;
mod secrecy;
mod services;
mod shared_backend;
mod signals;
mod split;
mod support;
mod tables;
