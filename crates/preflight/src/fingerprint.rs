//! `dd_preflight_log.query_fingerprint`: what the preflight vouched for.

use std::fmt;
use std::str::FromStr;

use sha2::{Digest, Sha256};

use crate::error::Error;
use datadiff_diff_core::definition::{PythonSeparators, python_json_with};

/// The text hashed for a placeholder preflight (a run that failed before any was decided).
const PLACEHOLDER_TEXT: &str = "preflight-not-built";

/// A SHA-256 hex digest (64 lowercase hex digits), as stored in the `CHAR(64)` column.
///
/// Three kinds exist, one constructor each: the source SQL of a data definition
/// ([`QueryFingerprint::of_sql`]), the scope of a metadata-only definition
/// ([`MetadataOnlyScope::fingerprint`]), and the placeholder
/// ([`QueryFingerprint::placeholder`]). It is evidence only: nothing compares it. The runner
/// hashes the `%s`-placeholder form of its source SQL (`AggregatePlan::fingerprint_sql` in
/// diff-core), which is PipelineWise's text byte for byte, so the fingerprints of the two tools
/// agree; the metadata-only and placeholder ones are identical too.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct QueryFingerprint(String);

impl QueryFingerprint {
    /// The SHA-256 of `sql` as UTF-8: the source query text, with its placeholders and without
    /// bound values. Pass the `%s`-placeholder form to match PipelineWise's fingerprints.
    pub fn of_sql(sql: &str) -> Self {
        Self::of_bytes(sql.as_bytes())
    }

    /// The fingerprint of a placeholder preflight: SHA-256 of `preflight-not-built`.
    pub fn placeholder() -> Self {
        Self::of_bytes(PLACEHOLDER_TEXT.as_bytes())
    }

    /// Checks a stored fingerprint: 64 lowercase hexadecimal digits.
    pub fn parse(text: &str) -> Result<Self, Error> {
        let well_formed = text.len() == 64 && text.bytes().all(|byte| matches!(byte, b'0'..=b'9' | b'a'..=b'f'));
        if well_formed {
            Ok(QueryFingerprint(text.to_owned()))
        } else {
            Err(Error::InvalidFingerprint { text: text.to_owned() })
        }
    }

    /// The 64 hex digits.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    fn of_bytes(bytes: &[u8]) -> Self {
        let digest = Sha256::digest(bytes);
        let mut hex = String::with_capacity(64);
        for byte in digest.iter() {
            hex.push(char::from(HEX_DIGITS[usize::from(byte >> 4)]));
            hex.push(char::from(HEX_DIGITS[usize::from(byte & 0x0f)]));
        }
        QueryFingerprint(hex)
    }
}

const HEX_DIGITS: &[u8; 16] = b"0123456789abcdef";

impl fmt::Display for QueryFingerprint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl FromStr for QueryFingerprint {
    type Err = Error;

    fn from_str(text: &str) -> Result<Self, Error> {
        Self::parse(text)
    }
}

impl TryFrom<String> for QueryFingerprint {
    type Error = Error;

    fn try_from(text: String) -> Result<Self, Error> {
        Self::parse(&text)
    }
}

impl From<QueryFingerprint> for String {
    fn from(fingerprint: QueryFingerprint) -> String {
        fingerprint.0
    }
}

/// What a metadata-only (schema-only) definition compares: the two tables and the logical
/// names of its column pairs. Its fingerprint is upstream's, byte for byte.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetadataOnlyScope {
    /// Source schema, as configured.
    pub source_schema: String,
    /// Source table, as configured.
    pub source_table: String,
    /// Target schema, as resolved for the target (upper-cased for Snowflake, for instance).
    pub target_schema: String,
    /// Target table, as resolved for the target.
    pub target_table: String,
    /// The logical names of the compared column pairs, in the definition's order.
    pub columns: Vec<String>,
}

impl MetadataOnlyScope {
    /// The payload hashed for the fingerprint: Python's `json.dumps(payload, sort_keys=True)`
    /// with its default separators (`", "` and `": "`) and ASCII escapes.
    pub fn payload_json(&self) -> String {
        let payload = serde_json::json!({
            "columns": self.columns,
            "source_schema": self.source_schema,
            "source_table": self.source_table,
            "target_schema": self.target_schema,
            "target_table": self.target_table,
        });
        python_json_with(&payload, PythonSeparators::Default)
    }

    /// SHA-256 of [`MetadataOnlyScope::payload_json`].
    pub fn fingerprint(&self) -> QueryFingerprint {
        QueryFingerprint::of_bytes(self.payload_json().as_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Expected digests below were computed with Python's hashlib and json.

    #[test]
    fn sql_fingerprint_is_the_sha256_of_the_text() {
        let sql =
            r#"SELECT COUNT(*) AS "row_count" FROM "public"."payments" WHERE "updated_at" >= %s AND "updated_at" < %s"#;
        assert_eq!(
            QueryFingerprint::of_sql(sql).as_str(),
            "375973ab01712e3a0bee6c933ac52b5da1c15e1d8d21a3eb9bc7888fbaaea34c"
        );
    }

    #[test]
    fn placeholder_fingerprint_matches_upstream() {
        assert_eq!(
            QueryFingerprint::placeholder().as_str(),
            "a6b1d1cb1fc80af3eaed07d826a028de62259650b0aa4505237d66e40e95a855"
        );
    }

    #[test]
    fn metadata_only_fingerprint_matches_the_reference_vector() {
        let scope = MetadataOnlyScope {
            source_schema: "public".to_owned(),
            source_table: "payments".to_owned(),
            target_schema: "PUBLIC".to_owned(),
            target_table: "PAYMENTS".to_owned(),
            columns: vec!["id".to_owned(), "updated_at".to_owned(), "status".to_owned()],
        };
        assert_eq!(
            scope.payload_json(),
            r#"{"columns": ["id", "updated_at", "status"], "source_schema": "public", "source_table": "payments", "target_schema": "PUBLIC", "target_table": "PAYMENTS"}"#
        );
        assert_eq!(scope.fingerprint().as_str(), "98d53590c3d16fa6c5e20fc8aa0217f919ac6dbe27f9d37bddc9e98ab1a0109c");
    }

    #[test]
    fn metadata_only_fingerprint_escapes_like_python() {
        let scope = MetadataOnlyScope {
            source_schema: "vertrieb".to_owned(),
            source_table: "Bestellungen".to_owned(),
            target_schema: "vertrieb".to_owned(),
            target_table: "bestellungen".to_owned(),
            columns: ["id", "geändert_am", "emoji 😀", "tab\tnew\nline", "quote\"back\\slash", "del\u{7f}", "ctl\u{1}"]
                .map(str::to_owned)
                .to_vec(),
        };
        assert_eq!(
            scope.payload_json(),
            r#"{"columns": ["id", "ge\u00e4ndert_am", "emoji \ud83d\ude00", "tab\tnew\nline", "quote\"back\\slash", "del\u007f", "ctl\u0001"], "source_schema": "vertrieb", "source_table": "Bestellungen", "target_schema": "vertrieb", "target_table": "bestellungen"}"#
        );
        assert_eq!(scope.fingerprint().as_str(), "f60aeaabfcc626ae03c57fcb6f923df6d05479682cf3e768e118ccef7ac8a67d");
    }

    #[test]
    fn parse_accepts_only_64_lowercase_hex_digits() {
        let good = "a6b1d1cb1fc80af3eaed07d826a028de62259650b0aa4505237d66e40e95a855";
        assert_eq!(QueryFingerprint::parse(good).map(|f| f.to_string()), Ok(good.to_owned()));
        for bad in [&good[..63], &good.to_uppercase(), &format!("{good}0"), &format!("{}g", &good[..63]), ""] {
            assert_eq!(QueryFingerprint::parse(bad), Err(Error::InvalidFingerprint { text: bad.to_owned() }));
        }
    }

    #[test]
    fn serde_round_trips_and_validates() {
        let fingerprint = QueryFingerprint::placeholder();
        let json = serde_json::to_string(&fingerprint).ok();
        assert_eq!(json.as_deref(), Some("\"a6b1d1cb1fc80af3eaed07d826a028de62259650b0aa4505237d66e40e95a855\""));
        let bad: Result<QueryFingerprint, _> = serde_json::from_str("\"xyz\"");
        assert!(bad.is_err());
    }
}
