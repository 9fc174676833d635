//! The user-group guides (`docs/logical-replication.md`, `docs/cdc.md`,
//! `docs/other-loaders.md`) run as written, block by block, in order, against two throwaway
//! clusters: `payments.internal` (the source, `wal_level = logical`) and `warehouse.internal`
//! (the replica, also holding the backend as the operator guide's §2 lays it out,
//! `backend.internal`).
//!
//! Blocks, by info string:
//! * `sql on=source|replica db=NAME [id=ID]`: executed as the superuser;
//! * `yaml file=NAME`: written into the project directory;
//! * `sh [exit=N] [id=ID]`: one `/bin/sh` script in the project directory (`set -e` when it
//!   must exit 0), `datadiff` and PostgreSQL's client programs first on `PATH`, the passwords
//!   the YAML names in the environment (`CHANGE_ME_*`, the roles' passwords), `RUN_ID` once a
//!   `report failures` printed one, and a password file for the loader's `postgres` logins;
//! * `text`, `json`, and `yaml` without a file: not run.
//!
//! Host names `*.internal` and port 5432, in YAML, SQL connection strings and DSNs, are
//! pointed at the clusters. Between blocks the test plays the world (rows inserted, a
//! subscription waited for), keyed by block ids, and after the last block it asserts on the
//! backend's rows and the reports written.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use datadiff_testkit::{Cluster, ClusterOptions};
use serde_json::Value as Json;

use crate::support::Outcome;

/// A fenced block.
#[derive(Debug)]
struct Block {
    info: String,
    text: String,
}

impl Block {
    /// The `key=value` attribute of the info string.
    fn attribute(&self, key: &str) -> Option<&str> {
        self.info.split_whitespace().find_map(|word| word.strip_prefix(&format!("{key}=")))
    }

    fn kind(&self) -> &str {
        self.info.split_whitespace().next().unwrap_or("")
    }
}

/// Every fenced block of `markdown`, in order.
fn blocks(markdown: &str) -> Vec<Block> {
    let mut found = Vec::new();
    let mut open: Option<Block> = None;
    for line in markdown.lines() {
        match (&mut open, line.strip_prefix("```")) {
            (None, Some(info)) => open = Some(Block { info: info.trim().to_owned(), text: String::new() }),
            (Some(_), Some(_)) => found.extend(open.take()),
            (Some(block), None) => {
                block.text.push_str(line);
                block.text.push('\n');
            }
            (None, None) => {}
        }
    }
    assert!(open.is_none(), "an unclosed code block");
    found
}

/// The two clusters, the backend and the project directory.
struct World {
    source: Cluster,
    replica: Cluster,
    project: tempfile::TempDir,
    home: tempfile::TempDir,
    env: BTreeMap<String, String>,
    /// The application's clock at the start, to the second: rows are stamped before it.
    base: String,
}

impl World {
    fn new() -> World {
        let source = Cluster::start_with(ClusterOptions::new().logical_replication()).unwrap();
        let replica = Cluster::start().unwrap();
        source.connect("postgres").unwrap().batch_execute("CREATE DATABASE payments").unwrap();
        replica.create_role("datadiff_ddl", "CHANGE_ME_DDL").unwrap();
        replica.create_role("datadiff_app", "CHANGE_ME_APP").unwrap();
        let mut postgres = replica.connect("postgres").unwrap();
        for statement in [
            "CREATE DATABASE warehouse",
            "CREATE DATABASE datadiff_backend OWNER datadiff_ddl",
            "REVOKE ALL ON DATABASE datadiff_backend FROM PUBLIC",
            "GRANT CONNECT ON DATABASE datadiff_backend TO datadiff_app",
        ] {
            postgres.batch_execute(statement).unwrap();
        }
        let home = tempfile::tempdir().unwrap();
        // The loader's own logins (psql in the COPY pipeline) come from its password file.
        let passfile = home.path().join(".pgpass");
        std::fs::write(
            &passfile,
            format!(
                "127.0.0.1:{}:*:postgres:{}\n127.0.0.1:{}:*:postgres:{}\n",
                source.port(),
                source.superuser_password(),
                replica.port(),
                replica.superuser_password()
            ),
        )
        .unwrap();
        let mut permissions = std::fs::metadata(&passfile).unwrap().permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut permissions, 0o600);
        std::fs::set_permissions(&passfile, permissions).unwrap();
        let binary = Path::new(env!("CARGO_BIN_EXE_datadiff"));
        let bindir = datadiff_testkit::find_bindir().unwrap();
        let mut env = BTreeMap::new();
        for (key, value) in [
            ("DATADIFF_APP_PASSWORD", "CHANGE_ME_APP".to_owned()),
            ("DATADIFF_DDL_PASSWORD", "CHANGE_ME_DDL".to_owned()),
            ("DATADIFF_READER_PASSWORD", "CHANGE_ME_READER".to_owned()),
            ("PGPASSFILE", passfile.display().to_string()),
            ("HOME", home.path().display().to_string()),
            ("PATH", format!("{}:{}:/usr/bin:/bin", binary.parent().unwrap().display(), bindir.display())),
        ] {
            env.insert(key.to_owned(), value);
        }
        let base: String = source
            .connect("postgres")
            .unwrap()
            .query_one("SELECT date_trunc('second', now())::text", &[])
            .unwrap()
            .get(0);
        World { source, replica, project: tempfile::tempdir().unwrap(), home, env, base }
    }

    fn port(&self, host: &str) -> u16 {
        match host {
            "payments.internal" => self.source.port(),
            "warehouse.internal" | "backend.internal" => self.replica.port(),
            other => panic!("a host the guides do not use: {other}"),
        }
    }

    /// `text` with `NAME.internal:5432` and `host=NAME.internal port=5432` pointed at the
    /// clusters.
    fn localize(&self, text: &str) -> String {
        let mut text = text.to_owned();
        for host in ["payments.internal", "warehouse.internal", "backend.internal"] {
            let port = self.port(host);
            text = text
                .replace(&format!("{host}:5432"), &format!("127.0.0.1:{port}"))
                .replace(&format!("host={host} port=5432"), &format!("host=127.0.0.1 port={port}"));
        }
        assert!(!text.contains(".internal"), "a host left: {text}");
        text
    }

    /// A YAML file: each `host: NAME.internal` and the `port: 5432` after it pointed at the
    /// host's cluster.
    fn write_yaml(&self, name: &str, text: &str) {
        let mut written = String::new();
        let mut port = None;
        for line in text.lines() {
            let indent = &line[..line.len() - line.trim_start().len()];
            let line = match line.trim_start() {
                host if host.starts_with("host: ") && host.ends_with(".internal") => {
                    port = Some(self.port(&host["host: ".len()..]));
                    format!("{indent}host: 127.0.0.1")
                }
                "port: 5432" => format!("{indent}port: {}", port.take().expect("a port after its host")),
                _ => line.to_owned(),
            };
            written.push_str(&line);
            written.push('\n');
        }
        std::fs::write(self.project.path().join(name), written).unwrap();
    }

    fn sql(&self, on: &str, db: &str, sql: &str) {
        let cluster = match on {
            "source" => &self.source,
            "replica" => &self.replica,
            other => panic!("sql on={other}"),
        };
        // One statement at a time, as psql sends them (CREATE SUBSCRIPTION refuses to run in
        // the transaction of a multi-statement query).
        let mut client = cluster.connect(db).unwrap();
        for statement in self.localize(sql).split(";\n").filter(|statement| !statement.trim().is_empty()) {
            client.batch_execute(statement).unwrap_or_else(|error| {
                let message = error.as_db_error().map_or_else(|| error.to_string(), |db| db.message().to_owned());
                panic!("{statement}: {message}")
            });
        }
    }

    fn sh(&self, script: &str, expect_zero: bool) -> Outcome {
        let script = if expect_zero { format!("set -e\n{script}") } else { script.to_owned() };
        let output = Command::new("/bin/sh")
            .args(["-c", &self.localize(&script)])
            .current_dir(self.project.path())
            .env_clear()
            .envs(&self.env)
            .output()
            .unwrap();
        Outcome {
            code: output.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }

    fn count(&self, on: &Cluster, db: &str, sql: &str) -> i64 {
        on.connect(db).unwrap().query_one(sql, &[]).unwrap().get(0)
    }

    fn backend(&self) -> postgres::Client {
        self.replica.connect("datadiff_backend").unwrap()
    }

    /// `(status, trigger_type)` of every attempt, oldest first.
    fn attempts(&self) -> Vec<(String, String)> {
        self.backend()
            .query("SELECT status, trigger_type FROM public.dd_run_attempts ORDER BY started_at, attempt", &[])
            .unwrap()
            .iter()
            .map(|row| (row.get(0), row.get(1)))
            .collect()
    }

    fn report(&self, name: &str) -> Json {
        serde_json::from_str(&std::fs::read_to_string(self.project.path().join(name)).unwrap()).unwrap()
    }

    /// Runs `guide`'s blocks in order; `world` is called before (`true`) and after (`false`)
    /// each block that has an id.
    fn run(&mut self, guide: &str, mut world: impl FnMut(&mut World, &str, bool)) -> Vec<(String, Outcome)> {
        let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs").join(guide)).unwrap();
        let mut outcomes = Vec::new();
        for block in blocks(&text) {
            let id = block.attribute("id").map(str::to_owned);
            if let Some(id) = &id {
                world(self, id, true);
            }
            match block.kind() {
                "sql" => {
                    let on = block.attribute("on").expect("sql on=");
                    let db = block.attribute("db").expect("sql db=");
                    self.sql(on, db, &block.text);
                }
                "yaml" => {
                    if let Some(name) = block.attribute("file") {
                        self.write_yaml(name, &block.text);
                    }
                }
                "sh" => {
                    let exit: i32 = block.attribute("exit").map_or(0, |code| code.parse().unwrap());
                    let outcome = self.sh(&block.text, exit == 0);
                    outcome.expect(exit);
                    for password in ["CHANGE_ME_APP", "CHANGE_ME_DDL", "CHANGE_ME_READER", "CHANGE_ME_REPLICATOR"] {
                        assert!(
                            !outcome.stdout.contains(password) && !outcome.stderr.contains(password),
                            "a password printed by {}",
                            block.text
                        );
                    }
                    if block.text.contains("report --dir . failures")
                        && let Some(run_id) = first_uuid(&outcome.stdout)
                    {
                        self.env.insert("RUN_ID".to_owned(), run_id);
                    }
                    outcomes.push((block.text.clone(), outcome));
                }
                "text" | "json" | "" => {}
                other => panic!("{guide}: a block the test cannot run: {other} ({})", block.info),
            }
            if let Some(id) = &id {
                world(self, id, false);
            }
        }
        outcomes
    }
}

/// The first UUID in `text`.
fn first_uuid(text: &str) -> Option<String> {
    text.split(|c: char| !(c.is_ascii_hexdigit() || c == '-')).find_map(|word| {
        let groups: Vec<usize> = word.split('-').map(str::len).collect();
        (groups == [8, 4, 4, 4, 12]).then(|| word.to_owned())
    })
}

/// Waits (at most a minute) until `sql` on the replica returns `expected`.
fn wait_for(world: &World, db: &str, sql: &str, expected: i64) {
    for _ in 0..600 {
        if world.count(&world.replica, db, sql) == expected {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    panic!("{sql} never reached {expected}");
}

/// Sleeps past the next quarter-hour when it is less than a minute away, so that the slot a
/// block's SQL picks is still the current one when the next command runs.
fn clear_of_a_quarter_hour() {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    let left = 900 - now % 900;
    if left < 60 {
        std::thread::sleep(std::time::Duration::from_secs(left + 2));
    }
}

#[test]
fn the_logical_replication_guide_runs_as_written() {
    let mut world = World::new();
    let base = world.base.clone();
    let outcomes = world.run("logical-replication.md", |world, id, before| match (id, before) {
        // The application's rows: one every 10 s for the last three hours.
        ("subscribe", true) => world.sql(
            "source",
            "payments",
            &format!(
                "INSERT INTO public.orders SELECT g, 'customer ' || (g % 50), round(((g * 37) % 10000) / 100.0, 2), \
                     (ARRAY['new', 'paid', 'shipped'])[g % 3 + 1], '{base}'::timestamptz - g * interval '10 seconds' \
                 FROM generate_series(1, 1080) g"
            ),
        ),
        ("subscribe", false) => wait_for(world, "warehouse", "SELECT count(*) FROM public.orders", 1080),
        ("drift", true) => clear_of_a_quarter_hour(),
        _ => {}
    });
    let (_, differences) = outcomes.iter().find(|(script, _)| script.contains("report --dir . differences")).unwrap();
    let row = differences.stdout.lines().find(|line| line.contains("CHANGED")).expect("the changed row");
    assert!(row.contains("status") && !row.contains("fixed by hand"), "keys and column names only: {row}");
    let attempts = world.attempts();
    let statuses: Vec<(&str, &str)> = attempts.iter().map(|(s, t)| (s.as_str(), t.as_str())).collect();
    assert_eq!(statuses.first(), Some(&("PASS", "SCHEDULED")), "{statuses:?}");
    assert!(statuses.contains(&("FAIL", "MANUAL")), "the forced run after the drift: {statuses:?}");
    assert_eq!(statuses.last(), Some(&("PASS", "REMEDIATION")), "{statuses:?}");
    let watermark: String =
        world.backend().query_one("SELECT verified_status FROM public.dd_watermark_state", &[]).unwrap().get(0);
    assert_eq!(watermark, "CONTIGUOUS");
    let report = world.report("orders-parity.json");
    assert_eq!((report["status"].as_str(), report["source_rows"].as_u64()), (Some("PASS"), Some(1080)));
    drop(world.home);
}

#[test]
fn the_cdc_guide_runs_as_written() {
    let mut world = World::new();
    let base = world.base.clone();
    let outcomes = world.run("cdc.md", |world, id, before| {
        if (id, before) == ("sink", false) {
            // The source's rows, and the sink's: the same live rows, and tombstones of rows
            // deleted long ago.
            let rows = format!(
                "SELECT g, 'c' || g || '@example.com', 'Customer ' || g, (ARRAY['free', 'pro'])[g % 2 + 1], \
                 '{base}'::timestamptz - g * interval '15 seconds' FROM generate_series(1, 600) g"
            );
            world.sql("source", "payments", &format!("INSERT INTO public.customers {rows}"));
            world.sql(
                "replica",
                "warehouse",
                &format!(
                    "INSERT INTO cdc.customers SELECT r.*, 'false', 'r', r.g * 100 FROM ({rows}) r(g);
                     INSERT INTO cdc.customers SELECT g, 'gone' || g || '@example.com', NULL, 'free', \
                         '{base}'::timestamptz - interval '30 days', 'true', 'd', g FROM generate_series(1001, 1010) g;"
                ),
            );
        }
    });
    // The first audit passed with ten tombstones left out; the second blocked on the lost delete.
    assert_eq!(outcomes[0].1.code, 0);
    assert!(outcomes[1].1.stderr.contains("BLOCK") || outcomes[1].1.code == 1);
    let report = world.report("customers-parity.json");
    assert_eq!(report["status"], "BLOCK");
    assert_eq!(report["examples"][0]["id"], 7);
    assert_eq!(report["examples"][0]["kind"], "EXTRA_IN_REPLICA");
    assert_eq!(report["tombstones"], 10);
    let statuses: Vec<String> = world.attempts().into_iter().map(|(status, _)| status).collect();
    assert_eq!(statuses, ["PASS"], "the scheduled check on the live-rows view");
}

#[test]
fn the_other_loaders_guide_runs_as_written() {
    let mut world = World::new();
    let base = world.base.clone();
    let items = format!(
        "SELECT g, 'SKU-' || (g % 40), g % 7 + 1, round(((g * 13) % 5000) / 100.0, 2), \
         '{base}'::timestamptz - g * interval '1 minute' FROM generate_series(1, 300) g"
    );
    world.run("other-loaders.md", |world, id, before| match (id, before) {
        ("source", false) => world.sql(
            "source",
            "payments",
            &format!(
                "INSERT INTO public.\"OrderItems\" {items};
                 INSERT INTO public.events SELECT g, (ARRAY['view', 'click', 'buy'])[g % 3 + 1], \
                     CASE WHEN g % 5 = 0 THEN NULL ELSE g * 3 END, '{base}'::timestamptz - g * interval '10 seconds' \
                 FROM generate_series(1, 1200) g;"
            ),
        ),
        // What dlt loads from it.
        ("dlt", false) => world.sql(
            "replica",
            "warehouse",
            &format!(
                "INSERT INTO shop_data.order_items SELECT i.*, '1726000000.123', md5(i.g::text) FROM ({items}) i(g)"
            ),
        ),
        _ => {}
    });
    let report = world.report("order-items-parity.json");
    assert_eq!((report["status"].as_str(), report["source_rows"].as_u64()), (Some("PASS"), Some(300)));
    let columns: Vec<&str> =
        report["replica"]["columns"].as_array().unwrap().iter().map(|c| c.as_str().unwrap()).collect();
    assert!(columns.contains(&"unit_price") && !columns.iter().any(|c| c.starts_with("_dlt")), "{columns:?}");
    assert_eq!(
        world.count(&world.replica, "warehouse", "SELECT count(*) FROM staging.events"),
        1200,
        "the COPY reload"
    );
    let statuses: Vec<String> = world.attempts().into_iter().map(|(status, _)| status).collect();
    assert_eq!(statuses, ["PASS"]);
}
