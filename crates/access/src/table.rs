//! Schema-qualified table names as given on the command line.

use std::fmt;
use std::str::FromStr;

/// A `schema.table` name.
///
/// Parsed from `schema.table` where either part may be double-quoted (`"my.schema"."T"`,
/// with `""` for a quote inside). Names are matched exactly as stored in the catalog: no
/// case folding, so `Public.Orders` means the schema `Public`, not `public`. (Folding
/// unquoted names as SQL does would make the same spelling mean different columns in
/// `--table` and `--columns`; exact matching is predictable.)
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TableName {
    /// The schema.
    pub schema: String,
    /// The table (or view) name.
    pub name: String,
}

impl TableName {
    /// A table name from its parts.
    pub fn new(schema: impl Into<String>, name: impl Into<String>) -> TableName {
        TableName { schema: schema.into(), name: name.into() }
    }

    /// The name quoted for SQL: `"schema"."table"`.
    pub fn quoted(&self) -> String {
        format!(
            "{}.{}",
            datadiff_diff_core::plan::quoted_ident(&self.schema),
            datadiff_diff_core::plan::quoted_ident(&self.name)
        )
    }
}

impl fmt::Display for TableName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.schema, self.name)
    }
}

/// Why a table name did not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("expected schema.table (quote a part containing a dot: \"my.schema\".table)")]
pub struct TableNameError;

impl FromStr for TableName {
    type Err = TableNameError;

    fn from_str(text: &str) -> Result<TableName, TableNameError> {
        let parts = split_identifiers(text, '.').ok_or(TableNameError)?;
        match <[String; 2]>::try_from(parts) {
            Ok([schema, name]) if !schema.is_empty() && !name.is_empty() => Ok(TableName { schema, name }),
            _ => Err(TableNameError),
        }
    }
}

/// Splits `text` on `separator` outside double quotes, unquoting each part; `None` for an
/// unterminated quote or text after a closing quote.
pub fn split_identifiers(text: &str, separator: char) -> Option<Vec<String>> {
    let mut parts = Vec::new();
    let mut current = String::new();
    let mut chars = text.trim().chars().peekable();
    let mut quoted_part = false;
    loop {
        match chars.next() {
            None => {
                parts.push(if quoted_part { current } else { current.trim().to_owned() });
                return Some(parts);
            }
            Some('"') if current.trim().is_empty() && !quoted_part => {
                current.clear();
                loop {
                    match chars.next()? {
                        '"' if chars.peek() == Some(&'"') => {
                            chars.next();
                            current.push('"');
                        }
                        '"' => break,
                        c => current.push(c),
                    }
                }
                quoted_part = true;
                while chars.peek().is_some_and(|c| c.is_whitespace()) {
                    chars.next();
                }
                if chars.peek().is_some_and(|&c| c != separator) {
                    return None;
                }
            }
            Some(c) if c == separator => {
                parts.push(if quoted_part { std::mem::take(&mut current) } else { current.trim().to_owned() });
                current.clear();
                quoted_part = false;
            }
            Some(c) => {
                if quoted_part {
                    return None;
                }
                current.push(c);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_plain_and_quoted_parts_without_folding_case() {
        assert_eq!("public.Orders".parse(), Ok(TableName::new("public", "Orders")));
        assert_eq!(r#""my.schema"."we""ird""#.parse(), Ok(TableName::new("my.schema", "we\"ird")));
        assert_eq!(r#"cdc."t""#.parse(), Ok(TableName::new("cdc", "t")));
    }

    #[test]
    fn rejects_names_that_are_not_two_parts() {
        for text in ["orders", "a.b.c", ".t", "s.", r#""open.t"#, r#""a"x.t"#] {
            assert_eq!(text.parse::<TableName>(), Err(TableNameError), "{text}");
        }
    }

    #[test]
    fn quotes_for_sql() {
        assert_eq!(TableName::new("s", "t\"x").quoted(), r#""s"."t""x""#);
    }

    #[test]
    fn splits_column_lists() {
        assert_eq!(split_identifiers(r#"a, "b,c" ,d"#, ','), Some(vec!["a".into(), "b,c".into(), "d".into()]));
    }
}
