//! A tap on a reader's own connection: the server's bytes pass under tokio-postgres, and the
//! `CopyData` messages of a `COPY … TO STDOUT` are decoded where they lie instead of
//! travelling through the client one message at a time.
//!
//! # Why
//!
//! PostgreSQL sends a binary COPY as one `CopyData` message per row. tokio-postgres hands each
//! one over as its own `Bytes` (a message parse, a reference-counted split, a response channel
//! and a stream poll per row): about 100 ns of client CPU per row, more than parsing and
//! encoding the row itself. On a machine where the two PostgreSQL backends producing the data
//! compete with the client for the CPU, that is what separates a comparison from the COPY
//! floor. The tap frames the byte stream itself: a `CopyData` payload is handed to the row
//! decoder as a slice of the tap's read buffer, and tokio-postgres only sees the messages
//! around the data (`CopyOutResponse`, `CopyDone`, `CommandComplete`, errors, notices), as if
//! the COPY had produced no rows. Everything else — authentication, the transaction, errors,
//! cancellation keys — stays tokio-postgres'.
//!
//! # How
//!
//! [`open`] makes the connection tokio-postgres would make for a single-host configuration
//! (TCP with `TCP_NODELAY`, or the Unix socket), negotiates TLS the way libpq's `prefer` and
//! `require` do (an `SSLRequest`, then a handshake when the server accepts), and the caller
//! hands the result, wrapped in a [`CopyTap`], to tokio-postgres' `connect_raw` with TLS
//! disabled (it is already done underneath). The tap never makes up or reorders bytes: it
//! forwards every non-`CopyData` message verbatim and in order, and only ever answers a read
//! with end-of-stream when the server closed the connection.

use std::cell::{Cell, RefCell};
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use openssl::ssl::SslConnector;
use postgres::config::{Host, SslMode};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::TcpStream;

use crate::error::Error;
use crate::stream::copy::Flow;

/// The PostgreSQL port when a configuration names none.
const DEFAULT_PORT: u16 = 5432;
/// Bytes the tap asks the socket for at a time.
const READ_SIZE: usize = 64 * 1024;
/// `SSLRequest`: length 8, code 80877103.
const SSL_REQUEST: [u8; 8] = [0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f];

/// A connection to the server, as [`open`] made it.
#[derive(Debug)]
pub(super) enum ServerStream {
    /// Plain TCP.
    Tcp(TcpStream),
    /// TCP under TLS.
    Tls(Box<tokio_openssl::SslStream<TcpStream>>),
    /// A Unix-domain socket.
    #[cfg(unix)]
    Unix(tokio::net::UnixStream),
}

impl AsyncRead for ServerStream {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            ServerStream::Tcp(stream) => Pin::new(stream).poll_read(cx, buf),
            ServerStream::Tls(stream) => Pin::new(stream.as_mut()).poll_read(cx, buf),
            #[cfg(unix)]
            ServerStream::Unix(stream) => Pin::new(stream).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for ServerStream {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            ServerStream::Tcp(stream) => Pin::new(stream).poll_write(cx, buf),
            ServerStream::Tls(stream) => Pin::new(stream.as_mut()).poll_write(cx, buf),
            #[cfg(unix)]
            ServerStream::Unix(stream) => Pin::new(stream).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            ServerStream::Tcp(stream) => Pin::new(stream).poll_flush(cx),
            ServerStream::Tls(stream) => Pin::new(stream.as_mut()).poll_flush(cx),
            #[cfg(unix)]
            ServerStream::Unix(stream) => Pin::new(stream).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            ServerStream::Tcp(stream) => Pin::new(stream).poll_shutdown(cx),
            ServerStream::Tls(stream) => Pin::new(stream.as_mut()).poll_shutdown(cx),
            #[cfg(unix)]
            ServerStream::Unix(stream) => Pin::new(stream).poll_shutdown(cx),
        }
    }
}

/// Whether [`open`] can make `config`'s connection: exactly one host (several hosts mean
/// tokio-postgres' own choice among them, which the caller's session made too).
pub(super) fn can_open(config: &tokio_postgres::Config) -> bool {
    config.get_hosts().len() == 1 && config.get_ports().len() <= 1 && config.get_hostaddrs().len() <= 1
}

/// Connects to `config`'s single host (see [`can_open`]); with `tls`, negotiates TLS as
/// `config`'s `sslmode` says (`disable`: never; `prefer`: when the server accepts; `require`:
/// or fail). Without `tls`, only `prefer` and `disable` connect, in plaintext.
pub(super) async fn open(config: &tokio_postgres::Config, tls: Option<&SslConnector>) -> io::Result<ServerStream> {
    let port = config.get_ports().first().copied().unwrap_or(DEFAULT_PORT);
    let mode = config.get_ssl_mode();
    let host = config.get_hosts().first().ok_or_else(|| io::Error::other("no host to connect to"))?;
    let name = match host {
        Host::Tcp(name) => name.clone(),
        #[cfg(unix)]
        Host::Unix(directory) => {
            let path = directory.join(format!(".s.PGSQL.{port}"));
            return Ok(ServerStream::Unix(tokio::net::UnixStream::connect(path).await?));
        }
    };
    let stream = match config.get_hostaddrs().first() {
        Some(address) => TcpStream::connect((*address, port)).await?,
        None => TcpStream::connect((name.as_str(), port)).await?,
    };
    stream.set_nodelay(true)?;
    let Some(connector) = tls.filter(|_| mode != SslMode::Disable) else {
        if mode == SslMode::Require {
            return Err(io::Error::other("TLS is required but no TLS context was given"));
        }
        return Ok(ServerStream::Tcp(stream));
    };
    let mut stream = stream;
    stream.write_all(&SSL_REQUEST).await?;
    match stream.read_u8().await? {
        b'S' => {
            let ssl = connector
                .configure()
                .and_then(|configuration| configuration.into_ssl(&name))
                .map_err(io::Error::other)?;
            let mut stream = tokio_openssl::SslStream::new(ssl, stream).map_err(io::Error::other)?;
            if let Err(error) = Pin::new(&mut stream).connect().await {
                // A rejected server certificate is named as psql names it, not as OpenSSL's
                // internal error.
                return Err(match datadiff_connect::CertificateRejected::of_handshake(stream.ssl(), &name) {
                    Some(rejected) => io::Error::other(rejected),
                    None => io::Error::other(error),
                });
            }
            Ok(ServerStream::Tls(Box::new(stream)))
        }
        b'N' if mode == SslMode::Require => Err(io::Error::other("the server does not support TLS")),
        b'N' => Ok(ServerStream::Tcp(stream)),
        _ => Err(io::Error::other("the server answered the TLS request with an unexpected byte")),
    }
}

/// How a tapped COPY ended early: the consumer went away, or a row could not be decoded.
#[derive(Debug, Default)]
pub(super) struct TapOutcome {
    stopped: Cell<bool>,
    failure: RefCell<Option<Error>>,
}

impl TapOutcome {
    /// Whether the sink asked to stop.
    pub(super) fn stopped(&self) -> bool {
        self.stopped.get()
    }

    /// The sink's error, if it failed.
    pub(super) fn take_failure(&self) -> Option<Error> {
        self.failure.borrow_mut().take()
    }

    /// Whether the tap ended the connection (stopped, or the sink failed).
    pub(super) fn ended(&self) -> bool {
        self.stopped.get() || self.failure.borrow().is_some()
    }
}

/// The server's side of a connection, with `CopyData` payloads handed to `sink` (see the
/// module docs).
pub(super) struct CopyTap<'a, S> {
    inner: S,
    /// Bytes read from the server are `buffer[..end]`; `buffer[start..end]` is not processed
    /// yet. The buffer is zeroed once and reused, never shrunk.
    buffer: Vec<u8>,
    start: usize,
    end: usize,
    /// The size of the message at `start` when it is not complete yet.
    wanted: usize,
    /// Whole messages to hand to the client; `forward[forwarded..]` is not handed over yet.
    forward: Vec<u8>,
    forwarded: usize,
    /// Between a `CopyOutResponse` and its `CopyDone`.
    in_copy: bool,
    sink: &'a mut dyn FnMut(&[u8]) -> Result<Flow, Error>,
    outcome: &'a TapOutcome,
}

impl<S> std::fmt::Debug for CopyTap<'_, S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CopyTap").field("in_copy", &self.in_copy).finish_non_exhaustive()
    }
}

impl<'a, S> CopyTap<'a, S> {
    /// Taps `inner`, handing `CopyData` payloads to `sink` and noting in `outcome` why the
    /// tap stopped the connection, if it did.
    pub(super) fn new(
        inner: S,
        sink: &'a mut dyn FnMut(&[u8]) -> Result<Flow, Error>,
        outcome: &'a TapOutcome,
    ) -> CopyTap<'a, S> {
        CopyTap {
            inner,
            buffer: vec![0; READ_SIZE],
            start: 0,
            end: 0,
            wanted: 0,
            forward: Vec::new(),
            forwarded: 0,
            in_copy: false,
            sink,
            outcome,
        }
    }

    /// Processes the complete messages read so far: `CopyData` inside a COPY to the sink,
    /// everything else to `forward`. An error stops the connection.
    fn process(&mut self) -> io::Result<()> {
        self.wanted = 0;
        loop {
            let rest = &self.buffer[self.start..self.end];
            let Some(header) = rest.get(..5) else { break };
            let length = i32::from_be_bytes([header[1], header[2], header[3], header[4]]);
            let total = usize::try_from(length).ok().filter(|length| *length >= 4).map(|length| length + 1);
            let Some(total) = total else {
                return Err(io::Error::new(io::ErrorKind::InvalidData, "a server message with an invalid length"));
            };
            if rest.len() < total {
                self.wanted = total;
                break;
            }
            let tag = header[0];
            if tag == b'd' && self.in_copy {
                match (self.sink)(&rest[5..total]) {
                    Ok(Flow::Continue) => {}
                    Ok(Flow::Stop) => {
                        self.outcome.stopped.set(true);
                        return Err(io::Error::other("the row stream was stopped"));
                    }
                    Err(error) => {
                        *self.outcome.failure.borrow_mut() = Some(error);
                        return Err(io::Error::other("a row could not be decoded"));
                    }
                }
            } else {
                match tag {
                    b'H' => self.in_copy = true,
                    b'c' | b'E' | b'Z' => self.in_copy = false,
                    _ => {}
                }
                self.forward.extend_from_slice(&rest[..total]);
            }
            self.start += total;
        }
        Ok(())
    }

    /// Makes room after `end` for a read: the unprocessed tail moves to the front, and the
    /// buffer grows only for a message larger than it.
    fn make_room(&mut self) {
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        } else if self.start > 0 && (self.buffer.len() - self.end < READ_SIZE / 4 || self.wanted > 0) {
            self.buffer.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        let needed = self.wanted.max(self.end + READ_SIZE / 4);
        if needed > self.buffer.len() {
            self.buffer.resize(needed.max(2 * self.buffer.len()), 0);
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for CopyTap<'_, S> {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.outcome.ended() {
            // Once ended, the connection stays ended: no more rows reach the sink.
            return Poll::Ready(Err(io::Error::other("the row stream has ended")));
        }
        loop {
            if this.forwarded < this.forward.len() {
                let pending = &this.forward[this.forwarded..];
                let count = pending.len().min(buf.remaining());
                buf.put_slice(&pending[..count]);
                this.forwarded += count;
                if this.forwarded == this.forward.len() {
                    this.forward.clear();
                    this.forwarded = 0;
                }
                return Poll::Ready(Ok(()));
            }
            // Read more from the server into the buffer's free space.
            this.make_room();
            let mut read = ReadBuf::new(&mut this.buffer[this.end..]);
            let result = Pin::new(&mut this.inner).poll_read(cx, &mut read);
            let count = read.filled().len();
            this.end += count;
            ready!(result)?;
            if count == 0 {
                // The server closed the connection: the client sees it too.
                return Poll::Ready(Ok(()));
            }
            this.process()?;
        }
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for CopyTap<'_, S> {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

/// Reads everything a tap lets through (for tests).
#[cfg(test)]
async fn read_all<S: AsyncRead + Unpin>(tap: &mut CopyTap<'_, S>) -> io::Result<Vec<u8>> {
    use std::future::poll_fn;
    let mut out = Vec::new();
    let mut chunk = [0u8; 7];
    loop {
        let mut buf = ReadBuf::new(&mut chunk);
        poll_fn(|cx| Pin::new(&mut *tap).poll_read(cx, &mut buf)).await?;
        if buf.filled().is_empty() {
            return Ok(out);
        }
        out.extend_from_slice(buf.filled());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(tag: u8, payload: &[u8]) -> Vec<u8> {
        let mut bytes = vec![tag];
        bytes.extend(i32::try_from(payload.len() + 4).unwrap().to_be_bytes());
        bytes.extend(payload);
        bytes
    }

    /// A server stream delivering `bytes` a few at a time.
    struct Trickle {
        bytes: Vec<u8>,
        at: usize,
        step: usize,
    }

    impl AsyncRead for Trickle {
        fn poll_read(self: Pin<&mut Self>, _: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
            let this = self.get_mut();
            let count = this.step.min(this.bytes.len() - this.at).min(buf.remaining());
            buf.put_slice(&this.bytes[this.at..this.at + count]);
            this.at += count;
            Poll::Ready(Ok(()))
        }
    }

    fn run<T>(future: impl std::future::Future<Output = T>) -> T {
        tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(future)
    }

    #[test]
    fn copy_data_goes_to_the_sink_and_everything_else_through_in_order() {
        let before = [message(b'S', b"TimeZone\0UTC\0"), message(b'H', &[1, 0, 0])].concat();
        let data = [message(b'd', b"row one"), message(b'N', b"a notice"), message(b'd', b""), message(b'd', b"2")];
        let after = [message(b'c', b""), message(b'C', b"COPY 3\0"), message(b'Z', b"I")].concat();
        // Outside a COPY, CopyData is the client's.
        let stray = message(b'd', b"not ours");
        let server = [before.clone(), data.concat(), after.clone(), stray.clone()].concat();
        for step in [1, 3, 5, 64, 100_000] {
            let mut rows = Vec::new();
            let mut sink = |payload: &[u8]| {
                rows.push(payload.to_vec());
                Ok(Flow::Continue)
            };
            let outcome = TapOutcome::default();
            let mut tap = CopyTap::new(Trickle { bytes: server.clone(), at: 0, step }, &mut sink, &outcome);
            let client = run(read_all(&mut tap)).unwrap();
            assert_eq!(client, [before.clone(), data[1].clone(), after.clone(), stray.clone()].concat(), "step {step}");
            drop(tap);
            assert_eq!(rows, vec![b"row one".to_vec(), Vec::new(), b"2".to_vec()], "step {step}");
        }
    }

    #[test]
    fn a_stopping_or_failing_sink_ends_the_connection_and_says_why() {
        let server = [message(b'H', &[1, 0, 0]), message(b'd', b"a"), message(b'd', b"b")].concat();
        let mut sink = |_: &[u8]| Ok(Flow::Stop);
        let outcome = TapOutcome::default();
        let mut tap = CopyTap::new(Trickle { bytes: server.clone(), at: 0, step: 1000 }, &mut sink, &outcome);
        assert!(run(read_all(&mut tap)).is_err());
        drop(tap);
        assert!(outcome.stopped() && outcome.take_failure().is_none());

        let mut sink = |_: &[u8]| Err(Error::NullKey { role: "source".into(), column: "id".into() });
        let outcome = TapOutcome::default();
        let mut tap = CopyTap::new(Trickle { bytes: server, at: 0, step: 1000 }, &mut sink, &outcome);
        assert!(run(read_all(&mut tap)).is_err());
        drop(tap);
        assert!(!outcome.stopped());
        assert!(matches!(outcome.take_failure(), Some(Error::NullKey { .. })));
    }

    #[test]
    fn an_invalid_message_length_is_an_error_not_a_hang() {
        let mut server = message(b'Z', b"I");
        server[1..5].copy_from_slice(&2i32.to_be_bytes());
        let mut sink = |_: &[u8]| Ok(Flow::Continue);
        let outcome = TapOutcome::default();
        let mut tap = CopyTap::new(Trickle { bytes: server, at: 0, step: 1000 }, &mut sink, &outcome);
        assert_eq!(run(read_all(&mut tap)).unwrap_err().kind(), io::ErrorKind::InvalidData);
    }

    #[test]
    fn only_single_host_configurations_are_opened_here() {
        let one: tokio_postgres::Config = "host=db1 port=5433".parse().unwrap();
        let two: tokio_postgres::Config = "host=db1,db2".parse().unwrap();
        assert!(can_open(&one));
        assert!(!can_open(&two));
    }
}
