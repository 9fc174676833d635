//! JSON text exactly as Python's `json.dumps` writes it, for the few shapes whose bytes are
//! hashed (the index-warning identity, the metadata-only fingerprint payload).
//!
//! Python's default `ensure_ascii=True` escapes `"` and `\`, writes `\n`, `\r`, `\t`, `\b`,
//! `\f` by name, and every other character outside printable ASCII (space to `~`, so DEL
//! too) as lowercase `\uXXXX`, characters above U+FFFF as a UTF-16 surrogate pair. `/` is
//! not escaped. `serde_json` differs (it keeps non-ASCII and DEL as they are), hence this
//! module. `datadiff-config` has its own encoder for canonical JSON; the two are small and
//! independent on purpose (no shared helper crate yet).

use std::fmt::Write as _;

/// The two separator styles PipelineWise uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Separators {
    /// `separators=(",", ":")`.
    Compact,
    /// Python's defaults, `", "` and `": "`.
    Default,
}

impl Separators {
    fn item(self) -> &'static str {
        match self {
            Separators::Compact => ",",
            Separators::Default => ", ",
        }
    }

    fn key(self) -> &'static str {
        match self {
            Separators::Compact => ":",
            Separators::Default => ": ",
        }
    }
}

/// Appends `text` as a Python `ensure_ascii` JSON string.
pub(crate) fn write_string(out: &mut String, text: &str) {
    out.push('"');
    for character in text.chars() {
        match character {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            ' '..='~' => out.push(character),
            _ => {
                let mut units = [0u16; 2];
                for unit in character.encode_utf16(&mut units) {
                    // Writing to a String cannot fail.
                    let _ = write!(out, "\\u{unit:04x}");
                }
            }
        }
    }
    out.push('"');
}

/// Appends a JSON array of strings.
pub(crate) fn write_string_array<'a>(
    out: &mut String,
    items: impl IntoIterator<Item = &'a str>,
    separators: Separators,
) {
    out.push('[');
    for (position, item) in items.into_iter().enumerate() {
        if position > 0 {
            out.push_str(separators.item());
        }
        write_string(out, item);
    }
    out.push(']');
}

/// Writes JSON objects member by member; the caller supplies keys in Python's `sort_keys`
/// order (code-point order, which is what `str` comparison does).
pub(crate) struct ObjectWriter<'o> {
    out: &'o mut String,
    separators: Separators,
    members: usize,
}

impl<'o> ObjectWriter<'o> {
    /// Opens an object.
    pub(crate) fn open(out: &'o mut String, separators: Separators) -> Self {
        out.push('{');
        ObjectWriter { out, separators, members: 0 }
    }

    fn key(&mut self, key: &str) {
        if self.members > 0 {
            self.out.push_str(self.separators.item());
        }
        self.members += 1;
        write_string(self.out, key);
        self.out.push_str(self.separators.key());
    }

    /// Adds a string member.
    pub(crate) fn string(&mut self, key: &str, value: &str) {
        self.key(key);
        write_string(self.out, value);
    }

    /// Adds a member whose value is an array of strings.
    pub(crate) fn string_array<'a>(&mut self, key: &str, values: impl IntoIterator<Item = &'a str>) {
        self.key(key);
        write_string_array(self.out, values, self.separators);
    }

    /// Closes the object.
    pub(crate) fn close(self) {
        self.out.push('}');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn string(text: &str) -> String {
        let mut out = String::new();
        write_string(&mut out, text);
        out
    }

    // Expected texts below were produced by Python 3's json.dumps.

    #[test]
    fn ascii_passes_through_and_slash_is_not_escaped() {
        assert_eq!(string("a/b ~!"), r#""a/b ~!""#);
    }

    #[test]
    fn quotes_backslashes_and_named_controls_are_escaped() {
        assert_eq!(string("quote\"back\\slash"), r#""quote\"back\\slash""#);
        assert_eq!(string("tab\tnew\nline\r\u{8}\u{c}"), r#""tab\tnew\nline\r\b\f""#);
    }

    #[test]
    fn other_controls_and_del_use_lowercase_unicode_escapes() {
        assert_eq!(string("ctl\u{1}"), r#""ctl\u0001""#);
        assert_eq!(string("del\u{7f}"), r#""del\u007f""#);
        assert_eq!(string("\u{1f}"), r#""\u001f""#);
    }

    #[test]
    fn non_ascii_is_escaped_and_astral_characters_become_surrogate_pairs() {
        assert_eq!(string("geändert_am"), r#""ge\u00e4ndert_am""#);
        assert_eq!(string("\u{2028}"), r#""\u2028""#);
        assert_eq!(string("emoji 😀"), r#""emoji \ud83d\ude00""#);
    }

    #[test]
    fn arrays_use_the_chosen_separators() {
        let mut compact = String::new();
        write_string_array(&mut compact, ["a", "b"], Separators::Compact);
        assert_eq!(compact, r#"["a","b"]"#);
        let mut default = String::new();
        write_string_array(&mut default, ["a", "b"], Separators::Default);
        assert_eq!(default, r#"["a", "b"]"#);
        let mut empty = String::new();
        write_string_array(&mut empty, [], Separators::Default);
        assert_eq!(empty, "[]");
    }

    #[test]
    fn objects_use_the_chosen_separators() {
        let mut out = String::new();
        let mut object = ObjectWriter::open(&mut out, Separators::Default);
        object.string_array("columns", ["id"]);
        object.string("source_schema", "public");
        object.close();
        assert_eq!(out, r#"{"columns": ["id"], "source_schema": "public"}"#);
        let mut compact = String::new();
        let mut object = ObjectWriter::open(&mut compact, Separators::Compact);
        object.string("a", "b");
        object.string("c", "d");
        object.close();
        assert_eq!(compact, r#"{"a":"b","c":"d"}"#);
    }
}
