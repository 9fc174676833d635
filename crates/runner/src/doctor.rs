//! `datadiff doctor`'s checks: whether a project can run, without writing anything (SPEC
//! §8). [`check`] returns typed [`Finding`]s; the command line prints them and decides the
//! exit code.
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
//!    `db_conn` of the YAML (the source through `replica_*`), as the runner's; whether it is
//!    a standby.
//! 3. **each definition** — both tables exist (a missing table says so, not that its key
//!    column is missing) and their columns resolve (key, timestamp, compare columns, with the
//!    runner's rules), the timestamp columns have a timestamp type, the metadata checks
//!    (`schema_compatibility`, an unsupported `row_checksum`) would pass, each side's server
//!    plans the attempt's queries (see below), and the source preflight's verdict (index or
//!    bounded count) inside a read-only transaction, exactly as an attempt computes it; the
//!    key column is unique on both sides where the next run compares (a unique index on
//!    exactly the key, else a scan of the window for a duplicate; see below); with
//!    `checks.<name>.horizon`, the horizon reading a tick would make (OK with the position and
//!    the applied lag, WARN when the position is unknown, FAIL when it cannot be read).
//!
//! **Queries.** Each side's server is asked to plan (`EXPLAIN`, never `EXPLAIN ANALYZE`: no
//! row is read) every statement an attempt would send it: the aggregate query of the
//! declared metric checks, the `MIN` query of a historical run's start, and, with the
//! `row_diff` extension, its streaming `SELECT` (key, timestamp and compare columns over the
//! window, soft deletes left out, text keys `COLLATE "C"`). So an error the server would
//! raise — `function min(uuid) does not exist`, a missing privilege, a column dropped since
//! — is a FAIL finding before the first run, with the server's message. The window bounds
//! are bound as parameters of the timestamp column's type (the last hour).
//!
//! **Key uniqueness.** A unique index (primary key, unique constraint) on exactly the key
//! column, valid and without predicate or expression, decides it from the catalog: nothing
//! is scanned. Otherwise one read-only query looks for the first duplicate key among the rows
//! the next run compares (the current slot's window through the timestamp column, or all
//! history before its end for an `initial_full_scan`), NULL keys left out; a duplicate FAILs
//! naming the key. A MySQL/MariaDB source: `information_schema.STATISTICS`, then the scan.
//!
//! A doctor reports what is wrong rather than stopping at it: an unreachable backend or
//! source is a FAIL finding, not an error.
//!
//! ```no_run
//! use datadiff_access::Environment;
//!
//! let project = datadiff_config::load("/srv/pipelinewise", None)?;
//! let report = datadiff_runner::doctor::check(&project, &Environment::process());
//! for finding in &report.findings {
//!     println!("{} {} {} {}", finding.scope, finding.check, finding.verdict, finding.detail);
//! }
//! std::process::exit(if report.passed() { 0 } else { 1 });
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use datadiff_access::{
    AnySide, Environment, MySqlSideConfig, MySqlSideSession, SideConfig, SideError, SideSession, TableName,
};
use datadiff_backend_store::GrantGap;
use datadiff_config::Project;
use datadiff_diff_core::{
    Side as PlanSide,
    attempt::{PreflightStatus, ResultStatus},
    definition::{CheckDefinition, TargetType},
    plan::{AggregatePlan, TableColumns},
};
use datadiff_preflight::{QueryFingerprint, SourceTable};

use crate::connections::{Connections, RouteError};
use crate::key_uniqueness::{self, KeyTable, Scope, Uniqueness};
use crate::row_diff_error::RowDiffError;
use crate::window_bounds::{self, UnboundParameter};

/// How a finding came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// The check passed.
    Ok,
    /// Something to look at that does not stop a run.
    Warn,
    /// A run would fail (or could not start) for this reason.
    Fail,
    /// Not checked, with the reason in the detail.
    Skip,
}

impl Verdict {
    /// `OK`, `WARN`, `FAIL` or `SKIP`, as the doctor's table prints it.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Ok => "OK",
            Verdict::Warn => "WARN",
            Verdict::Fail => "FAIL",
            Verdict::Skip => "SKIP",
        }
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One line of the doctor's table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// What was checked: `backend`, `tap <id>`, `target <id>`, `project`, or a definition's
    /// `full_check_name`.
    pub scope: String,
    /// Which check, such as `grants`, `read-only session`, `columns`, `preflight`.
    pub check: &'static str,
    /// How it came out.
    pub verdict: Verdict,
    /// What was found, on one line (server messages without their DETAIL; never a password
    /// or a row value).
    pub detail: String,
}

/// Every finding of one doctor run, in the order of the module docs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DoctorReport {
    /// The findings.
    pub findings: Vec<Finding>,
}

impl DoctorReport {
    /// Whether no finding FAILs (warnings allowed): `datadiff doctor` exits 0 then, 1
    /// otherwise.
    pub fn passed(&self) -> bool {
        !self.findings.iter().any(|finding| finding.verdict == Verdict::Fail)
    }

    fn add(&mut self, scope: impl Into<String>, check: &'static str, verdict: Verdict, detail: impl Into<String>) {
        self.findings.push(Finding { scope: scope.into(), check, verdict, detail: detail.into() });
    }
}

/// Runs every check of the doctor over `project` (sessions opened with `environment`, as
/// the runner's) and returns the findings; it writes nothing.
pub fn check(project: &Project, environment: &Environment) -> DoctorReport {
    let mut findings = DoctorReport::default();
    check_backend(project, &mut findings);
    check_sources_and_targets(project, environment, &mut findings);
    findings
}

/// The statement timeout of the doctor's sessions.
const STATEMENT_TIMEOUT: Duration = Duration::from_secs(300);

/// One line of an error and its causes (the server's primary message, never its DETAIL).
fn one_line(error: &(dyn std::error::Error + 'static)) -> String {
    let mut lines = Vec::new();
    let mut cause = Some(error);
    while let Some(error) = cause {
        lines.push(error.to_string().lines().next().unwrap_or_default().to_owned());
        cause = error.source();
    }
    lines.join(": ")
}

/// The store's own error when the runner wraps it (its text names the role, user, host and
/// database: what to fix), else the runner's.
fn backend_line(error: crate::Error) -> String {
    match error {
        crate::Error::Backend { source, .. } => one_line(&source),
        other => one_line(&other),
    }
}

fn check_backend(project: &Project, findings: &mut DoctorReport) {
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
    let store = match crate::open_backend(crate::backend_config(settings)) {
        Ok(store) => {
            findings.add(SCOPE, "application role", Verdict::Ok, format!("{} logged in at {address}", settings.user));
            store
        }
        Err(error) => {
            findings.add(SCOPE, "application role", Verdict::Fail, backend_line(error));
            return;
        }
    };
    match store.connect_ddl() {
        Ok(_) => findings.add(SCOPE, "DDL role", Verdict::Ok, format!("{} logged in", settings.ddl_user)),
        Err(error) => findings.add(SCOPE, "DDL role", Verdict::Fail, one_line(&error)),
    }
    match store.gate(&project.dir) {
        Ok(status) => findings.add(SCOPE, "schema", Verdict::Ok, format!("at {status}")),
        Err(error) => findings.add(SCOPE, "schema", Verdict::Fail, one_line(&error)),
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
fn grants(store: &datadiff_backend_store::Store) -> Result<Vec<(Verdict, String)>, datadiff_backend_store::Error> {
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

/// Why a doctor check could not look at what it checks; `Display` is the finding's detail.
#[derive(Debug, thiserror::Error)]
enum Problem {
    /// The definition's connections cannot be set up (as an attempt would ERROR).
    #[error(transparent)]
    Route(#[from] RouteError),
    /// A session failed (connect, timeout, a statement).
    #[error(transparent)]
    Session(#[from] SideError),
    /// A statement failed: the server's primary message.
    #[error("{}", datadiff_access::one_line(.0))]
    Server(#[from] postgres::Error),
    /// The catalog lookup of a table failed.
    #[error("catalog read failed: {}", datadiff_access::one_line(.0))]
    CatalogRead(#[source] postgres::Error),
    /// A session that is not read-only.
    #[error("the session at {0} is not read-only")]
    NotReadOnly(String),
    /// A PostgreSQL table that does not exist.
    #[error("table {table} does not exist in the {role} database")]
    NoTable {
        /// The table.
        table: TableName,
        /// `source` or `target`.
        role: &'static str,
    },
    /// A PostgreSQL table none of whose columns the role may read.
    #[error("table {table} has no column the {role} role may read (grant it SELECT)")]
    NoReadableColumn {
        /// The table.
        table: TableName,
        /// `source` or `target`.
        role: &'static str,
    },
    /// A MySQL source table that is missing or unreadable (the catalog does not tell).
    #[error("table {0} does not exist in the source database, or the source user may not read it")]
    NoMySqlTable(TableName),
    /// A statement parameter that is no window bound.
    #[error(transparent)]
    UnboundParameter(#[from] UnboundParameter),
    /// `row_diff` cannot be planned.
    #[error(transparent)]
    RowDiff(#[from] RowDiffError),
}

/// An open read-only session, or why there is none.
type Opened = Result<SideSession, Problem>;

fn check_sources_and_targets(project: &Project, environment: &Environment, findings: &mut DoctorReport) {
    let connections = Connections::from_project_with(project, environment.clone());
    let mut sources: BTreeMap<String, Result<AnySide, Problem>> = BTreeMap::new();
    let mut targets: BTreeMap<String, Opened> = BTreeMap::new();
    for definition in &project.definitions {
        let name = &definition.full_check_name;
        if let Some(reason) = definition.unsupported_route() {
            findings.add(name.as_str(), "route", Verdict::Skip, reason);
            continue;
        }
        // The attempt's own route: the same db_conn reading, database cross-check and
        // session settings as `run`.
        let route = match connections.route(definition) {
            Ok(route) => route,
            Err(reason) => {
                findings.add(name.as_str(), "route", Verdict::Fail, reason.to_string());
                continue;
            }
        };
        if !sources.contains_key(&definition.tap_id) {
            let opened = match &route.mysql_source {
                None => open_side(&route.source).map(|(session, detail)| (AnySide::Postgres(session), detail)),
                Some(config) => open_mysql_side(config).map(|(session, detail)| (AnySide::MySql(session), detail)),
            };
            match &opened {
                Ok((_, detail)) => {
                    findings.add(format!("tap {}", definition.tap_id), "read-only session", Verdict::Ok, detail.clone())
                }
                Err(reason) => findings.add(
                    format!("tap {}", definition.tap_id),
                    "read-only session",
                    Verdict::Fail,
                    reason.to_string(),
                ),
            }
            sources.insert(definition.tap_id.clone(), opened.map(|(session, _)| session));
        }
        if !targets.contains_key(&definition.target_id) {
            let opened = open_side(&route.target);
            report_session(findings, &format!("target {}", definition.target_id), &opened);
            targets.insert(definition.target_id.clone(), opened.map(|(session, _)| session));
        }
        if let Some(horizon) = project.horizon.get(name) {
            check_horizon(definition, &route, horizon, findings);
        }
        let (Some(Ok(source)), Some(Ok(target))) =
            (sources.get_mut(&definition.tap_id), targets.get_mut(&definition.target_id))
        else {
            findings.add(name.as_str(), "columns", Verdict::Skip, "no session to its tap or target");
            continue;
        };
        check_definition(definition, source, target, findings);
    }
    for session in sources.into_values().flatten() {
        session.close();
    }
    for session in targets.into_values().flatten() {
        session.close();
    }
    if project.definitions.is_empty() {
        findings.add("project", "definitions", Verdict::Warn, "no table has a data_diff block");
    }
}

/// `checks.<name>.horizon`: the reading a tick would make ([`crate::horizon::read`]) — OK with
/// the horizon, the replica's position and its applied lag; WARN when the position is unknown
/// (due slots would be SKIPPED); FAIL when it cannot be read (an unknown subscription or
/// column, a refused statement).
fn check_horizon(
    definition: &datadiff_diff_core::definition::CheckDefinition,
    route: &crate::connections::Route,
    horizon: &datadiff_diff_core::attempt::HorizonSource,
    findings: &mut DoctorReport,
) {
    let name = definition.full_check_name.as_str();
    let now = chrono::Utc::now();
    match crate::horizon::read(route, definition, horizon, now) {
        Ok(read) => match read.applied_up_to {
            Some(applied) => findings.add(
                name,
                "horizon",
                Verdict::Ok,
                format!(
                    "{horizon}: replica has applied up to {} ({}); applied lag {} s",
                    datadiff_diff_core::attempt::python_isoformat(applied),
                    read.position,
                    (now - applied).num_seconds().max(0)
                ),
            ),
            None => findings.add(
                name,
                "horizon",
                Verdict::Warn,
                format!(
                    "{horizon}: replica position unknown ({}): due slots are SKIPPED until it is known",
                    read.position
                ),
            ),
        },
        Err(error) => findings.add(name, "horizon", Verdict::Fail, one_line(&error)),
    }
}

fn report_session(findings: &mut DoctorReport, scope: &str, opened: &Result<(SideSession, String), Problem>) {
    match opened {
        Ok((_, detail)) => findings.add(scope, "read-only session", Verdict::Ok, detail.clone()),
        Err(reason) => findings.add(scope, "read-only session", Verdict::Fail, reason.to_string()),
    }
}

/// Opens a MySQL/MariaDB source's session as an attempt opens it (read-only, UTC, the
/// engine's statement timeout) and says which server it is.
fn open_mysql_side(config: &MySqlSideConfig) -> Result<(MySqlSideSession, String), Problem> {
    let session = MySqlSideSession::open(config, STATEMENT_TIMEOUT)?;
    let detail = format!("{}: read-only, {}", config.address(), session.server_version());
    Ok((session, detail))
}

/// Opens the side's session as an attempt opens it (read-only transaction, UTC,
/// `search_path` pinned, the doctor's statement timeout) and says what it is: read-only,
/// a standby, encrypted.
fn open_side(config: &SideConfig) -> Result<(SideSession, String), Problem> {
    let mut session = SideSession::open(config, STATEMENT_TIMEOUT)?;
    let facts = session.with_client("read-only check", |client| {
        let row = client.query_one(
            "SELECT pg_catalog.current_setting('transaction_read_only'), pg_catalog.pg_is_in_recovery(), \
                    coalesce((SELECT ssl FROM pg_catalog.pg_stat_ssl WHERE pid = pg_catalog.pg_backend_pid()), false)",
            &[],
        )?;
        Ok::<_, postgres::Error>((row.try_get::<_, String>(0)?, row.try_get::<_, bool>(1)?, row.try_get::<_, bool>(2)?))
    })?;
    let (read_only, standby, tls) = facts?;
    let address = &config.address;
    if read_only != "on" {
        return Err(Problem::NotReadOnly(address.clone()));
    }
    Ok((
        session,
        format!("{address}: read-only{}{}", if standby { ", a standby" } else { "" }, if tls { ", TLS" } else { "" }),
    ))
}

/// The columns of a table, as the runner reads them. A table without a column visible to the
/// role is looked up in `pg_class`: a missing table says so (rather than that its key column
/// is missing), and so does a table the role may not read.
fn columns(session: &mut SideSession, role: &'static str, schema: &str, table: &str) -> Result<TableColumns, Problem> {
    let columns = session.columns(schema, table)?;
    if !columns.columns().is_empty() {
        return Ok(columns);
    }
    let (owned_schema, owned_table) = (schema.to_owned(), table.to_owned());
    let exists = session
        .with_client("catalog read", move |client| {
            client.query_opt(
                "SELECT 1 FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace \
                 WHERE n.nspname = $1 AND c.relname = $2",
                &[&owned_schema, &owned_table],
            )
        })?
        .map_err(Problem::CatalogRead)?
        .is_some();
    let table = TableName::new(schema, table);
    Err(match exists {
        false => Problem::NoTable { table, role },
        true => Problem::NoReadableColumn { table, role },
    })
}

/// A MySQL source table's columns; none visible means the table is missing or unreadable.
fn mysql_columns(session: &mut MySqlSideSession, schema: &str, table: &str) -> Result<TableColumns, Problem> {
    let columns = session.columns(schema, table)?;
    if columns.columns().is_empty() {
        return Err(Problem::NoMySqlTable(TableName::new(schema, table)));
    }
    Ok(columns)
}

/// Asks the server to plan `sql` (`EXPLAIN`, no row read), its parameters bound as window
/// bounds of their inferred type; the server's message when it cannot. It runs inside a
/// savepoint, so a refusal leaves the session's transaction usable.
fn explain(session: &mut SideSession, sql: &str) -> Result<(), Problem> {
    let sql = format!("EXPLAIN {sql}");
    session.with_client("EXPLAIN", move |client| {
        client.batch_execute("SAVEPOINT datadiff_doctor")?;
        let planned = plan_with_window_bounds(client, &sql);
        let end = if planned.is_ok() { "RELEASE" } else { "ROLLBACK TO" };
        client.batch_execute(&format!("{end} SAVEPOINT datadiff_doctor"))?;
        planned
    })?
}

fn plan_with_window_bounds(client: &mut postgres::Client, sql: &str) -> Result<(), Problem> {
    let statement = client.prepare(sql)?;
    let end = chrono::Utc::now();
    let start = end - chrono::TimeDelta::hours(1);
    // The first parameter is a window's start, every later one its end.
    let bounds: Vec<_> = (0..statement.params().len()).map(|index| if index == 0 { start } else { end }).collect();
    let params = window_bounds::bind(&statement, &bounds)?;
    client.query(&statement, &window_bounds::as_params(&params))?;
    Ok(())
}

/// One finding per side: whether its server plans every statement an attempt sends it.
fn check_queries(
    definition: &CheckDefinition,
    plan: &AggregatePlan,
    source: &mut SideSession,
    target: &mut SideSession,
    findings: &mut DoctorReport,
) {
    let name = definition.full_check_name.as_str();
    let metrics: Vec<&str> = plan.metrics().iter().map(|check| check.as_str()).collect();
    // Planned by the runner, from both catalogs, exactly as an attempt plans them.
    let row_diff_selects =
        definition.extensions.row_diff.is_some().then(|| crate::row_diff_select(definition, plan, source, target));
    for side in [PlanSide::Source, PlanSide::Target] {
        let (label, check) = match side {
            PlanSide::Source => ("source", "source queries"),
            PlanSide::Target => ("target", "target queries"),
        };
        let mut planned = Vec::new();
        let mut failures = Vec::new();
        let mut statements: Vec<(String, String)> = Vec::new();
        if !metrics.is_empty() {
            statements.push((format!("aggregate query ({})", metrics.join(", ")), plan.metric_sql(side).to_owned()));
            statements.push(("MIN query".to_owned(), plan.minimum_sql(side).to_owned()));
        }
        let row_diff_statement = "row_diff SELECT";
        match &row_diff_selects {
            None => {}
            Some(Ok((source, target))) => {
                let select = if side == PlanSide::Source { source } else { target };
                statements.push((row_diff_statement.to_owned(), select.clone()));
            }
            // It cannot be planned: the server is not asked.
            Some(Err(reason)) => failures.push(format!("{row_diff_statement}: {reason}")),
        }
        if statements.is_empty() && failures.is_empty() {
            continue;
        }
        let session = match side {
            PlanSide::Source => &mut *source,
            PlanSide::Target => &mut *target,
        };
        for (statement, sql) in statements {
            match explain(session, &sql) {
                Ok(()) => planned.push(statement),
                Err(reason) => failures.push(format!("{statement}: {reason}")),
            }
        }
        if failures.is_empty() {
            findings.add(name, check, Verdict::Ok, format!("the {label} server plans the {}", planned.join(", ")));
        } else {
            findings.add(name, check, Verdict::Fail, format!("the {label} server refuses the {}", failures.join("; ")));
        }
    }
}

/// One finding per side: whether the key (`row_diff`'s: every column of `key_columns`, else
/// the key column) is unique where the next run compares ([`crate::key_uniqueness`]); a
/// duplicate FAILs, naming the key, and so does a key column a side lacks.
fn check_key_uniqueness(
    definition: &CheckDefinition,
    plan: &AggregatePlan,
    [source_columns, target_columns]: [&TableColumns; 2],
    source: &mut AnySide,
    target: &mut SideSession,
    findings: &mut DoctorReport,
) {
    let name = definition.full_check_name.as_str();
    let Some(scope) = uniqueness_scope(definition, chrono::Utc::now()) else {
        for check in ["source key uniqueness", "target key uniqueness"] {
            findings.add(name, check, Verdict::Skip, "the schedule has no current slot to take a window from");
        }
        return;
    };
    let resolved = plan.columns();
    let (source_keys, target_keys) = match crate::row_diff::own_key_columns(definition) {
        None => (vec![resolved.source_key().name.clone()], vec![resolved.target_key().name.clone()]),
        Some(keys) => {
            let resolve = |table: &TableColumns, name: &str| -> Result<String, String> {
                match table.require(name) {
                    Ok(column) => Ok(column.name.clone()),
                    Err(error) => Err(error.to_string()),
                }
            };
            let source_keys: Result<Vec<String>, String> =
                keys.iter().map(|(source, _)| resolve(source_columns, source)).collect();
            let target_keys: Result<Vec<String>, String> =
                keys.iter().map(|(_, target)| resolve(target_columns, target)).collect();
            match (source_keys, target_keys) {
                (Ok(source_keys), Ok(target_keys)) => (source_keys, target_keys),
                (source_keys, target_keys) => {
                    for (check, found) in
                        [("source key uniqueness", source_keys), ("target key uniqueness", target_keys)]
                    {
                        match found {
                            Ok(_) => {
                                findings.add(name, check, Verdict::Skip, "a key column is missing on the other side")
                            }
                            Err(reason) => findings.add(name, check, Verdict::Fail, format!("key_columns: {reason}")),
                        }
                    }
                    return;
                }
            }
        }
    };
    let source_table = KeyTable {
        schema: &definition.source_schema,
        table: &definition.source_table,
        keys: &source_keys,
        timestamp: &resolved.source_timestamp().name,
        soft_delete: None,
    };
    let target_table = KeyTable {
        schema: &definition.target_schema,
        table: &definition.target_table,
        keys: &target_keys,
        timestamp: &resolved.target_timestamp().name,
        soft_delete: plan.soft_delete_column(),
    };
    let source_found = match source {
        AnySide::Postgres(session) => key_uniqueness::check_postgres(session, &source_table, scope),
        AnySide::MySql(session) => key_uniqueness::check_mysql(session, &source_table, scope),
    };
    let target_found = key_uniqueness::check_postgres(target, &target_table, scope);
    for (check, table, found) in
        [("source key uniqueness", source_table, source_found), ("target key uniqueness", target_table, target_found)]
    {
        let qualified = TableName::new(table.schema, table.table);
        let (verdict, detail) = match (found, table.keys) {
            (Ok(Uniqueness::Indexed { index }), [key]) => (
                Verdict::Ok,
                format!("unique index {index} covers exactly the key column {key} of {qualified}: nothing scanned"),
            ),
            (Ok(Uniqueness::Indexed { index }), keys) => (
                Verdict::Ok,
                format!(
                    "unique index {index} covers the key columns ({}) of {qualified}: nothing scanned",
                    keys.join(", ")
                ),
            ),
            (Ok(Uniqueness::Unique), [key]) => (
                Verdict::Ok,
                format!(
                    "no duplicate {key} in {} of {qualified} (scanned: no unique index covers exactly the key column)",
                    scope.describe()
                ),
            ),
            (Ok(Uniqueness::Unique), keys) => (
                Verdict::Ok,
                format!(
                    "no duplicate ({}) in {} of {qualified} (scanned: no unique index covers the key columns)",
                    keys.join(", "),
                    scope.describe()
                ),
            ),
            (Ok(Uniqueness::Duplicate { key }), [column]) => (
                Verdict::Fail,
                format!(
                    "duplicate key {key} in {column}, {} of {qualified}: a run would ERROR (the key column must be unique)",
                    scope.describe()
                ),
            ),
            (Ok(Uniqueness::Duplicate { key }), keys) => (
                Verdict::Fail,
                format!(
                    "duplicate key {key} in ({}), {} of {qualified}: a run would ERROR (the key columns must be unique together)",
                    keys.join(", "),
                    scope.describe()
                ),
            ),
            (Err(reason), _) => (Verdict::Fail, format!("the uniqueness query failed: {reason}")),
        };
        findings.add(name, check, verdict, detail);
    }
}

/// The rows the next run compares: the window of the schedule's current slot at `now`, or
/// everything before its end when the first run starts with a full scan.
fn uniqueness_scope(definition: &CheckDefinition, now: chrono::DateTime<chrono::Utc>) -> Option<Scope> {
    let slot = definition.schedule().ok()?.current_slot(now).ok()?;
    let window = definition.window(slot)?;
    let start = (!definition.starts_with_full_scan()).then_some(window.start);
    Some(Scope { start, end: window.end })
}

fn check_definition(
    definition: &CheckDefinition,
    source: &mut AnySide,
    target: &mut SideSession,
    findings: &mut DoctorReport,
) {
    let name = definition.full_check_name.as_str();
    debug_assert!(definition.target_type == TargetType::TargetPostgres);
    let source_columns = match source {
        AnySide::Postgres(session) => columns(session, "source", &definition.source_schema, &definition.source_table),
        AnySide::MySql(session) => mysql_columns(session, &definition.source_schema, &definition.source_table),
    };
    let tables = source_columns.and_then(|source| {
        Ok((source, columns(target, "target", &definition.target_schema, &definition.target_table)?))
    });
    let (source_columns, target_columns) = match tables {
        Ok(tables) => tables,
        Err(reason) => return findings.add(name, "columns", Verdict::Fail, reason.to_string()),
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
    check_key_uniqueness(definition, &plan, [&source_columns, &target_columns], source, target, findings);
    let Some(source) = source.as_postgres() else {
        let reason = "not checked for tap-mysql sources yet (an attempt runs them)";
        findings.add(name, "source queries", Verdict::Skip, reason);
        findings.add(name, "preflight", Verdict::Skip, reason);
        return;
    };
    check_queries(definition, &plan, source, target, findings);
    if !plan.has_metric_checks() {
        findings.add(name, "preflight", Verdict::Skip, "metadata-only: no source data is read");
        return;
    }
    // Inside the session's read-only transaction, as an attempt's preflight runs.
    let (schema, table, timestamp_column, fingerprint) = (
        definition.source_schema.clone(),
        definition.source_table.clone(),
        resolved.source_timestamp().name.clone(),
        QueryFingerprint::of_sql(plan.fingerprint_sql()),
    );
    let preflight = source.with_client("preflight", move |client| {
        let table = SourceTable { schema: &schema, table: &table, timestamp_column: &timestamp_column };
        datadiff_preflight::preflight(client, &table, fingerprint)
    });
    let record = match preflight {
        Ok(record) => record,
        Err(reason) => return findings.add(name, "preflight", Verdict::Fail, reason),
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
    use super::*;

    /// Without a backend or a definition, the doctor says so in typed findings and fails;
    /// nothing is connected to.
    #[test]
    fn a_project_without_backend_or_definitions_fails_with_typed_findings() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("config.yml"), "").unwrap();
        let project = datadiff_config::load(dir.path(), None).unwrap();
        let report = check(&project, &Environment::default());
        let findings: Vec<(&str, &str, Verdict)> =
            report.findings.iter().map(|finding| (finding.scope.as_str(), finding.check, finding.verdict)).collect();
        assert_eq!(
            findings,
            [("backend", "backend_db", Verdict::Fail), ("project", "definitions", Verdict::Warn)],
            "{report:?}"
        );
        assert_eq!(report.findings[0].detail, "config.yml does not define backend_db");
        assert!(!report.passed());
        assert_eq!(Verdict::Fail.to_string(), "FAIL");
        let warnings_only = DoctorReport { findings: report.findings[1..].to_vec() };
        assert!(warnings_only.passed(), "a warning alone passes");
    }
}
