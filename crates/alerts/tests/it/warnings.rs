//! Index warnings delivered against a real backend: the marker in `dd_index_warning_state`
//! is written iff a destination accepted, a delivered warning is never sent again, an
//! undelivered one is tried again next invocation, routing by the latest enabled tap.

use datadiff_alerts::{DeliveryProblem, WarningReport, WarningResult};
use datadiff_backend_store::StoredDefinition;
use datadiff_diff_core::{
    attempt::{CheckIdentity, PreflightStatus, RunSummary},
    definition::CheckDefinition,
};

use crate::context::{Context, at, scheduled, slot};
use crate::server::{Mode, Server, dispatcher, import_all, markers, observation, settings, tap};

/// The fixtures' definition into `target` (same tap and source table).
fn into_target(context: &Context, target: &str) -> CheckDefinition {
    let mut definition = context.definition();
    definition.target_id = target.into();
    definition.full_check_name = CheckDefinition::full_check_name_of(target, "payments", "public", "Transfers");
    definition
}

/// A context with the fixtures' definition imported into targets `postgres` and `warehouse`.
fn two_targets() -> (Context, Vec<StoredDefinition>) {
    let context = Context::new("", "");
    let definitions = [into_target(&context, "postgres"), into_target(&context, "warehouse")];
    let stored = import_all(&context, &definitions);
    (context, stored)
}

fn warns(stored: &StoredDefinition, rows: i64) -> RunSummary {
    observation(&CheckIdentity::of(stored), rows, PreflightStatus::Pass)
}

fn only(report: &WarningReport) -> &WarningResult {
    assert_eq!(report.warnings.len(), 1, "{report:?}");
    &report.warnings[0].result
}

#[test]
fn a_warning_is_remembered_only_after_a_destination_accepted_and_never_sent_again() {
    let (context, stored) = two_targets();
    let webhook = Server::start(Mode::Accept);
    let settings = settings(None, None, Some(&webhook), None);
    let taps = [tap("payments", "postgres", true, None)];
    let summaries = [warns(&stored[0], 75_000)];
    let warning_id = CheckIdentity::of(&stored[0]).index_warning_identity().warning_id();
    assert!(markers(&context).is_empty());

    let report = dispatcher(&settings, &taps, None).send_index_warnings(&context.store, &summaries, at(13, 5));

    assert!(matches!(only(&report), WarningResult::Delivered(receipt) if receipt.accepted()), "{report:?}");
    assert_eq!(report.delivered(), 1);
    assert_eq!(markers(&context), [(warning_id.get(), stored[0].check_id.get(), at(13, 5))]);
    let bodies = webhook.bodies();
    assert_eq!(bodies.len(), 1);
    assert_eq!(bodies[0]["kind"], "index_warning");
    assert_eq!(bodies[0]["level"], "warning");
    assert_eq!(bodies[0]["warning_id"], warning_id.to_string());
    assert!(bodies[0]["details"].as_str().unwrap().contains("source_rows       : 75,000"));

    // The next invocations (new dispatchers), also through the other target: nothing sent.
    let again = [warns(&stored[0], 80_000), warns(&stored[1], 80_000)];
    let report = dispatcher(&settings, &taps, None).send_index_warnings(&context.store, &again, at(14, 5));
    assert!(matches!(only(&report), WarningResult::AlreadyDelivered), "{report:?}");
    assert_eq!(webhook.requests().len(), 1);
    assert_eq!(markers(&context).len(), 1);
}

#[test]
fn a_warning_every_destination_refused_is_tried_again_next_invocation() {
    let (context, stored) = two_targets();
    let (slack, webhook) = (Server::start(Mode::SlackRefuse), Server::start(Mode::Refuse));
    let settings = settings(Some(&slack), None, Some(&webhook), None);
    let taps = [tap("payments", "postgres", true, None)];
    let summaries = [warns(&stored[0], 60_000)];

    let report = dispatcher(&settings, &taps, Some(&slack)).send_index_warnings(&context.store, &summaries, at(13, 5));

    match only(&report) {
        WarningResult::NotAccepted(receipt) => {
            let problems: Vec<&DeliveryProblem> = receipt.failures().map(|(_, problem)| problem).collect();
            assert_eq!(
                problems,
                [&DeliveryProblem::SlackRefused("channel_not_found".into()), &DeliveryProblem::HttpStatus(500)]
            );
        }
        other => panic!("{other:?}"),
    }
    assert!(markers(&context).is_empty());
    assert_eq!(report.delivered(), 0);

    // Once a destination accepts, it is delivered and remembered.
    webhook.set_mode(Mode::Accept);
    let report = dispatcher(&settings, &taps, Some(&slack)).send_index_warnings(&context.store, &summaries, at(14, 5));
    assert!(matches!(only(&report), WarningResult::Delivered(_)), "{report:?}");
    assert_eq!(markers(&context).len(), 1);
    assert_eq!(markers(&context)[0].2, at(14, 5));
    assert_eq!((slack.requests().len(), webhook.requests().len()), (2, 2), "one attempt per invocation each");
}

#[test]
fn a_partial_delivery_is_remembered_and_not_repeated() {
    let (context, stored) = two_targets();
    let (slack, webhook) = (Server::start(Mode::Refuse), Server::start(Mode::Accept));
    let settings = settings(Some(&slack), None, Some(&webhook), None);
    let taps = [tap("payments", "postgres", true, Some("#payments"))];
    let summaries = [warns(&stored[0], 60_000)];

    let report = dispatcher(&settings, &taps, Some(&slack)).send_index_warnings(&context.store, &summaries, at(13, 5));
    assert!(matches!(only(&report), WarningResult::Delivered(receipt) if receipt.failures().count() == 2));
    assert_eq!(markers(&context).len(), 1);

    slack.set_mode(Mode::Accept);
    dispatcher(&settings, &taps, Some(&slack)).send_index_warnings(&context.store, &summaries, at(14, 5));
    assert_eq!((slack.requests().len(), webhook.requests().len()), (2, 1), "Slack's two channels once, nothing more");
}

#[test]
fn a_hanging_destination_times_out_and_the_warning_still_reaches_the_others() {
    let (context, stored) = two_targets();
    let (slack, webhook) = (Server::start(Mode::Hang), Server::start(Mode::Accept));
    let settings = settings(Some(&slack), None, Some(&webhook), None);
    let summaries = [warns(&stored[0], 60_000)];

    let report = dispatcher(&settings, &[], Some(&slack)).send_index_warnings(&context.store, &summaries, at(13, 5));

    match only(&report) {
        WarningResult::Delivered(receipt) => {
            assert!(matches!(receipt.attempts[0].outcome, Err(DeliveryProblem::TimedOut(_))), "{receipt:?}");
            assert_eq!(receipt.attempts[1].outcome, Ok(()));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(markers(&context).len(), 1);
}

#[test]
fn a_muted_tap_does_not_suppress_an_enabled_one_for_the_same_source() {
    let (context, stored) = two_targets();
    let slack = Server::start(Mode::Accept);
    let settings = settings(Some(&slack), None, None, None);
    // The same tap id replicating into two targets: muted for `warehouse`, enabled for `postgres`.
    let taps =
        [tap("payments", "postgres", true, Some("#payments")), tap("payments", "warehouse", false, Some("#muted"))];
    // The latest observation is the muted target's.
    let summaries = [warns(&stored[0], 60_000), warns(&stored[1], 61_000)];

    let report = dispatcher(&settings, &taps, Some(&slack)).send_index_warnings(&context.store, &summaries, at(13, 5));

    assert!(matches!(only(&report), WarningResult::Delivered(_)), "{report:?}");
    assert_eq!(report.warnings[0].check_id, stored[0].check_id, "routed by the enabled tap's check");
    assert_eq!(markers(&context)[0].1, stored[0].check_id.get());
    let channels: Vec<String> = slack.bodies().iter().map(|b| b["channel"].as_str().unwrap().to_owned()).collect();
    assert_eq!(channels, ["#data-diff", "#payments"]);
    let details = slack.bodies()[0]["attachments"][0]["text"].as_str().unwrap().to_owned();
    assert!(details.contains("target_id         : postgres\n"), "{details}");
    assert!(details.contains("source_rows       : 61,000\n"), "the latest observation's count: {details}");

    // Every tap muted: nothing sent, nothing remembered.
    let (context, stored) = two_targets();
    let muted = [tap("payments", "postgres", false, None), tap("payments", "warehouse", false, None)];
    let summaries = [warns(&stored[0], 60_000), warns(&stored[1], 61_000)];
    let report = dispatcher(&settings, &muted, Some(&slack)).send_index_warnings(&context.store, &summaries, at(13, 5));
    assert!(matches!(only(&report), WarningResult::Muted));
    assert!(markers(&context).is_empty());
    assert_eq!(slack.requests().len(), 2);
}

#[test]
fn the_latest_observation_supersedes_an_old_warning() {
    let (context, stored) = two_targets();
    let webhook = Server::start(Mode::Accept);
    let settings = settings(None, None, Some(&webhook), None);
    let blocked = observation(&CheckIdentity::of(&stored[1]), 100_000, PreflightStatus::Blocked);
    let summaries = [warns(&stored[0], 99_999), blocked];

    let report = dispatcher(&settings, &[], None).send_index_warnings(&context.store, &summaries, at(13, 5));

    assert!(report.warnings.is_empty(), "{report:?}");
    assert!(webhook.requests().is_empty());
    assert!(markers(&context).is_empty());
}

#[test]
fn inactive_definitions_skipped_runs_and_no_destination_send_nothing() {
    let (context, stored) = two_targets();
    let webhook = Server::start(Mode::Accept);
    let mut inactive = warns(&stored[0], 60_000);
    inactive.check.is_current = false;
    let mut skipped = warns(&stored[1], 60_000);
    skipped.status = datadiff_diff_core::attempt::SummaryStatus::Skipped;
    let with_webhook = settings(None, None, Some(&webhook), None);
    let report =
        dispatcher(&with_webhook, &[], None).send_index_warnings(&context.store, &[inactive, skipped], at(13, 5));
    assert!(report.warnings.is_empty(), "{report:?}");
    assert!(webhook.requests().is_empty());

    let report = dispatcher(&settings(None, None, None, None), &[], None).send_index_warnings(
        &context.store,
        &[warns(&stored[0], 60_000)],
        at(13, 5),
    );
    assert!(matches!(only(&report), WarningResult::NoDestination));
    assert!(markers(&context).is_empty(), "still pending for when a destination exists");
}

#[test]
fn catch_up_slots_and_retries_of_one_source_send_one_warning() {
    let (context, stored) = two_targets();
    let webhook = Server::start(Mode::Accept);
    let settings = settings(None, None, Some(&webhook), None);
    let summaries: Vec<RunSummary> = (0..5).map(|i| warns(&stored[i % 2], 60_000 + i as i64)).collect();

    let report = dispatcher(&settings, &[], None).send_index_warnings(&context.store, &summaries, at(13, 5));

    assert_eq!(report.delivered(), 1);
    assert_eq!(webhook.requests().len(), 1);
    assert_eq!(markers(&context).len(), 1);
}

#[test]
fn concurrent_invocations_deliver_a_warning_once() {
    let (context, stored) = two_targets();
    let webhook = Server::start(Mode::AcceptSlowly);
    let settings = settings(None, None, Some(&webhook), None);
    let summaries = [warns(&stored[0], 60_000)];

    let results: Vec<String> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..2)
            .map(|_| {
                scope.spawn(|| {
                    let report =
                        dispatcher(&settings, &[], None).send_index_warnings(&context.store, &summaries, at(13, 5));
                    match only(&report) {
                        WarningResult::Delivered(_) => "delivered".to_owned(),
                        WarningResult::AlreadyDelivered => "already".to_owned(),
                        other => format!("{other:?}"),
                    }
                })
            })
            .collect();
        handles.into_iter().map(|handle| handle.join().unwrap()).collect()
    });

    let mut results = results;
    results.sort();
    assert_eq!(results, ["already", "delivered"]);
    assert_eq!(webhook.requests().len(), 1);
    assert_eq!(markers(&context).len(), 1);
}

/// The whole path: an unindexed source of 60,000 rows, a real attempt whose preflight passes
/// with the warning, its delivery to a log file and the marker.
#[test]
fn a_real_attempt_on_an_unindexed_table_warns_once() {
    let source = crate::context::SOURCE_SQL.replace(
        r#"CREATE INDEX "Transfers_UpdatedAt_idx" ON public."Transfers" ("UpdatedAt");"#,
        r#"INSERT INTO public."Transfers" SELECT n, '2026-07-01', 1.00, 'old' FROM generate_series(100, 60099) AS n;"#,
    );
    let context = Context::new(&source, crate::context::REPLICA_SQL);
    let stored = context.import(&context.definition());
    let summary = datadiff_runner::execute(
        &context.store,
        &context.connections,
        &stored,
        slot(),
        scheduled(),
        &Context::options(),
    )
    .unwrap();
    let preflight = summary.preflight.clone().unwrap();
    assert_eq!(
        (preflight.status, preflight.index_warning, preflight.table_rows),
        (PreflightStatus::Pass, true, Some(60_008))
    );

    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("alerts.jsonl");
    let settings = settings(None, None, None, Some(&log));
    let taps = [tap("payments", "postgres", true, None)];
    let summaries = [summary];
    let report = dispatcher(&settings, &taps, None).send_index_warnings(&context.store, &summaries, at(13, 5));
    assert_eq!(report.delivered(), 1, "{report:?}");
    let again = dispatcher(&settings, &taps, None).send_index_warnings(&context.store, &summaries, at(13, 6));
    assert!(matches!(only(&again), WarningResult::AlreadyDelivered));

    let lines: Vec<serde_json::Value> =
        std::fs::read_to_string(&log).unwrap().lines().map(|line| serde_json::from_str(line).unwrap()).collect();
    assert_eq!(lines.len(), 1);
    assert_eq!(lines[0]["kind"], "index_warning");
    assert!(lines[0]["details"].as_str().unwrap().contains("source_rows       : 60,008\n"));
    let warning_id = CheckIdentity::of(&stored).index_warning_identity().warning_id();
    assert_eq!(markers(&context), [(warning_id.get(), stored.check_id.get(), at(13, 5))]);
}
