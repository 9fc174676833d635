//! Never certify what has not happened, and never pass a misspelt crontab line (issue 18's
//! guards): `--at` far ahead of the real clock is a usage error, a window that ends after the
//! real clock is not attempted, and a selection naming an unknown target, tap or check exits 2.

use chrono::{Duration, SecondsFormat, Utc};

use crate::support::Fixture;

fn ahead(minutes: i64) -> String {
    (Utc::now() + Duration::minutes(minutes)).to_rfc3339_opts(SecondsFormat::Secs, true)
}

#[test]
fn an_at_an_hour_ahead_of_the_clock_is_a_usage_error_on_every_recording_command() {
    let fixture = Fixture::new();
    fixture.import();
    let at = ahead(60);
    for args in [
        vec!["run", "--all", "--at", at.as_str()],
        vec!["import_config", "--at", at.as_str()],
        vec![
            "rerun_data_diff_check",
            "--run-id",
            "00000000-0000-0000-0000-000000000001",
            "--remediation-ref",
            "r",
            "--at",
            at.as_str(),
        ],
    ] {
        let outcome = fixture.run(&args);
        outcome.expect(2).stderr_has("ahead of this machine's clock");
    }
    assert_eq!(fixture.count("SELECT count(*) FROM public.dd_run_attempts"), 0);
}

#[test]
fn a_window_that_ends_after_the_real_clock_is_not_attempted() {
    let fixture = Fixture::new();
    let mut files = fixture.files();
    files.tap = files
        .tap
        .replace("frequency: \"0 * * * *\"", "frequency: \"* * * * *\"")
        .replace("window_start: \"-1h\"", "window_start: \"-1min\"");
    fixture.write(&files);
    fixture.import();
    // Three minutes ahead is within the tolerance for clock skew, but the current slot's
    // window [slot - 1m, slot) ends in the future.
    let outcome = fixture.run(&["run", "--all", "--at", ahead(3).as_str(), "--output-format", "json"]);
    outcome.expect(0);
    let summaries = outcome.json()["summaries"].as_array().cloned().unwrap_or_default();
    assert_eq!(summaries.len(), 1, "{}", outcome.stdout);
    assert_eq!(summaries[0]["status"], "SKIPPED");
    assert!(summaries[0]["reason"].as_str().unwrap_or_default().contains("ends after the current time"));
    assert_eq!(fixture.count("SELECT count(*) FROM public.dd_run_attempts"), 0);
    assert_eq!(fixture.count("SELECT count(*) FROM public.dd_run_slot_state"), 0);
}

#[test]
fn a_selection_naming_an_unknown_target_tap_or_check_exits_two_naming_it() {
    let fixture = Fixture::new();
    fixture.import();
    fixture.run(&["run", "--target", "warehouse", "--tap", "payments"]).expect(2).stderr_has("'warehouse'");
    fixture.run(&["run", "--target", "postgres", "--tap", "nope"]).expect(2).stderr_has("'nope'");
    fixture.run(&["run", "--all", "--check", "nope/x/y/z"]).expect(2).stderr_has("'nope/x/y/z'");
    assert_eq!(fixture.count("SELECT count(*) FROM public.dd_run_attempts"), 0);
}
