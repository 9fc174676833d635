//! `checks.<name>.horizon` through the `datadiff` binary, on two throwaway clusters joined by
//! native logical replication: `doctor` reports the horizon reading (OK with the position and
//! the applied lag, WARN while the subscription is paused, FAIL for an unknown subscription);
//! `run` SKIPS a slot the paused replica has not applied (exit 0, nothing stored) and `report
//! metrics` shows the applied lag; read by a role that may only SELECT the tables.

use datadiff_testkit::{Cluster, ClusterOptions, Database, LogicalReplication, quote_ident};
use serde_json::Value as Json;

use crate::support::{IMPORT_AT, Outcome, PASSWORD_TAG, RUN_AT, datadiff_with};

const CHECK: &str = "warehouse/shop/public/orders";

const DDL: &str = "CREATE TABLE public.orders (id int PRIMARY KEY, updated_at timestamptz NOT NULL, amount numeric); \
                   CREATE INDEX ON public.orders (updated_at)";

struct World<'c> {
    source: Database<'c>,
    replica: Database<'c>,
    backend: Database<'c>,
    dir: tempfile::TempDir,
    password: String,
}

impl<'c> World<'c> {
    fn new(source_cluster: &'c Cluster, replica_cluster: &'c Cluster) -> World<'c> {
        let password = format!("{PASSWORD_TAG}-horizon");
        for cluster in [source_cluster, replica_cluster] {
            for role in ["hz_reader", "hz_app", "hz_ddl"] {
                cluster.create_role(role, &password).unwrap();
            }
        }
        let (source, replica) = (source_cluster.fresh_database().unwrap(), replica_cluster.fresh_database().unwrap());
        let backend = replica_cluster.fresh_database().unwrap();
        backend.make_backend("hz_ddl", "hz_app").unwrap();
        source
            .client()
            .unwrap()
            .batch_execute(&format!(
                "{DDL}; INSERT INTO public.orders SELECT g, '2026-07-22 12:00:00+00'::timestamptz + g * interval '1 minute', \
                 g FROM generate_series(1, 50) g"
            ))
            .unwrap();
        replica.client().unwrap().batch_execute(DDL).unwrap();
        for database in [&source, &replica] {
            database
                .client()
                .unwrap()
                .batch_execute(&format!("GRANT SELECT ON public.orders TO {}", quote_ident("hz_reader")))
                .unwrap();
        }
        World { source, replica, backend, dir: tempfile::tempdir().unwrap(), password }
    }

    /// The project, with `horizon` as the check's `checks.<name>.horizon`.
    fn write_project(&self, horizon: &str) {
        let (source, replica, password) = (self.source.cluster(), self.replica.cluster(), &self.password);
        let config = format!(
            "backend_db:\n  host: {}\n  port: {}\n  user: hz_app\n  password: \"{password}\"\n  dbname: {}\n  \
             ddl_user: hz_ddl\n  ddl_password: \"{password}\"\n",
            replica.host(),
            replica.port(),
            self.backend.name()
        );
        let target = format!(
            "id: warehouse\nname: Warehouse\ntype: target-postgres\ndb_conn:\n  host: {}\n  port: {}\n  \
             user: hz_reader\n  password: \"{password}\"\n  dbname: {}\n",
            replica.host(),
            replica.port(),
            self.replica.name()
        );
        let tap = format!(
            "id: shop\nname: Shop\ntype: tap-postgres\nowner: e2e\ntarget: warehouse\ndb_conn:\n  host: {}\n  \
             port: {}\n  user: hz_reader\n  password: \"{password}\"\n  dbname: {}\n\
             data_diff_defaults:\n  frequency: \"0 * * * *\"\n  window_start: \"-1h\"\n  window_end: \"0s\"\n\
             schemas:\n  - source_schema: public\n    target_schema: public\n    tables:\n      - table_name: orders\n\
             \x20       data_diff:\n          checks: [row_count]\n          key_column: id\n          \
             timestamp_column: updated_at\n",
            source.host(),
            source.port(),
            self.source.name()
        );
        let dir = self.dir.path();
        std::fs::write(dir.join("config.yml"), config).unwrap();
        std::fs::write(dir.join("target_warehouse.yml"), target).unwrap();
        std::fs::write(dir.join("tap_shop.yml"), tap).unwrap();
        std::fs::write(dir.join("datadiff.yml"), format!("checks:\n  {CHECK}:\n    horizon: \"{horizon}\"\n")).unwrap();
    }

    fn run(&self, args: &[&str]) -> Outcome {
        let dir = self.dir.path().display().to_string();
        let mut all = args.to_vec();
        all.extend(["--dir", dir.as_str()]);
        datadiff_with(&all, &[])
    }

    /// The doctor's horizon finding: `(status, detail)`.
    fn doctor_horizon(&self, code: i32) -> (String, String) {
        let json: Json = self.run(&["doctor", "--output-format", "json"]).expect(code).json();
        let findings = json["findings"].as_array().unwrap();
        let finding = findings
            .iter()
            .find(|finding| finding["scope"] == CHECK && finding["check"] == "horizon")
            .unwrap_or_else(|| panic!("no horizon finding in {json:#}"));
        (finding["status"].as_str().unwrap().to_owned(), finding["detail"].as_str().unwrap().to_owned())
    }

    /// `(scheduled_for as text, status)` of every attempt.
    fn attempts(&self) -> Vec<(String, String)> {
        let mut backend = self.backend.client().unwrap();
        backend
            .query(
                "SELECT to_char(scheduled_for AT TIME ZONE 'UTC', 'HH24:MI'), status FROM public.dd_run_attempts \
                  ORDER BY scheduled_for, attempt",
                &[],
            )
            .unwrap()
            .iter()
            .map(|row| (row.get(0), row.get(1)))
            .collect()
    }
}

#[test]
fn doctor_run_and_metrics_follow_the_replicas_horizon() {
    let source_cluster = Cluster::start_with(ClusterOptions::new().logical_replication()).unwrap();
    let replica_cluster = Cluster::start().unwrap();
    let world = World::new(&source_cluster, &replica_cluster);
    world.write_project("subscription:hz_sub");
    let replication = LogicalReplication::start(&world.source, &world.replica, "hz_sub", &["public.orders"]).unwrap();
    replication.wait_caught_up().unwrap();
    // The horizon is read only from a table in state ready, which follows the copy's end.
    replication.wait_ready().unwrap();
    world.run(&["import_config", "--at", IMPORT_AT]).expect(0);

    let (status, detail) = world.doctor_horizon(0);
    assert_eq!(status, "OK", "{detail}");
    assert!(detail.starts_with("subscription:hz_sub: replica has applied up to "), "{detail}");
    assert!(detail.contains("(subscription hz_sub at ") && detail.contains("applied lag "), "{detail}");
    world.run(&["run", "--all", "--at", RUN_AT]).expect(0);
    assert_eq!(world.attempts(), [("13:00".to_owned(), "PASS".to_owned())]);

    // Paused, with a row written inside the 14:00 slot's window: SKIPPED, exit 0, nothing
    // stored; the doctor warns; the metrics say the position is unknown.
    replication.pause().unwrap();
    world
        .source
        .client()
        .unwrap()
        .batch_execute("INSERT INTO public.orders VALUES (1000, '2026-07-22 13:30:00+00', 1)")
        .unwrap();
    let (status, detail) = world.doctor_horizon(0);
    assert_eq!(
        (status.as_str(), detail.as_str()),
        (
            "WARN",
            "subscription:hz_sub: replica position unknown (subscription hz_sub is disabled: nothing is being \
             applied): due slots are SKIPPED until it is known"
        )
    );
    let outcome = world.run(&["run", "--all", "--at", "2026-07-22T14:05:00Z"]);
    outcome.expect(0).stdout_has("SKIPPED").stdout_has("replica position unknown (subscription hz_sub is disabled");
    assert_eq!(world.attempts(), [("13:00".to_owned(), "PASS".to_owned())], "no attempt row for 14:00");
    let labels = r#"target="warehouse",tap="shop",schema="public",table="orders""#;
    world
        .run(&["report", "metrics", "--at", "2026-07-22T14:05:00Z"])
        .expect(0)
        .stdout_has(&format!("datadiff_replica_applied_lag_seconds{{{labels}}} 3600\n"))
        .stdout_has(&format!("datadiff_replica_horizon_known{{{labels}}} 0\n"));

    // Caught up again: the slot is attempted and passes.
    replication.resume().unwrap();
    replication.wait_caught_up().unwrap();
    world.run(&["run", "--all", "--at", "2026-07-22T14:10:00Z"]).expect(0);
    assert_eq!(world.attempts(), [("13:00".to_owned(), "PASS".to_owned()), ("14:00".to_owned(), "PASS".to_owned())]);

    // An unknown subscription is a FAIL finding and the check's ERROR, never a silent attempt.
    world.write_project("subscription:nope");
    let (status, detail) = world.doctor_horizon(1);
    assert_eq!(
        (status.as_str(), detail.as_str()),
        ("FAIL", "horizon subscription:nope: the replica's database has no subscription named 'nope'")
    );
    world
        .run(&["run", "--all", "--at", "2026-07-22T15:05:00Z"])
        .expect(1)
        .stdout_has("horizon subscription:nope: the replica's database has no subscription named 'nope'");
    assert_eq!(world.attempts().len(), 2, "nothing attempted");
}
