//! Finding the locally installed PostgreSQL server binaries.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::error::Error;

/// The environment variable that names a directory holding `initdb`, `pg_ctl` and `postgres`.
pub const BINDIR_ENV: &str = "DATADIFF_TEST_PG_BINDIR";

const REQUIRED: [&str; 3] = ["initdb", "pg_ctl", "postgres"];

/// The directory of the server binaries, found in this order: `$DATADIFF_TEST_PG_BINDIR`,
/// `pg_config --bindir`, the directory of an `initdb` on `PATH`, then Debian's versioned
/// `/usr/lib/postgresql/<version>/bin` (newest version first).
pub fn find_bindir() -> Result<PathBuf, Error> {
    let mut searched = Vec::new();
    if let Some(dir) = std::env::var_os(BINDIR_ENV) {
        let dir = PathBuf::from(dir);
        if has_server_binaries(&dir) {
            return Ok(dir);
        }
        // An explicit setting that does not work is an error, not something to route around.
        return Err(Error::BinariesNotFound { searched: format!("{BINDIR_ENV}={}", dir.display()) });
    }
    for candidate in pg_config_bindir().into_iter().chain(path_bindir()).chain(debian_bindirs()) {
        if has_server_binaries(&candidate) {
            return Ok(candidate);
        }
        searched.push(candidate.display().to_string());
    }
    if searched.is_empty() {
        searched.push("pg_config, PATH, /usr/lib/postgresql/*/bin".to_owned());
    }
    Err(Error::BinariesNotFound { searched: searched.join(", ") })
}

fn has_server_binaries(dir: &Path) -> bool {
    REQUIRED.iter().all(|name| dir.join(name).is_file())
}

fn pg_config_bindir() -> Option<PathBuf> {
    let output = Command::new("pg_config").arg("--bindir").output().ok()?;
    if !output.status.success() {
        return None;
    }
    let text = String::from_utf8(output.stdout).ok()?;
    let dir = text.trim();
    (!dir.is_empty()).then(|| PathBuf::from(dir))
}

fn path_bindir() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).find(|dir| dir.join("initdb").is_file()).map(|dir| {
        // Debian links /usr/local/bin/initdb into the versioned directory; follow the link so
        // pg_ctl and postgres come from the same installation.
        std::fs::canonicalize(dir.join("initdb"))
            .ok()
            .and_then(|real| real.parent().map(Path::to_path_buf))
            .unwrap_or(dir)
    })
}

fn debian_bindirs() -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir("/usr/lib/postgresql") else { return Vec::new() };
    let mut versions: Vec<(u32, PathBuf)> = entries
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let version = entry.file_name().to_str()?.parse::<u32>().ok()?;
            Some((version, entry.path().join("bin")))
        })
        .collect();
    versions.sort_by_key(|(version, _)| std::cmp::Reverse(*version));
    versions.into_iter().map(|(_, dir)| dir).collect()
}
