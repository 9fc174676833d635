//! Migrates a backend to the latest schema from `DATADIFF_BACKEND_*` environment variables.
//!
//! A helper for this crate's integration tests (two of these run concurrently to show the
//! migration lock serializes them); it is not datadiff's CLI. Variables: `HOST`, `PORT`,
//! `USER`, `PASSWORD`, `DBNAME`, `DDL_USER`, `DDL_PASSWORD`, each prefixed with
//! `DATADIFF_BACKEND_`. Prints the number of steps it applied; on failure prints the error
//! chain on stderr and exits 1.

use std::io::Write;
use std::process::ExitCode;

use datadiff_backend_store::{BackendConfig, MigrateOptions, migrate_backend};

fn variable(name: &str) -> String {
    std::env::var(format!("DATADIFF_BACKEND_{name}")).unwrap_or_default()
}

fn main() -> ExitCode {
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
    match migrate_backend(&config, &MigrateOptions::latest()) {
        Ok(report) => {
            let _ = writeln!(std::io::stdout(), "steps: {}", report.steps.len());
            ExitCode::SUCCESS
        }
        Err(error) => {
            let mut text = error.to_string();
            let mut cause = std::error::Error::source(&error);
            while let Some(inner) = cause {
                text.push_str(&format!(": {inner}"));
                cause = inner.source();
            }
            let _ = writeln!(std::io::stderr(), "{text}");
            ExitCode::FAILURE
        }
    }
}
