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
//! client CPU), and with the [`tap`](super::tap) under it, which decodes `CopyData` messages
//! where they lie in the read buffer, little more than the socket reads themselves. On a
//! machine where both PostgreSQL backends are busy producing the COPY data, client CPU per
//! row is what separates a comparison from the bare COPY floor.
//!
//! The synchronous [`postgres::Client`] keeps its tokio client private, so the fast path
//! needs a connection of its own, made from the same settings ([`Endpoint::new`] copies
//! every field of a [`postgres::Config`]). Under `READ COMMITTED` every statement takes its
//! own snapshot anyway, so streaming on a second connection reads exactly what the caller's
//! session would have read. The connection runs the stream in a read-only transaction with
//! `search_path` pinned to `pg_catalog` (no function or operator of another schema can
//! shadow a built-in the query uses; the table is schema-qualified), `TimeZone` UTC and the
//! endpoint's `statement_timeout`, and is closed (transaction rolled
//! back, `Terminate` sent) when the stream ends; a stream stopped early cancels its query and
//! drops the connection.
//!
//! A configuration with one host (the usual case) is connected by the tap's [`tap::open`]
//! (TCP or Unix socket, TLS negotiated as `sslmode` says) and authenticated by tokio-postgres
//! over it; one listing several hosts is connected by tokio-postgres itself, which chooses
//! among them as the caller's session did, and drained without the tap. TCP keepalives are
//! not set on tapped connections: a stream sends data continuously or fails on its statement
//! timeout.

use std::future::{Future, poll_fn};
use std::pin::{Pin, pin};
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::Poll;
use std::time::Duration;

use futures_core::Stream;
use openssl::ssl::SslConnector;
use postgres::config::{Host, SslMode};
use postgres_openssl::MakeTlsConnector;
use tokio::sync::Notify;
use tokio_postgres::tls::MakeTlsConnect;
use tokio_postgres::{NoTls, Socket};

use crate::error::Error;
use crate::stream::copy::Flow;
use crate::stream::reader::{BatchOut, RowDecoder, RowQuery};
use crate::stream::tap::{self, CopyTap, TapOutcome};

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
    tls: Option<SslConnector>,
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
    /// An endpoint with `config`'s settings (every field is carried over) and `tls`: `None`
    /// connects without TLS (as [`postgres::NoTls`]: `sslmode=require` then fails); a
    /// connector negotiates TLS as `sslmode` says and checks the server's certificate as the
    /// connector is set to (the host name is given for SNI and host-name checks). The
    /// connect deadline is the config's `connect_timeout`, else
    /// [`crate::DEFAULT_CONNECT_TIMEOUT`]; no statement timeout.
    pub fn new(role: impl Into<String>, config: &postgres::Config, tls: Option<SslConnector>) -> Endpoint {
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
        let mut sql = String::from(
            "BEGIN READ ONLY; SELECT pg_catalog.set_config('search_path', 'pg_catalog', true); \
             SELECT pg_catalog.set_config('TimeZone', 'UTC', true)",
        );
        if let Some(timeout) = self.statement_timeout {
            let seconds = timeout.as_secs().max(1);
            sql.push_str(&format!("; SELECT pg_catalog.set_config('statement_timeout', '{seconds}s', true)"));
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
        if tap::can_open(&self.config) {
            return runtime.block_on(self.drain_tapped(query, decoder, out, stop));
        }
        match &self.tls {
            None => runtime.block_on(self.drain(NoTls, query, decoder, out, stop)),
            Some(tls) => runtime.block_on(self.drain(MakeTlsConnector::new(tls.clone()), query, decoder, out, stop)),
        }
    }

    /// The COPY through a [`CopyTap`]: rows decoded as the server's bytes arrive (see
    /// [`tap`](super::tap)). For configurations with one host, which is what [`tap::open`]
    /// connects to.
    async fn drain_tapped(
        &self,
        query: &RowQuery,
        decoder: &mut RowDecoder,
        out: &BatchOut,
        stop: &StopSignal,
    ) -> Result<Flow, Error> {
        let role = self.role.as_str();
        let deadline = tokio::time::Instant::now() + self.connect_timeout;
        let timed_out = || Error::ConnectTimeout { role: role.to_owned(), seconds: self.connect_timeout.as_secs_f64() };
        let mut stopped = pin!(stop.notified());
        let open = tokio::time::timeout_at(deadline, tap::open(&self.config, self.tls.as_ref()));
        let socket = match until_stopped(open, stopped.as_mut()).await {
            None => return Ok(Flow::Stop),
            Some(Err(_elapsed)) => return Err(timed_out()),
            Some(Ok(Err(source))) => return Err(Error::StreamConnect { role: role.to_owned(), source }),
            Some(Ok(Ok(socket))) => socket,
        };
        let outcome = TapOutcome::default();
        let result = {
            let mut sink = |chunk: &[u8]| match stop.is_stopped() {
                true => Ok(Flow::Stop),
                false => decoder.feed(role, query, chunk, out),
            };
            let tap = CopyTap::new(socket, &mut sink, &outcome);
            // TLS, if any, is already underneath the tap.
            let mut config = self.config.clone();
            config.ssl_mode(SslMode::Disable);
            let connect = tokio::time::timeout_at(deadline, config.connect_raw(tap, NoTls));
            let (client, connection) = match until_stopped(connect, stopped.as_mut()).await {
                None => return Ok(Flow::Stop),
                Some(Err(_elapsed)) => return Err(timed_out()),
                Some(Ok(Err(source))) => return Err(Error::Connect { role: role.to_owned(), source }),
                Some(Ok(Ok(pair))) => pair,
            };
            let mut connection = pin!(connection);
            let result =
                copy_tapped(role, &client, &self.setup_sql(), query, connection.as_mut(), stopped.as_mut()).await;
            match &result {
                Ok(Flow::Stop) => {
                    // Stopped while waiting for the server (a lock, a sort before the first
                    // row): cancel the query over a connection of its own, best effort.
                    let token = client.cancel_token();
                    cancel_detached(self.connect_timeout, move || async move {
                        let socket = tap::open(&config, None).await.ok()?;
                        token.cancel_query_raw(socket, NoTls).await.ok()
                    });
                }
                // The tap ended the connection: nothing to close politely.
                Err(_) if outcome.ended() => {}
                Ok(Flow::Continue) | Err(_) => {
                    // Close politely: end the transaction, then let the connection send
                    // Terminate and finish.
                    let rollback = tokio::time::timeout(CLOSE_WAIT, client.batch_execute("ROLLBACK"));
                    let _ = driven(rollback, connection.as_mut(), stopped.as_mut()).await;
                    drop(client);
                    let _ = tokio::time::timeout(CLOSE_WAIT, connection).await;
                }
            }
            result
        };
        // The tap's verdict first: a connection it stopped reports that as its error.
        if let Some(failure) = outcome.take_failure() {
            return Err(failure);
        }
        if outcome.stopped() {
            return Ok(Flow::Stop);
        }
        match result? {
            Flow::Continue => decoder.finish(role, out),
            Flow::Stop => Ok(Flow::Stop),
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
        T: MakeTlsConnect<Socket> + Clone + Send + 'static,
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
        let rows = Rows { query, decoder, out };
        let result = copy(role, &client, &self.setup_sql(), rows, stop, stopped.as_mut()).await;
        match &result {
            Ok(Flow::Stop) => {
                // Abandoned mid-stream: the server may still be computing (a sort before the
                // first row); cancel it rather than wait for it to notice the closed socket.
                let token = client.cancel_token();
                cancel_detached(self.connect_timeout, move || async move { token.cancel_query(tls).await });
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

/// Runs a stopped stream's cancel request on a thread of its own, for at most `timeout`,
/// without waiting for it: a stream is stopped when its deadline passed, and a server that
/// stopped answering (or a network that drops packets) may not answer the cancel's connection
/// either — the reader ends at once and the attempt's one deadline holds.
fn cancel_detached<F, C>(timeout: Duration, cancel: C)
where
    C: FnOnce() -> F + Send + 'static,
    F: Future,
{
    let _ = std::thread::Builder::new().name("datadiff-stream-cancel".to_owned()).spawn(move || {
        if let Ok(runtime) = tokio::runtime::Builder::new_current_thread().enable_io().enable_time().build() {
            // The timer is made inside the runtime, which it needs.
            runtime.block_on(async move {
                let _ = tokio::time::timeout(timeout, cancel()).await;
            });
        }
    });
}

/// What became of a future run alongside its connection.
enum Driven<T> {
    /// It completed.
    Done(T),
    /// The stop signal came first.
    Stopped,
    /// The connection ended first (with its error, if any).
    Closed(Option<tokio_postgres::Error>),
}

/// Runs `future` while driving `connection` (which carries its I/O) on the same task, until
/// one of them ends or the stop signal comes.
async fn driven<F, S>(
    future: F,
    mut connection: Pin<&mut tokio_postgres::Connection<S, tokio_postgres::tls::NoTlsStream>>,
    mut stopped: Pin<&mut tokio::sync::futures::Notified<'_>>,
) -> Driven<F::Output>
where
    F: Future,
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    let mut future = pin!(future);
    poll_fn(|cx| {
        if let Poll::Ready(output) = future.as_mut().poll(cx) {
            return Poll::Ready(Driven::Done(output));
        }
        match connection.as_mut().poll(cx) {
            Poll::Ready(Ok(())) => return Poll::Ready(Driven::Closed(None)),
            Poll::Ready(Err(error)) => return Poll::Ready(Driven::Closed(Some(error))),
            Poll::Pending => {}
        }
        // The connection may have completed the future's request.
        if let Poll::Ready(output) = future.as_mut().poll(cx) {
            return Poll::Ready(Driven::Done(output));
        }
        stopped.as_mut().poll(cx).map(|()| Driven::Stopped)
    })
    .await
}

/// The tapped COPY on an open connection: the transaction, then the COPY, whose rows the
/// tap decodes while the client waits for its end.
async fn copy_tapped<S>(
    role: &str,
    client: &tokio_postgres::Client,
    setup: &str,
    query: &RowQuery,
    mut connection: Pin<&mut tokio_postgres::Connection<S, tokio_postgres::tls::NoTlsStream>>,
    mut stopped: Pin<&mut tokio::sync::futures::Notified<'_>>,
) -> Result<Flow, Error>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    let closed = |action: &str, error: Option<tokio_postgres::Error>| match error {
        Some(source) => Error::query(role, action)(source),
        None => Error::Stream {
            role: role.to_owned(),
            source: std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "the server closed the connection"),
        },
    };
    let action = "starting the read-only transaction";
    match driven(client.batch_execute(setup), connection.as_mut(), stopped.as_mut()).await {
        Driven::Done(result) => result.map_err(Error::query(role, action))?,
        Driven::Stopped => return Ok(Flow::Stop),
        Driven::Closed(error) => return Err(closed(action, error)),
    }
    let copy = query.copy_sql();
    let action = "starting the row stream";
    let stream = match driven(client.copy_out(copy.as_str()), connection.as_mut(), stopped.as_mut()).await {
        Driven::Done(result) => result.map_err(Error::query(role, action))?,
        Driven::Stopped => return Ok(Flow::Stop),
        Driven::Closed(error) => return Err(closed(action, error)),
    };
    // The tap decodes every row while the client waits for the COPY's end.
    let mut stream = pin!(stream);
    let action = "streaming rows";
    let end = poll_fn(|cx| stream.as_mut().poll_next(cx));
    match driven(end, connection.as_mut(), stopped.as_mut()).await {
        Driven::Done(None) => Ok(Flow::Continue),
        Driven::Done(Some(Err(source))) => Err(Error::query(role, action)(source)),
        // The tap takes every row of the COPY: data reaching the client is a protocol
        // surprise, not a row to skip.
        Driven::Done(Some(Ok(_))) => Err(Error::Decode {
            role: role.to_owned(),
            column: "COPY stream".to_owned(),
            problem: crate::stream::DecodeError::Framing("COPY data bypassed the row decoder"),
        }),
        Driven::Stopped => Ok(Flow::Stop),
        Driven::Closed(error) => Err(closed(action, error)),
    }
}

/// Where a drained COPY's rows go.
struct Rows<'a> {
    query: &'a RowQuery,
    decoder: &'a mut RowDecoder,
    out: &'a BatchOut,
}

/// The COPY on an open connection: the transaction, then every chunk into the rows'
/// decoder.
async fn copy(
    role: &str,
    client: &tokio_postgres::Client,
    setup: &str,
    rows: Rows<'_>,
    stop: &StopSignal,
    mut stopped: Pin<&mut tokio::sync::futures::Notified<'_>>,
) -> Result<Flow, Error> {
    let Rows { query, decoder, out } = rows;
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
                if stop.is_stopped() || decoder.feed(role, query, &chunk, out)? == Flow::Stop {
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
    stopped: AtomicBool,
}

impl StopSignal {
    /// Asks the reader to stop; it notices at its next wait for the server or its next chunk
    /// of rows (a reader blocked sending a batch notices that the consumer is gone).
    pub(super) fn stop(&self) {
        self.stopped.store(true, Ordering::Relaxed);
        // A stored permit wakes the reader even if it is not waiting yet.
        self.notify.notify_one();
    }

    /// Whether [`StopSignal::stop`] was called.
    fn is_stopped(&self) -> bool {
        self.stopped.load(Ordering::Relaxed)
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
        assert!(
            setup.starts_with("BEGIN READ ONLY; SELECT pg_catalog.set_config('search_path', 'pg_catalog', true);"),
            "{setup}"
        );
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
