//! A divided window's parts (extension 3): written once while the attempt runs, claimed one
//! session at a time under datadiff's session advisory locks, never redone once finished,
//! and claimable again when the session holding one ends.

use datadiff_backend_store::{Division, Error, PartRange, RunPart};
use datadiff_diff_core::attempt::{RunId, RunStatus};
use postgres::error::SqlState;
use serde_json::json;

use crate::support::{Repo, at, repo, scheduled, table};

fn division(run_id: RunId) -> Division {
    Division {
        run_id,
        split_key: "int".into(),
        strategy: "auto".into(),
        results: json!([]),
        error: None,
        created_by: "host-a:1".into(),
    }
}

fn ranges() -> Vec<PartRange> {
    vec![
        PartRange { index: 0, lower: None, upper: Some("100".into()) },
        PartRange { index: 1, lower: Some("100".into()), upper: Some("200".into()) },
        PartRange { index: 2, lower: Some("200".into()), upper: None },
    ]
}

/// A RUNNING attempt divided into [`ranges`].
fn divided(repo: &Repo) -> RunId {
    let definition = repo.import_one(&table("tap", "t"), at(12, 0));
    let attempt = repo.start(&definition, at(13, 0), scheduled(false), at(13, 1));
    repo.store.divide(&division(attempt.run_id), &ranges(), at(13, 2)).unwrap();
    attempt.run_id
}

fn finished(parts: &[RunPart]) -> Vec<i32> {
    parts.iter().filter(|part| part.finished_at.is_some()).map(|part| part.range.index).collect()
}

#[test]
fn a_division_is_written_once_with_its_parts_in_key_order() {
    let repo = repo();
    let run_id = divided(&repo);
    assert_eq!(repo.store.division(run_id).unwrap(), Some(division(run_id)));
    let parts = repo.store.run_parts(run_id).unwrap();
    assert_eq!(parts.iter().map(|part| part.range.clone()).collect::<Vec<_>>(), ranges());
    assert!(parts.iter().all(|part| part.part_count == 3 && part.claimed_at.is_none() && part.outcome.is_none()));
    // Once: the primary key refuses a second division.
    let again = repo.store.divide(&division(run_id), &ranges(), at(13, 3)).unwrap_err();
    assert!(
        matches!(&again, Error::Query { source, .. } if source.code() == Some(&SqlState::UNIQUE_VIOLATION)),
        "{again:?}"
    );
    // Not divided: none.
    assert_eq!(repo.store.division(RunId::new(uuid::Uuid::new_v4())).unwrap(), None);
}

#[test]
fn an_attempt_that_is_no_longer_running_is_not_divided_and_its_parts_are_not_claimed() {
    let repo = repo();
    let definition = repo.import_one(&table("tap", "t"), at(12, 0));
    let attempt = repo.start(&definition, at(13, 0), scheduled(false), at(13, 1));
    repo.finish(attempt.run_id, RunStatus::Error, at(13, 2));
    let refused = repo.store.divide(&division(attempt.run_id), &ranges(), at(13, 3)).unwrap_err();
    assert!(matches!(refused, Error::LeaseLost { status: RunStatus::Error, .. }), "{refused:?}");

    let attempt = repo.start(&definition, at(14, 0), scheduled(false), at(14, 1));
    let run_id = attempt.run_id;
    repo.store.divide(&division(run_id), &ranges(), at(14, 2)).unwrap();
    repo.sql()
        .execute(
            "UPDATE public.dd_run_attempts SET status = 'ERROR', finished_at = now() WHERE run_id = $1",
            &[&run_id.get()],
        )
        .unwrap();
    let mut session = repo.store.part_session("host-a:1").unwrap();
    assert_eq!(session.claim(run_id, at(13, 4)).unwrap(), None, "the attempt ended");
}

#[test]
fn parts_are_claimed_one_session_at_a_time_finished_once_and_reclaimed_after_a_session_ends() {
    let repo = repo();
    let run_id = divided(&repo);
    let mut first = repo.store.part_session("host-a:1").unwrap();
    let mut second = repo.store.part_session("host-b:2").unwrap();

    // Each session gets the first part no other session holds.
    let a = first.claim(run_id, at(13, 5)).unwrap().expect("part 0");
    let b = second.claim(run_id, at(13, 6)).unwrap().expect("part 1");
    assert_eq!((a.range.index, b.range.index), (0, 1));
    assert_eq!(b.range, ranges()[1]);
    let parts = repo.store.run_parts(run_id).unwrap();
    assert_eq!(parts[0].claimed_by.as_deref(), Some("host-a:1"));
    assert_eq!(parts[1].claimed_by.as_deref(), Some("host-b:2"));
    assert_eq!(parts[1].claimed_at, Some(at(13, 6)));
    assert_eq!(parts[2].claimed_at, None);

    // The first finishes its part: written with finished_at, never claimed again.
    first.finish(a, &json!({"matched": 5}), at(13, 7)).unwrap();
    let c = first.claim(run_id, at(13, 8)).unwrap().expect("part 2");
    assert_eq!(c.range.index, 2);
    assert_eq!(first.claim(run_id, at(13, 8)).unwrap(), None, "1 is held, 0 finished, 2 its own");
    let mut other = repo.store.part_session("host-c:3").unwrap();
    assert_eq!(other.claim(run_id, at(13, 8)).unwrap(), None, "1 and 2 are held, 0 finished");

    // The second session ends holding part 1 (its process killed): the part is free again,
    // unfinished, and the first claims it.
    drop(second);
    let again = wait_for_claim(&mut first, run_id);
    assert_eq!(again.range.index, 1);
    first.finish(again, &json!({"matched": 7}), at(13, 10)).unwrap();
    first.finish(c, &json!({"matched": 9}), at(13, 11)).unwrap();

    let parts = repo.store.run_parts(run_id).unwrap();
    assert_eq!(finished(&parts), [0, 1, 2]);
    assert_eq!(parts[1].claimed_by.as_deref(), Some("host-a:1"), "recomputed by the survivor");
    assert_eq!(parts[1].outcome, Some(json!({"matched": 7})));

    // A finished part keeps its first outcome (a late finish changes nothing).
    let mut third = repo.store.part_session("host-c:3").unwrap();
    assert_eq!(third.claim(run_id, at(13, 12)).unwrap(), None, "every part is finished");
    let late = datadiff_backend_store::Claim { run_id, range: ranges()[0].clone() };
    third.finish(late, &json!({"matched": 0}), at(13, 13)).unwrap();
    assert_eq!(repo.store.run_parts(run_id).unwrap()[0].outcome, Some(json!({"matched": 5})));
}

/// The server ends a closed session's locks as it notices the session gone: claims until it
/// has (a guard, not a timing assertion: it fails only after two minutes).
fn wait_for_claim(session: &mut datadiff_backend_store::PartSession, run_id: RunId) -> datadiff_backend_store::Claim {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    loop {
        if let Some(claim) = session.claim(run_id, at(13, 9)).unwrap() {
            return claim;
        }
        assert!(std::time::Instant::now() < deadline, "the part was never given back");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

#[test]
fn the_owner_lock_is_held_by_one_session_until_it_ends() {
    let repo = repo();
    let run_id = divided(&repo);
    let mut owner = repo.store.part_session("host-a:1").unwrap();
    let mut joiner = repo.store.part_session("host-b:2").unwrap();
    assert!(owner.try_own(run_id).unwrap());
    assert!(!joiner.try_own(run_id).unwrap(), "held by the owner");
    drop(owner);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while !joiner.try_own(run_id).unwrap() {
        assert!(std::time::Instant::now() < deadline, "the owner lock was never given back");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

#[test]
fn the_application_role_cannot_delete_or_truncate_parts() {
    let repo = repo();
    let run_id = divided(&repo);
    let mut app = repo.store.connection().unwrap();
    for sql in [
        "DELETE FROM public.datadiff_run_parts",
        "TRUNCATE public.datadiff_run_parts",
        "DELETE FROM public.datadiff_run_divisions",
        "TRUNCATE public.datadiff_run_divisions",
        "DROP TABLE public.datadiff_run_parts",
    ] {
        let error = app.batch_execute(sql).expect_err(sql);
        assert_eq!(error.code(), Some(&SqlState::INSUFFICIENT_PRIVILEGE), "{sql}: {error}");
    }
    assert_eq!(repo.store.run_parts(run_id).unwrap().len(), 3);
}
