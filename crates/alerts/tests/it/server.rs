//! Fixtures of the alert tests: a tiny HTTP server on 127.0.0.1 that accepts, refuses or
//! hangs and keeps every request it read; alert settings and taps pointing at such servers;
//! summaries built from stored definitions.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::{DateTime, Utc};
use datadiff_alerts::{DispatchOptions, Dispatcher};
use datadiff_backend_store::{DefinitionFilter, StoredDefinition, SyncScope};
use datadiff_config::{AlertSettings, LogSettings, Secret, SlackSettings, Tap, VictorOpsSettings, WebhookSettings};
use datadiff_diff_core::{
    attempt::{
        Bounds, CheckIdentity, CheckResult, PreflightFacts, PreflightStatus, ResultStatus, ResultType, RunId,
        RunStatus, RunSummary, SummaryStatus, TriggerType,
    },
    definition::{CheckDefinition, CheckType},
};
use serde_json::{Value as Json, json};
use uuid::Uuid;

use crate::context::{Context, at};

/// What the server does with a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// 200 with `{"ok":true}` (Slack's acceptance; any other client sees a 200).
    Accept,
    /// 200 with `{"ok":true}`, after a pause (to make concurrent deliveries overlap).
    AcceptSlowly,
    /// 500.
    Refuse,
    /// 200 with `{"ok":false,"error":"channel_not_found"}` (Slack's refusal).
    SlackRefuse,
    /// Never answers: reads until the client gives up.
    Hang,
}

/// One request as read.
#[derive(Debug, Clone)]
pub(crate) struct Request {
    pub(crate) method: String,
    pub(crate) path: String,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: String,
}

impl Request {
    /// The value of header `name` (case-insensitive).
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    pub(crate) fn json(&self) -> Json {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.body))
    }
}

/// A local HTTP server; a thread per connection; requests kept in arrival order.
pub(crate) struct Server {
    port: u16,
    mode: Arc<Mutex<Mode>>,
    requests: Arc<Mutex<Vec<Request>>>,
}

impl Server {
    pub(crate) fn start(mode: Mode) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let mode = Arc::new(Mutex::new(mode));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let (thread_mode, thread_requests) = (mode.clone(), requests.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let (mode, requests) = (thread_mode.clone(), thread_requests.clone());
                std::thread::spawn(move || serve(stream, &mode, &requests));
            }
        });
        Server { port, mode, requests }
    }

    pub(crate) fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub(crate) fn set_mode(&self, mode: Mode) {
        *self.mode.lock().unwrap() = mode;
    }

    pub(crate) fn requests(&self) -> Vec<Request> {
        self.requests.lock().unwrap().clone()
    }

    pub(crate) fn bodies(&self) -> Vec<Json> {
        self.requests().iter().map(Request::json).collect()
    }
}

fn serve(stream: TcpStream, mode: &Mutex<Mode>, requests: &Mutex<Vec<Request>>) {
    stream.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut line = String::new();
    if reader.read_line(&mut line).unwrap_or(0) == 0 {
        return;
    }
    let mut parts = line.split_whitespace();
    let (method, path) = (parts.next().unwrap_or_default().to_owned(), parts.next().unwrap_or_default().to_owned());
    let mut headers = Vec::new();
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header).unwrap_or(0) == 0 {
            return;
        }
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':') {
            headers.push((name.trim().to_owned(), value.trim().to_owned()));
        }
    }
    let length: usize = headers
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, value)| value.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; length];
    if reader.read_exact(&mut body).is_err() {
        return;
    }
    requests.lock().unwrap().push(Request { method, path, headers, body: String::from_utf8_lossy(&body).into_owned() });
    let mode = *mode.lock().unwrap();
    let (status, answer) = match mode {
        Mode::Accept => ("200 OK", r#"{"ok":true}"#),
        Mode::AcceptSlowly => {
            std::thread::sleep(Duration::from_millis(300));
            ("200 OK", r#"{"ok":true}"#)
        }
        Mode::Refuse => ("500 Internal Server Error", "refused"),
        Mode::SlackRefuse => ("200 OK", r#"{"ok":false,"error":"channel_not_found"}"#),
        Mode::Hang => {
            // Hold the connection until the client closes it.
            let mut rest = Vec::new();
            let _ = reader.read_to_end(&mut rest);
            return;
        }
    };
    let mut stream = stream;
    let _ = write!(
        stream,
        "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{answer}",
        answer.len()
    );
    let _ = stream.flush();
}

/// The Slack token, VictorOps routing key and webhook path of the fixtures: secrets that must
/// appear in no report.
pub(crate) const SLACK_TOKEN: &str = "xoxb-secret-token";
pub(crate) const ROUTING_KEY: &str = "secret-routing-key";
pub(crate) const WEBHOOK_TOKEN: &str = "secret-webhook-token";

/// Slack (channel `#data-diff`) at `slack`'s URL … each destination when given.
pub(crate) fn settings(
    slack: Option<&Server>,
    victorops: Option<&Server>,
    webhook: Option<&Server>,
    log: Option<&Path>,
) -> AlertSettings {
    AlertSettings {
        slack: slack.map(|_| SlackSettings {
            token: Secret::new(SLACK_TOKEN),
            channel: Some("#general".into()),
            data_diff_channel: Some("#data-diff".into()),
        }),
        victorops: victorops.map(|server| VictorOpsSettings {
            base_url: Secret::new(format!("{}/integrations/api-key-in-path/", server.url())),
            routing_key: ROUTING_KEY.into(),
        }),
        webhook: webhook
            .map(|server| WebhookSettings { url: Secret::new(format!("{}/hooks/{WEBHOOK_TOKEN}", server.url())) }),
        log: log.map(|path| LogSettings { path: path.to_owned() }),
    }
}

/// A tap of target `target` with its alert settings.
pub(crate) fn tap(id: &str, target: &str, send_alert: bool, slack_alert_channel: Option<&str>) -> Tap {
    Tap {
        id: id.into(),
        type_name: "tap-postgres".into(),
        source_type: Some(datadiff_diff_core::definition::SourceType::TapPostgres),
        target_id: target.into(),
        db_conn: None,
        send_alert,
        slack_alert_channel: slack_alert_channel.map(str::to_owned),
        file: format!("tap_{id}.yml"),
    }
}

/// A dispatcher with a 1-second timeout and Slack's API at `slack` (when given).
pub(crate) fn dispatcher(settings: &AlertSettings, taps: &[Tap], slack: Option<&Server>) -> Dispatcher {
    let options = DispatchOptions {
        timeout: Duration::from_secs(1),
        slack_api_url: slack
            .map_or_else(|| "http://127.0.0.1:9/api".to_owned(), |server| format!("{}/api", server.url())),
    };
    Dispatcher::from_settings(settings, taps, Path::new("/nonexistent-project"), &options)
}

/// A definition identity that needs no backend.
pub(crate) fn identity(check: u128, target: &str, tap: &str) -> CheckIdentity {
    CheckIdentity {
        check_id: datadiff_diff_core::attempt::CheckId::new(Uuid::from_u128(check)),
        revision: 1,
        is_current: true,
        full_check_name: format!("{target}/{tap}/public/transfers"),
        target_id: target.into(),
        tap_id: tap.into(),
        source_type: datadiff_diff_core::definition::SourceType::TapPostgres,
        source_database: "payments".into(),
        source_schema: "public".into(),
        source_table: "transfers".into(),
        source_timestamp_column: "updated_at".into(),
        target_database: "warehouse".into(),
        target_schema: "payments_public".into(),
        target_table: "transfers".into(),
        target_timestamp_column: "updated_at".into(),
    }
}

/// A FAIL of `check` for the slot `slot` (`row_count` 4 → 3).
pub(crate) fn failure(check: &CheckIdentity, slot: DateTime<Utc>, run: u128) -> RunSummary {
    let mut summary = RunSummary::failed_without_run(check.clone(), "row_count FAIL");
    summary.status = SummaryStatus::Fail;
    summary.slot_status = Some(RunStatus::Fail);
    summary.scheduled_for = Some(slot);
    summary.bounds = Some(Bounds { start: Some(slot - chrono::Duration::hours(1)), end: slot });
    summary.run_id = Some(RunId::new(Uuid::from_u128(run)));
    summary.attempt = Some(1);
    summary.trigger = Some(TriggerType::Scheduled);
    summary.results = vec![CheckResult {
        check_type: ResultType::Check(CheckType::RowCount),
        status: ResultStatus::Fail,
        source_value: json!("4"),
        target_value: json!("3"),
        source_query_seconds: Some(0.01),
        target_query_seconds: Some(0.02),
        error: None,
    }];
    summary
}

/// A PASS of `check` whose preflight counted `rows` on an unindexed source.
pub(crate) fn observation(check: &CheckIdentity, rows: i64, status: PreflightStatus) -> RunSummary {
    let mut summary = failure(check, at(13, 0), check.check_id.get().as_u128() + 1000);
    summary.status = if status == PreflightStatus::Pass { SummaryStatus::Pass } else { SummaryStatus::Error };
    summary.reason = None;
    summary.results.clear();
    summary.preflight = Some(PreflightFacts {
        status,
        index_warning: status == PreflightStatus::Pass && (50_000..100_000).contains(&rows),
        table_rows: Some(rows),
        row_limit: Some(100_000),
        findings: Vec::new(),
        has_leading_index: Some(false),
        metadata_only: false,
        placeholder: false,
    });
    summary
}

/// Imports `definitions` together (at 00:00) and returns their current revisions, keyed by
/// `full_check_name`.
pub(crate) fn import_all(context: &Context, definitions: &[CheckDefinition]) -> Vec<StoredDefinition> {
    context.store.sync_definitions(definitions, &SyncScope::all(), at(0, 0)).unwrap();
    definitions
        .iter()
        .map(|definition| {
            let filter = DefinitionFilter { check: Some(definition.full_check_name.clone()), ..Default::default() };
            context.store.definitions(&filter).unwrap().remove(0)
        })
        .collect()
}

/// `(warning_id, check_id, sent_at)` of every marker, read with SQL.
pub(crate) fn markers(context: &Context) -> Vec<(Uuid, Uuid, DateTime<Utc>)> {
    context
        .backend_sql()
        .query("SELECT warning_id, check_id, sent_at FROM public.dd_index_warning_state ORDER BY sent_at", &[])
        .unwrap()
        .iter()
        .map(|row| (row.get(0), row.get(1), row.get(2)))
        .collect()
}
