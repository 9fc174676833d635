//! `--jobs N`: independent definitions worked on by N threads (SPEC §4).
//!
//! Each item (a definition with everything its tick does: sweep, retries, due slots) is taken
//! by exactly one worker, which does all of it in order, so two attempts of one definition
//! never run at once and a definition's slots stay oldest first. The results come back in
//! the items' order whatever N and whatever finished first, so a tick's summaries are the same
//! list with one job or eight.

use std::num::NonZeroUsize;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A number of worker threads (`--jobs`, default 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Workers {
    jobs: NonZeroUsize,
}

impl Workers {
    /// `jobs` workers.
    pub(crate) fn new(jobs: NonZeroUsize) -> Workers {
        Workers { jobs }
    }

    /// `work` applied to every item, each item by one worker, results in the items' order.
    /// One job runs on the calling thread. A panicking worker panics the caller (after the
    /// other workers finished their current item and stopped).
    pub(crate) fn map<T: Sync, R: Send>(&self, items: &[T], work: impl Fn(&T) -> R + Sync) -> Vec<R> {
        let jobs = self.jobs.get().min(items.len());
        if jobs <= 1 {
            return items.iter().map(work).collect();
        }
        let next = AtomicUsize::new(0);
        let done: Mutex<Vec<(usize, R)>> = Mutex::new(Vec::with_capacity(items.len()));
        std::thread::scope(|scope| {
            for _ in 0..jobs {
                scope.spawn(|| {
                    loop {
                        let index = next.fetch_add(1, Ordering::SeqCst);
                        let Some(item) = items.get(index) else { break };
                        let result = work(item);
                        done.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push((index, result));
                    }
                });
            }
        });
        let mut done = done.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner);
        done.sort_by_key(|(index, _)| *index);
        done.into_iter().map(|(_, result)| result).collect()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;
    use std::time::Duration;

    use super::*;

    fn workers(jobs: usize) -> Workers {
        Workers::new(NonZeroUsize::new(jobs).unwrap())
    }

    #[test]
    fn results_keep_the_items_order_whatever_the_number_of_jobs() {
        let items: Vec<u64> = (0..23).collect();
        // Later items finish first.
        let work = |item: &u64| {
            std::thread::sleep(Duration::from_millis(23 - item));
            item * 10
        };
        let expected: Vec<u64> = (0..23).map(|item| item * 10).collect();
        for jobs in [1, 2, 4, 64] {
            assert_eq!(workers(jobs).map(&items, work), expected, "jobs = {jobs}");
        }
        assert!(workers(3).map(&[] as &[u64], work).is_empty());
    }

    #[test]
    fn each_item_is_worked_on_once_by_one_thread_and_jobs_really_run_in_parallel() {
        let items: Vec<usize> = (0..8).collect();
        let running = AtomicUsize::new(0);
        let peak = AtomicUsize::new(0);
        let seen = Mutex::new(Vec::new());
        let threads = workers(4).map(&items, |item| {
            let now = running.fetch_add(1, Ordering::SeqCst) + 1;
            peak.fetch_max(now, Ordering::SeqCst);
            std::thread::sleep(Duration::from_millis(30));
            seen.lock().unwrap().push(*item);
            running.fetch_sub(1, Ordering::SeqCst);
            std::thread::current().id()
        });
        let mut seen = seen.into_inner().unwrap();
        seen.sort_unstable();
        assert_eq!(seen, items, "every item exactly once");
        assert!(peak.load(Ordering::SeqCst) > 1, "more than one item at a time");
        assert!(peak.load(Ordering::SeqCst) <= 4, "never more than the jobs");
        assert!(threads.iter().collect::<HashSet<_>>().len() > 1);
        let caller = std::thread::current().id();
        assert!(workers(1).map(&items, |_| std::thread::current().id()).iter().all(|id| *id == caller));
    }
}
