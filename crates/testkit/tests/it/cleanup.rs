use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use datadiff_testkit::Cluster;

/// Polls `condition` until it holds or a generous deadline passes (an eventual-state check,
/// not a timing assertion).
pub(crate) fn eventually(mut condition: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        if condition() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    condition()
}

pub(crate) fn process_alive(pid: u32) -> bool {
    // A zombie is not alive: its resources are gone and only its exit status remains.
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat.rsplit(')').next().is_some_and(|rest| rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

#[test]
fn dropping_a_cluster_stops_the_server_and_removes_its_directory() {
    let cluster = Cluster::start().unwrap();
    let pid = cluster.postmaster_pid().unwrap();
    let dir = cluster.dir().to_path_buf();
    assert!(dir.exists() && process_alive(pid));
    drop(cluster);
    assert!(!dir.exists(), "the directory must be gone once drop returns");
    assert!(eventually(|| !process_alive(pid)), "postmaster {pid} outlived its cluster");
}

#[test]
fn a_sigkilled_holder_leaves_no_server_and_no_directory() {
    let mut holder = Command::new(env!("CARGO_BIN_EXE_datadiff-testkit"))
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(holder.stdout.take().unwrap()).lines();
    let mut dir = None;
    let mut pid = None;
    for line in lines.by_ref() {
        let line = line.unwrap();
        if let Some(value) = line.strip_prefix("dir=") {
            dir = Some(PathBuf::from(value));
        } else if let Some(value) = line.strip_prefix("postmaster_pid=") {
            pid = Some(value.parse::<u32>().unwrap());
        } else if line == "ready" {
            break;
        }
    }
    let (dir, pid) = (dir.unwrap(), pid.unwrap());
    assert!(dir.exists() && process_alive(pid), "the holder must have a running cluster");

    holder.kill().unwrap(); // SIGKILL: no destructor, no handler runs in the holder.
    holder.wait().unwrap();

    assert!(eventually(|| !process_alive(pid)), "postmaster {pid} outlived a SIGKILLed holder");
    assert!(eventually(|| !dir.exists()), "{} outlived a SIGKILLed holder", dir.display());
}
