//! `datadiff audit --live`: its usage errors exit 2 naming the argument, and a live audit's
//! verdict is the exit code (0 PASS, 1 BLOCK) with the recheck in the report.

use datadiff_testkit::{SUPERUSER, shared_cluster};

use crate::support::datadiff;

#[test]
fn live_usage_errors_exit_two_naming_the_argument() {
    let base = ["audit", "--source", "host=/nonexistent user=u", "--replica", "host=/nonexistent user=u"];
    let table = ["--table", "public.t"];
    for (extra, named) in [
        (vec!["--live", "--settle", "soon"], "--settle"),
        (vec!["--live", "--settle", "0s"], "--settle"),
        (vec!["--live", "--position", "lsn:x"], "--position"),
        (vec!["--live", "--position", "subscription:"], "--position"),
        (vec!["--settle", "5s"], "--live"),
        (vec!["--position", "subscription:s"], "--live"),
    ] {
        let args: Vec<&str> = base.iter().chain(&table).chain(&extra).copied().collect();
        let outcome = datadiff(&args);
        outcome.expect(2).stderr_has(named);
        assert!(outcome.stdout.is_empty(), "{extra:?}: {}", outcome.stdout);
    }
}

#[test]
fn a_live_audit_exits_zero_on_parity_and_one_on_a_difference_with_its_recheck_reported() {
    let cluster = shared_cluster();
    let (source, replica) = (cluster.fresh_database().unwrap(), cluster.fresh_database().unwrap());
    let sql = "CREATE TABLE public.t (id int PRIMARY KEY, v text); INSERT INTO public.t SELECT g, 'v' || g FROM generate_series(1, 500) g";
    for database in [&source, &replica] {
        database.client().unwrap().batch_execute(sql).unwrap();
    }
    let password = cluster.superuser_password();
    let (source_url, replica_url) = (source.url(SUPERUSER, password), replica.url(SUPERUSER, password));
    let args = [
        "audit",
        "--source",
        &source_url,
        "--replica",
        &replica_url,
        "--table",
        "public.t",
        "--live",
        "--settle",
        "1s",
    ];
    let metrics = tempfile::tempdir().unwrap();
    let metrics_file = metrics.path().join("t.prom");
    let with_metrics: Vec<&str> = args.iter().copied().chain(["--metrics", metrics_file.to_str().unwrap()]).collect();
    datadiff(&with_metrics).expect(0);
    let scrape = std::fs::read_to_string(&metrics_file).unwrap();
    assert!(
        scrape.lines().any(|line| line.starts_with("datadiff_audit_in_flight{") && line.ends_with(" 0")),
        "{scrape}"
    );
    let outcome = datadiff(&args);
    outcome.expect(0).stderr_has("Live parity verified for 500 rows");
    let json = outcome.json();
    assert_eq!((json["status"].as_str(), json["live"]["in_flight"].as_u64()), (Some("PASS"), Some(0)));

    replica.client().unwrap().batch_execute("UPDATE public.t SET v = 'x' WHERE id = 7").unwrap();
    let outcome = datadiff(&args);
    outcome.expect(1).stderr_has("Live parity failed");
    let json = outcome.json();
    assert_eq!(json["examples"], serde_json::json!([{"id": 7, "kind": "CHANGED", "fields": ["v"]}]));
    assert_eq!((json["live"]["persisting"].as_u64(), json["live"]["tracked"].as_bool()), (Some(1), Some(true)));
    assert!(json["live"]["rounds"].as_u64() >= Some(1));
}
