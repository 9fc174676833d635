//! Lists the commands print — one definition rendered as a table, JSON or CSV, so the three
//! forms can never disagree.
//!
//! A [`Listing`] has [`Column`]s (a table header and a JSON field name) and rows of [`Cell`]s
//! (the table text and the JSON value). Tables use upstream's headers and timestamp form and
//! print blanks, never `None`; JSON is an array of objects with the documented field names;
//! CSV is for tools: its header row holds the JSON field names and its fields the JSON values
//! (times in RFC 3339 with `Z`, lists as compact JSON, `null` as an empty field), quoted as
//! RFC 4180 says.

use std::fmt::Write as _;

use chrono::{DateTime, Utc};
use clap::ValueEnum;
use serde_json::{Map, Value as Json};

use crate::timestamp;

/// How a list is printed (`--output-format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub(crate) enum OutputFormat {
    /// An aligned text table with upstream's columns.
    #[default]
    Table,
    /// JSON with the documented field names (times RFC 3339 with Z).
    Json,
}

/// How a report is printed (`report --output-format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub(crate) enum ReportFormat {
    /// An aligned text table.
    #[default]
    Table,
    /// JSON with the documented field names (times RFC 3339 with Z).
    Json,
    /// Comma-separated values, a header row of JSON field names.
    Csv,
}

/// A column: its table header, its JSON field name, and whether the table shows it (JSON and
/// CSV always carry every field).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Column {
    pub(crate) header: &'static str,
    pub(crate) field: &'static str,
    pub(crate) in_table: bool,
}

/// A column shown in tables too.
pub(crate) const fn column(header: &'static str, field: &'static str) -> Column {
    Column { header, field, in_table: true }
}

/// A column only JSON and CSV carry.
pub(crate) const fn field(field: &'static str) -> Column {
    Column { header: "", field, in_table: false }
}

/// One value: how the table shows it and what JSON holds.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Cell {
    text: String,
    value: Json,
}

impl Cell {
    /// Text, or a blank / `null`.
    pub(crate) fn text(text: Option<impl Into<String>>) -> Cell {
        match text {
            Some(text) => {
                let text = text.into();
                Cell { value: Json::String(text.clone()), text }
            }
            None => Cell { text: String::new(), value: Json::Null },
        }
    }

    /// Text that is always present.
    pub(crate) fn string(text: impl Into<String>) -> Cell {
        Cell::text(Some(text))
    }

    /// An integer, or a blank / `null`.
    pub(crate) fn int(number: Option<i64>) -> Cell {
        match number {
            Some(number) => Cell { text: number.to_string(), value: Json::from(number) },
            None => Cell::text(None::<String>),
        }
    }

    /// A yes/no flag: `true`/`false` in JSON, `yes`/`no` in tables.
    pub(crate) fn flag(flag: bool) -> Cell {
        Cell { text: if flag { "yes" } else { "no" }.to_owned(), value: Json::Bool(flag) }
    }

    /// A time: upstream's form in tables, RFC 3339 with `Z` in JSON.
    pub(crate) fn time(instant: Option<DateTime<Utc>>) -> Cell {
        Cell { text: timestamp::table(instant), value: timestamp::json(instant) }
    }

    /// A list of names: comma-separated in tables, an array in JSON.
    pub(crate) fn names<S: AsRef<str>>(names: &[S]) -> Cell {
        let list: Vec<&str> = names.iter().map(AsRef::as_ref).collect();
        Cell { text: list.join(", "), value: Json::from(list) }
    }

    /// Any JSON value, shown in tables as compact JSON (strings bare).
    pub(crate) fn json(value: Json) -> Cell {
        Cell { text: scalar_text(&value), value }
    }

    /// A value shown differently in tables than in JSON.
    pub(crate) fn with_text(text: impl Into<String>, value: Json) -> Cell {
        Cell { text: text.into(), value }
    }
}

/// A value as one field of text: strings bare, `null` empty, anything else compact JSON.
fn scalar_text(value: &Json) -> String {
    match value {
        Json::Null => String::new(),
        Json::String(text) => text.clone(),
        other => other.to_string(),
    }
}

/// Rows under columns.
#[derive(Debug, Clone)]
pub(crate) struct Listing {
    columns: &'static [Column],
    rows: Vec<Vec<Cell>>,
}

impl Listing {
    /// An empty listing.
    pub(crate) fn new(columns: &'static [Column]) -> Listing {
        Listing { columns, rows: Vec::new() }
    }

    /// Adds a row; it must have one cell per column.
    pub(crate) fn push(&mut self, row: Vec<Cell>) {
        debug_assert_eq!(row.len(), self.columns.len(), "a row has one cell per column");
        self.rows.push(row);
    }

    /// Whether there is no row.
    pub(crate) fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// How many rows.
    pub(crate) fn len(&self) -> usize {
        self.rows.len()
    }

    /// The table text as Python's `tabulate` prints it with its default `simple` format (what
    /// PipelineWise prints): the headers, a rule of dashes, the rows; each column as wide as
    /// its widest cell and at least two more than its header, columns two spaces apart, text
    /// left-aligned, a column of integers (and its header) right-aligned, no trailing blanks.
    /// A line break inside a cell is shown as a blank, so a row stays one line. (`tabulate`
    /// would also reformat numeric text such as `007` or `1e5`, and align a column of
    /// decimals on the point; no table prints such values.)
    pub(crate) fn table(&self) -> String {
        self.table_within(None)
    }

    /// [`Listing::table`] fitted to `width` characters when it is given (a terminal's width)
    /// and the table is wider. No id, name, timestamp or other word is ever cut:
    ///
    /// 1. text columns holding blanks (reasons, errors) are narrowed, widest first, and their
    ///    cells wrapped at blanks onto continuation lines — never narrower than their longest
    ///    word, their header or [`MIN_WRAPPED_WIDTH`]; a column without blanks (an id, a check
    ///    name, a timestamp, a number) keeps its width;
    /// 2. when even that is wider than `width`, each row is printed as a record instead: one
    ///    `Header  value` line per column, text wrapped at blanks to the width, a blank line
    ///    between records (psql's expanded display), so every value stays whole and
    ///    copyable.
    ///
    /// Without a width (a pipe, a file, or `--wide`), every row stays one line, as `tabulate`
    /// prints it.
    pub(crate) fn table_within(&self, width: Option<usize>) -> String {
        let shown: Vec<usize> = (0..self.columns.len()).filter(|&i| self.columns[i].in_table).collect();
        let headers: Vec<&str> = shown.iter().map(|&i| self.columns[i].header).collect();
        let rows: Vec<Vec<String>> = self
            .rows
            .iter()
            .map(|row| shown.iter().map(|&i| row[i].text.replace(['\n', '\r'], " ")).collect())
            .collect();
        let mut columns: Vec<(usize, bool)> = headers
            .iter()
            .enumerate()
            .map(|(at, header)| {
                let cells = rows.iter().map(|row| row[at].as_str());
                let widest = cells.clone().map(chars).max().unwrap_or(0);
                let numeric =
                    cells.clone().any(|cell| !cell.is_empty()) && cells.filter(|cell| !cell.is_empty()).all(is_integer);
                (widest.max(chars(header) + 2), numeric)
            })
            .collect();
        if let Some(width) = width {
            let floors: Vec<usize> = headers
                .iter()
                .enumerate()
                .zip(&columns)
                .map(|((at, header), &(natural, numeric))| {
                    let longest_word = rows.iter().flat_map(|row| row[at].split(' ')).map(chars).max().unwrap_or(0);
                    if numeric {
                        natural
                    } else {
                        natural.min(MIN_WRAPPED_WIDTH.max(chars(header) + 2).max(longest_word))
                    }
                })
                .collect();
            let gaps = 2 * columns.len().saturating_sub(1);
            if floors.iter().sum::<usize>() + gaps > width {
                return records(&headers, &rows, width);
            }
            let natural: Vec<usize> = columns.iter().map(|&(natural, _)| natural).collect();
            for (column, fitted) in columns.iter_mut().zip(fit_widths(&natural, &floors, width)) {
                column.0 = fitted;
            }
        }
        let line = |cells: &[&str]| {
            let padded: Vec<String> = cells
                .iter()
                .zip(&columns)
                .map(
                    |(cell, &(width, numeric))| {
                        if numeric { format!("{cell:>width$}") } else { format!("{cell:<width$}") }
                    },
                )
                .collect();
            padded.join("  ").trim_end().to_owned()
        };
        let mut text = String::new();
        let _ = writeln!(text, "{}", line(&headers));
        let rule: Vec<String> = columns.iter().map(|&(width, _)| "-".repeat(width)).collect();
        let _ = writeln!(text, "{}", rule.join("  "));
        for row in &rows {
            let wrapped: Vec<Vec<String>> =
                row.iter().zip(&columns).map(|(cell, &(width, _))| wrap(cell, width)).collect();
            let height = wrapped.iter().map(Vec::len).max().unwrap_or(1);
            for at in 0..height {
                let cells: Vec<&str> = wrapped.iter().map(|lines| lines.get(at).map_or("", String::as_str)).collect();
                let _ = writeln!(text, "{}", line(&cells));
            }
        }
        text
    }

    /// The rows as JSON objects keyed by field name, in column order.
    pub(crate) fn json_rows(&self) -> Vec<Json> {
        self.rows
            .iter()
            .map(|row| {
                let object: Map<String, Json> = self
                    .columns
                    .iter()
                    .zip(row)
                    .map(|(column, cell)| (column.field.to_owned(), cell.value.clone()))
                    .collect();
                Json::Object(object)
            })
            .collect()
    }

    /// The CSV text: a header row of field names, then one record per row (CRLF line ends,
    /// as RFC 4180 says).
    pub(crate) fn csv(&self) -> String {
        let mut text = String::new();
        let header: Vec<String> = self.columns.iter().map(|column| csv_field(column.field)).collect();
        text.push_str(&header.join(","));
        text.push_str("\r\n");
        for row in &self.rows {
            let record: Vec<String> = row.iter().map(|cell| csv_field(&scalar_text(&cell.value))).collect();
            text.push_str(&record.join(","));
            text.push_str("\r\n");
        }
        text
    }
}

/// The narrowest a wrapped text column gets (unless its header is wider).
pub(crate) const MIN_WRAPPED_WIDTH: usize = 12;

/// Characters of `text` (what a terminal column holds for the texts tables show).
fn chars(text: &str) -> usize {
    text.chars().count()
}

/// Column widths whose table (columns two apart) fits `width`: the widest columns are
/// narrowed to a common cap, never below their `floors`; `natural` when the table fits, and
/// `floors` when even they do not.
fn fit_widths(natural: &[usize], floors: &[usize], width: usize) -> Vec<usize> {
    let gaps = 2 * natural.len().saturating_sub(1);
    let total = |widths: &[usize]| widths.iter().sum::<usize>() + gaps;
    if total(natural) <= width {
        return natural.to_vec();
    }
    let capped = |cap: usize| -> Vec<usize> {
        natural.iter().zip(floors).map(|(&natural, &floor)| natural.min(cap.max(floor))).collect()
    };
    // The largest cap that fits; the widths only shrink as the cap does.
    let widest = natural.iter().copied().max().unwrap_or(0);
    (0..=widest).rev().map(capped).find(|widths| total(widths) <= width).unwrap_or_else(|| floors.to_vec())
}

/// `rows` as records, for a terminal `width` too narrow for their table: per row, one line
/// per column — its header padded to the longest header plus two, then the value, wrapped at
/// blanks to what the width leaves (a word is never cut: one longer than the room gets a
/// line of its own) — and a blank line between rows.
fn records(headers: &[&str], rows: &[Vec<String>], width: usize) -> String {
    let label = headers.iter().map(|header| chars(header)).max().unwrap_or(0) + 2;
    let room = width.saturating_sub(label).max(MIN_WRAPPED_WIDTH);
    let mut text = String::new();
    for (at, row) in rows.iter().enumerate() {
        if at > 0 {
            text.push('\n');
        }
        for (header, cell) in headers.iter().zip(row) {
            for (line_at, line) in wrap(cell, room).iter().enumerate() {
                let header = if line_at == 0 { *header } else { "" };
                let _ = writeln!(text, "{}", format!("{header:<label$}{line}").trim_end());
            }
        }
    }
    text
}

/// `text` in lines of at most `width` characters, broken at blanks; a word longer than
/// `width` is never cut but gets a line of its own (ids, names and timestamps stay whole and
/// copyable). One line when it fits, and one empty line for an empty text.
pub(crate) fn wrap(text: &str, width: usize) -> Vec<String> {
    if chars(text) <= width || width == 0 {
        return vec![text.to_owned()];
    }
    let mut lines = Vec::new();
    let mut current = String::new();
    for word in text.split(' ').filter(|word| !word.is_empty()) {
        let used = chars(&current);
        if used > 0 && used + 1 + chars(word) > width {
            lines.push(std::mem::take(&mut current));
        }
        if !current.is_empty() {
            current.push(' ');
        }
        current.push_str(word);
    }
    if !current.is_empty() || lines.is_empty() {
        lines.push(current);
    }
    lines
}

/// One CSV field: quoted (with inner quotes doubled) when it holds a comma, a quote, a line
/// break, or starts or ends with a blank.
fn csv_field(text: &str) -> String {
    let needs_quotes = text.contains([',', '"', '\n', '\r'])
        || text.starts_with(char::is_whitespace)
        || text.ends_with(char::is_whitespace);
    if needs_quotes { format!("\"{}\"", text.replace('"', "\"\"")) } else { text.to_owned() }
}

/// Whether `tabulate` reads `text` as an integer: an optional sign and ASCII digits.
fn is_integer(text: &str) -> bool {
    let digits = text.strip_prefix(['-', '+']).unwrap_or(text);
    !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;

    const COLUMNS: &[Column] = &[column("Check", "full_check_name"), column("UTC start", "window_start"), field("id")];

    fn listing() -> Listing {
        let mut listing = Listing::new(COLUMNS);
        let at = Utc.with_ymd_and_hms(2026, 7, 22, 13, 0, 0).unwrap();
        listing.push(vec![Cell::string("postgres/payments/public/t"), Cell::time(Some(at)), Cell::int(Some(7))]);
        listing.push(vec![Cell::string("a,\"b\"\nc"), Cell::time(None), Cell::int(None)]);
        listing
    }

    #[test]
    fn tables_show_upstreams_times_blanks_and_only_table_columns() {
        let table = listing().table();
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(lines.len(), 4, "{table}");
        assert!(lines[0].starts_with("Check") && lines[0].contains("UTC start") && !lines[0].contains("id"));
        assert!(lines[1].starts_with("---") && lines[1].chars().all(|c| c == '-' || c == ' '), "{table}");
        assert!(lines[2].contains("2026-07-22T13:00:00+00:00"), "{table}");
        assert!(!table.contains("None") && !table.contains("null"), "{table}");
        assert!(lines.iter().all(|line| line == &line.trim_end()), "no trailing blanks");
        assert_eq!(lines[3], "a,\"b\" c", "line breaks never split a row, and blanks stay blank");
    }

    /// The text Python's `tabulate` (0.9 and 0.10) prints for the same rows and headers.
    #[test]
    fn tables_are_laid_out_as_tabulate_lays_them_out() {
        const COLUMNS: &[Column] =
            &[column("Check", "check"), column("Attempt", "attempt"), column("Slot status", "slot"), column("R", "r")];
        let mut listing = Listing::new(COLUMNS);
        listing.push(vec![
            Cell::string("a"),
            Cell::int(Some(2)),
            Cell::text(None::<String>),
            Cell::text(None::<String>),
        ]);
        listing.push(vec![Cell::string("bb"), Cell::int(Some(10)), Cell::string("PASS"), Cell::string("x")]);
        listing.push(vec![Cell::string("c"), Cell::int(None), Cell::text(None::<String>), Cell::text(None::<String>)]);
        assert_eq!(
            listing.table(),
            "Check      Attempt  Slot status    R\n\
             -------  ---------  -------------  ---\n\
             a                2\n\
             bb              10  PASS           x\n\
             c\n"
        );
        assert!(is_integer("-12") && is_integer("7") && !is_integer("") && !is_integer("1.5") && !is_integer("-"));
    }

    #[test]
    fn a_table_wider_than_the_terminal_wraps_its_widest_text_columns() {
        const COLUMNS: &[Column] =
            &[column("Check", "check"), column("Attempt", "attempt"), column("Reason", "reason")];
        let mut listing = Listing::new(COLUMNS);
        let reason = "row_diff FAIL: 2 missing, 1 extra, 3 changed; see datadiff report differences";
        listing.push(vec![Cell::string("pg/pay/public/transfers"), Cell::int(Some(12)), Cell::string(reason)]);
        listing.push(vec![Cell::string("pg/pay/public/t"), Cell::int(Some(3)), Cell::string("row_count FAIL")]);
        // Unfitted (a pipe): every row one line, as tabulate prints it.
        let unfitted = listing.table();
        assert_eq!(listing.table_within(None), unfitted);
        assert_eq!(unfitted.lines().count(), 4);
        assert!(unfitted.lines().nth(2).is_some_and(|line| line.ends_with(reason)), "{unfitted}");
        // Wide enough: the same text.
        assert_eq!(listing.table_within(Some(200)), unfitted);

        let fitted = listing.table_within(Some(60));
        assert_eq!(
            fitted,
            "Check                      Attempt  Reason\n\
             -----------------------  ---------  ------------------------\n\
             pg/pay/public/transfers         12  row_diff FAIL: 2\n\
             \x20                                   missing, 1 extra, 3\n\
             \x20                                   changed; see datadiff\n\
             \x20                                   report differences\n\
             pg/pay/public/t                  3  row_count FAIL\n"
        );
        assert!(fitted.lines().all(|line| line.chars().count() <= 60), "{fitted}");
        // Every word of the reason is still there, in order.
        let words: Vec<&str> = fitted.lines().skip(2).take(4).flat_map(|line| line[36..].split_whitespace()).collect();
        assert_eq!(words.join(" "), reason);

        // Narrower than the check name and the header words allow: one record per row, each
        // value whole.
        let narrow = listing.table_within(Some(30));
        assert_eq!(
            narrow,
            "Check    pg/pay/public/transfers\n\
             Attempt  12\n\
             Reason   row_diff FAIL: 2\n\
             \x20        missing, 1 extra, 3\n\
             \x20        changed; see datadiff\n\
             \x20        report differences\n\
             \n\
             Check    pg/pay/public/t\n\
             Attempt  3\n\
             Reason   row_count FAIL\n"
        );
        // A value longer than the room is never cut: it overflows on a line of its own.
        let tiny = listing.table_within(Some(10));
        assert!(tiny.lines().any(|line| line == "Check    pg/pay/public/transfers"), "{tiny}");
        assert!(tiny.lines().any(|line| line.trim() == "differences"), "{tiny}");
    }

    #[test]
    fn wrapping_breaks_at_blanks_and_never_cuts_a_word() {
        assert_eq!(wrap("", 5), [""]);
        assert_eq!(wrap("short", 5), ["short"]);
        assert_eq!(wrap("a bb ccc dddd", 6), ["a bb", "ccc", "dddd"]);
        assert_eq!(wrap("abcdefghij k", 4), ["abcdefghij", "k"], "a long word is never cut");
        assert_eq!(
            wrap("run 5e3ee102-2b57-4dfa-8192-27f3a639212c now", 12),
            ["run", "5e3ee102-2b57-4dfa-8192-27f3a639212c", "now"]
        );
        assert_eq!(fit_widths(&[10, 30, 5], &[8, 12, 5], 100), [10, 30, 5], "fits: unchanged");
        assert_eq!(fit_widths(&[10, 30, 5], &[8, 12, 5], 35), [10, 16, 5], "the widest narrows first");
        assert_eq!(fit_widths(&[20, 30, 5], &[8, 12, 5], 30), [9, 12, 5], "then the others, to one cap");
        assert_eq!(fit_widths(&[20, 30, 5], &[8, 12, 5], 3), [8, 12, 5], "never below the floors");
    }

    #[test]
    fn json_has_every_field_with_rfc3339_times_and_nulls() {
        let rows = listing().json_rows();
        assert_eq!(
            rows[0],
            serde_json::json!({"full_check_name": "postgres/payments/public/t", "window_start": "2026-07-22T13:00:00Z", "id": 7})
        );
        assert_eq!(rows[1]["window_start"], Json::Null);
    }

    #[test]
    fn csv_quotes_as_rfc_4180_says() {
        assert_eq!(
            listing().csv(),
            "full_check_name,window_start,id\r\npostgres/payments/public/t,2026-07-22T13:00:00Z,7\r\n\"a,\"\"b\"\"\nc\",,\r\n"
        );
        assert_eq!(csv_field(" x"), "\" x\"");
        assert_eq!(csv_field("plain"), "plain");
        assert_eq!(Cell::names(&["a", "b"]).value, serde_json::json!(["a", "b"]));
        assert_eq!(scalar_text(&serde_json::json!(["a", "b"])), "[\"a\",\"b\"]");
    }
}
