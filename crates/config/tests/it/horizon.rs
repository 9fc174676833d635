//! `checks.<name>.horizon` in `datadiff.yml`: `subscription:NAME` or `column:NAME`, a run-time
//! setting of the tick outside the definition (it never changes the revision), every bad value
//! named by its key path and line.

use datadiff_diff_core::attempt::HorizonSource;

use crate::{CONFIG, TARGET, VALID, load_ok, problems, project, tap};

const NAME: &str = "postgres/payments/public/transfers";

fn with_extensions(tap_text: &str, extensions: &str) -> tempfile::TempDir {
    project(&[
        ("config.yml", CONFIG),
        ("target_postgres.yml", TARGET),
        ("tap_payments.yml", tap_text),
        ("datadiff.yml", extensions),
    ])
}

#[test]
fn horizon_is_read_by_check_name_and_keeps_the_definitions_hash() {
    let text = tap("", "", VALID);
    let plain = load_ok(&with_extensions(&text, "checks: {}\n"));
    assert!(plain.horizon.is_empty());
    let loaded = load_ok(&with_extensions(&text, &format!("checks:\n  {NAME}:\n    horizon: subscription:app_sub\n")));
    assert_eq!(loaded.horizon.get(NAME), Some(&HorizonSource::Subscription("app_sub".into())));
    assert_eq!(loaded.definitions[0].config_hash(), plain.definitions[0].config_hash(), "no new revision");
    let loaded = load_ok(&with_extensions(&text, &format!("checks:\n  {NAME}:\n    horizon: column:__source_ts_ms\n")));
    assert_eq!(loaded.horizon.get(NAME), Some(&HorizonSource::Column("__source_ts_ms".into())));
    assert_eq!(loaded.definitions[0].config_hash(), plain.definitions[0].config_hash(), "no new revision");
}

#[test]
fn bad_horizon_settings_name_the_key_path_and_line() {
    let path = format!("checks.{NAME}.horizon");
    let text = tap("", "", VALID);
    for (setting, message) in [
        (
            "horizon: 'subscription:'",
            "horizon must be 'subscription:NAME' or 'column:NAME' with a non-empty NAME, got 'subscription:'",
        ),
        (
            "horizon: lsn:0/0",
            "horizon must be 'subscription:NAME' or 'column:NAME' with a non-empty NAME, got 'lsn:0/0'",
        ),
        (
            "horizon: app_sub",
            "horizon must be 'subscription:NAME' or 'column:NAME' with a non-empty NAME, got 'app_sub'",
        ),
        ("horizon: 5", "horizon must be a string 'subscription:NAME' or 'column:NAME', got int"),
        ("horizon: {subscription: app_sub}", "horizon must be a string 'subscription:NAME' or 'column:NAME', got dict"),
    ] {
        let found = problems(&with_extensions(&text, &format!("checks:\n  {NAME}:\n    {setting}\n")));
        let reported: Vec<(&str, &str, &str)> =
            found.iter().map(|p| (p.file.as_str(), p.path.as_str(), p.message.as_str())).collect();
        assert_eq!(reported, [("datadiff.yml", path.as_str(), message)], "{setting}");
        assert_eq!(found[0].line, Some(3), "{setting}");
    }
}

/// Native logical replication is PostgreSQL's: a tap-mysql check cannot name a subscription,
/// but may name a column.
#[test]
fn a_subscription_horizon_needs_a_postgresql_source() {
    let mysql = tap("", "", VALID).replace("type: tap-postgres", "type: tap-mysql");
    let found = problems(&with_extensions(&mysql, &format!("checks:\n  {NAME}:\n    horizon: subscription:app_sub\n")));
    let reported: Vec<(&str, &str)> = found.iter().map(|p| (p.path.as_str(), p.message.as_str())).collect();
    assert_eq!(
        reported,
        [(
            &*format!("checks.{NAME}.horizon"),
            "horizon subscription:app_sub needs a tap-postgres source (PostgreSQL native logical replication); \
             this check's source is tap-mysql: use column:NAME"
        )]
    );
    let loaded =
        load_ok(&with_extensions(&mysql, &format!("checks:\n  {NAME}:\n    horizon: column:_sdc_batched_at\n")));
    assert_eq!(loaded.horizon.get(NAME), Some(&HorizonSource::Column("_sdc_batched_at".into())));
}
