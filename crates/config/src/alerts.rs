//! Alert destinations: `slack` and `victorops` from `config.yml`'s `alert_handlers`
//! (PipelineWise's), `webhook` and `log` from `datadiff.yml` (our extensions).

use std::path::PathBuf;

use crate::Secret;
use crate::document::{Document, join};
use crate::yaml::Node;

/// Slack: `chat.postMessage` with a bot token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlackSettings {
    /// The bot token.
    pub token: Secret,
    /// The default channel.
    pub channel: Option<String>,
    /// The channel for data-diff alerts; `channel` when unset.
    pub data_diff_channel: Option<String>,
}

/// VictorOps REST endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VictorOpsSettings {
    /// The REST endpoint URL; it embeds the API key, so it is a secret.
    pub base_url: Secret,
    /// The routing key appended to it.
    pub routing_key: String,
}

/// A webhook receiving each alert as a JSON POST (extension).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookSettings {
    /// The URL (may embed a token, so it is a secret).
    pub url: Secret,
}

/// A JSON-lines file receiving each alert (extension).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogSettings {
    /// The file; [`crate::load`] resolves a relative path against the project directory to an
    /// absolute path.
    pub path: PathBuf,
}

/// Every configured alert destination.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AlertSettings {
    /// `alert_handlers.slack`.
    pub slack: Option<SlackSettings>,
    /// `alert_handlers.victorops`.
    pub victorops: Option<VictorOpsSettings>,
    /// `datadiff.yml` `alert_handlers.webhook`.
    pub webhook: Option<WebhookSettings>,
    /// `datadiff.yml` `alert_handlers.log`.
    pub log: Option<LogSettings>,
}

impl AlertSettings {
    /// Whether no destination is configured.
    pub fn is_empty(&self) -> bool {
        self.slack.is_none() && self.victorops.is_none() && self.webhook.is_none() && self.log.is_none()
    }

    /// Reads `config.yml`'s `alert_handlers`. Other handler names PipelineWise may know are
    /// ignored; `webhook` and `log` there are a problem pointing to `datadiff.yml`.
    pub(crate) fn read_pipelinewise(document: &mut Document, root: &Node) -> AlertSettings {
        let mut settings = AlertSettings::default();
        let Some(handlers) = root.get("alert_handlers").filter(|n| !n.is_null()) else { return settings };
        let path = "alert_handlers";
        if document.mapping(handlers, path).is_none() {
            return settings;
        }
        if let Some(slack) = handlers.get("slack").filter(|n| !n.is_null()) {
            let path = join(path, "slack");
            if document.mapping(slack, &path).is_some() {
                let token = document.optional_text(slack, &path, "token").filter(|t| !t.is_empty());
                if token.is_none() {
                    let message = document.with_unset_fields("slack alert handler needs a token", slack, &["token"]);
                    document.problem(&path, Some(slack.line), message);
                }
                settings.slack = token.map(|token| SlackSettings {
                    token: Secret::new(token),
                    channel: document.optional_str(slack, &path, "channel"),
                    data_diff_channel: document.optional_str(slack, &path, "data_diff_channel"),
                });
            }
        }
        if let Some(victorops) = handlers.get("victorops").filter(|n| !n.is_null()) {
            let path = join(path, "victorops");
            if document.mapping(victorops, &path).is_some() {
                let base_url = document.optional_text(victorops, &path, "base_url").filter(|t| !t.is_empty());
                let routing_key = document.optional_text(victorops, &path, "routing_key").filter(|t| !t.is_empty());
                match (base_url, routing_key) {
                    (Some(base_url), Some(routing_key)) => {
                        settings.victorops = Some(VictorOpsSettings { base_url: Secret::new(base_url), routing_key });
                    }
                    _ => {
                        let message = document.with_unset_fields(
                            "victorops alert handler needs base_url and routing_key",
                            victorops,
                            &["base_url", "routing_key"],
                        );
                        document.problem(&path, Some(victorops.line), message);
                    }
                }
            }
        }
        for extension in ["webhook", "log"] {
            if let Some(node) = handlers.get(extension) {
                document.problem(
                    &join(path, extension),
                    Some(node.line),
                    format!("'{extension}' is a datadiff extension: configure it in datadiff.yml, which PipelineWise does not read"),
                );
            }
        }
        settings
    }

    /// Reads `datadiff.yml`'s `alert_handlers` (only `webhook` and `log`).
    pub(crate) fn read_extensions(&mut self, document: &mut Document, handlers: &Node) {
        let path = "alert_handlers";
        if document.mapping(handlers, path).is_none() {
            return;
        }
        document.reject_unknown_keys(handlers, path, &["webhook", "log"]);
        if let Some(webhook) = handlers.get("webhook") {
            let path = join(path, "webhook");
            if document.mapping(webhook, &path).is_some() {
                document.reject_unknown_keys(webhook, &path, &["url"]);
                match document.optional_str(webhook, &path, "url").filter(|u| !u.is_empty()) {
                    Some(url) => self.webhook = Some(WebhookSettings { url: Secret::new(url) }),
                    None => {
                        let message = document.with_unset_fields("webhook needs a url", webhook, &["url"]);
                        document.problem(&path, Some(webhook.line), message);
                    }
                }
            }
        }
        if let Some(log) = handlers.get("log") {
            let path = join(path, "log");
            if document.mapping(log, &path).is_some() {
                document.reject_unknown_keys(log, &path, &["path"]);
                match document.optional_str(log, &path, "path").filter(|p| !p.is_empty()) {
                    Some(file) => self.log = Some(LogSettings { path: PathBuf::from(file) }),
                    None => {
                        let message = document.with_unset_fields("log needs a path", log, &["path"]);
                        document.problem(&path, Some(log.line), message);
                    }
                }
            }
        }
    }
}
