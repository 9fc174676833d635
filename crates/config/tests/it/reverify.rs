//! `checks.<name>.reverify` and `reverify_per_tick` in `datadiff.yml`: a run-time setting of
//! the tick, outside the definition (it never changes the revision), every bad value named by
//! its key path and line.

use datadiff_diff_core::attempt::Reverify;
use datadiff_diff_core::definition::Duration;

use crate::{CONFIG, TARGET, VALID, load_ok, problems, project, tap};

const NAME: &str = "postgres/payments/public/transfers";

fn with_extensions(extensions: &str) -> tempfile::TempDir {
    let text = tap("", "", VALID);
    project(&[
        ("config.yml", CONFIG),
        ("target_postgres.yml", TARGET),
        ("tap_payments.yml", &text),
        ("datadiff.yml", extensions),
    ])
}

#[test]
fn reverify_is_read_by_check_name_and_keeps_the_definitions_hash() {
    let plain = load_ok(&with_extensions("checks: {}\n"));
    assert!(plain.reverify.is_empty());
    let loaded = load_ok(&with_extensions(&format!("checks:\n  {NAME}:\n    reverify: 7d\n")));
    assert_eq!(
        loaded.reverify.get(NAME),
        Some(&Reverify { period: Duration::from_seconds(7 * 86_400), per_tick: Reverify::DEFAULT_PER_TICK })
    );
    assert_eq!(loaded.definitions[0].config_hash(), plain.definitions[0].config_hash(), "no new revision");
    let loaded =
        load_ok(&with_extensions(&format!("checks:\n  {NAME}:\n    reverify: 1d12h\n    reverify_per_tick: 24\n")));
    assert_eq!(loaded.reverify.get(NAME), Some(&Reverify { period: Duration::from_seconds(129_600), per_tick: 24 }));
}

#[test]
fn bad_reverify_settings_name_the_key_path_and_line() {
    let path = format!("checks.{NAME}");
    for (settings, key, message) in [
        (
            "reverify: 0s",
            "reverify",
            "reverify must be a positive duration such as 7d, 36h or 1w2d (units s, min, h, d, w)",
        ),
        (
            "reverify: 7 days",
            "reverify",
            "reverify must be a positive duration such as 7d, 36h or 1w2d (units s, min, h, d, w)",
        ),
        (
            "reverify: 3600",
            "reverify",
            "reverify must be a positive duration such as 7d, 36h or 1w2d (units s, min, h, d, w)",
        ),
        (
            "reverify: -7d",
            "reverify",
            "reverify must be a positive duration such as 7d, 36h or 1w2d (units s, min, h, d, w)",
        ),
        (
            "reverify: 7d\n    reverify_per_tick: 0",
            "reverify_per_tick",
            "reverify_per_tick must be an integer from 1 to 24",
        ),
        (
            "reverify: 7d\n    reverify_per_tick: 25",
            "reverify_per_tick",
            "reverify_per_tick must be an integer from 1 to 24",
        ),
        (
            "reverify: 7d\n    reverify_per_tick: '2'",
            "reverify_per_tick",
            "reverify_per_tick must be an integer from 1 to 24",
        ),
        ("reverify_per_tick: 2", "reverify_per_tick", "reverify_per_tick needs reverify"),
    ] {
        let found = problems(&with_extensions(&format!("checks:\n  {NAME}:\n    {settings}\n")));
        let reported: Vec<(&str, &str, &str)> =
            found.iter().map(|p| (p.file.as_str(), p.path.as_str(), p.message.as_str())).collect();
        assert_eq!(reported, [("datadiff.yml", &*format!("{path}.{key}"), message)], "{settings}");
        let line = if settings.starts_with(key) { 3 } else { 4 };
        assert_eq!(found[0].line, Some(line), "{settings}");
    }
}
