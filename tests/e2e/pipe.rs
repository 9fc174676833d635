//! Output piped into a reader that stops early (`datadiff list --output-format json | head -1`):
//! a closed stdout ends the command quietly with exit 0, as `head` users expect.

use std::process::{Command, Stdio};

use crate::support::Fixture;

#[test]
fn a_closed_stdout_exits_zero_without_an_error_line() {
    let fixture = Fixture::new();
    fixture.import();
    // The pipe's read end is closed before the command starts: its first write fails.
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let dir = fixture.dir_arg();
    let output = Command::new(env!("CARGO_BIN_EXE_datadiff"))
        .args(["list_data_diff_checks", "--output-format", "json", "--dir", dir.as_str()])
        .env_remove("RUST_LOG")
        .stdout(Stdio::from(writer))
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(stderr.is_empty(), "{stderr}");
}
