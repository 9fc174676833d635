//! The watchdog every throwaway server directory gets, and the helpers both kinds of server
//! (PostgreSQL clusters and MariaDB servers) share: free ports, random passwords, log tails
//! and removing a directory a server may still be writing into.

use std::ffi::OsStr;
use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};

use crate::error::Error;
use crate::user::RunAs;

/// A shell in its own process group whose stdin is a pipe from this process. When the pipe
/// closes — the owner released it, or this process died (exit, abort, `SIGKILL`) — it runs
/// the server's stop snippet and then removes the directory.
pub(crate) struct Watchdog {
    child: Child,
    pipe: ChildStdin,
}

/// Removes the directory, retrying: a server killed a moment ago may still write into it.
const REMOVE: &str = r#"
for _ in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30; do
  rm -rf "$dir" 2>/dev/null
  [ -e "$dir" ] || break
  sleep 1
done
"#;

impl Watchdog {
    /// Starts a watchdog for `dir`. `stop` is a shell snippet that stops whatever server still
    /// runs in the directory; it sees the directory as `$dir` and `args` as `$2`, `$3`, ...
    /// The watchdog runs as `run_as` (the server's user) when set, so it may signal the server.
    pub(crate) fn spawn(dir: &Path, run_as: Option<RunAs>, stop: &str, args: &[&OsStr]) -> Result<Watchdog, Error> {
        let script = format!("dir=$1\nwhile read -r _line; do :; done\n{stop}\n{REMOVE}");
        let mut command = Command::new("/bin/sh");
        command
            .arg("-c")
            .arg(script)
            .arg("datadiff-testkit-watchdog")
            .arg(dir)
            .args(args)
            .current_dir("/")
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            // Not in our process group: a Ctrl-C meant for the tests must not kill it first.
            .process_group(0);
        if let Some(RunAs { uid, gid }) = run_as {
            command.uid(uid).gid(gid);
        }
        let mut child = command.spawn().map_err(Error::io("starting the watchdog"))?;
        let pipe = child.stdin.take().ok_or_else(|| Error::Io {
            action: "opening the watchdog's pipe".to_owned(),
            source: std::io::Error::from(std::io::ErrorKind::BrokenPipe),
        })?;
        Ok(Watchdog { child, pipe })
    }

    /// Closes the pipe and waits for the watchdog to finish (the owner has already stopped the
    /// server and removed the directory, so it finds nothing left to do).
    pub(crate) fn release(self) {
        let Watchdog { mut child, pipe } = self;
        drop(pipe);
        let _ = child.wait();
    }
}

/// Removes `dir`, retrying for up to 30 s while files keep appearing (a server stopped a
/// moment ago). Never call it under a live server.
pub(crate) fn remove_dir_with_retries(dir: &Path) {
    for _ in 0..30 {
        let _ = std::fs::remove_dir_all(dir);
        if !dir.exists() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_secs(1));
    }
}

/// A port the kernel just handed out on 127.0.0.1, never one of `avoid` (the servers'
/// well-known ports: 5432, 3306).
pub(crate) fn free_port(avoid: &[u16]) -> Result<u16, Error> {
    loop {
        let listener = TcpListener::bind("127.0.0.1:0").map_err(Error::io("finding a free port"))?;
        let port = listener.local_addr().map_err(Error::io("finding a free port"))?.port();
        if !avoid.contains(&port) {
            return Ok(port);
        }
    }
}

/// `bytes` random bytes as lowercase hex (passwords).
pub(crate) fn random_hex(bytes: usize) -> Result<String, Error> {
    let mut buffer = vec![0u8; bytes];
    openssl::rand::rand_bytes(&mut buffer)?;
    Ok(buffer.iter().map(|byte| format!("{byte:02x}")).collect())
}

/// The last `lines` lines of `text`.
pub(crate) fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tail_keeps_the_last_lines() {
        assert_eq!(tail("a\nb\nc", 2), "b\nc");
        assert_eq!(tail("a", 5), "a");
    }

    #[test]
    fn free_ports_avoid_the_well_known_ones() {
        let port = free_port(&[5432, 3306]).unwrap();
        assert!(port != 5432 && port != 3306 && port != 0);
    }
}
