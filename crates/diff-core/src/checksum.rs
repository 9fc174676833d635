//! `row_checksum`: per column pair, how both sides turn a value into the same text, and the
//! PostgreSQL expression that hashes every row of the window into one sum (config note §2.4).
//!
//! # The expression
//!
//! Each column's value becomes text by its *kind* (the source column's family; a `date` is
//! hashed as a timestamp so that it matches a target `timestamp`):
//!
//! | kind | text of `c` |
//! |---|---|
//! | string | `CAST(c AS TEXT)` |
//! | exact_numeric | `CAST(ROUND(c * 10^scale, 0) AS DECIMAL(38, 0))::TEXT`, the factor written out (`* 100`) |
//! | boolean | `CASE WHEN c IS NULL THEN NULL WHEN c THEN '1' ELSE '0' END` |
//! | timestamp | `TO_CHAR(c, 'YYYY-MM-DD HH24:MI:SS.US')` (the session's TimeZone is UTC) |
//! | time | `TO_CHAR(c, 'HH24:MI:SS.US')` |
//! | binary | `ENCODE(c, 'hex')` |
//!
//! Then per field `CASE WHEN <text> IS NULL THEN MD5('N') ELSE MD5(CONCAT('V', <text>)) END`
//! (so NULL, the empty string and `false` all hash differently); the row payload is the
//! `CONCAT` of the field hashes in pair order (key and timestamp first); the row's integer is
//! the low 48 bits of `MD5(payload)` — hex digits 21–32, `('x' || SUBSTRING(MD5(payload),
//! 21))::bit(48)::bigint` — minus 140737488355327 ((2⁴⁸−1) div 2) so sums centre on zero; the
//! check's value is the `SUM`, a `numeric` canonicalised to an integer string.
//!
//! The text is exactly PipelineWise's, so the sums agree with a PipelineWise run on the same
//! rows, and a source fingerprint matches.

use std::fmt;

use crate::column::{CatalogColumn, ColumnPair};
use crate::error::Side;
use crate::family::{TypeFamily, is_integer_name};
use crate::query::{IdentifierError, quote_ident};

/// `(2^48 - 1) div 2`, subtracted from every row's 48-bit integer.
pub const CHECKSUM_OFFSET: i64 = ((1_i64 << 48) - 1) / 2;

/// How a column's values are turned into text before hashing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ChecksumKind {
    /// Scaled to an integer at the pair's scale.
    ExactNumeric,
    /// As text.
    String,
    /// `'1'` / `'0'`, NULL kept NULL.
    Boolean,
    /// `YYYY-MM-DD HH24:MI:SS.US` (dates included).
    Timestamp,
    /// `HH24:MI:SS.US`.
    Time,
    /// Lowercase hex.
    Binary,
}

impl ChecksumKind {
    /// The family name it is spelt by (`exact_numeric`, `timestamp`, ...).
    pub fn as_str(self) -> &'static str {
        self.family().as_str()
    }

    fn family(self) -> TypeFamily {
        match self {
            ChecksumKind::ExactNumeric => TypeFamily::ExactNumeric,
            ChecksumKind::String => TypeFamily::String,
            ChecksumKind::Boolean => TypeFamily::Boolean,
            ChecksumKind::Timestamp => TypeFamily::Timestamp,
            ChecksumKind::Time => TypeFamily::Time,
            ChecksumKind::Binary => TypeFamily::Binary,
        }
    }
}

impl fmt::Display for ChecksumKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why `row_checksum` cannot compare a column. The check's result is then ERROR with this text
/// (PipelineWise's), and the other metrics still run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum UnsupportedComparison {
    /// The families are not compatible (a missing column included). The text starts with
    /// PipelineWise's; datadiff adds `detail`: both sides' types (or which side lacks the
    /// column) and what to do.
    #[error(
        "row_checksum column '{column}' has incompatible source and target types ({source_family}, {target_family}){detail}"
    )]
    Incompatible {
        /// The logical name.
        column: String,
        /// The source family.
        source_family: TypeFamily,
        /// The target family.
        target_family: TypeFamily,
        /// `: <both types or the missing side>; <fix>`, or empty.
        detail: String,
    },
    /// An exact numeric column without a declared scale on one side (and not an integer type).
    /// The text starts with PipelineWise's (`row_checksum column '<c>' needs declared numeric
    /// scales`); datadiff adds both sides' types and what to do.
    #[error(
        "row_checksum column '{column}' needs declared numeric scales: {source_type} on the source, {target_type} on the target; {fix}"
    )]
    NeedsScales {
        /// The logical name.
        column: String,
        /// The source column's type (`numeric(12,2)`).
        source_type: String,
        /// The target column's type (`double precision`).
        target_type: String,
        /// What the user can do about it.
        fix: String,
    },
    /// A family that has no stable text form: floats, JSON, arrays, unknown types.
    #[error("row_checksum column '{column}' has unsupported type family '{family}'")]
    UnsupportedFamily {
        /// The logical name.
        column: String,
        /// The source family.
        family: TypeFamily,
    },
}

/// How one column pair is hashed on both sides.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChecksumColumn {
    /// The logical name.
    pub logical_name: String,
    /// The resolved source column name.
    pub source_name: String,
    /// The resolved target column name.
    pub target_name: String,
    /// The kind, shared by both sides.
    pub kind: ChecksumKind,
    /// For exact numerics, the larger of the two declared scales (rounding to the narrower
    /// one would let a target that lost precision hash like its source); 0 otherwise.
    pub scale: i32,
}

impl ChecksumColumn {
    /// The column name on `side`.
    pub fn name(&self, side: Side) -> &str {
        match side {
            Side::Source => &self.source_name,
            Side::Target => &self.target_name,
        }
    }

    /// The PostgreSQL text expression of this column on `side` (the table above).
    pub fn postgres_text(&self, side: Side) -> Result<String, IdentifierError> {
        let name = quote_ident(self.name(side))?;
        Ok(match self.kind {
            ChecksumKind::String => format!("CAST({name} AS TEXT)"),
            ChecksumKind::ExactNumeric => {
                format!("CAST(ROUND({name} * {}, 0) AS DECIMAL(38, 0))::TEXT", power_of_ten(self.scale))
            }
            ChecksumKind::Boolean => format!("CASE WHEN {name} IS NULL THEN NULL WHEN {name} THEN '1' ELSE '0' END"),
            ChecksumKind::Timestamp => format!("TO_CHAR({name}, 'YYYY-MM-DD HH24:MI:SS.US')"),
            ChecksumKind::Time => format!("TO_CHAR({name}, 'HH24:MI:SS.US')"),
            ChecksumKind::Binary => format!("ENCODE({name}, 'hex')"),
        })
    }
}

/// `10^scale` as a numeric literal: `1`, `100`; a negative scale (PostgreSQL 15 allows
/// `numeric(5, -2)`) gives `0.01`, the value Python's `10 ** -2` has.
pub(crate) fn power_of_ten(scale: i32) -> String {
    let digits = scale.unsigned_abs() as usize;
    if scale >= 0 { format!("1{}", "0".repeat(digits)) } else { format!("0.{}1", "0".repeat(digits - 1)) }
}

/// A column's scale for the checksum: the declared one, 0 for an integer type that declares
/// none, `None` otherwise.
fn declared_scale(column: &CatalogColumn) -> Option<i32> {
    column.numeric_scale.or_else(|| is_integer_name(&column.lookup_name()).then_some(0))
}

/// The checksum descriptors of every column pair, in pair order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChecksumPlan {
    columns: Vec<ChecksumColumn>,
}

impl ChecksumPlan {
    /// Describes every pair, or the first reason one cannot be checksummed. Per pair, in this
    /// order: the families must be compatible; the kind is the source family (`date` hashed as
    /// `timestamp`); an exact numeric needs a scale on both sides (an integer type without one
    /// counts as 0) and uses the larger; a kind outside exact numeric, string, boolean, date,
    /// timestamp, time and binary is unsupported.
    pub fn build(pairs: &[ColumnPair]) -> Result<ChecksumPlan, UnsupportedComparison> {
        pairs.iter().map(describe).collect::<Result<Vec<_>, _>>().map(|columns| ChecksumPlan { columns })
    }

    /// The descriptors, in pair order.
    pub fn columns(&self) -> &[ChecksumColumn] {
        &self.columns
    }

    /// The `SUM(...)` aggregate over the window's rows on `side` (see the module docs).
    pub fn postgres_expression(&self, side: Side) -> Result<String, IdentifierError> {
        let field_hashes = self
            .columns
            .iter()
            .map(|column| {
                let text = column.postgres_text(side)?;
                Ok(format!("CASE WHEN {text} IS NULL THEN MD5('N') ELSE MD5(CONCAT('V', {text})) END"))
            })
            .collect::<Result<Vec<_>, IdentifierError>>()?;
        let payload = format!("CONCAT({})", field_hashes.join(", "));
        Ok(format!("SUM((('x' || SUBSTRING(MD5({payload}), 21))::bit(48)::bigint - {CHECKSUM_OFFSET}))"))
    }
}

fn describe(pair: &ColumnPair) -> Result<ChecksumColumn, UnsupportedComparison> {
    let column = || pair.logical_name.clone();
    let (source_family, target_family) = (pair.source_family(), pair.target_family());
    let name = &pair.logical_name;
    let (Some(source), Some(target)) = (&pair.source, &pair.target) else {
        let missing = match (&pair.source, &pair.target) {
            (None, None) => "neither table has it".to_owned(),
            (None, Some(_)) => "the source table has no such column".to_owned(),
            _ => "the target table has no such column (target-postgres creates lower-cased names)".to_owned(),
        };
        let detail = format!(": {missing}; check compare_columns against both tables");
        return Err(UnsupportedComparison::Incompatible { column: column(), source_family, target_family, detail });
    };
    if !TypeFamily::compatible(source_family, target_family) {
        let detail = format!(
            ": {} on the source, {} on the target; the two cannot hash alike: fix the target column's type, or \
             leave {name} out of compare_columns",
            source.type_text(),
            target.type_text()
        );
        return Err(UnsupportedComparison::Incompatible { column: column(), source_family, target_family, detail });
    }
    let (kind, scale) = match source_family {
        TypeFamily::ExactNumeric => match (declared_scale(source), declared_scale(target)) {
            (Some(source), Some(target)) => (ChecksumKind::ExactNumeric, source.max(target)),
            (source_scale, _) => {
                let name = &pair.logical_name;
                let fix = match source_scale {
                    None => format!(
                        "the source's {} declares no scale: declare one (numeric(p,s)), or leave {name} out of \
                         compare_columns",
                        source.type_text()
                    ),
                    Some(scale) if target_family == TypeFamily::ApproximateNumeric => format!(
                        "row_checksum hashes exact numbers at a declared scale and the target's {} declares none \
                         (target-postgres writes numeric as double precision). Compare {name} with row_diff instead \
                         (datadiff.yml checks.<check>.row_diff; it reads the target at the source's scale {scale}) \
                         and drop row_checksum from checks, or leave {name} out of compare_columns",
                        target.type_text()
                    ),
                    Some(scale) => format!(
                        "the target's {} declares no scale: give the target column one (numeric(p,{scale})), or \
                         leave {name} out of compare_columns",
                        target.type_text()
                    ),
                };
                return Err(UnsupportedComparison::NeedsScales {
                    column: column(),
                    source_type: source.type_text(),
                    target_type: target.type_text(),
                    fix,
                });
            }
        },
        TypeFamily::String => (ChecksumKind::String, 0),
        TypeFamily::Boolean => (ChecksumKind::Boolean, 0),
        TypeFamily::Date | TypeFamily::Timestamp => (ChecksumKind::Timestamp, 0),
        TypeFamily::Time => (ChecksumKind::Time, 0),
        TypeFamily::Binary => (ChecksumKind::Binary, 0),
        family => return Err(UnsupportedComparison::UnsupportedFamily { column: column(), family }),
    };
    Ok(ChecksumColumn {
        logical_name: pair.logical_name.clone(),
        source_name: source.name.clone(),
        target_name: target.name.clone(),
        kind,
        scale,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::column::tests::column;

    fn pair(logical: &str, source: Option<CatalogColumn>, target: Option<CatalogColumn>) -> ColumnPair {
        ColumnPair { logical_name: logical.to_owned(), source, target }
    }

    fn same(name: &str, data_type: &str) -> ColumnPair {
        pair(name, Some(column(name, data_type)), Some(column(name, data_type)))
    }

    fn scaled(name: &str, data_type: &str, scale: Option<i32>) -> CatalogColumn {
        CatalogColumn { numeric_scale: scale, ..column(name, data_type) }
    }

    fn error(pairs: &[ColumnPair]) -> String {
        ChecksumPlan::build(pairs).unwrap_err().to_string()
    }

    #[test]
    fn offset_is_half_the_48_bit_mask() {
        assert_eq!(CHECKSUM_OFFSET, 140_737_488_355_327);
    }

    #[test]
    fn checksum_rejects_approximate_and_missing_columns() {
        assert_eq!(
            error(&[pair("status", None, None)]),
            "row_checksum column 'status' has incompatible source and target types (missing, missing): neither \
             table has it; check compare_columns against both tables"
        );
        assert_eq!(
            error(&[pair("status", Some(column("status", "text")), None)]),
            "row_checksum column 'status' has incompatible source and target types (string, missing): the target \
             table has no such column (target-postgres creates lower-cased names); check compare_columns against \
             both tables"
        );
        assert_eq!(
            error(&[same("ratio", "double precision")]),
            "row_checksum column 'ratio' has unsupported type family 'approximate_numeric'"
        );
        assert_eq!(
            error(&[same("doc", "jsonb")]),
            "row_checksum column 'doc' has unsupported type family 'semistructured'"
        );
        assert_eq!(
            error(&[same("span", "interval")]),
            "row_checksum column 'span' has unsupported type family 'unknown'"
        );
        assert_eq!(
            error(&[same("ok", "text"), pair("flag", Some(column("flag", "boolean")), Some(column("flag", "text")))]),
            "row_checksum column 'flag' has incompatible source and target types (boolean, string): boolean on the \
             source, text on the target; the two cannot hash alike: fix the target column's type, or leave flag out \
             of compare_columns"
        );
    }

    #[test]
    fn exact_numeric_needs_declared_scales_except_for_integers() {
        // PipelineWise's text first, then both sides' types and the fix.
        let numeric_without_scale =
            pair("amount", Some(scaled("amount", "numeric", None)), Some(scaled("amount", "numeric", Some(2))));
        assert_eq!(
            error(&[numeric_without_scale]),
            "row_checksum column 'amount' needs declared numeric scales: numeric on the source, numeric(?,2) on the \
             target; the source's numeric declares no scale: declare one (numeric(p,s)), or leave amount out of \
             compare_columns"
        );
        // Exact against approximate is schema-compatible but a double has no declared scale:
        // PipelineWise's target-postgres writes numeric(12,2) as double precision.
        let against_double = pair(
            "amount",
            Some(CatalogColumn { numeric_precision: Some(12), ..scaled("amount", "numeric", Some(2)) }),
            Some(column("amount", "double precision")),
        );
        let text = error(&[against_double]);
        assert!(text.starts_with("row_checksum column 'amount' needs declared numeric scales: "), "{text}");
        assert!(text.contains("numeric(12,2) on the source, double precision on the target;"), "{text}");
        assert!(text.contains("the target's double precision declares none"), "{text}");
        assert!(text.contains("Compare amount with row_diff instead"), "{text}");
        assert!(text.contains("at the source's scale 2"), "{text}");
        let target_without_scale = pair(
            "amount",
            Some(CatalogColumn { numeric_precision: Some(12), ..scaled("amount", "numeric", Some(2)) }),
            Some(scaled("amount", "numeric", None)),
        );
        assert!(error(&[target_without_scale]).ends_with(
            "numeric(12,2) on the source, numeric on the target; the target's numeric declares no scale: give the \
             target column one (numeric(p,2)), or leave amount out of compare_columns"
        ));
        // Integer types without a scale (MySQL, Snowflake report none) count as 0.
        let plan = ChecksumPlan::build(&[pair(
            "id",
            Some(scaled("id", "bigint", None)),
            Some(scaled("id", "NUMBER", Some(0))),
        )])
        .unwrap();
        assert_eq!((plan.columns()[0].kind, plan.columns()[0].scale), (ChecksumKind::ExactNumeric, 0));
    }

    #[test]
    fn checksum_numeric_scale_keeps_the_wider_precision() {
        let plan = ChecksumPlan::build(&[pair(
            "amount",
            Some(scaled("amount", "numeric", Some(4))),
            Some(scaled("amount", "numeric", Some(2))),
        )])
        .unwrap();
        assert_eq!(plan.columns()[0].scale, 4);
        for side in [Side::Source, Side::Target] {
            assert_eq!(
                plan.columns()[0].postgres_text(side).unwrap(),
                "CAST(ROUND(\"amount\" * 10000, 0) AS DECIMAL(38, 0))::TEXT"
            );
        }
        let reversed = ChecksumPlan::build(&[pair(
            "amount",
            Some(scaled("amount", "numeric", Some(2))),
            Some(scaled("amount", "numeric", Some(4))),
        )])
        .unwrap();
        assert_eq!(reversed.columns()[0].scale, 4);
    }

    #[test]
    fn kinds_follow_the_source_family_and_dates_hash_as_timestamps() {
        let plan = ChecksumPlan::build(&[
            pair("day", Some(column("day", "date")), Some(column("day", "timestamp without time zone"))),
            same("at", "time without time zone"),
            same("raw", "bytea"),
            same("ok", "boolean"),
            same("name", "character varying"),
            same("uid", "uuid"),
        ])
        .unwrap();
        let kinds: Vec<_> = plan.columns().iter().map(|c| c.kind).collect();
        assert_eq!(
            kinds,
            [
                ChecksumKind::Timestamp,
                ChecksumKind::Time,
                ChecksumKind::Binary,
                ChecksumKind::Boolean,
                ChecksumKind::String,
                ChecksumKind::String
            ]
        );
        let text = |index: usize| plan.columns()[index].postgres_text(Side::Target).unwrap();
        assert_eq!(text(0), "TO_CHAR(\"day\", 'YYYY-MM-DD HH24:MI:SS.US')");
        assert_eq!(text(1), "TO_CHAR(\"at\", 'HH24:MI:SS.US')");
        assert_eq!(text(2), "ENCODE(\"raw\", 'hex')");
        assert_eq!(text(4), "CAST(\"name\" AS TEXT)");
    }

    #[test]
    fn boolean_null_is_distinguishable_from_false() {
        let plan = ChecksumPlan::build(&[same("ok", "boolean")]).unwrap();
        let text = plan.columns()[0].postgres_text(Side::Source).unwrap();
        // NULL must stay NULL (then hashed as 'N'); an ELSE '0' alone would hash it as false.
        assert_eq!(text, "CASE WHEN \"ok\" IS NULL THEN NULL WHEN \"ok\" THEN '1' ELSE '0' END");
    }

    #[test]
    fn expression_uses_each_sides_names_and_upstream_shape() {
        let plan = ChecksumPlan::build(&[
            pair("ID", Some(scaled("ID", "bigint", Some(0))), Some(scaled("id", "bigint", Some(0)))),
            pair("Note\"s", Some(column("Note\"s", "text")), Some(column("note\"s", "text"))),
        ])
        .unwrap();
        let source = plan.postgres_expression(Side::Source).unwrap();
        assert_eq!(
            source,
            "SUM((('x' || SUBSTRING(MD5(CONCAT(\
             CASE WHEN CAST(ROUND(\"ID\" * 1, 0) AS DECIMAL(38, 0))::TEXT IS NULL THEN MD5('N') \
             ELSE MD5(CONCAT('V', CAST(ROUND(\"ID\" * 1, 0) AS DECIMAL(38, 0))::TEXT)) END, \
             CASE WHEN CAST(\"Note\"\"s\" AS TEXT) IS NULL THEN MD5('N') \
             ELSE MD5(CONCAT('V', CAST(\"Note\"\"s\" AS TEXT))) END\
             )), 21))::bit(48)::bigint - 140737488355327))"
        );
        let target = plan.postgres_expression(Side::Target).unwrap();
        assert!(target.contains("ROUND(\"id\" * 1, 0)") && target.contains("CAST(\"note\"\"s\" AS TEXT)"), "{target}");
        assert!(!target.contains("\"ID\""));
    }

    #[test]
    fn factor_is_a_literal_power_of_ten() {
        assert_eq!(power_of_ten(0), "1");
        assert_eq!(power_of_ten(2), "100");
        assert_eq!(power_of_ten(6), "1000000");
        assert_eq!(power_of_ten(-1), "0.1");
        assert_eq!(power_of_ten(-3), "0.001");
    }

    #[test]
    fn kind_names_are_family_names() {
        assert_eq!(ChecksumKind::ExactNumeric.to_string(), "exact_numeric");
        assert_eq!(ChecksumKind::Timestamp.as_str(), "timestamp");
    }
}
