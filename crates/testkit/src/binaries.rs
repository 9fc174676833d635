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

/// The environment variable that names a directory holding `mariadb-install-db` and
/// `mariadbd`.
pub const MARIADB_BINDIR_ENV: &str = "DATADIFF_TEST_MARIADB_BINDIR";

/// Where the MariaDB programs a throwaway server needs were found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MariaDbBinaries {
    /// `mariadb-install-db`, which creates a data directory.
    pub install_db: PathBuf,
    /// `mariadbd`, the server.
    pub server: PathBuf,
}

/// Finds `mariadb-install-db` and `mariadbd`: both in `$DATADIFF_TEST_MARIADB_BINDIR` when it
/// is set (an explicit setting that does not work is an error); otherwise each on `PATH` or in
/// `/usr/sbin`, `/usr/bin`, `/usr/local/sbin`, `/usr/local/bin` (Debian's `mariadb-server`
/// puts the server in `/usr/sbin`, which a non-root `PATH` often lacks).
pub fn find_mariadb_binaries() -> Result<MariaDbBinaries, Error> {
    if let Some(dir) = std::env::var_os(MARIADB_BINDIR_ENV) {
        let dir = PathBuf::from(dir);
        let (install_db, server) = (dir.join("mariadb-install-db"), dir.join("mariadbd"));
        if install_db.is_file() && server.is_file() {
            return Ok(MariaDbBinaries { install_db, server });
        }
        return Err(Error::MariaDbBinariesNotFound { searched: format!("{MARIADB_BINDIR_ENV}={}", dir.display()) });
    }
    let mut dirs: Vec<PathBuf> =
        std::env::var_os("PATH").map(|path| std::env::split_paths(&path).collect()).unwrap_or_default();
    for fixed in ["/usr/sbin", "/usr/bin", "/usr/local/sbin", "/usr/local/bin"] {
        if !dirs.iter().any(|dir| dir == Path::new(fixed)) {
            dirs.push(PathBuf::from(fixed));
        }
    }
    let find = |name: &str| dirs.iter().map(|dir| dir.join(name)).find(|path| path.is_file());
    match (find("mariadb-install-db"), find("mariadbd")) {
        (Some(install_db), Some(server)) => Ok(MariaDbBinaries { install_db, server }),
        _ => Err(Error::MariaDbBinariesNotFound {
            searched: dirs.iter().map(|dir| dir.display().to_string()).collect::<Vec<_>>().join(", "),
        }),
    }
}
