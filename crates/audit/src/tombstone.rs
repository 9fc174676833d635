//! How a replica marks a deleted row, as SQL predicates over the marker column.
//!
//! Two forms, one column each:
//!
//! * **with a metadata table** (the seed's three flags, `--replica-metadata-table`,
//!   `--lsn-column`, `--deleted-column`): the deleted flag is a `boolean`, or text holding
//!   `'true'`/`'false'` (Debezium's JDBC sink writes `__deleted` so). A NULL flag, or text
//!   that is neither, is invalid metadata and refuses the audit. Any other type refuses: it
//!   is not a flag.
//! * **on the replica table alone** (`--deleted-column` without the other two; a Singer
//!   replica has neither a metadata table nor an LSN): a `boolean` marks a delete when true;
//!   text marks one with any non-NULL value other than `'false'` (so Debezium's `'true'` and
//!   PipelineWise's `_sdc_deleted_at` timestamp text both do, and `'false'` and NULL are
//!   live rows); a column of any other type marks one with any non-NULL value
//!   (`_sdc_deleted_at` as a timestamp). Nothing is invalid: NULL is a live row. Text is
//!   compared exactly (`'False'` marks a delete).
//!
//! Deleted rows leave the comparison (the replica stream reads only live rows) and are
//! counted as tombstones.

use datadiff_access::stream::{ColumnType, Family};
use datadiff_diff_core::plan::quoted_ident;

use crate::refusal::Refusal;

/// What the marker column's values mean, by its type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Boolean,
    Text,
    AnyValue,
}

/// A deleted-row marker: a column and how its values read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DeletedMarker {
    column: String,
    kind: Kind,
    /// The seed's metadata-table flag: NULL (and text other than 'true'/'false') is invalid.
    strict: bool,
}

impl DeletedMarker {
    /// The seed's deleted flag on a metadata table: boolean or 'true'/'false' text.
    pub(crate) fn flag(column: &ColumnType, table: &str) -> Result<DeletedMarker, Refusal> {
        match kind(column.family) {
            Kind::AnyValue => Err(Refusal::DeletedFlagType {
                table: table.to_owned(),
                column: column.name.clone(),
                type_name: column.type_name.clone(),
            }),
            kind => Ok(DeletedMarker { column: column.name.clone(), kind, strict: true }),
        }
    }

    /// A marker on the replica table itself, of any type (see the module docs).
    pub(crate) fn on_replica(column: &ColumnType) -> DeletedMarker {
        DeletedMarker { column: column.name.clone(), kind: kind(column.family), strict: false }
    }

    /// The column's name.
    pub(crate) fn column(&self) -> &str {
        &self.column
    }

    /// True for the rows the marker says are deleted.
    pub(crate) fn deleted_sql(&self) -> String {
        let column = quoted_ident(&self.column);
        match (self.kind, self.strict) {
            (Kind::Boolean, true) => column,
            (Kind::Boolean, false) => format!("{column} IS TRUE"),
            (Kind::Text, true) => format!("{column} = 'true'"),
            (Kind::Text, false) => format!("({column} IS NOT NULL AND {column} <> 'false')"),
            (Kind::AnyValue, _) => format!("{column} IS NOT NULL"),
        }
    }

    /// True for the live rows (never for an invalid flag).
    pub(crate) fn live_sql(&self) -> String {
        let column = quoted_ident(&self.column);
        match (self.kind, self.strict) {
            (Kind::Boolean, true) => format!("NOT {column}"),
            (Kind::Text, true) => format!("{column} = 'false'"),
            _ => format!("NOT ({})", self.deleted_sql()),
        }
    }

    /// True for rows whose flag is invalid (the seed's form only): NULL, or text other than
    /// 'true'/'false'.
    pub(crate) fn invalid_sql(&self) -> Option<String> {
        let column = quoted_ident(&self.column);
        match (self.kind, self.strict) {
            (_, false) => None,
            (Kind::Text, true) => Some(format!("{column} IS NULL OR {column} NOT IN ('true', 'false')")),
            (_, true) => Some(format!("{column} IS NULL")),
        }
    }
}

fn kind(family: Family) -> Kind {
    match family {
        Family::Bool => Kind::Boolean,
        Family::Text | Family::Char => Kind::Text,
        _ => Kind::AnyValue,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn column(name: &str, family: Family) -> ColumnType {
        ColumnType { name: name.to_owned(), type_name: "t".to_owned(), family }
    }

    #[test]
    fn predicates_by_form_and_type() {
        let flag = DeletedMarker::flag(&column("_cdc_deleted", Family::Bool), "cdc.t").unwrap();
        assert_eq!((flag.deleted_sql(), flag.live_sql()), ("\"_cdc_deleted\"".into(), "NOT \"_cdc_deleted\"".into()));
        assert_eq!(flag.invalid_sql().as_deref(), Some("\"_cdc_deleted\" IS NULL"));
        let text = DeletedMarker::flag(&column("__deleted", Family::Text), "cdc.t").unwrap();
        assert_eq!(text.live_sql(), "\"__deleted\" = 'false'");
        assert!(text.invalid_sql().unwrap().contains("NOT IN ('true', 'false')"));
        let refused = DeletedMarker::flag(&column("_sdc_deleted_at", Family::TimestampTz), "cdc.t").unwrap_err();
        assert!(refused.to_string().contains("--deleted-column alone"), "{refused}");

        let marker = DeletedMarker::on_replica(&column("_sdc_deleted_at", Family::Timestamp));
        assert_eq!(marker.deleted_sql(), "\"_sdc_deleted_at\" IS NOT NULL");
        assert_eq!(marker.live_sql(), "NOT (\"_sdc_deleted_at\" IS NOT NULL)");
        assert_eq!(marker.invalid_sql(), None);
        let text = DeletedMarker::on_replica(&column("__deleted", Family::Text));
        assert_eq!(text.deleted_sql(), "(\"__deleted\" IS NOT NULL AND \"__deleted\" <> 'false')");
        let boolean = DeletedMarker::on_replica(&column("is_deleted", Family::Bool));
        assert_eq!(boolean.live_sql(), "NOT (\"is_deleted\" IS TRUE)");
    }
}
