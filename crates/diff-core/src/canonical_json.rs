//! JSON bytes exactly as Python's `json.dumps(value, sort_keys=True, separators=(",", ":"))`
//! writes them, which is how PipelineWise serialises a definition before hashing it — and,
//! with Python's default separators (`", "`, `": "`), the other payloads it hashes (the
//! metadata-only preflight scope; [`python_json_with`]). The workspace's one Python-style
//! JSON encoder.
//!
//! That means: object keys sorted by code point (UTF-8 byte order is the same order), no
//! whitespace, and `ensure_ascii`: every character outside printable ASCII (space to `~`) is
//! escaped — `\"`, `\\`, `\n`, `\r`, `\t`, `\b`, `\f` by name, every other one as lowercase
//! `\uXXXX`, characters beyond the Basic Multilingual Plane as a UTF-16 surrogate pair
//! (`😀` → `\ud83d\ude00`), DEL as `\u007f`. `/` is not escaped.
//!
//! Integers are written plainly. Floats follow Python's `repr` (`1.0`, `1e+16`, `1.5e-05`);
//! definitions never contain one, but the writer is total.
//!
//! The input is a [`serde_json::Value`]; keys are sorted here, whatever map order
//! `serde_json` was built with (its `preserve_order` feature may be on elsewhere in a build).

use std::fmt::Write as _;

use serde_json::Value;

/// The two separator styles PipelineWise hashes with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PythonSeparators {
    /// `separators=(",", ":")`.
    Compact,
    /// Python's defaults, `", "` and `": "`.
    Default,
}

impl PythonSeparators {
    fn item(self) -> &'static str {
        match self {
            PythonSeparators::Compact => ",",
            PythonSeparators::Default => ", ",
        }
    }

    fn key(self) -> &'static str {
        match self {
            PythonSeparators::Compact => ":",
            PythonSeparators::Default => ": ",
        }
    }
}

/// Writes `value` as Python's `json.dumps(value, sort_keys=True, separators=(",", ":"))`.
pub fn python_json(value: &Value) -> String {
    python_json_with(value, PythonSeparators::Compact)
}

/// Writes `value` as Python's `json.dumps(value, sort_keys=True)` with `separators`.
pub fn python_json_with(value: &Value, separators: PythonSeparators) -> String {
    let mut out = String::new();
    write_value(&mut out, value, separators);
    out
}

fn write_value(out: &mut String, value: &Value, separators: PythonSeparators) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(true) => out.push_str("true"),
        Value::Bool(false) => out.push_str("false"),
        Value::Number(number) => {
            if let Some(int) = number.as_i64() {
                let _ = write!(out, "{int}");
            } else if let Some(int) = number.as_u64() {
                let _ = write!(out, "{int}");
            } else if let Some(float) = number.as_f64() {
                out.push_str(&python_float_repr(float));
            }
        }
        Value::String(text) => write_string(out, text),
        Value::Array(items) => {
            out.push('[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push_str(separators.item());
                }
                write_value(out, item, separators);
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (index, (key, item)) in entries.into_iter().enumerate() {
                if index > 0 {
                    out.push_str(separators.item());
                }
                write_string(out, key);
                out.push_str(separators.key());
                write_value(out, item, separators);
            }
            out.push('}');
        }
    }
}

/// A JSON string with Python's `ensure_ascii` escapes.
fn write_string(out: &mut String, text: &str) {
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            ' '..='~' => out.push(c),
            _ => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    let _ = write!(out, "\\u{unit:04x}");
                }
            }
        }
    }
    out.push('"');
}

/// Python's `repr(float)`: the shortest round-tripping digits, positional between 1e-4 and
/// 1e16, otherwise scientific with a signed exponent of at least two digits.
fn python_float_repr(value: f64) -> String {
    if value.is_nan() {
        return "NaN".to_owned();
    }
    if value.is_infinite() {
        return if value > 0.0 { "Infinity".to_owned() } else { "-Infinity".to_owned() };
    }
    if value == 0.0 {
        return if value.is_sign_negative() { "-0.0".to_owned() } else { "0.0".to_owned() };
    }
    // `{:e}` gives the shortest round-tripping digits: `1.5e-5`, `1e16`.
    let scientific = format!("{value:e}");
    let (mantissa, exponent) = scientific.split_once('e').unwrap_or((scientific.as_str(), "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    if (-4..16).contains(&exponent) {
        let positional = format!("{value}");
        if positional.contains('.') { positional } else { format!("{positional}.0") }
    } else {
        let sign = if exponent < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exponent.unsigned_abs())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn keys_sorted_compact() {
        let value = json!({"b": 1, "a": [true, false, null], "A": {"z": "x", "y": -3}});
        assert_eq!(python_json(&value), r#"{"A":{"y":-3,"z":"x"},"a":[true,false,null],"b":1}"#);
    }

    #[test]
    fn strings_escape_as_ensure_ascii() {
        // Expected bytes from Python 3.11: json.dumps(s, separators=(",", ":")).
        let text = "é€😀\t\n\r\u{8}\u{c}\u{1}\u{7f}\"\\/ ~";
        assert_eq!(python_json(&json!(text)), r#""\u00e9\u20ac\ud83d\ude00\t\n\r\b\f\u0001\u007f\"\\/ ~""#);
    }

    #[test]
    fn default_separators_as_python_writes_them() {
        let value = json!({"source_schema": "public", "columns": ["id", "n"]});
        assert_eq!(
            python_json_with(&value, PythonSeparators::Default),
            r#"{"columns": ["id", "n"], "source_schema": "public"}"#
        );
        assert_eq!(python_json_with(&json!([]), PythonSeparators::Default), "[]");
        assert_eq!(python_json_with(&json!(["a", "b"]), PythonSeparators::Compact), r#"["a","b"]"#);
    }

    #[test]
    fn keys_sort_by_code_point() {
        // Python sorts "Z" < "a" < "é" < "😀".
        let value = json!({"😀": 1, "é": 2, "a": 3, "Z": 4});
        assert_eq!(python_json(&value), r#"{"Z":4,"a":3,"\u00e9":2,"\ud83d\ude00":1}"#);
    }

    #[test]
    fn numbers_as_python_writes_them() {
        assert_eq!(python_json(&json!(108000)), "108000");
        assert_eq!(python_json(&json!(u64::MAX)), "18446744073709551615");
        assert_eq!(python_json(&json!(1.0)), "1.0");
        assert_eq!(python_json(&json!(0.1)), "0.1");
        assert_eq!(python_json(&json!(1e16)), "1e+16");
        assert_eq!(python_json(&json!(1.5e-5)), "1.5e-05");
        assert_eq!(python_json(&json!(123456789.125)), "123456789.125");
        assert_eq!(python_json(&json!(-0.0001)), "-0.0001");
    }
}
