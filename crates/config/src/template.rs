//! Jinja rendering of project files, as PipelineWise renders them before parsing: the only
//! variable is `env_var`, a mapping of the environment (`{{ env_var['PGPASSWORD'] }}`,
//! `{{ env_var.get('PORT', '5432') }}`).
//!
//! An unset variable renders as the empty string, as Jinja's default `Undefined` does upstream;
//! the renderer records its name so the loader can warn about it, and the rendered lines it
//! landed on so that a "missing" message can name the variable behind an empty field.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use minijinja::value::{Enumerator, Object, ObjectRepr, Value};
use minijinja::{Environment, Error, ErrorKind, State, UndefinedBehavior};

/// The environment as a Jinja mapping that remembers which missing names were asked for.
#[derive(Debug)]
struct EnvVars {
    vars: BTreeMap<String, String>,
    missing: Mutex<Vec<String>>,
    /// Render an unset name as a marker (`MARK name MARK`) instead of undefined: the second
    /// rendering that locates unset variables.
    mark: bool,
}

/// Brackets an unset variable's name in the marking rendering (never in a project file: a
/// control character).
const MARK: char = '\u{1}';

impl EnvVars {
    fn note_missing(&self, name: &str) {
        if let Ok(mut missing) = self.missing.lock()
            && !missing.iter().any(|known| known == name)
        {
            missing.push(name.to_owned());
        }
    }
}

impl Object for EnvVars {
    fn repr(self: &Arc<Self>) -> ObjectRepr {
        ObjectRepr::Map
    }

    fn get_value(self: &Arc<Self>, key: &Value) -> Option<Value> {
        let name = key.as_str()?;
        match self.vars.get(name) {
            Some(value) => Some(Value::from(value.as_str())),
            None if self.mark => Some(Value::from(format!("{MARK}{name}{MARK}"))),
            None => {
                self.note_missing(name);
                None
            }
        }
    }

    fn enumerate(self: &Arc<Self>) -> Enumerator {
        Enumerator::Values(self.vars.keys().map(|k| Value::from(k.as_str())).collect())
    }

    fn call_method(self: &Arc<Self>, _state: &mut State<'_, '_>, method: &str, args: &[Value]) -> Result<Value, Error> {
        if method != "get" || args.is_empty() || args.len() > 2 {
            return Err(Error::from(ErrorKind::UnknownMethod));
        }
        let name = args[0].as_str().unwrap_or_default();
        Ok(match self.vars.get(name) {
            Some(value) => Value::from(value.as_str()),
            None => args.get(1).cloned().unwrap_or(Value::from(())),
        })
    }
}

/// The result of rendering one file.
pub(crate) struct Rendered {
    pub(crate) text: String,
    /// Names of unset variables the file asked for with `env_var[...]`.
    pub(crate) missing: Vec<String>,
    /// `(line, name)`: an unset variable rendered (as the empty string) on that 1-based line
    /// of `text`.
    pub(crate) unset_lines: Vec<(usize, String)>,
}

/// A template error: its line and message.
pub(crate) struct TemplateError {
    pub(crate) line: Option<usize>,
    pub(crate) message: String,
}

/// Renders `source` with `env_var` bound to `vars`.
pub(crate) fn render(source: &str, vars: &BTreeMap<String, String>) -> Result<Rendered, TemplateError> {
    let (text, missing) = render_once(source, vars, false)?;
    let unset_lines = if missing.is_empty() { Vec::new() } else { locate_unset(source, vars, &text) };
    Ok(Rendered { text, missing, unset_lines })
}

fn render_once(
    source: &str,
    vars: &BTreeMap<String, String>,
    mark: bool,
) -> Result<(String, Vec<String>), TemplateError> {
    let mut environment = Environment::new();
    environment.set_undefined_behavior(UndefinedBehavior::Lenient);
    // Like Jinja2's `Template`, minijinja drops one trailing newline; YAML does not mind.
    let env_vars = Arc::new(EnvVars { vars: vars.clone(), missing: Mutex::new(Vec::new()), mark });
    let context = minijinja::context! { env_var => Value::from_dyn_object(Arc::clone(&env_vars)) };
    let text = environment.render_str(source, context).map_err(|error| TemplateError {
        line: error.line(),
        message: format!("Jinja template error: {}", error.detail().unwrap_or(&error.kind().to_string())),
    })?;
    let missing = env_vars.missing.lock().map(|names| names.clone()).unwrap_or_default();
    Ok((text, missing))
}

/// Renders again with every unset variable as a marker and keeps the markers of each line
/// that, without them, equals the real rendering's line: where the template's logic depends
/// on the value (`| default(...)`, `{% if %}`) the lines differ and nothing is claimed.
fn locate_unset(source: &str, vars: &BTreeMap<String, String>, text: &str) -> Vec<(usize, String)> {
    let Ok((marked, _)) = render_once(source, vars, true) else { return Vec::new() };
    let mut found = Vec::new();
    for (index, (plain, marked)) in text.lines().zip(marked.lines()).enumerate() {
        let mut stripped = String::with_capacity(plain.len());
        let mut names = Vec::new();
        let mut parts = marked.split(MARK);
        if let Some(first) = parts.next() {
            stripped.push_str(first);
        }
        while let (Some(name), Some(after)) = (parts.next(), parts.next()) {
            names.push(name.to_owned());
            stripped.push_str(after);
        }
        if stripped == plain {
            for name in names {
                if !found.iter().any(|(line, known)| *line == index + 1 && *known == name) {
                    found.push((index + 1, name));
                }
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars() -> BTreeMap<String, String> {
        BTreeMap::from([("PGHOST".to_owned(), "db.internal".to_owned())])
    }

    #[test]
    fn env_var_renders_set_and_unset_names() {
        let rendered = render("host: {{ env_var['PGHOST'] }}\npassword: \"{{ env_var['MISSING'] }}\"\n", &vars());
        let rendered = rendered.unwrap_or_else(|e| panic!("{}", e.message));
        assert_eq!(rendered.text, "host: db.internal\npassword: \"\"");
        assert_eq!(rendered.missing, vec!["MISSING".to_owned()]);
    }

    #[test]
    fn attribute_get_and_default_filter() {
        let source =
            "a: {{ env_var.PGHOST }}\nb: {{ env_var.get('PORT', '5432') }}\nc: {{ env_var['X'] | default('d') }}\n";
        let rendered = render(source, &vars()).unwrap_or_else(|e| panic!("{}", e.message));
        assert_eq!(rendered.text, "a: db.internal\nb: 5432\nc: d");
    }

    #[test]
    fn unset_variables_are_located_by_rendered_line() {
        let source = "a: 1\n{% if true %}\nb: \"{{ env_var['GONE'] }}\"\n{% endif %}\nc: {{ env_var['PGHOST'] }}{{ env_var.OUT }}\n\
                      d: {{ env_var['NOPE'] | default('x') }}\ne: {{ env_var['GONE'] }}-{{ env_var['OUT'] }}\n";
        let rendered = render(source, &vars()).unwrap_or_else(|e| panic!("{}", e.message));
        let lines: Vec<&str> = rendered.text.lines().collect();
        assert_eq!(lines[2], "b: \"\"");
        assert_eq!(
            rendered.unset_lines,
            vec![(3, "GONE".to_owned()), (5, "OUT".to_owned()), (7, "GONE".to_owned()), (7, "OUT".to_owned())],
            "a defaulted name is not claimed for its line"
        );
        let all_set = render("a: {{ env_var['PGHOST'] }}\n", &vars()).unwrap_or_else(|e| panic!("{}", e.message));
        assert!(all_set.unset_lines.is_empty());
    }

    #[test]
    fn template_errors_have_a_line() {
        let error = render("a: 1\nb: {{ env_var[ }}\n", &vars()).err();
        assert_eq!(error.as_ref().and_then(|e| e.line), Some(2));
    }
}
