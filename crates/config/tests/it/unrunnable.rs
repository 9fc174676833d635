//! Validation refuses what could never run (durations PostgreSQL or its timestamps cannot
//! hold, schedules that never fire or that croner would misread), reports one cause once
//! (a tap that fails to parse, an alias bomb), and warns about windows that can never cover
//! time contiguously.

use crate::{CONFIG, TARGET, VALID, load_ok, problems, project, single_problem, tap};

const DD: &str = "schemas[0].tables[0].data_diff";
const NAME: &str = "postgres/payments/public/transfers";

fn with(replace: &str, by: &str) -> String {
    assert!(VALID.contains(replace), "{replace}");
    VALID.replace(replace, by)
}

fn loaded(text: &str) -> datadiff_config::Project {
    load_ok(&project(&[("config.yml", CONFIG), ("target_postgres.yml", TARGET), ("tap_payments.yml", text)]))
}

// --- 17.3 / 17.8: durations -----------------------------------------------------------------

#[test]
fn a_statement_timeout_above_postgresqls_limit_is_an_error_at_its_path() {
    for bad in ["30d", "25d", "24d20h31min24s", "88000w"] {
        let problem = single_problem("", "", &format!("{VALID}statement_timeout: {bad}\n"));
        assert_eq!(
            (problem.file.as_str(), problem.path.as_str()),
            ("tap_payments.yml", &*format!("{DD}.statement_timeout"))
        );
        assert_eq!(problem.line, Some(19));
        assert_eq!(
            problem.message,
            format!(
                "Duration '{bad}' is longer than 24d20h31min23s, the largest statement_timeout PostgreSQL accepts \
                 (2147483647 milliseconds)"
            )
        );
    }
    // Inherited from the tap's defaults: the defaults' path.
    let problem = single_problem("statement_timeout: 88000w\n", "", VALID);
    assert_eq!(problem.path, "data_diff_defaults.statement_timeout");
    assert!(problem.message.starts_with("Duration '88000w' is longer than"), "{}", problem.message);
    // The limit itself is fine.
    let project = loaded(&tap("", "", &format!("{VALID}statement_timeout: 24d20h31min23s\n")));
    assert_eq!(project.definitions[0].statement_timeout_seconds, 2_147_483);
}

#[test]
fn window_offsets_beyond_a_thousand_years_are_errors_at_their_path() {
    let problem = single_problem("", "", &with("window_start: -2h", "window_start: -88000w"));
    assert_eq!(problem.path, format!("{DD}.window_start"));
    assert!(
        problem
            .message
            .starts_with("Duration '88000w' is longer than 365000d, the largest window offset datadiff accepts"),
        "{}",
        problem.message
    );
    let problem =
        single_problem("", "", &with("window_start: -2h", "window_start: -365000d1s").replace("window_end: -1h\n", ""));
    assert_eq!(problem.path, format!("{DD}.window_start"));
    // window_end is bounded too (its own error, then nothing compares it with window_start).
    let problem = single_problem("", "", &with("window_end: -1h", "window_end: -400000d"));
    assert_eq!(problem.path, format!("{DD}.window_end"));
    assert!(problem.message.starts_with("Duration '400000d' is longer than 365000d"), "{}", problem.message);
    let project = loaded(&tap("", "", &with("window_start: -2h", "window_start: -365000d")));
    assert_eq!(project.definitions[0].window_start_seconds, 365_000 * 86_400);
}

// --- 17.8: schedules --------------------------------------------------------------------------

#[test]
fn a_frequency_that_never_fires_is_an_error_at_its_path() {
    for never in ["0 0 31 2 *", "0 0 30 2 *", "0 0 31 4,6,9,11 *"] {
        let problem = single_problem("", "", &with("frequency: '0 * * * *'", &format!("frequency: '{never}'")));
        assert_eq!((problem.file.as_str(), problem.path.as_str()), ("tap_payments.yml", &*format!("{DD}.frequency")));
        assert_eq!(problem.line, Some(16));
        assert_eq!(
            problem.message,
            format!(
                "frequency '{never}' never fires (no date of the 400-year Gregorian calendar cycle matches it) \
                 in check '{NAME}'. Example: '0 */6 * * *' for every six hours"
            )
        );
    }
    let block = with("frequency: '0 * * * *'\n", "");
    let problem = single_problem("frequency: '0 0 31 2 *'\n", "", &block);
    assert_eq!(problem.path, "data_diff_defaults.frequency");
    // Rare is not never.
    assert_eq!(loaded(&tap("", "", &with("'0 * * * *'", "'0 0 29 2 *'"))).definitions.len(), 1);
}

#[test]
fn a_frequency_with_an_empty_list_item_is_not_a_crontab() {
    for bad in ["5,,6 * * * *", "5, * * * *", "0 0 ,1 * *"] {
        let problem = single_problem("", "", &with("frequency: '0 * * * *'", &format!("frequency: '{bad}'")));
        assert_eq!(problem.path, format!("{DD}.frequency"));
        assert_eq!(
            problem.message,
            format!(
                "frequency must be a crontab expression, got '{bad}' in check '{NAME}'. Example: '0 */6 * * *' for \
                 every six hours"
            )
        );
    }
}

#[test]
fn a_frequency_of_the_wrong_type_is_answered_with_a_crontab_example() {
    let problem = single_problem("", "", &with("frequency: '0 * * * *'", "frequency: 5"));
    assert_eq!(problem.path, format!("{DD}.frequency"));
    assert_eq!(problem.message, "must be a string holding a crontab expression such as '0 */6 * * *', got int");
    let problem = single_problem("", "", &with("frequency: '0 * * * *'", "frequency: '5'"));
    assert_eq!(problem.message, "'5' is too short (at least 2 characters: a crontab expression such as '0 */6 * * *')");
    let problem = single_problem("frequency: [1]\n", "", &with("frequency: '0 * * * *'\n", ""));
    assert_eq!(problem.path, "data_diff_defaults.frequency");
    assert!(problem.message.contains("crontab expression"), "{}", problem.message);
    // Durations keep their own example.
    let problem = single_problem("", "", &with("window_end: -1h", "window_end: 0"));
    assert_eq!(problem.message, "must be a string such as '1h', got int");
}

// --- 17.9: one cause, reported once -----------------------------------------------------------

#[test]
fn a_tap_that_fails_to_parse_is_its_only_problem_not_also_each_datadiff_yml_entry() {
    let extensions = "checks:\n  postgres/broken/public/a:\n    exclude_soft_deleted: true\n  \
                      postgres/broken/public/b:\n    exclude_soft_deleted: true\n  \
                      postgres/payments/public/transfers:\n    exclude_soft_deleted: true\n";
    let dir = project(&[
        ("config.yml", CONFIG),
        ("target_postgres.yml", TARGET),
        ("tap_payments.yml", &tap("", "", VALID)),
        ("tap_broken.yml", "id: broken\nschemas: [unclosed\n"),
        ("datadiff.yml", extensions),
    ]);
    let found = problems(&dir);
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_eq!(found[0].file, "tap_broken.yml");

    // An entry naming a tap that did load still says it is unknown.
    let typo = format!("{extensions}  postgres/payments/public/transfer:\n    exclude_soft_deleted: true\n");
    let dir = project(&[
        ("config.yml", CONFIG),
        ("target_postgres.yml", TARGET),
        ("tap_payments.yml", &tap("", "", VALID)),
        ("tap_broken.yml", "id: broken\nschemas: [unclosed\n"),
        ("datadiff.yml", &typo),
    ]);
    let found = problems(&dir);
    let files: Vec<&str> = found.iter().map(|p| p.file.as_str()).collect();
    assert_eq!(files, ["tap_broken.yml", "datadiff.yml"], "{found:#?}");
    assert!(found[1].message.starts_with("unknown check 'postgres/payments/public/transfer'"));

    // With every tap read, an unknown tap is an unknown check.
    let dir = project(&[
        ("config.yml", CONFIG),
        ("target_postgres.yml", TARGET),
        ("tap_payments.yml", &tap("", "", VALID)),
        ("datadiff.yml", extensions),
    ]);
    let messages: Vec<String> = problems(&dir).into_iter().map(|p| p.message).collect();
    assert_eq!(messages.len(), 2, "{messages:#?}");
    assert!(messages.iter().all(|m| m.starts_with("unknown check 'postgres/broken/public/")), "{messages:#?}");
}

#[test]
fn a_tap_whose_problems_hide_its_id_or_target_suppresses_the_derived_unknown_checks() {
    let extensions = "checks:\n  postgres/orphan/public/transfers:\n    exclude_soft_deleted: true\n";
    let orphan =
        tap("", "", VALID).replace("id: payments", "id: orphan").replace("target: postgres", "target: nowhere");
    let dir = project(&[
        ("config.yml", CONFIG),
        ("target_postgres.yml", TARGET),
        ("tap_orphan.yml", &orphan),
        ("datadiff.yml", extensions),
    ]);
    let found = problems(&dir);
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_eq!(found[0].message, "tap 'orphan' references unknown target 'nowhere'");
}

/// 10 levels of 10 aliases each: 10^10 nodes.
fn alias_bomb() -> String {
    let mut text = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
    for level in 1..10 {
        let previous = format!("*a{}", level - 1);
        text.push_str(&format!("a{level}: &a{level} [{}]\n", vec![previous; 10].join(", ")));
    }
    text
}

#[test]
fn the_alias_expansion_limit_is_reported_once_with_no_bogus_duplicate_keys() {
    let bomb = format!("{}{}", alias_bomb(), tap("", "", VALID));
    let dir = project(&[("config.yml", CONFIG), ("target_postgres.yml", TARGET), ("tap_payments.yml", &bomb)]);
    let found = problems(&dir);
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_eq!(found[0].file, "tap_payments.yml");
    assert!(found[0].message.contains("through aliases"), "{found:#?}");

    // In datadiff.yml too, and its entries are not reported as unknown checks.
    let extensions =
        format!("{}checks:\n  postgres/payments/public/nope:\n    exclude_soft_deleted: true\n", alias_bomb());
    let dir = project(&[
        ("config.yml", CONFIG),
        ("target_postgres.yml", TARGET),
        ("tap_payments.yml", &tap("", "", VALID)),
        ("datadiff.yml", &extensions),
    ]);
    let found = problems(&dir);
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_eq!(found[0].file, "datadiff.yml");
    assert!(found[0].message.contains("through aliases"), "{found:#?}");
}

// --- 18: a window shorter than the time between fires -----------------------------------------

#[test]
fn a_window_shorter_than_the_cron_interval_is_a_warning_not_an_error() {
    let block = with("frequency: '0 * * * *'", "frequency: '0 */6 * * *'")
        .replace("window_start: -2h", "window_start: -3h")
        .replace("window_end: -1h\n", "");
    let project = loaded(&tap("", "", &block));
    assert_eq!(project.definitions.len(), 1, "PipelineWise accepts it, so datadiff imports it");
    assert_eq!(
        project.warnings,
        [format!(
            "tap_payments.yml:12: {DD}: the window (window_start 3h - window_end 0s = 3h) is shorter than the 6h \
             between fire times of frequency '0 */6 * * *' (for example 2000-01-01T00:00:00Z to \
             2000-01-01T06:00:00Z) in check '{NAME}': coverage will never be contiguous, the watermark will stop at \
             the first gap; make the window at least 6h long"
        )]
    );

    // Weekdays at 09:00 with a one-day window: the weekend is never covered.
    let block = with("frequency: '0 * * * *'", "frequency: '0 9 * * 1-5'")
        .replace("window_start: -2h", "window_start: -1d")
        .replace("window_end: -1h\n", "");
    let warnings = loaded(&tap("", "", &block)).warnings;
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].contains("is shorter than the 3d between fire times"), "{warnings:?}");

    // A window as long as the interval, or longer, is contiguous: no warning.
    for (frequency, start, end) in
        [("0 */6 * * *", "-7h", "-1h"), ("0 * * * *", "-2h", "-1h"), ("0 9 * * 1-5", "-4d", "0s")]
    {
        let block = with("frequency: '0 * * * *'", &format!("frequency: '{frequency}'"))
            .replace("window_start: -2h", &format!("window_start: {start}"))
            .replace("window_end: -1h", &format!("window_end: {end}"));
        assert_eq!(loaded(&tap("", "", &block)).warnings, Vec::<String>::new(), "{frequency}");
    }
}
