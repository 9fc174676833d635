//! `datadiff demo [--keep]`: the whole product on a throwaway cluster, in about ten seconds
//! (SPEC §8).
//!
//! The demo starts a throwaway PostgreSQL cluster (the testkit's: `initdb` into a temporary
//! directory, a server on 127.0.0.1 on a free port) holding three databases — a source, a
//! replica loaded the way PipelineWise's `target-postgres` loads one (lower-cased names,
//! `_sdc_*` columns, a soft delete) with one drifted row, and a backend owned by a DDL role and
//! used by an application role — writes a project directory for them, and then runs the very
//! commands a user runs, in this process, printing what they print: `validate`,
//! `import_config`, three hourly `run_data_diff_checks` at simulated times (`--at`), the
//! watermark and failure reports, the failed run's row differences, a repair of the replica and
//! `rerun_data_diff_check`, one more
//! run, and the two reports again (CONTIGUOUS, no failure left). The watermark events it prints go INITIALIZE, BLOCK …, ADVANCE.
//!
//! Where MariaDB's server programs are installed (the testkit's detection), a last step adds a
//! `tap-mysql` source: a throwaway MariaDB, started in the background at the beginning so
//! that it costs the story little time, holds `shop.Orders`; the demo loads it into the
//! replica as target-postgres loads a tap-mysql table, writes `tap_shop.yml` (with `engine`
//! and `ssl_ca`; its reader may only log in over TLS), imports it and runs its check, which
//! passes. Without MariaDB one line says what to install and the story runs on PostgreSQL
//! alone. A MariaDB that does not start is said in one line too, and the step is skipped.
//!
//! Each command's exit code is checked against the story: a step that ends otherwise stops the
//! demo with exit 2 (the environment is removed all the same).
//!
//! # Decisions
//!
//! * **One directory holds everything**: the cluster's data, log and socket, and the project
//!   directory (`<cluster dir>/project`). The cluster is removed when the demo ends — dropping
//!   it stops the server and removes the directory, and the testkit's watchdog does the same if
//!   the process dies first (Ctrl-C, `SIGKILL`) — so nothing is left behind in any case.
//! * **`--keep` keeps the process**: a throwaway cluster lives as long as the process that
//!   started it, so with `--keep` the demo prints the project directory, connection URLs
//!   (with their demo-generated passwords: the only place they are ever printed) and commands
//!   to try, then waits until Enter, end of input or Ctrl-C before removing everything.
//! * **Without server binaries** the testkit's error is the one line printed (it says what to
//!   install, or to set `DATADIFF_TEST_PG_BINDIR`), exit 2.
//! * **Simulated times** (2026-07-22, hourly slots) make every run print the same tables and
//!   let the demo take hours of schedule in seconds.
//! * **`row_diff` is on** in the demo's `datadiff.yml`, so `report differences` can name the
//!   drifted row and column (by key and column name; values never leave the databases).

mod mariadb;
mod sandbox;

use std::fmt::Write as _;
use std::io::BufRead;
use std::time::Instant;

use anyhow::Context;
use clap::{Args, Parser};

use self::mariadb::{ORDERS, PendingMariaDb, SHOP_CHECK, SHOP_TAP, Shop};
use self::sandbox::{
    BACKEND_DATABASE, DRIFTED_ID, REPLICA_DATABASE, SOFT_DELETED_ID, SOURCE_DATABASE, Sandbox, TRANSFERS,
    WatermarkEvent,
};
use crate::console::Console;
use crate::exit::Exit;
use crate::listing::{Cell, Column, Listing, column};

/// Show datadiff at work on a throwaway PostgreSQL cluster: drift found, a remediation, the
/// watermark advancing. Needs PostgreSQL's server binaries (Debian: apt-get install postgresql).
#[derive(Debug, Args)]
pub(crate) struct DemoArgs {
    /// Keep the cluster and the project directory after the demo, print how to connect, and
    /// remove them when Enter is pressed (or on Ctrl-C).
    #[arg(long)]
    keep: bool,
    #[command(flatten)]
    verbosity: crate::logging::Verbosity,
}

impl DemoArgs {
    /// `-v` given after the command name.
    pub(crate) fn verbosity(&self) -> u8 {
        self.verbosity.count()
    }
}

/// When the project is imported; the runs follow hourly.
const IMPORT_AT: &str = "2026-07-22T09:30:00Z";
/// The first three runs: slots 10:00 (PASS), 11:00 (the drift: FAIL) and 12:00 (the
/// automatic retry of 11:00 fails again; 12:00 passes).
const RUNS: [(&str, Exit); 3] = [
    ("2026-07-22T10:05:00Z", Exit::Success),
    ("2026-07-22T11:05:00Z", Exit::Failure),
    ("2026-07-22T12:05:00Z", Exit::Failure),
];
/// The reports before the repair.
const BLOCKED_AT: &str = "2026-07-22T12:10:00Z";
/// The remediation.
const REMEDIATE_AT: &str = "2026-07-22T12:20:00Z";
/// The run after the remediation (slot 13:00).
const LAST_RUN_AT: &str = "2026-07-22T13:05:00Z";
/// The final reports.
const FINAL_AT: &str = "2026-07-22T13:10:00Z";
/// The remediation's reference.
const REMEDIATION_REF: &str = "DEMO-1";
/// The label of the backend URL `--keep` prints (the end-to-end tests look for it).
pub(crate) const BACKEND_URL_LABEL: &str = "backend (application role): ";

/// Runs the demo.
pub(crate) fn run(args: &DemoArgs, console: &mut Console) -> anyhow::Result<Exit> {
    let started = Instant::now();
    let verbose = args.verbosity() > 0;
    let with_mariadb = PendingMariaDb::available();
    let steps = if with_mariadb { STEPS + 1 } else { STEPS };
    let mut story = Story { console, verbose, step: 0, steps };
    story.say(
        "datadiff demo: a source, a drifted PipelineWise-style replica and a backend on a throwaway PostgreSQL \
         cluster,\nchecked hourly at simulated times on 2026-07-22.\n",
    )?;

    story.step("Starting a throwaway PostgreSQL cluster")?;
    let mut sandbox = Sandbox::start().map_err(|error| match error {
        error @ datadiff_testkit::Error::BinariesNotFound { .. } => anyhow::Error::new(error),
        error => anyhow::Error::new(error).context("cannot start a throwaway PostgreSQL cluster"),
    })?;
    // MariaDB starts in the background while the PostgreSQL story runs.
    let pending = with_mariadb.then(PendingMariaDb::start);
    let mut shop = None;
    let mut outcome = tell(&mut story, &mut sandbox, args.keep, pending, &mut shop);
    if outcome.is_ok() {
        outcome = story.say(&format!("The demo took {:.1} s.\n", started.elapsed().as_secs_f64()));
    }
    if outcome.is_ok() && args.keep {
        outcome = story.keep(&sandbox, shop.as_ref());
    }
    let dir = sandbox.dir().display().to_string();
    drop(shop);
    drop(sandbox);
    outcome?;
    story.say(&format!(
        "Stopped the server and removed {dir} (the cluster and the project).\n\
         Next: the tour of docs/pipelinewise.md takes your own PipelineWise project through the same steps."
    ))?;
    Ok(Exit::Success)
}

/// The story, from an empty cluster to a verified replica, then the MariaDB source when
/// `pending` starts one (kept in `shop` for `--keep`).
fn tell(
    story: &mut Story<'_>,
    sandbox: &mut Sandbox,
    keep: bool,
    pending: Option<PendingMariaDb>,
    shop: &mut Option<Shop>,
) -> anyhow::Result<()> {
    story.say(&format!(
        "      {}:{}, everything in {}{}",
        sandbox.host(),
        sandbox.port(),
        sandbox.dir().display(),
        if keep { "" } else { " (removed when the demo ends)" }
    ))?;
    match &pending {
        Some(_) => story.say("      A throwaway MariaDB server starts in the background, for the tap-mysql part.\n")?,
        None => story.say(&format!("      {}\n", mariadb::NOT_FOUND))?,
    }

    story.step("Creating a source, a replica and a backend")?;
    sandbox.create_databases()?;
    story.say(&format!(
        "      PostgreSQL {version}, three databases:\n\
         \x20     source   {SOURCE_DATABASE:<17} public.\"Transfers\": {rows} transfers, one every 2 minutes from 08:00 UTC\n\
         \x20     replica  {REPLICA_DATABASE:<17} payments.transfers, as PipelineWise's target-postgres loads it: names\n\
         \x20                                lower-cased, _sdc_* columns; transfer {SOFT_DELETED_ID}, deleted at the source, \
         is kept\n\
         \x20                                soft-deleted (_sdc_deleted_at set). And one silent error: transfer \
         {DRIFTED_ID}'s amount\n\
         \x20                                differs from the source's.\n\
         \x20     backend  {BACKEND_DATABASE:<17} owned by the DDL role datadiff_ddl (runs migrations); datadiff_app only\n\
         \x20                                reads and writes rows. demo_reader reads the source and the replica, read-only.\n",
        version = sandbox.server_version(),
        rows = TRANSFERS - 1,
    ))?;

    story.step("Writing a PipelineWise project directory")?;
    sandbox.write_project()?;
    story.say(&format!(
        "      {}\n\
         \x20       config.yml            backend_db: the backend and its two roles\n\
         \x20       target_warehouse.yml  the replica (target-postgres)\n\
         \x20       tap_payments.yml      the source (tap-postgres) and the table's data_diff: all eight checks,\n\
         \x20                             hourly (0 * * * *), each slot checking the hour before it fired\n\
         \x20       datadiff.yml          datadiff's extensions for the table: exclude_soft_deleted, and row_diff\n\
         \x20                             (name the rows that differ); failure alerts appended to alerts.jsonl\n",
        sandbox.project().display()
    ))?;
    let dir = sandbox.project().display().to_string();
    let dir = dir.as_str();

    story.step("Validating and importing the definitions")?;
    story.say("      import_config migrates the backend (as datadiff_ddl) and stores the check as revision 1.\n")?;
    story.datadiff(&["validate", "--dir", dir], Exit::Success)?;
    story.datadiff(&["import_config", "--dir", dir, "--at", IMPORT_AT], Exit::Success)?;

    story.step("Running the checks hourly, as cron would (simulated times)")?;
    story.say(&format!(
        "      Each run checks the slot that fired last; its window is the hour before. Transfer {DRIFTED_ID} sits in\n\
         \x20     [10:00, 11:00), so that slot FAILs: the counts match, the values do not (row_checksum and\n\
         \x20     row_diff). At 12:05 the failed slot is retried automatically (it fails again: the drift is\n\
         \x20     real) and slot 12:00 passes — its soft-deleted transfer is left out, as datadiff.yml asks.\n"
    ))?;
    for (at, expected) in RUNS {
        story.datadiff(&["run_data_diff_checks", "--dir", dir, "--all", "--at", at], expected)?;
    }

    story.step("Reading the watermark and the failures")?;
    story.say(
        "      The verified watermark stops at 10:00: a later pass never jumps a failed window. The failure\n\
         \x20     report names the run that blocks it, and its row differences name the row and the column\n\
         \x20     (keys and column names only: values never leave the databases).\n",
    )?;
    story.datadiff(&["report", "--dir", dir, "watermarks", "--at", BLOCKED_AT], Exit::Success)?;
    story.datadiff(&["report", "--dir", dir, "failures"], Exit::Success)?;
    let failed = sandbox.unresolved_failure()?;
    story.datadiff(&["report", "--dir", dir, "differences", "--run-id", &failed], Exit::Success)?;

    story.step("Repairing the replica and remediating the failed run")?;
    sandbox.repair_replica()?;
    story.say(&format!(
        "      The replica's transfer {DRIFTED_ID} is resynced from the source. rerun_data_diff_check runs the failed\n\
         \x20     run's window again as a REMEDIATION attempt linked to it, with an incident reference.\n"
    ))?;
    story.datadiff(
        &[
            "rerun_data_diff_check",
            "--dir",
            dir,
            "--run-id",
            &failed,
            "--remediation-ref",
            REMEDIATION_REF,
            "--at",
            REMEDIATE_AT,
        ],
        Exit::Success,
    )?;

    story.step("Running the next slot and reading the reports again")?;
    story.say(
        "      With the gap closed the watermark advances over every passed slot, and no failure is left.\n\
         \x20     --max-lag is the monitoring form: exit 1 when a check is BLOCKED, has not run, or lags more\n\
         \x20     than the limit.\n",
    )?;
    story.datadiff(&["run_data_diff_checks", "--dir", dir, "--all", "--at", LAST_RUN_AT], Exit::Success)?;
    story.datadiff(&["report", "--dir", dir, "watermarks", "--max-lag", "2h", "--at", FINAL_AT], Exit::Success)?;
    story.datadiff(&["report", "--dir", dir, "failures"], Exit::Success)?;

    story.say("The watermark's history (dd_watermark_events), oldest first:")?;
    story.say(&events_table(&sandbox.watermark_events()?))?;
    let alerts = std::fs::read_to_string(sandbox.project().join("alerts.jsonl")).unwrap_or_default();
    story.say(&format!(
        "{} failure alert(s) went to {} (one per failing run of the check).\n",
        alerts.lines().count(),
        sandbox.project().join("alerts.jsonl").display()
    ))?;
    if let Some(pending) = pending {
        *shop = tell_mariadb(story, sandbox, pending)?;
    }
    Ok(())
}

/// When the import of the MariaDB source happens, and its run (slot 13:00).
const SHOP_IMPORT_AT: &str = "2026-07-22T13:10:00Z";
const SHOP_RUN_AT: &str = "2026-07-22T13:15:00Z";

/// The tap-mysql part: a MariaDB source replicated into the same warehouse, its tap file
/// (verified TLS, the engine named), imported and checked. A server that did not start is
/// said in one line, and the part is skipped.
fn tell_mariadb(story: &mut Story<'_>, sandbox: &Sandbox, pending: PendingMariaDb) -> anyhow::Result<Option<Shop>> {
    story.step("Adding a MariaDB source (tap-mysql)")?;
    let shop = match pending.wait().and_then(Shop::create) {
        Ok(shop) => shop,
        Err(error) => {
            story.say(&format!("      MariaDB did not start ({error:#}): the tap-mysql part is skipped.\n"))?;
            return Ok(None);
        }
    };
    shop.replicate(&mut sandbox.replica_client()?, sandbox.reader.name)?;
    shop.write_tap(sandbox.project())?;
    let dir = sandbox.project().display().to_string();
    let dir = dir.as_str();
    story.say(&format!(
        "      MariaDB {version} on 127.0.0.1:{port}: shop.`Orders`, {ORDERS} orders, one every 5 minutes from 08:00\n\
         \x20     UTC, loaded into {REPLICA_DATABASE}'s shop.orders as target-postgres loads a tap-mysql table (names\n\
         \x20     lower-cased, _sdc_* columns). tap_shop.yml reads it as demo_reader, which MariaDB lets in over\n\
         \x20     TLS only: ssl_ca verifies the server's certificate, and engine: mariadb picks the session's\n\
         \x20     statement timeout (max_statement_time; mysql would set max_execution_time).\n",
        version = shop.version(),
        port = shop.port(),
    ))?;
    story.datadiff(&["import_config", "--dir", dir, "--at", SHOP_IMPORT_AT], Exit::Success)?;
    story.datadiff(
        &["run_data_diff_checks", "--dir", dir, "--target", "warehouse", "--tap", SHOP_TAP, "--at", SHOP_RUN_AT],
        Exit::Success,
    )?;
    story.say(&format!(
        "      {SHOP_CHECK} passes: the same row_checksum on MariaDB and PostgreSQL, upstream's SQL on each side.\n"
    ))?;
    Ok(Some(shop))
}

const EVENT_COLUMNS: &[Column] =
    &[column("Event", "event_type"), column("Status", "verified_status"), column("Verified end", "verified_end")];

fn events_table(events: &[WatermarkEvent]) -> String {
    let mut listing = Listing::new(EVENT_COLUMNS);
    for event in events {
        listing.push(vec![
            Cell::string(&event.event_type),
            Cell::string(&event.verified_status),
            Cell::time(event.verified_end),
        ]);
    }
    listing.table()
}

/// The demo's narration and the commands it runs.
struct Story<'c> {
    console: &'c mut Console,
    verbose: bool,
    step: usize,
    /// How many steps the story has (for the `[n/N]` counter).
    steps: usize,
}

/// The steps `tell` announces without MariaDB (one more with it).
const STEPS: usize = 8;

impl Story<'_> {
    /// Prints text and a newline.
    fn say(&mut self, text: &str) -> anyhow::Result<()> {
        let stdout = self.console.stdout();
        writeln!(stdout, "{text}").and_then(|()| stdout.flush()).context("writing to stdout")
    }

    /// Announces the next step.
    fn step(&mut self, title: &str) -> anyhow::Result<()> {
        self.step += 1;
        let heading = format!("[{}/{}] {title}", self.step, self.steps);
        self.say(&heading)
    }

    /// Runs one datadiff command in this process, as a user would type it, and checks that it
    /// ends as the story expects.
    fn datadiff(&mut self, args: &[&str], expected: Exit) -> anyhow::Result<()> {
        let shown = args.iter().map(|arg| shell_word(arg)).collect::<Vec<_>>().join(" ");
        self.say(&format!("$ datadiff {shown}"))?;
        let cli = crate::Cli::try_parse_from(std::iter::once("datadiff").chain(args.iter().copied()))
            .with_context(|| format!("the demo built an invalid command line: datadiff {shown}"))?;
        let exit = match cli.command.execute(self.console) {
            Ok(exit) => exit,
            Err(error) => {
                crate::report_error(self.console, &error, self.verbose);
                Exit::Error
            }
        };
        self.say("")?;
        anyhow::ensure!(
            exit == expected,
            "the demo expected `datadiff {}` to exit {}, it exited {} (see above; -v shows more)",
            args.first().copied().unwrap_or_default(),
            expected.code(),
            exit.code()
        );
        Ok(())
    }

    /// `--keep`: how to look around and connect, then wait for Enter, end of input or Ctrl-C.
    fn keep(&mut self, sandbox: &Sandbox, shop: Option<&Shop>) -> anyhow::Result<()> {
        let program = std::env::current_exe()
            .ok()
            .map(|path| shell_word(&path.display().to_string()))
            .unwrap_or_else(|| "datadiff".to_owned());
        let project = shell_word(&sandbox.project().display().to_string());
        let mut text = String::new();
        let _ = writeln!(text, "--keep: the cluster and the project stay until you press Enter here (or Ctrl-C).\n");
        let _ = writeln!(text, "Project directory: {project}");
        let _ = writeln!(text, "Try, in another terminal:");
        for command in [
            format!("list_data_diff_checks --dir {project}"),
            format!("report --dir {project} watermarks --at {FINAL_AT}"),
            format!("report --dir {project} remediations"),
            format!("report --dir {project} daily"),
            format!("doctor --dir {project}"),
        ] {
            let _ = writeln!(text, "  {program} {command}");
        }
        let _ = writeln!(text, "\nConnect (throwaway passwords, generated for this demo):");
        let _ = writeln!(text, "  {BACKEND_URL_LABEL}{}", sandbox.url(&sandbox.app, BACKEND_DATABASE));
        let _ = writeln!(text, "  backend (DDL role):         {}", sandbox.url(&sandbox.ddl, BACKEND_DATABASE));
        let _ = writeln!(text, "  source (read-only):         {}", sandbox.url(&sandbox.reader, SOURCE_DATABASE));
        let _ = writeln!(text, "  replica (read-only):        {}", sandbox.url(&sandbox.reader, REPLICA_DATABASE));
        let _ = writeln!(text, "  superuser:                  {}", sandbox.superuser_url("postgres"));
        if let Some(shop) = shop {
            let _ = writeln!(text, "  MariaDB source (read-only): {}", shop.client_command(sandbox.project()));
        }
        let _ = writeln!(
            text,
            "  for example: psql '{}' -c 'TABLE dd_watermark_events'",
            sandbox.url(&sandbox.app, BACKEND_DATABASE)
        );
        let _ = writeln!(
            text,
            "\nClean up: press Enter (or Ctrl-C): the server stops and {} is removed, project included.",
            sandbox.dir().display()
        );
        self.say(&text)?;
        // Enter, end of input, or a read error: all mean "done". Ctrl-C ends the process; the
        // cluster's watchdog then removes everything.
        let mut line = String::new();
        let _ = std::io::stdin().lock().read_line(&mut line);
        Ok(())
    }
}

/// An argument as a POSIX shell would need it: as is when it is plain, else single-quoted.
fn shell_word(text: &str) -> String {
    let plain =
        !text.is_empty() && text.bytes().all(|byte| byte.is_ascii_alphanumeric() || b"-_./:=,@+%".contains(&byte));
    if plain { text.to_owned() } else { format!("'{}'", text.replace('\'', r"'\''")) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_are_shown_as_a_shell_would_read_them() {
        assert_eq!(shell_word("/tmp/datadiff-testkit-x/project"), "/tmp/datadiff-testkit-x/project");
        assert_eq!(shell_word("2026-07-22T10:05:00Z"), "2026-07-22T10:05:00Z");
        assert_eq!(shell_word("a b"), "'a b'");
        assert_eq!(shell_word("it's"), r"'it'\''s'");
        assert_eq!(shell_word(""), "''");
    }

    #[test]
    fn the_story_runs_the_commands_it_shows() {
        // Every command line the demo builds parses (an invalid one would stop the demo).
        for args in [
            &["validate", "--dir", "/p"][..],
            &["import_config", "--dir", "/p", "--at", IMPORT_AT],
            &["run_data_diff_checks", "--dir", "/p", "--all", "--at", RUNS[0].0],
            &["report", "--dir", "/p", "watermarks", "--at", BLOCKED_AT],
            &["report", "--dir", "/p", "failures"],
            &["report", "--dir", "/p", "differences", "--run-id", "6f1c1a52-0000-4000-8000-000000000000"],
            &[
                "rerun_data_diff_check",
                "--dir",
                "/p",
                "--run-id",
                "6f1c1a52-0000-4000-8000-000000000000",
                "--remediation-ref",
                REMEDIATION_REF,
                "--at",
                REMEDIATE_AT,
            ],
            &["report", "--dir", "/p", "watermarks", "--max-lag", "2h", "--at", FINAL_AT],
            &["import_config", "--dir", "/p", "--at", SHOP_IMPORT_AT],
            &["run_data_diff_checks", "--dir", "/p", "--target", "warehouse", "--tap", SHOP_TAP, "--at", SHOP_RUN_AT],
        ] {
            let parsed = crate::Cli::try_parse_from(std::iter::once("datadiff").chain(args.iter().copied()));
            assert!(parsed.is_ok(), "{args:?}: {parsed:?}");
        }
    }

    #[test]
    fn the_events_table_has_the_three_columns() {
        let at = chrono::DateTime::parse_from_rfc3339("2026-07-22T10:00:00Z").unwrap().to_utc();
        let event = WatermarkEvent {
            event_type: "INITIALIZE".to_owned(),
            verified_status: "CONTIGUOUS".to_owned(),
            verified_end: Some(at),
        };
        let table = events_table(&[event]);
        assert!(table.contains("Event") && table.contains("Verified end"), "{table}");
        assert!(table.contains("INITIALIZE") && table.contains("2026-07-22T10:00:00+00:00"), "{table}");
    }
}
