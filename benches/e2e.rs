//! End-to-end benchmark (SPEC §11): on the same source and replica tables, in one run, the
//! COPY floor, `row_diff`, the aggregate checks (sides concurrent and sequential) and
//! `reladiff` hashdiff when it is installed — wall time and peak RSS of each.
//!
//! ```text
//! cargo bench --bench e2e -- [--rows 1000000,5000000] [--runs 3] [--no-reladiff] [--only NAME]
//! ```
//!
//! Without `--rows` it runs one small size (100,000 rows, one run) so that a plain
//! `cargo bench` stays short; CI only compiles it (`cargo bench --no-run`).
//!
//! # What it builds
//!
//! Two throwaway clusters (testkit), standing for two servers: the source database and the
//! backend on the first, the replica on the second. Both get `public.events` (`id bigint`
//! primary key, `updated_at timestamptz`, `account integer`, `amount numeric(12,2)`,
//! `kind text`, `note varchar(80)`; the source also an index on `updated_at` for the
//! preflight), filled by `INSERT … SELECT generate_series` into `UNLOGGED` tables (loading
//! speed only: reads are the same as from logged tables), then `VACUUM ANALYZE`. Drift is
//! 0.03 % of the keys, a third each: ids ≡ 1 (mod 10,000) are missing from the replica,
//! ids ≡ 2 exist only there, ids ≡ 3 have a different `note`.
//!
//! # What it measures
//!
//! Every contender runs in a child process of its own (this program again, or `psql`,
//! `reladiff`), under `/usr/bin/time` for its peak RSS (`ru_maxrss`, the kernel's VmHWM); the
//! wall time is the parent's, from spawn to exit. Contenders are interleaved within each of
//! `--runs` rounds, after one unmeasured warm-up round, and reported as medians.
//!
//! * **COPY floor**: both sides' `COPY (<row_diff's SELECT>) TO STDOUT` drained to nowhere,
//!   concurrently, by the fastest client available: tokio-postgres in one `block_on`
//!   (binary and text), rust-postgres' sync `copy_out` (binary), and two `psql \copy … to
//!   '/dev/null'` processes (binary). The floor of a round is the fastest of them.
//! * **row_diff**: one forced attempt of a definition whose only data check is `row_diff`
//!   (compare columns `account, amount, kind, note`), through `datadiff::runner::execute`
//!   with a migrated backend: connections, catalog, preflight, both streams, the merge, the
//!   finish. Its counts are checked against the drift.
//! * **aggregate checks**: one forced attempt of all eight upstream checks, sides concurrent
//!   (the default) and sequential.
//! * **reladiff**: `reladiff <source> public.events <replica> public.events -k id -c account
//!   -c amount -c kind -c note -w <the window> -a hashdiff --stats`, default threads and
//!   bisection settings. Its counts are checked too.

#![allow(clippy::print_stdout, reason = "a benchmark program prints its figures")]

use std::collections::BTreeMap;
use std::io::BufRead;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use chrono::{DateTime, Duration as Span, TimeZone, Utc};
use datadiff::access::Environment;
use datadiff::config::{DbConn, Secret};
use datadiff::core::{
    attempt::{ResultType, StartKind},
    definition::{CheckDefinition, CheckType, Extensions, RowDiffSettings, SourceType, TargetType},
};
use datadiff::runner::{Clock, Connections, ExecutionOptions, execute};
use datadiff::store::{BackendConfig, DefinitionFilter, MigrateOptions, SyncScope};
use datadiff_testkit::{Cluster, Database, SUPERUSER, quote_ident};
use futures_core::Stream;
use serde_json::{Value as Json, json};

type Failure = Box<dyn std::error::Error + Send + Sync>;

/// The environment variable carrying a child's instructions (JSON).
const SPEC: &str = "DATADIFF_E2E_SPEC";
/// Window: `[SLOT - 200 days, SLOT)`, around every row.
const WINDOW_DAYS: i64 = 200;
const COMPARED: [&str; 4] = ["account", "amount", "kind", "note"];
const ROW_DIFF_TAP: &str = "bench_row_diff";
const AGGREGATE_TAP: &str = "bench_aggregates";

fn slot() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 6, 1, 0, 0, 0).single().unwrap_or_default()
}

fn main() -> Result<(), Failure> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("child") {
        return child(args.get(1).map(String::as_str).unwrap_or_default());
    }
    let options = Options::parse(&args)?;
    parent(&options)
}

/// Command-line options of the parent.
struct Options {
    rows: Vec<i64>,
    runs: usize,
    reladiff: bool,
    /// Only the contenders whose name contains this (the floors and row_diff always run).
    only: Option<String>,
}

impl Options {
    fn parse(args: &[String]) -> Result<Options, Failure> {
        let mut options = Options { rows: vec![100_000], runs: 1, reladiff: true, only: None };
        let mut args = args.iter();
        while let Some(arg) = args.next() {
            match arg.as_str() {
                "--rows" => {
                    let list = args.next().ok_or("--rows needs a value")?;
                    options.rows =
                        list.split(',').map(|n| n.trim().replace('_', "").parse()).collect::<Result<_, _>>()?;
                }
                "--runs" => options.runs = args.next().ok_or("--runs needs a value")?.parse()?,
                "--no-reladiff" => options.reladiff = false,
                "--only" => options.only = Some(args.next().ok_or("--only needs a value")?.clone()),
                // cargo bench passes --bench to harness = false targets.
                "--bench" => {}
                other => return Err(format!("unknown argument {other}").into()),
            }
        }
        Ok(options)
    }
}

/// The row_diff SELECT of one side, as `row_diff` writes it for these tables and window.
fn select_sql() -> String {
    let literal = |instant: DateTime<Utc>| format!("'{}+00'::timestamptz", instant.format("%Y-%m-%d %H:%M:%S%.6f"));
    let start = slot() - Span::days(WINDOW_DAYS);
    format!(
        "SELECT \"id\", \"updated_at\", \"account\", \"amount\", \"kind\", \"note\" FROM \"public\".\"events\" \
         WHERE \"updated_at\" >= {} AND \"updated_at\" < {} ORDER BY \"id\"",
        literal(start),
        literal(slot())
    )
}

fn table_sql(rows: i64, replica: bool) -> String {
    let (skip, note) = if replica {
        (1, "CASE WHEN g % 10000 = 3 THEN 'changed note ' || g ELSE 'note for event number ' || g END")
    } else {
        (2, "'note for event number ' || g")
    };
    let index = if replica { "" } else { "CREATE INDEX events_updated_at_idx ON public.events (updated_at);" };
    format!(
        "CREATE UNLOGGED TABLE public.events (id bigint PRIMARY KEY, updated_at timestamptz NOT NULL, \
         account integer NOT NULL, amount numeric(12,2) NOT NULL, kind text NOT NULL, note varchar(80)); \
         INSERT INTO public.events SELECT g, timestamptz '2026-01-01 00:00:00+00' + g * interval '1 second', \
         g % 1000, (g % 100000) / 100.0, 'kind-' || (g % 7), {note} \
         FROM generate_series(1, {rows}) g WHERE g % 10000 <> {skip}; {index}"
    )
}

/// Keys `g` in `1..=rows` with `g % 10000 == residue`.
fn drift_count(rows: i64, residue: i64) -> u64 {
    if rows < residue { 0 } else { ((rows - residue) / 10_000 + 1) as u64 }
}

/// The test-kit objects of one size: clusters, databases, the backend.
struct Setup {
    source_cluster: Cluster,
    replica_cluster: Cluster,
    names: [String; 3],
    backend: BackendConfig,
}

impl Setup {
    fn build(rows: i64) -> Result<Setup, Failure> {
        let source_cluster = Cluster::start()?;
        let replica_cluster = Cluster::start()?;
        let started = Instant::now();
        let names = {
            let source = source_cluster.fresh_database()?;
            let replica = replica_cluster.fresh_database()?;
            let backend = source_cluster.fresh_database()?;
            let build = |database: &Database<'_>, replica: bool| -> Result<(), Failure> {
                let mut client = database.client()?;
                client.batch_execute(&table_sql(rows, replica))?;
                client.batch_execute("VACUUM ANALYZE public.events")?;
                Ok(())
            };
            std::thread::scope(|scope| -> Result<(), Failure> {
                let replica_build = scope.spawn(|| build(&replica, true));
                build(&source, false)?;
                replica_build.join().map_err(|_| "the replica build panicked")??;
                Ok(())
            })?;
            [source.name().to_owned(), replica.name().to_owned(), backend.name().to_owned()]
        };
        eprintln!("built 2 x {rows} rows in {:.1} s", started.elapsed().as_secs_f64());
        let (ddl, app) = ("bench_ddl", "bench_app");
        source_cluster.create_role(ddl, "bench-ddl-pw")?;
        source_cluster.create_role(app, "bench-app-pw")?;
        source_cluster.connect(&names[2])?.batch_execute(&format!(
            "ALTER DATABASE {db} OWNER TO {ddl}; GRANT CONNECT ON DATABASE {db} TO {app}",
            db = quote_ident(&names[2])
        ))?;
        let backend = BackendConfig {
            host: source_cluster.host().to_owned(),
            port: source_cluster.port(),
            user: app.to_owned(),
            password: "bench-app-pw".to_owned(),
            dbname: names[2].clone(),
            ddl_user: ddl.to_owned(),
            ddl_password: "bench-ddl-pw".to_owned(),
            ..BackendConfig::default()
        };
        datadiff::store::migrate_backend(&backend, &MigrateOptions::latest())?;
        Ok(Setup { source_cluster, replica_cluster, names, backend })
    }

    fn source_url(&self) -> String {
        self.source_cluster.url(SUPERUSER, self.source_cluster.superuser_password(), &self.names[0])
    }

    fn replica_url(&self) -> String {
        self.replica_cluster.url(SUPERUSER, self.replica_cluster.superuser_password(), &self.names[1])
    }

    /// What a child needs to know.
    fn spec(&self) -> Json {
        let side = |cluster: &Cluster, name: &str| json!({"host": cluster.host(), "port": cluster.port(), "password": cluster.superuser_password(), "dbname": name});
        json!({
            "source": side(&self.source_cluster, &self.names[0]),
            "replica": side(&self.replica_cluster, &self.names[1]),
            "source_url": self.source_url(),
            "replica_url": self.replica_url(),
            "backend": {
                "host": self.backend.host, "port": self.backend.port, "user": self.backend.user,
                "password": self.backend.password, "dbname": self.backend.dbname,
                "ddl_user": self.backend.ddl_user, "ddl_password": self.backend.ddl_password,
            },
        })
    }

    fn definition(&self, tap: &str, checks: Vec<CheckType>, row_diff: bool) -> CheckDefinition {
        CheckDefinition {
            full_check_name: CheckDefinition::full_check_name_of("postgres", tap, "public", "events"),
            target_id: "postgres".into(),
            tap_id: tap.into(),
            source_type: SourceType::TapPostgres,
            target_type: TargetType::TargetPostgres,
            source_database: self.names[0].clone(),
            target_database: self.names[1].clone(),
            source_schema: "public".into(),
            source_table: "events".into(),
            target_schema: "public".into(),
            target_table: "events".into(),
            source_key_column: "id".into(),
            target_key_column: "id".into(),
            source_timestamp_column: "updated_at".into(),
            target_timestamp_column: "updated_at".into(),
            source_compare_columns: COMPARED.iter().map(|name| name.to_string()).collect(),
            target_compare_columns: COMPARED.iter().map(|name| name.to_string()).collect(),
            checks,
            frequency: "0 0 * * *".into(),
            window_start_seconds: WINDOW_DAYS * 86_400,
            window_end_seconds: 0,
            statement_timeout_seconds: 3600,
            initial_full_scan: false,
            extensions: Extensions { row_diff: row_diff.then(RowDiffSettings::default), exclude_soft_deleted: false },
        }
    }

    fn import(&self) -> Result<(), Failure> {
        let store = datadiff::runner::open_backend(self.backend.clone())?;
        let all = vec![
            CheckType::SchemaCompatibility,
            CheckType::RowCount,
            CheckType::DistinctKeyCount,
            CheckType::NullKeyCount,
            CheckType::DuplicateKeyCount,
            CheckType::MinKey,
            CheckType::MaxKey,
            CheckType::RowChecksum,
        ];
        let definitions = [
            self.definition(ROW_DIFF_TAP, vec![CheckType::SchemaCompatibility], true),
            self.definition(AGGREGATE_TAP, all, false),
        ];
        store.sync_definitions(&definitions, &SyncScope::all(), slot() - Span::days(1))?;
        Ok(())
    }
}

/// A finished contender.
#[derive(Debug, Clone)]
struct Measured {
    seconds: f64,
    rss_kib: Option<u64>,
    /// User + system CPU seconds of the client process(es), when `/usr/bin/time` is there.
    cpu_seconds: Option<f64>,
    stdout: String,
}

/// Runs `commands` concurrently, each under `/usr/bin/time` when it exists; the wall time
/// until the last exits, the largest peak RSS.
fn measure(commands: Vec<Command>) -> Result<Measured, Failure> {
    let time = Path::new("/usr/bin/time").exists();
    let directory = tempfile::tempdir()?;
    let started = Instant::now();
    let mut children = Vec::new();
    for (index, command) in commands.into_iter().enumerate() {
        let report = directory.path().join(format!("time-{index}"));
        let mut wrapped = if time {
            let mut wrapped = Command::new("/usr/bin/time");
            wrapped.arg("-f").arg("%M %U %S").arg("-o").arg(&report).arg(command.get_program());
            wrapped.args(command.get_args());
            wrapped
        } else {
            let mut plain = Command::new(command.get_program());
            plain.args(command.get_args());
            plain
        };
        for (key, value) in command.get_envs() {
            match value {
                Some(value) => wrapped.env(key, value),
                None => wrapped.env_remove(key),
            };
        }
        wrapped.stdout(Stdio::piped()).stderr(Stdio::piped());
        children.push((wrapped.spawn()?, report));
    }
    let mut stdout = String::new();
    let mut rss_kib = None;
    let mut cpu_seconds = None;
    for (child, report) in children {
        let output = child.wait_with_output()?;
        let text = String::from_utf8_lossy(&output.stdout).into_owned();
        if !output.status.success() {
            return Err(format!("a contender failed: {text}\n{}", String::from_utf8_lossy(&output.stderr)).into());
        }
        stdout.push_str(&text);
        if std::env::var_os("DATADIFF_E2E_VERBOSE").is_some() {
            eprint!("{}", String::from_utf8_lossy(&output.stderr));
        }
        let own = text.lines().find_map(|line| line.strip_prefix("peak_rss_kib=")).and_then(|kib| kib.parse().ok());
        let report = std::fs::read_to_string(&report).unwrap_or_default();
        let mut words = report.split_whitespace();
        let timed = words.next().and_then(|kib| kib.parse::<u64>().ok());
        let cpu: Option<f64> = words.map(|seconds| seconds.parse::<f64>().ok()).sum();
        if let Some(cpu) = cpu {
            cpu_seconds = Some(cpu_seconds.unwrap_or(0.0) + cpu);
        }
        if let Some(kib) = timed.or(own) {
            rss_kib = Some(rss_kib.map_or(kib, |max: u64| max.max(kib)));
        }
    }
    Ok(Measured { seconds: started.elapsed().as_secs_f64(), rss_kib, cpu_seconds, stdout })
}

fn this_program(child: &str, spec: &Json) -> Result<Command, Failure> {
    let mut command = Command::new(std::env::current_exe()?);
    command.args(["child", child]).env(SPEC, spec.to_string());
    Ok(command)
}

fn psql_floor(url: &str) -> Command {
    let mut command = Command::new("psql");
    command.args([url, "-X", "-q", "-c", &format!("\\copy ({}) to '/dev/null' (format binary)", select_sql())]);
    command
}

fn reladiff(setup: &Setup) -> Command {
    let start = slot() - Span::days(WINDOW_DAYS);
    let window = format!(
        "updated_at >= '{}+00' AND updated_at < '{}+00'",
        start.format("%Y-%m-%d %H:%M:%S"),
        slot().format("%Y-%m-%d %H:%M:%S")
    );
    let mut command = Command::new("reladiff");
    command.args([&setup.source_url(), "public.events", &setup.replica_url(), "public.events", "-k", "id"]);
    for column in COMPARED {
        command.args(["-c", column]);
    }
    command.args(["-w", &window, "-a", "hashdiff", "--stats"]);
    command
}

fn reladiff_installed() -> bool {
    Command::new("reladiff")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The counts a contender printed as `name=value` words.
fn numbers(text: &str) -> BTreeMap<String, String> {
    text.split_whitespace()
        .filter_map(|word| word.split_once('='))
        .map(|(name, value)| (name.to_owned(), value.to_owned()))
        .collect()
}

/// reladiff's `--stats` lines: `<n> rows exclusive to table A …`, `<n> rows updated`…
fn reladiff_counts(text: &str) -> (Option<u64>, Option<u64>, Option<u64>) {
    let mut found = (None, None, None);
    for line in text.lines() {
        let number = line.split_whitespace().next().and_then(|word| word.replace(',', "").parse::<u64>().ok());
        if line.contains("exclusive to table A") {
            found.0 = number;
        } else if line.contains("exclusive to table B") {
            found.1 = number;
        } else if line.contains("updated") {
            found.2 = number;
        }
    }
    found
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    let middle = values.len() / 2;
    if values.len().is_multiple_of(2) { (values[middle - 1] + values[middle]) / 2.0 } else { values[middle] }
}

fn parent(options: &Options) -> Result<(), Failure> {
    let reladiff_here = options.reladiff && reladiff_installed();
    if options.reladiff && !reladiff_here {
        eprintln!("reladiff is not installed (pip install reladiff psycopg2-binary): skipped");
    }
    let mut described = false;
    println!("select: COPY ({}) TO STDOUT", select_sql());
    let mut table = vec![
        "| rows | contender | wall (median) | × floor | peak RSS (max) | client CPU (median) | notes |".to_owned(),
        "|---:|---|---:|---:|---:|---:|---|".to_owned(),
    ];
    for &rows in &options.rows {
        let setup = Setup::build(rows)?;
        setup.import()?;
        if !described {
            let version: String =
                setup.source_cluster.connect(&setup.names[0])?.query_one("SELECT version()", &[])?.get(0);
            println!("{}\nserver: {version}", machine());
            described = true;
        }
        let spec = setup.spec();
        let expected = (drift_count(rows, 1), drift_count(rows, 2), drift_count(rows, 3));
        let mut contenders: BTreeMap<&str, Vec<Measured>> = BTreeMap::new();
        let mut ratios = Vec::new();
        for round in 0..=options.runs {
            let warm_up = round == 0;
            let mut record = |name: &'static str, measured: Measured| {
                eprintln!(
                    "{rows} rows, {}: {name} {:.2} s, {} KiB, client CPU {:.2} s",
                    if warm_up { "warm-up".to_owned() } else { format!("round {round}") },
                    measured.seconds,
                    measured.rss_kib.unwrap_or(0),
                    measured.cpu_seconds.unwrap_or(f64::NAN),
                );
                if !warm_up {
                    contenders.entry(name).or_default().push(measured.clone());
                }
                measured
            };
            let floors = [
                record("floor: tokio-postgres binary", measure(vec![this_program("floor-async-binary", &spec)?])?),
                record("floor: tokio-postgres text", measure(vec![this_program("floor-async-text", &spec)?])?),
                record("floor: rust-postgres sync binary", measure(vec![this_program("floor-sync-binary", &spec)?])?),
                record(
                    "floor: psql \\copy binary (2 processes)",
                    measure(vec![psql_floor(&setup.source_url()), psql_floor(&setup.replica_url())])?,
                ),
            ];
            let floor = floors.iter().map(|measured| measured.seconds).fold(f64::INFINITY, f64::min);
            let row_diff = record("row_diff (attempt)", measure(vec![this_program("row-diff", &spec)?])?);
            let counts = numbers(&row_diff.stdout);
            let got = |name: &str| counts.get(name).and_then(|value| value.parse::<u64>().ok());
            if (got("missing"), got("extra"), got("changed")) != (Some(expected.0), Some(expected.1), Some(expected.2))
            {
                return Err(format!("row_diff found {counts:?}, expected {expected:?}").into());
            }
            if !warm_up {
                ratios.push(row_diff.seconds / floor);
            }
            let wanted = |name: &str| options.only.as_deref().is_none_or(|only| name.contains(only));
            if wanted("aggregate checks, sides concurrent") {
                let measured = measure(vec![this_program("aggregates-concurrent", &spec)?])?;
                record("aggregate checks, sides concurrent", measured);
            }
            if wanted("aggregate checks, sides sequential") {
                let measured = measure(vec![this_program("aggregates-sequential", &spec)?])?;
                record("aggregate checks, sides sequential", measured);
            }
            if reladiff_here && !warm_up && wanted("reladiff hashdiff") {
                let measured = record("reladiff hashdiff", measure(vec![reladiff(&setup)])?);
                let found = reladiff_counts(&measured.stdout);
                if found != (Some(expected.0), Some(expected.1), Some(expected.2)) {
                    eprintln!("reladiff reported {found:?}, expected {expected:?}:\n{}", measured.stdout);
                }
            }
        }
        let floor_median = {
            let mut best: Vec<f64> = (0..options.runs)
                .map(|round| {
                    contenders
                        .iter()
                        .filter(|(name, _)| name.starts_with("floor"))
                        .map(|(_, runs)| runs[round].seconds)
                        .fold(f64::INFINITY, f64::min)
                })
                .collect();
            median(&mut best)
        };
        table.push(format!(
            "| {rows} | **COPY floor** (fastest client per round) | {floor_median:.2} s | 1.00 | | | the reference |"
        ));
        let order = [
            "floor: tokio-postgres binary",
            "floor: tokio-postgres text",
            "floor: rust-postgres sync binary",
            "floor: psql \\copy binary (2 processes)",
            "row_diff (attempt)",
            "aggregate checks, sides concurrent",
            "aggregate checks, sides sequential",
            "reladiff hashdiff",
        ];
        for name in order {
            let Some(runs) = contenders.get(name) else { continue };
            let mut seconds: Vec<f64> = runs.iter().map(|measured| measured.seconds).collect();
            let wall = median(&mut seconds);
            let rss = runs.iter().filter_map(|measured| measured.rss_kib).max();
            let mut cpu: Vec<f64> = runs.iter().filter_map(|measured| measured.cpu_seconds).collect();
            let cpu = if cpu.is_empty() { "n/a".to_owned() } else { format!("{:.2} s", median(&mut cpu)) };
            let note = if name == "row_diff (attempt)" {
                format!("per-round row_diff / floor: median {:.2}×", median(&mut ratios.clone()))
            } else {
                String::new()
            };
            table.push(format!(
                "| {rows} | {name} | {wall:.2} s | {:.2} | {} | {cpu} | {note} |",
                wall / floor_median,
                rss.map_or("n/a".to_owned(), |kib| format!("{:.1} MiB", kib as f64 / 1024.0)),
            ));
        }
        eprintln!("{}", table.join("\n"));
    }
    println!("{}", table.join("\n"));
    Ok(())
}

/// The machine, for BENCHMARKS.md.
fn machine() -> String {
    let read = |path: &str| std::fs::read_to_string(path).unwrap_or_default();
    let cpuinfo = read("/proc/cpuinfo");
    let model = cpuinfo
        .lines()
        .find_map(|line| line.strip_prefix("model name"))
        .map_or("?", |rest| rest.trim_start_matches([' ', '\t', ':']));
    let memory = read("/proc/meminfo")
        .lines()
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .nth(1)
        .and_then(|kib| kib.parse::<u64>().ok())
        .unwrap_or(0);
    let cores = std::thread::available_parallelism().map_or(0, usize::from);
    let load = read("/proc/loadavg");
    let reladiff = Command::new("reladiff")
        .arg("--version")
        .output()
        .map(|out| String::from_utf8_lossy(&out.stdout).trim().to_owned())
        .unwrap_or_default();
    format!(
        "machine: {cores} cores ({model}), {:.0} GiB RAM, Linux {}, {reladiff}, load average at start {}",
        memory as f64 / 1_048_576.0,
        read("/proc/sys/kernel/osrelease").trim(),
        load.split_whitespace().take(3).collect::<Vec<_>>().join(" "),
    )
}

// ---------------------------------------------------------------------------------------
// Children.

fn child(kind: &str) -> Result<(), Failure> {
    let started = Instant::now();
    let spec: Json = serde_json::from_str(&std::env::var(SPEC)?)?;
    let text = |value: &Json| value.as_str().unwrap_or_default().to_owned();
    match kind {
        "floor-async-binary" | "floor-async-text" | "floor-sync-binary" => {
            let format = if kind.ends_with("text") { "text" } else { "binary" };
            let sql = format!("COPY ({}) TO STDOUT (FORMAT {format})", select_sql());
            let urls = [text(&spec["source_url"]), text(&spec["replica_url"])];
            let bytes = std::thread::scope(|scope| -> Result<u64, Failure> {
                let drains: Vec<_> = urls
                    .iter()
                    .map(|url| {
                        let sql = sql.as_str();
                        scope.spawn(move || {
                            if kind.starts_with("floor-async") { drain_async(url, sql) } else { drain_sync(url, sql) }
                        })
                    })
                    .collect();
                let mut total = 0;
                for drain in drains {
                    total += drain.join().map_err(|_| "a drain panicked")??;
                }
                Ok(total)
            })?;
            println!("bytes={bytes}");
        }
        "row-diff" | "aggregates-concurrent" | "aggregates-sequential" => {
            let backend = &spec["backend"];
            let config = BackendConfig {
                host: text(&backend["host"]),
                port: backend["port"].as_u64().unwrap_or(0) as u16,
                user: text(&backend["user"]),
                password: text(&backend["password"]),
                dbname: text(&backend["dbname"]),
                ddl_user: text(&backend["ddl_user"]),
                ddl_password: text(&backend["ddl_password"]),
                ..BackendConfig::default()
            };
            let store = datadiff::runner::open_backend(config)?;
            eprintln!("backend open after {:.3} s", started.elapsed().as_secs_f64());
            let db_conn = |side: &Json| DbConn {
                host: Some(text(&side["host"])),
                port: side["port"].as_u64().map(|port| port as u16),
                user: Some(SUPERUSER.to_owned()),
                password: Some(Secret::new(text(&side["password"]))),
                dbname: Some(text(&side["dbname"])),
                ..DbConn::default()
            };
            let connections = Connections::new(Environment::default())
                .with_tap(ROW_DIFF_TAP, db_conn(&spec["source"]))
                .with_tap(AGGREGATE_TAP, db_conn(&spec["source"]))
                .with_target("postgres", db_conn(&spec["replica"]));
            let tap = if kind == "row-diff" { ROW_DIFF_TAP } else { AGGREGATE_TAP };
            let filter = DefinitionFilter {
                check: Some(CheckDefinition::full_check_name_of("postgres", tap, "public", "events")),
                ..DefinitionFilter::default()
            };
            let stored = store.definitions(&filter)?.pop().ok_or("the benchmark definition is not imported")?;
            let options = ExecutionOptions {
                concurrent_sides: kind != "aggregates-sequential",
                clock: Clock::at(slot() + Span::minutes(5)),
                ..ExecutionOptions::default()
            };
            eprintln!("definition read after {:.3} s", started.elapsed().as_secs_f64());
            let summary =
                execute(&store, &connections, &stored, slot(), StartKind::Scheduled { force: true }, &options)?;
            eprintln!("executed after {:.3} s", started.elapsed().as_secs_f64());
            print!("status={:?}", summary.status);
            if let Some(result) = summary.results.iter().find(|result| result.check_type == ResultType::RowDiff) {
                for name in ["missing", "extra", "changed", "rows"] {
                    print!(" {name}={}", result.target_value[name].as_str().unwrap_or("?"));
                }
                let seconds =
                    result.source_query_seconds.unwrap_or(0.0).max(result.target_query_seconds.unwrap_or(0.0));
                print!(" stream_seconds={seconds:.3}");
            }
            if let Some(reason) = &summary.reason {
                print!(" reason={}", reason.replace(' ', "_"));
            }
            println!();
        }
        other => return Err(format!("unknown child {other}").into()),
    }
    println!("peak_rss_kib={}", peak_rss_kib());
    Ok(())
}

/// rust-postgres' synchronous `copy_out`, read to nowhere.
fn drain_sync(url: &str, sql: &str) -> Result<u64, Failure> {
    let mut client = postgres::Client::connect(url, postgres::NoTls)?;
    let mut reader = client.copy_out(sql)?;
    let mut total = 0u64;
    loop {
        let chunk = reader.fill_buf()?;
        if chunk.is_empty() {
            return Ok(total);
        }
        let length = chunk.len();
        total += length as u64;
        reader.consume(length);
    }
}

/// tokio-postgres in one `block_on` on a single-threaded runtime, read to nowhere.
fn drain_async(url: &str, sql: &str) -> Result<u64, Failure> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_io().enable_time().build()?;
    runtime.block_on(async {
        let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls).await?;
        let connection = tokio::spawn(connection);
        let stream = client.copy_out(sql).await?;
        let mut stream = std::pin::pin!(stream);
        let mut total = 0u64;
        while let Some(chunk) = std::future::poll_fn(|cx| stream.as_mut().poll_next(cx)).await {
            total += chunk?.len() as u64;
        }
        drop(client);
        let _ = connection.await;
        Ok(total)
    })
}

fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            let line = status.lines().find(|line| line.starts_with("VmHWM:"))?.to_owned();
            line.split_whitespace().nth(1)?.parse().ok()
        })
        .unwrap_or(0)
}
