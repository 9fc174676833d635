//! The demo's MariaDB source (`tap-mysql`), when MariaDB's server programs are installed: a
//! throwaway server (the testkit's, serving TLS with a certificate from a fresh CA) holding
//! `shop.Orders`, the table replicated by the demo itself into the PostgreSQL replica as
//! PipelineWise's `target-postgres` loads a tap-mysql table, and the tap's YAML file.
//!
//! The server starts on a thread of its own while the PostgreSQL story runs, so that it costs
//! the demo almost no time; dropping [`PendingMariaDb`] or [`Shop`] stops it and removes its
//! directory (the testkit's watchdog does the same when the process dies first).

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::thread::JoinHandle;

use anyhow::Context;
use datadiff_testkit::{MariaDb, MariaDbOptions, quote_mysql_literal};
use mysql::prelude::Queryable;

use super::sandbox::Login;

/// The MariaDB database (tap-mysql's "schema") and the replica schema it is loaded into.
pub(crate) const SHOP_DATABASE: &str = "shop";
/// The tap's id.
pub(crate) const SHOP_TAP: &str = "shop";
/// The check the tap defines (`target/tap/schema/table`).
pub(crate) const SHOP_CHECK: &str = "warehouse/shop/shop/Orders";
/// Orders generated (one every five minutes from 08:00 UTC).
pub(crate) const ORDERS: i64 = 72;
/// The CA that verifies the server, copied into the project (`ssl_ca: shop-ca.pem`).
pub(crate) const CA_FILE: &str = "shop-ca.pem";
/// What the demo says when MariaDB is not installed.
pub(crate) const NOT_FOUND: &str = "MariaDB not found: the tap-mysql part is skipped; apt-get install mariadb-server";

/// A MariaDB server starting on its own thread.
pub(crate) struct PendingMariaDb {
    starting: Option<JoinHandle<Result<MariaDb, datadiff_testkit::Error>>>,
}

impl PendingMariaDb {
    /// Whether MariaDB's server programs are installed (the testkit's detection).
    pub(crate) fn available() -> bool {
        datadiff_testkit::find_mariadb_binaries().is_ok()
    }

    /// Starts a throwaway server with TLS for 127.0.0.1 in the background.
    pub(crate) fn start() -> PendingMariaDb {
        let starting = std::thread::Builder::new()
            .name("datadiff-demo-mariadb".to_owned())
            .spawn(|| MariaDb::start_with(MariaDbOptions::new().tls(&["localhost"], &["127.0.0.1"])))
            .ok();
        PendingMariaDb { starting }
    }

    /// Waits for the server; the error says why it did not start.
    pub(crate) fn wait(mut self) -> anyhow::Result<MariaDb> {
        let handle = self.starting.take().ok_or_else(|| anyhow::anyhow!("cannot start a thread"))?;
        match handle.join() {
            Ok(started) => started.map_err(anyhow::Error::new),
            Err(_) => anyhow::bail!("the thread starting it panicked"),
        }
    }
}

impl Drop for PendingMariaDb {
    /// An unused server is still waited for, so that it is stopped and removed before the
    /// process ends.
    fn drop(&mut self) {
        if let Some(handle) = self.starting.take() {
            let _ = handle.join();
        }
    }
}

/// The running MariaDB source and its read-only login.
pub(crate) struct Shop {
    server: MariaDb,
    /// Reads `shop`, over TLS only (`REQUIRE SSL`).
    pub(crate) reader: Login,
}

impl std::fmt::Debug for Shop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shop").field("server", &self.server).field("reader", &self.reader).finish()
    }
}

/// One source order, as the replica loads it: the key, then text as tap-mysql emits it.
struct Order {
    id: i64,
    total: String,
    status: String,
    paid: bool,
    updated_at: String,
}

impl Shop {
    /// Creates `shop.Orders` (mixed-case names, `decimal`, `varchar`, `tinyint(1)`,
    /// `datetime(6)`, an index on the timestamp) and its reader on `server`.
    pub(crate) fn create(server: MariaDb) -> anyhow::Result<Shop> {
        let reader = Login::generate("demo_reader");
        let mut conn = server.connect(None)?;
        conn.query_drop(
            "CREATE DATABASE shop CHARACTER SET utf8mb4;
             CREATE TABLE shop.`Orders` (
                 `Id` bigint NOT NULL PRIMARY KEY,
                 `Total` decimal(12, 2) NOT NULL,
                 `Status` varchar(20) NOT NULL,
                 `Paid` tinyint(1) NOT NULL,
                 `UpdatedAt` datetime(6) NOT NULL,
                 KEY `Orders_UpdatedAt_idx` (`UpdatedAt`)
             )",
        )
        .context("creating the MariaDB source table")?;
        conn.exec_batch(
            "INSERT INTO shop.`Orders` VALUES (?, ?, ?, ?, TIMESTAMP'2026-07-22 08:00:00' + INTERVAL ? SECOND)",
            (0..ORDERS).map(|n| {
                let status = ["new", "paid", "shipped"][usize::try_from(n % 3).unwrap_or_default()];
                let total = format!("{}.{:02}", (n * 389) % 500 + 1, (n * 7) % 100);
                (n, total, status, status != "new", n * 300)
            }),
        )
        .context("filling the MariaDB source table")?;
        server.create_user(reader.name, &reader.password)?;
        server.grant(reader.name, &["SELECT"], Some(SHOP_DATABASE))?;
        conn.query_drop(format!("ALTER USER {}@'%' REQUIRE SSL", quote_mysql_literal(reader.name)))
            .context("requiring TLS of the MariaDB reader")?;
        Ok(Shop { server, reader })
    }

    /// The server's version string.
    pub(crate) fn version(&self) -> &str {
        self.server.version()
    }

    /// The server's port on 127.0.0.1.
    pub(crate) fn port(&self) -> u16 {
        self.server.port()
    }

    /// Loads the source's rows into `replica` (a superuser session on the replica database)
    /// as target-postgres loads a tap-mysql table: schema `shop`, lower-cased names,
    /// `numeric(12,2)`, `character varying`, `boolean`, `timestamp with time zone`, the `_sdc_*`
    /// columns; readable by `reader`.
    pub(crate) fn replicate(&self, replica: &mut postgres::Client, reader: &str) -> anyhow::Result<()> {
        let orders: Vec<Order> = self
            .server
            .connect(Some(SHOP_DATABASE))?
            .query_map(
                "SELECT `Id`, CAST(`Total` AS CHAR), `Status`, `Paid`, DATE_FORMAT(`UpdatedAt`, '%Y-%m-%d %H:%i:%s.%f')
                   FROM `Orders` ORDER BY `Id`",
                |(id, total, status, paid, updated_at): (i64, String, String, i8, String)| Order {
                    id,
                    total,
                    status,
                    paid: paid != 0,
                    updated_at,
                },
            )
            .context("reading the MariaDB source table")?;
        let reader = datadiff_testkit::quote_ident(reader);
        replica
            .batch_execute(&format!(
                "CREATE SCHEMA shop;
                 CREATE TABLE shop.orders (
                     id bigint PRIMARY KEY,
                     total numeric(12,2),
                     status character varying,
                     paid boolean,
                     updatedat timestamp with time zone,
                     _sdc_extracted_at timestamp without time zone,
                     _sdc_batched_at timestamp without time zone,
                     _sdc_deleted_at character varying
                 );
                 GRANT USAGE ON SCHEMA shop TO {reader};
                 GRANT SELECT ON ALL TABLES IN SCHEMA shop TO {reader};"
            ))
            .context("creating the replica's shop.orders")?;
        let column = |get: fn(&Order) -> String| orders.iter().map(get).collect::<Vec<String>>();
        let ids: Vec<i64> = orders.iter().map(|order| order.id).collect();
        let paid: Vec<bool> = orders.iter().map(|order| order.paid).collect();
        replica
            .execute(
                "INSERT INTO shop.orders (id, total, status, paid, updatedat, _sdc_extracted_at, _sdc_batched_at)
                 SELECT id, total::numeric, status, paid, (ts || '+00')::timestamptz,
                        ts::timestamp + interval '1 minute', ts::timestamp + interval '2 minutes'
                   FROM unnest($1::bigint[], $2::text[], $3::text[], $4::boolean[], $5::text[])
                        AS source(id, total, status, paid, ts)",
                &[
                    &ids,
                    &column(|order| order.total.clone()),
                    &column(|order| order.status.clone()),
                    &paid,
                    &column(|order| order.updated_at.clone()),
                ],
            )
            .context("loading the replica's shop.orders")?;
        Ok(())
    }

    /// Writes `tap_shop.yml` (mode 0600: it holds the throwaway password) and the server's
    /// CA into `project`.
    pub(crate) fn write_tap(&self, project: &Path) -> anyhow::Result<()> {
        let ca = self.server.ca_certificate().ok_or_else(|| anyhow::anyhow!("the MariaDB server has no CA"))?;
        std::fs::copy(ca, project.join(CA_FILE)).with_context(|| format!("copying {}", ca.display()))?;
        let path = project.join("tap_shop.yml");
        std::fs::write(&path, tap_file(self.server.host(), self.port(), &self.reader))
            .with_context(|| format!("writing {}", path.display()))?;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))
            .with_context(|| format!("chmod {}", path.display()))?;
        Ok(())
    }

    /// A `mariadb` client command line for `--keep` (holds the password).
    pub(crate) fn client_command(&self, project: &Path) -> String {
        format!(
            "mariadb --host {} --port {} --user {} --password={} --ssl-ca {} {SHOP_DATABASE}",
            self.server.host(),
            self.port(),
            self.reader.name,
            self.reader.password,
            project.join(CA_FILE).display()
        )
    }
}

/// `tap_shop.yml`: a tap-mysql tap into the warehouse, verified TLS and the engine named.
fn tap_file(host: &str, port: u16, reader: &Login) -> String {
    format!(
        "id: {SHOP_TAP}\nname: Shop\ntype: tap-mysql\nowner: demo@example.com\ntarget: warehouse\n\
         db_conn:\n  host: {host}\n  port: {port}\n  user: {name}\n  password: \"{password}\"\n  \
         dbname: {SHOP_DATABASE}\n  \
         engine: mariadb              # mariadb or mysql: the session's statement-timeout form\n  \
         ssl_ca: {CA_FILE}           # verify the server's certificate against this CA\n\
         data_diff_defaults:\n  frequency: \"0 * * * *\"\n  window_start: \"-1h\"\n  window_end: \"0s\"\n\
         schemas:\n  - source_schema: {SHOP_DATABASE}\n    target_schema: shop\n    tables:\n      \
         - table_name: Orders\n        replication_method: INCREMENTAL\n        replication_key: UpdatedAt\n        \
         data_diff:\n          checks: [schema_compatibility, row_count, distinct_key_count, null_key_count,\n                   \
         duplicate_key_count, min_key, max_key, row_checksum]\n          key_column: Id\n          \
         timestamp_column: UpdatedAt\n          compare_columns: [Total, Status, Paid]\n",
        name = reader.name,
        password = reader.password,
    )
}

#[cfg(test)]
mod tests {
    use datadiff_diff_core::definition::SourceType;
    use datadiff_diff_core::mysql::MySqlEngine;

    use super::*;

    #[test]
    fn the_tap_file_imports_one_tap_mysql_check_with_verified_tls() {
        let (app, ddl, reader) = (Login::generate("app"), Login::generate("ddl"), Login::generate("reader"));
        let dir = tempfile::tempdir().unwrap();
        let files = super::super::sandbox::project_files_for_tests("127.0.0.1", 54321, &app, &ddl, &reader);
        for (name, text) in files {
            std::fs::write(dir.path().join(name), text).unwrap();
        }
        // A real certificate: the project loader reads it.
        datadiff_testkit::write_unrelated_ca(&dir.path().join(CA_FILE)).unwrap();
        std::fs::write(dir.path().join("tap_shop.yml"), tap_file("127.0.0.1", 3307, &reader)).unwrap();
        let project = datadiff_config::load(dir.path(), None).unwrap();
        assert!(project.warnings.is_empty(), "{:?}", project.warnings);
        let definition = project.definitions.iter().find(|d| d.full_check_name == SHOP_CHECK).expect("the shop check");
        assert_eq!(definition.source_type, SourceType::TapMysql);
        assert_eq!((definition.source_schema.as_str(), definition.source_table.as_str()), ("shop", "Orders"));
        assert_eq!((definition.target_schema.as_str(), definition.target_table.as_str()), ("shop", "orders"));
        assert_eq!(definition.target_compare_columns, ["total", "status", "paid"]);
        let conn = project.tap(SHOP_TAP).and_then(|tap| tap.db_conn.clone()).unwrap();
        assert_eq!(conn.engine, Some(MySqlEngine::MariaDb));
        assert_eq!(conn.ssl_ca, Some(datadiff_config::Pem::File(dir.path().join(CA_FILE))));
    }
}
