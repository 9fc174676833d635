//! Merge-core throughput: 1 M row pairs of (i64 key, 32-byte digest) and of 6 canonical
//! columns, identical and with 0.1 % and 10 % of keys differing (a third each missing, extra
//! and changed). Rows are generated before timing; the merge borrows them, so the figure is
//! the merge and the summary alone. SPEC §11 target: ≥ 50 M row pairs/s per core for digests.

use std::convert::Infallible;
use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use datadiff::core::merge::{DigestRow, Key, Keyed, Summary, Value, ValuesRow, merge};

const ROWS: i64 = 1_000_000;

/// Builds both sides from one key space; `drift_per_mille` of keys differ: per difference,
/// the key is dropped from the target, added to the target only, or changed.
fn sides<R>(drift_per_mille: i64, make: impl Fn(i64, u8) -> R) -> (Vec<R>, Vec<R>) {
    let mut source = Vec::with_capacity(ROWS as usize);
    let mut target = Vec::with_capacity(ROWS as usize);
    for key in 0..ROWS {
        // A cheap deterministic scatter of differing keys.
        let differs = drift_per_mille > 0 && (key.wrapping_mul(2_654_435_761) % 1000).abs() < drift_per_mille;
        match (differs, key % 3) {
            (false, _) => {
                source.push(make(key, 0));
                target.push(make(key, 0));
            }
            (true, 0) => source.push(make(key, 0)),
            (true, 1) => target.push(make(key, 0)),
            (true, _) => {
                source.push(make(key, 0));
                target.push(make(key, 1));
            }
        }
    }
    (source, target)
}

fn digest_row(key: i64, salt: u8) -> DigestRow<i64> {
    let mut digest = [0u8; 32];
    digest[..8].copy_from_slice(&key.to_le_bytes());
    digest[31] = salt;
    DigestRow { key, digest }
}

fn values_row(key: i64, salt: u8) -> ValuesRow {
    ValuesRow {
        key: Key::Int(key),
        values: vec![
            Value::Int(key),
            Value::text(format!("customer-{key}")),
            Value::Timestamp(1_784_721_600_000_000 + key),
            Value::Bool(key % 2 == 0),
            Value::Null,
            Value::Int(i64::from(salt)),
        ],
    }
}

fn run<R>(source: &[R], target: &[R]) -> u64
where
    R: Keyed + datadiff::core::merge::ChangedFields,
    R::Key: Clone,
{
    let ok = |row| Ok::<_, Infallible>(row);
    let mut summary = Summary::new(20, Vec::new());
    for change in merge(source.iter().map(ok), target.iter().map(ok)) {
        match change {
            Ok(change) => summary.record(&change),
            Err(error) => unreachable!("generated keys are strictly increasing: {error}"),
        }
    }
    summary.matched + summary.difference_count()
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("merge");
    group.sample_size(20);
    for (label, drift) in [("identical", 0), ("drift_0.1pct", 1), ("drift_10pct", 100)] {
        let (source, target) = sides(drift, digest_row);
        group.throughput(Throughput::Elements(ROWS as u64));
        group.bench_with_input(BenchmarkId::new("digest_1M", label), &(), |b, ()| {
            b.iter(|| black_box(run(black_box(&source), black_box(&target))))
        });
        let (source, target) = sides(drift, values_row);
        group.bench_with_input(BenchmarkId::new("values6_1M", label), &(), |b, ()| {
            b.iter(|| black_box(run(black_box(&source), black_box(&target))))
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
