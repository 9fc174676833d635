//! Failure alerts delivered to local HTTP servers and a log file: one alert per failed check,
//! routing by tap, every destination tried, a timeout on every call, never a secret.

use datadiff_alerts::{AlertDelivery, DeliveryProblem, DestinationAttempt, FailureAlertReport};
use datadiff_diff_core::attempt::{RunSummary, SummaryStatus};
use serde_json::Value as Json;

use crate::context::at;
use crate::server::{
    Mode, ROUTING_KEY, SLACK_TOKEN, Server, WEBHOOK_TOKEN, dispatcher, failure, identity, settings, tap,
};

fn attempts(report: &FailureAlertReport, alert: usize) -> Vec<DestinationAttempt> {
    match &report.alerts[alert].delivery {
        AlertDelivery::Sent(receipt) => receipt.attempts.clone(),
        other => panic!("not sent: {other:?}"),
    }
}

#[test]
fn a_failure_alert_reaches_every_destination_in_its_format() {
    let (slack, victorops, webhook) =
        (Server::start(Mode::Accept), Server::start(Mode::Accept), Server::start(Mode::Accept));
    let log_dir = tempfile::tempdir().unwrap();
    let log = log_dir.path().join("alerts.jsonl");
    let settings = settings(Some(&slack), Some(&victorops), Some(&webhook), Some(&log));
    let taps = [tap("payments", "postgres", true, Some("#payments"))];
    let summaries = [failure(&identity(1, "postgres", "payments"), at(13, 0), 0x11)];

    let report = dispatcher(&settings, &taps, Some(&slack)).send_failure_alerts(&summaries, at(13, 5));

    assert_eq!((report.delivered(), report.undelivered_line()), (1, None));
    let message = "FAIL data-diff payments/public.transfers — target has 1 fewer row";

    // Slack: the data-diff channel, then the tap's own channel.
    let posts = slack.requests();
    assert_eq!(posts.len(), 2);
    let channels: Vec<Json> = posts.iter().map(|post| post.json()["channel"].clone()).collect();
    assert_eq!(channels, ["#data-diff", "#payments"]);
    for post in &posts {
        assert_eq!((post.method.as_str(), post.path.as_str()), ("POST", "/api/chat.postMessage"));
        assert_eq!(post.header("authorization"), Some(format!("Bearer {SLACK_TOKEN}").as_str()));
        let body = post.json();
        assert_eq!(body["text"], format!(":exclamation: *{message}*"));
        let attachment = &body["attachments"][0];
        assert_eq!(attachment["color"], "danger");
        let text = attachment["text"].as_str().unwrap();
        assert!(text.starts_with("```alert_utc_time    : 2026-07-22 13:05:00\n"), "{text}");
        assert!(text.contains("```\n\n*Next action:*\n- Check replication lag"), "{text}");
    }

    // VictorOps: <base_url>/<routing_key>, CRITICAL, the whole text.
    let posts = victorops.requests();
    assert_eq!(posts.len(), 1);
    assert_eq!(posts[0].path, format!("/integrations/api-key-in-path/{ROUTING_KEY}"));
    let body = posts[0].json();
    assert_eq!(body["message_type"], "CRITICAL");
    assert_eq!(body["state_message"], Json::Null);
    let text = body["entity_display_name"].as_str().unwrap();
    assert!(text.starts_with(&format!("{message}\nalert_utc_time    : 2026-07-22 13:05:00\n")), "{text}");
    assert!(text.contains("\n\nNext action:\n- Check replication lag"), "{text}");

    // Webhook and log: the same JSON document.
    let posts = webhook.requests();
    assert_eq!(posts.len(), 1);
    assert_eq!(posts[0].path, format!("/hooks/{WEBHOOK_TOKEN}"));
    assert!(posts[0].header("content-type").unwrap().starts_with("application/json"));
    let document = posts[0].json();
    assert_eq!(document["kind"], "failure");
    assert_eq!(document["level"], "error");
    assert_eq!(document["message"], message);
    assert_eq!(document["status"], "FAIL");
    assert_eq!(document["run_id"], "00000000-0000-0000-0000-000000000011");
    assert_eq!(document["check"]["full_check_name"], "postgres/payments/public/transfers");
    let lines: Vec<Json> =
        std::fs::read_to_string(&log).unwrap().lines().map(|line| serde_json::from_str(line).unwrap()).collect();
    assert_eq!(lines, [document]);
}

#[test]
fn twenty_five_failures_of_one_check_send_one_alert() {
    let webhook = Server::start(Mode::Accept);
    let settings = settings(None, None, Some(&webhook), None);
    let taps = [tap("payments", "postgres", true, None)];
    let check = identity(1, "postgres", "payments");
    let summaries: Vec<RunSummary> =
        (0..25).map(|i| failure(&check, at(0, 0) + chrono::Duration::hours(i), 100 + i as u128)).collect();

    let dispatcher = dispatcher(&settings, &taps, None);
    let report = dispatcher.send_failure_alerts(&summaries, at(13, 5));

    assert_eq!(report.alerts.len(), 1);
    assert_eq!(report.alerts[0].failed_attempts, 25);
    let bodies = webhook.bodies();
    assert_eq!(bodies.len(), 1);
    assert_eq!(
        bodies[0]["message"],
        "FAIL data-diff payments/public.transfers — 25 failed windows; target has 1 fewer row"
    );
    assert_eq!(bodies[0]["failed_attempts"], 25);

    // The limit is per invocation: the next one alerts again.
    dispatcher.send_failure_alerts(&summaries[..1], at(14, 5));
    assert_eq!(webhook.requests().len(), 2);
}

#[test]
fn each_failed_check_alerts_to_its_own_taps_channel() {
    let slack = Server::start(Mode::Accept);
    let settings = settings(Some(&slack), None, None, None);
    let taps =
        [tap("payments", "postgres", true, Some("#payments")), tap("billing", "postgres", true, Some("#billing"))];
    let summaries = [
        failure(&identity(1, "postgres", "payments"), at(13, 0), 1),
        failure(&identity(2, "postgres", "billing"), at(13, 0), 2),
    ];

    let report = dispatcher(&settings, &taps, Some(&slack)).send_failure_alerts(&summaries, at(13, 5));

    assert_eq!(report.delivered(), 2);
    let sent: Vec<(String, String)> = slack
        .bodies()
        .iter()
        .map(|body| {
            (
                body["channel"].as_str().unwrap().to_owned(),
                body["attachments"][0]["fallback"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(sent.len(), 4);
    assert!(
        sent.contains(&(
            "#payments".into(),
            "FAIL data-diff payments/public.transfers — target has 1 fewer row".into()
        ))
    );
    assert!(
        sent.contains(&("#billing".into(), "FAIL data-diff billing/public.transfers — target has 1 fewer row".into()))
    );
    assert!(!sent.iter().any(|(channel, message)| channel == "#billing" && message.contains("payments/")));
}

#[test]
fn muted_taps_send_nothing_and_stay_in_the_report() {
    let (slack, webhook) = (Server::start(Mode::Accept), Server::start(Mode::Accept));
    let settings = settings(Some(&slack), None, Some(&webhook), None);
    let taps = [tap("payments", "postgres", false, Some("#payments"))];
    let check = identity(1, "postgres", "payments");
    let summaries = [failure(&check, at(12, 0), 1), failure(&check, at(13, 0), 2)];

    let report = dispatcher(&settings, &taps, Some(&slack)).send_failure_alerts(&summaries, at(13, 5));

    assert_eq!(report.alerts.len(), 1);
    assert_eq!(report.alerts[0].delivery, AlertDelivery::Muted);
    assert_eq!(report.alerts[0].failed_attempts, 2);
    assert_eq!(report.undelivered_line(), None, "a muted alert is not an undelivered one");
    assert!(slack.requests().is_empty() && webhook.requests().is_empty());
}

#[test]
fn a_check_whose_tap_is_missing_alerts_without_a_tap_channel() {
    let slack = Server::start(Mode::Accept);
    let settings = settings(Some(&slack), None, None, None);
    // A tap of that id exists, but replicating into another target.
    let taps = [tap("payments", "snowflake", true, Some("#payments"))];
    let summaries = [failure(&identity(1, "postgres", "payments"), at(13, 0), 1)];

    let report = dispatcher(&settings, &taps, Some(&slack)).send_failure_alerts(&summaries, at(13, 5));

    assert_eq!(report.delivered(), 1);
    let channels: Vec<Json> = slack.bodies().iter().map(|body| body["channel"].clone()).collect();
    assert_eq!(channels, ["#data-diff"]);
}

#[test]
fn an_alert_no_destination_accepted_is_undelivered_and_names_no_secret() {
    let (slack, victorops, webhook) =
        (Server::start(Mode::Refuse), Server::start(Mode::Refuse), Server::start(Mode::Refuse));
    let settings = settings(Some(&slack), Some(&victorops), Some(&webhook), None);
    let taps = [tap("payments", "postgres", true, None)];
    let summaries = [failure(&identity(1, "postgres", "payments"), at(13, 0), 1)];

    let report = dispatcher(&settings, &taps, Some(&slack)).send_failure_alerts(&summaries, at(13, 5));

    assert_eq!(report.delivered(), 0);
    assert_eq!(report.undelivered().len(), 1);
    let line = report.undelivered_line().unwrap();
    assert_eq!(
        line,
        "failure alert not delivered for postgres/payments/public/transfers (slack channel #data-diff: answered HTTP \
         500; victorops: answered HTTP 500; webhook: answered HTTP 500)"
    );
    assert!(!line.contains('\n'));
    let everything = format!("{report:?} {line}");
    for secret in [SLACK_TOKEN, ROUTING_KEY, WEBHOOK_TOKEN, "api-key-in-path"] {
        assert!(!everything.contains(secret), "{secret} in {everything}");
    }
    // Every destination was tried.
    assert_eq!((slack.requests().len(), victorops.requests().len(), webhook.requests().len()), (1, 1, 1));
}

#[test]
fn one_accepting_destination_is_enough() {
    let (slack, webhook) = (Server::start(Mode::SlackRefuse), Server::start(Mode::Accept));
    let settings = settings(Some(&slack), None, Some(&webhook), None);
    let summaries = [failure(&identity(1, "postgres", "payments"), at(13, 0), 1)];

    let report = dispatcher(&settings, &[], Some(&slack)).send_failure_alerts(&summaries, at(13, 5));

    assert_eq!((report.delivered(), report.undelivered_line()), (1, None));
    let attempts = attempts(&report, 0);
    assert_eq!(attempts[0].outcome, Err(DeliveryProblem::SlackRefused("channel_not_found".into())));
    assert_eq!(attempts[1].outcome, Ok(()));
}

#[test]
fn a_hanging_destination_times_out_without_blocking_the_others() {
    let (slack, webhook) = (Server::start(Mode::Hang), Server::start(Mode::Accept));
    let settings = settings(Some(&slack), None, Some(&webhook), None);
    let taps = [tap("payments", "postgres", true, Some("#payments")), tap("billing", "postgres", true, None)];
    let summaries = [
        failure(&identity(1, "postgres", "payments"), at(13, 0), 1),
        failure(&identity(2, "postgres", "billing"), at(13, 0), 2),
    ];

    let report = dispatcher(&settings, &taps, Some(&slack)).send_failure_alerts(&summaries, at(13, 5));

    assert_eq!(report.delivered(), 2, "the webhook got both alerts");
    assert_eq!(webhook.requests().len(), 2);
    let first: Vec<(String, Result<(), DeliveryProblem>)> =
        attempts(&report, 0).into_iter().map(|a| (a.destination, a.outcome)).collect();
    assert_eq!(
        first,
        [
            ("slack channel #data-diff".to_owned(), Err(DeliveryProblem::TimedOut(std::time::Duration::from_secs(1)))),
            ("slack channel #payments".to_owned(), Err(DeliveryProblem::SkippedAfterTimeout)),
            ("webhook".to_owned(), Ok(())),
        ]
    );
    // The second alert does not wait for Slack again.
    assert_eq!(attempts(&report, 1)[0].outcome, Err(DeliveryProblem::SkippedAfterTimeout));
    assert_eq!(slack.requests().len(), 1, "Slack was called once");
}

#[test]
fn an_unreachable_destination_is_reported_as_such() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let mut settings = settings(None, None, None, None);
    settings.webhook = Some(datadiff_config::WebhookSettings {
        url: datadiff_config::Secret::new(format!("http://127.0.0.1:{port}/hooks/{WEBHOOK_TOKEN}")),
    });
    let summaries = [failure(&identity(1, "postgres", "payments"), at(13, 0), 1)];

    let report = dispatcher(&settings, &[], None).send_failure_alerts(&summaries, at(13, 5));

    let attempts = attempts(&report, 0);
    assert!(matches!(&attempts[0].outcome, Err(DeliveryProblem::Unreachable(_))), "{attempts:?}");
    let line = report.undelivered_line().unwrap();
    assert!(!line.contains(WEBHOOK_TOKEN) && !line.contains(&port.to_string()), "{line}");
}

#[test]
fn an_unwritable_log_is_a_failed_destination() {
    let dir = tempfile::tempdir().unwrap();
    let settings = settings(None, None, None, Some(&dir.path().join("missing-dir").join("alerts.jsonl")));
    let summaries = [failure(&identity(1, "postgres", "payments"), at(13, 0), 1)];

    let report = dispatcher(&settings, &[], None).send_failure_alerts(&summaries, at(13, 5));

    assert!(matches!(&attempts(&report, 0)[0].outcome, Err(DeliveryProblem::File { .. })));
    assert!(report.undelivered_line().unwrap().contains("missing-dir"));
}

#[test]
fn passing_deferred_or_skipped_summaries_alert_nobody_and_no_destination_is_not_a_failure() {
    let webhook = Server::start(Mode::Accept);
    let settings_with_webhook = settings(None, None, Some(&webhook), None);
    let check = identity(1, "postgres", "payments");
    let quiet: Vec<RunSummary> = [SummaryStatus::Pass, SummaryStatus::Deferred, SummaryStatus::Skipped]
        .into_iter()
        .map(|status| RunSummary { status, ..failure(&check, at(13, 0), 1) })
        .collect();

    let report = dispatcher(&settings_with_webhook, &[], None).send_failure_alerts(&quiet, at(13, 5));
    assert!(report.alerts.is_empty());
    assert!(webhook.requests().is_empty());

    let failed = [failure(&check, at(13, 0), 1)];
    let report = dispatcher(&settings(None, None, None, None), &[], None).send_failure_alerts(&failed, at(13, 5));
    assert_eq!(report.alerts[0].delivery, AlertDelivery::NoDestination);
    assert_eq!(report.undelivered_line(), None);
}

#[test]
fn the_slack_api_url_comes_from_the_environment() {
    use datadiff_access::Environment;
    use datadiff_alerts::{DEFAULT_SLACK_API_URL, DispatchOptions, SLACK_API_URL_VARIABLE};

    let slack = Server::start(Mode::Accept);
    let environment = Environment::from_pairs([(SLACK_API_URL_VARIABLE, format!("{}/api/", slack.url()))]);
    let options = DispatchOptions::from_environment(&environment);
    assert_eq!(options.slack_api_url, format!("{}/api/", slack.url()));
    assert_eq!(options.timeout, DispatchOptions::DEFAULT_TIMEOUT);
    assert_eq!(DispatchOptions::from_environment(&Environment::default()).slack_api_url, DEFAULT_SLACK_API_URL);

    let settings = settings(Some(&slack), None, None, None);
    let dispatcher = datadiff_alerts::Dispatcher::from_settings(&settings, &[], std::path::Path::new("."), &options);
    let summaries = [failure(&identity(1, "postgres", "payments"), at(13, 0), 1)];
    assert_eq!(dispatcher.send_failure_alerts(&summaries, at(13, 5)).delivered(), 1);
    assert_eq!(slack.requests()[0].path, "/api/chat.postMessage");
}
