//! TLS that costs nothing until a server accepts it.
//!
//! An OpenSSL connector for libpq's `prefer` and `require` verifies no certificate, yet
//! `SslConnector::builder` loads the system CA bundle: about 34 ms of CPU on a small
//! machine, paid before the server has even said whether it speaks TLS. [`LazyTls`] hands the
//! driver a connector that builds the real one only when the server answers the TLS request
//! with yes, from a function the caller gives (which may cache it for the process). A
//! connection with a context of its own (verifying, or with a client certificate:
//! [`crate::ClientTls`]) hands its ready connector over the same way; a verifying one makes a
//! rejected server certificate the handshake's error, in psql's words
//! ([`crate::CertificateRejected`]), rather than OpenSSL's internal error text.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::PoisonError;

use openssl::error::ErrorStack;
use openssl::ssl::SslConnector;
use postgres::Socket;
use postgres::tls::{MakeTlsConnect, TlsConnect};
use postgres_openssl::{MakeTlsConnector, TlsStream};

use crate::tls::{RejectionSlot, make_connector};

/// The error of a TLS handshake, as the driver takes it.
type HandshakeError = Box<dyn std::error::Error + Send + Sync>;

/// Where the OpenSSL connector comes from.
#[derive(Clone)]
enum Source {
    /// Built when a handshake is about to start.
    Build(fn() -> Result<MakeTlsConnector, ErrorStack>),
    /// Built already.
    Ready(MakeTlsConnector),
    /// A verifying context: each connection records the certificate it rejects.
    Verifying {
        /// The context.
        context: SslConnector,
        /// Whether the host name is checked (`verify-full`).
        check_host: bool,
    },
}

/// A [`MakeTlsConnect`] that builds its OpenSSL connector only for a server that accepts TLS.
#[derive(Clone)]
pub struct LazyTls {
    source: Source,
}

impl std::fmt::Debug for LazyTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LazyTls").field("ready", &!matches!(self.source, Source::Build(_))).finish_non_exhaustive()
    }
}

impl LazyTls {
    /// A connector whose OpenSSL side `build` makes when a handshake is about to start; its
    /// error becomes the handshake's error.
    pub fn new(build: fn() -> Result<MakeTlsConnector, ErrorStack>) -> LazyTls {
        LazyTls { source: Source::Build(build) }
    }

    /// A connector built already (one with its own verification or client certificate).
    pub fn ready(connector: MakeTlsConnector) -> LazyTls {
        LazyTls { source: Source::Ready(connector) }
    }

    /// A verifying context's connector (see [`crate::ClientTls::lazy`]).
    pub(crate) fn verifying(context: SslConnector, check_host: bool) -> LazyTls {
        LazyTls { source: Source::Verifying { context, check_host } }
    }
}

impl MakeTlsConnect<Socket> for LazyTls {
    type Stream = TlsStream<Socket>;
    type TlsConnect = LazyTlsConnect;
    type Error = Infallible;

    fn make_tls_connect(&mut self, domain: &str) -> Result<LazyTlsConnect, Infallible> {
        Ok(LazyTlsConnect { source: self.source.clone(), domain: domain.to_owned() })
    }
}

/// One connection's handshake, made by [`LazyTls`].
pub struct LazyTlsConnect {
    source: Source,
    domain: String,
}

impl std::fmt::Debug for LazyTlsConnect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LazyTlsConnect").field("domain", &self.domain).finish_non_exhaustive()
    }
}

impl TlsConnect<Socket> for LazyTlsConnect {
    type Stream = TlsStream<Socket>;
    type Error = HandshakeError;
    type Future = Pin<Box<dyn Future<Output = Result<TlsStream<Socket>, HandshakeError>> + Send>>;

    fn connect(self, stream: Socket) -> Self::Future {
        let mut rejected = None;
        let made = match self.source {
            Source::Build(build) => build().map_err(HandshakeError::from),
            Source::Ready(connector) => Ok(connector),
            Source::Verifying { context, check_host } => {
                let slot = RejectionSlot::default();
                rejected = Some(slot.clone());
                Ok(make_connector(context, check_host, Some(slot)))
            }
        };
        let handshake = made.and_then(|mut make| {
            MakeTlsConnect::<Socket>::make_tls_connect(&mut make, &self.domain).map_err(HandshakeError::from)
        });
        let connect = match handshake {
            Ok(connect) => connect.connect(stream),
            Err(error) => return Box::pin(std::future::ready(Err(error))),
        };
        let Some(rejected) = rejected else { return connect };
        Box::pin(async move {
            connect.await.map_err(|error| {
                // OpenSSL says only "certificate verify failed": the recorded cause replaces it.
                match rejected.lock().unwrap_or_else(PoisonError::into_inner).take() {
                    Some(cause) => HandshakeError::from(cause),
                    None => error,
                }
            })
        })
    }
}
