//! What the application role may do on the backend's tables, against what migrations grant
//! it (SPEC §3): `doctor` words the gaps.

use crate::error::Error;
use crate::store::Store;

/// One privilege gap on a backend table or sequence, as the application role sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GrantGap {
    /// No `USAGE` on schema `public`.
    SchemaUsage,
    /// Privileges the role needs and lacks on `relation`.
    Missing {
        /// The table or sequence.
        relation: String,
        /// `SELECT`, `INSERT`, `UPDATE`, `USAGE`, as needed.
        privileges: Vec<&'static str>,
    },
    /// Privileges the role holds and never needs on `relation` (`DELETE`, `TRUNCATE`).
    Extra {
        /// The table.
        relation: String,
        /// The privileges.
        privileges: Vec<&'static str>,
    },
}

const PRIVILEGES: &str = "SELECT c.relname::text, c.relkind::text, \
        has_table_privilege(c.oid, 'SELECT'), has_table_privilege(c.oid, 'INSERT'), \
        has_table_privilege(c.oid, 'UPDATE'), has_table_privilege(c.oid, 'DELETE'), \
        has_table_privilege(c.oid, 'TRUNCATE'), \
        CASE WHEN c.relkind = 'S' THEN has_sequence_privilege(c.oid, 'USAGE') ELSE true END \
   FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace \
  WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p', 'S') \
    AND (c.relname LIKE 'dd\\_%' OR c.relname LIKE 'datadiff\\_%' OR c.relname = 'alembic_version') \
  ORDER BY c.relname";

impl Store {
    /// The application role's privilege gaps on the backend's tables and sequences: what it
    /// needs (USAGE on `public`; SELECT, INSERT, UPDATE on data tables; SELECT on the two
    /// version tables; USAGE, SELECT on sequences) and lacks, and DELETE or TRUNCATE it holds.
    /// Empty when the grants are exactly what migrations give.
    pub fn application_grant_gaps(&self) -> Result<Vec<GrantGap>, Error> {
        let mut client = self.connection()?;
        let mut gaps = Vec::new();
        let usage: bool = client
            .query_one("SELECT has_schema_privilege('public', 'USAGE')", &[])
            .and_then(|row| row.try_get(0))
            .map_err(Error::query("reading the application role's privileges"))?;
        if !usage {
            gaps.push(GrantGap::SchemaUsage);
        }
        let rows = client.query(PRIVILEGES, &[]).map_err(Error::query("reading the application role's privileges"))?;
        for row in rows {
            let read = |index: usize| row.try_get::<_, bool>(index);
            let (relation, kind): (String, String) = (row.get(0), row.get(1));
            let has = [read(2), read(3), read(4), read(5), read(6), read(7)]
                .into_iter()
                .collect::<Result<Vec<bool>, _>>()
                .map_err(Error::query("reading the application role's privileges"))?;
            let (select, insert, update, delete, truncate, sequence_usage) =
                (has[0], has[1], has[2], has[3], has[4], has[5]);
            let sequence = kind == "S";
            let read_only = relation == "alembic_version" || relation == "datadiff_schema_migrations";
            let needed: &[(&'static str, bool)] = if sequence {
                &[("USAGE", sequence_usage), ("SELECT", select)]
            } else if read_only {
                &[("SELECT", select)]
            } else {
                &[("SELECT", select), ("INSERT", insert), ("UPDATE", update)]
            };
            let missing: Vec<&'static str> = needed.iter().filter(|(_, has)| !has).map(|(name, _)| *name).collect();
            if !missing.is_empty() {
                gaps.push(GrantGap::Missing { relation: relation.clone(), privileges: missing });
            }
            let extra: Vec<&'static str> = [("DELETE", delete && !sequence), ("TRUNCATE", truncate && !sequence)]
                .iter()
                .filter(|(_, has)| *has)
                .map(|(name, _)| *name)
                .collect();
            if !extra.is_empty() {
                gaps.push(GrantGap::Extra { relation, privileges: extra });
            }
        }
        Ok(gaps)
    }
}
