//! The Prometheus text exposition format (version 0.0.4), as datadiff writes it: gauge
//! families, each with its `HELP` and `TYPE` lines (also without samples), label values
//! escaped as the format requires (`\\`, `\"`, `\n`).
//!
//! `report metrics` (the backend's state) and `audit --metrics` (one audit's verdict) both
//! write through [`Exposition`], so their files look alike to a scraper.
//!
//! ```
//! use datadiff_diff_core::exposition::Exposition;
//!
//! let mut text = Exposition::new();
//! text.gauge("datadiff_example", "An example.", [(vec![("table", "t\"1")], 2.5)]);
//! assert_eq!(
//!     text.finish(),
//!     "# HELP datadiff_example An example.\n# TYPE datadiff_example gauge\ndatadiff_example{table=\"t\\\"1\"} 2.5\n"
//! );
//! ```

use chrono::{DateTime, TimeDelta, Utc};

/// A sample's labels: `(name, value)` pairs in the order they are written.
pub type Labels<'a> = Vec<(&'a str, &'a str)>;

/// A text being written in the exposition format, family after family.
#[derive(Debug, Clone, Default)]
pub struct Exposition {
    text: String,
}

impl Exposition {
    /// An empty text.
    pub fn new() -> Exposition {
        Exposition::default()
    }

    /// Appends the gauge family `name` with its `help` and `samples` (labels, value), in the
    /// order given. A family without samples still gets its `HELP` and `TYPE` lines.
    pub fn gauge<'a>(&mut self, name: &str, help: &str, samples: impl IntoIterator<Item = (Labels<'a>, f64)>) {
        self.text.push_str(&format!("# HELP {name} {help}\n# TYPE {name} gauge\n"));
        for (labels, value) in samples {
            self.text.push_str(name);
            if !labels.is_empty() {
                let inner: Vec<String> =
                    labels.iter().map(|(label, value)| format!("{label}=\"{}\"", escape_label_value(value))).collect();
                self.text.push_str(&format!("{{{}}}", inner.join(",")));
            }
            self.text.push_str(&format!(" {value}\n"));
        }
    }

    /// The text written.
    pub fn finish(self) -> String {
        self.text
    }
}

/// A label value as the exposition format writes it: backslash, double quote and line feed
/// escaped.
pub fn escape_label_value(value: &str) -> String {
    let mut escaped = String::with_capacity(value.len());
    for character in value.chars() {
        match character {
            '\\' => escaped.push_str("\\\\"),
            '"' => escaped.push_str("\\\""),
            '\n' => escaped.push_str("\\n"),
            other => escaped.push(other),
        }
    }
    escaped
}

/// Unix seconds, with microseconds as a fraction.
pub fn unix_seconds(instant: DateTime<Utc>) -> f64 {
    instant.timestamp_micros() as f64 / 1e6
}

/// Whole and fractional seconds of a duration.
pub fn seconds(duration: TimeDelta) -> f64 {
    duration.num_microseconds().map_or(duration.num_seconds() as f64, |micros| micros as f64 / 1e6)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_values_escape_backslash_quote_and_line_feed() {
        assert_eq!(escape_label_value("plain_table"), "plain_table");
        assert_eq!(escape_label_value("a\\b\"c\nd"), "a\\\\b\\\"c\\nd");
    }

    #[test]
    fn a_family_without_samples_keeps_its_help_and_type_and_no_labels_means_no_braces() {
        let mut text = Exposition::new();
        text.gauge("a", "A.", []);
        text.gauge("b", "B.", [(Vec::new(), 1.0), (vec![("x", "1"), ("y", "2")], -0.5)]);
        assert_eq!(
            text.finish(),
            "# HELP a A.\n# TYPE a gauge\n# HELP b B.\n# TYPE b gauge\nb 1\nb{x=\"1\",y=\"2\"} -0.5\n"
        );
    }
}
