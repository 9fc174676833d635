//! A project file being read: its name, its composed YAML and the problems found in it.

use crate::error::Problem;
use crate::yaml::Node;

/// Collects problems, and warnings, for one file while its values are read.
pub(crate) struct Document {
    pub(crate) file: String,
    pub(crate) problems: Vec<Problem>,
    /// Findings that do not stop the load (PipelineWise accepts them), worded as problems.
    pub(crate) warnings: Vec<Problem>,
}

/// `parent.key`, or `key` at the root.
pub(crate) fn join(parent: &str, key: &str) -> String {
    if parent.is_empty() { key.to_owned() } else { format!("{parent}.{key}") }
}

impl Document {
    pub(crate) fn new(file: impl Into<String>) -> Document {
        Document { file: file.into(), problems: Vec::new(), warnings: Vec::new() }
    }

    /// Records a problem at `path`, on `line`.
    pub(crate) fn problem(&mut self, path: &str, line: Option<usize>, message: impl Into<String>) {
        self.problems.push(Problem { file: self.file.clone(), path: path.to_owned(), line, message: message.into() });
    }

    /// Records a warning at `path`, on `line`.
    pub(crate) fn warning(&mut self, path: &str, line: Option<usize>, message: impl Into<String>) {
        self.warnings.push(Problem { file: self.file.clone(), path: path.to_owned(), line, message: message.into() });
    }

    /// A mapping at `path`, or a problem saying what it is instead.
    pub(crate) fn mapping<'n>(&mut self, node: &'n Node, path: &str) -> Option<&'n [(Node, Node)]> {
        let entries = node.as_map();
        if entries.is_none() {
            self.problem(path, Some(node.line), format!("must be a mapping, got {}", node.type_name()));
        }
        entries
    }

    /// Reports every key of `node` not in `allowed` (a closed block: `data_diff`, `backend_db`,
    /// `datadiff.yml`).
    pub(crate) fn reject_unknown_keys(&mut self, node: &Node, path: &str, allowed: &[&str]) {
        let Some(entries) = node.as_map() else { return };
        for (key, _) in entries {
            let name = key.scalar_text().unwrap_or("");
            if !allowed.contains(&name) {
                self.problem(
                    &join(path, name),
                    Some(key.line),
                    format!("unknown key '{name}' (allowed: {})", allowed.join(", ")),
                );
            }
        }
    }

    /// An optional string under `key`. Present but not a string is a problem.
    pub(crate) fn optional_str(&mut self, node: &Node, path: &str, key: &str) -> Option<String> {
        let value = node.get(key)?;
        if value.is_null() {
            return None;
        }
        match value.as_str() {
            Some(text) => Some(text.to_owned()),
            None => {
                self.problem(
                    &join(path, key),
                    Some(value.line),
                    format!("must be a string, got {}", value.type_name()),
                );
                None
            }
        }
    }

    /// An optional scalar under `key` read as text whatever its YAML type (`port: 5432`,
    /// `password: 12345`): connection settings, which PipelineWise hands on as they come.
    pub(crate) fn optional_text(&mut self, node: &Node, path: &str, key: &str) -> Option<String> {
        let value = node.get(key)?;
        if value.is_null() {
            return None;
        }
        match value.scalar_text() {
            Some(text) => Some(text.to_owned()),
            None => {
                self.problem(
                    &join(path, key),
                    Some(value.line),
                    format!("must be a scalar, got {}", value.type_name()),
                );
                None
            }
        }
    }

    /// An optional boolean under `key` (`true`/`yes`/`on`…, or the strings `"true"`/`"false"`
    /// case-insensitively, as PipelineWise's connectors accept `ssl: "true"`).
    pub(crate) fn optional_flag(&mut self, node: &Node, path: &str, key: &str) -> Option<bool> {
        let value = node.get(key)?;
        if value.is_null() {
            return None;
        }
        if let Some(flag) = value.as_bool() {
            return Some(flag);
        }
        match value.as_str().map(str::to_ascii_lowercase).as_deref() {
            Some("true") => Some(true),
            Some("false") => Some(false),
            _ => {
                self.problem(
                    &join(path, key),
                    Some(value.line),
                    format!("must be a boolean, got {}", value.type_name()),
                );
                None
            }
        }
    }

    /// An optional non-negative integer under `key` (an integer or a string of digits).
    pub(crate) fn optional_u32(&mut self, node: &Node, path: &str, key: &str) -> Option<u32> {
        let value = node.get(key)?;
        if value.is_null() {
            return None;
        }
        let parsed = value
            .scalar_text()
            .filter(|_| matches!(value.type_name(), "int" | "str"))
            .and_then(|t| t.trim().parse().ok());
        if parsed.is_none() {
            self.problem(&join(path, key), Some(value.line), "must be a non-negative integer");
        }
        parsed
    }
}
