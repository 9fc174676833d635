//! What happened when one alert was handed to the configured destinations.

use std::path::PathBuf;
use std::time::Duration;

/// Why a destination did not accept an alert. Data, never a secret: no URL (VictorOps and
/// webhook URLs embed keys), no token, no routing key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DeliveryProblem {
    /// No complete answer within the timeout (connecting, sending and receiving together).
    #[error("no answer within {0:?}")]
    TimedOut(Duration),
    /// Not tried: the destination already timed out earlier in this invocation, and every
    /// further alert would wait for the timeout again.
    #[error("not tried: it timed out earlier in this invocation")]
    SkippedAfterTimeout,
    /// The endpoint answered with a status other than 2xx.
    #[error("answered HTTP {0}")]
    HttpStatus(u16),
    /// Slack's API answered `{"ok": false, "error": <code>}`.
    #[error("Slack refused the message: {0}")]
    SlackRefused(String),
    /// Slack's API answered something that is not an API response.
    #[error("the answer is not a Slack API response")]
    UnexpectedAnswer,
    /// No Slack channel for this alert: the handler has neither `data_diff_channel` nor
    /// `channel`, and the tap has no `slack_alert_channel`.
    #[error("no Slack channel configured (data_diff_channel, channel or the tap's slack_alert_channel)")]
    NoSlackChannel,
    /// The endpoint could not be reached (refused, unresolvable, TLS failure...).
    #[error("cannot reach it: {0}")]
    Unreachable(String),
    /// The request could not be made (an invalid URL, a redirect...).
    #[error("the request failed: {0}")]
    Request(String),
    /// The `log` file could not be appended to.
    #[error("cannot append to {}: {message}", path.display())]
    File {
        /// The file.
        path: PathBuf,
        /// The I/O error's text.
        message: String,
    },
}

/// One destination's answer to one alert (a Slack handler gives one per channel).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DestinationAttempt {
    /// Which destination: `slack channel <c>`, `victorops`, `webhook` or `log <path>`.
    pub destination: String,
    /// `Ok` when it accepted the alert.
    pub outcome: Result<(), DeliveryProblem>,
}

/// Every destination's answer to one alert, in configuration order (Slack, VictorOps,
/// webhook, log).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DeliveryReceipt {
    /// One per destination tried.
    pub attempts: Vec<DestinationAttempt>,
}

impl DeliveryReceipt {
    /// Whether at least one destination accepted the alert.
    pub fn accepted(&self) -> bool {
        self.attempts.iter().any(|attempt| attempt.outcome.is_ok())
    }

    /// The destinations that did not accept it, with why.
    pub fn failures(&self) -> impl Iterator<Item = (&str, &DeliveryProblem)> {
        self.attempts.iter().filter_map(|attempt| match &attempt.outcome {
            Ok(()) => None,
            Err(problem) => Some((attempt.destination.as_str(), problem)),
        })
    }

    /// `slack channel #x: answered HTTP 500; webhook: no answer within 10s`.
    pub fn failure_text(&self) -> String {
        let failures: Vec<String> =
            self.failures().map(|(destination, problem)| format!("{destination}: {problem}")).collect();
        failures.join("; ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepted_when_any_destination_accepted() {
        let refused =
            DestinationAttempt { destination: "webhook".into(), outcome: Err(DeliveryProblem::HttpStatus(500)) };
        let timed_out = DestinationAttempt {
            destination: "slack channel #dd".into(),
            outcome: Err(DeliveryProblem::TimedOut(Duration::from_secs(10))),
        };
        let accepted = DestinationAttempt { destination: "victorops".into(), outcome: Ok(()) };
        let none = DeliveryReceipt { attempts: vec![refused.clone(), timed_out.clone()] };
        assert!(!none.accepted());
        assert_eq!(none.failure_text(), "webhook: answered HTTP 500; slack channel #dd: no answer within 10s");
        let one = DeliveryReceipt { attempts: vec![refused, accepted, timed_out] };
        assert!(one.accepted());
        assert_eq!(one.failures().count(), 2);
        assert!(!DeliveryReceipt::default().accepted());
    }
}
