//! Shared fixtures.

use datadiff_testkit::{Database, SUPERUSER, shared_cluster};

/// The superuser's URL for a database of the shared cluster.
pub(crate) fn superuser_url(database: &Database<'_>) -> String {
    database.url(SUPERUSER, shared_cluster().superuser_password())
}
