//! Throughput of the streaming readers against the `COPY … TO STDOUT` floor, on a throwaway
//! cluster: `cargo run --release -p datadiff-audit --example stream_throughput [ROWS [RUNS]]`.
//!
//! Builds two databases with the same ROWS-row table of six columns (bigint key, integer,
//! numeric(12,2), text, varchar, timestamptz), then measures, best of RUNS (default 5):
//!
//! * `copy text` / `copy binary`: `COPY (SELECT … ORDER BY id) TO STDOUT` read into nothing
//!   (the floor), one side, then both sides concurrently;
//! * `psql \copy … to '/dev/null'` (libpq's floor), when `psql` is installed;
//! * `reader`: one side through `RowStream` (binary COPY decoded into `EncodedRow`s), and
//!   the same with the key column only (the pipeline's own cost);
//! * `readers + merge`: both sides concurrently through `merge` and `Summary`;
//! * `audit`: the whole `datadiff audit` flow (connect, inventory, snapshots, scan), with its
//!   peak RSS.
//!
//! Not a test: numbers for BENCHMARKS.md and for row_diff's 1.3× target.

#![allow(clippy::print_stdout, reason = "a benchmark program prints its figures")]

use std::io::Read;
use std::time::{Duration, Instant};

use datadiff_access::stream::{self, RowQuery, RowStream, StreamOptions};
use datadiff_access::{Dsn, Environment, Session, SessionSettings, TableName};
use datadiff_audit::{AuditOptions, audit};
use datadiff_diff_core::merge::{Key, Summary, merge};
use datadiff_testkit::{Cluster, Database, SUPERUSER};

const SELECT: &str = "SELECT id, account, amount, kind, note, created_at FROM public.events ORDER BY id";

fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let rows: i64 = std::env::args().nth(1).map(|text| text.parse()).transpose()?.unwrap_or(1_000_000);
    let runs: usize = std::env::args().nth(2).map(|text| text.parse()).transpose()?.unwrap_or(5);
    let cluster = Cluster::start()?;
    let source = cluster.fresh_database()?;
    let target = cluster.fresh_database()?;
    let started = Instant::now();
    for database in [&source, &target] {
        database.client()?.batch_execute(&format!(
            "CREATE TABLE public.events (id bigint PRIMARY KEY, account integer, amount numeric(12,2), \
             kind text, note varchar(80), created_at timestamptz); \
             INSERT INTO public.events SELECT g, g % 1000, (g % 100000) / 100.0, 'kind-' || (g % 7), \
             'note for event number ' || g, timestamptz '2026-01-01' + g * interval '1 second' \
             FROM generate_series(1, {rows}) g;"
        ))?;
        database.client()?.batch_execute("VACUUM ANALYZE public.events")?;
    }
    eprintln!("built 2 x {rows} rows in {:.1?}", started.elapsed());
    let url = |database: &Database<'_>| database.url(SUPERUSER, cluster.superuser_password());
    let (source_url, target_url) = (url(&source), url(&target));
    let connect = |text: &str, role: &str| -> Result<Session, datadiff_access::Error> {
        Session::connect(&Dsn::parse(role, text, &Environment::default())?, SessionSettings::audit())
    };

    // Warm both tables into the page cache and shared buffers.
    for text in [&source_url, &target_url] {
        copy_to_nothing(&mut connect(text, "source")?, "text")?;
    }

    let report = |name: &str, best: Duration, sides: i64| {
        let per_side = rows as f64 / best.as_secs_f64();
        println!("{name:<28} {:>8.3} s  {:>12.0} rows/s per side  ({sides} side(s))", best.as_secs_f64(), per_side);
    };

    for format in ["text", "binary"] {
        let mut session = connect(&source_url, "source")?;
        let best = best_of(runs, || copy_to_nothing(&mut session, format).map(|_| ()))?;
        report(&format!("copy {format}, one side"), best, 1);
        let mut a = connect(&source_url, "source")?;
        let mut b = connect(&target_url, "target")?;
        let best = best_of(runs, || {
            std::thread::scope(|scope| {
                let left = scope.spawn(|| copy_to_nothing(&mut a, format));
                let right = copy_to_nothing(&mut b, format);
                left.join().map_err(|_| "copy thread panicked")??;
                right.map(|_| ())
            })
        })?;
        report(&format!("copy {format}, both sides"), best, 2);
    }

    // psql's \copy into /dev/null, when psql is installed: libpq's floor.
    for format in ["text", "binary"] {
        let psql = |url: &str| {
            std::process::Command::new("psql")
                .arg(url)
                .args(["-q", "-c", &format!("\\copy ({SELECT}) to '/dev/null' (format {format})")])
                .status()
        };
        if psql(&source_url).is_err() {
            break;
        }
        let best = best_of(runs, || match psql(&source_url) {
            Ok(status) if status.success() => Ok(()),
            _ => Err("psql failed"),
        })?;
        report(&format!("psql \\copy {format}, one side"), best, 1);
        let best = best_of(runs, || {
            let (a, b) = std::thread::scope(|scope| {
                let left = scope.spawn(|| psql(&source_url));
                (left.join(), psql(&target_url))
            });
            match (a, b) {
                (Ok(Ok(a)), Ok(b)) if a.success() && b.success() => Ok(()),
                _ => Err("psql failed"),
            }
        })?;
        report(&format!("psql \\copy {format}, both"), best, 2);
    }

    let table: TableName = "public.events".parse()?;
    let mut source_session = connect(&source_url, "source")?;
    let mut target_session = connect(&target_url, "target")?;
    let source_columns = stream::read_columns(&mut source_session, &table)?;
    let target_columns = stream::read_columns(&mut target_session, &table)?;
    let (source_key, target_key) = stream::plan_key(&source_columns[0], &target_columns[0], "target")?;
    let mut source_decoders = Vec::new();
    let mut target_decoders = Vec::new();
    for (source_column, target_column) in source_columns[1..].iter().zip(&target_columns[1..]) {
        let (a, b) = stream::plan_pair(source_column, target_column, "target")?;
        source_decoders.push((source_column.name.clone(), a));
        target_decoders.push((target_column.name.clone(), b));
    }
    let source_query = RowQuery::for_table(&table, "id", source_key, source_decoders, None);
    let target_query = RowQuery::for_table(&table, "id", target_key, target_decoders, None);

    let best = best_of(runs, || {
        std::thread::scope(|scope| {
            let stream = RowStream::spawn(scope, &mut source_session, source_query.clone(), StreamOptions::default());
            let mut count = 0i64;
            for row in stream {
                row?;
                count += 1;
            }
            assert_eq!(count, rows);
            Ok::<_, Box<dyn std::error::Error + Send + Sync>>(())
        })
    })?;
    report("reader, one side", best, 1);

    // Only the key: the pipeline's own cost per row (COPY, parsing, batching, channel).
    let key_only = RowQuery::new("SELECT id FROM public.events ORDER BY id", "id", source_key, vec![]);
    let best = best_of(runs, || {
        std::thread::scope(|scope| {
            let query = key_only.clone();
            let stream = RowStream::spawn(scope, &mut source_session, query, StreamOptions::default());
            let count = stream.map(|row| row.map(|_| 1i64)).sum::<Result<i64, _>>()?;
            assert_eq!(count, rows);
            Ok::<_, Box<dyn std::error::Error + Send + Sync>>(())
        })
    })?;
    report("reader, key column only", best, 1);

    let best = best_of(runs, || {
        std::thread::scope(|scope| {
            let left = RowStream::spawn(scope, &mut source_session, source_query.clone(), StreamOptions::default());
            let right = RowStream::spawn(scope, &mut target_session, target_query.clone(), StreamOptions::default());
            let mut summary: Summary<Key> = Summary::new(20, vec![]);
            for change in merge(left, right) {
                summary.record(&change?);
            }
            assert_eq!(summary.matched, rows as u64);
            Ok::<_, Box<dyn std::error::Error + Send + Sync>>(())
        })
    })?;
    report("readers + merge, both sides", best, 2);

    // The ratio that matters for row_diff (SPEC §11: within 1.3x of the COPY floor), measured
    // as interleaved pairs so that both halves of a pair see the same machine load.
    let mut floor_a = connect(&source_url, "source")?;
    let mut floor_b = connect(&target_url, "target")?;
    let mut ratios = Vec::new();
    for _ in 0..runs {
        let floor = best_of(1, || {
            std::thread::scope(|scope| {
                let left = scope.spawn(|| copy_to_nothing(&mut floor_a, "binary"));
                let right = copy_to_nothing(&mut floor_b, "binary");
                left.join().map_err(|_| "copy thread panicked")??;
                right.map(|_| ())
            })
        })?;
        let ours = best_of(1, || {
            std::thread::scope(|scope| {
                let left = RowStream::spawn(scope, &mut source_session, source_query.clone(), StreamOptions::default());
                let right =
                    RowStream::spawn(scope, &mut target_session, target_query.clone(), StreamOptions::default());
                let mut summary: Summary<Key> = Summary::new(20, vec![]);
                for change in merge(left, right) {
                    summary.record(&change?);
                }
                Ok::<_, Box<dyn std::error::Error + Send + Sync>>(())
            })
        })?;
        ratios.push(ours.as_secs_f64() / floor.as_secs_f64());
    }
    ratios.sort_by(f64::total_cmp);
    println!(
        "readers + merge / binary COPY floor, both sides, interleaved: median {:.2}x (min {:.2}x, max {:.2}x, {} pairs)",
        ratios[ratios.len() / 2],
        ratios[0],
        ratios[ratios.len() - 1],
        ratios.len()
    );

    let mut options = AuditOptions::new(source_url.clone(), target_url.clone(), table.clone());
    options.cutover_ready = true;
    options.max_rows = rows.max(1);
    let best = best_of(runs, || audit(&options, &Environment::default(), &mut |_| {}).map(|_| ()))?;
    report("audit, end to end", best, 2);
    println!("peak RSS of this process: {} KiB", peak_rss_kib());
    Ok(())
}

/// Streams `COPY (SELECT …) TO STDOUT` in `format` and discards it; returns the bytes read.
fn copy_to_nothing(session: &mut Session, format: &str) -> Result<u64, Box<dyn std::error::Error + Send + Sync>> {
    let sql = format!("COPY ({SELECT}) TO STDOUT (FORMAT {format})");
    let mut reader = session.client().copy_out(sql.as_str())?;
    let mut buffer = vec![0u8; 64 * 1024];
    let mut total = 0u64;
    loop {
        let read = reader.read(&mut buffer)?;
        if read == 0 {
            return Ok(total);
        }
        total += read as u64;
    }
}

fn best_of<E>(runs: usize, mut work: impl FnMut() -> Result<(), E>) -> Result<Duration, E> {
    let mut best = Duration::MAX;
    for _ in 0..runs {
        let started = Instant::now();
        work()?;
        best = best.min(started.elapsed());
    }
    Ok(best)
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
