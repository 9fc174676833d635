//! `datadiff.yml`'s TLS settings for the connections of scheduled checks, per tap (the
//! source, through `replica_*` when set) and per target, and the backend's client
//! certificate. PipelineWise's tap and target files keep their `ssl: true`, which means only
//! `sslmode=require`; this is where certificate verification and client certificates go.
//!
//! ```yaml
//! tls:
//!   taps:
//!     payments:                       # a tap id
//!       sslmode: verify-full          # disable, prefer, require, verify-ca, verify-full
//!       sslrootcert: certs/ca.pem     # or `system`
//!       sslcert: certs/datadiff.crt   # with sslkey: a client certificate
//!       sslkey: certs/datadiff.key
//!   targets:
//!     postgres: {sslmode: verify-ca, sslrootcert: certs/dwh-ca.pem}
//! ```
//!
//! Relative paths are resolved against the project directory, and every file is checked
//! when the project loads: a regular file holding PEM certificates (`sslrootcert`,
//! `sslcert`) or an unencrypted private key belonging to `sslcert` (`sslkey`), a key file
//! with libpq's permissions (see `certificate.rs`). Without `sslmode` the side keeps its
//! `db_conn` meaning (`ssl: true` is `require`, else `prefer`); a mode weaker than `require`
//! for a `db_conn` with `ssl: true` is an error, and so is `allow` (a plaintext attempt
//! first).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use datadiff_diff_core::definition::SslMode;

use crate::certificate::{self, PemKind};
use crate::document::{Document, join};
use crate::yaml::Node;

/// One side's TLS settings from `datadiff.yml`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SideTls {
    /// `sslmode`; `None` keeps the `db_conn`'s (`ssl: true`: `require`, else `prefer`).
    pub sslmode: Option<SslMode>,
    /// Root certificates: a PEM file (absolute), or `system` for the system's trust store.
    pub sslrootcert: Option<PathBuf>,
    /// A client certificate (absolute); set together with [`SideTls::sslkey`].
    pub sslcert: Option<PathBuf>,
    /// The client certificate's private key (absolute, unencrypted PEM).
    pub sslkey: Option<PathBuf>,
}

/// The per-side TLS of a project's scheduled checks (`datadiff.yml`'s `tls`), by tap and
/// target id.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ConnectionTls {
    /// By tap id: the source connection of the tap's checks.
    pub taps: BTreeMap<String, SideTls>,
    /// By target id: the target connection of the target's checks.
    pub targets: BTreeMap<String, SideTls>,
}

impl ConnectionTls {
    /// The tap's settings, when `datadiff.yml` has some.
    pub fn tap(&self, id: &str) -> Option<&SideTls> {
        self.taps.get(id)
    }

    /// The target's settings, when `datadiff.yml` has some.
    pub fn target(&self, id: &str) -> Option<&SideTls> {
        self.targets.get(id)
    }
}

/// A `tls.taps.<id>` or `tls.targets.<id>` entry, before its id is checked.
pub(crate) struct TlsEntry {
    pub(crate) tap: bool,
    pub(crate) id: String,
    pub(crate) settings: SideTls,
    pub(crate) path: String,
    pub(crate) line: usize,
}

/// Reads the `tls` block (its keys, modes and files; ids are checked by [`resolve`]).
pub(crate) fn read(document: &mut Document, node: &Node, dir: &Path) -> Vec<TlsEntry> {
    let mut entries = Vec::new();
    if document.mapping(node, "tls").is_none() {
        return entries;
    }
    document.reject_unknown_keys(node, "tls", &["taps", "targets"]);
    for (group, tap) in [("taps", true), ("targets", false)] {
        let Some(sides) = node.get(group) else { continue };
        let group_path = join("tls", group);
        let Some(sides) = document.mapping(sides, &group_path) else { continue };
        for (key, value) in sides {
            let Some(id) = key.as_str() else {
                document.problem(&group_path, Some(key.line), format!("{group} ids must be strings"));
                continue;
            };
            let path = join(&group_path, id);
            if let Some(settings) = read_side(document, value, &path, dir) {
                entries.push(TlsEntry { tap, id: id.to_owned(), settings, path, line: key.line });
            }
        }
    }
    entries
}

fn read_side(document: &mut Document, node: &Node, path: &str, dir: &Path) -> Option<SideTls> {
    document.mapping(node, path)?;
    let before = document.problems.len();
    document.reject_unknown_keys(node, path, &["sslmode", "sslrootcert", "sslcert", "sslkey"]);
    let sslmode = document.optional_str(node, path, "sslmode").and_then(|text| {
        let line = node.get("sslmode").map(|n| n.line);
        match text.parse::<SslMode>() {
            Ok(SslMode::Allow) => {
                document.problem(
                    &join(path, "sslmode"),
                    line,
                    "sslmode allow is not supported for scheduled checks: use disable, prefer, require, verify-ca or verify-full",
                );
                None
            }
            Ok(mode) => Some(mode),
            Err(error) => {
                document.problem(&join(path, "sslmode"), line, error.to_string());
                None
            }
        }
    });
    let sslrootcert = certificate_file(document, node, path, "sslrootcert", dir, true);
    let (sslcert, sslkey) = client_certificate(document, node, path, dir);
    (document.problems.len() == before).then_some(SideTls { sslmode, sslrootcert, sslcert, sslkey })
}

/// `sslcert` and `sslkey` of a block, both or neither, as existing files.
pub(crate) fn client_certificate(
    document: &mut Document,
    node: &Node,
    path: &str,
    dir: &Path,
) -> (Option<PathBuf>, Option<PathBuf>) {
    let sslcert = certificate_file(document, node, path, "sslcert", dir, false);
    let sslkey = certificate_file(document, node, path, "sslkey", dir, false);
    for (present, missing) in [("sslcert", "sslkey"), ("sslkey", "sslcert")] {
        if let Some(value) = node.get(present)
            && node.get(missing).is_none()
        {
            document.problem(
                &join(path, present),
                Some(value.line),
                format!("{present} needs {missing}: a client certificate is a certificate and its key"),
            );
        }
    }
    if let (Some(certificate), Some(key)) = (&sslcert, &sslkey)
        && let (Ok(certificate_pem), Ok(key_pem)) = (std::fs::read(certificate), std::fs::read(key))
        && let Err(problem) = certificate::check_pair(&certificate_pem, &key_pem)
    {
        let line = node.get("sslkey").map(|n| n.line);
        document.problem(&join(path, "sslkey"), line, format!("sslkey file {}: {problem}", key.display()));
        return (None, None);
    }
    (sslcert, sslkey)
}

/// A certificate file key: a string, resolved against `dir`, that must name an existing
/// regular file holding what the key takes — certificates, or for `sslkey` an unencrypted
/// private key whose file has the permissions libpq requires (0600, or 0640 owned by root)
/// — (`system` is kept as is where `system_allowed`, libpq's name for the trust store).
pub(crate) fn certificate_file(
    document: &mut Document,
    node: &Node,
    path: &str,
    key: &str,
    dir: &Path,
    system_allowed: bool,
) -> Option<PathBuf> {
    let text = document.optional_str(node, path, key)?;
    if system_allowed && text == "system" {
        return Some(PathBuf::from(text));
    }
    let line = node.get(key).map(|n| n.line);
    if text.is_empty() {
        document.problem(&join(path, key), line, format!("{key} must name a file"));
        return None;
    }
    let file = PathBuf::from(&text);
    let file = if file.is_absolute() { file } else { dir.join(file) };
    let problem = |document: &mut Document, what: String| {
        document.problem(&join(path, key), line, format!("{key} file {} {what}", file.display()));
    };
    match std::fs::metadata(&file) {
        Ok(metadata) if metadata.is_dir() => {
            problem(document, "is a directory, not a PEM file".to_owned());
            return None;
        }
        Ok(metadata) if !metadata.is_file() => {
            problem(document, "is not a regular file".to_owned());
            return None;
        }
        Ok(_) => {}
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            problem(document, "does not exist".to_owned());
            return None;
        }
        Err(error) => {
            problem(document, format!("cannot be read: {error}"));
            return None;
        }
    }
    let kind = if key == "sslkey" { PemKind::PrivateKey } else { PemKind::Certificates };
    let checked = std::fs::read(&file)
        .map_err(|error| certificate::PemProblem::Unreadable(error.to_string()))
        .and_then(|pem| certificate::check_pem(&pem, kind))
        .and_then(|()| match kind {
            PemKind::PrivateKey => certificate::check_key_permissions(&file),
            PemKind::Certificates => Ok(()),
        });
    if let Err(what) = checked {
        problem(document, what.to_string());
        return None;
    }
    Some(file)
}

/// What [`resolve`] checks entries against.
pub(crate) struct Known<'a> {
    /// Tap ids with whether their `db_conn` has `ssl: true`.
    pub(crate) taps: &'a [(&'a str, bool)],
    /// Target ids with whether their `db_conn` has `ssl: true`.
    pub(crate) targets: &'a [(&'a str, bool)],
    /// Whether some tap file could not be read as far as its id.
    pub(crate) unreadable_tap: bool,
    /// Whether some target file could not be read as far as its id.
    pub(crate) unreadable_target: bool,
}

/// Checks the entries' ids against the project's taps and targets and their modes against
/// `ssl: true`, and keeps the valid ones.
pub(crate) fn resolve(document: &mut Document, entries: Vec<TlsEntry>, known: &Known<'_>) -> ConnectionTls {
    let mut tls = ConnectionTls::default();
    for entry in entries {
        let (kind, ids, unreadable) = match entry.tap {
            true => ("tap", known.taps, known.unreadable_tap),
            false => ("target", known.targets, known.unreadable_target),
        };
        let Some(&(_, ssl)) = ids.iter().find(|(id, _)| *id == entry.id) else {
            // A file that could not be read to its id is reported in that file.
            if !unreadable {
                document.problem(
                    &entry.path,
                    Some(entry.line),
                    format!("unknown {kind} '{}': no {kind} file has this id", entry.id),
                );
            }
            continue;
        };
        if ssl && matches!(entry.settings.sslmode, Some(SslMode::Disable | SslMode::Prefer)) {
            let mode = entry.settings.sslmode.map_or("", SslMode::as_str);
            document.problem(
                &join(&entry.path, "sslmode"),
                Some(entry.line),
                format!("sslmode {mode} is weaker than the {kind}'s db_conn ssl: true (require)"),
            );
            continue;
        }
        let map = if entry.tap { &mut tls.taps } else { &mut tls.targets };
        map.insert(entry.id, entry.settings);
    }
    tls
}
