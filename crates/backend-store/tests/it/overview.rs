//! The schedule overview agrees with the per-check operations it lets a tick skip.

use datadiff_backend_store::StoredDefinition;
use datadiff_diff_core::attempt::{RunStatus, StartKind};

use crate::support::{Repo, at, repo, scheduled, table};

fn agrees_with_the_per_check_reads(repo: &Repo, definitions: &[StoredDefinition]) -> Vec<(bool, bool, bool)> {
    let now = at(15, 40);
    let current = at(15, 0);
    let requests: Vec<(&StoredDefinition, _)> = definitions.iter().map(|definition| (definition, current)).collect();
    let overview = repo.store.schedule_overview(&requests, now).unwrap();
    assert_eq!(overview.len(), definitions.len());
    let mut flags = Vec::new();
    for (entry, definition) in overview.iter().zip(definitions) {
        assert_eq!(entry.check_id, definition.check_id, "in the order given");
        assert_eq!(entry.current_slot, current);
        assert_eq!(entry.latest_scheduled_for, repo.store.latest_scheduled_for(definition.check_id).unwrap());
        let candidates = repo.store.retry_candidates(definition.check_id, current, 24).unwrap();
        assert_eq!(entry.has_retry_candidate, !candidates.is_empty());
        assert_eq!(
            entry.current_slot_newest,
            repo.store.slot_attempts(definition.check_id, current).unwrap().first().cloned()
        );
        flags.push((entry.has_stale_attempt, entry.has_retry_candidate, entry.current_slot_newest.is_some()));
    }
    flags
}

#[test]
fn the_overview_tells_which_checks_have_work() {
    let repo = repo();
    let stored = repo.import(
        &[
            table("t", "a_idle"),
            table("t", "b_new"),
            table("t", "c_stale"),
            table("t", "d_retry"),
            table("t", "e_recent"),
        ],
        at(0, 0),
    );
    let [idle, _new, stale, retry, recent] = [0, 1, 2, 3, 4].map(|i| stored[i].clone());
    // idle: its current slot passed.
    let attempt = repo.start(&idle, at(15, 0), scheduled(false), at(15, 5));
    repo.finish(attempt.run_id, RunStatus::Pass, at(15, 6));
    // stale: a RUNNING attempt older than 34 minutes (60 s budget) in an older slot.
    repo.start(&stale, at(14, 0), scheduled(false), at(15, 6));
    // retry: a failure of an older slot, not attempted in this interval.
    let failed = repo.start(&retry, at(13, 0), scheduled(false), at(13, 5));
    repo.finish(failed.run_id, RunStatus::Fail, at(13, 6));
    // recent: a failure already retried in this interval.
    let failed = repo.start(&recent, at(13, 0), scheduled(false), at(13, 5));
    repo.finish(failed.run_id, RunStatus::Fail, at(13, 6));
    let retried = repo.start(&recent, at(13, 0), StartKind::Retry { retry_before: at(15, 0) }, at(15, 1));
    repo.finish(retried.run_id, RunStatus::Fail, at(15, 2));

    let flags = agrees_with_the_per_check_reads(&repo, &stored);
    assert_eq!(
        flags,
        [
            (false, false, true),
            (false, false, false),
            (true, false, false),
            (false, true, false),
            (false, false, false)
        ]
    );
    // The stale flag matches what the sweep does.
    assert_eq!(repo.store.sweep_stale(&stale, at(15, 40)).unwrap().len(), 1);
    assert!(!agrees_with_the_per_check_reads(&repo, &stored)[2].0, "swept");
    assert!(repo.store.schedule_overview(&[], at(15, 40)).unwrap().is_empty());
}
