//! Memory stays flat: the audit of a 1,000,000-row table pair peaks at about the same RSS as
//! the audit of a 100,000-row pair, well under 64 MiB.
//!
//! Peak RSS is per process, so each audit runs in a child process: this test binary run
//! again with only [`child_audit_reports_its_peak_rss`] selected and the DSNs in the
//! environment. Run alone (no DSNs given), that test audits a small pair of its own.

use std::process::Command;

use datadiff_access::Environment;
use datadiff_audit::{AuditOptions, Status, audit};

use crate::support::Pair;

const CHILD_SOURCE: &str = "DATADIFF_MEMORY_SOURCE";
const CHILD_REPLICA: &str = "DATADIFF_MEMORY_REPLICA";

fn table_sql(rows: i64) -> String {
    format!(
        "CREATE TABLE public.events (id bigint PRIMARY KEY, account integer, amount numeric(12,2), \
         kind text, note varchar(80), created_at timestamptz); \
         INSERT INTO public.events SELECT g, g % 1000, (g % 100000) / 100.0, 'kind-' || (g % 7), \
         'note for event number ' || g, timestamptz '2026-01-01' + g * interval '1 second' \
         FROM generate_series(1, {rows}) g; ANALYZE public.events;"
    )
}

/// Peak resident set size of this process, in KiB.
fn peak_rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|line| line.starts_with("VmHWM:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

#[test]
#[allow(clippy::print_stdout, reason = "the parent process reads the figure from stdout")]
fn child_audit_reports_its_peak_rss() {
    let given = std::env::var(CHILD_SOURCE).ok().zip(std::env::var(CHILD_REPLICA).ok());
    let small;
    let (source, replica) = match given {
        Some(dsns) => dsns,
        None => {
            small = Pair::same(&table_sql(1_000));
            (crate::support::superuser_url(&small.source), crate::support::superuser_url(&small.replica))
        }
    };
    let mut options = AuditOptions::new(source, replica, "public.events".parse().unwrap());
    options.cutover_ready = true;
    let report = audit(&options, &Environment::default(), &mut |_| {}).unwrap();
    assert_eq!(report.status, Status::Pass);
    println!("audited_rows={} peak_rss_kib={}", report.source_rows, peak_rss_kib());
}

fn audit_in_child(pair: &Pair) -> (u64, u64) {
    let output = Command::new(std::env::current_exe().unwrap())
        .args(["memory::child_audit_reports_its_peak_rss", "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD_SOURCE, crate::support::superuser_url(&pair.source))
        .env(CHILD_REPLICA, crate::support::superuser_url(&pair.replica))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "child failed: {stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    // The harness may print the test's name on the same line first.
    let line = stdout.lines().find_map(|line| line.find("audited_rows=").map(|at| &line[at..])).unwrap();
    let mut fields =
        line.split_whitespace().take(2).map(|field| field.split('=').nth(1).unwrap().parse::<u64>().unwrap());
    (fields.next().unwrap(), fields.next().unwrap())
}

#[test]
fn memory_stays_flat_from_100k_to_1m_rows() {
    let small = Pair::same(&table_sql(100_000));
    let large = Pair::same(&table_sql(1_000_000));
    let (small_rows, small_kib) = audit_in_child(&small);
    let (large_rows, large_kib) = audit_in_child(&large);
    assert_eq!((small_rows, large_rows), (100_000, 1_000_000));
    eprintln!("peak RSS: 100k rows {small_kib} KiB, 1M rows {large_kib} KiB");
    assert!(large_kib < 64 * 1024, "peak RSS {large_kib} KiB for 1M rows exceeds 64 MiB");
    assert!(
        large_kib < small_kib + 8 * 1024,
        "peak RSS grew from {small_kib} KiB (100k rows) to {large_kib} KiB (1M rows): memory is not flat"
    );
}
