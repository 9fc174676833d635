//! The alert destinations and how each is called: Slack's `chat.postMessage`, a VictorOps
//! REST endpoint, a webhook and a JSON-lines file.
//!
//! Every HTTP call goes through one [`ureq::Agent`] whose global timeout bounds connecting,
//! sending and receiving together; it follows no redirect (an alert is never re-posted to
//! another host) and reads at most 64 KiB of an answer. Secrets (the Slack token, the
//! VictorOps and webhook URLs, which embed keys) are only ever handed to the request: a
//! failure names the destination and the problem, never the URL.

use std::fs::OpenOptions;
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use datadiff_config::Secret;
use serde_json::{Value as Json, json};

use crate::alert::{Alert, AlertLevel};
use crate::delivery::{DeliveryProblem, DestinationAttempt};

/// The most of an answer read.
const MAX_ANSWER_BYTES: u64 = 64 * 1024;

/// The HTTP client every destination shares, with its timeout.
#[derive(Debug, Clone)]
pub(crate) struct Http {
    agent: ureq::Agent,
    timeout: Duration,
}

impl Http {
    /// A client whose every call (connect, send, receive) ends within `timeout`.
    pub(crate) fn new(timeout: Duration) -> Http {
        let agent = ureq::Agent::config_builder()
            .timeout_global(Some(timeout))
            .http_status_as_error(false)
            .max_redirects(0)
            .user_agent(concat!("datadiff/", env!("CARGO_PKG_VERSION")))
            .build()
            .into();
        Http { agent, timeout }
    }

    /// POSTs `body` as JSON with `headers`; the status and, when `read_answer`, the answer.
    fn post_json(
        &self,
        url: &str,
        headers: &[(&str, &str)],
        body: &Json,
        read_answer: bool,
    ) -> Result<(u16, String), DeliveryProblem> {
        let mut request = self.agent.post(url).header("Content-Type", "application/json; charset=utf-8");
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let mut response = request.send(body.to_string()).map_err(|error| self.problem(error))?;
        let status = response.status().as_u16();
        let answer = if read_answer {
            response.body_mut().with_config().limit(MAX_ANSWER_BYTES).read_to_string().map_err(|e| self.problem(e))?
        } else {
            String::new()
        };
        Ok((status, answer))
    }

    /// What went wrong, without the URL (which may embed a key).
    fn problem(&self, error: ureq::Error) -> DeliveryProblem {
        match error {
            ureq::Error::Timeout(_) => DeliveryProblem::TimedOut(self.timeout),
            ureq::Error::Io(io)
                if matches!(io.kind(), std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock) =>
            {
                DeliveryProblem::TimedOut(self.timeout)
            }
            ureq::Error::StatusCode(code) => DeliveryProblem::HttpStatus(code),
            ureq::Error::Io(io) => DeliveryProblem::Unreachable(io.to_string()),
            ureq::Error::HostNotFound => DeliveryProblem::Unreachable("host not found".to_owned()),
            ureq::Error::ConnectionFailed => DeliveryProblem::Unreachable("connection failed".to_owned()),
            ureq::Error::Tls(message) => DeliveryProblem::Unreachable(format!("TLS: {message}")),
            ureq::Error::Rustls(error) => DeliveryProblem::Unreachable(format!("TLS: {error}")),
            ureq::Error::BadUri(_) | ureq::Error::RequireHttpsOnly(_) => {
                DeliveryProblem::Request("the configured URL is not a valid http(s) URL".to_owned())
            }
            ureq::Error::TooManyRedirects | ureq::Error::RedirectFailed => {
                DeliveryProblem::Request("the endpoint redirected (alerts follow no redirect)".to_owned())
            }
            ureq::Error::Protocol(_) | ureq::Error::LargeResponseHeader(..) => {
                DeliveryProblem::Request("the answer is not valid HTTP".to_owned())
            }
            // Other variants may quote the URL or a proxy's: say only that the call failed.
            _ => DeliveryProblem::Request("the HTTP call failed".to_owned()),
        }
    }
}

/// Slack's Web API: `chat.postMessage` with a bot token.
#[derive(Debug, Clone)]
pub(crate) struct Slack {
    /// The bot token (sent as a bearer token).
    pub(crate) token: Secret,
    /// `data_diff_channel`, else `channel`.
    pub(crate) channel: Option<String>,
    /// The API base URL, `https://slack.com/api` unless overridden.
    pub(crate) api_url: String,
}

/// A configured destination.
#[derive(Debug, Clone)]
pub(crate) enum Destination {
    /// `alert_handlers.slack`.
    Slack(Slack),
    /// `alert_handlers.victorops`: the endpoint `<base_url>/<routing_key>`.
    VictorOps {
        /// The full endpoint (it embeds the API key and the routing key).
        endpoint: Secret,
    },
    /// `datadiff.yml` `alert_handlers.webhook`.
    Webhook {
        /// The URL (may embed a token).
        url: Secret,
    },
    /// `datadiff.yml` `alert_handlers.log`.
    Log {
        /// The file, resolved against the project directory.
        path: PathBuf,
    },
}

/// Slack's control characters escaped, and a code fence in the text broken so that it cannot
/// close the details' fence.
fn slack_text(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace("```", "'''")
}

impl Destination {
    /// The destination's name in reports and logs: `slack`, `victorops`, `webhook` or
    /// `log <path>`.
    pub(crate) fn name(&self) -> String {
        match self {
            Destination::Slack(_) => "slack".to_owned(),
            Destination::VictorOps { .. } => "victorops".to_owned(),
            Destination::Webhook { .. } => "webhook".to_owned(),
            Destination::Log { path } => format!("log {}", path.display()),
        }
    }

    /// The attempt recorded for every channel or endpoint of this destination when it is not
    /// tried.
    pub(crate) fn not_tried(&self, tap_channel: Option<&str>, problem: DeliveryProblem) -> Vec<DestinationAttempt> {
        match self {
            Destination::Slack(slack) => {
                let channels = slack.channels(tap_channel);
                if channels.is_empty() {
                    return vec![DestinationAttempt { destination: self.name(), outcome: Err(problem) }];
                }
                channels
                    .into_iter()
                    .map(|channel| DestinationAttempt {
                        destination: format!("slack channel {channel}"),
                        outcome: Err(problem.clone()),
                    })
                    .collect()
            }
            _ => vec![DestinationAttempt { destination: self.name(), outcome: Err(problem) }],
        }
    }

    /// Hands `alert` to this destination (every channel of a Slack handler, in order).
    pub(crate) fn deliver(&self, alert: &Alert, tap_channel: Option<&str>, http: &Http) -> Vec<DestinationAttempt> {
        match self {
            Destination::Slack(slack) => slack.deliver(alert, tap_channel, http),
            Destination::VictorOps { endpoint } => {
                let message_type = match alert.level {
                    AlertLevel::Error => "CRITICAL",
                    AlertLevel::Warning => "WARNING",
                };
                let body = json!({
                    "message_type": message_type,
                    "entity_display_name": alert.text(),
                    "state_message": Json::Null,
                });
                let outcome = http.post_json(endpoint.expose(), &[], &body, false).and_then(accepted_status);
                vec![DestinationAttempt { destination: self.name(), outcome }]
            }
            Destination::Webhook { url } => {
                let outcome = http.post_json(url.expose(), &[], &alert.to_json(), false).and_then(accepted_status);
                vec![DestinationAttempt { destination: self.name(), outcome }]
            }
            Destination::Log { path } => {
                let mut line = alert.to_json().to_string();
                line.push('\n');
                let outcome = append_record(path, &line)
                    .map_err(|failure| DeliveryProblem::File { path: path.clone(), message: failure.to_string() });
                vec![DestinationAttempt { destination: self.name(), outcome }]
            }
        }
    }
}

/// Appends one JSON line to the log at `path`, whole or not at all.
///
/// The line goes out in one `write` to a file opened for appending, so concurrent writers'
/// records never interleave. A write that got only part of the line in (a full disk, a quota,
/// a file-size limit) is undone by truncating the file back to its length before the write —
/// when nothing else was appended meanwhile; otherwise the failure says that a part was left.
/// Either way the record is not delivered. A file whose last record lacks its line end (a
/// writer that died mid-line) gets one before the new record, so the new record is readable.
fn append_record(path: &Path, line: &str) -> Result<(), AppendFailure> {
    let mut file = OpenOptions::new().read(true).create(true).append(true).open(path)?;
    let before = file.metadata()?;
    let regular = before.is_file();
    let before = before.len();
    let mut record = Vec::with_capacity(line.len() + 1);
    if regular && before > 0 {
        let mut last = [0_u8];
        if file.read_at(&mut last, before - 1).is_ok_and(|read| read == 1) && last[0] != b'\n' {
            record.push(b'\n');
        }
    }
    record.extend_from_slice(line.as_bytes());
    let (written, error) = match file.write(&record) {
        Ok(written) if written == record.len() => return Ok(()),
        Ok(written) => (written, AppendFailure::Short { written, total: record.len() }),
        Err(error) => (0, AppendFailure::Io(error)),
    };
    if !regular {
        return Err(error);
    }
    // Undo a partial record, unless another writer appended after it (its record stays).
    match file.metadata() {
        Ok(now) if now.len() == before => Err(error),
        Ok(now) if now.len() == before + written as u64 => match file.set_len(before) {
            Ok(()) => Err(AppendFailure::Removed(Box::new(error))),
            Err(undo) => Err(AppendFailure::Left { cause: Box::new(error), written, undo: Some(undo) }),
        },
        _ => Err(AppendFailure::Left { cause: Box::new(error), written, undo: None }),
    }
}

/// Why a record was not appended to a log file.
#[derive(Debug, thiserror::Error)]
enum AppendFailure {
    /// Opening, inspecting or writing the file failed.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// The write took only part of the record.
    #[error("the file took only {written} of the record's {total} bytes")]
    Short { written: usize, total: usize },
    /// The write failed part-way and the part was undone.
    #[error("{0}; the partial record was removed")]
    Removed(Box<AppendFailure>),
    /// The write failed part-way and the part stays in the file (another writer appended
    /// after it, or truncating failed).
    #[error("{cause}; {written} bytes of it were left in the file{}", undo.as_ref().map(|undo| format!(" ({undo})")).unwrap_or_default())]
    Left { cause: Box<AppendFailure>, written: usize, undo: Option<std::io::Error> },
}

/// 2xx is acceptance.
fn accepted_status((status, _): (u16, String)) -> Result<(), DeliveryProblem> {
    if (200..300).contains(&status) { Ok(()) } else { Err(DeliveryProblem::HttpStatus(status)) }
}

impl Slack {
    /// The handler's data-diff channel, plus the tap's `slack_alert_channel` when it differs.
    fn channels(&self, tap_channel: Option<&str>) -> Vec<String> {
        let mut channels: Vec<String> = self.channel.iter().filter(|c| !c.is_empty()).cloned().collect();
        if let Some(tap_channel) = tap_channel.filter(|c| !c.is_empty())
            && channels.first().map(String::as_str) != Some(tap_channel)
        {
            channels.push(tap_channel.to_owned());
        }
        channels
    }

    /// The `chat.postMessage` payload: the message in bold after `:exclamation:`, and one
    /// attachment coloured by level holding the details in a code block and the next action.
    pub(crate) fn payload(alert: &Alert, channel: &str) -> Json {
        let color = match alert.level {
            AlertLevel::Error => "danger",
            AlertLevel::Warning => "warning",
        };
        json!({
            "channel": channel,
            "text": format!(":exclamation: *{}*", slack_text(&alert.message)),
            "attachments": [{
                "color": color,
                "text": format!(
                    "```{}```\n\n*Next action:*\n{}",
                    slack_text(&alert.details),
                    slack_text(&alert.next_action)
                ),
                "mrkdwn_in": ["text"],
                "fallback": alert.message,
            }],
        })
    }

    fn deliver(&self, alert: &Alert, tap_channel: Option<&str>, http: &Http) -> Vec<DestinationAttempt> {
        let channels = self.channels(tap_channel);
        if channels.is_empty() {
            return vec![DestinationAttempt {
                destination: "slack".to_owned(),
                outcome: Err(DeliveryProblem::NoSlackChannel),
            }];
        }
        let url = format!("{}/chat.postMessage", self.api_url.trim_end_matches('/'));
        let authorization = format!("Bearer {}", self.token.expose());
        let mut timed_out = false;
        channels
            .into_iter()
            .map(|channel| {
                // One host: once it timed out, the other channels would only wait again.
                let outcome = if timed_out {
                    Err(DeliveryProblem::SkippedAfterTimeout)
                } else {
                    let outcome = http
                        .post_json(&url, &[("Authorization", &authorization)], &Slack::payload(alert, &channel), true)
                        .and_then(slack_answer);
                    timed_out = matches!(outcome, Err(DeliveryProblem::TimedOut(_)));
                    outcome
                };
                DestinationAttempt { destination: format!("slack channel {channel}"), outcome }
            })
            .collect()
    }
}

/// Slack answers HTTP 200 with `{"ok": true}` when it accepted the message, and `{"ok":
/// false, "error": "<code>"}` when it did not.
fn slack_answer((status, answer): (u16, String)) -> Result<(), DeliveryProblem> {
    if status != 200 {
        return Err(DeliveryProblem::HttpStatus(status));
    }
    let answer: Json = serde_json::from_str(&answer).map_err(|_| DeliveryProblem::UnexpectedAnswer)?;
    match answer.get("ok").and_then(Json::as_bool) {
        Some(true) => Ok(()),
        Some(false) => {
            // Slack's error codes are short snake_case words; keep only such characters.
            let code: String = answer
                .get("error")
                .and_then(Json::as_str)
                .unwrap_or("unknown_error")
                .chars()
                .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
                .take(64)
                .collect();
            Err(DeliveryProblem::SlackRefused(code))
        }
        None => Err(DeliveryProblem::UnexpectedAnswer),
    }
}

#[cfg(test)]
mod tests {
    use chrono::{TimeZone, Utc};
    use datadiff_diff_core::attempt::CheckId;
    use uuid::Uuid;

    use super::*;
    use crate::alert::{AlertKind, AlertSubject};

    fn alert() -> Alert {
        Alert {
            kind: AlertKind::Failure,
            level: AlertLevel::Error,
            message: "FAIL data-diff payments/public.t<1> — data mismatch".into(),
            details: "error_detail     : a & b ```x```".into(),
            next_action: "Repair <it>.".into(),
            subject: AlertSubject {
                full_check_name: "postgres/payments/public/t<1>".into(),
                check_id: CheckId::new(Uuid::from_u128(1)),
                revision: 1,
                is_current: true,
                target_id: "postgres".into(),
                tap_id: "payments".into(),
                status: None,
                run_id: None,
                failed_attempts: None,
                warning_id: None,
            },
            created_at: Utc.with_ymd_and_hms(2026, 7, 22, 13, 5, 0).unwrap(),
        }
    }

    #[test]
    fn slack_payload_escapes_controls_and_keeps_the_fence_closed() {
        let payload = Slack::payload(&alert(), "#data-diff");
        assert_eq!(payload["channel"], "#data-diff");
        assert_eq!(payload["text"], ":exclamation: *FAIL data-diff payments/public.t&lt;1&gt; — data mismatch*");
        let attachment = &payload["attachments"][0];
        assert_eq!(attachment["color"], "danger");
        assert_eq!(
            attachment["text"],
            "```error_detail     : a &amp; b '''x'''```\n\n*Next action:*\nRepair &lt;it&gt;."
        );
        assert_eq!(attachment["mrkdwn_in"], json!(["text"]));
        assert_eq!(attachment["fallback"], "FAIL data-diff payments/public.t<1> — data mismatch");
        let mut warning = alert();
        warning.level = AlertLevel::Warning;
        assert_eq!(Slack::payload(&warning, "c")["attachments"][0]["color"], "warning");
    }

    #[test]
    fn slack_channels_add_the_taps_channel_when_it_differs() {
        let slack = |channel: Option<&str>| Slack {
            token: Secret::new("xoxb-secret"),
            channel: channel.map(str::to_owned),
            api_url: "http://127.0.0.1:9".into(),
        };
        assert_eq!(slack(Some("#dd")).channels(None), ["#dd"]);
        assert_eq!(slack(Some("#dd")).channels(Some("#dd")), ["#dd"]);
        assert_eq!(slack(Some("#dd")).channels(Some("#payments")), ["#dd", "#payments"]);
        assert_eq!(slack(None).channels(Some("#payments")), ["#payments"]);
        assert!(slack(None).channels(None).is_empty());
        assert!(slack(Some("")).channels(Some("")).is_empty());
    }

    #[test]
    fn slack_answers_are_read_as_the_web_api_defines_them() {
        assert_eq!(slack_answer((200, r#"{"ok":true}"#.into())), Ok(()));
        assert_eq!(
            slack_answer((200, r#"{"ok":false,"error":"channel_not_found"}"#.into())),
            Err(DeliveryProblem::SlackRefused("channel_not_found".into()))
        );
        assert_eq!(
            slack_answer((200, r#"{"ok":false,"error":"<b>bad</b> token=x"}"#.into())),
            Err(DeliveryProblem::SlackRefused("bbadbtokenx".into()))
        );
        assert_eq!(slack_answer((200, "<html>".into())), Err(DeliveryProblem::UnexpectedAnswer));
        assert_eq!(slack_answer((200, "{}".into())), Err(DeliveryProblem::UnexpectedAnswer));
        assert_eq!(slack_answer((429, r#"{"ok":false}"#.into())), Err(DeliveryProblem::HttpStatus(429)));
    }

    #[test]
    fn only_2xx_is_acceptance() {
        assert_eq!(accepted_status((200, String::new())), Ok(()));
        assert_eq!(accepted_status((204, String::new())), Ok(()));
        assert_eq!(accepted_status((302, String::new())), Err(DeliveryProblem::HttpStatus(302)));
        assert_eq!(accepted_status((500, String::new())), Err(DeliveryProblem::HttpStatus(500)));
    }

    #[test]
    fn names_never_show_a_secret() {
        let victorops = Destination::VictorOps { endpoint: Secret::new("https://alert.example/api-key/routing") };
        let webhook = Destination::Webhook { url: Secret::new("https://hooks.example/token") };
        assert_eq!(victorops.name(), "victorops");
        assert_eq!(webhook.name(), "webhook");
        let debug = format!("{victorops:?} {webhook:?}");
        assert!(!debug.contains("api-key") && !debug.contains("token"), "{debug}");
    }

    #[test]
    fn a_record_after_a_line_cut_short_starts_a_line_of_its_own() {
        let path = std::env::temp_dir().join(format!("datadiff-alerts-unit-{}.jsonl", std::process::id()));
        std::fs::write(&path, "{\"a\":1}\n{\"cut\":").unwrap();
        append_record(&path, "{\"b\":2}\n").unwrap();
        append_record(&path, "{\"c\":3}\n").unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let _ = std::fs::remove_file(&path);
        assert_eq!(text, "{\"a\":1}\n{\"cut\":\n{\"b\":2}\n{\"c\":3}\n");
    }

    #[test]
    fn an_invalid_url_is_reported_without_quoting_it() {
        let http = Http::new(Duration::from_secs(1));
        let body = json!({});
        let problem = http.post_json("not a url/secret-key", &[], &body, false).unwrap_err();
        assert!(!problem.to_string().contains("secret-key"), "{problem}");
    }
}
