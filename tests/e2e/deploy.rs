//! `docs/deploy/`: the systemd service and timer, the Kubernetes CronJob and the crontab line
//! of its README, parsed and their command lines run against a throwaway cluster.
//!
//! Each file's paths are pointed at the test's directories (`/usr/bin/datadiff` at the built
//! binary, `/srv/pipelinewise` and the CronJob's `/project` at the project directory,
//! node_exporter's textfile directory at a temporary one, `/etc/datadiff/datadiff.env` at an
//! environment file written with the variable names of `docs/deploy/datadiff.env`); the
//! project's `config.yml` takes the backend passwords from those variables, as the files
//! expect. The ticks run at the real time (no `--at`): the fixture's rows lie in July, so
//! every window checked is empty on both sides and passes, unless the test breaks the source.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use prometheus_parse::{Scrape, Value};
use serde_json::Value as Json;

use crate::support::{Fixture, Outcome, closed_port};

const DEPLOY: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/deploy");
const BINARY: &str = env!("CARGO_BIN_EXE_datadiff");

fn deploy_file(name: &str) -> String {
    std::fs::read_to_string(Path::new(DEPLOY).join(name)).unwrap_or_else(|error| panic!("docs/deploy/{name}: {error}"))
}

/// A unit file as systemd reads it: `(section, key, value)` in order (comments and blank
/// lines skipped; these files use no line continuations or quoting).
fn unit_entries(text: &str) -> Vec<(String, String, String)> {
    let mut section = String::new();
    let mut entries = Vec::new();
    for line in text.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        assert!(!line.ends_with('\\'), "no line continuations: {line}");
        if let Some(name) = line.strip_prefix('[').and_then(|rest| rest.strip_suffix(']')) {
            section = name.to_owned();
            continue;
        }
        let (key, value) = line.split_once('=').unwrap_or_else(|| panic!("not key=value: {line}"));
        assert!(!section.is_empty(), "{key} outside a section");
        entries.push((section.clone(), key.trim().to_owned(), value.trim().to_owned()));
    }
    entries
}

/// The values of `key` in `section`.
fn values<'a>(entries: &'a [(String, String, String)], section: &str, key: &str) -> Vec<&'a str> {
    entries.iter().filter(|(s, k, _)| s == section && k == key).map(|(_, _, value)| value.as_str()).collect()
}

/// The one value of `key` in `section`.
#[track_caller]
fn value<'a>(entries: &'a [(String, String, String)], section: &str, key: &str) -> &'a str {
    let found = values(entries, section, key);
    assert_eq!(found.len(), 1, "one [{section}] {key}: {found:?}");
    found[0]
}

/// An environment file as systemd's `EnvironmentFile=` reads these: `KEY=VALUE` lines.
fn environment_file(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .map(|line| {
            let (key, value) = line.split_once('=').unwrap_or_else(|| panic!("not KEY=VALUE: {line}"));
            (key.to_owned(), value.to_owned())
        })
        .collect()
}

/// The directories a deployment file's paths are pointed at.
struct World {
    fixture: Fixture,
    /// node_exporter's textfile directory.
    textfile: tempfile::TempDir,
    /// The environment file and the cron log.
    scratch: tempfile::TempDir,
    env_file: PathBuf,
    env: BTreeMap<String, String>,
}

impl World {
    /// A fixture whose `config.yml` reads the backend passwords from the variables of
    /// `datadiff.env`, an environment file holding them, imported at the real time.
    fn new() -> World {
        let fixture = Fixture::new();
        let names: Vec<String> = environment_file(&deploy_file("datadiff.env")).into_keys().collect();
        assert_eq!(names, ["DATADIFF_APP_PASSWORD", "DATADIFF_DDL_PASSWORD"], "datadiff.env's variables");
        let mut files = fixture.files();
        files.config = files
            .config
            .replace(
                &format!("password: \"{}\"", fixture.app.password),
                "password: \"{{ env_var['DATADIFF_APP_PASSWORD'] }}\"",
            )
            .replace(
                &format!("ddl_password: \"{}\"", fixture.ddl.password),
                "ddl_password: \"{{ env_var['DATADIFF_DDL_PASSWORD'] }}\"",
            );
        assert!(!files.config.contains(&fixture.app.password), "{}", files.config);
        fixture.write(&files);
        let textfile = tempfile::tempdir().unwrap();
        let scratch = tempfile::tempdir().unwrap();
        let env_file = scratch.path().join("datadiff.env");
        std::fs::write(
            &env_file,
            format!(
                "# written by the test\nDATADIFF_APP_PASSWORD={}\nDATADIFF_DDL_PASSWORD={}\n",
                fixture.app.password, fixture.ddl.password
            ),
        )
        .unwrap();
        let env = environment_file(&std::fs::read_to_string(&env_file).unwrap());
        let world = World { fixture, textfile, scratch, env_file, env };
        world.fixture.run_with(&["import_config"], &world.env_pairs()).expect(0);
        world
    }

    fn env_pairs(&self) -> Vec<(&str, &str)> {
        self.env.iter().map(|(key, value)| (key.as_str(), value.as_str())).collect()
    }

    /// `text` with the deployment's paths pointed at this world's.
    fn localize(&self, text: &str) -> String {
        text.replace("/usr/bin/datadiff", BINARY)
            .replace("/srv/pipelinewise", &self.fixture.dir_arg())
            .replace("/var/lib/prometheus/node-exporter", &self.textfile.path().display().to_string())
            .replace("/etc/datadiff/datadiff.env", &self.env_file.display().to_string())
    }

    /// Runs `program args` in `dir` with only this world's variables added (libpq's and the
    /// log's removed, as `support::datadiff_with` does) and the binary's directory first on
    /// `PATH`.
    fn exec(&self, program: &str, args: &[String], dir: &Path, env: &BTreeMap<String, String>) -> Outcome {
        let bin_dir = Path::new(BINARY).parent().unwrap();
        let mut command = Command::new(program);
        command.args(args).current_dir(dir);
        for name in ["RUST_LOG", "PGPASSWORD", "PGPASSFILE", "PGUSER", "PGHOST", "PGPORT", "PGDATABASE", "PGSSLMODE"] {
            command.env_remove(name);
        }
        command.env("PATH", format!("{}:/usr/bin:/bin", bin_dir.display()));
        command.envs(env);
        let output = command.output().unwrap_or_else(|error| panic!("{program} runs: {error}"));
        Outcome {
            code: output.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }

    /// The metrics file node_exporter would read, parsed.
    fn scrape(&self) -> Scrape {
        let text = std::fs::read_to_string(self.textfile.path().join("datadiff.prom")).expect("the metrics file");
        Scrape::parse(text.lines().map(|line| Ok(line.to_owned()))).expect("the exposition format parses")
    }

    /// The files of the textfile directory.
    fn textfile_names(&self) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(self.textfile.path())
            .unwrap()
            .map(|entry| entry.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        names
    }
}

/// The value of the one sample of `name` carrying `labels` (among others).
#[track_caller]
fn sample(scrape: &Scrape, name: &str, labels: &[(&str, &str)]) -> f64 {
    let found: Vec<f64> = scrape
        .samples
        .iter()
        .filter(|s| s.metric == name && labels.iter().all(|(key, value)| s.labels.get(key) == Some(value)))
        .map(|s| match s.value {
            Value::Gauge(value) => value,
            ref other => panic!("{name}: {other:?}"),
        })
        .collect();
    assert_eq!(found.len(), 1, "one {name} with {labels:?}: {:#?}", scrape.samples);
    found[0]
}

/// What the backend says of the fixture's check: the verified end (unix seconds), the
/// newest attempt's status and the open failures.
fn backend_state(fixture: &Fixture) -> (Option<f64>, String, i64) {
    let mut sql = fixture.backend_sql();
    let verified_end: Option<f64> = sql
        .query_opt("SELECT extract(epoch FROM verified_end)::float8 FROM public.dd_watermark_state", &[])
        .unwrap()
        .and_then(|row| row.get(0));
    let status: String = sql
        .query_one("SELECT status FROM public.dd_run_attempts ORDER BY started_at DESC, attempt DESC LIMIT 1", &[])
        .unwrap()
        .get(0);
    let open = fixture.count("SELECT count(*) FROM public.dd_run_slot_state WHERE status IN ('FAIL', 'ERROR')");
    (verified_end, status, open)
}

/// Asserts that the metrics file agrees with the backend and returns the last attempt's
/// status.
#[track_caller]
fn metrics_match_the_backend(world: &World) -> String {
    let scrape = world.scrape();
    let (verified_end, status, open) = backend_state(&world.fixture);
    let check = [("target", "postgres"), ("tap", "payments"), ("schema", "public"), ("table", "transfers")];
    if let Some(end) = verified_end {
        assert_eq!(sample(&scrape, "datadiff_verified_end_timestamp_seconds", &check), end);
    }
    let mut with_status = check.to_vec();
    with_status.push(("status", status.as_str()));
    assert_eq!(sample(&scrape, "datadiff_last_attempt_status", &with_status), 1.0, "{status}");
    assert_eq!(sample(&scrape, "datadiff_open_failures", &check), open as f64);
    assert_eq!(world.textfile_names(), ["datadiff.prom"], "no temporary file left");
    status
}

#[test]
fn the_systemd_service_runs_the_tick_then_always_writes_the_metrics() {
    let world = World::new();
    let service = unit_entries(&deploy_file("datadiff.service"));
    assert_eq!(value(&service, "Service", "Type"), "oneshot");
    assert_eq!(value(&service, "Service", "EnvironmentFile"), "/etc/datadiff/datadiff.env");
    let tick = value(&service, "Service", "ExecStart");
    let metrics = value(&service, "Service", "ExecStopPost");
    assert!(!tick.starts_with('-'), "a failed tick fails the unit: {tick}");
    assert!(tick.contains(" run_data_diff_checks ") && metrics.contains(" report metrics "), "{tick} / {metrics}");

    // As systemd would: the environment file, the working directory, then each command
    // line split on blanks (the lines use no quoting or variables).
    let env = environment_file(
        &std::fs::read_to_string(world.localize(value(&service, "Service", "EnvironmentFile"))).unwrap(),
    );
    let dir = PathBuf::from(world.localize(value(&service, "Service", "WorkingDirectory")));
    for line in [tick, metrics] {
        assert!(!line.contains(['"', '\'', '$', '%']), "no quoting, variables or specifiers: {line}");
        let words: Vec<String> = world.localize(line).split_whitespace().map(str::to_owned).collect();
        assert!(Path::new(&words[0]).is_absolute(), "{line}");
        world.exec(&words[0], &words[1..], &dir, &env).expect(0);
    }
    assert_eq!(metrics_match_the_backend(&world), "PASS");
    assert_eq!(sample(&world.scrape(), "datadiff_verified_status", &[("status", "CONTIGUOUS")]), 1.0);

    let timer = unit_entries(&deploy_file("datadiff.timer"));
    assert_eq!(value(&timer, "Timer", "Unit"), "datadiff.service");
    assert_eq!(value(&timer, "Timer", "Persistent"), "true");
    assert_eq!(value(&timer, "Install", "WantedBy"), "timers.target");
    // `*-*-* *:05:00` is the CronJob's and the crontab's `5 * * * *`.
    let calendar = value(&timer, "Timer", "OnCalendar");
    let minute = calendar.strip_prefix("*-*-* *:").and_then(|rest| rest.strip_suffix(":00"));
    assert_eq!(minute, Some("05"), "{calendar}");
}

#[test]
fn the_kubernetes_cronjob_writes_the_metrics_and_keeps_the_ticks_exit_code() {
    let world = World::new();
    let manifest: Json = serde_saphyr::from_str(&deploy_file("cronjob.yaml")).expect("cronjob.yaml is YAML");
    assert_eq!(manifest["apiVersion"], "batch/v1");
    assert_eq!(manifest["kind"], "CronJob");
    let spec = &manifest["spec"];
    let schedule = spec["schedule"].as_str().unwrap();
    datadiff::core::schedule::Schedule::parse(schedule).unwrap_or_else(|error| panic!("{schedule}: {error}"));
    assert_eq!(schedule, "5 * * * *");
    assert_eq!(spec["concurrencyPolicy"], "Forbid");
    let pod = &spec["jobTemplate"]["spec"]["template"]["spec"];
    assert_eq!(pod["restartPolicy"], "Never");
    let containers = pod["containers"].as_array().unwrap();
    assert_eq!(containers.len(), 1);
    let container = &containers[0];
    let mut argv: Vec<String> =
        container["command"].as_array().unwrap().iter().map(|v| v.as_str().unwrap().to_owned()).collect();
    argv.extend(container["args"].as_array().unwrap().iter().map(|v| v.as_str().unwrap().to_owned()));
    assert_eq!(&argv[..2], ["/bin/sh", "-c"]);
    assert_eq!(argv.len(), 3, "one script: {argv:?}");
    let secret = container["envFrom"][0]["secretRef"]["name"].as_str().unwrap();
    assert_eq!(secret, "datadiff-passwords");

    // The volumes: the project (a ConfigMap) and node_exporter's textfile directory.
    let volumes = pod["volumes"].as_array().unwrap();
    let mut script = argv[2].clone();
    for mount in container["volumeMounts"].as_array().unwrap() {
        let name = mount["name"].as_str().unwrap();
        let path = mount["mountPath"].as_str().unwrap();
        let volume = volumes.iter().find(|volume| volume["name"] == name).unwrap_or_else(|| panic!("volume {name}"));
        let local = if volume.get("configMap").is_some() {
            assert_eq!(mount["readOnly"], true, "the project is read-only");
            world.fixture.dir_arg()
        } else {
            assert_eq!(volume["hostPath"]["path"], "/var/lib/prometheus/node-exporter");
            world.textfile.path().display().to_string()
        };
        script = script.replace(path, &local);
    }
    assert!(script.contains("datadiff run_data_diff_checks ") && script.contains("datadiff report metrics "));

    // A passing tick: exit 0, the metrics written.
    let pod_dir = tempfile::tempdir().unwrap();
    let run = |script: &str| world.exec("/bin/sh", &["-c".to_owned(), script.to_owned()], pod_dir.path(), &world.env);
    run(&script).expect(0);
    assert_eq!(metrics_match_the_backend(&world), "PASS");

    // An unreachable source: the tick's ERROR is the pod's exit 1, and the metrics still say
    // so. (--force makes the tick attempt the slot again.)
    let mut files = world.fixture.files();
    files.config = std::fs::read_to_string(world.fixture.path().join("config.yml")).unwrap();
    let port = datadiff_testkit::shared_cluster().port();
    files.tap = files.tap.replace(&format!("port: {port}"), &format!("port: {}", closed_port()));
    world.fixture.write(&files);
    let forced = script.replace("run_data_diff_checks --dir", "run_data_diff_checks --force --dir");
    assert_ne!(forced, script);
    run(&forced).expect(1).stdout_has("ERROR");
    assert_eq!(metrics_match_the_backend(&world), "ERROR");
    assert!(sample(&world.scrape(), "datadiff_open_failures", &[("table", "transfers")]) >= 1.0);
}

#[test]
fn the_readme_crontab_line_runs_the_tick_then_the_metrics() {
    let world = World::new();
    let readme = deploy_file("README.md");
    let block = readme.split("```crontab\n").nth(1).and_then(|rest| rest.split("```").next()).expect("a crontab block");
    let lines: Vec<&str> = block
        .lines()
        .map(str::trim)
        .filter(|line| {
            !line.is_empty() && !line.starts_with('#') && !line.split_whitespace().next().unwrap().contains('=')
        })
        .collect();
    assert_eq!(lines.len(), 1, "{block}");
    let words: Vec<&str> = lines[0].split_whitespace().collect();
    let schedule = words[..5].join(" ");
    datadiff::core::schedule::Schedule::parse(&schedule).unwrap_or_else(|error| panic!("{schedule}: {error}"));
    assert_eq!(schedule, "5 * * * *");
    let log = world.scratch.path().join("datadiff.log");
    let command = world.localize(&words[5..].join(" ")).replace("/var/log/datadiff.log", &log.display().to_string());
    // cron's environment: no passwords; the line sources the environment file itself.
    let home = tempfile::tempdir().unwrap();
    world.exec("/bin/sh", &["-c".to_owned(), command], home.path(), &BTreeMap::new()).expect(0);
    assert_eq!(metrics_match_the_backend(&world), "PASS");
    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(logged.contains("postgres/payments/public/transfers") && logged.contains("PASS"), "{logged}");
}

#[test]
fn without_the_environment_file_the_error_names_the_unset_variables() {
    let world = World::new();
    let outcome = world.exec(
        BINARY,
        &["run_data_diff_checks".to_owned(), "--dir".to_owned(), world.fixture.dir_arg(), "--all".to_owned()],
        world.fixture.path(),
        &BTreeMap::new(),
    );
    outcome.expect(2).stderr_has(
        "backend_db is missing required fields: password (env_var DATADIFF_APP_PASSWORD is unset), \
         ddl_password (env_var DATADIFF_DDL_PASSWORD is unset)",
    );
    assert_eq!(outcome.stderr.lines().filter(|line| line.starts_with("error:")).count(), 1, "{}", outcome.stderr);
}

/// The Dockerfile's instructions: `(INSTRUCTION, arguments)`, continuation lines joined,
/// comments and blank lines skipped (no parser directives or heredocs are used).
fn dockerfile_instructions(text: &str) -> Vec<(String, String)> {
    let mut instructions = Vec::new();
    let mut pending = String::new();
    for line in text.lines() {
        let trimmed = line.trim();
        if pending.is_empty() && (trimmed.is_empty() || trimmed.starts_with('#')) {
            continue;
        }
        if let Some(continued) = trimmed.strip_suffix('\\') {
            pending.push_str(continued);
            pending.push(' ');
            continue;
        }
        pending.push_str(trimmed);
        let (instruction, arguments) = pending.split_once(' ').unwrap_or_else(|| panic!("no arguments: {pending}"));
        assert!(
            ["FROM", "COPY", "RUN", "USER", "WORKDIR", "ENTRYPOINT", "CMD"].contains(&instruction),
            "an instruction this image uses: {pending}"
        );
        instructions.push((instruction.to_owned(), arguments.trim().to_owned()));
        pending.clear();
    }
    assert!(pending.is_empty(), "a continuation at the end: {pending}");
    instructions
}

/// What can be checked of the image without a container engine: the Dockerfile's
/// instructions (a Debian slim base, the Debian package `cargo deb` writes, a numeric
/// non-root user, datadiff as the entrypoint), the build context `.dockerignore` leaves, and
/// the CronJob and the Kestra flow naming this version's image and running as that user.
/// `.ci/run` builds and runs the image where a container engine can.
#[test]
fn the_dockerfile_installs_the_package_as_a_non_root_user_and_the_examples_use_its_image() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dockerfile = std::fs::read_to_string(root.join("Dockerfile")).unwrap();
    let instructions = dockerfile_instructions(&dockerfile);
    let get = |name: &str| -> Vec<&str> {
        instructions.iter().filter(|(i, _)| i == name).map(|(_, arguments)| arguments.as_str()).collect()
    };
    assert_eq!(instructions[0].0, "FROM", "the base first");
    assert_eq!(get("FROM"), ["debian:bookworm-slim"], "one stage, Debian's slim base");
    let copy = get("COPY");
    assert_eq!(copy, ["target/debian/datadiff_*.deb /tmp/"], "the package cargo deb writes");
    // The pattern matches cargo deb's file name, datadiff_<version>-1_<arch>.deb, and not its
    // debug symbols' datadiff-dbgsym_<version>-1_<arch>.ddeb.
    let pattern = copy[0].split_whitespace().next().unwrap().trim_start_matches("target/debian/");
    let (prefix, suffix) = pattern.split_once('*').unwrap();
    let matches = |name: &str| name.starts_with(prefix) && name.ends_with(suffix);
    assert!(matches(&format!("datadiff_{}-1_amd64.deb", env!("CARGO_PKG_VERSION"))), "{pattern}");
    assert!(!matches(&format!("datadiff-dbgsym_{}-1_amd64.ddeb", env!("CARGO_PKG_VERSION"))), "{pattern}");
    let run = get("RUN").join(" ");
    assert!(run.contains("apt-get install -y --no-install-recommends ca-certificates /tmp/datadiff_*.deb"), "{run}");
    assert!(run.contains("rm -rf /var/lib/apt/lists/*"), "no apt lists left: {run}");
    let user = get("USER");
    assert_eq!(user.len(), 1, "{user:?}");
    let (uid, gid) = user[0].split_once(':').expect("USER uid:gid");
    let uid: u32 = uid.parse().expect("a numeric user, which runAsNonRoot can check");
    assert!(uid > 0 && gid.parse::<u32>().unwrap() > 0, "not root: {}", user[0]);
    assert!(run.contains(&format!("useradd --uid {uid} --user-group")), "the user exists: {run}");
    assert_eq!(get("ENTRYPOINT"), [r#"["datadiff"]"#]);

    let ignore = std::fs::read_to_string(root.join(".dockerignore")).unwrap();
    let patterns: Vec<&str> = ignore.lines().filter(|line| !line.is_empty() && !line.starts_with('#')).collect();
    assert_eq!(patterns, ["*", "!target/debian/datadiff_*.deb"], "the context is the package alone");

    let image = format!("registry.example.com/datadiff:{}", env!("CARGO_PKG_VERSION"));
    let manifest: Json = serde_saphyr::from_str(&deploy_file("cronjob.yaml")).unwrap();
    let pod = &manifest["spec"]["jobTemplate"]["spec"]["template"]["spec"];
    assert_eq!(pod["containers"][0]["image"], image.as_str());
    assert_eq!(pod["securityContext"]["runAsNonRoot"], true);
    assert_eq!(pod["securityContext"]["runAsUser"], u64::from(uid), "the image's user");
    let flow: Json = serde_saphyr::from_str(&deploy_file("kestra-cutover-audit.yml")).unwrap();
    let audit = flow["tasks"].as_array().unwrap().iter().find(|task| task["id"] == "parity_audit").unwrap();
    assert_eq!(audit["containerImage"], image.as_str());
}

/// The Kestra flow's `{{ … }}` expressions this test can evaluate: the inputs' defaults.
fn kestra_render(text: &str, flow: &Json) -> String {
    let mut rendered = text.to_owned();
    for input in flow["inputs"].as_array().unwrap() {
        let id = input["id"].as_str().unwrap();
        let value = match &input["defaults"] {
            Json::Bool(value) => value.to_string(),
            Json::Number(value) => value.to_string(),
            other => panic!("input {id}: {other}"),
        };
        rendered = rendered.replace(&format!("{{{{ inputs.{id} }}}}"), &value);
    }
    assert!(!rendered.contains("{{"), "an expression left: {rendered}");
    rendered
}

/// The Kestra flow: it refuses to start without `cutover_ready`, its audit command (run as
/// written through `/bin/sh`, the DSN secrets pointed at two throwaway databases laid out as
/// the flow's tables) passes on equal tables and fails the task on a changed row, and the
/// cutover task comes after the audit.
#[test]
fn the_kestra_flow_audits_before_the_cutover_and_fails_on_a_difference() {
    let flow: Json = serde_saphyr::from_str(&deploy_file("kestra-cutover-audit.yml")).expect("the flow is YAML");
    assert!(flow["id"].is_string() && flow["namespace"].is_string());
    let tasks = flow["tasks"].as_array().unwrap();
    let ids: Vec<&str> = tasks.iter().map(|task| task["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["require_cutover_window", "parity_audit", "cutover"], "the audit gates the cutover");
    let gate = &tasks[0];
    assert_eq!(gate["type"], "io.kestra.plugin.core.flow.If");
    assert_eq!(gate["condition"], "{{ not inputs.cutover_ready }}");
    assert_eq!(gate["then"][0]["type"], "io.kestra.plugin.core.execution.Fail");
    let cutover_ready = flow["inputs"].as_array().unwrap().iter().find(|input| input["id"] == "cutover_ready");
    assert_eq!(cutover_ready.unwrap()["defaults"], false, "the operator confirms, never the default");
    let audit = &tasks[1];
    assert_eq!(audit["type"], "io.kestra.plugin.scripts.shell.Commands");
    assert_eq!(audit["outputFiles"][0], "cdc-parity-report.json");
    let commands = audit["commands"].as_array().unwrap();
    assert_eq!(commands.len(), 1);
    let command = kestra_render(commands[0].as_str().unwrap(), &flow);
    assert!(command.starts_with("datadiff audit ") && command.contains("--cutover-ready"), "{command}");

    // The flow's tables: a source, and a Debezium-style replica with its metadata table.
    let cluster = datadiff_testkit::shared_cluster();
    let source = cluster.fresh_database().unwrap();
    let replica = cluster.fresh_database().unwrap();
    source
        .client()
        .unwrap()
        .batch_execute(
            "CREATE TABLE public.customers (id bigint PRIMARY KEY, email text, full_name text, plan text, notes text, \
                 updated_at timestamptz);
             INSERT INTO public.customers SELECT g, 'c' || g || '@example.com', 'Customer ' || g, 'basic', NULL, \
                 '2026-07-01 00:00:00+00'::timestamptz + g * interval '1 minute' FROM generate_series(1, 300) g;",
        )
        .unwrap();
    let mut replica_sql = replica.client().unwrap();
    replica_sql
        .batch_execute(
            "CREATE SCHEMA cdc;
             CREATE TABLE cdc.customers (id bigint PRIMARY KEY, email text, full_name text, plan text, notes text, \
                 updated_at timestamptz, _cdc_lsn bigint NOT NULL, _cdc_deleted boolean NOT NULL);
             INSERT INTO cdc.customers SELECT g, 'c' || g || '@example.com', 'Customer ' || g, 'basic', NULL, \
                 '2026-07-01 00:00:00+00'::timestamptz + g * interval '1 minute', g * 10, false \
                 FROM generate_series(1, 300) g;
             INSERT INTO cdc.customers VALUES (301, 'gone@example.com', 'Gone', 'basic', NULL, now(), 3010, true);
             CREATE VIEW cdc.customers_live AS SELECT id, email, full_name, plan, notes, updated_at \
                 FROM cdc.customers WHERE NOT _cdc_deleted;",
        )
        .unwrap();
    let password = cluster.superuser_password();
    let mut env = BTreeMap::new();
    env.insert("SOURCE_DSN".to_owned(), source.url(datadiff_testkit::SUPERUSER, password));
    env.insert("REPLICA_DSN".to_owned(), replica.url(datadiff_testkit::SUPERUSER, password));
    let secrets = audit["env"].as_object().unwrap();
    assert_eq!(secrets["SOURCE_DSN"], "{{ secret('CDC_SOURCE_DSN') }}");
    assert_eq!(secrets["REPLICA_DSN"], "{{ secret('CDC_REPLICA_DSN') }}");

    let working_dir = tempfile::tempdir().unwrap();
    let report_path = working_dir.path().join("cdc-parity-report.json");
    let bin_dir = Path::new(BINARY).parent().unwrap();
    let run = || {
        let output = Command::new("/bin/sh")
            .args(["-c", &command])
            .current_dir(working_dir.path())
            .env_clear()
            .env("PATH", format!("{}:/usr/bin:/bin", bin_dir.display()))
            .envs(&env)
            .output()
            .unwrap();
        Outcome {
            code: output.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    };
    let report = || -> Json { serde_json::from_str(&std::fs::read_to_string(&report_path).unwrap()).unwrap() };
    run().expect(0);
    let passed = report();
    assert_eq!((passed["status"].as_str(), passed["reason"].as_str()), (Some("PASS"), Some("PARITY_VERIFIED")));
    assert_eq!((passed["source_rows"].as_u64(), passed["replica_rows"].as_u64()), (Some(300), Some(300)));

    replica_sql.batch_execute("UPDATE cdc.customers SET plan = 'platinum-tier' WHERE id = 17").unwrap();
    run().expect(1);
    let blocked = report();
    assert_eq!(blocked["status"], "BLOCK");
    assert_eq!(blocked["examples"][0]["id"], 17);
    assert_eq!(blocked["examples"][0]["fields"][0], "plan");
    assert!(!std::fs::read_to_string(&report_path).unwrap().contains("platinum-tier"), "no row value in the report");
}
