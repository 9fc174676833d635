//! YAML read as PipelineWise reads it: PyYAML's YAML 1.1 rules, with a line for every node.
//!
//! # Why not serde-saphyr's typed deserialisation
//!
//! serde-saphyr (the recommended crate) parses YAML 1.1 the way PyYAML users expect (merge
//! keys, `yes`/`no` booleans, duplicate keys rejected), but its typed deserialisation resolves a
//! scalar's type from the Rust type it is read into ("the target Rust types serve as an
//! explicit schema", its README says): `yes` read into a `String` stays a string, and whether
//! a boolean field held `false` or the quoted `"false"` is not visible through serde.
//! PipelineWise resolves types from the text alone, with PyYAML's YAML 1.1 rules, and then
//! validates them (`initial_full_scan: "false"` is rejected, `yes` is `True`, `dbname: 2024` is
//! an integer). Validation messages also need the line of
//! every node, including nodes reached through aliases and merge keys. So this module uses
//! serde-saphyr's event parser (`serde_saphyr::granit_parser`, re-exported by serde-saphyr, so no
//! extra dependency) and composes the document itself:
//!
//! * implicit types of plain scalars exactly as PyYAML's resolver: `yes/no/on/off/true/false`
//!   in their three spellings are booleans (`y`/`n` are strings), `0o`-less octal `0755`,
//!   `0x`, `0b`, sexagesimal `1:30` and `_` separators are integers, a float needs a dot
//!   (`1e3` is a string), `~`/`null`/empty are null, `2026-07-22` is a timestamp;
//!   quoted and block scalars are strings;
//! * anchors, aliases and merge keys (`<<: *base`, `<<: [*a, *b]`, explicit keys win, earlier
//!   merge sources win over later ones, as PyYAML's `flatten_mapping`);
//! * `!vault |` values decrypted with the `--secret` password; `!unsafe` is a string (Ansible);
//!   `!!str`, `!!int`, `!!bool`, `!!null`, `!!float` honoured; any other tag is an error, as
//!   PyYAML's safe loader has no constructor for it;
//! * one document per file (PyYAML's `safe_load` rejects a stream of several).
//!
//! The event parser reads YAML 1.2 syntax; PyYAML reads YAML 1.1 syntax. Documents that only
//! one of them accepts are rare in project files (an anchor name with `/`, tabs used for
//! indentation); an unquoted `frequency: */15 * * * *` is an error for both (an alias).
//!
//! Deviation (SPEC §2): a key repeated in one mapping is an **error**; PyYAML silently keeps the
//! last value. Merged keys overridden by explicit keys are not duplicates.
//!
//! Limits: alias expansion is capped at [`MAX_NODES`] nodes per file (a "billion laughs"
//! document is one error, not an out-of-memory; the file is not read past it, so no cut-off
//! key is reported again as empty or duplicate), nesting at the parser's 255 levels.

use std::collections::HashMap;
use std::rc::Rc;

use serde_saphyr::granit_parser::{Event, Parser, ScalarStyle};

use crate::Secret;
use crate::vault;

/// The most nodes a file may expand to through aliases.
pub(crate) const MAX_NODES: usize = 200_000;

/// A composed YAML node and the 1-based line it starts on.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Node {
    pub(crate) value: NodeValue,
    pub(crate) line: usize,
}

/// A node's content.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum NodeValue {
    Scalar(Scalar),
    Seq(Vec<Node>),
    /// Entries after merge keys are flattened; keys are unique scalars.
    Map(Vec<(Node, Node)>),
}

/// A scalar: its text and the type PyYAML gives it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Scalar {
    pub(crate) text: String,
    pub(crate) kind: ScalarKind,
}

/// PyYAML's type of a scalar.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ScalarKind {
    Null,
    Bool(bool),
    Int,
    Float,
    Timestamp,
    Str,
}

/// A problem found while reading a file: where and what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct YamlProblem {
    pub(crate) path: String,
    pub(crate) line: usize,
    pub(crate) message: String,
}

impl Node {
    /// Python's name of the node's type, for messages (`'str'`, `'int'`, `'dict'`…).
    pub(crate) fn type_name(&self) -> &'static str {
        match &self.value {
            NodeValue::Seq(_) => "list",
            NodeValue::Map(_) => "dict",
            NodeValue::Scalar(scalar) => match scalar.kind {
                ScalarKind::Null => "NoneType",
                ScalarKind::Bool(_) => "bool",
                ScalarKind::Int => "int",
                ScalarKind::Float => "float",
                ScalarKind::Timestamp => "datetime",
                ScalarKind::Str => "str",
            },
        }
    }

    /// The entries of a mapping.
    pub(crate) fn as_map(&self) -> Option<&[(Node, Node)]> {
        match &self.value {
            NodeValue::Map(entries) => Some(entries),
            _ => None,
        }
    }

    /// The items of a sequence.
    pub(crate) fn as_seq(&self) -> Option<&[Node]> {
        match &self.value {
            NodeValue::Seq(items) => Some(items),
            _ => None,
        }
    }

    /// The text of a scalar PyYAML reads as a string.
    pub(crate) fn as_str(&self) -> Option<&str> {
        match &self.value {
            NodeValue::Scalar(Scalar { text, kind: ScalarKind::Str }) => Some(text),
            _ => None,
        }
    }

    /// A boolean scalar's value.
    pub(crate) fn as_bool(&self) -> Option<bool> {
        match &self.value {
            NodeValue::Scalar(Scalar { kind: ScalarKind::Bool(flag), .. }) => Some(*flag),
            _ => None,
        }
    }

    /// The scalar's source text, whatever its type (not for nulls and collections).
    pub(crate) fn scalar_text(&self) -> Option<&str> {
        match &self.value {
            NodeValue::Scalar(Scalar { kind: ScalarKind::Null, .. }) => None,
            NodeValue::Scalar(Scalar { text, .. }) => Some(text),
            _ => None,
        }
    }

    /// Whether the node is a null scalar.
    pub(crate) fn is_null(&self) -> bool {
        matches!(&self.value, NodeValue::Scalar(Scalar { kind: ScalarKind::Null, .. }))
    }

    /// The value under a string key of a mapping.
    pub(crate) fn get(&self, key: &str) -> Option<&Node> {
        self.as_map()?.iter().find(|(k, _)| k.as_str() == Some(key)).map(|(_, v)| v)
    }
}

/// Reads one YAML document. `secret` decrypts `!vault` values. Every problem is returned,
/// with the node read as far as it could be.
pub(crate) fn compose(text: &str, secret: Option<&Secret>) -> (Option<Node>, Vec<YamlProblem>) {
    let mut problems = Vec::new();
    let raw = match build_raw(text) {
        Ok(raw) => raw,
        Err(problem) => return (None, vec![problem]),
    };
    let Some(raw) = raw else { return (None, problems) };
    let mut normalizer = Normalizer { secret, budget: MAX_NODES, problems: &mut problems };
    let node = normalizer.node(&raw, "");
    // A document cut short by the alias limit is not read any further: its remaining keys
    // would all look empty (and duplicate), and its rules would report what is cut off.
    if normalizer.budget == 0 {
        return (None, problems);
    }
    (Some(node), problems)
}

/// A node as the parser gives it: tags unresolved, merge keys not applied, aliases shared.
#[derive(Debug)]
enum Raw {
    Scalar { text: String, plain: bool, tag: Option<String>, line: usize },
    Seq { items: Vec<Rc<Raw>>, tag: Option<String>, line: usize },
    Map { entries: Vec<(Rc<Raw>, Rc<Raw>)>, tag: Option<String>, line: usize },
}

impl Raw {
    fn line(&self) -> usize {
        match self {
            Raw::Scalar { line, .. } | Raw::Seq { line, .. } | Raw::Map { line, .. } => *line,
        }
    }
}

enum Open {
    Seq {
        items: Vec<Rc<Raw>>,
        tag: Option<String>,
        line: usize,
        anchor: usize,
    },
    Map {
        entries: Vec<(Rc<Raw>, Rc<Raw>)>,
        pending_key: Option<Rc<Raw>>,
        tag: Option<String>,
        line: usize,
        anchor: usize,
    },
}

fn tag_text(tag: Option<&serde_saphyr::granit_parser::Tag>) -> Option<String> {
    tag.map(|tag| format!("{}{}", tag.handle(), tag.suffix()))
}

/// Parses the events into a raw tree. The first parse error ends the file.
fn build_raw(text: &str) -> Result<Option<Rc<Raw>>, YamlProblem> {
    let mut stack: Vec<Open> = Vec::new();
    let mut anchors: HashMap<usize, Rc<Raw>> = HashMap::new();
    let mut root: Option<Rc<Raw>> = None;
    let mut documents = 0usize;
    let problem = |line: usize, message: String| YamlProblem { path: String::new(), line, message };

    for next in Parser::new_from_str(text) {
        let (event, span) = next.map_err(|e| problem(e.marker().line(), e.info()))?;
        let line = span.start.line();
        let complete: Option<Rc<Raw>> = match event {
            Event::DocumentStart(..) => {
                documents += 1;
                if documents > 1 {
                    return Err(problem(line, "expected a single document in the stream".to_owned()));
                }
                None
            }
            Event::Scalar(value, style, anchor, tag) => {
                // A block scalar (`key: |`) starts on the line after its key; problems point at
                // the key's line.
                let block = matches!(style, ScalarStyle::Literal | ScalarStyle::Folded);
                let line = match stack.last() {
                    Some(Open::Map { pending_key: Some(key), .. }) if block => key.line(),
                    _ => line,
                };
                let node = Rc::new(Raw::Scalar {
                    text: value.into_owned(),
                    plain: style == ScalarStyle::Plain,
                    tag: tag_text(tag.as_deref()),
                    line,
                });
                if anchor != 0 {
                    anchors.insert(anchor, Rc::clone(&node));
                }
                Some(node)
            }
            Event::Alias(id) => match anchors.get(&id) {
                Some(node) => Some(Rc::clone(node)),
                None => {
                    return Err(problem(
                        line,
                        "found an alias to an anchor that is not complete (recursive alias)".into(),
                    ));
                }
            },
            Event::SequenceStart(_, anchor, tag) => {
                stack.push(Open::Seq { items: Vec::new(), tag: tag_text(tag.as_deref()), line, anchor });
                None
            }
            Event::MappingStart(_, anchor, tag) => {
                stack.push(Open::Map {
                    entries: Vec::new(),
                    pending_key: None,
                    tag: tag_text(tag.as_deref()),
                    line,
                    anchor,
                });
                None
            }
            Event::SequenceEnd | Event::MappingEnd => {
                let (node, anchor) = match stack.pop() {
                    Some(Open::Seq { items, tag, line, anchor }) => (Raw::Seq { items, tag, line }, anchor),
                    Some(Open::Map { entries, tag, line, anchor, .. }) => (Raw::Map { entries, tag, line }, anchor),
                    None => return Err(problem(line, "unbalanced collection end".into())),
                };
                let node = Rc::new(node);
                if anchor != 0 {
                    anchors.insert(anchor, Rc::clone(&node));
                }
                Some(node)
            }
            _ => None,
        };
        if let Some(node) = complete {
            match stack.last_mut() {
                Some(Open::Seq { items, .. }) => items.push(node),
                Some(Open::Map { entries, pending_key, .. }) => match pending_key.take() {
                    Some(key) => entries.push((key, node)),
                    None => *pending_key = Some(node),
                },
                None => root = Some(node),
            }
        }
    }
    Ok(root)
}

struct Normalizer<'a> {
    secret: Option<&'a Secret>,
    budget: usize,
    problems: &'a mut Vec<YamlProblem>,
}

const CORE: &str = "tag:yaml.org,2002:";

impl Normalizer<'_> {
    fn problem(&mut self, path: &str, line: usize, message: impl Into<String>) {
        self.problems.push(YamlProblem { path: path.to_owned(), line, message: message.into() });
    }

    fn null(line: usize) -> Node {
        Node { value: NodeValue::Scalar(Scalar { text: String::new(), kind: ScalarKind::Null }), line }
    }

    fn node(&mut self, raw: &Raw, path: &str) -> Node {
        if self.budget == 0 {
            return Self::null(raw.line());
        }
        self.budget -= 1;
        if self.budget == 0 {
            self.problem(path, raw.line(), format!("document expands to more than {MAX_NODES} nodes through aliases"));
            return Self::null(raw.line());
        }
        match raw {
            Raw::Scalar { text, plain, tag, line } => self.scalar(text, *plain, tag.as_deref(), *line, path),
            Raw::Seq { items, tag, line } => {
                if let Some(tag) = tag.as_deref().filter(|t| *t != format!("{CORE}seq") && *t != "!") {
                    self.problem(path, *line, format!("could not determine a constructor for the tag '{tag}'"));
                }
                let mut nodes = Vec::with_capacity(items.len());
                for (index, item) in items.iter().enumerate() {
                    // Past the alias limit nothing more is composed.
                    if self.budget == 0 {
                        break;
                    }
                    nodes.push(self.node(item, &format!("{path}[{index}]")));
                }
                let items = nodes;
                Node { value: NodeValue::Seq(items), line: *line }
            }
            Raw::Map { entries, tag, line } => {
                if let Some(tag) = tag.as_deref().filter(|t| *t != format!("{CORE}map") && *t != "!") {
                    self.problem(path, *line, format!("could not determine a constructor for the tag '{tag}'"));
                }
                self.mapping(entries, *line, path)
            }
        }
    }

    fn scalar(&mut self, text: &str, plain: bool, tag: Option<&str>, line: usize, path: &str) -> Node {
        let make = |text: String, kind: ScalarKind| Node { value: NodeValue::Scalar(Scalar { text, kind }), line };
        let Some(tag) = tag else {
            let kind = if plain { resolve_plain(text) } else { ScalarKind::Str };
            if plain && text == "=" {
                self.problem(path, line, "could not determine a constructor for the tag 'tag:yaml.org,2002:value'");
            }
            return make(text.to_owned(), kind);
        };
        match tag {
            "!" | "!unsafe" => make(text.to_owned(), ScalarKind::Str),
            "!vault" => match self.secret {
                Some(secret) => match vault::decrypt(text, secret) {
                    Ok(plain_text) => make(plain_text, ScalarKind::Str),
                    Err(error) => {
                        self.problem(path, line, error.to_string());
                        make(String::new(), ScalarKind::Str)
                    }
                },
                None => {
                    self.problem(path, line, "encrypted value (!vault) needs the vault password: pass --secret FILE");
                    make(String::new(), ScalarKind::Str)
                }
            },
            _ => {
                let core = tag.strip_prefix(CORE).unwrap_or("");
                let resolved = resolve_plain(text);
                let kind = match core {
                    "str" => Some(ScalarKind::Str),
                    "null" if resolved == ScalarKind::Null => Some(ScalarKind::Null),
                    "bool" if matches!(resolved, ScalarKind::Bool(_)) => Some(resolved),
                    "int" if resolved == ScalarKind::Int => Some(ScalarKind::Int),
                    "float" if matches!(resolved, ScalarKind::Float | ScalarKind::Int) => Some(ScalarKind::Float),
                    "timestamp" if resolved == ScalarKind::Timestamp => Some(ScalarKind::Timestamp),
                    "null" | "bool" | "int" | "float" | "timestamp" => {
                        self.problem(path, line, format!("'{text}' is not a valid !!{core}"));
                        None
                    }
                    _ => {
                        self.problem(path, line, format!("could not determine a constructor for the tag '{tag}'"));
                        None
                    }
                };
                make(text.to_owned(), kind.unwrap_or(ScalarKind::Str))
            }
        }
    }

    /// PyYAML's `flatten_mapping` followed by dict construction, with duplicate explicit keys
    /// reported.
    fn mapping(&mut self, entries: &[(Rc<Raw>, Rc<Raw>)], line: usize, path: &str) -> Node {
        let mut merged: Vec<(Node, Node)> = Vec::new();
        let mut explicit: Vec<(Node, Node)> = Vec::new();
        for (key, value) in entries {
            // Past the alias limit nothing more is composed (and no empty key is a duplicate).
            if self.budget == 0 {
                break;
            }
            let is_merge = matches!(&**key, Raw::Scalar { text, plain: true, tag: None, .. } if text == "<<")
                || matches!(&**key, Raw::Scalar { tag: Some(tag), .. } if tag == &format!("{CORE}merge"));
            if is_merge {
                match &**value {
                    Raw::Map { .. } => {
                        let node = self.node(value, path);
                        if let NodeValue::Map(entries) = node.value {
                            merged.extend(entries);
                        }
                    }
                    Raw::Seq { items, .. } => {
                        let mut sources = Vec::new();
                        for item in items {
                            if matches!(&**item, Raw::Map { .. }) {
                                if let NodeValue::Map(entries) = self.node(item, path).value {
                                    sources.push(entries);
                                }
                            } else {
                                self.problem(path, item.line(), "expected a mapping for merging");
                            }
                        }
                        // Earlier sources win: they go last, where dict construction keeps them.
                        for entries in sources.into_iter().rev() {
                            merged.extend(entries);
                        }
                    }
                    Raw::Scalar { line, .. } => {
                        self.problem(path, *line, "expected a mapping or list of mappings for merging");
                    }
                }
                continue;
            }
            let key_node = self.node(key, path);
            let key_text = match &key_node.value {
                NodeValue::Scalar(scalar) => scalar.text.clone(),
                _ => {
                    self.problem(path, key_node.line, "found unhashable key (a mapping or list used as a key)");
                    continue;
                }
            };
            let child = if path.is_empty() { key_text.clone() } else { format!("{path}.{key_text}") };
            let value_node = self.node(value, &child);
            let identity = key_identity(&key_node);
            if let Some((first, _)) = explicit.iter().find(|(k, _)| key_identity(k) == identity) {
                let first_line = first.line;
                self.problem(
                    &child,
                    key_node.line,
                    format!("duplicate key '{key_text}' (first defined on line {first_line}); PyYAML would silently keep the last value"),
                );
                continue;
            }
            explicit.push((key_node, value_node));
        }
        // Dict construction: a later entry replaces an earlier one with the same key.
        let mut result: Vec<(Node, Node)> = Vec::with_capacity(merged.len() + explicit.len());
        for (key, value) in merged.into_iter().chain(explicit) {
            let identity = key_identity(&key);
            match result.iter_mut().find(|(k, _)| key_identity(k) == identity) {
                Some(slot) => *slot = (key, value),
                None => result.push((key, value)),
            }
        }
        Node { value: NodeValue::Map(result), line }
    }
}

/// The key's identity as a Python dict sees it (type and text; `1` and `"1"` differ).
fn key_identity(key: &Node) -> (String, &str) {
    match &key.value {
        NodeValue::Scalar(scalar) => (format!("{:?}", scalar.kind), scalar.text.as_str()),
        _ => (String::new(), ""),
    }
}

/// PyYAML's implicit resolver for a plain scalar (YAML 1.1).
pub(crate) fn resolve_plain(text: &str) -> ScalarKind {
    match text {
        "" | "~" | "null" | "Null" | "NULL" => return ScalarKind::Null,
        "yes" | "Yes" | "YES" | "true" | "True" | "TRUE" | "on" | "On" | "ON" => return ScalarKind::Bool(true),
        "no" | "No" | "NO" | "false" | "False" | "FALSE" | "off" | "Off" | "OFF" => return ScalarKind::Bool(false),
        _ => {}
    }
    if is_float(text) {
        ScalarKind::Float
    } else if is_int(text) {
        ScalarKind::Int
    } else if is_timestamp(text) {
        ScalarKind::Timestamp
    } else {
        ScalarKind::Str
    }
}

fn strip_sign(text: &str) -> &str {
    text.strip_prefix(['-', '+']).unwrap_or(text)
}

fn all(text: &str, allowed: impl Fn(char) -> bool) -> bool {
    text.chars().all(allowed)
}

/// `[0-5]?[0-9]` sexagesimal parts after the first `:`.
fn sexagesimal_tail(parts: &[&str]) -> bool {
    !parts.is_empty()
        && parts.iter().all(|part| match part.as_bytes() {
            [d] => d.is_ascii_digit(),
            [a, b] => (b'0'..=b'5').contains(a) && b.is_ascii_digit(),
            _ => false,
        })
}

/// `[1-9][0-9_]*` / `[0-9][0-9_]*`.
fn digits_underscores(text: &str, first_nonzero: bool) -> bool {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) if first.is_ascii_digit() && (!first_nonzero || first != '0') => {
            all(chars.as_str(), |c| c.is_ascii_digit() || c == '_')
        }
        _ => false,
    }
}

fn is_int(text: &str) -> bool {
    let body = strip_sign(text);
    if let Some(rest) = body.strip_prefix("0b") {
        return !rest.is_empty() && all(rest, |c| matches!(c, '0' | '1' | '_'));
    }
    if let Some(rest) = body.strip_prefix("0x") {
        return !rest.is_empty() && all(rest, |c| c.is_ascii_hexdigit() || c == '_');
    }
    if body == "0" {
        return true;
    }
    if let Some(rest) = body.strip_prefix('0') {
        return !rest.is_empty() && all(rest, |c| matches!(c, '0'..='7' | '_'));
    }
    let parts: Vec<&str> = body.split(':').collect();
    digits_underscores(parts[0], true) && (parts.len() == 1 || sexagesimal_tail(&parts[1..]))
}

fn is_exponent(text: &str) -> bool {
    let mut chars = text.chars();
    matches!(chars.next(), Some('e' | 'E'))
        && matches!(chars.next(), Some('-' | '+'))
        && !chars.as_str().is_empty()
        && all(chars.as_str(), |c| c.is_ascii_digit())
}

/// Fraction `[0-9_]*` optionally followed by an exponent (when `exponent` is allowed).
fn fraction(text: &str, exponent: bool, nonempty: bool) -> bool {
    let end = text.find(['e', 'E']).unwrap_or(text.len());
    let (digits, rest) = text.split_at(end);
    (!nonempty || !digits.is_empty())
        && all(digits, |c| c.is_ascii_digit() || c == '_')
        && (rest.is_empty() || (exponent && is_exponent(rest)))
}

fn is_float(text: &str) -> bool {
    if matches!(text, ".nan" | ".NaN" | ".NAN") {
        return true;
    }
    let body = strip_sign(text);
    if matches!(body, ".inf" | ".Inf" | ".INF") {
        return true;
    }
    // \.[0-9_]+(exp)? — without a sign.
    if let Some(rest) = text.strip_prefix('.') {
        return fraction(rest, true, true);
    }
    let Some(dot) = body.find('.') else { return false };
    let (whole, rest) = body.split_at(dot);
    let rest = &rest[1..];
    let parts: Vec<&str> = whole.split(':').collect();
    if parts.len() == 1 {
        digits_underscores(whole, false) && fraction(rest, true, false)
    } else {
        digits_underscores(parts[0], false) && sexagesimal_tail(&parts[1..]) && fraction(rest, false, false)
    }
}

fn is_timestamp(text: &str) -> bool {
    let bytes = text.as_bytes();
    let digits = |range: &[u8]| !range.is_empty() && range.iter().all(u8::is_ascii_digit);
    if bytes.len() < 8 || !digits(&bytes[..4]) || bytes[4] != b'-' {
        return false;
    }
    if bytes.len() == 10 && digits(&bytes[5..7]) && bytes[7] == b'-' && digits(&bytes[8..10]) {
        return true;
    }
    // YYYY-M?M-D?D(T|[ \t]+)H?H:MM:SS(.f*)?([ \t]*(Z|[-+]H?H(:MM)?))?
    let rest = &text[5..];
    let Some((month, rest)) = rest.split_once('-') else { return false };
    if !(1..=2).contains(&month.len()) || !digits(month.as_bytes()) {
        return false;
    }
    let day_len = rest.bytes().take_while(u8::is_ascii_digit).count();
    if !(1..=2).contains(&day_len) {
        return false;
    }
    let rest = &rest[day_len..];
    let rest = if let Some(r) = rest.strip_prefix(['T', 't']) {
        r
    } else {
        let trimmed = rest.trim_start_matches([' ', '\t']);
        if trimmed.len() == rest.len() {
            return false;
        }
        trimmed
    };
    let hour_len = rest.bytes().take_while(u8::is_ascii_digit).count();
    if !(1..=2).contains(&hour_len) {
        return false;
    }
    let rest = &rest[hour_len..];
    let b = rest.as_bytes();
    if b.len() < 6 || b[0] != b':' || !digits(&b[1..3]) || b[3] != b':' || !digits(&b[4..6]) {
        return false;
    }
    let mut rest = &rest[6..];
    if let Some(r) = rest.strip_prefix('.') {
        rest = r.trim_start_matches(|c: char| c.is_ascii_digit());
    }
    let zone = rest.trim_start_matches([' ', '\t']);
    if zone.is_empty() {
        return rest.is_empty();
    }
    if zone == "Z" {
        return true;
    }
    let Some(offset) = zone.strip_prefix(['-', '+']) else { return false };
    let (hours, minutes) = match offset.split_once(':') {
        Some((h, m)) => (h, Some(m)),
        None => (offset, None),
    };
    (1..=2).contains(&hours.len())
        && digits(hours.as_bytes())
        && minutes.is_none_or(|m| m.len() == 2 && digits(m.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> (Option<Node>, Vec<YamlProblem>) {
        compose(text, None)
    }

    fn kind_of(text: &str) -> ScalarKind {
        resolve_plain(text)
    }

    /// Types PyYAML 6.0.3 gives these plain scalars (`type(yaml.safe_load("v: " + s)["v"])`).
    #[test]
    fn plain_scalars_resolve_as_pyyaml() {
        use ScalarKind::*;
        let table: &[(&str, ScalarKind)] = &[
            ("yes", Bool(true)),
            ("Yes", Bool(true)),
            ("YES", Bool(true)),
            ("on", Bool(true)),
            ("ON", Bool(true)),
            ("no", Bool(false)),
            ("Off", Bool(false)),
            ("FALSE", Bool(false)),
            ("y", Str),
            ("n", Str),
            ("yEs", Str),
            ("0755", Int),
            ("0x1F", Int),
            ("0b101", Int),
            ("1_000", Int),
            ("1:30", Int),
            ("-12", Int),
            ("+0", Int),
            ("08", Str),
            ("1e3", Str),
            ("1.5e3", Str),
            ("1.5e+3", Float),
            ("1.", Float),
            (".5", Float),
            ("-.5", Str),
            ("1:30.5", Float),
            (".inf", Float),
            ("-.Inf", Float),
            (".NaN", Float),
            ("-.nan", Str),
            ("~", Null),
            ("null", Null),
            ("NULL", Null),
            ("nul", Str),
            ("2026-07-22", Timestamp),
            ("2026-7-2 3:04:05", Timestamp),
            ("2026-07-22T13:00:00Z", Timestamp),
            ("2026-07-22 13:00:00.5 +02:00", Timestamp),
            ("2026-07-2", Str),
            ("0 * * * *", Str),
            ("1h", Str),
            ("-15h", Str),
            ("5min", Str),
            ("tap-postgres", Str),
            ("0.0.0.0", Str),
        ];
        let wrong: Vec<_> = table.iter().filter(|(text, kind)| kind_of(text) != *kind).collect();
        assert!(wrong.is_empty(), "{wrong:?}");
    }

    #[test]
    fn quoted_and_block_scalars_are_strings() {
        let (node, problems) = read("a: 'yes'\nb: \"1\"\nc: |\n  yes\nd: !!str 12\ne: !!int '12'\n");
        assert!(problems.is_empty(), "{problems:?}");
        let node = node.unwrap_or_else(|| panic!("document"));
        assert_eq!(node.get("a").and_then(Node::as_str), Some("yes"));
        assert_eq!(node.get("b").and_then(Node::as_str), Some("1"));
        assert_eq!(node.get("c").and_then(Node::as_str), Some("yes\n"));
        assert_eq!(node.get("d").and_then(Node::as_str), Some("12"));
        assert_eq!(node.get("e").map(Node::type_name), Some("int"));
    }

    #[test]
    fn merge_keys_follow_pyyaml() {
        let text = "\
base: &base {a: 1, b: 1}
other: &other {b: 2, c: 2}
one:
  <<: *base
  a: 9
many:
  <<: [*base, *other]
";
        let (node, problems) = read(text);
        assert!(problems.is_empty(), "{problems:?}");
        let node = node.unwrap_or_else(|| panic!("document"));
        let text_of = |map: &str, key: &str| {
            node.get(map).and_then(|m| m.get(key)).and_then(Node::scalar_text).map(str::to_owned)
        };
        assert_eq!(text_of("one", "a").as_deref(), Some("9"));
        assert_eq!(text_of("one", "b").as_deref(), Some("1"));
        // Earlier merge sources win.
        assert_eq!(text_of("many", "b").as_deref(), Some("1"));
        assert_eq!(text_of("many", "c").as_deref(), Some("2"));
        // Lines of merged nodes are where they were written.
        assert_eq!(node.get("many").and_then(|m| m.get("c")).map(|n| n.line), Some(2));
    }

    #[test]
    fn duplicate_keys_are_errors_with_both_lines() {
        let (_, problems) = read("a: 1\nb:\n  c: 1\n  c: 2\n");
        assert_eq!(problems.len(), 1);
        assert_eq!(problems[0].path, "b.c");
        assert_eq!(problems[0].line, 4);
        assert!(problems[0].message.contains("duplicate key 'c' (first defined on line 3)"));
    }

    #[test]
    fn unknown_tags_and_several_documents_are_errors() {
        let (_, problems) = read("a: !python/object foo\n");
        assert!(problems[0].message.contains("could not determine a constructor for the tag '!python/object'"));
        let (_, problems) = read("a: 1\n---\nb: 2\n");
        assert!(problems[0].message.contains("single document"));
        assert_eq!(problems[0].line, 2);
    }

    #[test]
    fn vault_values_need_the_secret() {
        let text = format!(
            "password: !vault |\n{}",
            crate::vault::tests::DOCS_EXAMPLE.lines().map(|l| format!("  {l}\n")).collect::<String>()
        );
        let (_, problems) = compose(&text, None);
        assert_eq!(problems.len(), 1);
        assert_eq!(problems[0].path, "password");
        assert!(problems[0].message.contains("--secret"));
        let (node, problems) = compose(&text, Some(&Secret::new("M@st3rP@ssw0rd")));
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(
            node.and_then(|n| n.get("password").and_then(Node::as_str).map(str::to_owned)).as_deref(),
            Some("This is a string to encrypt")
        );
        let (_, problems) = compose(&text, Some(&Secret::new("nope")));
        assert!(problems[0].message.contains("wrong secret"));
    }

    #[test]
    fn alias_bombs_are_refused() {
        let mut text = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
        for level in 1..9 {
            let previous = format!("*a{}", level - 1);
            text.push_str(&format!("a{level}: &a{level} [{}]\n", vec![previous; 10].join(", ")));
        }
        let (_, problems) = read(&text);
        assert!(problems.iter().any(|p| p.message.contains("through aliases")), "{problems:?}");
    }

    #[test]
    fn the_alias_limit_is_reported_once_and_ends_the_document() {
        let mut text = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
        for level in 1..10 {
            let previous = format!("*a{}", level - 1);
            text.push_str(&format!("a{level}: &a{level} [{}]\n", vec![previous; 10].join(", ")));
        }
        text.push_str("b: 1\nc: 2\nd: {e: 3, f: 4}\n");
        let (node, problems) = read(&text);
        assert_eq!(node, None);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert_eq!(problems[0].message, format!("document expands to more than {MAX_NODES} nodes through aliases"));
        // Just under the limit, the document reads.
        let (node, problems) = read("a: &a [x, x]\nb: [*a, *a]\n");
        assert!(node.is_some() && problems.is_empty(), "{problems:?}");
    }

    #[test]
    fn parse_errors_carry_their_line() {
        let (node, problems) = read("a: 1\nb: [1, 2\n");
        assert!(node.is_none());
        assert_eq!(problems.len(), 1);
        assert!(problems[0].line >= 2);
    }
}
