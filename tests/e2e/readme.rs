//! The PipelineWise guide's tour (`docs/pipelinewise.md`) and the operator guide's commands, run
//! as written.
//!
//! The tour's YAML blocks (info string `yaml file=NAME`) become the project directory, with
//! only `host: *.internal` and `port: 5432` pointed at a dedicated throwaway cluster (its own,
//! so the tour's database and role names are used verbatim). Its `sh` blocks run line by line
//! through `/bin/sh` in the project directory, with the built `datadiff` first on `PATH` and
//! the passwords in the environment variables the YAML names; the command of its `crontab`
//! block runs the same way, with `/srv/pipelinewise` and `/var/log/datadiff.log` pointed at
//! the test's directories, after its schedule is parsed as datadiff parses `frequency`. Every
//! command must exit 0. Between commands the test plays the world: before the tour reads
//! `report failures` the replica drifts and a forced run fails; before `rerun_data_diff_check`
//! the replica is repaired and `RUN_ID` is the Run ID that `report failures` printed.
//!
//! Not run here: `cargo install` (step 1; it builds a release binary for minutes — the tests
//! run the binary cargo built for them), `cargo run --release -- demo` (the demo tests run the
//! same command in `demo.rs`), `cargo test --workspace` (the suite itself), and the parity
//! audit's example, which names two remote hosts (its flags are exercised against local
//! databases by `crates/cli/tests/it/audit.rs`). The README's command table uses placeholders;
//! each command has its own end-to-end test module here.

use std::path::Path;
use std::process::Command;

use datadiff_testkit::Cluster;

use crate::support::{Outcome, PASSWORD_TAG};

/// The tour's check.
const CHECK: &str = "warehouse/payments/public/transfers";

/// A fenced block of a Markdown file.
#[derive(Debug)]
struct Block {
    info: String,
    text: String,
}

/// The fenced blocks of `markdown` between the heading `from` and the next `## ` heading.
fn blocks(markdown: &str, from: &str) -> Vec<Block> {
    let start = markdown.find(from).unwrap_or_else(|| panic!("no {from:?} in the guide"));
    let section = &markdown[start + from.len()..];
    let section = &section[..section.find("\n## ").unwrap_or(section.len())];
    let mut found = Vec::new();
    let mut open: Option<Block> = None;
    for line in section.lines() {
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
    assert!(open.is_none(), "an unclosed code block in {from}");
    found
}

/// The dedicated cluster with the tour's roles, databases and tables.
struct World {
    cluster: Cluster,
    project: tempfile::TempDir,
    scratch: tempfile::TempDir,
    /// `(variable, password)` for the environment of every command.
    passwords: Vec<(&'static str, String)>,
}

/// The tour's rows: one transfer a minute for the six hours before `base`, on both sides; a
/// transfer every half hour deleted at the source and soft-deleted in the replica.
const ROWS: &str = "SELECT g, round(((g * 731) % 50000 + 100) / 100.0, 2), (ARRAY['pending', 'paid'])[g % 2 + 1], \
                           $1::text::timestamptz - g * interval '1 minute' \
                      FROM generate_series(1, 360) g";

impl World {
    fn new() -> World {
        let cluster = Cluster::start().unwrap();
        let password = |role: &str| format!("{PASSWORD_TAG}-readme-{role}");
        let roles = [
            ("datadiff_ddl", "DATADIFF_DDL_PASSWORD"),
            ("datadiff_app", "DATADIFF_APP_PASSWORD"),
            ("datadiff_source_reader", "PAYMENTS_READER_PASSWORD"),
            ("datadiff_replica_reader", "WAREHOUSE_READER_PASSWORD"),
        ];
        for (role, _) in roles {
            cluster.create_role(role, &password(role)).unwrap();
        }
        let mut postgres = cluster.connect("postgres").unwrap();
        // The backend as the operator guide's §2 creates it.
        for statement in [
            "CREATE DATABASE datadiff_backend OWNER datadiff_ddl",
            "REVOKE ALL ON DATABASE datadiff_backend FROM PUBLIC",
            "GRANT CONNECT ON DATABASE datadiff_backend TO datadiff_app",
            "CREATE DATABASE payments",
            "CREATE DATABASE warehouse",
        ] {
            postgres.batch_execute(statement).unwrap();
        }
        let base: String =
            postgres.query_one("SELECT (date_trunc('minute', now()) + interval '1 minute')::text", &[]).unwrap().get(0);
        let mut source = cluster.connect("payments").unwrap();
        source
            .batch_execute(
                "CREATE TABLE public.transfers (id bigint PRIMARY KEY, amount numeric(12,2) NOT NULL, \
                     status text NOT NULL, updated_at timestamptz NOT NULL);
                 CREATE INDEX transfers_updated_at_idx ON public.transfers (updated_at);
                 GRANT SELECT ON public.transfers TO datadiff_source_reader;",
            )
            .unwrap();
        source.execute(&format!("INSERT INTO public.transfers {ROWS}"), &[&base]).unwrap();
        source.batch_execute("DELETE FROM public.transfers WHERE id % 30 = 7").unwrap();
        let mut replica = cluster.connect("warehouse").unwrap();
        replica
            .batch_execute(
                "CREATE SCHEMA replicated_payments;
                 CREATE TABLE replicated_payments.transfers (id bigint PRIMARY KEY, amount numeric(12,2),
                     status character varying, updated_at timestamp with time zone,
                     _sdc_extracted_at timestamp, _sdc_batched_at timestamp, _sdc_deleted_at character varying);
                 GRANT USAGE ON SCHEMA replicated_payments TO datadiff_replica_reader;
                 GRANT SELECT ON replicated_payments.transfers TO datadiff_replica_reader;",
            )
            .unwrap();
        replica
            .execute(
                &format!("INSERT INTO replicated_payments.transfers (id, amount, status, updated_at) {ROWS}"),
                &[&base],
            )
            .unwrap();
        replica
            .batch_execute(
                "UPDATE replicated_payments.transfers SET _sdc_deleted_at = '2026-07-22T00:00:00.000000+00:00' \
                  WHERE id % 30 = 7",
            )
            .unwrap();
        let passwords = roles.iter().map(|(role, variable)| (*variable, password(role))).collect();
        World { cluster, project: tempfile::tempdir().unwrap(), scratch: tempfile::tempdir().unwrap(), passwords }
    }

    /// Writes a tour YAML file, pointing its hosts and ports at the cluster.
    fn write(&self, name: &str, text: &str) {
        let port = self.cluster.port();
        let mut written = String::new();
        for line in text.lines() {
            let indent = &line[..line.len() - line.trim_start().len()];
            let line = match line.trim_start() {
                host if host.starts_with("host: ") && host.ends_with(".internal") => format!("{indent}host: 127.0.0.1"),
                "port: 5432" => format!("{indent}port: {port}"),
                _ => line.to_owned(),
            };
            written.push_str(&line);
            written.push('\n');
        }
        std::fs::write(self.project.path().join(name), written).unwrap();
    }

    /// Runs a shell command line in the project directory, `datadiff` first on `PATH`.
    fn sh(&self, line: &str, run_id: Option<&str>) -> Outcome {
        let binary = Path::new(env!("CARGO_BIN_EXE_datadiff"));
        let path = format!("{}:{}", binary.parent().unwrap().display(), std::env::var("PATH").unwrap_or_default());
        let mut command = Command::new("/bin/sh");
        command.args(["-c", line]).current_dir(self.project.path()).env("PATH", path);
        for name in ["RUST_LOG", "PGPASSWORD", "PGPASSFILE", "PGUSER", "PGHOST", "PGPORT", "PGDATABASE", "RUN_ID"] {
            command.env_remove(name);
        }
        command.envs(self.passwords.iter().map(|(name, value)| (*name, value.as_str())));
        if let Some(run_id) = run_id {
            command.env("RUN_ID", run_id);
        }
        let output = command.output().unwrap();
        Outcome {
            code: output.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }

    /// The password held by an environment variable the YAML names.
    fn password(&self, variable: &str) -> &str {
        self.passwords.iter().find(|(name, _)| *name == variable).map(|(_, password)| password.as_str()).unwrap()
    }

    fn replica(&self, sql: &str) {
        self.cluster.connect("warehouse").unwrap().batch_execute(sql).unwrap();
    }

    fn backend(&self) -> postgres::Client {
        self.cluster.connect("datadiff_backend").unwrap()
    }
}

/// The first UUID in `text` (the Run ID of a one-row table).
fn first_uuid(text: &str) -> Option<String> {
    text.split(|c: char| !(c.is_ascii_hexdigit() || c == '-')).find_map(|word| {
        let groups: Vec<usize> = word.split('-').map(str::len).collect();
        (groups == [8, 4, 4, 4, 12]).then(|| word.to_owned())
    })
}

#[test]
fn the_readme_tour_runs_as_written() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/pipelinewise.md")).unwrap();
    let blocks = blocks(&readme, "## A 10-minute tour");
    let world = World::new();
    let mut files = Vec::new();
    let mut commands = Vec::new();
    for block in &blocks {
        let mut info = block.info.split_whitespace();
        match (info.next(), info.next()) {
            (Some("yaml"), Some(file)) => {
                let name = file.strip_prefix("file=").unwrap_or_else(|| panic!("yaml block without file=: {block:?}"));
                world.write(name, &block.text);
                files.push(name.to_owned());
            }
            (Some("sh"), None) => {
                for line in block.text.lines().map(str::trim).filter(|line| !line.is_empty() && !line.starts_with('#'))
                {
                    commands.push(line.to_owned());
                }
            }
            (Some("crontab"), None) => {
                for line in block.text.lines().map(str::trim) {
                    let is_variable = line.split_whitespace().next().is_some_and(|word| word.contains('='));
                    if line.is_empty() || line.starts_with('#') || is_variable {
                        continue;
                    }
                    let words: Vec<&str> = line.split_whitespace().collect();
                    assert!(words.len() > 5, "a crontab line has five time fields and a command: {line}");
                    datadiff::core::schedule::Schedule::parse(&words[..5].join(" "))
                        .unwrap_or_else(|error| panic!("the crontab schedule of {line:?}: {error}"));
                    let rest = words[5..].join(" ");
                    let log = world.scratch.path().join("datadiff.log");
                    commands.push(
                        rest.replace("/srv/pipelinewise", &world.project.path().display().to_string())
                            .replace("/var/log/datadiff.log", &log.display().to_string()),
                    );
                }
            }
            _ => {}
        }
    }
    let mut expected_files = files.clone();
    expected_files.sort();
    assert_eq!(expected_files, ["config.yml", "datadiff.yml", "tap_payments.yml", "target_warehouse.yml"]);

    let mut run_id: Option<String> = None;
    let mut seen = Vec::new();
    for line in &commands {
        if line.starts_with("cargo ") {
            // Step 1's install: not run (see the module docs).
            continue;
        }
        assert!(
            line.starts_with("datadiff ") || line.starts_with("cd "),
            "a tour command that is not datadiff's: {line}"
        );
        let subcommand = line.split("datadiff ").nth(1).and_then(|rest| rest.split_whitespace().next()).unwrap();
        if line.contains(" failures") && run_id.is_none() {
            // The world: the replica loses a row in every hour, and a run finds it.
            world.replica("DELETE FROM replicated_payments.transfers WHERE id % 10 = 3");
            world.sh("datadiff run_data_diff_checks --dir . --all --force", None).expect(1).stdout_has("FAIL");
        }
        if subcommand == "rerun_data_diff_check" {
            // The world: the replica is resynced.
            let mut source = world.cluster.connect("payments").unwrap();
            let rows: Vec<(i64, String)> = source
                .query("SELECT id, format('(%s, %s, %L, %L)', id, amount, status, updated_at) FROM public.transfers WHERE id % 10 = 3", &[])
                .unwrap()
                .iter()
                .map(|row| (row.get(0), row.get(1)))
                .collect();
            let values: Vec<&str> = rows.iter().map(|(_, values)| values.as_str()).collect();
            world.replica(&format!(
                "INSERT INTO replicated_payments.transfers (id, amount, status, updated_at) VALUES {}",
                values.join(", ")
            ));
        }
        let outcome = world.sh(line, run_id.as_deref());
        outcome.expect(0);
        assert!(!outcome.stderr.contains("error"), "{line}: {}", outcome.stderr);
        seen.push(subcommand.to_owned());
        match subcommand {
            "import_config" => {
                let names: Vec<String> = world
                    .backend()
                    .query("SELECT full_check_name FROM public.dd_check_definitions WHERE is_current", &[])
                    .unwrap()
                    .iter()
                    .map(|row| row.get(0))
                    .collect();
                assert_eq!(names, [CHECK]);
            }
            "run_data_diff_checks" => {
                let log = std::fs::read_to_string(world.scratch.path().join("datadiff.log")).unwrap();
                assert!(log.contains(CHECK) && log.contains("PASS"), "the cron run's log: {log}");
            }
            "report" if line.contains(" failures") => {
                outcome.stdout_has(CHECK).stdout_has("FAIL");
                run_id = first_uuid(&outcome.stdout);
                let failed: String = world
                    .backend()
                    .query_one("SELECT run_id::text FROM public.dd_run_slot_state WHERE status = 'FAIL'", &[])
                    .unwrap()
                    .get(0);
                assert_eq!(run_id.as_deref(), Some(failed.as_str()), "the Run ID the report printed");
            }
            "report" if line.contains(" run --run-id") => {
                // The failed attempt's whole record, and the command that lists its rows.
                let run_id = run_id.as_deref().unwrap_or_default();
                outcome.stdout_has(run_id).stdout_has(CHECK).stdout_has("FAIL").stdout_has("row_diff: ");
                outcome.stdout_has(&format!("The rows: datadiff report differences --run-id {run_id}"));
            }
            "report" if line.contains(" differences") => {
                // The rows the world deleted from the replica, by key; no value.
                let keys: Vec<i64> = outcome
                    .stdout
                    .lines()
                    .filter(|row| row.starts_with("row_diff"))
                    .map(|row| {
                        assert!(row.contains("MISSING_IN_TARGET"), "{row}");
                        let key = row.split(r#"{"id":""#).nth(1).and_then(|rest| rest.split('"').next());
                        key.and_then(|key| key.parse().ok()).unwrap_or_else(|| panic!("a key in {row}"))
                    })
                    .collect();
                assert!(!keys.is_empty() && keys.iter().all(|id| id % 10 == 3), "{}", outcome.stdout);
            }
            "rerun_data_diff_check" => {
                let row = world
                    .backend()
                    .query_one(
                        "SELECT status, rerun_of_run_id::text, remediation_reference FROM public.dd_run_attempts \
                          WHERE trigger_type = 'REMEDIATION'",
                        &[],
                    )
                    .unwrap();
                assert_eq!(row.get::<_, String>(0), "PASS");
                assert_eq!(Some(row.get::<_, String>(1)), run_id);
                assert_eq!(row.get::<_, String>(2), "INC-1234");
            }
            "report" if line.contains("--max-lag") && line.contains("json") => {
                let json = outcome.json();
                assert_eq!(json["max_lag"]["passed"], true, "{json}");
                assert_eq!(json["rows"][0]["verified_status"], "CONTIGUOUS", "{json}");
            }
            _ => {}
        }
    }
    for step in [
        "validate",
        "import_config",
        "list_data_diff_checks",
        "doctor",
        "run_data_diff_checks",
        "report",
        "rerun_data_diff_check",
    ] {
        assert!(seen.iter().any(|seen| seen == step), "the tour runs {step}: {seen:?}");
    }
    let alerts = std::fs::read_to_string(world.project.path().join("datadiff-alerts.jsonl")).unwrap();
    assert!(alerts.contains(CHECK), "the forced failure's alert went to datadiff.yml's log handler");
    for (_, password) in &world.passwords {
        assert!(!alerts.contains(password.as_str()));
    }

    operator_guide_commands(&world);
}

/// The operator guide's commands that can run here, each checked to still be in the guide.
fn operator_guide_commands(world: &World) {
    let guide = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/operator-guide.md")).unwrap();
    let guide = guide.split_whitespace().collect::<Vec<_>>().join(" ");
    let quoted = |text: &str| assert!(guide.contains(text), "the operator guide no longer says {text:?}");

    // §3: doctor after setting up the roles.
    quoted("`datadiff doctor --dir <project>`");
    world.sh("datadiff doctor --dir .", None).expect(0);
    // §5: the binary names the backend schema it needs; import_config or migrate applies it.
    quoted("`datadiff --version`");
    world.sh("datadiff --version", None).expect(0).stdout_has("backend schema: PipelineWise 004 (+ extensions");
    quoted("Run `import_config` (or `migrate`) once");
    world.sh("datadiff migrate --dir .", None).expect(0);
    world.sh("datadiff migrate --dir . --status", None).expect(0).stdout_has("pending: nothing, the schema is current");
    // §5: the backup before an upgrade, as the DDL role (the owner of every table).
    quoted("`pg_dump -Fc datadiff_backend`");
    let bindir = datadiff_testkit::find_bindir().unwrap();
    let dump = Command::new(bindir.join("pg_dump"))
        .args(["-Fc", "datadiff_backend"])
        .env("PGHOST", world.cluster.host())
        .env("PGPORT", world.cluster.port().to_string())
        .env("PGUSER", "datadiff_ddl")
        .env("PGPASSWORD", world.password("DATADIFF_DDL_PASSWORD"))
        .output()
        .unwrap();
    assert!(dump.status.success(), "pg_dump: {}", String::from_utf8_lossy(&dump.stderr));
    assert!(dump.stdout.starts_with(b"PGDMP"), "a custom-format dump");
    // §7: one tap per host.
    quoted("`run_data_diff_checks --target T --tap P`");
    world.sh("datadiff run_data_diff_checks --dir . --target warehouse --tap payments", None).expect(0);
}

#[test]
fn the_readme_tap_mysql_example_loads_with_its_engine_and_tls_keys() {
    use datadiff::config::{LoadOptions, Pem};
    use datadiff::core::mysql::MySqlEngine;

    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/pipelinewise.md")).unwrap();
    let blocks = blocks(&readme, "## A 10-minute tour");
    let block = |wanted: &dyn Fn(&Block) -> bool, what: &str| {
        blocks.iter().find(|block| wanted(block)).unwrap_or_else(|| panic!("no {what} block in the tour")).text.clone()
    };
    let tap = block(&|b| b.info == "yaml" && b.text.contains("type: tap-mysql"), "tap-mysql");
    let dir = tempfile::tempdir().unwrap();
    for name in ["config.yml", "target_warehouse.yml"] {
        std::fs::write(dir.path().join(name), block(&|b| b.info == format!("yaml file={name}"), name)).unwrap();
    }
    std::fs::write(dir.path().join("tap_shop.yml"), tap).unwrap();
    // Real certificates and a key: the project loader reads them.
    let certs = dir.path().join("certs");
    std::fs::create_dir(&certs).unwrap();
    datadiff_testkit::write_unrelated_ca(&certs.join("shop-ca.pem")).unwrap();
    datadiff_testkit::write_unrelated_client_certificate("datadiff", &certs).unwrap();
    let env = ["DATADIFF_APP_PASSWORD", "DATADIFF_DDL_PASSWORD", "WAREHOUSE_READER_PASSWORD", "SHOP_READER_PASSWORD"]
        .map(|name| (name.to_owned(), "pw".to_owned()));
    let project = datadiff::config::load_with(dir.path(), &LoadOptions { secret: None, env: Some(env.into()) })
        .unwrap_or_else(|error| panic!("{error}: {:#?}", error.problems()));
    assert!(project.warnings.is_empty(), "{:?}", project.warnings);
    assert_eq!(
        project.definitions.iter().map(|d| d.full_check_name.as_str()).collect::<Vec<_>>(),
        ["warehouse/shop/shop/Orders"]
    );
    let conn = project.tap("shop").and_then(|tap| tap.db_conn.clone()).unwrap();
    let certs = dir.path().join("certs");
    assert_eq!(conn.engine, Some(MySqlEngine::MariaDb));
    assert_eq!(conn.ssl_ca, Some(Pem::File(certs.join("shop-ca.pem"))));
    assert_eq!(conn.ssl_cert, Some(Pem::File(certs.join("datadiff.crt"))));
    assert_eq!(conn.ssl_key, Some(Pem::File(certs.join("datadiff.key"))));
}
