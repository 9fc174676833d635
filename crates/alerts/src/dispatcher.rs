//! The dispatcher: a project's alert destinations and taps, and the two sends of an
//! invocation — index warnings (best effort, remembered in the backend) and failure alerts
//! (one per failed check, not best effort).

use std::path::Path;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use chrono::{DateTime, Utc};
use datadiff_access::Environment;
use datadiff_backend_store::{Store, WarningDelivery};
use datadiff_config::{AlertSettings, Project, Tap};
use datadiff_diff_core::attempt::RunSummary;

use crate::alert::Alert;
use crate::delivery::{DeliveryProblem, DeliveryReceipt, DestinationAttempt};
use crate::destination::{Destination, Http, Slack};
use crate::failure::FailureGroup;
use crate::report::{
    AlertDelivery, FailureAlertOutcome, FailureAlertReport, WarningOutcome, WarningReport, WarningResult,
};
use crate::warning::IndexWarning;

/// The environment variable overriding Slack's API base URL (for tests and proxies).
pub const SLACK_API_URL_VARIABLE: &str = "DATADIFF_SLACK_API_URL";

/// Slack's Web API base URL.
pub const DEFAULT_SLACK_API_URL: &str = "https://slack.com/api";

/// How the dispatcher calls its destinations.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DispatchOptions {
    /// The bound of every HTTP call: connecting, sending and receiving together.
    pub timeout: Duration,
    /// Slack's API base URL (`chat.postMessage` is appended).
    pub slack_api_url: String,
}

impl DispatchOptions {
    /// Every HTTP call's default timeout, as PipelineWise's handlers use.
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

    /// The defaults, with Slack's base URL from [`SLACK_API_URL_VARIABLE`] when it is set
    /// and not empty.
    pub fn from_environment(environment: &Environment) -> DispatchOptions {
        let slack_api_url = environment
            .get(SLACK_API_URL_VARIABLE)
            .filter(|url| !url.is_empty())
            .unwrap_or(DEFAULT_SLACK_API_URL)
            .to_owned();
        DispatchOptions { slack_api_url, ..DispatchOptions::default() }
    }
}

impl Default for DispatchOptions {
    fn default() -> DispatchOptions {
        DispatchOptions { timeout: DispatchOptions::DEFAULT_TIMEOUT, slack_api_url: DEFAULT_SLACK_API_URL.to_owned() }
    }
}

/// How a check's alerts are routed, from its tap's settings (looked up by target and tap id).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// The tap has alerts enabled; Slack also posts to its `slack_alert_channel`, if any.
    Tap {
        /// The tap's extra Slack channel.
        slack_alert_channel: Option<String>,
    },
    /// The tap has `send_alert: false`.
    Muted,
    /// No tap of the project has this target and tap id: alerts go to the default
    /// destinations only (with a warning in the log).
    UnknownTap,
}

impl Route {
    fn slack_alert_channel(&self) -> Option<&str> {
        match self {
            Route::Tap { slack_alert_channel } => slack_alert_channel.as_deref(),
            Route::Muted | Route::UnknownTap => None,
        }
    }
}

/// A tap's alert settings.
#[derive(Debug, Clone)]
struct TapRoute {
    target_id: String,
    tap_id: String,
    send_alert: bool,
    slack_alert_channel: Option<String>,
}

/// A project's alert destinations, its taps' routing, and one HTTP client.
///
/// One dispatcher serves one invocation: a destination that times out is not called again by
/// the same dispatcher ([`DeliveryProblem::SkippedAfterTimeout`]), so an unreachable endpoint
/// costs one timeout per invocation, not one per alert.
#[derive(Debug)]
pub struct Dispatcher {
    destinations: Vec<Destination>,
    taps: Vec<TapRoute>,
    http: Http,
    /// Per destination: whether it timed out earlier.
    timed_out: Mutex<Vec<bool>>,
}

impl Dispatcher {
    /// The destinations of `settings` (Slack, VictorOps, webhook, log, in that order; a
    /// relative log path is resolved against `project_dir`) and the routing of `taps`.
    pub fn from_settings(
        settings: &AlertSettings,
        taps: &[Tap],
        project_dir: &Path,
        options: &DispatchOptions,
    ) -> Dispatcher {
        let mut destinations = Vec::new();
        if let Some(slack) = &settings.slack {
            destinations.push(Destination::Slack(Slack {
                token: slack.token.clone(),
                channel: slack.data_diff_channel.clone().or_else(|| slack.channel.clone()),
                api_url: options.slack_api_url.clone(),
            }));
        }
        if let Some(victorops) = &settings.victorops {
            let base = victorops.base_url.expose().trim_end_matches('/');
            destinations.push(Destination::VictorOps {
                endpoint: datadiff_config::Secret::new(format!("{base}/{}", victorops.routing_key)),
            });
        }
        if let Some(webhook) = &settings.webhook {
            destinations.push(Destination::Webhook { url: webhook.url.clone() });
        }
        if let Some(log) = &settings.log {
            destinations.push(Destination::Log { path: project_dir.join(&log.path) });
        }
        let taps = taps
            .iter()
            .map(|tap| TapRoute {
                target_id: tap.target_id.clone(),
                tap_id: tap.id.clone(),
                send_alert: tap.send_alert,
                slack_alert_channel: tap.slack_alert_channel.clone(),
            })
            .collect();
        Dispatcher {
            timed_out: Mutex::new(vec![false; destinations.len()]),
            destinations,
            taps,
            http: Http::new(options.timeout),
        }
    }

    /// [`Dispatcher::from_settings`] for a loaded project, with
    /// [`DispatchOptions::from_environment`].
    pub fn from_project(project: &Project, environment: &Environment) -> Dispatcher {
        let options = DispatchOptions::from_environment(environment);
        Dispatcher::from_settings(&project.alerts, &project.taps, &project.dir, &options)
    }

    /// Whether any destination is configured.
    pub fn has_destinations(&self) -> bool {
        !self.destinations.is_empty()
    }

    /// How alerts of the tap `tap_id` replicating into `target_id` are routed.
    pub fn route(&self, target_id: &str, tap_id: &str) -> Route {
        match self.taps.iter().find(|tap| tap.target_id == target_id && tap.tap_id == tap_id) {
            None => Route::UnknownTap,
            Some(tap) if !tap.send_alert => Route::Muted,
            Some(tap) => Route::Tap { slack_alert_channel: tap.slack_alert_channel.clone() },
        }
    }

    /// Hands `alert` to every destination at once (each on its own thread, so a hanging one
    /// delays no other beyond its timeout) and returns their answers in configuration order.
    /// Failures are logged as warnings. `route` adds the tap's Slack channel; a muted route
    /// is the caller's business (this sends anyway).
    pub fn deliver(&self, alert: &Alert, route: &Route) -> DeliveryReceipt {
        let tap_channel = route.slack_alert_channel();
        let skipped: Vec<bool> = self.timed_out.lock().unwrap_or_else(PoisonError::into_inner).clone();
        let send = &|(destination, skip): (&Destination, bool)| {
            if skip {
                destination.not_tried(tap_channel, DeliveryProblem::SkippedAfterTimeout)
            } else {
                destination.deliver(alert, tap_channel, &self.http)
            }
        };
        let answers: Vec<Vec<DestinationAttempt>> = if self.destinations.len() <= 1 {
            self.destinations.iter().zip(skipped).map(send).collect()
        } else {
            std::thread::scope(|scope| {
                let handles: Vec<_> = self
                    .destinations
                    .iter()
                    .zip(skipped)
                    .map(|pair| (pair.0, scope.spawn(move || send(pair))))
                    .collect();
                handles
                    .into_iter()
                    .map(|(destination, handle)| {
                        handle.join().unwrap_or_else(|_| {
                            destination.not_tried(
                                tap_channel,
                                DeliveryProblem::Request("the delivery thread panicked".to_owned()),
                            )
                        })
                    })
                    .collect()
            })
        };
        {
            let mut timed_out = self.timed_out.lock().unwrap_or_else(PoisonError::into_inner);
            for (flag, attempts) in timed_out.iter_mut().zip(&answers) {
                if attempts.iter().any(|attempt| matches!(attempt.outcome, Err(DeliveryProblem::TimedOut(_)))) {
                    *flag = true;
                }
            }
        }
        let receipt = DeliveryReceipt { attempts: answers.into_iter().flatten().collect() };
        for (destination, problem) in receipt.failures() {
            tracing::warn!(
                kind = alert.kind.as_str(),
                check = %alert.subject.full_check_name,
                destination,
                %problem,
                "alert not delivered to a destination"
            );
        }
        receipt
    }

    /// Sends the failure alerts of an invocation's summaries (runs note §5.1): one per failed
    /// check ([`FailureGroup`]), routed by its representative failure's tap — nothing for a
    /// muted tap, the default destinations only (and a warning) for a tap the project does
    /// not have. Every destination is tried; an alert none accepted is in
    /// [`FailureAlertReport::undelivered_line`]. Call once per invocation, after the run
    /// table is printed; `now` is the invocation's time (`--at`).
    pub fn send_failure_alerts(&self, summaries: &[RunSummary], now: DateTime<Utc>) -> FailureAlertReport {
        let mut report = FailureAlertReport::default();
        for group in FailureGroup::of(summaries) {
            let representative = group.representative();
            let check = &representative.check;
            let route = self.route(&check.target_id, &check.tap_id);
            let delivery = match route {
                Route::Muted => AlertDelivery::Muted,
                _ if !self.has_destinations() => AlertDelivery::NoDestination,
                _ => {
                    if route == Route::UnknownTap {
                        tracing::warn!(
                            target_id = %check.target_id,
                            tap_id = %check.tap_id,
                            "no tap with this target and tap id in the project: alerting without its channel"
                        );
                    }
                    AlertDelivery::Sent(self.deliver(&group.alert(now), &route))
                }
            };
            report.alerts.push(FailureAlertOutcome {
                full_check_name: check.full_check_name.clone(),
                check_id: check.check_id,
                status: representative.status,
                failed_attempts: group.failures().len(),
                delivery,
            });
        }
        report
    }

    /// Sends the source-index warnings an invocation's summaries leave pending (runs note
    /// §5.2, [`IndexWarning::pending`]), each at most once ever: through
    /// [`Store::deliver_index_warning`], which holds the warning's advisory lock, skips a
    /// warning already remembered, and writes the marker only when a destination accepted
    /// it. The routing check is the latest observation whose tap has alerts enabled (a muted
    /// tap does not suppress an enabled one); none → not sent. Best effort: every
    /// destination is tried, failures (delivery or backend) are logged and reported, nothing
    /// here should change the exit code. Call before the failure alerts; `now` is the
    /// invocation's time (`--at`), also the marker's `sent_at`.
    pub fn send_index_warnings(&self, store: &Store, summaries: &[RunSummary], now: DateTime<Utc>) -> WarningReport {
        let mut report = WarningReport::default();
        for warning in IndexWarning::pending(summaries) {
            let routing = warning
                .observations()
                .iter()
                .rev()
                .find(|summary| self.route(&summary.check.target_id, &summary.check.tap_id) != Route::Muted)
                .copied();
            let Some(routing) = routing else {
                report.warnings.push(WarningOutcome {
                    warning_id: warning.warning_id,
                    full_check_name: warning.latest().check.full_check_name.clone(),
                    check_id: warning.latest().check.check_id,
                    result: WarningResult::Muted,
                });
                continue;
            };
            let check = &routing.check;
            let result = if self.has_destinations() {
                let route = self.route(&check.target_id, &check.tap_id);
                let alert = warning.alert(routing, now);
                let mut receipt = None;
                let delivery = store.deliver_index_warning(warning.warning_id.get(), check.check_id, now, || {
                    let answers = self.deliver(&alert, &route);
                    let accepted = answers.accepted();
                    receipt = Some(answers);
                    accepted
                });
                match delivery {
                    Ok(WarningDelivery::AlreadyDelivered) => WarningResult::AlreadyDelivered,
                    Ok(WarningDelivery::Delivered) => WarningResult::Delivered(receipt.unwrap_or_default()),
                    Ok(WarningDelivery::NotAccepted) => {
                        tracing::warn!(
                            warning_id = %warning.warning_id,
                            check = %check.full_check_name,
                            "index warning not accepted by any destination; the next invocation tries again"
                        );
                        WarningResult::NotAccepted(receipt.unwrap_or_default())
                    }
                    Err(error) => {
                        tracing::warn!(
                            warning_id = %warning.warning_id,
                            check = %check.full_check_name,
                            error = %error,
                            "index warning delivery failed in the backend; the next invocation tries again"
                        );
                        WarningResult::BackendFailed { error, receipt }
                    }
                }
            } else {
                WarningResult::NoDestination
            };
            report.warnings.push(WarningOutcome {
                warning_id: warning.warning_id,
                full_check_name: check.full_check_name.clone(),
                check_id: check.check_id,
                result,
            });
        }
        report
    }
}
