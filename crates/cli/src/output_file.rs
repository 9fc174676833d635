//! A file the user names for a command's output (`audit --report`, `report metrics
//! --output`): checked before the command works, written atomically, and never anything but a
//! regular file.
//!
//! The rules, the same for every such flag:
//!
//! * **A regular file, or a path that does not exist yet** (in a directory that does), is
//!   written atomically: a new file beside it (`.NAME.<pid>.tmp`, created exclusively, with
//!   the old file's permissions), synced, then renamed over it. A reader sees the old file or
//!   the new one, never half of either.
//! * **A symbolic link is followed** (through any chain of links) to where it points: a
//!   regular file there is replaced as above and the link stays a link; a link whose target
//!   does not exist creates that target. The link itself is never replaced or removed.
//! * **Anything else** — a character or block device (`/dev/full`, `/dev/stdout` on a
//!   terminal), a FIFO, a socket, a directory, or a link to one — is refused before any work,
//!   with exit 2 and one line naming the path and what it is. Nothing is written to it,
//!   replaced or removed. To print, leave the flag out: the output then goes to stdout.
//! * **Only what the command wrote is removed**: its temporary file when a step fails, and,
//!   for `audit --report`, a regular file the path named before the audit started (see
//!   [`OutputFile::remove_earlier`]).

use std::io::Write as _;
use std::os::unix::fs::{FileTypeExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};

/// Why an output path cannot be written.
#[derive(Debug)]
pub(crate) enum OutputFileError {
    /// The path (or the file a link leads to) is not a regular file.
    NotRegular {
        /// The flag.
        flag: &'static str,
        /// The path as given.
        path: PathBuf,
        /// What is there (`a character device`, `a symbolic link to /dev/full, a character device`).
        what: String,
        /// What the command writes (`the report`, `the metrics`).
        output: &'static str,
    },
    /// The directory a new file would go to does not exist.
    NoDirectory {
        /// The flag.
        flag: &'static str,
        /// The path as given.
        path: PathBuf,
        /// The missing directory.
        directory: PathBuf,
    },
    /// The path could not be examined, replaced or removed.
    Io {
        /// The flag.
        flag: &'static str,
        /// The path as given.
        path: PathBuf,
        /// What failed.
        action: &'static str,
        /// The cause.
        source: std::io::Error,
    },
}

impl std::fmt::Display for OutputFileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OutputFileError::NotRegular { flag, path, what, output } => write!(
                f,
                "{flag} {}: {what}, not a regular file; datadiff writes {output} only to a regular file or a new \
                 path (leave out {flag} to print it)",
                path.display()
            ),
            OutputFileError::NoDirectory { flag, path, directory } => {
                write!(f, "{flag} {}: the directory {} does not exist", path.display(), directory.display())
            }
            OutputFileError::Io { flag, path, action, source } => {
                write!(f, "{flag} {}: cannot {action}: {source}", path.display())
            }
        }
    }
}

impl std::error::Error for OutputFileError {}

/// A checked output path: where the output will be renamed to, through any symbolic links.
#[derive(Debug, Clone)]
pub(crate) struct OutputFile {
    flag: &'static str,
    /// The path as given (for messages).
    given: PathBuf,
    /// The file written: the given path, or where its links lead.
    target: PathBuf,
}

impl OutputFile {
    /// Checks `path` (given with `flag`; the command writes `output` there) before the command
    /// does any work: see the module docs.
    pub(crate) fn check(flag: &'static str, output: &'static str, path: &Path) -> Result<OutputFile, OutputFileError> {
        let io = |action: &'static str| {
            let path = path.to_path_buf();
            move |source| OutputFileError::Io { flag, path, action, source }
        };
        // What the path leads to, as the kernel follows it (also through /proc's magic links:
        // /dev/stdout into a pipe is a FIFO, not a missing file).
        match std::fs::metadata(path) {
            Ok(metadata) if !metadata.is_file() => {
                let what = match std::fs::read_link(path) {
                    Ok(link) => format!("a symbolic link to {}, {}", link.display(), describe(metadata.file_type())),
                    Err(_) => describe(metadata.file_type()).to_owned(),
                };
                return Err(OutputFileError::NotRegular { flag, path: path.to_path_buf(), what, output });
            }
            _ => {}
        }
        let mut target = path.to_path_buf();
        let mut via: Option<PathBuf> = None;
        // At most 40 links, as the kernel (ELOOP).
        for _ in 0..=40 {
            let metadata = match std::fs::symlink_metadata(&target) {
                Ok(metadata) => metadata,
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                    let directory = match target.parent() {
                        Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
                        _ => PathBuf::from("."),
                    };
                    if !std::fs::metadata(&directory).is_ok_and(|metadata| metadata.is_dir()) {
                        return Err(OutputFileError::NoDirectory { flag, path: path.to_path_buf(), directory });
                    }
                    return Ok(OutputFile { flag, given: path.to_path_buf(), target });
                }
                Err(error) => return Err(io("examine it")(error)),
            };
            let kind = metadata.file_type();
            if kind.is_file() {
                return Ok(OutputFile { flag, given: path.to_path_buf(), target });
            }
            if !kind.is_symlink() {
                let what = match &via {
                    Some(link) => format!("a symbolic link to {}, {}", link.display(), describe(kind)),
                    None => describe(kind).to_owned(),
                };
                return Err(OutputFileError::NotRegular { flag, path: path.to_path_buf(), what, output });
            }
            let link = std::fs::read_link(&target).map_err(io("read the symbolic link"))?;
            target = match target.parent() {
                Some(parent) if link.is_relative() => parent.join(&link),
                _ => link,
            };
            via = Some(target.clone());
        }
        Err(io("follow its symbolic links")(std::io::Error::other("too many levels of symbolic links")))
    }

    /// The path as given.
    pub(crate) fn path(&self) -> &Path {
        &self.given
    }

    /// Removes the regular file at the path (where its links lead), if there is one: what an
    /// earlier run wrote there. `Ok(true)` when a file was removed. Anything else there is
    /// left alone (the check already refused it; something put there since is not ours).
    pub(crate) fn remove_earlier(&self) -> Result<bool, OutputFileError> {
        match std::fs::symlink_metadata(&self.target) {
            Ok(metadata) if metadata.is_file() => {}
            Ok(_) => return Ok(false),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(false),
            Err(error) => return Err(self.io("examine it", error)),
        }
        match std::fs::remove_file(&self.target) {
            Ok(()) => Ok(true),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(error) => Err(self.io("remove the earlier file", error)),
        }
    }

    /// Writes `contents` atomically (see the module docs); the temporary file is removed when
    /// any step fails. What is at the path is checked again just before the rename: a path
    /// that meanwhile became something other than a regular file is refused, untouched.
    pub(crate) fn write(&self, contents: &[u8]) -> Result<(), OutputFileError> {
        let name = self.target.file_name().ok_or_else(|| {
            self.io("write it", std::io::Error::new(std::io::ErrorKind::InvalidInput, "the path names no file"))
        })?;
        let mut temporary_name = std::ffi::OsString::from(".");
        temporary_name.push(name);
        temporary_name.push(format!(".{}.tmp", std::process::id()));
        let temporary = self.target.with_file_name(temporary_name);
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temporary)
            .map_err(|error| self.io("create a temporary file beside it", error))?;
        let written = (|| {
            if let Ok(existing) = std::fs::symlink_metadata(&self.target)
                && existing.is_file()
            {
                let mode = existing.permissions().mode() & 0o7777;
                file.set_permissions(std::fs::Permissions::from_mode(mode)).map_err(|e| ("write it", e))?;
            }
            file.write_all(contents).map_err(|e| ("write it", e))?;
            file.sync_all().map_err(|e| ("write it", e))?;
            match std::fs::symlink_metadata(&self.target) {
                Ok(metadata) if !metadata.is_file() => {
                    let what = describe(metadata.file_type());
                    return Err(("replace it", std::io::Error::other(format!("it is now {what}"))));
                }
                _ => {}
            }
            std::fs::rename(&temporary, &self.target).map_err(|e| ("replace it", e))
        })();
        if let Err((action, error)) = written {
            let _ = std::fs::remove_file(&temporary);
            return Err(self.io(action, error));
        }
        Ok(())
    }

    fn io(&self, action: &'static str, source: std::io::Error) -> OutputFileError {
        OutputFileError::Io { flag: self.flag, path: self.given.clone(), action, source }
    }
}

/// What a file type is, in words.
fn describe(kind: std::fs::FileType) -> &'static str {
    if kind.is_dir() {
        "a directory"
    } else if kind.is_char_device() {
        "a character device"
    } else if kind.is_block_device() {
        "a block device"
    } else if kind.is_fifo() {
        "a FIFO (named pipe)"
    } else if kind.is_socket() {
        "a socket"
    } else if kind.is_symlink() {
        "a symbolic link"
    } else if kind.is_file() {
        "a regular file"
    } else {
        "a special file"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(path: &Path) -> Result<OutputFile, OutputFileError> {
        OutputFile::check("--output", "the metrics", path)
    }

    #[test]
    fn a_regular_file_or_a_new_path_is_written_atomically_and_a_link_is_followed() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("m.prom");
        std::fs::write(&file, "old").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o640)).unwrap();
        check(&file).unwrap().write(b"new").unwrap();
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "new");
        assert_eq!(std::fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o640, "permissions kept");

        let link = dir.path().join("link.prom");
        std::os::unix::fs::symlink("m.prom", &link).unwrap();
        check(&link).unwrap().write(b"through the link").unwrap();
        assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink(), "the link stays a link");
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "through the link");

        let dangling = dir.path().join("dangling.prom");
        std::os::unix::fs::symlink("created.prom", &dangling).unwrap();
        check(&dangling).unwrap().write(b"created").unwrap();
        assert_eq!(std::fs::read_to_string(dir.path().join("created.prom")).unwrap(), "created");

        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names.len(), 4, "no temporary file left: {names:?}");
    }

    #[test]
    fn anything_else_is_refused_naming_the_path_and_what_it_is() {
        let dir = tempfile::tempdir().unwrap();
        let error = check(dir.path()).unwrap_err().to_string();
        assert!(error.starts_with(&format!("--output {}: a directory, not a regular file", dir.path().display())));
        let link = dir.path().join("to-null");
        std::os::unix::fs::symlink("/dev/null", &link).unwrap();
        let error = check(&link).unwrap_err().to_string();
        assert!(error.contains("a symbolic link to /dev/null, a character device, not a regular file"), "{error}");
        let missing = dir.path().join("absent").join("m.prom");
        let error = check(&missing).unwrap_err().to_string();
        assert!(error.ends_with(&format!("the directory {} does not exist", dir.path().join("absent").display())));
    }
}
