//! Type families: the coarse classes PipelineWise sorts catalog types into, so that a source
//! type and the type a Singer target replicated it to can be judged compatible (config note
//! §2.3).
//!
//! A family is decided from a column's *lookup name*: its `data_type` lower-cased, except that
//! a MySQL `tinyint(1)` is a boolean and a `USER-DEFINED` or `ARRAY` column is looked up by its
//! `udt_name` (so `geometry` is semistructured, `_int4` — PostgreSQL's name for `int4[]` — is
//! semistructured, and an enum or `citext` is unknown).

use std::fmt;
use std::str::FromStr;

use crate::run::UnknownName;

/// The family of a column type, spelt as PipelineWise stores it in the `type_family` field of
/// `schema_compatibility` evidence.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TypeFamily {
    /// Integers and exact decimals (`bigint`, `numeric`, `decimal`, ...).
    ExactNumeric,
    /// Floating point (`real`, `double precision`, ...).
    ApproximateNumeric,
    /// Text, and types that replicate as text (`uuid`, MySQL `enum` and blobs).
    String,
    /// `boolean`, `bit`, MySQL `tinyint(1)`.
    Boolean,
    /// `date`.
    Date,
    /// Anything whose name starts with `timestamp`, and MySQL `datetime`.
    Timestamp,
    /// Anything else whose name starts with `time`.
    Time,
    /// `bytea`, `binary`, `varbinary`.
    Binary,
    /// JSON, arrays, geometries, Snowflake `variant`/`object`.
    Semistructured,
    /// The column does not exist on this side.
    Missing,
    /// Every other type (`interval`, `inet`, `money`, `xml`, enums, ...).
    Unknown,
}

const EXACT_NUMERIC: &[&str] = &[
    "bigint",
    "bigserial",
    "decimal",
    "dec",
    "fixed",
    "int",
    "integer",
    "mediumint",
    "number",
    "numeric",
    "serial",
    "smallint",
    "smallserial",
    "tinyint",
];
const APPROXIMATE_NUMERIC: &[&str] = &["double", "double precision", "float", "float4", "float8", "real"];
const STRING: &[&str] = &[
    "blob",
    "bpchar",
    "char",
    "character",
    "character varying",
    "enum",
    "longblob",
    "mediumblob",
    "string",
    "text",
    "tinyblob",
    "uuid",
    "varchar",
];
const BOOLEAN: &[&str] = &["bool", "boolean", "bit"];
const BINARY: &[&str] = &["binary", "bytea", "varbinary"];
const SEMISTRUCTURED: &[&str] = &[
    "array",
    "geometry",
    "geometrycollection",
    "json",
    "jsonb",
    "linestring",
    "multilinestring",
    "multipoint",
    "multipolygon",
    "object",
    "point",
    "polygon",
    "variant",
];

/// Integer type names: a NULL `numeric_scale` on one of these means scale 0 (MySQL and
/// Snowflake report no scale for integers; PostgreSQL reports 0).
const INTEGER: &[&str] =
    &["bigint", "bigserial", "int", "integer", "mediumint", "serial", "smallint", "smallserial", "tinyint"];

/// The name a column's family is looked up by: `data_type` lower-cased; `boolean` for a
/// `tinyint` whose `udt_name` (MySQL's `COLUMN_TYPE`) starts with `tinyint(1)`; the lower-cased
/// `udt_name` for `user-defined` and `array` columns that have one.
pub fn lookup_name(data_type: &str, udt_name: Option<&str>) -> String {
    let data_type = data_type.to_lowercase();
    let udt_name = udt_name.unwrap_or_default().to_lowercase();
    if data_type == "tinyint" && udt_name.starts_with("tinyint(1)") {
        return "boolean".to_owned();
    }
    if (data_type == "user-defined" || data_type == "array") && !udt_name.is_empty() {
        return udt_name;
    }
    data_type
}

/// Whether a lookup name is an integer type (see [`lookup_name`]).
pub(crate) fn is_integer_name(name: &str) -> bool {
    INTEGER.contains(&name)
}

impl TypeFamily {
    /// Every family, in the order of the config note's table.
    pub const ALL: [TypeFamily; 11] = [
        TypeFamily::ExactNumeric,
        TypeFamily::ApproximateNumeric,
        TypeFamily::String,
        TypeFamily::Boolean,
        TypeFamily::Date,
        TypeFamily::Timestamp,
        TypeFamily::Time,
        TypeFamily::Binary,
        TypeFamily::Semistructured,
        TypeFamily::Missing,
        TypeFamily::Unknown,
    ];

    /// The family of an existing column from its catalog `data_type` and `udt_name`.
    pub fn classify(data_type: &str, udt_name: Option<&str>) -> TypeFamily {
        TypeFamily::of_lookup_name(&lookup_name(data_type, udt_name))
    }

    /// The family of a lookup name (see [`lookup_name`]). The timestamp test comes before the
    /// time test, so `timestamp with time zone` is a timestamp and `time with time zone` a
    /// time.
    pub fn of_lookup_name(name: &str) -> TypeFamily {
        if EXACT_NUMERIC.contains(&name) {
            TypeFamily::ExactNumeric
        } else if APPROXIMATE_NUMERIC.contains(&name) {
            TypeFamily::ApproximateNumeric
        } else if STRING.contains(&name) {
            TypeFamily::String
        } else if BOOLEAN.contains(&name) {
            TypeFamily::Boolean
        } else if name == "date" {
            TypeFamily::Date
        } else if name.starts_with("timestamp") || name == "datetime" {
            TypeFamily::Timestamp
        } else if name.starts_with("time") {
            TypeFamily::Time
        } else if BINARY.contains(&name) {
            TypeFamily::Binary
        } else if SEMISTRUCTURED.contains(&name) || name.starts_with('_') {
            TypeFamily::Semistructured
        } else {
            TypeFamily::Unknown
        }
    }

    /// Whether a source column of family `source` may be replicated as a target column of
    /// family `target`: the same family (`unknown` ↔ `unknown` included), exact ↔ approximate
    /// numeric in either direction, or a source `date` stored as a target `timestamp` (Singer
    /// targets do that; the reverse is not allowed). A missing column is never compatible.
    pub fn compatible(source: TypeFamily, target: TypeFamily) -> bool {
        use TypeFamily::*;
        match (source, target) {
            (Missing, _) | (_, Missing) => false,
            (ExactNumeric | ApproximateNumeric, ExactNumeric | ApproximateNumeric) => true,
            (Date, Timestamp) => true,
            (source, target) => source == target,
        }
    }

    /// The stored spelling, e.g. `"exact_numeric"`.
    pub fn as_str(self) -> &'static str {
        match self {
            TypeFamily::ExactNumeric => "exact_numeric",
            TypeFamily::ApproximateNumeric => "approximate_numeric",
            TypeFamily::String => "string",
            TypeFamily::Boolean => "boolean",
            TypeFamily::Date => "date",
            TypeFamily::Timestamp => "timestamp",
            TypeFamily::Time => "time",
            TypeFamily::Binary => "binary",
            TypeFamily::Semistructured => "semistructured",
            TypeFamily::Missing => "missing",
            TypeFamily::Unknown => "unknown",
        }
    }
}

impl FromStr for TypeFamily {
    type Err = UnknownName;

    fn from_str(text: &str) -> Result<TypeFamily, UnknownName> {
        TypeFamily::ALL
            .into_iter()
            .find(|family| family.as_str() == text)
            .ok_or_else(|| UnknownName { vocabulary: "type family", text: text.to_owned() })
    }
}

impl fmt::Display for TypeFamily {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::TypeFamily::*;
    use super::*;

    fn family(data_type: &str) -> TypeFamily {
        TypeFamily::classify(data_type, None)
    }

    #[test]
    fn postgres_catalog_types_fall_into_their_families() {
        let cases = [
            ("bigint", ExactNumeric),
            ("integer", ExactNumeric),
            ("smallint", ExactNumeric),
            ("numeric", ExactNumeric),
            ("double precision", ApproximateNumeric),
            ("real", ApproximateNumeric),
            ("text", String),
            ("character varying", String),
            ("character", String),
            ("uuid", String),
            ("boolean", Boolean),
            ("bit", Boolean),
            ("date", Date),
            ("timestamp with time zone", Timestamp),
            ("timestamp without time zone", Timestamp),
            ("time without time zone", Time),
            ("time with time zone", Time),
            ("bytea", Binary),
            ("json", Semistructured),
            ("jsonb", Semistructured),
            ("interval", Unknown),
            ("inet", Unknown),
            ("money", Unknown),
            ("xml", Unknown),
            ("bit varying", Unknown),
            ("oid", Unknown),
        ];
        for (data_type, expected) in cases {
            assert_eq!(family(data_type), expected, "{data_type}");
        }
    }

    #[test]
    fn other_routes_types_fall_into_their_families() {
        let cases = [
            ("NUMBER", ExactNumeric),
            ("TIMESTAMP_NTZ", Timestamp),
            ("TIMESTAMP_TZ", Timestamp),
            ("VARCHAR", String),
            ("VARIANT", Semistructured),
            ("datetime", Timestamp),
            ("mediumint", ExactNumeric),
            ("longblob", String),
            ("varbinary", Binary),
            ("enum", String),
            ("geometry", Semistructured),
            ("FLOAT", ApproximateNumeric),
        ];
        for (data_type, expected) in cases {
            assert_eq!(family(data_type), expected, "{data_type}");
        }
    }

    #[test]
    fn lookup_name_uses_udt_for_user_defined_and_array_and_tinyint_one_for_boolean() {
        assert_eq!(lookup_name("tinyint", Some("tinyint(1)")), "boolean");
        assert_eq!(lookup_name("tinyint", Some("tinyint(1) unsigned")), "boolean");
        assert_eq!(lookup_name("tinyint", Some("tinyint(4)")), "tinyint");
        assert_eq!(lookup_name("USER-DEFINED", Some("geometry")), "geometry");
        assert_eq!(lookup_name("ARRAY", Some("_int4")), "_int4");
        assert_eq!(lookup_name("ARRAY", None), "array");
        assert_eq!(lookup_name("USER-DEFINED", Some("")), "user-defined");
        assert_eq!(lookup_name("integer", Some("int4")), "integer", "udt_name only for user-defined and array");

        assert_eq!(TypeFamily::classify("tinyint", Some("tinyint(1)")), Boolean);
        assert_eq!(TypeFamily::classify("tinyint", Some("tinyint(3)")), ExactNumeric);
        assert_eq!(TypeFamily::classify("ARRAY", Some("_int4")), Semistructured);
        assert_eq!(TypeFamily::classify("ARRAY", Some("_text")), Semistructured);
        assert_eq!(TypeFamily::classify("ARRAY", None), Semistructured);
        assert_eq!(TypeFamily::classify("USER-DEFINED", Some("geometry")), Semistructured);
        assert_eq!(TypeFamily::classify("USER-DEFINED", Some("citext")), Unknown);
        assert_eq!(TypeFamily::classify("USER-DEFINED", Some("mood")), Unknown, "PG enums are unknown");
        assert_eq!(TypeFamily::classify("USER-DEFINED", None), Unknown);
    }

    #[test]
    fn timestamp_is_tested_before_time() {
        assert_eq!(family("timestamp"), Timestamp);
        assert_eq!(family("timestamp(6) with time zone"), Timestamp);
        assert_eq!(family("time"), Time);
        assert_eq!(family("timetz"), Time);
        assert_eq!(family("tinytext"), Unknown);
    }

    #[test]
    fn compatibility_follows_upstream_pairs() {
        assert!(TypeFamily::compatible(ExactNumeric, ApproximateNumeric));
        assert!(TypeFamily::compatible(ApproximateNumeric, ExactNumeric));
        assert!(TypeFamily::compatible(Date, Timestamp));
        assert!(!TypeFamily::compatible(Timestamp, Date), "only a source date may become a timestamp");
        assert!(TypeFamily::compatible(Unknown, Unknown));
        assert!(TypeFamily::compatible(Semistructured, Semistructured));
        assert!(!TypeFamily::compatible(Missing, Missing));
        assert!(!TypeFamily::compatible(String, Missing));
        assert!(!TypeFamily::compatible(Missing, String));
        assert!(!TypeFamily::compatible(String, ExactNumeric));
        assert!(!TypeFamily::compatible(Boolean, String));
        for family in TypeFamily::ALL {
            assert_eq!(TypeFamily::compatible(family, family), family != Missing, "{family}");
        }
    }

    #[test]
    fn names_round_trip() {
        for family in TypeFamily::ALL {
            assert_eq!(family.as_str().parse::<TypeFamily>(), Ok(family));
        }
        assert!("EXACT_NUMERIC".parse::<TypeFamily>().is_err());
    }

    #[test]
    fn integer_names_are_exact_numeric() {
        for name in INTEGER {
            assert_eq!(TypeFamily::of_lookup_name(name), ExactNumeric, "{name}");
            assert!(is_integer_name(name));
        }
        assert!(!is_integer_name("numeric"));
        assert!(!is_integer_name("decimal"));
    }
}
