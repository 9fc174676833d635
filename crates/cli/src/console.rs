//! Where a command's output goes: the process's stdout and stderr, or buffers for tests.

use std::io::{self, Write};
use std::sync::{Arc, Mutex, PoisonError};

use datadiff_access::Environment;

/// The output streams and environment a command runs with.
///
/// [`Console::process`] is the real process; [`Console::capture`] collects everything in
/// memory so tests can assert on it (and check that no password or row value leaks into any
/// output, logs included).
pub struct Console {
    stdout: Box<dyn Write + Send>,
    stderr: SharedWriter,
    stderr_is_terminal: bool,
    stdout_width: Option<usize>,
    environment: Environment,
}

/// What a captured [`Console`] received.
#[derive(Debug, Clone, Default)]
pub struct Captured {
    stdout: Arc<Mutex<Vec<u8>>>,
    stderr: Arc<Mutex<Vec<u8>>>,
}

impl Captured {
    /// Everything written to stdout so far.
    pub fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.stdout.lock().unwrap_or_else(PoisonError::into_inner)).into_owned()
    }

    /// Everything written to stderr so far (logs included).
    pub fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.stderr.lock().unwrap_or_else(PoisonError::into_inner)).into_owned()
    }
}

/// Standard output that a reader may stop reading (`datadiff list … | head -1`): once a write
/// meets a closed pipe, the rest of the output is discarded and the command goes on to its
/// own exit code — a `run` with failures still exits 1, a `list` exits 0. Any other write
/// error is returned.
struct UntilClosed<W> {
    inner: W,
    closed: bool,
}

impl<W: Write> UntilClosed<W> {
    fn new(inner: W) -> UntilClosed<W> {
        UntilClosed { inner, closed: false }
    }

    fn absorb(&mut self, result: io::Result<()>) -> io::Result<()> {
        match result {
            Err(error) if error.kind() == io::ErrorKind::BrokenPipe => {
                self.closed = true;
                Ok(())
            }
            other => other,
        }
    }
}

impl<W: Write> Write for UntilClosed<W> {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        if self.closed {
            return Ok(bytes.len());
        }
        match self.inner.write(bytes) {
            Ok(written) => Ok(written),
            Err(error) => self.absorb(Err(error)).map(|()| bytes.len()),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        if self.closed {
            return Ok(());
        }
        let result = self.inner.flush();
        self.absorb(result)
    }
}

/// A buffer shared with a [`Captured`].
struct Buffer(Arc<Mutex<Vec<u8>>>);

impl Write for Buffer {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Console {
    /// The process's stdout, stderr and environment.
    pub fn process() -> Console {
        use std::io::IsTerminal;
        let environment = Environment::process();
        let stdout_width = if io::stdout().is_terminal() { terminal_width(&environment) } else { None };
        Console {
            stdout: Box::new(UntilClosed::new(io::stdout())),
            stderr: SharedWriter::new(Box::new(io::stderr())),
            stderr_is_terminal: io::stderr().is_terminal(),
            stdout_width,
            environment,
        }
    }

    /// In-memory stdout and stderr (not a terminal: no progress bar) and the given
    /// environment.
    pub fn capture(environment: Environment) -> (Console, Captured) {
        let captured = Captured::default();
        let console = Console {
            stdout: Box::new(Buffer(Arc::clone(&captured.stdout))),
            stderr: SharedWriter::new(Box::new(Buffer(Arc::clone(&captured.stderr)))),
            stderr_is_terminal: false,
            stdout_width: None,
            environment,
        };
        (console, captured)
    }

    /// Standard output.
    pub(crate) fn stdout(&mut self) -> &mut dyn Write {
        &mut self.stdout
    }

    /// Standard error, shareable with the log subscriber.
    pub(crate) fn stderr(&self) -> SharedWriter {
        self.stderr.clone()
    }

    /// The width tables are fitted to: the terminal's when stdout is one (`COLUMNS` when set
    /// to a positive number, else the terminal's own size); `None` for pipes and files, which
    /// get every row on one line.
    pub(crate) fn stdout_width(&self) -> Option<usize> {
        self.stdout_width
    }

    /// Tables at full width, one line per row, even on a terminal (`--wide`).
    pub(crate) fn use_full_width(&mut self) {
        self.stdout_width = None;
    }

    /// Whether stderr is a terminal (progress bars are drawn only then).
    pub(crate) fn stderr_is_terminal(&self) -> bool {
        self.stderr_is_terminal
    }

    /// The environment (`RUST_LOG`, `PGPASSWORD`, `PGPASSFILE`, ...).
    pub(crate) fn environment(&self) -> &Environment {
        &self.environment
    }
}

/// A terminal's width in columns: `COLUMNS` when it is a positive number, else what the
/// terminal on stdout says (`TIOCGWINSZ`); `None` when neither knows.
fn terminal_width(environment: &Environment) -> Option<usize> {
    environment
        .get("COLUMNS")
        .and_then(|text| text.trim().parse::<usize>().ok())
        .filter(|&columns| columns > 0)
        .or_else(|| console::Term::stdout().size_checked().map(|(_, columns)| usize::from(columns)))
}

/// A writer several owners write to (the command and the log subscriber), one write at a time.
#[derive(Clone)]
pub(crate) struct SharedWriter(Arc<Mutex<Box<dyn Write + Send>>>);

impl SharedWriter {
    fn new(writer: Box<dyn Write + Send>) -> SharedWriter {
        SharedWriter(Arc::new(Mutex::new(writer)))
    }

    /// Writes one line (best effort: a closed stderr is not an error worth dying for).
    pub(crate) fn line(&self, text: &str) {
        let mut writer = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let _ = writeln!(writer, "{text}");
        let _ = writer.flush();
    }
}

impl Write for SharedWriter {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).write(bytes)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pipe whose reader has gone after `accepts` bytes.
    struct Pipe {
        accepts: usize,
        received: Vec<u8>,
    }

    impl Write for Pipe {
        fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
            if self.received.len() + bytes.len() > self.accepts {
                return Err(io::Error::from(io::ErrorKind::BrokenPipe));
            }
            self.received.extend_from_slice(bytes);
            Ok(bytes.len())
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_closed_pipe_discards_the_rest_and_other_errors_are_returned() {
        let mut stdout = UntilClosed::new(Pipe { accepts: 6, received: Vec::new() });
        stdout.write_all(b"first\n").unwrap();
        stdout.write_all(b"second\n").unwrap();
        stdout.write_all(b"third\n").unwrap();
        stdout.flush().unwrap();
        assert_eq!(stdout.inner.received, b"first\n");
        assert!(stdout.closed);

        struct Full;
        impl Write for Full {
            fn write(&mut self, _: &[u8]) -> io::Result<usize> {
                Err(io::Error::from(io::ErrorKind::StorageFull))
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let mut full = UntilClosed::new(Full);
        assert_eq!(full.write_all(b"x").unwrap_err().kind(), io::ErrorKind::StorageFull);
    }
}
