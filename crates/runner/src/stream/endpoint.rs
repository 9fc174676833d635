//! A reader's own connection: where it connects, and the asynchronous COPY drain that makes
//! [`RowStream::connect`](crate::stream::RowStream::connect) cheaper per row than a
//! synchronous session.
//!
//! # Why a connection of its own, drained by tokio-postgres
//!
//! PostgreSQL sends a binary `COPY` as one `CopyData` message per row. rust-postgres' sync
//! `copy_out` reader enters its tokio runtime (`block_on`) once per message: about 340 ns of
//! client CPU per row, a third more than the whole rest of the pipeline (parsing, canonical
//! encoding, batching, merging). Draining the same stream with tokio-postgres inside *one*
//! `block_on` costs about 100 ns per row (measured on 2 × 1 M rows: 0.68 s against 0.20 s of
//! client CPU). On a machine where both PostgreSQL backends are themselves busy producing the
//! COPY data, client CPU per row is what separates a comparison from the bare COPY floor.
//!
//! The synchronous [`postgres::Client`] keeps its tokio client private, so the fast path
//! needs a connection of its own, made from the same settings ([`Endpoint::new`] copies
//! every field of a [`postgres::Config`]). Under `READ COMMITTED` every statement takes its
//! own snapshot anyway, so streaming on a second connection reads exactly what the caller's
//! session would have read. The connection runs the stream in a read-only transaction with
//! `TimeZone` UTC and the endpoint's `statement_timeout`, and is closed (transaction rolled
//! back, `Terminate` sent) when the stream ends; a stream stopped early cancels its query and
//! drops the connection.

use std::future::{Future, poll_fn};
use std::pin::{Pin, pin};
use std::task::Poll;
use std::time::Duration;

use futures_core::Stream;
use postgres::config::Host;
use postgres_openssl::MakeTlsConnector;
use tokio::sync::Notify;
use tokio_postgres::tls::MakeTlsConnect;
use tokio_postgres::{NoTls, Socket};

use crate::error::Error;
use crate::stream::copy::Flow;
use crate::stream::reader::{BatchOut, RowDecoder, RowQuery};

/// How long a reader waits, after its stream ended, for its connection to close politely.
const CLOSE_WAIT: Duration = Duration::from_secs(2);

/// Where and how a reader connects on its own (see the module docs): the connection
/// settings, TLS, the connect deadline and the statement timeout of its transaction.
///
/// `Debug` never shows the password.
#[derive(Clone)]
pub struct Endpoint {
    role: String,
    config: tokio_postgres::Config,
    tls: Option<MakeTlsConnector>,
    connect_timeout: Duration,
    statement_timeout: Option<Duration>,
}

impl std::fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Endpoint")
            .field("role", &self.role)
            .field("hosts", &self.config.get_hosts())
            .field("dbname", &self.config.get_dbname())
            .field("tls", &self.tls.is_some())
            .field("connect_timeout", &self.connect_timeout)
            .field("statement_timeout", &self.statement_timeout)
            .finish_non_exhaustive()
    }
}

impl Endpoint {
    /// An endpoint with `config`'s settings (every field is carried over) and `tls` (`None`
    /// connects without TLS, as [`postgres::NoTls`]). The connect deadline is the config's
    /// `connect_timeout`, else [`crate::DEFAULT_CONNECT_TIMEOUT`]; no statement timeout.
    pub fn new(role: impl Into<String>, config: &postgres::Config, tls: Option<MakeTlsConnector>) -> Endpoint {
        Endpoint {
            role: role.into(),
            connect_timeout: config.get_connect_timeout().copied().unwrap_or(crate::DEFAULT_CONNECT_TIMEOUT),
            config: async_config(config),
            tls,
            statement_timeout: None,
        }
    }

    /// Bounds the whole connection (TCP, TLS, authentication) by `timeout`, as libpq's
    /// `connect_timeout` does.
    pub fn with_connect_timeout(mut self, timeout: Duration) -> Endpoint {
        self.connect_timeout = timeout;
        self
    }

    /// Sets the stream's `statement_timeout` (whole seconds, at least one).
    pub fn with_statement_timeout(mut self, timeout: Duration) -> Endpoint {
        self.statement_timeout = Some(timeout);
        self
    }

    /// The role name its errors carry (`source`, `target`, ...).
    pub fn role(&self) -> &str {
        &self.role
    }

    /// The statements that open the stream's transaction.
    fn setup_sql(&self) -> String {
        let mut sql = String::from("BEGIN READ ONLY; SELECT set_config('TimeZone', 'UTC', true)");
        if let Some(timeout) = self.statement_timeout {
            let seconds = timeout.as_secs().max(1);
            sql.push_str(&format!("; SELECT set_config('statement_timeout', '{seconds}s', true)"));
        }
        sql
    }

    /// The reader thread's work: a single-threaded runtime, the connection, the COPY drained
    /// into `decoder`. `Ok(Flow::Stop)` when stopped or the consumer went away.
    pub(super) fn stream(
        &self,
        query: &RowQuery,
        decoder: &mut RowDecoder,
        out: &BatchOut,
        stop: &StopSignal,
    ) -> Result<Flow, Error> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .build()
            .map_err(|source| Error::Stream { role: self.role.clone(), source })?;
        match &self.tls {
            None => runtime.block_on(self.drain(NoTls, query, decoder, out, stop)),
            Some(tls) => runtime.block_on(self.drain(tls.clone(), query, decoder, out, stop)),
        }
    }

    async fn drain<T>(
        &self,
        tls: T,
        query: &RowQuery,
        decoder: &mut RowDecoder,
        out: &BatchOut,
        stop: &StopSignal,
    ) -> Result<Flow, Error>
    where
        T: MakeTlsConnect<Socket> + Clone,
        T::Stream: Send + 'static,
    {
        let role = self.role.as_str();
        let mut stopped = pin!(stop.notified());
        let connect = tokio::time::timeout(self.connect_timeout, self.config.connect(tls.clone()));
        let (client, connection) = match until_stopped(connect, stopped.as_mut()).await {
            None => return Ok(Flow::Stop),
            Some(Err(_elapsed)) => {
                return Err(Error::ConnectTimeout {
                    role: role.to_owned(),
                    seconds: self.connect_timeout.as_secs_f64(),
                });
            }
            Some(Ok(Err(source))) => return Err(Error::Connect { role: role.to_owned(), source }),
            Some(Ok(Ok(pair))) => pair,
        };
        let connection = tokio::spawn(connection);
        let result = copy(role, &client, &self.setup_sql(), query, decoder, out, stopped.as_mut()).await;
        match &result {
            Ok(Flow::Stop) => {
                // Abandoned mid-stream: the server may still be computing (a sort before the
                // first row); cancel it rather than wait for it to notice the closed socket.
                let token = client.cancel_token();
                let _ = tokio::time::timeout(self.connect_timeout, token.cancel_query(tls)).await;
            }
            Ok(Flow::Continue) | Err(_) => {
                // Close politely: end the transaction, then let the connection send Terminate.
                let _ = tokio::time::timeout(CLOSE_WAIT, client.batch_execute("ROLLBACK")).await;
                drop(client);
                let _ = tokio::time::timeout(CLOSE_WAIT, connection).await;
            }
        }
        result
    }
}

/// The COPY on an open connection: the transaction, then every chunk into `decoder`.
async fn copy(
    role: &str,
    client: &tokio_postgres::Client,
    setup: &str,
    query: &RowQuery,
    decoder: &mut RowDecoder,
    out: &BatchOut,
    mut stopped: Pin<&mut tokio::sync::futures::Notified<'_>>,
) -> Result<Flow, Error> {
    match until_stopped(client.batch_execute(setup), stopped.as_mut()).await {
        None => return Ok(Flow::Stop),
        Some(result) => result.map_err(Error::query(role, "starting the read-only transaction"))?,
    }
    let copy = query.copy_sql();
    let stream = match until_stopped(client.copy_out(copy.as_str()), stopped.as_mut()).await {
        None => return Ok(Flow::Stop),
        Some(result) => result.map_err(Error::query(role, "starting the row stream"))?,
    };
    let mut stream = pin!(stream);
    loop {
        // The stop signal is only looked at while no data is waiting: a steady stream pays
        // nothing for it.
        let next = poll_fn(|cx| match stream.as_mut().poll_next(cx) {
            Poll::Ready(item) => Poll::Ready(Some(item)),
            Poll::Pending => stopped.as_mut().poll(cx).map(|()| None),
        })
        .await;
        match next {
            None => return Ok(Flow::Stop),
            Some(None) => break,
            Some(Some(Err(source))) => return Err(Error::query(role, "streaming rows")(source)),
            Some(Some(Ok(chunk))) => {
                if decoder.feed(role, query, &chunk, out)? == Flow::Stop {
                    return Ok(Flow::Stop);
                }
            }
        }
    }
    decoder.finish(role, out)
}

/// `future`'s output, or `None` when `stopped` completes first.
async fn until_stopped<F: Future>(
    future: F,
    mut stopped: Pin<&mut tokio::sync::futures::Notified<'_>>,
) -> Option<F::Output> {
    let mut future = pin!(future);
    poll_fn(|cx| {
        if let Poll::Ready(output) = future.as_mut().poll(cx) {
            return Poll::Ready(Some(output));
        }
        stopped.as_mut().poll(cx).map(|()| None)
    })
    .await
}

/// Tells a reader with its own connection to stop, from any thread.
#[derive(Debug, Default)]
pub(super) struct StopSignal {
    notify: Notify,
}

impl StopSignal {
    /// Asks the reader to stop; it notices at its next wait for the server (a reader blocked
    /// sending a batch notices that the consumer is gone).
    pub(super) fn stop(&self) {
        // A stored permit wakes the reader even if it is not waiting yet.
        self.notify.notify_one();
    }

    fn notified(&self) -> tokio::sync::futures::Notified<'_> {
        self.notify.notified()
    }
}

/// The same connection settings for tokio-postgres: every field [`postgres::Config`] can
/// report. (rust-postgres keeps its inner config private.)
fn async_config(config: &postgres::Config) -> tokio_postgres::Config {
    let mut out = tokio_postgres::Config::new();
    if let Some(user) = config.get_user() {
        out.user(user);
    }
    if let Some(password) = config.get_password() {
        out.password(password);
    }
    if let Some(dbname) = config.get_dbname() {
        out.dbname(dbname);
    }
    if let Some(options) = config.get_options() {
        out.options(options);
    }
    if let Some(name) = config.get_application_name() {
        out.application_name(name);
    }
    out.ssl_mode(config.get_ssl_mode());
    out.ssl_negotiation(config.get_ssl_negotiation());
    for host in config.get_hosts() {
        match host {
            Host::Tcp(name) => out.host(name),
            #[cfg(unix)]
            Host::Unix(path) => out.host_path(path),
        };
    }
    for address in config.get_hostaddrs() {
        out.hostaddr(*address);
    }
    for port in config.get_ports() {
        out.port(*port);
    }
    if let Some(timeout) = config.get_connect_timeout() {
        out.connect_timeout(*timeout);
    }
    if let Some(timeout) = config.get_tcp_user_timeout() {
        out.tcp_user_timeout(*timeout);
    }
    out.keepalives(config.get_keepalives());
    out.keepalives_idle(config.get_keepalives_idle());
    if let Some(interval) = config.get_keepalives_interval() {
        out.keepalives_interval(interval);
    }
    if let Some(retries) = config.get_keepalives_retries() {
        out.keepalives_retries(retries);
    }
    out.target_session_attrs(config.get_target_session_attrs());
    out.channel_binding(config.get_channel_binding());
    out.load_balance_hosts(config.get_load_balance_hosts());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_connection_setting_is_carried_over() {
        let config: postgres::Config = "host=db1,/run/postgresql hostaddr=10.0.0.1,10.0.0.2 port=6432,5433 \
             user=reader password=s3cret dbname=app options='-c search_path=x' application_name=dd \
             sslmode=require connect_timeout=7 keepalives_idle=90 target_session_attrs=read-write \
             channel_binding=disable"
            .parse()
            .unwrap();
        let copied = async_config(&config);
        assert_eq!(copied.get_hosts(), config.get_hosts());
        assert_eq!(copied.get_hostaddrs(), config.get_hostaddrs());
        assert_eq!(copied.get_ports(), config.get_ports());
        assert_eq!(copied.get_user(), Some("reader"));
        assert_eq!(copied.get_password(), Some(&b"s3cret"[..]));
        assert_eq!(copied.get_dbname(), Some("app"));
        assert_eq!(copied.get_options(), Some("-c search_path=x"));
        assert_eq!(copied.get_application_name(), Some("dd"));
        assert_eq!(copied.get_ssl_mode(), config.get_ssl_mode());
        assert_eq!(copied.get_connect_timeout(), Some(&Duration::from_secs(7)));
        assert_eq!(copied.get_keepalives_idle(), Duration::from_secs(90));
        assert_eq!(copied.get_target_session_attrs(), config.get_target_session_attrs());
        assert_eq!(copied.get_channel_binding(), config.get_channel_binding());
    }

    #[test]
    fn the_endpoint_debug_hides_the_password_and_the_setup_bounds_statements() {
        let config: postgres::Config = "host=db1 user=reader password=s3cret dbname=app".parse().unwrap();
        let endpoint = Endpoint::new("source", &config, None).with_statement_timeout(Duration::from_millis(300));
        let shown = format!("{endpoint:?}");
        assert!(shown.contains("source") && !shown.contains("s3cret"), "{shown}");
        assert_eq!(endpoint.connect_timeout, crate::DEFAULT_CONNECT_TIMEOUT);
        let setup = endpoint.setup_sql();
        assert!(setup.starts_with("BEGIN READ ONLY;"), "{setup}");
        assert!(setup.ends_with("set_config('statement_timeout', '1s', true)"), "{setup}");
    }

    #[test]
    fn a_stop_before_the_reader_waits_is_kept() {
        let signal = StopSignal::default();
        signal.stop();
        let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
        // The stored permit completes the first wait at once.
        runtime.block_on(signal.notified());
    }
}
