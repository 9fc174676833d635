//! The backend's catalog as comparable text: what "identical to PipelineWise's schema" means.
//!
//! A [`Catalog`] is a sorted set of one-line facts about the relations of one
//! [`CatalogScope`] — relation kinds, columns (position, name, `format_type`, nullability),
//! column defaults, table and column comments, constraints (`pg_get_constraintdef`),
//! indexes (`pg_get_indexdef`), user triggers, and the table, sequence and schema
//! privileges (`has_*_privilege`) of the application and DDL roles. Everything is rendered
//! with `search_path = pg_catalog`, so names come out schema-qualified whatever the
//! session's path.
//!
//! The expected upstream catalog, [`Catalog::expected_upstream`], is a file typed by hand
//! from the config note (`catalog/upstream-004.txt`); the adoption check and the tests
//! compare the live catalog with it.
//!
//! Not compared, on purpose: the privileges `CREATE` on schema `public` (PostgreSQL 14 and
//! older grant it to every role, 15 and newer to none) and `MAINTAIN` (PostgreSQL 17+), owner
//! names (the DDL role's privileges stand for them), storage parameters and statistics.

use std::fmt;

use postgres::GenericClient;

use crate::error::Error;

/// Which relations of schema `public` a catalog covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CatalogScope {
    /// PipelineWise's: `alembic_version` and every `dd_*` relation, plus the application
    /// role's USAGE on the schema.
    Upstream,
    /// datadiff's extension chain: every `datadiff_*` relation.
    Extensions,
}

/// The first way two catalogs differ.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum CatalogDifference {
    /// An expected fact is absent.
    Missing(String),
    /// A fact that is not expected is present.
    Unexpected(String),
    /// The same object has a different definition.
    Changed {
        /// What was expected.
        expected: String,
        /// What was found.
        found: String,
    },
}

impl fmt::Display for CatalogDifference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CatalogDifference::Missing(line) => write!(f, "missing `{line}`"),
            CatalogDifference::Unexpected(line) => write!(f, "unexpected `{line}`"),
            CatalogDifference::Changed { expected, found } => write!(f, "expected `{expected}`, found `{found}`"),
        }
    }
}

/// A sorted set of catalog facts (see the module docs for the line format).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Catalog {
    lines: Vec<String>,
}

/// The three table privileges the application role gets, then the rest, in a fixed order.
const TABLE_PRIVILEGES: [&str; 7] = ["SELECT", "INSERT", "UPDATE", "DELETE", "TRUNCATE", "REFERENCES", "TRIGGER"];
const SEQUENCE_PRIVILEGES: [&str; 3] = ["USAGE", "SELECT", "UPDATE"];

impl Catalog {
    /// Parses the fixture format: one fact per line; blank lines and `#` comments ignored.
    pub fn parse(text: &str) -> Catalog {
        Catalog::from_lines(
            text.lines().map(str::trim).filter(|line| !line.is_empty() && !line.starts_with('#')).map(str::to_owned),
        )
    }

    /// PipelineWise's catalog after Alembic revision 004, for separate application and DDL
    /// roles (typed by hand from the config note §4.2–4.3).
    pub fn expected_upstream() -> Catalog {
        Catalog::parse(include_str!("../catalog/upstream-004.txt"))
    }

    /// The catalog as it reads when `application_role` and `ddl_role` are one role: the
    /// application-role privilege facts are not separate facts then, so they are left out.
    pub fn for_roles(self, application_role: &str, ddl_role: &str) -> Catalog {
        if application_role != ddl_role {
            return self;
        }
        Catalog::from_lines(self.lines.into_iter().filter(|line| !line.contains(" privileges app = ")))
    }

    /// The facts, sorted.
    pub fn lines(&self) -> &[String] {
        &self.lines
    }

    fn from_lines(lines: impl IntoIterator<Item = String>) -> Catalog {
        let mut lines: Vec<String> = lines.into_iter().collect();
        lines.sort();
        lines.dedup();
        Catalog { lines }
    }

    /// Reads the live catalog of `scope`, with the privileges of both roles (only the DDL
    /// role's when they are the same role). Runs in its own (sub)transaction, rolled back.
    pub fn read(
        client: &mut impl GenericClient,
        scope: CatalogScope,
        application_role: &str,
        ddl_role: &str,
    ) -> Result<Catalog, Error> {
        let mut transaction = client.transaction().map_err(Error::query("starting to read the catalog"))?;
        transaction
            .batch_execute("SET LOCAL search_path = pg_catalog")
            .map_err(Error::query("starting to read the catalog"))?;
        let mut roles = vec![("ddl", ddl_role)];
        if application_role != ddl_role {
            roles.push(("app", application_role));
        }
        let mut lines = Vec::new();
        let filter = match scope {
            CatalogScope::Upstream => "(c.relname = 'alembic_version' OR c.relname LIKE 'dd\\_%')",
            CatalogScope::Extensions => "c.relname LIKE 'datadiff\\_%'",
        };
        let relations = transaction
            .query(
                &format!(
                    "SELECT c.oid, c.relname::text, c.relkind::text \
                       FROM pg_catalog.pg_class c \
                       JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace \
                      WHERE n.nspname = 'public' AND c.relkind NOT IN ('i', 'I', 't') AND {filter}"
                ),
                &[],
            )
            .map_err(Error::query("listing catalog relations"))?;
        for relation in relations {
            let oid: u32 = relation.try_get(0).map_err(Error::query("listing catalog relations"))?;
            let name: String = relation.try_get(1).map_err(Error::query("listing catalog relations"))?;
            let kind: String = relation.try_get(2).map_err(Error::query("listing catalog relations"))?;
            if kind == "S" {
                read_sequence(&mut transaction, oid, &name, &roles, &mut lines)?;
            } else {
                read_table(&mut transaction, oid, &name, &kind, &roles, &mut lines)?;
            }
        }
        if scope == CatalogScope::Upstream && application_role != ddl_role {
            let row = transaction
                .query_one("SELECT has_schema_privilege($1::text::name, 'public', 'USAGE')", &[&application_role])
                .map_err(Error::query("reading schema privileges"))?;
            let usage: bool = row.try_get(0).map_err(Error::query("reading schema privileges"))?;
            lines.push(format!("public: schema privileges app = {}", if usage { "USAGE" } else { "none" }));
        }
        transaction.rollback().map_err(Error::query("finishing reading the catalog"))?;
        Ok(Catalog::from_lines(lines))
    }

    /// The first difference between this (expected) catalog and `actual`, in sorted order;
    /// `None` when they are identical.
    pub fn first_difference(&self, actual: &Catalog) -> Option<CatalogDifference> {
        let (expected, found) = (&self.lines, &actual.lines);
        let (mut i, mut j) = (0, 0);
        loop {
            match (expected.get(i), found.get(j)) {
                (None, None) => return None,
                (Some(x), Some(y)) if x == y => {
                    i += 1;
                    j += 1;
                }
                (Some(x), Some(y)) if x < y => return Some(refine_missing(x, found)),
                (Some(x), None) => return Some(refine_missing(x, found)),
                (_, Some(y)) => return Some(refine_unexpected(y, expected)),
            }
        }
    }
}

/// The part of a fact that names its object: before ` = `, or for a column fact its
/// relation, position and name.
fn object_key(line: &str) -> &str {
    if let Some(position) = line.find(" = ") {
        return &line[..position];
    }
    if line.contains(": column ")
        && let Some((position, _)) = line.match_indices(' ').nth(3)
    {
        return &line[..position];
    }
    line
}

fn refine_missing(expected: &str, found: &[String]) -> CatalogDifference {
    let key = object_key(expected);
    match found.iter().find(|line| object_key(line) == key) {
        Some(line) => CatalogDifference::Changed { expected: expected.to_owned(), found: line.clone() },
        None => CatalogDifference::Missing(expected.to_owned()),
    }
}

fn refine_unexpected(found: &str, expected: &[String]) -> CatalogDifference {
    let key = object_key(found);
    match expected.iter().find(|line| object_key(line) == key) {
        Some(line) => CatalogDifference::Changed { expected: line.clone(), found: found.to_owned() },
        None => CatalogDifference::Unexpected(found.to_owned()),
    }
}

fn one_line(text: &str) -> String {
    text.replace('\n', "\\n")
}

fn read_table(
    client: &mut impl GenericClient,
    oid: u32,
    name: &str,
    kind: &str,
    roles: &[(&str, &str)],
    lines: &mut Vec<String>,
) -> Result<(), Error> {
    let kind_name = match kind {
        "r" => "table",
        "p" => "partitioned table",
        "v" => "view",
        "m" => "materialized view",
        "f" => "foreign table",
        "c" => "composite type",
        other => other,
    };
    lines.push(format!("{name}: {kind_name}"));

    let context = "reading catalog columns";
    let row = client.query_one("SELECT obj_description($1, 'pg_class')", &[&oid]).map_err(Error::query(context))?;
    if let Some(comment) = row.try_get::<_, Option<String>>(0).map_err(Error::query(context))? {
        lines.push(format!("{name}: comment = {}", one_line(&comment)));
    }
    let columns = client
        .query(
            "SELECT a.attname::text, format_type(a.atttypid, a.atttypmod), a.attnotnull, \
                    pg_get_expr(d.adbin, d.adrelid), col_description(a.attrelid, a.attnum) \
               FROM pg_catalog.pg_attribute a \
               LEFT JOIN pg_catalog.pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum \
              WHERE a.attrelid = $1 AND a.attnum > 0 AND NOT a.attisdropped \
              ORDER BY a.attnum",
            &[&oid],
        )
        .map_err(Error::query(context))?;
    for (position, column) in columns.iter().enumerate() {
        let column_name: String = column.try_get(0).map_err(Error::query(context))?;
        let type_name: String = column.try_get(1).map_err(Error::query(context))?;
        let not_null: bool = column.try_get(2).map_err(Error::query(context))?;
        let default: Option<String> = column.try_get(3).map_err(Error::query(context))?;
        let comment: Option<String> = column.try_get(4).map_err(Error::query(context))?;
        let nullability = if not_null { "NOT NULL" } else { "NULL" };
        lines.push(format!("{name}: column {:02} {column_name} {type_name} {nullability}", position + 1));
        if let Some(default) = default {
            lines.push(format!("{name}: column default {column_name} = {}", one_line(&default)));
        }
        if let Some(comment) = comment {
            lines.push(format!("{name}: column comment {column_name} = {}", one_line(&comment)));
        }
    }

    let definitions: [(&str, &str, &str); 3] = [
        (
            "constraint",
            "SELECT conname::text, pg_get_constraintdef(oid) FROM pg_catalog.pg_constraint \
              WHERE conrelid = $1 AND contype IN ('c', 'f', 'p', 'u', 'x', 't')",
            "reading catalog constraints",
        ),
        (
            "index",
            "SELECT ci.relname::text, pg_get_indexdef(i.indexrelid) FROM pg_catalog.pg_index i \
               JOIN pg_catalog.pg_class ci ON ci.oid = i.indexrelid WHERE i.indrelid = $1",
            "reading catalog indexes",
        ),
        (
            "trigger",
            "SELECT tgname::text, pg_get_triggerdef(oid) FROM pg_catalog.pg_trigger \
              WHERE tgrelid = $1 AND NOT tgisinternal",
            "reading catalog triggers",
        ),
    ];
    for (label, sql, context) in definitions {
        for row in client.query(sql, &[&oid]).map_err(Error::query(context))? {
            let object: String = row.try_get(0).map_err(Error::query(context))?;
            let definition: String = row.try_get(1).map_err(Error::query(context))?;
            lines.push(format!("{name}: {label} {object} = {}", one_line(&definition)));
        }
    }

    let context = "reading catalog privileges";
    for (label, role) in roles {
        let checks: Vec<String> = TABLE_PRIVILEGES
            .iter()
            .enumerate()
            .map(|(index, privilege)| {
                format!("has_table_privilege($1::text::name, $2::oid, '{privilege}') AS p{index}")
            })
            .collect();
        let row =
            client.query_one(&format!("SELECT {}", checks.join(", ")), &[role, &oid]).map_err(Error::query(context))?;
        lines.push(privilege_line(name, label, &TABLE_PRIVILEGES, &row).map_err(Error::query(context))?);
    }
    Ok(())
}

fn read_sequence(
    client: &mut impl GenericClient,
    oid: u32,
    name: &str,
    roles: &[(&str, &str)],
    lines: &mut Vec<String>,
) -> Result<(), Error> {
    let context = "reading catalog sequences";
    let owner = client
        .query_opt(
            "SELECT t.relname::text, a.attname::text \
               FROM pg_catalog.pg_depend d \
               JOIN pg_catalog.pg_class t ON t.oid = d.refobjid \
               JOIN pg_catalog.pg_attribute a ON a.attrelid = d.refobjid AND a.attnum = d.refobjsubid \
              WHERE d.classid = 'pg_catalog.pg_class'::regclass AND d.objid = $1 \
                AND d.refclassid = 'pg_catalog.pg_class'::regclass AND d.deptype IN ('a', 'i')",
            &[&oid],
        )
        .map_err(Error::query(context))?;
    match owner {
        Some(row) => {
            let table: String = row.try_get(0).map_err(Error::query(context))?;
            let column: String = row.try_get(1).map_err(Error::query(context))?;
            lines.push(format!("{name}: sequence owned by {table}.{column}"));
        }
        None => lines.push(format!("{name}: sequence")),
    }
    for (label, role) in roles {
        let checks: Vec<String> = SEQUENCE_PRIVILEGES
            .iter()
            .enumerate()
            .map(|(index, privilege)| {
                format!("has_sequence_privilege($1::text::name, $2::oid, '{privilege}') AS p{index}")
            })
            .collect();
        let row =
            client.query_one(&format!("SELECT {}", checks.join(", ")), &[role, &oid]).map_err(Error::query(context))?;
        lines.push(privilege_line(name, label, &SEQUENCE_PRIVILEGES, &row).map_err(Error::query(context))?);
    }
    Ok(())
}

fn privilege_line(
    name: &str,
    label: &str,
    privileges: &[&str],
    row: &postgres::Row,
) -> Result<String, postgres::Error> {
    let mut held = Vec::new();
    for (index, privilege) in privileges.iter().enumerate() {
        if row.try_get::<_, bool>(index)? {
            held.push(*privilege);
        }
    }
    let list = if held.is_empty() { "none".to_owned() } else { held.join(", ") };
    Ok(format!("{name}: privileges {label} = {list}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn catalog(lines: &[&str]) -> Catalog {
        Catalog::parse(&lines.join("\n"))
    }

    #[test]
    fn identical_catalogs_have_no_difference_whatever_the_order() {
        let a = catalog(&["t: table", "# a comment", "", "t: column 01 id uuid NOT NULL"]);
        let b = catalog(&["t: column 01 id uuid NOT NULL", "t: table"]);
        assert_eq!(a.first_difference(&b), None);
        assert_eq!(a.lines().len(), 2);
    }

    #[test]
    fn a_missing_fact_is_named() {
        let expected = catalog(&["t: table", "t: index ix = CREATE INDEX ix ON public.t USING btree (a)"]);
        let actual = catalog(&["t: table"]);
        assert_eq!(
            expected.first_difference(&actual),
            Some(CatalogDifference::Missing("t: index ix = CREATE INDEX ix ON public.t USING btree (a)".into()))
        );
    }

    #[test]
    fn an_unexpected_fact_is_named() {
        let expected = catalog(&["t: table"]);
        let actual = catalog(&["t: table", "t: column 02 extra text NULL"]);
        let difference = expected.first_difference(&actual).unwrap();
        assert_eq!(difference, CatalogDifference::Unexpected("t: column 02 extra text NULL".into()));
        assert_eq!(difference.to_string(), "unexpected `t: column 02 extra text NULL`");
    }

    #[test]
    fn a_changed_definition_shows_both_sides() {
        let expected = catalog(&["t: constraint c = CHECK ((a > 0))", "t: column 01 a integer NOT NULL"]);
        let actual = catalog(&["t: constraint c = CHECK ((a >= 0))", "t: column 01 a integer NOT NULL"]);
        assert_eq!(
            expected.first_difference(&actual),
            Some(CatalogDifference::Changed {
                expected: "t: constraint c = CHECK ((a > 0))".into(),
                found: "t: constraint c = CHECK ((a >= 0))".into(),
            })
        );
        let expected = catalog(&["t: column 01 a integer NOT NULL"]);
        let actual = catalog(&["t: column 01 a integer NULL"]);
        assert!(matches!(expected.first_difference(&actual), Some(CatalogDifference::Changed { .. })));
    }

    #[test]
    fn one_role_drops_the_separate_application_privileges() {
        let expected = catalog(&["t: privileges app = SELECT", "t: privileges ddl = SELECT, INSERT", "t: table"]);
        assert_eq!(expected.clone().for_roles("app", "ddl").lines().len(), 3);
        assert_eq!(expected.for_roles("same", "same").lines(), &["t: privileges ddl = SELECT, INSERT", "t: table"]);
    }

    #[test]
    fn the_expected_upstream_catalog_covers_every_upstream_table() {
        let expected = Catalog::expected_upstream();
        for table in [
            "alembic_version",
            "dd_check_definitions",
            "dd_preflight_log",
            "dd_run_attempts",
            "dd_run_results",
            "dd_run_slot_state",
            "dd_watermark_state",
            "dd_watermark_events",
            "dd_index_warning_state",
        ] {
            assert!(expected.lines().contains(&format!("{table}: table")), "{table}");
            assert!(expected.lines().iter().any(|line| line.starts_with(&format!("{table}: privileges app = "))));
        }
        assert!(
            !expected
                .lines()
                .iter()
                .any(|line| line.contains("privileges app") && (line.contains("DELETE") || line.contains("TRUNCATE")))
        );
    }
}
