//! Alerts: source-index warnings and failure alerts composed from an invocation's
//! [`RunSummary`](datadiff_diff_core::attempt::RunSummary)s and delivered to Slack, VictorOps, a webhook or a
//! JSON-lines file (SPEC §7, §10; runs note §5).
//!
//! # Overview
//!
//! * [`Dispatcher`] — a project's destinations ([`Dispatcher::from_project`], or
//!   [`Dispatcher::from_settings`] with [`DispatchOptions`]: the HTTP timeout, 10 s by
//!   default, and Slack's API base URL, overridable by `DATADIFF_SLACK_API_URL`) and its
//!   taps' routing ([`Route`]: `send_alert`, `slack_alert_channel`).
//! * [`Dispatcher::send_index_warnings`] — best effort, each warning at most once ever,
//!   remembered in `dd_index_warning_state` only after a destination accepted it →
//!   [`WarningReport`]. Which warnings are pending: [`IndexWarning::pending`].
//! * [`Dispatcher::send_failure_alerts`] — one alert per failed check per invocation, from
//!   its representative failure with the group's totals ([`FailureGroup`]) → a
//!   [`FailureAlertReport`] whose [`undelivered_line`](FailureAlertReport::undelivered_line)
//!   is the one stderr line (and exit 1) of an alert no destination accepted.
//! * [`Alert`] — a composed alert: message, details, next action, and the allow-listed
//!   [`AlertSubject`]; [`Alert::text`] (VictorOps) and [`Alert::to_json`] (webhook, log)
//!   are its other forms. [`DeliveryReceipt`] says what each destination answered
//!   ([`DeliveryProblem`] when it did not accept).
//!
//! # Example
//!
//! What `run_data_diff_checks` does around its attempts (and `rerun_data_diff_check` around
//! its remediation, with the one summary):
//!
//! ```no_run
//! use chrono::{TimeZone, Utc};
//! use datadiff_alerts::Dispatcher;
//! use datadiff_access::Environment;
//! use datadiff_diff_core::attempt::RunSummary;
//! use datadiff_runner::{backend_config, open_backend};
//!
//! let project = datadiff_config::load("/srv/pipelinewise", None)?;
//! let store = open_backend(backend_config(project.backend.as_ref().ok_or("no backend_db")?))?;
//! let now = Utc.with_ymd_and_hms(2026, 7, 22, 13, 47, 0).unwrap(); // --at
//! let summaries: Vec<RunSummary> = Vec::new(); // the invocation's attempts, in execution order
//!
//! let dispatcher = Dispatcher::from_project(&project, &Environment::process());
//! // Before the run table: best effort, never changes the exit code.
//! let warnings = dispatcher.send_index_warnings(&store, &summaries, now);
//! eprintln!("{} index warning(s) delivered", warnings.delivered());
//! // ... print the run table, then:
//! let alerts = dispatcher.send_failure_alerts(&summaries, now);
//! let failed = summaries.iter().any(|summary| summary.status.is_failure());
//! if let Some(line) = alerts.undelivered_line() {
//!     eprintln!("{line}");
//! }
//! std::process::exit(if failed || alerts.undelivered_line().is_some() { 1 } else { 0 });
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Destinations
//!
//! | handler | call | accepted when |
//! |---|---|---|
//! | `slack` | `POST <api>/chat.postMessage`, `Authorization: Bearer <token>`, once per channel: the handler's `data_diff_channel` (else `channel`) and the tap's `slack_alert_channel` when it differs | HTTP 200 with `{"ok": true}` |
//! | `victorops` | `POST <base_url>/<routing_key>` with `message_type` (`CRITICAL` or `WARNING`), `entity_display_name` ([`Alert::text`]) and `state_message` (`null`), as PipelineWise's handler | 2xx |
//! | `webhook` | `POST <url>` with [`Alert::to_json`] | 2xx |
//! | `log` | appends [`Alert::to_json`] as one line to the file (created if missing; a relative path is resolved against the project directory) | the write succeeded |
//!
//! Slack's message is `:exclamation: *<message>*` with one attachment (colour `danger` for
//! failures, `warning` for index warnings) holding the details in a code block, then
//! `*Next action:*` and the next action; `&`, `<`, `>` are escaped and a ```` ``` ```` inside
//! the text is broken so it cannot close the code block.
//!
//! # Decisions where the sources are silent
//!
//! * **Acceptance.** An alert counts as delivered when at least one destination — a Slack
//!   channel counts as one — accepted it. VictorOps, like webhooks, accepts any 2xx
//!   (PipelineWise's handler insists on 200).
//! * **Failure alerts are not best effort** (SPEC §7) but every destination is still tried:
//!   one refusing does not keep the alert from the others (PipelineWise stops at the first
//!   exception). Only an alert that no destination accepted is reported undelivered. With no
//!   destination configured at all nothing is sent and nothing is undelivered.
//! * **Timeouts.** Every HTTP call is bounded as a whole (connect, send, receive) by
//!   [`DispatchOptions::timeout`]. One alert's destinations are called at the same time, so a
//!   hanging one delays the alert by at most the timeout; a destination that timed out is
//!   not called again by the same [`Dispatcher`] (an invocation), so 25 alerts to a dead
//!   endpoint cost one timeout, not 25. No redirect is followed.
//! * **Latest observation** of a source's index is the last summary in the order given, so
//!   callers pass summaries in execution order.
//! * **Texts.** Every message, detail line and next action is byte-identical to
//!   PipelineWise's formatter (`format_data_diff_alert`, `format_data_diff_index_warning` at
//!   8ef3713; see [`FailureGroup`] and [`IndexWarning`]; its test cases are ported in this
//!   module's tests). datadiff's additions are extra lines only: the `row_diff` counts and the
//!   `report differences` command, for definitions with the `row_diff` extension.
//! * **Never in an alert**: a min/max key, a checksum, a schema or row value (only
//!   `row_count` and `distinct_key_count` values are shown), a token, a routing key or a URL
//!   (problems name the destination, `slack channel #x`, `victorops`, `webhook`, `log
//!   <path>`). ureq logs request paths only at `trace` level, under its own target.
//!
//! # What it does not do
//!
//! It does not run checks: it reads the summaries of the pure layer (`datadiff-diff-core`), so
//! it sits beside the runner, which never calls it; the CLI (or an embedding program, see the
//! `datadiff` facade) wires the two. It does not decide the exit code or print: the CLI does,
//! from the reports. It does not
//! retry a refused alert within an invocation (an index warning is retried by the next
//! invocation; a failure alert is not remembered). Other PipelineWise handlers (there are
//! none beyond Slack and VictorOps) are not supported.

mod alert;
mod delivery;
mod destination;
mod details;
mod dispatcher;
mod failure;
mod report;
#[cfg(test)]
mod upstream_cases;
mod warning;

pub use alert::{Alert, AlertKind, AlertLevel, AlertSubject};
pub use delivery::{DeliveryProblem, DeliveryReceipt, DestinationAttempt};
pub use dispatcher::{DEFAULT_SLACK_API_URL, DispatchOptions, Dispatcher, Route, SLACK_API_URL_VARIABLE};
pub use failure::{FailureGroup, MAX_ERROR_DETAIL_CHARS};
pub use report::{
    AlertDelivery, FailureAlertOutcome, FailureAlertReport, WarningOutcome, WarningReport, WarningResult,
};
pub use warning::IndexWarning;
