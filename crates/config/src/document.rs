//! A project file being read: its name, its composed YAML and the problems found in it.

use crate::error::Problem;
use crate::yaml::Node;

/// Collects problems, and warnings, for one file while its values are read.
pub(crate) struct Document {
    pub(crate) file: String,
    pub(crate) problems: Vec<Problem>,
    /// Findings that do not stop the load (PipelineWise accepts them), worded as problems.
    pub(crate) warnings: Vec<Problem>,
    /// `(line, name)`: an unset `env_var` rendered as the empty string on that line.
    pub(crate) unset_lines: Vec<(usize, String)>,
}

/// `parent.key`, or `key` at the root.
pub(crate) fn join(parent: &str, key: &str) -> String {
    if parent.is_empty() { key.to_owned() } else { format!("{parent}.{key}") }
}

impl Document {
    pub(crate) fn new(file: impl Into<String>) -> Document {
        Document { file: file.into(), problems: Vec::new(), warnings: Vec::new(), unset_lines: Vec::new() }
    }

    /// The unset variables the value `value` was rendered from (`env_var X is unset`, `env_var
    /// X, Y are unset`), for a message about an empty value; `None` when it did not come from
    /// an unset variable.
    pub(crate) fn unset_note(&self, value: Option<&Node>) -> Option<String> {
        let value = value?;
        let names: Vec<&str> =
            self.unset_lines.iter().filter(|(line, _)| *line == value.line).map(|(_, name)| name.as_str()).collect();
        match names.as_slice() {
            [] => None,
            [name] => Some(format!("env_var {name} is unset")),
            names => Some(format!("env_var {} are unset", names.join(", "))),
        }
    }

    /// How a "missing" message names the field `key` whose (empty) value is `value`: the key,
    /// followed by the unset variables the value was rendered from (`password (env_var
    /// DATADIFF_APP_PASSWORD is unset)`), so the message names the fix when an empty value
    /// came from the environment.
    pub(crate) fn missing_field(&self, key: &str, value: Option<&Node>) -> String {
        match self.unset_note(value) {
            Some(note) => format!("{key} ({note})"),
            None => key.to_owned(),
        }
    }

    /// `message`, followed by the fields among `keys` of `node` whose empty values came from
    /// unset variables (`: token (env_var SLACK_TOKEN is unset)`). Variables are located by
    /// line: two empty fields of one flow mapping line are both given every name of the line.
    pub(crate) fn with_unset_fields(&self, message: &str, node: &Node, keys: &[&str]) -> String {
        let notes: Vec<String> = keys
            .iter()
            .filter(|key| node.get(key).is_some_and(|value| value.scalar_text() == Some("")))
            .filter(|key| self.unset_note(node.get(key)).is_some())
            .map(|key| self.missing_field(key, node.get(key)))
            .collect();
        if notes.is_empty() { message.to_owned() } else { format!("{message}: {}", notes.join(", ")) }
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
