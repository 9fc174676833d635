//! TLS that costs nothing until a server accepts it.
//!
//! An OpenSSL connector for libpq's `prefer` and `require` verifies no certificate, yet
//! `SslConnector::builder` loads the system CA bundle: about 34 ms of CPU on a small
//! machine, paid before the server has even said whether it speaks TLS. [`LazyTls`] hands the
//! driver a connector that builds the real one only when the server answers the TLS request
//! with yes, from a function the caller gives (which may cache it for the process).

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;

use postgres::Socket;
use postgres::tls::{MakeTlsConnect, TlsConnect};
use postgres_openssl::{MakeTlsConnector, TlsStream};

/// The error of a TLS handshake, as the driver takes it.
type HandshakeError = Box<dyn std::error::Error + Send + Sync>;

/// A [`MakeTlsConnect`] that builds its OpenSSL connector only for a server that accepts TLS.
#[derive(Clone, Copy)]
pub struct LazyTls {
    build: fn() -> Result<MakeTlsConnector, String>,
}

impl std::fmt::Debug for LazyTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LazyTls").finish_non_exhaustive()
    }
}

impl LazyTls {
    /// A connector whose OpenSSL side `build` makes when a handshake is about to start; the
    /// error string becomes the handshake's error.
    pub fn new(build: fn() -> Result<MakeTlsConnector, String>) -> LazyTls {
        LazyTls { build }
    }
}

impl MakeTlsConnect<Socket> for LazyTls {
    type Stream = TlsStream<Socket>;
    type TlsConnect = LazyTlsConnect;
    type Error = Infallible;

    fn make_tls_connect(&mut self, domain: &str) -> Result<LazyTlsConnect, Infallible> {
        Ok(LazyTlsConnect { build: self.build, domain: domain.to_owned() })
    }
}

/// One connection's handshake, made by [`LazyTls`].
#[derive(Debug)]
pub struct LazyTlsConnect {
    build: fn() -> Result<MakeTlsConnector, String>,
    domain: String,
}

impl TlsConnect<Socket> for LazyTlsConnect {
    type Stream = TlsStream<Socket>;
    type Error = HandshakeError;
    type Future = Pin<Box<dyn Future<Output = Result<TlsStream<Socket>, HandshakeError>> + Send>>;

    fn connect(self, stream: Socket) -> Self::Future {
        let handshake = (self.build)().map_err(HandshakeError::from).and_then(|mut make| {
            MakeTlsConnect::<Socket>::make_tls_connect(&mut make, &self.domain).map_err(HandshakeError::from)
        });
        match handshake {
            Ok(connect) => connect.connect(stream),
            Err(error) => Box::pin(std::future::ready(Err(error))),
        }
    }
}
