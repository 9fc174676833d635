//! Runs one scheduler tick in a process of its own, from `DATADIFF_TICK_*` environment
//! variables.
//!
//! A helper for this crate's integration tests (several processes ticking one backend at
//! once; a SIGTERM arriving mid-attempt); it is not datadiff's CLI. Variables:
//!
//! * `DATADIFF_TICK_HOST`, `_PORT`: the cluster holding every database;
//! * `_BACKEND_DB`, `_BACKEND_USER`, `_BACKEND_PASSWORD`: the backend and its application role;
//! * `_SIDES_USER`, `_SIDES_PASSWORD`, `_SOURCE_DB`, `_REPLICA_DB`: tap `payments`'s source
//!   and target `postgres`'s replica;
//! * `_AT`: the tick's `now` and fixed clock (RFC 3339); `_JOBS` (default 1);
//! * `_BARRIER`: when set, everything is opened first, then one line is read from standard
//!   input before ticking (so several processes can be released at once).
//!
//! Signals are handled as the CLI handles them. Prints `ready` once opened, then one JSON
//! line per summary (`check`, `status`, `slot_status`, `scheduled_for`, `run_id`, `reason`);
//! on failure prints the error chain on stderr and exits 2.

use std::io::{BufRead, Write};
use std::num::NonZeroUsize;
use std::process::ExitCode;

use chrono::{DateTime, Utc};
use datadiff_access::Environment;
use datadiff_backend_store::{BackendConfig, PoolOptions, Store};
use datadiff_config::{DbConn, Secret};
use datadiff_runner::{Clock, Connections, TickContext, tick};

fn variable(name: &str) -> String {
    std::env::var(format!("DATADIFF_TICK_{name}")).unwrap_or_default()
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let host = variable("HOST");
    let port: u16 = variable("PORT").parse()?;
    let jobs = NonZeroUsize::new(variable("JOBS").parse().unwrap_or(1)).ok_or("DATADIFF_TICK_JOBS must be positive")?;
    let now: DateTime<Utc> = DateTime::parse_from_rfc3339(&variable("AT"))?.to_utc();
    let backend = BackendConfig {
        host: host.clone(),
        port,
        user: variable("BACKEND_USER"),
        password: variable("BACKEND_PASSWORD"),
        dbname: variable("BACKEND_DB"),
        ddl_user: variable("BACKEND_USER"),
        ddl_password: variable("BACKEND_PASSWORD"),
        ..BackendConfig::default()
    };
    let pool = u32::try_from(jobs.get()).unwrap_or(u32::MAX).saturating_add(1);
    let store = Store::open_with(backend, PoolOptions { max_size: pool, ..PoolOptions::default() })?;
    let side = |database: String| DbConn {
        host: Some(host.clone()),
        port: Some(port),
        user: Some(variable("SIDES_USER")),
        password: Some(Secret::new(variable("SIDES_PASSWORD"))),
        dbname: Some(database),
        ..DbConn::default()
    };
    let connections = Connections::new(Environment::default())
        .with_tap("payments", side(variable("SOURCE_DB")))
        .with_target("postgres", side(variable("REPLICA_DB")));
    let context =
        TickContext::new(store, connections).with_clock(Clock::at(now)).with_jobs(jobs).with_signal_handling(true);
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "ready")?;
    stdout.flush()?;
    if std::env::var_os("DATADIFF_TICK_BARRIER").is_some() {
        let mut line = String::new();
        std::io::stdin().lock().read_line(&mut line)?;
    }
    let report = tick(&context)?;
    for summary in &report.summaries {
        let line = serde_json::json!({
            "check": summary.check.full_check_name,
            "status": summary.status.as_str(),
            "slot_status": summary.slot_status.map(|status| status.as_str()),
            "scheduled_for": summary.scheduled_for.map(|slot| slot.to_rfc3339()),
            "run_id": summary.run_id.map(|run_id| run_id.to_string()),
            "reason": summary.reason,
        });
        writeln!(stdout, "{line}")?;
    }
    stdout.flush()?;
    Ok(())
}

/// A background job of a non-interactive shell starts with SIGINT ignored, which the runner
/// honours; the tests deliver SIGINT as to a foreground process, so start from the default.
#[allow(unsafe_code)]
fn default_sigint() {
    // SAFETY: setting a standard disposition for SIGINT before any thread is started.
    unsafe {
        libc::signal(libc::SIGINT, libc::SIG_DFL);
    }
}

fn main() -> ExitCode {
    default_sigint();
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            let mut text = error.to_string();
            let mut source = error.source();
            while let Some(cause) = source {
                text.push_str(": ");
                text.push_str(&cause.to_string());
                source = cause.source();
            }
            eprintln!("{text}");
            ExitCode::from(2)
        }
    }
}
