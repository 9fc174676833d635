//! Errors of the config crate: the problems of a project directory, reported together.

use std::fmt;
use std::path::PathBuf;

use crate::vault::SecretFileError;

/// One problem in a project: the file, the YAML path (`schemas[0].tables[1].data_diff.frequency`;
/// empty for the whole file), the 1-based line when known, and the message (PipelineWise's
/// wording where PipelineWise has one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// The file name inside the project directory (`tap_payments.yml`).
    pub file: String,
    /// The YAML path of the offending node.
    pub path: String,
    /// The line of the offending node.
    pub line: Option<usize>,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for Problem {
    /// `tap_payments.yml:12: schemas[0].tables[0].data_diff.frequency: <message>`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file)?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
        }
        if !self.path.is_empty() {
            write!(f, ": {}", self.path)?;
        }
        write!(f, ": {}", self.message)
    }
}

/// Why a project could not be loaded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The directory cannot be listed.
    #[error("cannot read project directory {dir}")]
    Directory {
        /// The directory.
        dir: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The `--secret` file gave no vault password.
    #[error("cannot read the vault password")]
    Secret(#[source] SecretFileError),
    /// The project has problems; all of them are listed.
    #[error("{} problem(s) in {}", problems.len(), dir.display())]
    Invalid {
        /// The directory.
        dir: PathBuf,
        /// Every problem found, in file order then YAML order.
        problems: Vec<Problem>,
    },
}

impl Error {
    /// The problems, for [`Error::Invalid`]; empty otherwise.
    pub fn problems(&self) -> &[Problem] {
        match self {
            Error::Invalid { problems, .. } => problems,
            _ => &[],
        }
    }
}
