//! Scheduled checks with `row_diff` against a replica kept by PostgreSQL's native logical
//! replication (a publication on one throwaway cluster, its subscription on another), for
//! tables keyed by text, by uuid and by a composite key (`key_columns: [order_id, line_no]`):
//! equal tables PASS under both strategies, and a lost delete, a changed value and a missing
//! row planted on the subscriber are stored as evidence naming each key (every key column of
//! the composite one), the same under both strategies.

use datadiff_testkit::{Cluster, ClusterOptions, Database, LogicalReplication, quote_ident};
use serde_json::Value as Json;

use crate::support::{IMPORT_AT, Outcome, PASSWORD_TAG, RUN_AT, datadiff_with};

/// A table of the tap: its DDL (the same on both sides), its rows (all in the 13:00 slot's
/// window [12:00, 13:00)), what plants the three differences on the replica, and the keys
/// they touch as stored (one value per key column): extra, changed, missing.
struct Table {
    name: &'static str,
    /// The definition's `key_column`.
    key: &'static str,
    /// `row_diff`'s `key_columns`, when the key is composite (else the key column alone).
    key_columns: &'static [&'static str],
    timestamp: &'static str,
    /// The compare columns, as YAML.
    compared: &'static str,
    ddl: &'static str,
    rows: &'static str,
    plant: &'static str,
    keys: [&'static [&'static str]; 3],
}

const TABLES: [Table; 3] = [
    Table {
        name: "skus",
        key: "code",
        key_columns: &[],
        timestamp: "updated_at",
        compared: "[title, price]",
        ddl: "CREATE TABLE public.skus (code text PRIMARY KEY, title text, price numeric(10, 2), \
              updated_at timestamptz NOT NULL); CREATE INDEX ON public.skus (updated_at)",
        rows: "INSERT INTO public.skus SELECT (ARRAY['A', 'b', 'Z', 'é', '_'])[g % 5 + 1] || lpad(g::text, 5, '0'), \
               'title ' || g, g / 7.0, '2026-07-22 12:00:00+00'::timestamptz + g * interval '1 second' \
               FROM generate_series(1, 3000) g",
        plant: "INSERT INTO public.skus VALUES ('é99999', 'gone', 1, '2026-07-22 12:30:00.5+00'); \
                UPDATE public.skus SET price = -price WHERE code = 'b00001'; \
                DELETE FROM public.skus WHERE code = 'Z00002'",
        keys: [&["é99999"], &["b00001"], &["Z00002"]],
    },
    Table {
        name: "devices",
        key: "id",
        key_columns: &[],
        timestamp: "seen_at",
        compared: "[label]",
        ddl: "CREATE TABLE public.devices (id uuid PRIMARY KEY, label text, seen_at timestamptz NOT NULL); \
              CREATE INDEX ON public.devices (seen_at)",
        rows: "INSERT INTO public.devices SELECT md5(g::text)::uuid, 'device ' || g, \
               '2026-07-22 12:00:00+00'::timestamptz + g * interval '1 second' FROM generate_series(1, 3000) g",
        // md5('1') and md5('2') as uuids.
        plant: "INSERT INTO public.devices VALUES ('ffffffff-0000-0000-0000-000000000001', 'gone', \
                '2026-07-22 12:30:00.5+00'); \
                UPDATE public.devices SET label = 'device one' WHERE id = md5('1')::uuid; \
                DELETE FROM public.devices WHERE id = md5('2')::uuid",
        keys: [
            &["ffffffff-0000-0000-0000-000000000001"],
            &["c4ca4238-a0b9-2382-0dcc-509a6f75849b"],
            &["c81e728d-9d4c-2f63-6f06-7f89cc14862c"],
        ],
    },
    // A line-item table: `order_id` repeats, the key is `(order_id, line_no)`.
    Table {
        name: "order_lines",
        key: "order_id",
        key_columns: &["order_id", "line_no"],
        timestamp: "updated_at",
        compared: "[sku, qty]",
        ddl: "CREATE TABLE public.order_lines (order_id bigint, line_no integer, sku text, qty integer, \
              updated_at timestamptz NOT NULL, PRIMARY KEY (order_id, line_no)); \
              CREATE INDEX ON public.order_lines (updated_at)",
        rows: "INSERT INTO public.order_lines SELECT g / 4, g % 4 + 1, 'sku ' || g, g % 9, \
               '2026-07-22 12:00:00+00'::timestamptz + g * interval '1 second' FROM generate_series(0, 2999) g",
        plant: "INSERT INTO public.order_lines VALUES (700, 9, 'gone', 1, '2026-07-22 12:30:00.5+00'); \
                UPDATE public.order_lines SET qty = qty + 100 WHERE order_id = 1 AND line_no = 2; \
                DELETE FROM public.order_lines WHERE order_id = 2 AND line_no = 1",
        keys: [&["700", "9"], &["1", "2"], &["2", "1"]],
    },
];

/// The project: a backend and the replica on one cluster, the source on another.
struct World<'c> {
    source: Database<'c>,
    replica: Database<'c>,
    backend: Database<'c>,
    dir: tempfile::TempDir,
}

impl<'c> World<'c> {
    /// The databases, roles and project on `source_cluster` (which runs with
    /// `wal_level = logical`) and `replica_cluster`.
    fn new(source_cluster: &'c Cluster, replica_cluster: &'c Cluster) -> World<'c> {
        let password = format!("{PASSWORD_TAG}-logical");
        for cluster in [source_cluster, replica_cluster] {
            for role in ["lr_reader", "lr_app", "lr_ddl"] {
                cluster.create_role(role, &password).unwrap();
            }
        }
        let source = source_cluster.fresh_database().unwrap();
        let replica = replica_cluster.fresh_database().unwrap();
        let backend = replica_cluster.fresh_database().unwrap();
        backend.make_backend("lr_ddl", "lr_app").unwrap();
        for table in &TABLES {
            source.client().unwrap().batch_execute(&format!("{}; {}", table.ddl, table.rows)).unwrap();
            replica.client().unwrap().batch_execute(table.ddl).unwrap();
        }
        for database in [&source, &replica] {
            database
                .client()
                .unwrap()
                .batch_execute(&format!("GRANT SELECT ON ALL TABLES IN SCHEMA public TO {}", quote_ident("lr_reader")))
                .unwrap();
        }
        let world = World { source, replica, backend, dir: tempfile::tempdir().unwrap() };
        world.write_project(&password);
        world
    }

    fn write_project(&self, password: &str) {
        let (source, replica) = (self.source.cluster(), self.replica.cluster());
        let config = format!(
            "backend_db:\n  host: {}\n  port: {}\n  user: lr_app\n  password: \"{password}\"\n  dbname: {}\n  \
             ddl_user: lr_ddl\n  ddl_password: \"{password}\"\n",
            replica.host(),
            replica.port(),
            self.backend.name()
        );
        let target = format!(
            "id: warehouse\nname: Warehouse\ntype: target-postgres\ndb_conn:\n  host: {}\n  port: {}\n  \
             user: lr_reader\n  password: \"{password}\"\n  dbname: {}\n",
            replica.host(),
            replica.port(),
            self.replica.name()
        );
        let mut tables = String::new();
        for table in &TABLES {
            tables.push_str(&format!(
                "      - table_name: {}\n        data_diff:\n          checks: [row_count]\n          \
                 key_column: {}\n          timestamp_column: {}\n          compare_columns: {}\n",
                table.name, table.key, table.timestamp, table.compared
            ));
        }
        let tap = format!(
            "id: shop\nname: Shop\ntype: tap-postgres\nowner: e2e\ntarget: warehouse\ndb_conn:\n  host: {}\n  \
             port: {}\n  user: lr_reader\n  password: \"{password}\"\n  dbname: {}\n\
             data_diff_defaults:\n  frequency: \"0 * * * *\"\n  window_start: \"-1h\"\n  window_end: \"0s\"\n\
             schemas:\n  - source_schema: public\n    target_schema: public\n    tables:\n{tables}",
            source.host(),
            source.port(),
            self.source.name()
        );
        let checks: String = TABLES
            .iter()
            .map(|table| {
                let mut check =
                    format!("  warehouse/shop/public/{}:\n    row_diff: {{max_examples: 10}}\n", table.name);
                if !table.key_columns.is_empty() {
                    check.push_str(&format!("    key_columns: [{}]\n", table.key_columns.join(", ")));
                }
                check
            })
            .collect();
        let dir = self.dir.path();
        std::fs::write(dir.join("config.yml"), config).unwrap();
        std::fs::write(dir.join("target_warehouse.yml"), target).unwrap();
        std::fs::write(dir.join("tap_shop.yml"), tap).unwrap();
        std::fs::write(dir.join("datadiff.yml"), format!("checks:\n{checks}")).unwrap();
    }

    fn run(&self, args: &[&str]) -> Outcome {
        let dir = self.dir.path().display().to_string();
        let mut all = args.to_vec();
        all.extend(["--dir", dir.as_str()]);
        datadiff_with(&all, &[])
    }

    /// `(table, status)` of the newest attempt's row_diff results.
    fn row_diff_statuses(&self) -> Vec<(String, String)> {
        let mut backend = self.backend.client().unwrap();
        backend
            .query(
                "SELECT DISTINCT ON (d.full_check_name) d.full_check_name, r.status \
                   FROM public.dd_run_attempts a JOIN public.dd_run_results r ON r.run_id = a.run_id \
                   JOIN public.dd_check_definitions d ON d.check_id = a.check_id \
                  WHERE r.check_type = 'row_diff' ORDER BY d.full_check_name, a.started_at DESC, a.attempt DESC",
                &[],
            )
            .unwrap()
            .iter()
            .map(|row| (row.get(0), row.get(1)))
            .collect()
    }

    /// The newest attempt's row_diff evidence of `table`: `(kind, key)`, sorted by kind.
    fn evidence(&self, table: &Table) -> Vec<(String, Json)> {
        let mut backend = self.backend.client().unwrap();
        let check = format!("warehouse/shop/public/{}", table.name);
        let run_id: String = backend
            .query_one(
                "SELECT a.run_id::text FROM public.dd_run_attempts a \
                   JOIN public.dd_check_definitions d ON d.check_id = a.check_id WHERE d.full_check_name = $1 \
                  ORDER BY a.started_at DESC, a.attempt DESC LIMIT 1",
                &[&check],
            )
            .unwrap()
            .get(0);
        backend
            .query(
                "SELECT kind, key::text FROM public.datadiff_run_differences \
                  WHERE run_id = $1::text::uuid AND check_type = 'row_diff' ORDER BY kind",
                &[&run_id],
            )
            .unwrap()
            .iter()
            .map(|row| (row.get(0), serde_json::from_str(row.get(1)).unwrap()))
            .collect()
    }
}

#[test]
fn scheduled_row_diff_over_a_native_logical_replica_passes_and_names_planted_differences_by_key() {
    let source_cluster = Cluster::start_with(ClusterOptions::new().logical_replication()).unwrap();
    let replica_cluster = Cluster::start().unwrap();
    let world = World::new(&source_cluster, &replica_cluster);
    let tables: Vec<String> = TABLES.iter().map(|table| format!("public.{}", table.name)).collect();
    let tables: Vec<&str> = tables.iter().map(String::as_str).collect();
    let replication = LogicalReplication::start(&world.source, &world.replica, "shop_sub", &tables).unwrap();
    replication.wait_caught_up().unwrap();
    world.run(&["import_config", "--at", IMPORT_AT]).expect(0);

    for strategy in ["segments", "stream"] {
        world.run(&["run", "--all", "--force", "--strategy", strategy, "--at", RUN_AT]).expect(0);
        let statuses = world.row_diff_statuses();
        assert_eq!(
            statuses,
            [
                ("warehouse/shop/public/devices".to_owned(), "PASS".to_owned()),
                ("warehouse/shop/public/order_lines".to_owned(), "PASS".to_owned()),
                ("warehouse/shop/public/skus".to_owned(), "PASS".to_owned())
            ],
            "{strategy}"
        );
    }

    // Planted on the subscriber while it applies nothing.
    replication.pause().unwrap();
    for table in &TABLES {
        world.replica.client().unwrap().batch_execute(table.plant).unwrap();
    }
    let mut found = Vec::new();
    for strategy in ["segments", "stream"] {
        world.run(&["run", "--all", "--force", "--strategy", strategy, "--at", RUN_AT]).expect(1);
        let evidence: Vec<Vec<(String, Json)>> = TABLES.iter().map(|table| world.evidence(table)).collect();
        for (table, evidence) in TABLES.iter().zip(&evidence) {
            let [extra, changed, missing] = table.keys;
            // Every key column by name.
            let names = if table.key_columns.is_empty() { std::slice::from_ref(&table.key) } else { table.key_columns };
            let key = |values: &[&str]| {
                Json::Object(
                    names.iter().zip(values).map(|(name, value)| ((*name).to_owned(), (*value).into())).collect(),
                )
            };
            assert_eq!(
                evidence,
                &[
                    ("CHANGED".to_owned(), key(changed)),
                    ("EXTRA_IN_TARGET".to_owned(), key(extra)),
                    ("MISSING_IN_TARGET".to_owned(), key(missing)),
                ],
                "{} {strategy}",
                table.name
            );
        }
        found.push(evidence);
    }
    assert_eq!(found[0], found[1], "segments and stream store the same evidence");
}
