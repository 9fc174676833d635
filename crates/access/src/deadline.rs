//! One deadline for a whole connection — TCP, TLS and authentication — as libpq's
//! `connect_timeout` has.
//!
//! rust-postgres applies its `connect_timeout` to the TCP connect only, so a server that
//! accepts and never answers would block a TLS handshake or a login forever. The connection
//! is therefore made on a helper thread and abandoned at the deadline: the helper ends when the
//! server answers or closes the socket (PostgreSQL closes it after `authentication_timeout`),
//! or with the process, and a late connection is dropped — closed — there. Every connection
//! datadiff makes (backend, attempt sides, audit sessions) goes through [`within_deadline`].

use std::sync::mpsc;
use std::time::Duration;

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
    fn an_answer_in_time_is_returned_and_a_late_one_abandoned() {
        assert_eq!(within_deadline("t", Duration::from_secs(5), || 7).ok(), Some(7));
        let late = within_deadline("t", Duration::from_millis(10), || std::thread::sleep(Duration::from_secs(2)));
        assert!(matches!(late, Err(DeadlineError::Elapsed(d)) if d == Duration::from_millis(10)));
        let lost = within_deadline("t", Duration::from_secs(5), || -> u8 { panic!("connect panicked") });
        assert!(matches!(lost, Err(DeadlineError::Lost)));
    }
}
