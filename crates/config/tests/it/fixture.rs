//! The fixture project: two taps (PostgreSQL and MySQL), one PostgreSQL target, tap defaults
//! with table overrides, extensions in `datadiff.yml`. Expected canonical JSON and hashes come
//! from `tests/vectors/hash_vectors.py` (Python's `json.dumps`).

use std::path::Path;

use datadiff_config::LoadOptions;
use datadiff_diff_core::definition::{CheckType, SourceType, SslMode, TargetType};

fn fixture() -> datadiff_config::Project {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/project");
    match datadiff_config::load_with(&dir, &LoadOptions { secret: None, env: Some(crate::env()) }) {
        Ok(project) => project,
        Err(error) => panic!("{error}: {:#?}", error.problems()),
    }
}

#[test]
fn definitions_are_sorted_by_full_check_name() {
    let project = fixture();
    let names: Vec<&str> = project.definitions.iter().map(|d| d.full_check_name.as_str()).collect();
    assert_eq!(
        names,
        ["postgres/payments/public/Refunds", "postgres/payments/public/transfers-v2", "postgres/shop/shop/Orders"]
    );
}

#[test]
fn hashes_match_python() {
    let project = fixture();
    let hash = |name: &str| project.definition(name).map(|d| d.config_hash()).unwrap_or_default();
    assert_eq!(
        hash("postgres/payments/public/transfers-v2"),
        "4791311aa5dcf42175322a801bb44a95ce01750a5ee71222ae73c6b0cb49d749"
    );
    assert_eq!(
        hash("postgres/payments/public/Refunds"),
        "d26fb6ca844a455658098fa2fe71341e7cbe59893932761bbf603610b65a4944"
    );
    assert_eq!(hash("postgres/shop/shop/Orders"), "891e5f1b70b3747d06dffb3062a68a7b27dac3f969f9ad12fb2c9234b55b3b21");
    let orders = project.definition("postgres/shop/shop/Orders").map(|d| d.canonical_json()).unwrap_or_default();
    assert_eq!(
        orders,
        r#"{"checks":["row_count","max_key"],"frequency":"@daily","source_compare_columns":[],"source_database":"shop","source_key_column":"OrderID","source_schema":"shop","source_table":"Orders","source_timestamp_column":"UpdatedAt","source_type":"tap-mysql","statement_timeout_seconds":300,"tap_id":"shop","target_compare_columns":[],"target_database":"warehouse","target_id":"postgres","target_key_column":"orderid","target_schema":"shop_replica","target_table":"orders","target_timestamp_column":"updatedat","target_type":"target-postgres","window_end_seconds":86400,"window_start_seconds":172800}"#
    );
}

#[test]
fn defaults_are_inherited_and_tables_override_them() {
    let project = fixture();
    let transfers =
        project.definition("postgres/payments/public/transfers-v2").cloned().unwrap_or_else(|| panic!("transfers"));
    // Inherited through a YAML anchor'd data_diff_defaults block; `initial_full_scan: yes`.
    assert_eq!(transfers.frequency, "0 * * * *");
    assert_eq!(
        (transfers.window_start_seconds, transfers.window_end_seconds, transfers.statement_timeout_seconds),
        (108_000, 21_600, 120)
    );
    assert!(transfers.initial_full_scan);
    assert_eq!(transfers.checks, CheckType::ALL.to_vec());
    assert_eq!(transfers.target_table, "v2");
    assert_eq!(transfers.target_compare_columns, ["status", "amount"]);

    let refunds = project.definition("postgres/payments/public/Refunds").cloned().unwrap_or_else(|| panic!("refunds"));
    assert_eq!(refunds.frequency, "*/15 * * * *");
    assert_eq!(
        (refunds.window_start_seconds, refunds.window_end_seconds, refunds.statement_timeout_seconds),
        (7_200, 0, 120)
    );
    assert!(!refunds.initial_full_scan);
    assert_eq!(refunds.extensions.row_diff.map(|r| r.max_examples()), Some(5));
    assert!(refunds.extensions.exclude_soft_deleted);

    let orders = project.definition("postgres/shop/shop/Orders").cloned().unwrap_or_else(|| panic!("orders"));
    assert!(!orders.initial_full_scan, "the table's false beats the tap default's true");
    assert_eq!(orders.target_schema, "shop_replica");
}

#[test]
fn the_mysql_tap_imports_and_is_runnable() {
    let project = fixture();
    let orders = project.definition("postgres/shop/shop/Orders").cloned().unwrap_or_else(|| panic!("orders"));
    assert_eq!((orders.source_type, orders.target_type), (SourceType::TapMysql, TargetType::TargetPostgres));
    assert_eq!(orders.unsupported_route(), None, "tap-mysql -> target-postgres runs");
    let transfers =
        project.definition("postgres/payments/public/transfers-v2").cloned().unwrap_or_else(|| panic!("transfers"));
    assert_eq!(transfers.unsupported_route(), None);
}

#[test]
fn taps_targets_and_connections() {
    let project = fixture();
    let ids: Vec<&str> = project.taps.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(ids, ["payments", "shop"]);
    let payments = project.tap("payments").cloned().unwrap_or_else(|| panic!("payments"));
    assert!(payments.send_alert);
    assert_eq!(payments.slack_alert_channel.as_deref(), Some("#payments-alerts"));
    let conn = payments.db_conn.unwrap_or_default();
    let source = conn.source_endpoint();
    assert_eq!((source.host.as_deref(), source.port), (Some("payments-replica.internal"), Some(5433)));
    assert_eq!(source.password.as_ref().map(|p| p.expose()), Some("source-pw"));
    assert!(!project.tap("shop").map(|t| t.send_alert).unwrap_or(true));

    let target = project.target("postgres").cloned().unwrap_or_else(|| panic!("target"));
    assert_eq!(target.target_type, Some(TargetType::TargetPostgres));
    let endpoint = target.db_conn.unwrap_or_default().target_endpoint();
    assert_eq!(
        (endpoint.host.as_deref(), endpoint.dbname.as_deref(), endpoint.ssl),
        (Some("warehouse.internal"), Some("warehouse"), true)
    );
}

#[test]
fn backend_and_alerts() {
    let project = fixture();
    let backend = project.backend.clone().unwrap_or_else(|| panic!("backend"));
    assert_eq!((backend.host.as_str(), backend.port, backend.connect_timeout), ("backend.internal", 6432, 10));
    assert_eq!(backend.password.expose(), "backend-pw");
    assert_eq!(backend.sslmode, Some(SslMode::VerifyFull));
    assert_eq!(backend.sslrootcert, Some(project.dir.join("certs/ca.pem")));
    let slack = project.alerts.slack.clone().unwrap_or_else(|| panic!("slack"));
    assert_eq!(slack.token.expose(), "xoxb-test");
    assert_eq!(slack.data_diff_channel.as_deref(), Some("#data-diff"));
    assert_eq!(project.alerts.victorops.as_ref().map(|v| v.routing_key.as_str()), Some("data"));
    assert_eq!(project.alerts.log.as_ref().map(|l| l.path.clone()), Some(project.dir.join("alerts.jsonl")));
    assert!(project.warnings.is_empty(), "{:?}", project.warnings);
}

#[test]
fn debug_output_holds_no_secret() {
    let project = fixture();
    let debug = format!("{project:?}");
    for secret in ["backend-pw", "owner-pw", "source-pw", "target-pw", "mysql-pw", "xoxb-test", "integrations/generic"]
    {
        assert!(!debug.contains(secret), "{secret} leaked in Debug");
    }
    for definition in &project.definitions {
        assert!(!definition.canonical_json().contains("pw"));
    }
}
