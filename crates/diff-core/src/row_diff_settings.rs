//! A definition's `row_diff` settings and their one codec.
//!
//! The settings are read from `datadiff.yml` (the config crate's YAML), written into the
//! canonical JSON (and so into `config_hash` and the backend's `canonical_config`), read back
//! from it, and shown by `list`. Each of those goes through one table, `SETTINGS`, one entry
//! per setting: its key, how a value is read, and when and how it is written (its default is
//! [`RowDiffSettings::default`]'s). A new setting is one field of [`RowDiffSettings`], its
//! default, and one entry there.
//!
//! A setting is written into the canonical JSON only when it differs from its default
//! (`max_examples` always), so that definitions without it keep their hash.

use serde_json::{Map, Value};

use crate::segment::Strategy;

/// The `row_diff` extension: stream both sides through the merge core and keep up to
/// `max_examples` differences (keys and column names only).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RowDiffSettings {
    max_examples: u32,
    empty_string_as_null: bool,
    strategy: Strategy,
}

impl RowDiffSettings {
    /// The default number of examples kept.
    pub const DEFAULT_MAX_EXAMPLES: u32 = 20;
    /// The largest number of examples allowed.
    pub const MAX_MAX_EXAMPLES: u32 = 100;

    /// Settings keeping `max_examples` differences; `None` outside 1..=100.
    pub fn new(max_examples: u32) -> Option<RowDiffSettings> {
        (1..=Self::MAX_MAX_EXAMPLES).contains(&max_examples).then_some(RowDiffSettings {
            max_examples,
            empty_string_as_null: false,
            strategy: Strategy::Auto,
        })
    }

    /// How many differences are kept as evidence.
    pub fn max_examples(self) -> u32 {
        self.max_examples
    }

    /// These settings, with an empty string and NULL compared as one value in text-like
    /// columns (the opt-in coercion `empty_string_as_null`; off by default).
    pub fn with_empty_string_as_null(self, on: bool) -> RowDiffSettings {
        RowDiffSettings { empty_string_as_null: on, ..self }
    }

    /// Whether an empty string and NULL compare as one value in text-like columns.
    pub fn empty_string_as_null(self) -> bool {
        self.empty_string_as_null
    }

    /// These settings, reading the rows with `strategy` (`auto` by default; see
    /// [`crate::segment`]: the answer is the same, the bytes moved are not).
    pub fn with_strategy(self, strategy: Strategy) -> RowDiffSettings {
        RowDiffSettings { strategy, ..self }
    }

    /// How the rows are read.
    pub fn strategy(self) -> Strategy {
        self.strategy
    }

    /// The keys a `row_diff` mapping may hold: `max_examples`, `empty_string_as_null`,
    /// `strategy`.
    pub fn keys() -> impl Iterator<Item = &'static str> {
        SETTINGS.iter().map(|setting| setting.key)
    }

    /// Reads settings from a document's `row_diff` mapping: `lookup(key)` is the value under
    /// `key`, `None` when absent (the setting keeps its default). Keys that are not
    /// settings are the caller's to refuse (see [`RowDiffSettings::keys`]). Every invalid
    /// value is reported, in [`RowDiffSettings::keys`] order.
    pub fn decode<'a>(lookup: impl Fn(&str) -> Option<SettingValue<'a>>) -> Result<RowDiffSettings, Vec<SettingError>> {
        let mut settings = RowDiffSettings::default();
        let mut errors = Vec::new();
        for setting in SETTINGS {
            if let Some(value) = lookup(setting.key)
                && !(setting.read)(&mut settings, value)
            {
                errors.push(SettingError {
                    key: setting.key,
                    expected: setting.expected,
                    expected_stored: setting.expected_stored,
                });
            }
        }
        if errors.is_empty() { Ok(settings) } else { Err(errors) }
    }

    /// The settings as the canonical JSON's `row_diff` object: each setting that differs
    /// from its default (`max_examples` always).
    pub fn encode(self) -> Value {
        let mut map = Map::new();
        for setting in SETTINGS {
            if let Some(value) = (setting.write)(&self) {
                map.insert(setting.key.to_owned(), value);
            }
        }
        Value::Object(map)
    }
}

impl Default for RowDiffSettings {
    fn default() -> RowDiffSettings {
        RowDiffSettings {
            max_examples: Self::DEFAULT_MAX_EXAMPLES,
            empty_string_as_null: false,
            strategy: Strategy::Auto,
        }
    }
}

/// One setting's value as a document holds it (YAML or JSON), for
/// [`RowDiffSettings::decode`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SettingValue<'a> {
    /// An integer: `Some` when it is a non-negative 64-bit one.
    Integer(Option<u64>),
    /// A boolean.
    Bool(bool),
    /// A string.
    Text(&'a str),
    /// Anything else: null, a float, a list, a mapping, a timestamp.
    Other,
}

/// An invalid `row_diff` setting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SettingError {
    /// The setting's key, such as `max_examples`.
    pub key: &'static str,
    /// What a valid value is, as a `datadiff.yml` problem says it: `<key> must be <this>`.
    pub expected: &'static str,
    /// What a valid value is, as an error over a stored canonical configuration says it.
    pub expected_stored: &'static str,
}

/// One setting of [`RowDiffSettings`]: its key, how a value is read (`false`: invalid), and
/// what the canonical JSON holds for it (`None`: nothing, the default).
struct Setting {
    key: &'static str,
    expected: &'static str,
    expected_stored: &'static str,
    read: fn(&mut RowDiffSettings, SettingValue<'_>) -> bool,
    write: fn(&RowDiffSettings) -> Option<Value>,
}

/// Every `row_diff` setting, in the order `datadiff.yml`'s messages list them (the canonical
/// JSON sorts its keys anyway).
const SETTINGS: &[Setting] = &[
    Setting {
        key: "max_examples",
        expected: "an integer from 1 to 100",
        expected_stored: "an integer in 1..=100",
        read: |settings, value| match value {
            SettingValue::Integer(Some(n)) => u32::try_from(n)
                .ok()
                .and_then(RowDiffSettings::new)
                .map(|valid| settings.max_examples = valid.max_examples)
                .is_some(),
            _ => false,
        },
        write: |settings| Some(Value::from(settings.max_examples)),
    },
    Setting {
        key: "empty_string_as_null",
        expected: "a boolean",
        expected_stored: "a boolean",
        read: |settings, value| match value {
            SettingValue::Bool(flag) => {
                settings.empty_string_as_null = flag;
                true
            }
            _ => false,
        },
        write: |settings| settings.empty_string_as_null.then_some(Value::Bool(true)),
    },
    Setting {
        key: "strategy",
        expected: "one of auto, stream, segments",
        expected_stored: "one of auto, stream, segments",
        read: |settings, value| match value {
            SettingValue::Text(name) => name.parse().map(|strategy| settings.strategy = strategy).is_ok(),
            _ => false,
        },
        write: |settings| {
            (settings.strategy != Strategy::Auto).then(|| Value::String(settings.strategy.as_str().to_owned()))
        },
    },
];

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn decode(document: &Value) -> Result<RowDiffSettings, Vec<&'static str>> {
        RowDiffSettings::decode(|key| {
            document.get(key).map(|value| match value {
                Value::Number(n) => SettingValue::Integer(n.as_u64()),
                Value::Bool(flag) => SettingValue::Bool(*flag),
                Value::String(text) => SettingValue::Text(text),
                _ => SettingValue::Other,
            })
        })
        .map_err(|errors| errors.iter().map(|error| error.key).collect())
    }

    #[test]
    fn defaults_encode_max_examples_alone() {
        assert_eq!(RowDiffSettings::default().encode(), json!({"max_examples": 20}));
        assert_eq!(decode(&json!({})), Ok(RowDiffSettings::default()));
    }

    #[test]
    fn every_setting_round_trips() {
        let settings =
            RowDiffSettings::new(7).unwrap().with_empty_string_as_null(true).with_strategy(Strategy::Segments);
        let encoded = settings.encode();
        assert_eq!(encoded, json!({"max_examples": 7, "empty_string_as_null": true, "strategy": "segments"}));
        assert_eq!(decode(&encoded), Ok(settings));
        assert_eq!(RowDiffSettings::keys().collect::<Vec<_>>(), ["max_examples", "empty_string_as_null", "strategy"]);
    }

    #[test]
    fn every_invalid_value_is_reported_in_order() {
        let bad = json!({"max_examples": 0, "empty_string_as_null": "yes", "strategy": "fast"});
        assert_eq!(decode(&bad), Err(vec!["max_examples", "empty_string_as_null", "strategy"]));
        for max_examples in [json!(101), json!(-1), json!(2.5), json!(null), json!(u64::MAX)] {
            assert_eq!(decode(&json!({ "max_examples": max_examples })), Err(vec!["max_examples"]));
        }
        assert_eq!(decode(&json!({"strategy": true})), Err(vec!["strategy"]));
        assert_eq!(decode(&json!({"max_examples": 100})).map(RowDiffSettings::max_examples), Ok(100));
    }
}
