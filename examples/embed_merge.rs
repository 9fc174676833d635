//! Embedding datadiff's merge core: diff two key-ordered streams a program already has.
//!
//! Here the streams are two exports of the same table, as `id,status,amount` lines, parsed
//! lazily — any `Iterator<Item = Result<row, E>>` works (a database cursor, a channel, a file
//! reader). The merge pulls one row of lookahead per side, so memory does not grow with the
//! streams; it rejects out-of-order or duplicate keys instead of producing a wrong diff, and
//! compares canonical values (`1.50` equals `1.5`).
//!
//! `cargo run --example embed_merge`

// An example prints its result.
#![allow(clippy::print_stdout)]

use std::fmt;

use datadiff::core::merge::{Change, Key, MergeError, Numeric, Summary, Value, ValuesRow, merge};

/// A line that is not `id,status,amount`.
#[derive(Debug)]
struct BadLine(usize);

impl fmt::Display for BadLine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {} is not id,status,amount", self.0)
    }
}

impl std::error::Error for BadLine {}

/// Parses an export lazily: one row per line, in the file's order.
fn rows(export: &str) -> impl Iterator<Item = Result<ValuesRow, BadLine>> + '_ {
    export.lines().enumerate().map(|(index, line)| {
        let mut fields = line.split(',');
        let (Some(id), Some(status), Some(amount), None) = (fields.next(), fields.next(), fields.next(), fields.next())
        else {
            return Err(BadLine(index + 1));
        };
        let id = id.parse().map_err(|_| BadLine(index + 1))?;
        let amount = Numeric::parse(amount).map_err(|_| BadLine(index + 1))?;
        Ok(ValuesRow { key: Key::Int(id), values: vec![Value::text(status), Value::Numeric(amount)] })
    })
}

fn main() -> Result<(), MergeError<BadLine>> {
    let source = "1,paid,10.00\n2,open,5.50\n4,paid,7\n5,void,0";
    let replica = "1,paid,10\n2,paid,5.5\n3,open,1\n5,void,0.00";

    // Exact counts and the first 20 differences, by key and column name only.
    let mut summary = Summary::new(20, vec!["status".to_owned(), "amount".to_owned()]);
    for change in merge(rows(source), rows(replica)) {
        let change = change?;
        if let Change::Changed { source, .. } = &change {
            println!("key {} differs", source.key);
        }
        summary.record(&change);
    }
    println!(
        "matched {}, missing in replica {}, extra in replica {}, changed {}",
        summary.matched, summary.missing, summary.extra, summary.changed
    );
    for example in &summary.examples {
        println!("{:?} {} {:?}", example.kind, example.key, example.fields);
    }
    assert_eq!((summary.matched, summary.missing, summary.extra, summary.changed), (2, 1, 1, 1));
    assert_eq!(summary.examples[0].fields, vec!["status"]);

    // A stream out of key order (a collation mismatch, say) is an error, never a wrong diff.
    let unordered = merge(rows("2,paid,1\n1,paid,1"), rows("1,paid,1")).find_map(Result::err);
    match unordered {
        Some(error @ MergeError::OutOfOrder { .. }) => println!("refused: {error}"),
        other => panic!("expected an out-of-order error, got {other:?}"),
    }
    Ok(())
}
