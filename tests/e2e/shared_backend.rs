//! Two projects on one backend: each `import_config` deactivates only its own targets'
//! definitions (naming each one and why), and each `run_data_diff_checks --all` attempts
//! only the definitions of its own taps — the other project's are never ERRORed or BLOCKed.

use std::path::Path;

use crate::support::{CHECK, Fixture, IMPORT_AT, Outcome, RUN_AT, datadiff};

/// The second project's check: target `lr`, tap `orders`, the same source table.
const OTHER: &str = "lr/orders/public/transfers";

/// A second project directory on the fixture's backend, source and replica: target `lr`
/// (logical replication into the same replica) and tap `orders`.
struct OtherProject {
    dir: tempfile::TempDir,
    config: String,
    target: String,
    tap: String,
}

impl OtherProject {
    fn new(fixture: &Fixture) -> OtherProject {
        let files = fixture.files();
        let target = files.target.replace("id: postgres\n", "id: lr\n");
        let tap = files.tap.replace("id: payments\n", "id: orders\n").replace("target: postgres\n", "target: lr\n");
        assert!(target.contains("id: lr\n") && tap.contains("target: lr\n"));
        let project = OtherProject { dir: tempfile::tempdir().unwrap(), config: files.config, target, tap };
        project.write(Some(&project.tap.clone()));
        project
    }

    /// Writes the files; `tap` is `tap_orders.yml`'s text, `None` removes the file.
    fn write(&self, tap: Option<&str>) {
        let dir = self.dir.path();
        std::fs::write(dir.join("config.yml"), &self.config).unwrap();
        std::fs::write(dir.join("target_lr.yml"), &self.target).unwrap();
        match tap {
            Some(text) => std::fs::write(dir.join("tap_orders.yml"), text).unwrap(),
            None => std::fs::remove_file(dir.join("tap_orders.yml")).unwrap(),
        }
    }

    fn run(&self, args: &[&str]) -> Outcome {
        let dir = self.dir.path().display().to_string();
        let mut all = args.to_vec();
        all.extend(["--dir", dir.as_str()]);
        datadiff(&all)
    }
}

/// `(full_check_name, is_current)` of every definition row, by name and revision.
fn definitions(fixture: &Fixture) -> Vec<(String, bool)> {
    fixture
        .backend_sql()
        .query(
            "SELECT full_check_name, is_current FROM public.dd_check_definitions ORDER BY full_check_name, revision",
            &[],
        )
        .unwrap()
        .iter()
        .map(|row| (row.get(0), row.get(1)))
        .collect()
}

/// `(status, count)` of the attempts of `name`'s revisions.
fn attempts_of(fixture: &Fixture, name: &str) -> Vec<(String, i64)> {
    fixture
        .backend_sql()
        .query(
            "SELECT a.status, count(*) FROM public.dd_run_attempts a \
             JOIN public.dd_check_definitions d USING (check_id) WHERE d.full_check_name = $1 \
             GROUP BY a.status ORDER BY a.status",
            &[&name],
        )
        .unwrap()
        .iter()
        .map(|row| (row.get(0), row.get(1)))
        .collect()
}

/// The watermark status of `name`'s current revision.
fn watermark(fixture: &Fixture, name: &str) -> String {
    fixture
        .backend_sql()
        .query_one(
            "SELECT w.verified_status FROM public.dd_watermark_state w \
             JOIN public.dd_check_definitions d USING (check_id) WHERE d.full_check_name = $1 AND d.is_current",
            &[&name],
        )
        .unwrap()
        .get(0)
}

#[test]
fn two_projects_share_one_backend_without_touching_each_others_definitions() {
    let fixture = Fixture::new();
    fixture.import();
    fixture.run(&["run_data_diff_checks", "--all", "--at", RUN_AT]).expect(0);
    assert_eq!(attempts_of(&fixture, CHECK), [("PASS".to_owned(), 1)]);

    // The second project imports: the first's definition stays current, and the summary says
    // whose targets were left alone.
    let other = OtherProject::new(&fixture);
    let imported = other.run(&["import_config", "--at", IMPORT_AT]);
    imported
        .expect(0)
        .stdout_has("Data-diff definitions deactivated: 0")
        .stdout_has("Left alone (targets of other projects): postgres");
    assert_eq!(definitions(&fixture), [(OTHER.to_owned(), true), (CHECK.to_owned(), true)]);

    // Its --all runs its own check only; the first project's gets no attempt, no ERROR.
    let run = other.run(&["run_data_diff_checks", "--all", "--at", RUN_AT]);
    run.expect(0).stdout_has(OTHER);
    assert!(!run.stdout.contains(CHECK), "{}", run.stdout);
    assert_eq!(attempts_of(&fixture, OTHER), [("PASS".to_owned(), 1)]);
    assert_eq!(attempts_of(&fixture, CHECK), [("PASS".to_owned(), 1)]);
    assert_eq!(watermark(&fixture, CHECK), "CONTIGUOUS");
    // And the first project's --all leaves the second's alone in turn.
    let later = "2026-07-22T14:05:00Z";
    let run = fixture.run(&["run_data_diff_checks", "--all", "--at", later]);
    run.expect(0);
    assert!(!run.stdout.contains(OTHER), "{}", run.stdout);
    assert_eq!(attempts_of(&fixture, OTHER), [("PASS".to_owned(), 1)]);
    assert_eq!(attempts_of(&fixture, CHECK), [("PASS".to_owned(), 2)]);
    // A --check of the other project is unknown here (exit 2), not run.
    fixture.run(&["run_data_diff_checks", "--all", "--check", OTHER, "--at", later]).expect(2).stderr_has(OTHER);
    assert_eq!(attempts_of(&fixture, OTHER), [("PASS".to_owned(), 1)]);

    // The second project drops its table's data_diff block: its import deactivates exactly
    // that definition and says why.
    let without_check = other.tap.split("        data_diff:").next().unwrap().to_owned();
    other.write(Some(&without_check));
    other
        .run(&["import_config", "--at", later])
        .expect(0)
        .stdout_has("Data-diff definitions deactivated: 1")
        .stdout_has(&format!("- {OTHER}: tap 'orders' no longer declares data_diff for this table"));
    assert_eq!(definitions(&fixture), [(OTHER.to_owned(), false), (CHECK.to_owned(), true)]);

    // Re-added, then its tap file removed: a run warns and leaves it alone; the import
    // deactivates it naming the missing tap.
    other.write(Some(&other.tap));
    other.run(&["import_config", "--at", later]).expect(0).stdout_has("Data-diff definitions created  : 1");
    other.write(None);
    let run = other.run(&["run_data_diff_checks", "--all", "--at", later]);
    run.expect(0).stderr_has(&format!(
        "warning: {OTHER}: not run: tap 'orders' of target 'lr' is not in the project YAML; run import_config"
    ));
    assert_eq!(attempts_of(&fixture, OTHER), [("PASS".to_owned(), 1)], "no attempt of the re-added revision");
    other
        .run(&["import_config", "--at", later])
        .expect(0)
        .stdout_has(&format!("- {OTHER}: tap 'orders' of target 'lr' is no longer in the project YAML"));
    assert_eq!(
        definitions(&fixture),
        [(OTHER.to_owned(), false), (OTHER.to_owned(), false), (CHECK.to_owned(), true)],
        "the first project's definition is current throughout"
    );
    assert_eq!(watermark(&fixture, CHECK), "CONTIGUOUS");
    assert!(Path::new(&fixture.dir_arg()).join("tap_payments.yml").exists());
}
