//! The helper thread a side session lends its connection to for each statement
//! ([`on_helper_thread`]), under the statement's deadline ([`datadiff_connect::within_deadline`]).

use std::time::Duration;

use datadiff_connect::{DeadlineError, within_deadline};

/// Why [`on_helper_thread`] returned no answer from its job.
#[derive(Debug)]
pub(crate) enum LentError {
    /// The connection was abandoned by an earlier job that got no answer.
    Abandoned,
    /// The helper thread could not be started (the connection is lost with it).
    Thread(std::io::Error),
    /// The deadline passed: the connection stays with the helper, abandoned.
    NoAnswer,
    /// The helper thread stopped without an answer (it panicked).
    Lost,
}

/// Lends the connection in `slot` to a helper thread for one `job` and waits at most
/// `deadline` for it: the design of every side session's statements (a driver without a
/// timeout of its own cannot be interrupted, only abandoned). The connection comes back into
/// `slot` with the answer; past the deadline it stays with the helper, which drops (closes)
/// it when the server answers or the socket closes, or ends with the process, and `slot`
/// stays empty.
/// Past the deadline, `cancel` (the side's cancel request, which opens a connection of its
/// own and may hang as well) runs on a detached thread, best effort.
pub(crate) fn on_helper_thread<C: Send + 'static, T: Send + 'static>(
    slot: &mut Option<C>,
    name: &str,
    deadline: Duration,
    job: impl FnOnce(&mut C) -> T + Send + 'static,
    cancel: impl FnOnce() + Send + 'static,
) -> Result<T, LentError> {
    let Some(mut connection) = slot.take() else {
        return Err(LentError::Abandoned);
    };
    let lent = within_deadline(name, deadline, move || {
        let answer = job(&mut connection);
        (connection, answer)
    });
    match lent {
        Ok((connection, answer)) => {
            *slot = Some(connection);
            Ok(answer)
        }
        Err(DeadlineError::Elapsed(_)) => {
            tracing::warn!(thread = name, seconds = deadline.as_secs(), "no answer: connection abandoned");
            let _ = std::thread::Builder::new().name(format!("{name}-cancel")).spawn(cancel);
            Err(LentError::NoAnswer)
        }
        Err(DeadlineError::Thread(error)) => Err(LentError::Thread(error)),
        Err(DeadlineError::Lost) => Err(LentError::Lost),
    }
}

impl LentError {
    /// `<side> <action> failed: <why>`, for every case but [`LentError::NoAnswer`], which its
    /// caller words (it knows how it cancels).
    pub(crate) fn failure(&self, side: datadiff_diff_core::Side, action: &str) -> String {
        let why = match self {
            LentError::Abandoned => "the connection was abandoned after an earlier statement got no answer".to_owned(),
            LentError::Thread(error) => format!("cannot start a session thread: {error}"),
            LentError::NoAnswer => "no answer".to_owned(),
            LentError::Lost => "the session thread stopped unexpectedly".to_owned(),
        };
        format!("{side} {action} failed: {why}")
    }
}
