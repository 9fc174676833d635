//! Which replica column holds each source column: the exact name, else the name as
//! pipelinewise-target-postgres writes it (lower-cased), else what `--column-map` says.
//!
//! # The rule
//!
//! For a source column `S`, in order:
//!
//! 1. an explicit map entry `S=R` (`--column-map`): the replica column `R`, exactly; a map
//!    entry naming a replica column that does not exist is an error, never a fallback;
//! 2. a replica column named exactly `S`;
//! 3. a replica column named `S` lower-cased. pipelinewise-target-postgres creates every
//!    column as the quoted, lower-cased property name (`safe_column_name` is
//!    `'"{}"'.format(name).lower()`: Python's full Unicode `str.lower()`, nothing else is
//!    changed), so `CustomerId` becomes `customerid` and `Größe` becomes `größe`; Rust's
//!    [`str::to_lowercase`] applies the same Unicode mappings.
//!
//! Table names are never folded: `--table` and `--replica-table` name tables exactly.
//!
//! Two source columns resolving to one replica column is an error (compare them with
//! `--columns` or map one of them).
//!
//! # Coverage
//!
//! Without `--columns`, every source column is compared (in source order) except the key,
//! the columns named by `--exclude-columns`, and a column matching the replica's deleted
//! marker. A source column with no replica column by this rule is a refusal naming every
//! such column and the flags that fix it: a verification must never certify a column it did
//! not compare. The columns left out on request are listed in the report.

use datadiff_access::stream::ColumnType;

/// Why the columns of the two tables cannot be matched.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ColumnMatchError {
    /// A column is in neither form on a side.
    #[error("column {column} does not exist in {table} on the {role} database{}", tried_text(.tried))]
    NotFound {
        /// `source` or `replica`.
        role: String,
        /// The table.
        table: String,
        /// The column as named (the source name, or a map's replica name).
        column: String,
        /// The replica names tried, when more than the column itself (empty for the source).
        tried: Vec<String>,
    },
    /// A `--column-map` entry names a column the source table does not have.
    #[error(
        "--column-map {source_column}={replica_column}: {table} has no column {source_column} on the source database"
    )]
    MapUnknownSource {
        /// The entry's source name.
        source_column: String,
        /// The entry's replica name.
        replica_column: String,
        /// The source table.
        table: String,
    },
    /// A `--column-map` entry's replica column does not exist.
    #[error(
        "--column-map {source_column}={replica_column}: {table} has no column {replica_column} on the replica database"
    )]
    MapUnknownReplica {
        /// The entry's source name.
        source_column: String,
        /// The entry's replica name.
        replica_column: String,
        /// The replica table.
        table: String,
    },
    /// Source columns (compared by default) have no replica column.
    #[error(
        "{} of {source_table} {} no column in {replica_table} on the replica database ({}): name each replica column \
         with --column-map SOURCE=REPLICA, leave columns out with --exclude-columns {}, or list the compared \
         columns with --columns",
        counted(.columns.len(), "source column", "source columns"),
        if .columns.len() == 1 { "has" } else { "have" },
        .columns.iter().map(|(column, tried)| format!("{column}: tried {}", tried.join(" and "))).collect::<Vec<_>>().join("; "),
        .columns.iter().map(|(column, _)| column.as_str()).collect::<Vec<_>>().join(","),
    )]
    Unmatched {
        /// The source table.
        source_table: String,
        /// The replica table.
        replica_table: String,
        /// Each unmatched source column with the replica names tried.
        columns: Vec<(String, Vec<String>)>,
    },
    /// An `--exclude-columns` name is not a column of the source table.
    #[error("--exclude-columns {column}: {table} has no column {column} on the source database")]
    ExcludeUnknown {
        /// The name given.
        column: String,
        /// The source table.
        table: String,
    },
    /// Two source columns resolve to the same replica column.
    #[error(
        "source columns {first} and {second} both match the replica column {replica_column} of {table}: compare one \
         of them (--columns) or map them (--column-map)"
    )]
    Ambiguous {
        /// The replica column.
        replica_column: String,
        /// The first source column.
        first: String,
        /// The second source column.
        second: String,
        /// The replica table.
        table: String,
    },
    /// `--deleted-column` names the replica column of a source column (the key or a compared
    /// one), not a marker of the replica's own.
    #[error(
        "--deleted-column {marker} is the replica column of the source column {source_column} of {table}: a deleted \
         marker must be a column only the replica has (__deleted, _sdc_deleted_at)"
    )]
    DeletedMarkerCompared {
        /// The marker column given.
        marker: String,
        /// The source column that matches it.
        source_column: String,
        /// The source table.
        table: String,
    },
}

/// Refuses a deleted marker on the replica table (`--deleted-column`) that a source column —
/// the key included — matches by the rule of the module docs: such a column is data the
/// source has, and as a marker it would take live rows out of the comparison.
pub(crate) fn check_deleted_marker(
    tables: &Tables<'_>,
    map: &[(String, String)],
    marker: &str,
) -> Result<(), ColumnMatchError> {
    for column in tables.source {
        if replica_match(tables, map, &column.name)?.is_some_and(|replica| replica.name == marker) {
            return Err(ColumnMatchError::DeletedMarkerCompared {
                marker: marker.to_owned(),
                source_column: column.name.clone(),
                table: tables.source_table.to_owned(),
            });
        }
    }
    Ok(())
}

fn counted(count: usize, one: &str, many: &str) -> String {
    format!("{count} {}", if count == 1 { one } else { many })
}

fn tried_text(tried: &[String]) -> String {
    match tried {
        [] | [_] => String::new(),
        names => format!(" (tried {}; name the replica column with --column-map SOURCE=REPLICA)", names.join(" and ")),
    }
}

/// A source column and the replica column matched to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct MatchedColumn {
    /// The source column's catalog entry.
    pub(crate) source: ColumnType,
    /// The replica column's catalog entry.
    pub(crate) replica: ColumnType,
}

/// The key and the compared columns, matched, and the source columns left out on request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct MatchedColumns {
    /// The key columns, in key order (several for a composite key).
    pub(crate) keys: Vec<MatchedColumn>,
    pub(crate) columns: Vec<MatchedColumn>,
    /// Source columns not compared, in source order: not in `--columns`, named by
    /// `--exclude-columns`, or matching the replica's deleted marker.
    pub(crate) excluded: Vec<String>,
}

/// Which columns to compare, as the user asked.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Selection<'a> {
    /// `--columns`: exactly these.
    pub(crate) requested: Option<&'a [String]>,
    /// `--exclude-columns`: every source column but these (and the key).
    pub(crate) excluded: &'a [String],
    /// `--column-map` entries, `(source, replica)`.
    pub(crate) map: &'a [(String, String)],
    /// A replica column never compared by default (the deleted marker).
    pub(crate) skip_replica: Option<&'a str>,
}

/// What [`match_columns`] works from.
pub(crate) struct Tables<'a> {
    pub(crate) source_table: &'a str,
    pub(crate) source: &'a [ColumnType],
    pub(crate) replica_table: &'a str,
    pub(crate) replica: &'a [ColumnType],
}

/// Matches the key and the compared columns by the rule of the module docs: the requested
/// columns, or every source column but the key and those excluded, each of which must have
/// a replica match.
pub(crate) fn match_columns(
    tables: &Tables<'_>,
    keys: &[&str],
    selection: Selection<'_>,
) -> Result<MatchedColumns, ColumnMatchError> {
    let map = selection.map;
    for (source, replica) in map {
        if !tables.source.iter().any(|column| &column.name == source) {
            return Err(ColumnMatchError::MapUnknownSource {
                source_column: source.clone(),
                replica_column: replica.clone(),
                table: tables.source_table.to_owned(),
            });
        }
    }
    for name in selection.excluded {
        if !tables.source.iter().any(|column| &column.name == name) {
            return Err(ColumnMatchError::ExcludeUnknown {
                column: name.clone(),
                table: tables.source_table.to_owned(),
            });
        }
    }
    let keys = keys.iter().map(|key| matched(tables, map, key)).collect::<Result<Vec<_>, _>>()?;
    let is_key = |name: &str| keys.iter().any(|key| key.source.name == name);
    let mut excluded = Vec::new();
    let names: Vec<String> = match selection.requested {
        Some(names) => {
            excluded.extend(
                tables
                    .source
                    .iter()
                    .filter(|column| !is_key(&column.name) && !names.contains(&column.name))
                    .map(|column| column.name.clone()),
            );
            names.to_vec()
        }
        None => {
            let mut names = Vec::new();
            let mut unmatched = Vec::new();
            for column in tables.source.iter().filter(|column| !is_key(&column.name)) {
                if selection.excluded.contains(&column.name) {
                    excluded.push(column.name.clone());
                    continue;
                }
                // A broken map entry is an error here too, never a column silently left out.
                match replica_match(tables, map, &column.name)? {
                    Some(replica) if Some(replica.name.as_str()) == selection.skip_replica => {
                        excluded.push(column.name.clone())
                    }
                    Some(_) => names.push(column.name.clone()),
                    None => unmatched.push((column.name.clone(), tried(&column.name))),
                }
            }
            if !unmatched.is_empty() {
                return Err(ColumnMatchError::Unmatched {
                    source_table: tables.source_table.to_owned(),
                    replica_table: tables.replica_table.to_owned(),
                    columns: unmatched,
                });
            }
            names
        }
    };
    let mut columns = Vec::with_capacity(names.len());
    for name in &names {
        let column = matched(tables, map, name)?;
        let claimed =
            keys.iter().chain(&columns).find(|other: &&MatchedColumn| other.replica.name == column.replica.name);
        if let Some(other) = claimed {
            return Err(ColumnMatchError::Ambiguous {
                replica_column: column.replica.name.clone(),
                first: other.source.name.clone(),
                second: column.source.name.clone(),
                table: tables.replica_table.to_owned(),
            });
        }
        columns.push(column);
    }
    Ok(MatchedColumns { keys, columns, excluded })
}

/// The replica names tried for the source column `name`: itself, and its lower-cased form
/// when that differs.
fn tried(name: &str) -> Vec<String> {
    let mut tried = vec![name.to_owned()];
    let lower = name.to_lowercase();
    if lower != name {
        tried.push(lower);
    }
    tried
}

/// The source column `name` and its replica match.
fn matched(tables: &Tables<'_>, map: &[(String, String)], name: &str) -> Result<MatchedColumn, ColumnMatchError> {
    let source = tables.source.iter().find(|column| column.name == name).ok_or_else(|| ColumnMatchError::NotFound {
        role: "source".to_owned(),
        table: tables.source_table.to_owned(),
        column: name.to_owned(),
        tried: Vec::new(),
    })?;
    match replica_match(tables, map, name)? {
        Some(replica) => Ok(MatchedColumn { source: source.clone(), replica: replica.clone() }),
        None => Err(ColumnMatchError::NotFound {
            role: "replica".to_owned(),
            table: tables.replica_table.to_owned(),
            column: name.to_owned(),
            tried: tried(name),
        }),
    }
}

/// The replica column of the source column `name`: the map's, else the exact name, else the
/// lower-cased name; `None` when there is none; an error when the map names a missing column.
fn replica_match<'t>(
    tables: &Tables<'t>,
    map: &[(String, String)],
    name: &str,
) -> Result<Option<&'t ColumnType>, ColumnMatchError> {
    let find = |wanted: &str| tables.replica.iter().find(|column| column.name == wanted);
    if let Some((_, mapped)) = map.iter().find(|(source, _)| source == name) {
        return find(mapped).map(Some).ok_or_else(|| ColumnMatchError::MapUnknownReplica {
            source_column: name.to_owned(),
            replica_column: mapped.clone(),
            table: tables.replica_table.to_owned(),
        });
    }
    Ok(find(name).or_else(|| find(&name.to_lowercase())))
}

#[cfg(test)]
mod tests {
    use datadiff_access::stream::Family;

    use super::*;

    fn columns(names: &[&str]) -> Vec<ColumnType> {
        names
            .iter()
            .map(|name| ColumnType { name: (*name).to_owned(), type_name: "text".to_owned(), family: Family::Text })
            .collect()
    }

    fn pairs(matched: &MatchedColumns) -> Vec<(String, String)> {
        matched
            .keys
            .iter()
            .chain(&matched.columns)
            .map(|column| (column.source.name.clone(), column.replica.name.clone()))
            .collect()
    }

    fn tables<'a>(source: &'a [ColumnType], replica: &'a [ColumnType]) -> Tables<'a> {
        Tables { source_table: "public.customers", source, replica_table: "replicated.customers", replica }
    }

    fn every<'a>(map: &'a [(String, String)], skip_replica: Option<&'a str>) -> Selection<'a> {
        Selection { requested: None, excluded: &[], map, skip_replica }
    }

    fn only(requested: &[String]) -> Selection<'_> {
        Selection { requested: Some(requested), excluded: &[], map: &[], skip_replica: None }
    }

    #[test]
    fn exact_names_win_then_lower_case() {
        let source = columns(&["CustomerId", "Email", "plan", "Größe", "_sdc_deleted_at"]);
        let replica = columns(&["customerid", "Email", "email", "plan", "größe", "_sdc_deleted_at"]);
        let matched =
            match_columns(&tables(&source, &replica), &["CustomerId"], every(&[], Some("_sdc_deleted_at"))).unwrap();
        let expected = [("CustomerId", "customerid"), ("Email", "Email"), ("plan", "plan"), ("Größe", "größe")];
        assert_eq!(pairs(&matched), expected.map(|(a, b)| (a.to_owned(), b.to_owned())));
        assert_eq!(matched.excluded, ["_sdc_deleted_at"], "the deleted marker is left out, and said so");
    }

    #[test]
    fn a_source_column_without_a_replica_column_refuses_naming_each_and_the_fixes() {
        let source = columns(&["OrderId", "TotalAmount", "Note", "Status"]);
        let replica = columns(&["order_id", "status"]);
        let map = vec![("OrderId".to_owned(), "order_id".to_owned())];
        let error = match_columns(&tables(&source, &replica), &["OrderId"], every(&map, None)).unwrap_err();
        assert_eq!(
            error.to_string(),
            "2 source columns of public.customers have no column in replicated.customers on the replica database \
             (TotalAmount: tried TotalAmount and totalamount; Note: tried Note and note): name each replica column \
             with --column-map SOURCE=REPLICA, leave columns out with --exclude-columns TotalAmount,Note, or list \
             the compared columns with --columns"
        );
        // Excluded on request: compared no more, listed as left out.
        let excluded = ["TotalAmount".to_owned(), "Note".to_owned()];
        let selection = Selection { requested: None, excluded: &excluded, map: &map, skip_replica: None };
        let matched = match_columns(&tables(&source, &replica), &["OrderId"], selection).unwrap();
        assert_eq!(pairs(&matched)[1], ("Status".to_owned(), "status".to_owned()));
        assert_eq!(matched.excluded, ["TotalAmount", "Note"]);
        // A name that is no source column is an error, not a silent no-op.
        let typo = ["Totalamount".to_owned()];
        let selection = Selection { requested: None, excluded: &typo, map: &map, skip_replica: None };
        let error = match_columns(&tables(&source, &replica), &["OrderId"], selection).unwrap_err();
        assert!(matches!(error, ColumnMatchError::ExcludeUnknown { .. }), "{error}");
        // With --columns, the others are left out on request.
        let requested = ["Status".to_owned()];
        let selection = Selection { requested: Some(&requested), excluded: &[], map: &map, skip_replica: None };
        let matched = match_columns(&tables(&source, &replica), &["OrderId"], selection).unwrap();
        assert_eq!(matched.excluded, ["TotalAmount", "Note"]);
        let error = match_columns(&tables(&source, &replica), &["OrderId"], every(&[], None)).unwrap_err();
        assert!(error.to_string().starts_with("column OrderId does not exist in replicated.customers"), "{error}");
    }

    #[test]
    fn a_map_overrides_and_must_name_real_columns() {
        let source = columns(&["id", "Email", "Plan"]);
        let replica = columns(&["id", "email", "plan_name", "plan"]);
        let map = vec![("Plan".to_owned(), "plan_name".to_owned())];
        let matched = match_columns(&tables(&source, &replica), &["id"], every(&map, None)).unwrap();
        assert_eq!(pairs(&matched)[2], ("Plan".to_owned(), "plan_name".to_owned()));

        let bad = vec![("Plan".to_owned(), "nope".to_owned())];
        let error = match_columns(&tables(&source, &replica), &["id"], every(&bad, None)).unwrap_err();
        assert!(matches!(error, ColumnMatchError::MapUnknownReplica { .. }), "{error}");
        let bad = vec![("Colour".to_owned(), "plan".to_owned())];
        let error = match_columns(&tables(&source, &replica), &["id"], every(&bad, None)).unwrap_err();
        assert_eq!(
            error.to_string(),
            "--column-map Colour=plan: public.customers has no column Colour on the source database"
        );
    }

    #[test]
    fn a_missing_column_names_both_forms_tried() {
        let source = columns(&["id", "FullName"]);
        let replica = columns(&["id"]);
        let requested = vec!["FullName".to_owned()];
        let error = match_columns(&tables(&source, &replica), &["id"], only(&requested)).unwrap_err();
        assert_eq!(
            error.to_string(),
            "column FullName does not exist in replicated.customers on the replica database (tried FullName and \
             fullname; name the replica column with --column-map SOURCE=REPLICA)"
        );
    }

    #[test]
    fn two_source_columns_on_one_replica_column_are_refused() {
        let source = columns(&["id", "Email", "EMAIL"]);
        let replica = columns(&["id", "email"]);
        let error = match_columns(&tables(&source, &replica), &["id"], every(&[], None)).unwrap_err();
        assert!(matches!(error, ColumnMatchError::Ambiguous { .. }), "{error}");
    }
}
