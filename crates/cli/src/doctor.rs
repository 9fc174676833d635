//! `datadiff doctor`: check that a project can run, without writing anything (SPEC §8).
//!
//! The doctor reads; it never writes an attempt, a preflight or a definition, and never
//! migrates. Findings, in order:
//!
//! 1. **backend** — `backend_db` present; the application role and the DDL role log in; the
//!    schema is the one this datadiff needs (SPEC §3's message otherwise); the application
//!    role's grants: `USAGE` on schema `public`, `SELECT, INSERT, UPDATE` on every `dd_*`
//!    and `datadiff_*` data table, `SELECT` on the two version tables, `USAGE, SELECT` on
//!    the sequences — and a warning for `DELETE` or `TRUNCATE`, which neither tool grants.
//! 2. **each tap and each target** used by a definition — a read-only session opens with the
//!    `db_conn` of the YAML (the source through `replica_*`) and `datadiff.yml`'s `tls` entry,
//!    as the runner's; whether it is a standby.
//! 3. **each definition** — both tables' columns resolve (key, timestamp, compare columns,
//!    with the runner's rules), the timestamp columns have a timestamp type, the metadata
//!    checks (`schema_compatibility`, an unsupported `row_checksum`) would pass, and the
//!    source preflight's verdict (index or bounded count) inside a read-only transaction,
//!    exactly as an attempt computes it.
//!
//! Exit codes (the sources are silent; decided here): 0 when no finding FAILs (warnings
//! allowed), 1 when any does — a doctor reports what is wrong rather than stopping at it, so
//! an unreachable backend or source is a FAIL finding, not exit 2 — and 2 only when the
//! project itself cannot be loaded or the arguments are wrong.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use datadiff_access::{Dsn, Environment, Session, SessionSettings, table_columns};
use datadiff_backend_store::GrantGap;
use datadiff_config::{Endpoint, Project, SideTls};
use datadiff_diff_core::{
    AggregatePlan, CheckDefinition, PreflightStatus, ResultStatus, SourceType, TableColumns, TargetType,
};
use datadiff_preflight::{QueryFingerprint, SourceTable};
use serde_json::json;

use crate::console::Console;
use crate::exit::Exit;
use crate::listing::{Cell, Column, Listing, OutputFormat, column};
use crate::project::{ProjectArgs, unwrap_backend};

/// Check the backend, every source and target connection, every definition's columns and
/// the source preflight verdicts — writing nothing. Exits 1 when a check fails.
#[derive(Debug, Args)]
pub(crate) struct DoctorArgs {
    #[command(flatten)]
    project: ProjectArgs,
    /// How the findings are printed.
    #[arg(long, value_enum, default_value_t = OutputFormat::Table)]
    output_format: OutputFormat,
    #[command(flatten)]
    verbosity: crate::logging::Verbosity,
}

impl DoctorArgs {
    /// `-v` given after the command name.
    pub(crate) fn verbosity(&self) -> u8 {
        self.verbosity.count()
    }
}

/// How a finding came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verdict {
    Ok,
    Warn,
    Fail,
    Skip,
}

impl Verdict {
    fn as_str(self) -> &'static str {
        match self {
            Verdict::Ok => "OK",
            Verdict::Warn => "WARN",
            Verdict::Fail => "FAIL",
            Verdict::Skip => "SKIP",
        }
    }
}

/// One line of the doctor's table.
struct Finding {
    scope: String,
    check: &'static str,
    verdict: Verdict,
    detail: String,
}

/// The findings so far.
#[derive(Default)]
struct Findings(Vec<Finding>);

impl Findings {
    fn add(&mut self, scope: impl Into<String>, check: &'static str, verdict: Verdict, detail: impl Into<String>) {
        self.0.push(Finding { scope: scope.into(), check, verdict, detail: detail.into() });
    }

    fn failed(&self) -> bool {
        self.0.iter().any(|finding| finding.verdict == Verdict::Fail)
    }
}

const COLUMNS: &[Column] =
    &[column("Scope", "scope"), column("Check", "check"), column("Status", "status"), column("Detail", "detail")];

/// The statement timeout of the doctor's sessions.
const STATEMENT_TIMEOUT: Duration = Duration::from_secs(300);

/// Runs every check and prints the findings.
pub(crate) fn run(args: &DoctorArgs, console: &mut Console) -> anyhow::Result<Exit> {
    let project = args.project.load(console)?;
    let mut findings = Findings::default();
    check_backend(&project, &mut findings);
    check_sources_and_targets(&project, console.environment(), &mut findings);

    let mut listing = Listing::new(COLUMNS);
    for finding in &findings.0 {
        listing.push(vec![
            Cell::string(&finding.scope),
            Cell::string(finding.check),
            Cell::string(finding.verdict.as_str()),
            Cell::string(&finding.detail),
        ]);
    }
    let passed = !findings.failed();
    let text = match args.output_format {
        OutputFormat::Json => format!("{:#}\n", json!({"passed": passed, "findings": listing.json_rows()})),
        OutputFormat::Table => listing.table(),
    };
    console.stdout().write_all(text.as_bytes()).context("writing to stdout")?;
    Ok(if passed { Exit::Success } else { Exit::Failure })
}

/// One line of an error and its causes (the server's primary message, never its DETAIL).
fn one_line(error: &anyhow::Error) -> String {
    error
        .chain()
        .map(|cause| cause.to_string().lines().next().unwrap_or_default().to_owned())
        .collect::<Vec<_>>()
        .join(": ")
}

fn check_backend(project: &Project, findings: &mut Findings) {
    const SCOPE: &str = "backend";
    let Some(settings) = &project.backend else {
        let detail = match project.ignored_definitions_warning() {
            Some(warning) => warning,
            None => "config.yml does not define backend_db".to_owned(),
        };
        findings.add(SCOPE, "backend_db", Verdict::Fail, detail);
        return;
    };
    let address = format!("{}:{}/{}", settings.host, settings.port, settings.dbname);
    let store = match datadiff_runner::open_backend(datadiff_runner::backend_config(settings)) {
        Ok(store) => {
            findings.add(SCOPE, "application role", Verdict::Ok, format!("{} logged in at {address}", settings.user));
            store
        }
        Err(error) => {
            findings.add(SCOPE, "application role", Verdict::Fail, one_line(&unwrap_backend(error)));
            return;
        }
    };
    match store.connect_ddl() {
        Ok(_) => findings.add(SCOPE, "DDL role", Verdict::Ok, format!("{} logged in", settings.ddl_user)),
        Err(error) => findings.add(SCOPE, "DDL role", Verdict::Fail, one_line(&error.into())),
    }
    match store.gate(&project.dir) {
        Ok(status) => findings.add(SCOPE, "schema", Verdict::Ok, format!("at {status}")),
        Err(error) => findings.add(SCOPE, "schema", Verdict::Fail, one_line(&error.into())),
    }
    match grants(&store) {
        Ok(problems) if problems.is_empty() => {
            findings.add(SCOPE, "grants", Verdict::Ok, "the application role has exactly the rows access it needs");
        }
        Ok(problems) => {
            for (verdict, detail) in problems {
                findings.add(SCOPE, "grants", verdict, detail);
            }
        }
        Err(error) => findings.add(SCOPE, "grants", Verdict::Fail, one_line(&error)),
    }
}

/// The application role's privileges, compared with what migrations grant
/// ([`Store::application_grant_gaps`](datadiff_backend_store::Store::application_grant_gaps)).
fn grants(store: &datadiff_backend_store::Store) -> anyhow::Result<Vec<(Verdict, String)>> {
    Ok(store
        .application_grant_gaps()?
        .into_iter()
        .map(|gap| match gap {
            GrantGap::SchemaUsage => (Verdict::Fail, "no USAGE on schema public".to_owned()),
            GrantGap::Missing { relation, privileges } => {
                (Verdict::Fail, format!("missing {} on {relation}", privileges.join(", ")))
            }
            GrantGap::Extra { relation, privileges } => {
                (Verdict::Warn, format!("{} on {relation} is granted; datadiff never needs it", privileges.join(", ")))
            }
        })
        .collect())
}

/// An open read-only session, or why there is none.
type Opened = Result<Session, String>;

fn check_sources_and_targets(project: &Project, environment: &Environment, findings: &mut Findings) {
    let mut sources: BTreeMap<String, Opened> = BTreeMap::new();
    let mut targets: BTreeMap<String, Opened> = BTreeMap::new();
    for definition in &project.definitions {
        let name = &definition.full_check_name;
        if let Some(reason) = definition.unsupported_route() {
            findings.add(name.as_str(), "route", Verdict::Skip, reason);
            continue;
        }
        if !sources.contains_key(&definition.tap_id) {
            let opened = open_side(project, environment, Side::Source, &definition.tap_id);
            report_session(findings, &format!("tap {}", definition.tap_id), &opened);
            sources.insert(definition.tap_id.clone(), opened.map(|(session, _)| session));
        }
        if !targets.contains_key(&definition.target_id) {
            let opened = open_side(project, environment, Side::Target, &definition.target_id);
            report_session(findings, &format!("target {}", definition.target_id), &opened);
            targets.insert(definition.target_id.clone(), opened.map(|(session, _)| session));
        }
        let (Some(Ok(source)), Some(Ok(target))) =
            (sources.get_mut(&definition.tap_id), targets.get_mut(&definition.target_id))
        else {
            findings.add(name.as_str(), "columns", Verdict::Skip, "no session to its tap or target");
            continue;
        };
        check_definition(definition, source, target, findings);
    }
    if project.definitions.is_empty() {
        findings.add("project", "definitions", Verdict::Warn, "no table has a data_diff block");
    }
}

/// Which side a session is for.
#[derive(Clone, Copy)]
enum Side {
    Source,
    Target,
}

fn report_session(findings: &mut Findings, scope: &str, opened: &Result<(Session, String), String>) {
    match opened {
        Ok((_, detail)) => findings.add(scope, "read-only session", Verdict::Ok, detail.clone()),
        Err(reason) => findings.add(scope, "read-only session", Verdict::Fail, reason.clone()),
    }
}

/// Opens a read-only session with the tap's (through `replica_*`) or the target's `db_conn`,
/// with the runner's `application_name`, `ssl` meaning and libpq fallbacks.
fn open_side(project: &Project, environment: &Environment, side: Side, id: &str) -> Result<(Session, String), String> {
    let (endpoint, role, application_name) = match side {
        Side::Source => {
            let tap = project.tap(id).ok_or_else(|| format!("Tap '{id}' is not defined in the project YAML"))?;
            let db_conn =
                tap.db_conn.as_ref().ok_or_else(|| format!("Tap '{id}' has no db_conn in the project YAML"))?;
            (db_conn.source_endpoint(), "source", datadiff_runner::SOURCE_APPLICATION_NAME)
        }
        Side::Target => {
            let target =
                project.target(id).ok_or_else(|| format!("Target '{id}' is not defined in the project YAML"))?;
            let db_conn =
                target.db_conn.as_ref().ok_or_else(|| format!("Target '{id}' has no db_conn in the project YAML"))?;
            (db_conn.target_endpoint(), "target", datadiff_runner::TARGET_APPLICATION_NAME)
        }
    };
    let tls = match side {
        Side::Source => project.tls.tap(id),
        Side::Target => project.tls.target(id),
    };
    let dsn = Dsn::parse(role, &dsn_text(&endpoint, application_name, tls), environment)
        .map_err(|error| one_line(&error.into()))?;
    let address = format!(
        "{}:{}/{}",
        endpoint.host.as_deref().unwrap_or("local socket"),
        endpoint.port.unwrap_or(5432),
        endpoint.dbname.as_deref().unwrap_or_default()
    );
    let settings = SessionSettings { statement_timeout: Some(STATEMENT_TIMEOUT), read_only: true };
    let mut session = Session::connect(&dsn, settings)
        .map_err(|error| format!("cannot connect to {address}: {}", one_line(&error.into())))?;
    let row = session
        .client()
        .query_one("SELECT current_setting('default_transaction_read_only'), pg_catalog.pg_is_in_recovery()", &[])
        .map_err(|error| one_line(&error.into()))?;
    let read_only: String = row.get(0);
    let standby: bool = row.get(1);
    if read_only != "on" {
        return Err(format!("the session at {address} is not read-only"));
    }
    let tls = session.uses_tls().unwrap_or(false);
    Ok((
        session,
        format!("{address}: read-only{}{}", if standby { ", a standby" } else { "" }, if tls { ", TLS" } else { "" }),
    ))
}

/// A libpq key=value connection string for an endpoint (values single-quoted, `\` and `'`
/// escaped); it lives only in memory and is never printed.
fn dsn_text(endpoint: &Endpoint, application_name: &str, tls: Option<&SideTls>) -> String {
    fn pair(out: &mut String, key: &str, value: &str) {
        out.push_str(key);
        out.push_str("='");
        out.push_str(&value.replace('\\', "\\\\").replace('\'', "\\'"));
        out.push_str("' ");
    }
    let mut text = String::new();
    if let Some(host) = &endpoint.host {
        pair(&mut text, "host", host);
    }
    if let Some(port) = endpoint.port {
        pair(&mut text, "port", &port.to_string());
    }
    if let Some(user) = &endpoint.user {
        pair(&mut text, "user", user);
    }
    if let Some(password) = &endpoint.password {
        pair(&mut text, "password", password.expose());
    }
    if let Some(dbname) = &endpoint.dbname {
        pair(&mut text, "dbname", dbname);
    }
    // As the runner: datadiff.yml's `tls` entry, then `ssl: true`.
    let mode = match tls.and_then(|tls| tls.sslmode) {
        Some(mode) => mode.as_str(),
        None if endpoint.ssl => "require",
        None => "prefer",
    };
    pair(&mut text, "sslmode", mode);
    for (key, file) in [
        ("sslrootcert", tls.and_then(|tls| tls.sslrootcert.as_ref())),
        ("sslcert", tls.and_then(|tls| tls.sslcert.as_ref())),
        ("sslkey", tls.and_then(|tls| tls.sslkey.as_ref())),
    ] {
        if let Some(file) = file {
            pair(&mut text, key, &file.display().to_string());
        }
    }
    pair(&mut text, "application_name", application_name);
    pair(&mut text, "connect_timeout", "10");
    text
}

/// The columns of a table, as the runner reads them.
fn columns(session: &mut Session, schema: &str, table: &str) -> Result<TableColumns, String> {
    table_columns(session.client(), schema, table)
        .map_err(|error| format!("catalog read failed: {}", one_line(&error.into())))
}

fn check_definition(definition: &CheckDefinition, source: &mut Session, target: &mut Session, findings: &mut Findings) {
    let name = definition.full_check_name.as_str();
    debug_assert!(
        definition.source_type == SourceType::TapPostgres && definition.target_type == TargetType::TargetPostgres
    );
    let tables = columns(source, &definition.source_schema, &definition.source_table)
        .and_then(|source| Ok((source, columns(target, &definition.target_schema, &definition.target_table)?)));
    let (source_columns, target_columns) = match tables {
        Ok(tables) => tables,
        Err(reason) => return findings.add(name, "columns", Verdict::Fail, reason),
    };
    let plan = match AggregatePlan::new(definition, &source_columns, &target_columns) {
        Ok(plan) => plan,
        Err(error) => return findings.add(name, "columns", Verdict::Fail, error.to_string()),
    };
    let resolved = plan.columns();
    // A missing compare column does not stop an attempt (its schema_compatibility fails and
    // its row_checksum errs, below); the doctor names it here too.
    let missing: Vec<String> = resolved
        .compare_pairs()
        .iter()
        .filter_map(|pair| match (&pair.source, &pair.target) {
            (Some(_), Some(_)) => None,
            (None, Some(_)) => Some(format!("{} missing in the source", pair.logical_name)),
            (Some(_), None) => Some(format!("{} missing in the target", pair.logical_name)),
            (None, None) => Some(format!("{} missing in the source and the target", pair.logical_name)),
        })
        .collect();
    let keys = format!("key {} / {}", resolved.source_key().name, resolved.target_key().name);
    if missing.is_empty() {
        let detail = format!("{keys}, {} compare column(s)", resolved.compare_pairs().len());
        findings.add(name, "columns", Verdict::Ok, detail);
    } else {
        findings.add(name, "columns", Verdict::Fail, format!("{keys}; compare column {}", missing.join(", ")));
    }
    findings.add(
        name,
        "timestamp types",
        Verdict::Ok,
        format!(
            "{} {} / {} {}",
            resolved.source_timestamp().name,
            resolved.source_timestamp().data_type,
            resolved.target_timestamp().name,
            resolved.target_timestamp().data_type
        ),
    );
    for result in plan.metadata_results() {
        let verdict = if result.status == ResultStatus::Pass { Verdict::Ok } else { Verdict::Fail };
        let detail = match &result.error {
            Some(error) => format!("would be {}: {error}", result.status.as_str()),
            None => format!("would be {}", result.status.as_str()),
        };
        findings.add(name, result.check_type.as_str(), verdict, detail);
    }
    if !plan.has_metric_checks() {
        findings.add(name, "preflight", Verdict::Skip, "metadata-only: no source data is read");
        return;
    }
    let table = SourceTable {
        schema: &definition.source_schema,
        table: &definition.source_table,
        timestamp_column: &resolved.source_timestamp().name,
    };
    let record = match source.client().build_transaction().read_only(true).start() {
        Ok(mut transaction) => {
            let record = datadiff_preflight::preflight(
                &mut transaction,
                &table,
                QueryFingerprint::of_sql(plan.fingerprint_sql()),
            );
            let _ = transaction.rollback();
            record
        }
        Err(error) => return findings.add(name, "preflight", Verdict::Fail, one_line(&error.into())),
    };
    let (verdict, detail) = match record.status {
        PreflightStatus::Pass if record.index_warning => {
            (Verdict::Warn, format!("PASS with an index warning: {}", record.findings.join("; ")))
        }
        PreflightStatus::Pass if record.has_leading_index == Some(true) => {
            (Verdict::Ok, "PASS: an index leads with the timestamp column".to_owned())
        }
        PreflightStatus::Pass => (Verdict::Ok, format!("PASS: {}", record.findings.join("; "))),
        PreflightStatus::Blocked => (Verdict::Fail, format!("BLOCKED: {}", record.findings.join("; "))),
        PreflightStatus::Error => {
            (Verdict::Fail, format!("ERROR: {}", record.error.unwrap_or_else(|| record.findings.join("; "))))
        }
    };
    findings.add(name, "preflight", verdict, detail);
}

#[cfg(test)]
mod tests {
    use datadiff_config::Secret;

    use super::*;

    #[test]
    fn connection_strings_quote_every_value() {
        let endpoint = Endpoint {
            host: Some("db.internal".into()),
            port: Some(6432),
            user: Some("o'neil".into()),
            password: Some(Secret::new("p\\w 'x'")),
            dbname: Some("pay ments".into()),
            ssl: true,
        };
        let text = dsn_text(&endpoint, "pipelinewise-data-diff-source", None);
        let config: postgres::Config = text.parse().unwrap();
        assert_eq!(config.get_user(), Some("o'neil"));
        assert_eq!(config.get_password(), Some(&b"p\\w 'x'"[..]));
        assert_eq!(config.get_dbname(), Some("pay ments"));
        assert_eq!(config.get_ports(), [6432]);
        assert_eq!(config.get_application_name(), Some("pipelinewise-data-diff-source"));
        assert!(text.contains("sslmode='require'"));
        let tls = SideTls {
            sslmode: Some(datadiff_diff_core::SslMode::VerifyFull),
            sslrootcert: Some("/certs/ca.pem".into()),
            sslcert: Some("/certs/dd.crt".into()),
            sslkey: Some("/certs/dd.key".into()),
        };
        let dsn = Dsn::parse("target", &dsn_text(&endpoint, "x", Some(&tls)), &Environment::default()).unwrap();
        assert_eq!(dsn.tls().mode, datadiff_diff_core::SslMode::VerifyFull);
        assert_eq!(dsn.tls().roots, datadiff_access::RootCertificates::File("/certs/ca.pem".into()));
        assert_eq!(dsn.tls().client.as_ref().map(|client| client.key.clone()), Some("/certs/dd.key".into()));
    }
}
