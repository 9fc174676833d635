//! Shared fixtures: a source and a replica database on the shared throwaway cluster.

use datadiff_access::{Environment, TableName};
use datadiff_audit::AuditOptions;
use datadiff_testkit::{Database, SUPERUSER, shared_cluster};

/// A source and a replica database (two databases of one cluster: separate databases).
pub(crate) struct Pair {
    pub(crate) source: Database<'static>,
    pub(crate) replica: Database<'static>,
}

impl Pair {
    /// Two fresh databases, each set up with its SQL.
    pub(crate) fn new(source_sql: &str, replica_sql: &str) -> Pair {
        let cluster = shared_cluster();
        let source = cluster.fresh_database().unwrap();
        let replica = cluster.fresh_database().unwrap();
        source.client().unwrap().batch_execute(source_sql).unwrap();
        replica.client().unwrap().batch_execute(replica_sql).unwrap();
        Pair { source, replica }
    }

    /// The same SQL on both sides.
    pub(crate) fn same(sql: &str) -> Pair {
        Pair::new(sql, sql)
    }

    /// Audit options for `table` on both sides, cutover-ready, with superuser URL DSNs.
    pub(crate) fn options(&self, name: &str) -> AuditOptions {
        let mut options = AuditOptions::new(superuser_url(&self.source), superuser_url(&self.replica), table(name));
        options.cutover_ready = true;
        options
    }
}

pub(crate) fn superuser_url(database: &Database<'_>) -> String {
    database.url(SUPERUSER, shared_cluster().superuser_password())
}

pub(crate) fn table(name: &str) -> TableName {
    name.parse().unwrap()
}

/// An environment with none of libpq's variables.
pub(crate) fn no_env() -> Environment {
    Environment::from_pairs([("USER", "nobody-in-particular")])
}
