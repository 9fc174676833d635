//! Steady-state merging allocates nothing per row: merging 100 k and 1 M identical rows
//! allocates the same number of times.
//!
//! A separate test binary because it installs a counting global allocator; counts are
//! per thread so the harness's own threads do not disturb them.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::convert::Infallible;

use datadiff_diff_core::merge::{DigestRow, Summary, merge};

struct Counting;

thread_local! {
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

// SAFETY: delegates every call to the system allocator unchanged; only counts.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = ALLOCATIONS.try_with(|count| count.set(count.get() + 1));
        // SAFETY: the caller upholds `alloc`'s contract, which we pass on.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` was allocated by `System` with `layout` in `alloc` above.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let _ = ALLOCATIONS.try_with(|count| count.set(count.get() + 1));
        // SAFETY: as for `dealloc`, and `new_size` comes from the caller's contract.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

fn allocations_merging(rows: i64) -> u64 {
    let side = move || (0..rows).map(|key| Ok::<_, Infallible>(DigestRow { key, digest: [7u8; 32] }));
    let before = ALLOCATIONS.with(Cell::get);
    let mut summary = Summary::new(20, Vec::new());
    for change in merge(side(), side()) {
        match change {
            Ok(change) => summary.record(&change),
            Err(error) => panic!("identical ordered streams cannot fail: {error}"),
        }
    }
    assert_eq!(summary.matched, rows as u64);
    ALLOCATIONS.with(Cell::get) - before
}

#[test]
fn merging_ten_times_more_rows_allocates_no_more() {
    // The counter works: a real allocation is seen.
    let before = ALLOCATIONS.with(Cell::get);
    let probe: Vec<u64> = Vec::with_capacity(16);
    std::hint::black_box(&probe);
    assert!(ALLOCATIONS.with(Cell::get) > before, "the counting allocator must see allocations");

    let small = allocations_merging(100_000);
    let large = allocations_merging(1_000_000);
    assert_eq!(small, large, "allocations must not grow with the number of rows");
}
