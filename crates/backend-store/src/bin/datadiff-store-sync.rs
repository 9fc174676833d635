//! Imports check definitions into a backend from `DATADIFF_BACKEND_*` environment variables.
//!
//! A helper for this crate's integration tests (several of these import concurrently to show
//! the definition-sync lock leaves one current revision per name); it is not datadiff's CLI.
//! Connection variables as `datadiff-store-migrate`; `DATADIFF_SYNC_DEFINITIONS` holds a JSON
//! array of `{"name": <full_check_name>, "canonical": <canonical configuration>}` and
//! `DATADIFF_SYNC_AT` the RFC 3339 time of the import. Prints
//! `created=<n> unchanged=<n> superseded=<n> deactivated=<n>`; on failure prints the error
//! chain on stderr and exits 1.

use std::io::Write;
use std::process::ExitCode;

use chrono::{DateTime, Utc};
use datadiff_backend_store::{BackendConfig, Store, SyncScope};
use datadiff_diff_core::definition::CheckDefinition;

fn variable(name: &str) -> String {
    std::env::var(format!("DATADIFF_BACKEND_{name}")).unwrap_or_default()
}

fn definitions() -> Result<Vec<CheckDefinition>, Box<dyn std::error::Error>> {
    let text = std::env::var("DATADIFF_SYNC_DEFINITIONS")?;
    let items: Vec<serde_json::Value> = serde_json::from_str(&text)?;
    let mut definitions = Vec::with_capacity(items.len());
    for item in &items {
        let name = item.get("name").and_then(serde_json::Value::as_str).ok_or("an item has no name")?;
        let canonical = item.get("canonical").ok_or("an item has no canonical configuration")?;
        definitions.push(CheckDefinition::from_canonical_config(name, canonical)?);
    }
    Ok(definitions)
}

fn run() -> Result<String, Box<dyn std::error::Error>> {
    let config = BackendConfig {
        host: variable("HOST"),
        port: variable("PORT").parse().unwrap_or(datadiff_backend_store::DEFAULT_PORT),
        user: variable("USER"),
        password: variable("PASSWORD"),
        dbname: variable("DBNAME"),
        ddl_user: variable("DDL_USER"),
        ddl_password: variable("DDL_PASSWORD"),
        ..BackendConfig::default()
    };
    let now: DateTime<Utc> = DateTime::parse_from_rfc3339(&std::env::var("DATADIFF_SYNC_AT")?)?.to_utc();
    let store = Store::open(config)?;
    let report = store.sync_definitions(&definitions()?, &SyncScope::all(), now)?;
    Ok(format!(
        "created={} unchanged={} superseded={} deactivated={}",
        report.created, report.unchanged, report.superseded, report.deactivated
    ))
}

fn main() -> ExitCode {
    match run() {
        Ok(line) => {
            let _ = writeln!(std::io::stdout(), "{line}");
            ExitCode::SUCCESS
        }
        Err(error) => {
            let mut text = error.to_string();
            let mut cause = error.source();
            while let Some(inner) = cause {
                text.push_str(&format!(": {inner}"));
                cause = inner.source();
            }
            let _ = writeln!(std::io::stderr(), "{text}");
            ExitCode::FAILURE
        }
    }
}
