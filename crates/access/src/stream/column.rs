//! Catalog facts about a table's columns: names, types and what family each type belongs to.

use crate::error::Error;
use crate::session::Session;
use crate::table::TableName;

/// A column as the catalog describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ColumnType {
    /// The column name, exactly as stored.
    pub name: String,
    /// The type as `format_type` prints it (`numeric(12,2)`, `character varying(40)`), the
    /// declared type for a domain.
    pub type_name: String,
    /// The family the type (a domain's base type) belongs to.
    pub family: Family,
}

/// Type families: which wire format a column arrives in and what it can be compared with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Family {
    /// `smallint`, `integer`, `bigint`.
    Integer,
    /// `numeric`/`decimal`, with its declared scale when it has one.
    Numeric {
        /// The declared scale (`numeric(p,s)`), `None` for an unconstrained `numeric`.
        scale: Option<u32>,
    },
    /// `real`.
    Float4,
    /// `double precision`.
    Float8,
    /// `text`, `character varying`, `name`.
    Text,
    /// An enum type: compared by label, as text (never a key: enums sort by declaration).
    Enum,
    /// `character(n)` (`bpchar`): trailing blanks are not significant.
    Char,
    /// `boolean`.
    Bool,
    /// `date`.
    Date,
    /// `time` (without time zone).
    Time,
    /// `timestamp` (naive, read as UTC).
    Timestamp,
    /// `timestamptz`.
    TimestampTz,
    /// `uuid`.
    Uuid,
    /// `bytea`.
    Bytes,
    /// Anything else (json, jsonb, arrays, intervals, geometric, ...): not comparable.
    Unsupported,
}

impl Family {
    /// The family of a base type, by its OID; `is_enum` for enum types.
    pub fn of(type_oid: u32, typmod: i32, is_enum: bool) -> Family {
        if is_enum {
            return Family::Enum;
        }
        match type_oid {
            20 | 21 | 23 => Family::Integer,
            1700 => Family::Numeric { scale: numeric_scale(typmod) },
            700 => Family::Float4,
            701 => Family::Float8,
            25 | 1043 | 19 => Family::Text,
            1042 => Family::Char,
            16 => Family::Bool,
            1082 => Family::Date,
            1083 => Family::Time,
            1114 => Family::Timestamp,
            1184 => Family::TimestampTz,
            2950 => Family::Uuid,
            17 => Family::Bytes,
            _ => Family::Unsupported,
        }
    }
}

/// The scale of a `numeric(p,s)` type modifier (PostgreSQL stores `((p << 16) | s) + 4`).
fn numeric_scale(typmod: i32) -> Option<u32> {
    if typmod < 4 {
        return None;
    }
    // The scale is the low 16 bits, read as a signed value since PostgreSQL 15 allows
    // negative scales; a negative scale means integral values, compared at scale 0.
    let scale = ((typmod - 4) & 0xffff) as u16 as i16;
    Some(u32::try_from(scale).unwrap_or(0))
}

/// Reads the columns of `table`, in column order. A missing or invisible table is
/// [`Error::TableNotFound`].
pub fn read_columns(session: &mut Session, table: &TableName) -> Result<Vec<ColumnType>, Error> {
    let role = session.role().to_owned();
    read_columns_with(session.client(), &role, table)
}

/// [`read_columns`] on any client; `role` names the side in errors.
pub fn read_columns_with(
    client: &mut postgres::Client,
    role: &str,
    table: &TableName,
) -> Result<Vec<ColumnType>, Error> {
    let role = role.to_owned();
    let action = format!("reading the columns of {table}");
    let found = client
        .query_opt(
            "SELECT c.oid FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace \
             WHERE n.nspname = $1 AND c.relname = $2 AND c.relkind IN ('r', 'p', 'v', 'm', 'f')",
            &[&table.schema, &table.name],
        )
        .map_err(Error::query(&role, action.clone()))?;
    let Some(found) = found else {
        return Err(Error::TableNotFound { role, table: table.to_string() });
    };
    let oid: u32 = found.get(0);
    // A domain's typmod lives on the domain (typtypmod), the column's is -1. Domains over
    // domains are resolved one level per step by the recursive query.
    let rows = client
        .query(
            "WITH RECURSIVE base(attnum, oid, typmod, depth) AS ( \
                 SELECT a.attnum, a.atttypid, a.atttypmod, 0 FROM pg_catalog.pg_attribute a \
                 WHERE a.attrelid = $1 AND a.attnum > 0 AND NOT a.attisdropped \
               UNION ALL \
                 SELECT b.attnum, t.typbasetype, t.typtypmod, b.depth + 1 FROM base b \
                 JOIN pg_catalog.pg_type t ON t.oid = b.oid WHERE t.typtype = 'd' \
             ) \
             SELECT a.attname::text, pg_catalog.format_type(a.atttypid, a.atttypmod), b.oid, \
                    CASE WHEN b.depth = 0 THEN a.atttypmod ELSE b.typmod END, \
                    t.typtype = 'e', t.typcategory = 'A' \
             FROM pg_catalog.pg_attribute a \
             JOIN base b ON b.attnum = a.attnum \
             JOIN pg_catalog.pg_type t ON t.oid = b.oid \
             WHERE a.attrelid = $1 AND t.typtype <> 'd' \
             ORDER BY a.attnum",
            &[&oid],
        )
        .map_err(Error::query(&role, action))?;
    Ok(rows
        .iter()
        .map(|row| {
            let type_oid: u32 = row.get(2);
            let is_array: bool = row.get(5);
            let family = if is_array { Family::Unsupported } else { Family::of(type_oid, row.get(3), row.get(4)) };
            ColumnType { name: row.get(0), type_name: row.get(1), family }
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numeric_typmods_carry_the_declared_scale() {
        // numeric(12,2): ((12 << 16) | 2) + 4
        assert_eq!(numeric_scale((12 << 16 | 2) + 4), Some(2));
        assert_eq!(numeric_scale((5 << 16) + 4), Some(0));
        assert_eq!(numeric_scale(-1), None);
        assert_eq!(Family::of(1700, -1, false), Family::Numeric { scale: None });
    }

    #[test]
    fn families_by_oid() {
        assert_eq!(Family::of(23, -1, false), Family::Integer);
        assert_eq!(Family::of(1042, 14, false), Family::Char);
        assert_eq!(Family::of(3802, -1, false), Family::Unsupported);
        assert_eq!(Family::of(99999, -1, true), Family::Enum);
    }
}
