//! End-to-end benchmark (SPEC §11): on the same source and replica tables, in one run, the
//! COPY floor, `row_diff`, `datadiff audit`, the aggregate checks (sides concurrent and
//! sequential) and `reladiff` hashdiff when it is installed — wall time, bytes moved, peak
//! RSS and client CPU of each, optionally over a rate-limited link.
//!
//! ```text
//! cargo bench --bench e2e -- [--rows 1000000,5000000] [--runs 3] [--link none|100mbit|1gbit]
//!     [--drift 0,0.03] [--strategies stream,segments,auto] [--reladiff-threads 1,4]
//!     [--no-reladiff] [--only NAME] [--skip NAME,NAME] [--baseline PATH]
//!     [--key-types int,uuid,text,timestamp] [--no-warm-up]
//! ```
//!
//! Without `--rows` it runs one small size (100,000 rows, one run) so that a plain
//! `cargo bench` stays short; CI only compiles it (`cargo bench --no-run`).
//!
//! # Options
//!
//! * `--rows N,M` — table sizes, one setup each; `--runs R` — measured rounds per size;
//!   `--no-warm-up` — no unmeasured first round (at 100 M rows a round takes most of an hour).
//!   Rows are one second apart in `updated_at` up to 10 M rows and closer above, so that
//!   row_diff's window holds every row at any size.
//! * `--link RATE` — `none` (the default: the host's loopback, unshaped) or a rate such as
//!   `100mbit` or `1gbit` (`<N>mbit`, `<N>gbit`). With a rate, the program re-executes itself
//!   under `unshare -n` (root is needed): inside a private network namespace it brings `lo`
//!   up, gives it a second address (192.0.2.10, which the servers listen on, so that clients
//!   see a remote address as they would a remote server) and shapes it with
//!   `tc qdisc add dev lo root tbf rate RATE burst B latency 100ms`,
//!   then runs the whole benchmark there — both clusters and every contender — so that every
//!   byte between a client and a server, both directions, crosses that one qdisc. `ip` and
//!   `tc` (iproute2) and `unshare` (util-linux) must be installed; the program says so when
//!   one is missing. Everything a contender needs (psql, the reladiff virtualenv on `PATH`)
//!   must be installed before: the namespace has no other network.
//!   * **burst** `B` = the larger of 256 KiB (4 × the loopback's 64 KiB MTU) and 10 ms of
//!     traffic at the rate (1.25 MB at 1 Gbit/s). tbf drops a packet larger than its bucket,
//!     and loopback (GSO) hands it packets of up to 64 KiB, so the bucket must hold several;
//!     at 1 Gbit/s it must also refill across a kernel timer tick, which 10 ms of traffic
//!     covers.
//!   * **latency** 100 ms: the queue holds 100 ms of traffic before tbf drops, deep enough
//!     that TCP on the shaped loopback sees no drops (checked: `dropped 0`), so the link is
//!     a clean, bandwidth-limited path. No propagation delay is added (the kernel this was
//!     written on has no `netem`: `CONFIG_NET_SCH_NETEM` is not set): a round trip stays a
//!     few microseconds plus queueing, which favours chatty clients against a real WAN.
//! * `--drift 0,0.03` — which replica tables the contenders compare with the source:
//!   `0.03` (the default) the drifted `public.events`, `0` an identical copy
//!   `public.events_same` (built only when asked). Each contender but the COPY floors runs
//!   on every table listed; the floors run once per round, on the first table listed (the
//!   bytes to stream do not depend on the drift).
//! * `--strategies stream,segments,auto` — run each datadiff contender (`row_diff`, `audit`)
//!   once per strategy, named `… [strategy]`: the audit with `--strategy NAME`, row_diff's
//!   definition with `RowDiffSettings::with_strategy` (built by the one function
//!   `strategy_arguments`). Without the option the contenders run with the defaults and no
//!   extra argument (`auto`), as a user's would.
//! * `--reladiff-threads 1,4` — one reladiff contender per thread count (`-j N`); without it,
//!   one with reladiff's default (1 thread per database).
//! * `--no-reladiff`; `--only NAME` — only the aggregate checks, audit and reladiff
//!   contenders whose name contains NAME (the floors and row_diff always run, as before);
//!   `--skip NAME,NAME` — leave out every contender whose name contains one of them, or
//!   whose `<tables>: <name>` does (`--skip "drift: reladiff"`: reladiff on the identical
//!   tables only), e.g. `--skip aggregate` on a slow link, `--skip floor` where streaming
//!   the table once would take longer than the rest (the `× floor` column is then empty).
//! * `--baseline PATH` — a `datadiff` binary built from another commit (`cargo build
//!   --release --bin datadiff` in a worktree of it), to measure a regression in one run: each
//!   datadiff contender that goes through the binary runs twice per round, once with this
//!   build's binary and once with PATH, named `… (baseline)`, one right after the other (the
//!   baseline first in even rounds, this build first in odd ones, so neither always finds the
//!   caches the other warmed). That is `datadiff audit` for every strategy, and `row_diff
//!   (datadiff run)`: the same row_diff definition forced by `run_data_diff_checks` (see
//!   below). The in-process `row_diff (attempt)` links this build's library and has no
//!   baseline. The notes of a contender with a baseline give the per-round ratios
//!   this build / baseline and their median. The baseline must read the same backend schema
//!   (the benchmark migrates it with this build) and take the same `audit` and `run`
//!   arguments.
//! * `--key-types int,uuid,text` — besides the integer-keyed tables (`int`, always built and
//!   run), copies keyed by a uuid (`public.events_uuid`, `id uuid`: `md5('event-' || g)::uuid`)
//!   and by text (`public.events_text`, `id text`: `'customer-' || lpad(g, 12, '0')`, keys
//!   sharing a long prefix, in the database's default collation, `C` here), and with
//!   `timestamp` by an instant (`public.events_timestamp`, `id timestamptz`: one second after
//!   another from 2020-01-01 UTC) — the same rows and
//!   the same drift plants, keyed by a function of the integer key (replica tables
//!   `events_uuid`, `events_same_uuid`, …). Only the `datadiff audit` contenders run on them,
//!   named `… (uuid key)` and `… (text key)`; their notes give the per-round ratios of time and
//!   bytes to the same contender on the integer-keyed tables (`× int key`), same run, same
//!   round. The drift's runs of three neighbouring ids are scattered in the uuid key's order
//!   (300 differing regions per million rows against the integer key's 100); `uuid-runs`
//!   (`public.events_uuid_runs`, `… (uuid key, drift in runs)`) keys ten neighbouring ids by
//!   neighbouring uuids, so that the uuid key is compared with the integer key over the same
//!   differing regions.
//! * `DATADIFF_E2E_VERBOSE=1` copies each contender's stderr to ours.
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
//! ids ≡ 2 exist only there, ids ≡ 3 have a different `note`. With `--drift 0` the replica
//! also gets `public.events_same`, row for row the source's table.
//!
//! # What it measures
//!
//! Every contender runs in a child process of its own (this program again, `datadiff`,
//! `psql`, `reladiff`), under `/usr/bin/time` for its peak RSS (`ru_maxrss`, the kernel's
//! VmHWM) and client CPU (user + system); the wall time is the parent's, from spawn to exit.
//! With a link, the bytes moved are the qdisc's `Sent N bytes` counter (`tc -s qdisc show
//! dev lo`) read before the spawn and after the exit: every packet on the namespace's
//! loopback, both directions, headers included — only the contender talks then (the servers
//! keep no other connection). Without a link they are not counted (shaping or counting the
//! host's own loopback would touch everything else on the machine) and print as `—`.
//! Contenders are interleaved within each of `--runs` rounds, after one unmeasured warm-up
//! round (reladiff skips it), and reported as medians; `× floor` divides by the median floor,
//! the notes give the median of the per-round ratios to that round's floor (steadier on a
//! shared machine).
//!
//! * **COPY floor**: both sides' `COPY (<row_diff's SELECT>) TO STDOUT` drained to nowhere,
//!   concurrently, by the fastest client available: tokio-postgres in one `block_on`
//!   (binary and text), rust-postgres' sync `copy_out` (binary), and two `psql \copy … to
//!   '/dev/null'` processes (binary). The floor of a round is the fastest of them.
//! * **row_diff**: one forced attempt of a definition whose only data check is `row_diff`
//!   (compare columns `account, amount, kind, note`), through `datadiff::runner::execute`
//!   with a migrated backend: connections, catalog, preflight, both streams, the merge, the
//!   finish. Its counts are checked against the drift. One definition (its own tap id) per
//!   table and strategy.
//! * **datadiff audit**: the release binary the bench build made (`CARGO_BIN_EXE_datadiff`,
//!   i.e. `target/release/datadiff`): `audit --source … --replica … --table public.events
//!   [--replica-table public.events_same] --key id --columns account,amount,kind,note
//!   --cutover-ready --max-rows 50000000`. Its verdict (BLOCK with the drift, PASS when
//!   identical) and counts are checked.
//! * **row_diff (datadiff run)**, with `--baseline` only: the row_diff definition above
//!   forced by a binary, `run_data_diff_checks --dir <project> --target postgres --tap <its
//!   tap> --force --at <slot + 5 min> --output-format json`, where the project directory the
//!   benchmark writes (`config.yml`, `target_postgres.yml`, one `tap_<id>.yml` per tap, no
//!   tables: the definitions are the ones already imported) points at the same servers and
//!   backend. Its summary's status and the counts its run stored are checked against the
//!   drift. Against `row_diff (attempt)` it adds the CLI's own work: the project's load, the
//!   backend's gate, the tick's overview.
//! * **aggregate checks**: one forced attempt of all eight upstream checks, sides concurrent
//!   (the default) and sequential.
//! * **reladiff**: `reladiff <source> public.events <replica> <replica table> -k id -c account
//!   -c amount -c kind -c note -w <the window> -a hashdiff --stats [-j N]`, default bisection
//!   settings. Its counts are checked too (a mismatch is printed, not fatal).
//! * **digest scan alone: source / replica**: one side's whole-table digest, the segment
//!   overview's `SELECT` for these tables written out (`digest_scan`), by `psql` — the
//!   servers' own hashing, the floor of a segment comparison of identical tables.
//! * **digest scans, both sides at once**: the two run concurrently, as a segment comparison
//!   runs them (on one machine whose two servers share its cores, the floor that comparison
//!   can meet).

#![allow(clippy::print_stdout, reason = "a benchmark program prints its figures")]

use std::collections::BTreeMap;
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use chrono::{DateTime, Duration as Span, TimeZone, Utc};
use datadiff::access::Environment;
use datadiff::config::{DbConn, Secret};
use datadiff::core::{
    attempt::{ResultType, StartKind},
    definition::{CheckDefinition, CheckType, Extensions, RowDiffSettings, SourceType, TargetType},
    segment::Strategy,
};
use datadiff::runner::{Clock, Connections, ExecutionOptions, execute};
use datadiff::store::{BackendConfig, DefinitionFilter, MigrateOptions, SyncScope};
use datadiff_testkit::{Cluster, ClusterOptions, Database, SUPERUSER, quote_ident};
use futures_core::Stream;
use serde_json::{Value as Json, json};

type Failure = Box<dyn std::error::Error + Send + Sync>;
/// (missing, extra, changed) as a contender reported them.
type Counts = (Option<u64>, Option<u64>, Option<u64>);

/// The environment variable carrying a child's instructions (JSON).
const SPEC: &str = "DATADIFF_E2E_SPEC";
/// Set in the copy of this program that runs inside the private network namespace.
const IN_NAMESPACE: &str = "DATADIFF_E2E_IN_NETNS";
/// Window: `[SLOT - 200 days, SLOT)`, around every row.
const WINDOW_DAYS: i64 = 200;
const COMPARED: [&str; 4] = ["account", "amount", "kind", "note"];
const ROW_DIFF_TAP: &str = "bench_row_diff";
const AGGREGATE_TAP: &str = "bench_aggregates";
/// The loopback's MTU: tbf's bucket must hold several such packets.
const LOOPBACK_MTU: u64 = 65_536;

fn slot() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 6, 1, 0, 0, 0).single().unwrap_or_default()
}

fn main() -> Result<(), Failure> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("child") {
        return child(
            args.get(1).map(String::as_str).unwrap_or_default(),
            args.get(2).map(String::as_str).unwrap_or_default(),
        );
    }
    let options = Options::parse(&args)?;
    let meter = match &options.link {
        None => None,
        Some(link) if std::env::var_os(IN_NAMESPACE).is_none() => return enter_namespace(link, &args),
        Some(link) => Some(link.shape_loopback()?),
    };
    parent(&options, meter.as_ref())
}

// ---------------------------------------------------------------------------------------
// STRATEGY WIRING — the one place that says how a `--strategies` entry reaches the
// datadiff contenders.

/// What one `--strategies` entry changes in the datadiff contenders.
struct StrategyArguments {
    /// Extra arguments for `datadiff audit`.
    audit: Vec<String>,
    /// Applied to the row_diff definition's settings before it is imported.
    row_diff: Box<dyn Fn(RowDiffSettings) -> RowDiffSettings>,
}

/// The arguments of `strategy` (`auto`, `stream` or `segments`): `audit --strategy NAME`, and
/// `RowDiffSettings::with_strategy` (`row_diff: {strategy: NAME}` in `datadiff.yml`).
fn strategy_arguments(strategy: &str) -> Result<StrategyArguments, Failure> {
    let parsed: Strategy = strategy.parse().map_err(|error| format!("--strategies: {error}"))?;
    Ok(StrategyArguments {
        audit: vec!["--strategy".to_owned(), parsed.as_str().to_owned()],
        row_diff: Box::new(move |settings| settings.with_strategy(parsed)),
    })
}

// ---------------------------------------------------------------------------------------
// Options.

/// Command-line options of the parent.
struct Options {
    rows: Vec<i64>,
    runs: usize,
    /// `--no-warm-up`: measure from the first round (for sizes where a round takes an hour).
    warm_up: bool,
    reladiff: bool,
    /// Only the contenders whose name contains this (the floors and row_diff always run).
    only: Option<String>,
    /// Contenders whose name contains one of these are left out.
    skip: Vec<String>,
    link: Option<Link>,
    /// The replica tables compared, in order (the first is the floors').
    tables: Vec<Tables>,
    /// `--strategies`; `None`: the datadiff contenders as they always ran.
    strategies: Option<Vec<String>>,
    /// `--reladiff-threads`; `None`: reladiff's default.
    reladiff_threads: Option<Vec<u32>>,
    /// `--baseline`: another build's `datadiff` binary, run beside this build's.
    baseline: Option<PathBuf>,
    /// `--key-types`: the key types of the tables (`int` first, always).
    key_types: Vec<KeyType>,
}

impl Options {
    fn parse(args: &[String]) -> Result<Options, Failure> {
        let mut options = Options {
            rows: vec![100_000],
            runs: 1,
            warm_up: true,
            reladiff: true,
            only: None,
            skip: Vec::new(),
            link: None,
            tables: vec![Tables::Drift],
            strategies: None,
            reladiff_threads: None,
            baseline: None,
            key_types: vec![KeyType::Int],
        };
        let list = |value: Option<&String>, flag: &str| -> Result<Vec<String>, Failure> {
            let value = value.ok_or(format!("{flag} needs a value"))?;
            Ok(value.split(',').map(|item| item.trim().to_owned()).filter(|item| !item.is_empty()).collect())
        };
        let mut args = args.iter();
        while let Some(arg) = args.next() {
            match arg.as_str() {
                "--rows" => {
                    options.rows = list(args.next(), "--rows")?
                        .iter()
                        .map(|n| n.replace('_', "").parse())
                        .collect::<Result<_, _>>()?;
                }
                "--runs" => options.runs = args.next().ok_or("--runs needs a value")?.parse()?,
                "--no-warm-up" => options.warm_up = false,
                "--no-reladiff" => options.reladiff = false,
                "--only" => options.only = Some(args.next().ok_or("--only needs a value")?.clone()),
                "--skip" => options.skip.extend(list(args.next(), "--skip")?),
                "--link" => options.link = Link::parse(args.next().ok_or("--link needs a value")?)?,
                "--drift" => {
                    options.tables = list(args.next(), "--drift")?
                        .iter()
                        .map(|drift| match drift.trim_end_matches('%') {
                            "0" => Ok(Tables::Identical),
                            "0.03" => Ok(Tables::Drift),
                            other => Err(format!("--drift {other}: the tables have 0 or 0.03 (%)")),
                        })
                        .collect::<Result<_, _>>()?;
                }
                "--strategies" => {
                    let strategies = list(args.next(), "--strategies")?;
                    for strategy in &strategies {
                        strategy_arguments(strategy)?;
                    }
                    options.strategies = Some(strategies);
                }
                "--reladiff-threads" => {
                    options.reladiff_threads = Some(
                        list(args.next(), "--reladiff-threads")?.iter().map(|n| n.parse()).collect::<Result<_, _>>()?,
                    );
                }
                "--baseline" => {
                    let path = PathBuf::from(args.next().ok_or("--baseline needs a value")?);
                    if !path.is_file() {
                        return Err(format!("--baseline {}: no such file (a datadiff binary)", path.display()).into());
                    }
                    options.baseline = Some(path);
                }
                "--key-types" => {
                    let mut types = vec![KeyType::Int];
                    for name in list(args.next(), "--key-types")? {
                        let parsed = match name.as_str() {
                            "int" => KeyType::Int,
                            "uuid" => KeyType::Uuid,
                            "uuid-runs" => KeyType::UuidRuns,
                            "text" => KeyType::Text,
                            "timestamp" => KeyType::Timestamp,
                            other => {
                                return Err(
                                    format!("--key-types {other}: int, uuid, uuid-runs, text or timestamp").into()
                                );
                            }
                        };
                        if !types.contains(&parsed) {
                            types.push(parsed);
                        }
                    }
                    options.key_types = types;
                }
                // cargo bench passes --bench to harness = false targets.
                "--bench" => {}
                other => return Err(format!("unknown argument {other}").into()),
            }
        }
        if options.tables.is_empty() || options.rows.is_empty() {
            return Err("--rows and --drift need at least one value".into());
        }
        Ok(options)
    }

    fn skipped(&self, name: &str) -> bool {
        self.skip.iter().any(|skip| name.contains(skip.as_str()))
    }

    /// A contender that `--only` selects (when it applies) and `--skip` keeps.
    fn wanted(&self, name: &str, only_applies: bool) -> bool {
        let selected = !only_applies || self.only.as_deref().is_none_or(|only| name.contains(only));
        selected && !self.skipped(name)
    }

    /// [`Options::wanted`] for a contender on `tables`: `--skip` also matches
    /// `"<tables label>: <name>"`, e.g. `--skip "drift: reladiff"` leaves reladiff out on the
    /// drifted tables only.
    fn wanted_on(&self, tables: Tables, name: &str, only_applies: bool) -> bool {
        self.wanted(name, only_applies) && !self.skipped(&format!("{}: {name}", tables.label()))
    }

    /// The datadiff strategies to run: `None` for the default, as before.
    fn strategies(&self) -> Vec<Option<&str>> {
        match &self.strategies {
            None => vec![None],
            Some(list) => list.iter().map(|strategy| Some(strategy.as_str())).collect(),
        }
    }
}

/// Which replica table the contenders compare with the source's `public.events`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Tables {
    /// `public.events`: 0.03 % of the keys differ.
    Drift,
    /// `public.events_same`: the source's rows.
    Identical,
}

impl Tables {
    fn label(self) -> &'static str {
        match self {
            Tables::Drift => "0.03 % drift",
            Tables::Identical => "identical",
        }
    }

    fn replica_table(self) -> &'static str {
        match self {
            Tables::Drift => "events",
            Tables::Identical => "events_same",
        }
    }

    /// Appended to tap ids.
    fn suffix(self) -> &'static str {
        match self {
            Tables::Drift => "",
            Tables::Identical => "_same",
        }
    }

    /// (missing, extra, changed) for `rows`.
    fn expected(self, rows: i64) -> (u64, u64, u64) {
        match self {
            Tables::Drift => (drift_count(rows, 1), drift_count(rows, 2), drift_count(rows, 3)),
            Tables::Identical => (0, 0, 0),
        }
    }
}

/// The key of a copy of the tables (`--key-types`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum KeyType {
    /// `id bigint`: the integer `g`.
    Int,
    /// `id uuid`: `md5('event-' || g)::uuid`.
    Uuid,
    /// `id uuid` whose neighbouring integers are neighbouring uuids: ten consecutive `g`
    /// share the first 32 bits (of `md5('event-' || g / 10)`), then `g % 10`, then 92 bits
    /// of `md5('event-' || g)`. The drift's runs of three ids (≡ 1, 2, 3 mod 10,000) stay runs
    /// in uuid order, as in the integer key's: the same differing regions, a different key
    /// (whose rows still differ in their first 60 bits, a uuid's segment position).
    UuidRuns,
    /// `id text`: `'customer-' || lpad(g, 12, '0')`.
    Text,
    /// `id timestamptz`: one second after another from 2020-01-01 UTC.
    Timestamp,
}

impl KeyType {
    /// Appended to table names.
    fn suffix(self) -> &'static str {
        match self {
            KeyType::Int => "",
            KeyType::Uuid => "_uuid",
            KeyType::UuidRuns => "_uuid_runs",
            KeyType::Text => "_text",
            KeyType::Timestamp => "_timestamp",
        }
    }

    /// Appended to contender names.
    fn label(self) -> &'static str {
        match self {
            KeyType::Int => "",
            KeyType::Uuid => " (uuid key)",
            KeyType::UuidRuns => " (uuid key, drift in runs)",
            KeyType::Text => " (text key)",
            KeyType::Timestamp => " (timestamptz key)",
        }
    }

    /// The key column's type and its value for the integer `g`.
    fn column(self) -> (&'static str, &'static str) {
        match self {
            KeyType::Int => ("bigint", "g"),
            KeyType::Uuid => ("uuid", "md5('event-' || g)::uuid"),
            KeyType::UuidRuns => (
                "uuid",
                "(left(md5('event-' || (g / 10)), 8) || to_hex(g % 10) || right(md5('event-' || g), 23))::uuid",
            ),
            KeyType::Text => ("text", "'customer-' || lpad(g::text, 12, '0')"),
            KeyType::Timestamp => ("timestamptz", "timestamptz '2020-01-01 00:00:00+00' + g * interval '1 second'"),
        }
    }

    /// The source's table.
    fn source_table(self) -> String {
        format!("events{}", self.suffix())
    }

    /// The replica's table for `tables`.
    fn replica_table(self, tables: Tables) -> String {
        format!("{}{}", tables.replica_table(), self.suffix())
    }
}

/// The tap id of a definition: its kind, tables and strategy.
fn tap_id(base: &str, tables: Tables, strategy: Option<&str>) -> String {
    format!("{base}{}{}", tables.suffix(), strategy.map(|strategy| format!("_{strategy}")).unwrap_or_default())
}

/// The names of the contender for `strategy` (`None`: the plain name).
fn with_strategy(name: &str, strategy: Option<&str>) -> String {
    strategy.map_or_else(|| name.to_owned(), |strategy| format!("{name} [{strategy}]"))
}

// ---------------------------------------------------------------------------------------
// The rate-limited link.

/// `--link RATE`: the shaped loopback of a private network namespace.
#[derive(Debug, Clone)]
struct Link {
    /// As given, in tc's units (`100mbit`).
    rate: String,
    bytes_per_second: u64,
}

impl Link {
    /// `none` → no link; `<N>mbit` or `<N>gbit` → a link.
    fn parse(text: &str) -> Result<Option<Link>, Failure> {
        let text = text.trim().to_ascii_lowercase();
        if text == "none" {
            return Ok(None);
        }
        let (number, unit) = match (text.strip_suffix("mbit"), text.strip_suffix("gbit")) {
            (Some(number), _) => (number, 1_000_000u64),
            (_, Some(number)) => (number, 1_000_000_000u64),
            _ => return Err(format!("--link {text}: none, or a rate such as 100mbit or 1gbit").into()),
        };
        let number: u64 = number.parse().map_err(|_| format!("--link {text}: the rate must be <N>mbit or <N>gbit"))?;
        if number == 0 {
            return Err(format!("--link {text}: the rate must be positive").into());
        }
        Ok(Some(Link { rate: text.clone(), bytes_per_second: number * unit / 8 }))
    }

    /// tbf's bucket: the larger of 4 loopback MTUs and 10 ms of traffic.
    fn burst_bytes(&self) -> u64 {
        (4 * LOOPBACK_MTU).max(self.bytes_per_second / 100)
    }

    fn qdisc(&self) -> Vec<String> {
        ["qdisc", "add", "dev", "lo", "root", "tbf", "rate", &self.rate, "burst", &self.burst_bytes().to_string()]
            .into_iter()
            .chain(["latency", "100ms"])
            .map(str::to_owned)
            .collect()
    }

    /// Inside the namespace: `lo` up and shaped; the meter of its qdisc.
    fn shape_loopback(&self) -> Result<Meter, Failure> {
        let ip = tool("ip")?;
        let tc = tool("tc")?;
        run(Command::new(&ip).args(["link", "set", "dev", "lo", "up"]))?;
        // The servers listen on an address that is not a loopback one, as remote servers do,
        // so that `auto` probes the link instead of taking a loopback for this machine (its
        // traffic still crosses `lo`, and the qdisc).
        run(Command::new(&ip).args(["addr", "add", &format!("{SHAPED_ADDRESS}/32"), "dev", "lo"]))?;
        run(Command::new(&tc).args(self.qdisc()))?;
        let meter = Meter { tc };
        let shown = meter.show()?;
        let first = shown.lines().next().unwrap_or_default();
        println!("link: {} (private network namespace; `tc {}`)", first.trim(), self.qdisc().join(" "));
        Ok(meter)
    }
}

/// The servers' address inside the shaped namespace (TEST-NET-1, on `lo`).
const SHAPED_ADDRESS: std::net::Ipv4Addr = std::net::Ipv4Addr::new(192, 0, 2, 10);

/// Re-runs this program under `unshare -n`, where `main` shapes the loopback.
fn enter_namespace(link: &Link, args: &[String]) -> Result<(), Failure> {
    let unshare = tool("unshare")?;
    tool("ip")?;
    tool("tc")?;
    eprintln!("--link {}: running the benchmark in a private network namespace (unshare -n)", link.rate);
    let status = Command::new(unshare)
        .arg("-n")
        .arg("--")
        .arg(std::env::current_exe()?)
        .args(args)
        .env(IN_NAMESPACE, "1")
        .status()?;
    if !status.success() {
        return Err(format!(
            "the benchmark in the network namespace failed ({status}); unshare -n needs root (CAP_SYS_ADMIN)"
        )
        .into());
    }
    Ok(())
}

/// A program on `PATH` or in the system directories root's `PATH` usually has.
fn tool(name: &str) -> Result<PathBuf, Failure> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin", "/sbin", "/usr/bin", "/bin"].map(PathBuf::from))
        .map(|directory| directory.join(name))
        .find(|candidate| candidate.is_file())
        .ok_or_else(|| {
            let package = if name == "unshare" { "util-linux" } else { "iproute2" };
            format!("--link needs `{name}`, which is not installed (apt-get install {package})").into()
        })
}

/// Runs `command` to its end; its stderr in the error.
fn run(command: &mut Command) -> Result<String, Failure> {
    let output = command.output()?;
    if !output.status.success() {
        return Err(format!("{command:?} failed: {}", String::from_utf8_lossy(&output.stderr).trim()).into());
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// The byte counter of the namespace's loopback qdisc.
struct Meter {
    tc: PathBuf,
}

impl Meter {
    fn show(&self) -> Result<String, Failure> {
        run(Command::new(&self.tc).args(["-s", "qdisc", "show", "dev", "lo"]))
    }

    /// `Sent N bytes` of the root qdisc.
    fn sent_bytes(&self) -> Result<u64, Failure> {
        let shown = self.show()?;
        shown
            .split_whitespace()
            .skip_while(|word| *word != "Sent")
            .nth(1)
            .and_then(|number| number.parse().ok())
            .ok_or_else(|| format!("no `Sent N bytes` in tc's output: {shown}").into())
    }
}

// ---------------------------------------------------------------------------------------
// Tables and setup.

/// The row_diff SELECT of one side, as `row_diff` writes it for these tables and window.
fn select_sql(table: &str) -> String {
    let literal = |instant: DateTime<Utc>| format!("'{}+00'::timestamptz", instant.format("%Y-%m-%d %H:%M:%S%.6f"));
    let start = slot() - Span::days(WINDOW_DAYS);
    format!(
        "SELECT \"id\", \"updated_at\", \"account\", \"amount\", \"kind\", \"note\" FROM \"public\".{} \
         WHERE \"updated_at\" >= {} AND \"updated_at\" < {} ORDER BY \"id\"",
        quote_ident(table),
        literal(start),
        literal(slot())
    )
}

/// Which rows a table holds.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Content {
    Source,
    DriftedReplica,
}

fn table_sql(rows: i64, table: &str, content: Content, key_type: KeyType) -> String {
    let (skip, note) = match content {
        Content::DriftedReplica => {
            (1, "CASE WHEN g % 10000 = 3 THEN 'changed note ' || g ELSE 'note for event number ' || g END")
        }
        Content::Source => (2, "'note for event number ' || g"),
    };
    let quoted = quote_ident(table);
    let (key_type, key) = key_type.column();
    let step = row_spacing_micros(rows);
    format!(
        "CREATE UNLOGGED TABLE public.{quoted} (id {key_type} PRIMARY KEY, updated_at timestamptz NOT NULL, \
         account integer NOT NULL, amount numeric(12,2) NOT NULL, kind text NOT NULL, note varchar(80)); \
         INSERT INTO public.{quoted} SELECT {key}, timestamptz '2026-01-01 00:00:00+00' + g * interval '{step} microseconds', \
         g % 1000, (g % 100000) / 100.0, 'kind-' || (g % 7), {note} \
         FROM generate_series(1, {rows}) g WHERE g % 10000 <> {skip}"
    )
}

/// The time between two consecutive rows' `updated_at`, in microseconds: one second up to
/// 10 M rows, closer above so that every row stays inside row_diff's 200-day window (the first
/// row is at 2026-01-01 00:00:01, the slot's window ends on 2026-06-01: 151 days).
fn row_spacing_micros(rows: i64) -> i64 {
    (10_000_000_000_000 / rows.max(1)).min(1_000_000)
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
    fn build(rows: i64, tables: &[Tables], key_types: &[KeyType], shaped: bool) -> Result<Setup, Failure> {
        let options = match shaped {
            true => ClusterOptions::new().listen_on(SHAPED_ADDRESS),
            false => ClusterOptions::new(),
        };
        let source_cluster = Cluster::start_with(options.clone())?;
        let replica_cluster = Cluster::start_with(options)?;
        let started = Instant::now();
        let names = {
            let source = source_cluster.fresh_database()?;
            let replica = replica_cluster.fresh_database()?;
            let backend = source_cluster.fresh_database()?;
            // One statement at a time: VACUUM refuses to run in a multi-statement string.
            let build = |database: &Database<'_>, statements: Vec<String>| -> Result<(), Failure> {
                let mut client = database.client()?;
                for statement in statements {
                    client.batch_execute(&statement)?;
                }
                Ok(())
            };
            let vacuum = |table: &str| format!("VACUUM ANALYZE public.{}", quote_ident(table));
            let mut replica_statements = Vec::new();
            let mut source_statements = Vec::new();
            for &key_type in key_types {
                for &table in tables {
                    let content = if table == Tables::Drift { Content::DriftedReplica } else { Content::Source };
                    let name = key_type.replica_table(table);
                    replica_statements.push(table_sql(rows, &name, content, key_type));
                    replica_statements.push(vacuum(&name));
                }
                let name = key_type.source_table();
                source_statements.push(table_sql(rows, &name, Content::Source, key_type));
                source_statements.push(format!(
                    "CREATE INDEX {} ON public.{} (updated_at)",
                    quote_ident(&format!("{name}_updated_at_idx")),
                    quote_ident(&name)
                ));
                source_statements.push(vacuum(&name));
            }
            std::thread::scope(|scope| -> Result<(), Failure> {
                let replica_build = scope.spawn(|| build(&replica, replica_statements));
                build(&source, source_statements)?;
                replica_build.join().map_err(|_| "the replica build panicked")??;
                Ok(())
            })?;
            [source.name().to_owned(), replica.name().to_owned(), backend.name().to_owned()]
        };
        eprintln!("built {rows} rows per table in {:.1} s", started.elapsed().as_secs_f64());
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

    fn definition(
        &self,
        tap: String,
        tables: Tables,
        checks: Vec<CheckType>,
        row_diff: Option<RowDiffSettings>,
    ) -> CheckDefinition {
        CheckDefinition {
            full_check_name: CheckDefinition::full_check_name_of("postgres", &tap, "public", "events"),
            target_id: "postgres".into(),
            tap_id: tap,
            source_type: SourceType::TapPostgres,
            target_type: TargetType::TargetPostgres,
            source_database: self.names[0].clone(),
            target_database: self.names[1].clone(),
            source_schema: "public".into(),
            source_table: "events".into(),
            target_schema: "public".into(),
            target_table: tables.replica_table().into(),
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
            extensions: Extensions { row_diff, exclude_soft_deleted: false, ..Extensions::default() },
        }
    }

    /// One row_diff definition per table and strategy, one aggregate definition per table.
    fn import(&self, options: &Options) -> Result<(), Failure> {
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
        let mut definitions = Vec::new();
        for &tables in &options.tables {
            for strategy in options.strategies() {
                let settings = match strategy {
                    None => RowDiffSettings::default(),
                    Some(strategy) => (strategy_arguments(strategy)?.row_diff)(RowDiffSettings::default()),
                };
                let tap = tap_id(ROW_DIFF_TAP, tables, strategy);
                definitions.push(self.definition(tap, tables, vec![CheckType::SchemaCompatibility], Some(settings)));
            }
            definitions.push(self.definition(tap_id(AGGREGATE_TAP, tables, None), tables, all.clone(), None));
        }
        store.sync_definitions(&definitions, &SyncScope::all(), slot() - Span::days(1))?;
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------
// Measuring.

/// A finished contender.
#[derive(Debug, Clone)]
struct Measured {
    seconds: f64,
    rss_kib: Option<u64>,
    /// User + system CPU seconds of the client process(es), when `/usr/bin/time` is there.
    cpu_seconds: Option<f64>,
    /// Bytes through the shaped loopback, with a link.
    bytes: Option<u64>,
    stdout: String,
}

/// Runs `commands` concurrently, each under `/usr/bin/time` when it exists; the wall time
/// until the last exits, the largest peak RSS, the summed CPU, the bytes the meter counted.
/// A command exiting with a code outside `accepted` fails the benchmark.
fn measure(meter: Option<&Meter>, commands: Vec<Command>, accepted: &[i32]) -> Result<Measured, Failure> {
    let time = Path::new("/usr/bin/time").exists();
    let directory = tempfile::tempdir()?;
    let sent_before = meter.map(Meter::sent_bytes).transpose()?;
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
        if !output.status.code().is_some_and(|code| accepted.contains(&code)) {
            return Err(format!(
                "a contender failed ({}): {text}\n{}",
                output.status,
                String::from_utf8_lossy(&output.stderr)
            )
            .into());
        }
        stdout.push_str(&text);
        if std::env::var_os("DATADIFF_E2E_VERBOSE").is_some() {
            eprint!("{}", String::from_utf8_lossy(&output.stderr));
        }
        let own = text.lines().find_map(|line| line.strip_prefix("peak_rss_kib=")).and_then(|kib| kib.parse().ok());
        // GNU time writes "Command exited with non-zero status N" before the format's line.
        let report = std::fs::read_to_string(&report).unwrap_or_default();
        let mut words =
            report.lines().rev().find(|line| !line.trim().is_empty()).unwrap_or_default().split_whitespace();
        let timed = words.next().and_then(|kib| kib.parse::<u64>().ok());
        let cpu: Option<f64> = words.map(|seconds| seconds.parse::<f64>().ok()).sum();
        if let Some(cpu) = cpu {
            cpu_seconds = Some(cpu_seconds.unwrap_or(0.0) + cpu);
        }
        if let Some(kib) = timed.or(own) {
            rss_kib = Some(rss_kib.map_or(kib, |max: u64| max.max(kib)));
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    let bytes = match (meter, sent_before) {
        (Some(meter), Some(before)) => Some(meter.sent_bytes()?.saturating_sub(before)),
        _ => None,
    };
    Ok(Measured { seconds, rss_kib, cpu_seconds, bytes, stdout })
}

fn this_program(child: &str, argument: &str, spec: &Json) -> Result<Command, Failure> {
    let mut command = Command::new(std::env::current_exe()?);
    command.args(["child", child, argument]).env(SPEC, spec.to_string());
    Ok(command)
}

fn psql_floor(url: &str, table: &str) -> Command {
    let mut command = Command::new("psql");
    command.args([url, "-X", "-q", "-c", &format!("\\copy ({}) to '/dev/null' (format binary)", select_sql(table))]);
    command
}

/// One side's whole-table digest scan alone, as the segment strategy's overview computes it
/// for these tables (`account`, `amount`, `kind`, `note` compared; `id` the integer key), by
/// `psql`: the server's own hashing with nothing else around it — the floor of a segment
/// comparison of identical tables, which scans each side once.
fn digest_scan(url: &str, table: &str) -> Command {
    let amount = "\"amount\", CASE WHEN \"amount\" < 0 THEN -1 WHEN \"amount\" = 'Infinity' THEN 2 \
                  WHEN \"amount\" = 'NaN' THEN 3 WHEN \"amount\" IS NOT NULL THEN 1 END";
    let row = format!("\"id\", ((\"id\")::bigint >> 32), \"account\", {amount}, \"kind\", \"note\"");
    let sql = format!(
        "SELECT min(row_position), max(row_position), count(*), \
         sum(pg_catalog.hashint8extended(h & 4294967295, pg_catalog.hashint8extended(h >> 32, 25700)))::text \
         FROM (SELECT \"id\"::bigint AS row_position, pg_catalog.hash_record_extended(ROW({row}), 25700) AS h \
         FROM \"public\".{} OFFSET 0) AS hashed",
        quote_ident(table)
    );
    let mut command = Command::new("psql");
    command.args([url, "-X", "-q", "-A", "-t", "-c", &sql]);
    command
}

/// The `datadiff` binary of this build (`cargo bench` builds it beside this program).
fn datadiff_binary() -> Result<PathBuf, Failure> {
    let path = match option_env!("CARGO_BIN_EXE_datadiff") {
        Some(path) => PathBuf::from(path),
        None => {
            let exe = std::env::current_exe()?;
            exe.parent().and_then(Path::parent).map(|directory| directory.join("datadiff")).unwrap_or_default()
        }
    };
    if !path.is_file() {
        return Err(format!("the datadiff binary is not at {} (cargo build --release)", path.display()).into());
    }
    Ok(path)
}

/// The `datadiff` binaries a binary contender runs with in `round`, each with the suffix of
/// its contender's name: this build's (no suffix) and, with `--baseline`, the baseline's
/// (` (baseline)`) — the baseline first in even rounds, this build first in odd ones.
fn builds<'a>(
    binary: &'a Result<PathBuf, Failure>,
    baseline: Option<&'a Path>,
    round: usize,
) -> Result<Vec<(&'a Path, &'static str)>, Failure> {
    let current = binary.as_ref().map_err(|error| error.to_string())?;
    let mut builds = vec![(current.as_path(), "")];
    if let Some(baseline) = baseline {
        builds.push((baseline, " (baseline)"));
        if round.is_multiple_of(2) {
            builds.reverse();
        }
    }
    Ok(builds)
}

fn audit(binary: &Path, setup: &Setup, tables: Tables, key_type: KeyType, extra: &[String]) -> Command {
    let mut command = Command::new(binary);
    command.args(["audit", "--source", &setup.source_url(), "--replica", &setup.replica_url()]);
    let (source, replica) = (key_type.source_table(), key_type.replica_table(tables));
    command.args(["--table", &format!("public.{source}")]);
    if replica != source {
        command.args(["--replica-table", &format!("public.{replica}")]);
    }
    command.args(["--key", "id", "--columns", &COMPARED.join(","), "--cutover-ready", "--max-rows", "50000000"]);
    command.args(extra);
    command
}

/// The environment variables the written project's passwords come from (`env_var[…]`), so
/// that no password is written to a file.
const PROJECT_PASSWORDS: [&str; 4] = [
    "DATADIFF_BENCH_APP_PASSWORD",
    "DATADIFF_BENCH_DDL_PASSWORD",
    "DATADIFF_BENCH_SOURCE_PASSWORD",
    "DATADIFF_BENCH_REPLICA_PASSWORD",
];

/// For `row_diff (datadiff run)`: a project directory pointing at this setup's servers and
/// backend, with the target `postgres` and one tap per row_diff definition, no tables (the
/// definitions are the ones [`Setup::import`] stored).
fn write_project(setup: &Setup, options: &Options, directory: &Path) -> Result<(), Failure> {
    // A JSON string is a YAML scalar: no escaping to get wrong.
    let quoted = |text: &str| Json::from(text).to_string();
    let password = |variable: &str| quoted(&format!("{{{{ env_var['{variable}'] }}}}"));
    let db_conn = |cluster: &Cluster, name: &str, variable: &str| {
        format!(
            "db_conn:\n  host: {}\n  port: {}\n  user: {}\n  password: {}\n  dbname: {}\n",
            quoted(cluster.host()),
            cluster.port(),
            quoted(SUPERUSER),
            password(variable),
            quoted(name)
        )
    };
    let backend = &setup.backend;
    let config = format!(
        "backend_db:\n  host: {}\n  port: {}\n  dbname: {}\n  user: {}\n  password: {}\n  ddl_user: {}\n  ddl_password: {}\n",
        quoted(&backend.host),
        backend.port,
        quoted(&backend.dbname),
        quoted(&backend.user),
        password(PROJECT_PASSWORDS[0]),
        quoted(&backend.ddl_user),
        password(PROJECT_PASSWORDS[1]),
    );
    std::fs::write(directory.join("config.yml"), config)?;
    let target = db_conn(&setup.replica_cluster, &setup.names[1], PROJECT_PASSWORDS[3]);
    std::fs::write(directory.join("target_postgres.yml"), format!("id: postgres\ntype: target-postgres\n{target}"))?;
    for &tables in &options.tables {
        for strategy in options.strategies() {
            let tap = tap_id(ROW_DIFF_TAP, tables, strategy);
            let source = db_conn(&setup.source_cluster, &setup.names[0], PROJECT_PASSWORDS[2]);
            let text = format!("id: {tap}\ntype: tap-postgres\ntarget: postgres\n{source}");
            std::fs::write(directory.join(format!("tap_{tap}.yml")), text)?;
        }
    }
    Ok(())
}

/// `binary run_data_diff_checks`: the forced attempt of the row_diff definition of `tap` in
/// the project `directory` ([`write_project`]), at the `now` of the in-process `row_diff`.
fn run_check(binary: &Path, setup: &Setup, directory: &Path, tap: &str) -> Command {
    let at = (slot() + Span::minutes(5)).to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let mut command = Command::new(binary);
    command.args(["run_data_diff_checks", "--dir"]).arg(directory);
    command.args(["--target", "postgres", "--tap", tap, "--force", "--at", &at, "--output-format", "json"]);
    let passwords = [
        setup.backend.password.as_str(),
        setup.backend.ddl_password.as_str(),
        setup.source_cluster.superuser_password(),
        setup.replica_cluster.superuser_password(),
    ];
    for (variable, password) in PROJECT_PASSWORDS.into_iter().zip(passwords) {
        command.env(variable, password);
    }
    command
}

/// The status of `run_data_diff_checks`' one summary and the (missing, extra, changed) its
/// row_diff stored in the backend.
fn run_counts(setup: &Setup, text: &str) -> Result<(String, Counts), Failure> {
    let report: Json = serde_json::from_str(text).map_err(|error| format!("the run's JSON: {error}"))?;
    let summaries = report["summaries"].as_array().map(Vec::as_slice).unwrap_or_default();
    let [summary] = summaries else {
        return Err(format!("the run printed {} summaries, expected one: {text}", summaries.len()).into());
    };
    let status = summary["status"].as_str().unwrap_or("?").to_owned();
    let run_id = summary["run_id"].as_str().unwrap_or_default();
    let stored: Option<Json> = setup
        .source_cluster
        .connect(&setup.names[2])?
        .query_opt(
            "SELECT target_value FROM public.dd_run_results WHERE run_id::text = $1 AND check_type = 'row_diff'",
            &[&run_id],
        )?
        .map(|row| row.get(0));
    let stored = stored.unwrap_or_default();
    let count = |name: &str| stored[name].as_str().and_then(|value| value.parse().ok());
    Ok((status, (count("missing"), count("extra"), count("changed"))))
}

/// The audit report's verdict and (missing, extra, changed).
fn audit_counts(text: &str) -> Result<(String, Counts), Failure> {
    let report: Json = serde_json::from_str(text).map_err(|error| format!("the audit's report: {error}"))?;
    let count = |name: &str| report[name].as_u64();
    Ok((report["status"].as_str().unwrap_or("?").to_owned(), (count("missing"), count("extra"), count("changed"))))
}

fn reladiff(setup: &Setup, tables: Tables, threads: Option<u32>) -> Command {
    let start = slot() - Span::days(WINDOW_DAYS);
    let window = format!(
        "updated_at >= '{}+00' AND updated_at < '{}+00'",
        start.format("%Y-%m-%d %H:%M:%S"),
        slot().format("%Y-%m-%d %H:%M:%S")
    );
    let mut command = Command::new("reladiff");
    let replica_table = format!("public.{}", tables.replica_table());
    command.args([&setup.source_url(), "public.events", &setup.replica_url(), &replica_table, "-k", "id"]);
    for column in COMPARED {
        command.args(["-c", column]);
    }
    command.args(["-w", &window, "-a", "hashdiff", "--stats"]);
    if let Some(threads) = threads {
        command.args(["-j", &threads.to_string()]);
    }
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
fn reladiff_counts(text: &str) -> Counts {
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
    if values.is_empty() {
        f64::NAN
    } else if values.len().is_multiple_of(2) {
        (values[middle - 1] + values[middle]) / 2.0
    } else {
        values[middle]
    }
}

/// The COPY floors, in the order they run; the first three are children of this program.
const FLOORS: [&str; 4] = [
    "floor: tokio-postgres binary",
    "floor: tokio-postgres text",
    "floor: rust-postgres sync binary",
    "floor: psql \\copy binary (2 processes)",
];
const FLOOR_CHILDREN: [&str; 3] = ["floor-async-binary", "floor-async-text", "floor-sync-binary"];

/// The measured rounds of one size, contenders in the order they first ran.
#[derive(Default)]
struct Results {
    order: Vec<(Tables, String)>,
    /// Each run with the floor of its round (NaN for the floors themselves).
    runs: BTreeMap<(Tables, String), Vec<(Measured, f64)>>,
    /// The fastest floor of each measured round.
    round_floors: Vec<f64>,
}

impl Results {
    /// Logs a run and keeps it unless it is the warm-up's.
    fn record(
        &mut self,
        rows: i64,
        round: usize,
        tables: Tables,
        name: &str,
        measured: Measured,
        floor: f64,
    ) -> Measured {
        eprintln!(
            "{rows} rows, {}, {}: {name} {:.2} s, {}, {} KiB, client CPU {:.2} s",
            if round == 0 { "warm-up".to_owned() } else { format!("round {round}") },
            tables.label(),
            measured.seconds,
            measured.bytes.map_or("— bytes".to_owned(), |bytes| format!("{bytes} bytes")),
            measured.rss_kib.unwrap_or(0),
            measured.cpu_seconds.unwrap_or(f64::NAN),
        );
        if round > 0 {
            let key = (tables, name.to_owned());
            if !self.runs.contains_key(&key) {
                self.order.push(key.clone());
            }
            self.runs.entry(key).or_default().push((measured.clone(), floor));
        }
        measured
    }
}

fn parent(options: &Options, meter: Option<&Meter>) -> Result<(), Failure> {
    let reladiff_here = options.reladiff && reladiff_installed();
    if options.reladiff && !reladiff_here {
        eprintln!("reladiff is not installed (pip install reladiff psycopg2-binary): skipped");
    }
    let binary = datadiff_binary();
    let floor_tables = options.tables[0];
    let mut described = false;
    println!("select: COPY ({}) TO STDOUT", select_sql(floor_tables.replica_table()));
    if let Some(baseline) = &options.baseline {
        println!("baseline: {}", baseline.display());
    }
    if meter.is_none() {
        println!("link: none (the host's loopback, not shaped; bytes moved not counted)");
    }
    let mut table = vec![
        "| rows | tables | contender | wall (median) | × floor | moved (median) | peak RSS (max) | client CPU (median) | notes |"
            .to_owned(),
        "|---:|---|---|---:|---:|---:|---:|---:|---|".to_owned(),
    ];
    for &rows in &options.rows {
        let setup = Setup::build(rows, &options.tables, &options.key_types, meter.is_some())?;
        setup.import(options)?;
        // With `--baseline`: the project `row_diff (datadiff run)` runs in.
        let project = match &options.baseline {
            None => None,
            Some(_) => {
                let directory = tempfile::tempdir()?;
                write_project(&setup, options, directory.path())?;
                Some(directory)
            }
        };
        if !described {
            let version: String =
                setup.source_cluster.connect(&setup.names[0])?.query_one("SELECT version()", &[])?.get(0);
            println!("{}\nserver: {version}", machine());
            described = true;
        }
        let spec = setup.spec();
        let mut results = Results::default();
        let first_round = if options.warm_up { 0 } else { 1 };
        for round in first_round..=options.runs {
            let warm_up = round == 0;
            let mut floors = Vec::new();
            for (name, child) in FLOORS.iter().zip(FLOOR_CHILDREN) {
                if !options.skipped(name) {
                    let command = this_program(child, floor_tables.replica_table(), &spec)?;
                    let measured = measure(meter, vec![command], &[0])?;
                    floors.push(results.record(rows, round, floor_tables, name, measured, f64::NAN).seconds);
                }
            }
            if !options.skipped(FLOORS[3]) {
                let commands = vec![
                    psql_floor(&setup.source_url(), "events"),
                    psql_floor(&setup.replica_url(), floor_tables.replica_table()),
                ];
                let measured = measure(meter, commands, &[0])?;
                floors.push(results.record(rows, round, floor_tables, FLOORS[3], measured, f64::NAN).seconds);
            }
            let floor = floors.iter().copied().fold(f64::INFINITY, f64::min);
            if !warm_up && floor.is_finite() {
                results.round_floors.push(floor);
            }
            for &tables in &options.tables {
                let expected = tables.expected(rows);
                let expected_some = (Some(expected.0), Some(expected.1), Some(expected.2));
                for strategy in options.strategies() {
                    let name = with_strategy("row_diff (attempt)", strategy);
                    if !options.wanted_on(tables, &name, false) {
                        continue;
                    }
                    let command = this_program("row-diff", &tap_id(ROW_DIFF_TAP, tables, strategy), &spec)?;
                    let measured = measure(meter, vec![command], &[0])?;
                    let counts = numbers(&measured.stdout);
                    let got = |name: &str| counts.get(name).and_then(|value| value.parse::<u64>().ok());
                    if (got("missing"), got("extra"), got("changed")) != expected_some {
                        return Err(
                            format!("{name} on {} found {counts:?}, expected {expected:?}", tables.label()).into()
                        );
                    }
                    results.record(rows, round, tables, &name, measured, floor);
                }
                if let Some(project) = &project {
                    for strategy in options.strategies() {
                        let tap = tap_id(ROW_DIFF_TAP, tables, strategy);
                        for (binary, suffix) in builds(&binary, options.baseline.as_deref(), round)? {
                            let name = format!("{}{suffix}", with_strategy("row_diff (datadiff run)", strategy));
                            if !options.wanted(&name, false) {
                                continue;
                            }
                            let command = run_check(binary, &setup, project.path(), &tap);
                            let measured = measure(meter, vec![command], &[0, 1])?;
                            let (status, found) = run_counts(&setup, &measured.stdout)?;
                            let verdict = if tables == Tables::Drift { "FAIL" } else { "PASS" };
                            if status != verdict || found != expected_some {
                                return Err(format!(
                                    "{name} on {}: {status} {found:?}, expected {verdict} {expected:?}",
                                    tables.label()
                                )
                                .into());
                            }
                            results.record(rows, round, tables, &name, measured, floor);
                        }
                    }
                }
                for (strategy, key_type) in options
                    .strategies()
                    .into_iter()
                    .flat_map(|strategy| options.key_types.iter().map(move |key_type| (strategy, *key_type)))
                {
                    if !options.wanted(&with_strategy("datadiff audit", strategy), true) {
                        continue;
                    }
                    let extra = match strategy {
                        None => Vec::new(),
                        Some(strategy) => strategy_arguments(strategy)?.audit,
                    };
                    for (binary, suffix) in builds(&binary, options.baseline.as_deref(), round)? {
                        let name = format!("{}{suffix}{}", with_strategy("datadiff audit", strategy), key_type.label());
                        if !options.wanted_on(tables, &name, true) {
                            continue;
                        }
                        let command = audit(binary, &setup, tables, key_type, &extra);
                        let measured = measure(meter, vec![command], &[0, 1])?;
                        let (status, found) = audit_counts(&measured.stdout)?;
                        let verdict = if tables == Tables::Drift { "BLOCK" } else { "PASS" };
                        if status != verdict || found != expected_some {
                            return Err(format!(
                                "{name} on {}: {status} {found:?}, expected {verdict} {expected:?}",
                                tables.label()
                            )
                            .into());
                        }
                        results.record(rows, round, tables, &name, measured, floor);
                    }
                }
                for (name, url, table) in [
                    ("digest scan alone: source", setup.source_url(), "events"),
                    ("digest scan alone: replica", setup.replica_url(), tables.replica_table()),
                ] {
                    if options.wanted_on(tables, name, true) {
                        let measured = measure(meter, vec![digest_scan(&url, table)], &[0])?;
                        results.record(rows, round, tables, name, measured, floor);
                    }
                }
                // Both sides' digest scans at once, as a segment comparison runs them: on a
                // machine whose two servers share its cores, the floor the comparison meets.
                let both = "digest scans, both sides at once";
                if options.wanted_on(tables, both, true) {
                    let commands = vec![
                        digest_scan(&setup.source_url(), "events"),
                        digest_scan(&setup.replica_url(), tables.replica_table()),
                    ];
                    let measured = measure(meter, commands, &[0])?;
                    results.record(rows, round, tables, both, measured, floor);
                }
                let aggregates = tap_id(AGGREGATE_TAP, tables, None);
                for (name, child) in [
                    ("aggregate checks, sides concurrent", "aggregates-concurrent"),
                    ("aggregate checks, sides sequential", "aggregates-sequential"),
                ] {
                    if options.wanted(name, true) {
                        let measured = measure(meter, vec![this_program(child, &aggregates, &spec)?], &[0])?;
                        results.record(rows, round, tables, name, measured, floor);
                    }
                }
                if reladiff_here && !warm_up {
                    let threads: Vec<Option<u32>> = match &options.reladiff_threads {
                        None => vec![None],
                        Some(list) => list.iter().copied().map(Some).collect(),
                    };
                    for threads in threads {
                        let name = threads
                            .map_or_else(|| "reladiff hashdiff".to_owned(), |n| format!("reladiff hashdiff -j{n}"));
                        if !options.wanted_on(tables, &name, true) {
                            continue;
                        }
                        let measured = measure(meter, vec![reladiff(&setup, tables, threads)], &[0])?;
                        let found = reladiff_counts(&measured.stdout);
                        if found != expected_some {
                            eprintln!(
                                "{name} on {} reported {found:?}, expected {expected:?}:\n{}",
                                tables.label(),
                                measured.stdout
                            );
                        }
                        results.record(rows, round, tables, &name, measured, floor);
                    }
                }
            }
        }
        let floor_median = median(&mut results.round_floors.clone());
        table.push(match floor_median.is_finite() {
            true => format!(
                "| {rows} | {} | **COPY floor** (fastest client per round) | {floor_median:.2} s | 1.00 | | | | the reference |",
                floor_tables.label()
            ),
            false => format!("| {rows} | {} | **COPY floor** | not run (`--skip`) | | | | | |", floor_tables.label()),
        });
        for key in &results.order {
            let runs = &results.runs[key];
            let (tables, name) = key;
            let mut seconds: Vec<f64> = runs.iter().map(|(measured, _)| measured.seconds).collect();
            let wall = median(&mut seconds);
            let mut bytes: Vec<f64> =
                runs.iter().filter_map(|(measured, _)| measured.bytes).map(|b| b as f64).collect();
            let moved = match median(&mut bytes) / 1_000_000.0 {
                _ if bytes.is_empty() => "—".to_owned(),
                small if small < 10.0 => format!("{small:.2} MB"),
                large => format!("{large:.1} MB"),
            };
            let rss = runs.iter().filter_map(|(measured, _)| measured.rss_kib).max();
            let mut cpu: Vec<f64> = runs.iter().filter_map(|(measured, _)| measured.cpu_seconds).collect();
            let cpu = if cpu.is_empty() { "n/a".to_owned() } else { format!("{:.2} s", median(&mut cpu)) };
            let mut ratios: Vec<f64> = runs
                .iter()
                .filter(|(_, floor)| floor.is_finite())
                .map(|(measured, floor)| measured.seconds / floor)
                .collect();
            let mut note = if ratios.is_empty() {
                String::new()
            } else {
                format!("per round / floor: {:.2}×", median(&mut ratios))
            };
            let integer_keyed = [KeyType::Uuid, KeyType::UuidRuns, KeyType::Text, KeyType::Timestamp]
                .into_iter()
                .find_map(|key_type| name.strip_suffix(key_type.label()))
                .and_then(|base| results.runs.get(&(*tables, base.to_owned())));
            if let Some(integer_keyed) = integer_keyed {
                let pairs = || runs.iter().zip(integer_keyed);
                let mut times: Vec<f64> = pairs().map(|((new, _), (int, _))| new.seconds / int.seconds).collect();
                let each: Vec<String> = times.iter().map(|ratio| format!("{ratio:.2}")).collect();
                note.push_str(&format!(
                    "; × int key per round: time {} (median {:.2})",
                    each.join(", "),
                    median(&mut times)
                ));
                let mut moved: Vec<f64> = pairs()
                    .filter_map(|((new, _), (int, _))| Some(new.bytes? as f64 / int.bytes?.max(1) as f64))
                    .collect();
                if !moved.is_empty() {
                    let each: Vec<String> = moved.iter().map(|ratio| format!("{ratio:.2}")).collect();
                    note.push_str(&format!(", bytes {} (median {:.2})", each.join(", "), median(&mut moved)));
                }
            }
            if let Some(baseline) = results.runs.get(&(*tables, format!("{name} (baseline)"))) {
                let mut ratios: Vec<f64> =
                    runs.iter().zip(baseline).map(|((new, _), (old, _))| new.seconds / old.seconds).collect();
                let each: Vec<String> = ratios.iter().map(|ratio| format!("{ratio:.2}")).collect();
                note.push_str(&format!(
                    "; this build / baseline per round: {} (median {:.2})",
                    each.join(", "),
                    median(&mut ratios)
                ));
            }
            let times_floor = match floor_median.is_finite() {
                true => format!("{:.2}", wall / floor_median),
                false => "—".to_owned(),
            };
            table.push(format!(
                "| {rows} | {} | {name} | {wall:.2} s | {times_floor} | {moved} | {} | {cpu} | {note} |",
                tables.label(),
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

/// A child: `kind` and its argument (the floors' replica table, the others' tap id).
fn child(kind: &str, argument: &str) -> Result<(), Failure> {
    let started = Instant::now();
    let spec: Json = serde_json::from_str(&std::env::var(SPEC)?)?;
    let text = |value: &Json| value.as_str().unwrap_or_default().to_owned();
    match kind {
        "floor-async-binary" | "floor-async-text" | "floor-sync-binary" => {
            let format = if kind.ends_with("text") { "text" } else { "binary" };
            // The source's table, and the replica's named by `argument`.
            let copy = |table: &str| format!("COPY ({}) TO STDOUT (FORMAT {format})", select_sql(table));
            let sides = [(text(&spec["source_url"]), copy("events")), (text(&spec["replica_url"]), copy(argument))];
            let bytes = std::thread::scope(|scope| -> Result<u64, Failure> {
                let drains: Vec<_> = sides
                    .iter()
                    .map(|(url, sql)| {
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
            let tap = argument;
            let connections = Connections::new(Environment::default())
                .with_tap(tap, db_conn(&spec["source"]))
                .with_target("postgres", db_conn(&spec["replica"]));
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
