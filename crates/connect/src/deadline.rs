//! One deadline for a whole connection — TCP, TLS and authentication — as libpq's
//! `connect_timeout` has, the grace a client gives a server beyond its statement timeout
//! ([`ANSWER_GRACE`]), and the TCP keepalives every connection gets.
//!
//! rust-postgres applies its `connect_timeout` to the TCP connect only, so a server that
//! accepts and never answers would block a TLS handshake or a login forever. The connection
//! is therefore made on a helper thread and abandoned at the deadline: the helper ends when the
//! server answers or closes the socket (PostgreSQL closes it after `authentication_timeout`),
//! or with the process, and a late connection is dropped — closed — there. Every connection
//! datadiff makes (backend, attempt sides, audit sessions) goes through [`within_deadline`].

use std::sync::mpsc;
use std::time::Duration;

/// What a client waits for an answer beyond the statement timeout before it gives up on the
/// server: a healthy server answers within its `statement_timeout` (with rows or with its
/// cancellation), so only a server that cannot answer at all (a frozen process, a partition
/// that sends no reset) outlasts it. A side session's statements, the audit's steps and the
/// backend store's operations all wait this long past their statement timeout.
pub const ANSWER_GRACE: Duration = Duration::from_secs(5);

/// `keepalives_idle` datadiff sets when a configuration leaves the driver's default (two
/// hours, the operating system's usual default, which libpq also keeps).
pub const KEEPALIVES_IDLE: Duration = Duration::from_secs(60);
/// `keepalives_interval` set with [`KEEPALIVES_IDLE`].
pub const KEEPALIVES_INTERVAL: Duration = Duration::from_secs(10);
/// `keepalives_count` (rust-postgres: `keepalives_retries`) set with [`KEEPALIVES_IDLE`].
pub const KEEPALIVES_COUNT: u32 = 5;

/// `tcp_user_timeout` datadiff sets when a configuration leaves it unset: how long sent data
/// may stay unacknowledged before the kernel drops the connection.
pub const TCP_USER_TIMEOUT: Duration = Duration::from_secs(120);

/// TCP keepalives and `tcp_user_timeout` as libpq offers them, with shorter defaults: a
/// connection waiting for a long query through a network that silently dropped it (a
/// partition, a NAT or firewall that forgot it, no reset sent) fails after about two minutes
/// of silence instead of the kernel's two hours, and a request sent into such a network after
/// two minutes instead of the kernel's fifteen of retransmissions. Settings the configuration
/// gives (`keepalives`, `keepalives_idle`, `keepalives_interval`, `keepalives_retries`,
/// `tcp_user_timeout` in a DSN) are kept; `keepalives=0` stays off.
/// A server that keeps its socket open but stops answering (a frozen process) is not
/// detected by keepalives — its kernel still acknowledges them — which is what the
/// statements' own deadlines are for.
pub fn with_keepalive_defaults(config: &mut postgres::Config) {
    if config.get_tcp_user_timeout().is_none() {
        config.tcp_user_timeout(TCP_USER_TIMEOUT);
    }
    if !config.get_keepalives() {
        return;
    }
    if config.get_keepalives_idle() == Duration::from_secs(2 * 60 * 60) {
        config.keepalives_idle(KEEPALIVES_IDLE);
    }
    if config.get_keepalives_interval().is_none() {
        config.keepalives_interval(KEEPALIVES_INTERVAL);
    }
    if config.get_keepalives_retries().is_none() {
        config.keepalives_retries(KEEPALIVES_COUNT);
    }
}

/// Why [`within_deadline`] returned no value.
#[derive(Debug, thiserror::Error)]
pub enum DeadlineError {
    /// The deadline passed first.
    #[error("no answer within the connect timeout of {} s", .0.as_secs_f64())]
    Elapsed(Duration),
    /// The helper thread could not be started.
    #[error("cannot start a connection thread")]
    Thread(#[source] std::io::Error),
    /// The helper thread stopped without an answer (it panicked).
    #[error("the connection thread stopped unexpectedly")]
    Lost,
}

/// Runs `connect` on a helper thread named `name` and waits at most `deadline` for its
/// answer.
pub fn within_deadline<T: Send + 'static>(
    name: &str,
    deadline: Duration,
    connect: impl FnOnce() -> T + Send + 'static,
) -> Result<T, DeadlineError> {
    let (sender, receiver) = mpsc::sync_channel(1);
    std::thread::Builder::new()
        .name(name.to_owned())
        .spawn(move || {
            // A late answer finds the receiver gone and is dropped here.
            let _ = sender.send(connect());
        })
        .map_err(DeadlineError::Thread)?;
    receiver.recv_timeout(deadline).map_err(|error| match error {
        mpsc::RecvTimeoutError::Timeout => DeadlineError::Elapsed(deadline),
        mpsc::RecvTimeoutError::Disconnected => DeadlineError::Lost,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keepalive_defaults_fill_what_the_configuration_leaves_and_keep_what_it_says() {
        let mut config: postgres::Config = "host=db user=u".parse().unwrap();
        with_keepalive_defaults(&mut config);
        assert_eq!(config.get_keepalives_idle(), Duration::from_secs(60));
        assert_eq!(config.get_keepalives_interval(), Some(Duration::from_secs(10)));
        assert_eq!(config.get_keepalives_retries(), Some(5));
        assert_eq!(config.get_tcp_user_timeout(), Some(&Duration::from_secs(120)));
        let mut given: postgres::Config = "host=db keepalives_idle=300 keepalives_retries=2".parse().unwrap();
        with_keepalive_defaults(&mut given);
        assert_eq!(given.get_keepalives_idle(), Duration::from_secs(300));
        assert_eq!(given.get_keepalives_retries(), Some(2));
        let mut off: postgres::Config = "host=db keepalives=0".parse().unwrap();
        with_keepalive_defaults(&mut off);
        assert_eq!(off.get_keepalives_interval(), None, "keepalives=0 stays off");
    }

    #[test]
    fn an_answer_in_time_is_returned_and_a_late_one_abandoned() {
        assert_eq!(within_deadline("t", Duration::from_secs(5), || 7).ok(), Some(7));
        let late = within_deadline("t", Duration::from_millis(10), || std::thread::sleep(Duration::from_secs(2)));
        assert!(matches!(late, Err(DeadlineError::Elapsed(d)) if d == Duration::from_millis(10)));
        // A generous deadline: the panic prints a backtrace first (seconds on a busy machine
        // under RUST_BACKTRACE), and only a lost thread may end this call.
        let lost = within_deadline("t", Duration::from_secs(120), || -> u8 { panic!("connect panicked") });
        assert!(matches!(lost, Err(DeadlineError::Lost)));
    }
}
