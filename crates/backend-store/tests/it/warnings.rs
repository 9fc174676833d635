//! Source-index warning markers (runs note §5.2): delivered at most once, remembered only
//! after a destination accepted, under upstream's advisory lock.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicUsize, Ordering};

use chrono::{DateTime, Utc};
use datadiff_backend_store::{AdvisoryLock, WarningDelivery};
use uuid::Uuid;

use crate::support::{Repo, at, repo, table, wait_for_lock_waiters};

/// The config note's derived example identity.
const WARNING: Uuid = Uuid::from_u128(0xca948919_a957_5a1d_be15_76d9fb044875);

fn markers(repo: &Repo) -> Vec<(Uuid, Uuid, DateTime<Utc>)> {
    repo.sql()
        .query("SELECT warning_id, check_id, sent_at FROM public.dd_index_warning_state ORDER BY sent_at", &[])
        .unwrap()
        .iter()
        .map(|row| (row.get(0), row.get(1), row.get(2)))
        .collect()
}

#[test]
fn a_warning_is_remembered_only_after_a_destination_accepted_and_never_sent_again() {
    let repo = repo();
    let definition = repo.import_one(&table("t", "x"), at(0, 0));
    let calls = AtomicUsize::new(0);
    let refuse = || {
        calls.fetch_add(1, Ordering::SeqCst);
        false
    };
    // Every destination failed: nothing written, eligible again next time.
    let outcome = repo.store.deliver_index_warning(WARNING, definition.check_id, at(13, 0), refuse).unwrap();
    assert_eq!(outcome, WarningDelivery::NotAccepted);
    assert!(markers(&repo).is_empty());
    let accept = || {
        calls.fetch_add(1, Ordering::SeqCst);
        true
    };
    let outcome = repo.store.deliver_index_warning(WARNING, definition.check_id, at(14, 0), accept).unwrap();
    assert_eq!(outcome, WarningDelivery::Delivered);
    assert_eq!(markers(&repo), [(WARNING, definition.check_id.get(), at(14, 0))]);
    assert_eq!(calls.load(Ordering::SeqCst), 2);

    // A new revision (same source identity) does not send it again.
    let mut changed = table("t", "x");
    changed.frequency = "*/5 * * * *".into();
    let revision_2 = repo.import_one(&changed, at(15, 0));
    let outcome = repo.store.deliver_index_warning(WARNING, revision_2.check_id, at(15, 5), accept).unwrap();
    assert_eq!(outcome, WarningDelivery::AlreadyDelivered);
    assert_eq!(calls.load(Ordering::SeqCst), 2, "the closure is not called");
    assert_eq!(markers(&repo).len(), 1);
}

#[test]
fn an_interrupted_notification_leaves_no_marker() {
    let repo = repo();
    let definition = repo.import_one(&table("t", "x"), at(0, 0));
    let interrupted = catch_unwind(AssertUnwindSafe(|| {
        repo.store.deliver_index_warning(WARNING, definition.check_id, at(13, 0), || panic!("interrupted"))
    }));
    assert!(interrupted.is_err());
    assert!(markers(&repo).is_empty());
    // The pool's connection was rolled back and is usable: the next invocation delivers.
    let outcome = repo.store.deliver_index_warning(WARNING, definition.check_id, at(14, 0), || true).unwrap();
    assert_eq!(outcome, WarningDelivery::Delivered);
}

#[test]
fn concurrent_deliverers_wait_for_the_lock_and_send_once() {
    let repo = repo();
    let definition = repo.import_one(&table("t", "x"), at(0, 0));
    let key = AdvisoryLock::IndexWarning(WARNING).key();
    assert_eq!(key, "pipelinewise.data_diff.index_warning.ca948919-a957-5a1d-be15-76d9fb044875");
    let sent = AtomicUsize::new(0);
    let mut holder = repo.sql();
    let mut tx = holder.transaction().unwrap();
    tx.execute("SELECT pg_advisory_xact_lock(hashtext($1))", &[&key]).unwrap();
    std::thread::scope(|scope| {
        let deliverers: Vec<_> = (0..2)
            .map(|_| {
                scope.spawn(|| {
                    repo.store.deliver_index_warning(WARNING, definition.check_id, at(13, 0), || {
                        sent.fetch_add(1, Ordering::SeqCst);
                        true
                    })
                })
            })
            .collect();
        wait_for_lock_waiters(&mut repo.sql(), &key, 2);
        assert_eq!(sent.load(Ordering::SeqCst), 0, "nobody sends while the lock is held");
        tx.commit().unwrap();
        let mut outcomes: Vec<WarningDelivery> =
            deliverers.into_iter().map(|deliverer| deliverer.join().unwrap().unwrap()).collect();
        outcomes.sort_by_key(|outcome| *outcome == WarningDelivery::Delivered);
        assert_eq!(outcomes, [WarningDelivery::AlreadyDelivered, WarningDelivery::Delivered]);
    });
    assert_eq!(sent.load(Ordering::SeqCst), 1);
    assert_eq!(markers(&repo).len(), 1);
}
