//! The process environment as connection settings see it: `PGPASSWORD`, `PGPASSFILE`,
//! `HOME` and the other libpq fallbacks, captured once so that tests can pass their own.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;

/// A snapshot of environment variables.
///
/// [`Environment::process`] reads the real environment; [`Environment::from_pairs`] builds
/// one for tests and embedding programs (so they need not mutate the process environment,
/// which is racy across threads). `Debug` shows variable names only: values may be secrets.
#[derive(Clone, Default)]
pub struct Environment {
    vars: BTreeMap<String, String>,
}

impl Environment {
    /// The current process environment (variables that are not valid UTF-8 are ignored).
    pub fn process() -> Environment {
        Environment {
            vars: std::env::vars_os()
                .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
                .collect(),
        }
    }

    /// An environment holding exactly `pairs`.
    pub fn from_pairs<K: Into<String>, V: Into<String>>(pairs: impl IntoIterator<Item = (K, V)>) -> Environment {
        Environment { vars: pairs.into_iter().map(|(k, v)| (k.into(), v.into())).collect() }
    }

    /// A copy with `name` set to `value`.
    pub fn with(mut self, name: impl Into<String>, value: impl Into<String>) -> Environment {
        self.vars.insert(name.into(), value.into());
        self
    }

    /// A variable's value; an empty value counts as unset, as libpq treats it.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.vars.get(name).map(String::as_str).filter(|value| !value.is_empty())
    }

    /// The password file libpq would read: `PGPASSFILE`, else `$HOME/.pgpass`.
    pub fn passfile(&self) -> Option<PathBuf> {
        if let Some(path) = self.get("PGPASSFILE") {
            return Some(PathBuf::from(path));
        }
        self.get("HOME").map(|home| PathBuf::from(home).join(".pgpass"))
    }
}

impl fmt::Debug for Environment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.vars.keys()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_values_count_as_unset_and_debug_hides_values() {
        let environment = Environment::from_pairs([("PGPASSWORD", ""), ("HOME", "/home/op")]).with("X", "secret-v");
        assert_eq!(environment.get("PGPASSWORD"), None);
        assert_eq!(environment.passfile(), Some(PathBuf::from("/home/op/.pgpass")));
        let shown = format!("{environment:?}");
        assert!(shown.contains("HOME") && !shown.contains("secret-v"), "{shown}");
    }

    #[test]
    fn pgpassfile_wins_over_home() {
        let environment = Environment::from_pairs([("PGPASSFILE", "/etc/pw"), ("HOME", "/home/op")]);
        assert_eq!(environment.passfile(), Some(PathBuf::from("/etc/pw")));
    }
}
