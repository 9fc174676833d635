//! Arguments, help, version and usage errors.

use datadiff_access::Environment;
use datadiff_cli::{Console, Exit, run};

fn datadiff(args: &[&str]) -> (Exit, String, String) {
    let (console, captured) = Console::capture(Environment::default());
    let exit = run(std::iter::once("datadiff").chain(args.iter().copied()), console);
    (exit, captured.stdout(), captured.stderr())
}

#[test]
fn version_and_help_print_to_stdout_and_exit_zero() {
    let (exit, stdout, _) = datadiff(&["--version"]);
    assert_eq!(exit, Exit::Success);
    assert_eq!(
        stdout.trim(),
        format!("datadiff {}\nbackend schema: PipelineWise 004 (+ extensions 3)", env!("CARGO_PKG_VERSION"))
    );
    let (exit, stdout, _) = datadiff(&["audit", "--help"]);
    assert_eq!(exit, Exit::Success);
    for flag in [
        "--source",
        "--replica",
        "--table",
        "--replica-table",
        "--key",
        "--columns",
        "--replica-metadata-table",
        "--lsn-column",
        "--deleted-column",
        "--cutover-ready",
        "--live",
        "--settle",
        "--position",
        "--max-rows",
        "--max-examples",
        "--allow-empty",
        "--empty-string-as-null",
        "--report",
    ] {
        assert!(stdout.contains(flag), "audit --help lacks {flag}");
    }
}

#[test]
fn usage_errors_exit_two_and_never_echo_a_password() {
    let (exit, stdout, stderr) = datadiff(&["audit", "postgresql://app:pw-in-argv-123@db/x"]);
    assert_eq!(exit, Exit::Error);
    assert!(stdout.is_empty());
    assert!(stderr.contains("unexpected argument"), "{stderr}");
    assert!(!stderr.contains("pw-in-argv-123"), "{stderr}");
    let (exit, _, stderr) = datadiff(&["audit", "--source", "s", "--replica", "r", "--table", "no_schema"]);
    assert_eq!(exit, Exit::Error);
    assert!(stderr.contains("--table") && stderr.contains("schema.table"), "{stderr}");
    let (exit, _, _) = datadiff(&[]);
    assert_eq!(exit, Exit::Error, "a command is required");
}

#[test]
fn verbose_counts_before_and_after_the_command_name() {
    // Nothing listens on port 1: the connection error shows its cause chain only under -v.
    let args = ["--source", "host=127.0.0.1 port=1 user=u", "--replica", "host=127.0.0.1 port=1 user=u"];
    let run_with = |before: &[&str], after: &[&str]| {
        let mut all = before.to_vec();
        all.push("audit");
        all.extend(args);
        all.extend(["--table", "s.t", "--cutover-ready"]);
        all.extend(after);
        datadiff(&all)
    };
    for (before, after) in [(&["-vv"][..], &[][..]), (&[], &["-vv"]), (&["-v"], &["-v"])] {
        let (exit, _, stderr) = run_with(before, after);
        assert_eq!(exit, Exit::Error);
        assert!(stderr.contains("caused by:"), "{before:?} {after:?}: {stderr}");
    }
    let (_, _, stderr) = run_with(&[], &[]);
    assert!(!stderr.contains("caused by:"), "{stderr}");
}

#[test]
fn every_command_documents_its_flags_and_answers_to_its_alias() {
    for (command, alias, flags) in [
        ("validate", None, &["--dir", "--secret"][..]),
        ("import_config", Some("import"), &["--dir", "--secret", "--taps", "--at"]),
        (
            "list_data_diff_checks",
            Some("list"),
            &["--dir", "--target", "--tap", "--include-versioned", "--output-format"],
        ),
        (
            "run_data_diff_checks",
            Some("run"),
            &["--all", "--target", "--tap", "--check", "--force", "--at", "--jobs", "--output-format"],
        ),
        ("rerun_data_diff_check", Some("rerun"), &["--run-id", "--remediation-ref", "--at", "--output-format"]),
        ("migrate", None, &["--status", "--to", "--drop-extensions"]),
        ("doctor", None, &["--dir", "--output-format"]),
        (
            "report",
            None,
            &["watermarks", "daily", "failures", "remediations", "differences", "--output-format", "--at"],
        ),
    ] {
        let (exit, stdout, _) = datadiff(&[command, "--help"]);
        assert_eq!(exit, Exit::Success, "{command}");
        for flag in flags {
            assert!(stdout.contains(flag), "{command} --help lacks {flag}:\n{stdout}");
        }
        if let Some(alias) = alias {
            let (exit, aliased, _) = datadiff(&[alias, "--help"]);
            assert_eq!(exit, Exit::Success, "{alias}");
            assert_eq!(aliased, stdout, "{alias} is {command}");
        }
    }
    let (_, stdout, _) = datadiff(&["report", "watermarks", "--help"]);
    assert!(stdout.contains("--max-lag"), "{stdout}");
    let (_, stdout, _) = datadiff(&["report", "differences", "--help"]);
    assert!(stdout.contains("--run-id"), "{stdout}");
}

#[test]
fn project_commands_without_dir_exit_two_naming_it() {
    for args in [&["validate"][..], &["list"], &["run", "--all"], &["report", "daily"], &["doctor"], &["migrate"]] {
        let (exit, stdout, stderr) = datadiff(args);
        assert_eq!(exit, Exit::Error, "{args:?}");
        assert!(stdout.is_empty());
        assert!(stderr.starts_with("error: --dir DIR is required"), "{args:?}: {stderr}");
    }
}

#[test]
fn an_unknown_strategy_is_a_usage_error_naming_the_choices() {
    for args in [
        &["run", "--all", "--strategy", "fastest"][..],
        &["audit", "--source", "s", "--replica", "r", "--table", "public.t", "--strategy", "fastest"][..],
    ] {
        let (exit, stdout, stderr) = datadiff(args);
        assert_eq!(exit, Exit::Error, "{args:?}");
        assert!(stdout.is_empty());
        assert!(stderr.contains("--strategy") && stderr.contains("expected auto, stream or segments"), "{stderr}");
    }
    let (exit, stdout, _) = datadiff(&["run_data_diff_checks", "--help"]);
    assert_eq!(exit, Exit::Success);
    assert!(stdout.contains("--strategy"), "{stdout}");
}

/// `--at` beyond the tolerance says how far ahead it is to the second: 5 min 59 s is not
/// "5 min ahead" of a limit of 5 min.
#[test]
fn an_at_just_beyond_the_tolerance_says_how_far_ahead_it_is() {
    let at = (chrono::Utc::now() + chrono::TimeDelta::seconds(5 * 60 + 59) + chrono::TimeDelta::milliseconds(900))
        .to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    let (exit, _, stderr) = datadiff(&["run", "--all", "--dir", "/nonexistent", "--at", &at]);
    assert_eq!(exit, Exit::Error);
    assert!(stderr.contains("the time is 5 min 59 s ahead of this machine's clock"), "{stderr}");
    assert!(stderr.contains("at most 5 min ahead"), "{stderr}");
}

/// A bad run id is named, never echoed whole: a 100,000-character argument costs one line.
#[test]
fn a_bad_run_id_is_not_echoed_in_full() {
    let long = "x".repeat(100_000);
    for args in [
        vec!["report", "--dir", "/nonexistent", "run", "--run-id", long.as_str()],
        vec!["report", "--dir", "/nonexistent", "differences", "--run-id", long.as_str()],
        vec!["rerun", "--dir", "/nonexistent", "--run-id", long.as_str(), "--remediation-ref", "r"],
    ] {
        let (exit, _, stderr) = datadiff(&args);
        assert_eq!(exit, Exit::Error);
        assert!(stderr.contains("not a run id (a UUID)"), "{}", &stderr[..stderr.len().min(300)]);
        assert!(stderr.len() < 1_000, "{} bytes of stderr", stderr.len());
    }
}

/// `report metrics --help` offers no `--output-format` (it prints only the Prometheus text
/// format), and every command's help ends with the exit codes.
#[test]
fn help_shows_only_what_a_command_takes_and_its_exit_codes() {
    let (exit, stdout, _) = datadiff(&["report", "metrics", "--help"]);
    assert_eq!(exit, Exit::Success);
    assert!(!stdout.contains("--output-format"), "{stdout}");
    assert!(stdout.contains("--output <FILE>"), "{stdout}");
    let (_, stdout, _) = datadiff(&["report", "watermarks", "--help"]);
    assert!(stdout.contains("--output-format"), "the other reports keep it: {stdout}");
    for args in [
        &["--help"][..],
        &["run", "--help"],
        &["audit", "--help"],
        &["report", "--help"],
        &["report", "metrics", "--help"],
        &["validate", "--help"],
    ] {
        let (exit, stdout, _) = datadiff(args);
        assert_eq!(exit, Exit::Success);
        assert!(stdout.contains("\nExit codes:\n  0  "), "{args:?}: {stdout}");
        assert!(stdout.contains("\n  2  "), "{args:?}: {stdout}");
    }
    // Refused as ever, in either position.
    for args in [
        &["report", "--dir", "/nonexistent", "metrics", "--output-format", "json"][..],
        &["report", "--dir", "/nonexistent", "--output-format", "csv", "metrics"],
    ] {
        let (exit, _, stderr) = datadiff(args);
        assert_eq!(exit, Exit::Error);
        assert!(stderr.contains("--output-format does not apply to it"), "{args:?}: {stderr}");
    }
}
