//! A scheduled check whose target requires a client certificate: `datadiff.yml`'s per-side
//! TLS (verify-full, the cluster's CA, the role's certificate) reaches it, sessions and
//! row streams alike; without the certificate, or with the wrong CA, the attempt is an
//! ERROR naming why.

use datadiff_access::Environment;
use datadiff_config::{DbConn, Secret, SideTls};
use datadiff_diff_core::definition::{CheckType, SslMode};
use datadiff_runner::{Connections, SummaryStatus, execute};
use datadiff_testkit::{Cluster, ClusterOptions, write_unrelated_ca};
use serde_json::json;

use crate::context::{Context, counts, db_conn, result, scheduled, slot};
use crate::row_diff::{items_definition, items_sql};

#[test]
fn a_target_requiring_a_client_certificate_passes_through_verify_full_and_errors_without_it() {
    let sql = items_sql("bigint", &[("1", "12:00:00", "1.00", "'a'"), ("2", "12:30:00", "2.00", "'b'")]);
    let context = Context::new(&sql, "");
    let cluster =
        Cluster::start_with(ClusterOptions::new().tls(&["localhost"], &[]).require_client_certificates()).unwrap();
    cluster.create_role("replica_reader", "reader-pw").unwrap();
    let replica = cluster.fresh_database().unwrap();
    replica.client().unwrap().batch_execute(&format!("{sql} GRANT SELECT ON public.items TO replica_reader;")).unwrap();
    let files = tempfile::tempdir().unwrap();
    let issued = cluster.issue_client_certificate("replica_reader", files.path()).unwrap();
    let replica_conn = DbConn {
        host: Some("localhost".to_owned()),
        port: Some(cluster.port()),
        user: Some("replica_reader".to_owned()),
        password: Some(Secret::new("reader-pw")),
        dbname: Some(replica.name().to_owned()),
        ssl: true,
        ..DbConn::default()
    };
    let tls = SideTls {
        sslmode: Some(SslMode::VerifyFull),
        sslrootcert: Some(cluster.ca_certificate().unwrap().to_path_buf()),
        sslcert: Some(issued.certificate.clone()),
        sslkey: Some(issued.key.clone()),
    };
    let connections = |tls: Option<SideTls>| {
        let connections = Connections::new(Environment::default())
            .with_tap("payments", db_conn(&context.source))
            .with_target("postgres", replica_conn.clone());
        match tls {
            Some(tls) => connections.with_target_tls("postgres", tls),
            None => connections,
        }
    };
    let mut definition = items_definition(&context);
    definition.target_database = replica.name().to_owned();
    definition.checks = vec![CheckType::RowCount, CheckType::RowChecksum];
    let stored = context.import(&definition);

    // verify-full with the client certificate: the aggregate checks and row_diff's streams.
    let summary =
        execute(&context.store, &connections(Some(tls.clone())), &stored, slot(), scheduled(), &Context::options())
            .unwrap();
    assert_eq!(summary.status, SummaryStatus::Pass, "{summary:?}");
    let run_id = summary.run_id.unwrap();
    assert_eq!(context.attempt_row(run_id).status, "PASS");
    let rows = context.result_rows(run_id);
    assert_eq!(result(&rows, "row_count").status, "PASS");
    assert_eq!(result(&rows, "row_checksum").status, "PASS");
    assert_eq!(
        counts(&result(&rows, "row_diff").target_value),
        json!({"rows": "2", "missing": "0", "extra": "0", "changed": "0"})
    );

    // `ssl: true` alone is `require` without a certificate: the server refuses the login.
    let rerun = |connections: &Connections| {
        let summary = execute(
            &context.store,
            connections,
            &stored,
            slot(),
            datadiff_diff_core::attempt::StartKind::Scheduled { force: true },
            &Context::options(),
        )
        .unwrap();
        assert_eq!(summary.status, SummaryStatus::Error, "{summary:?}");
        context.attempt_row(summary.run_id.unwrap())
    };
    let attempt = rerun(&connections(None));
    assert_eq!(attempt.status, "ERROR");
    let error = attempt.error.unwrap_or_default();
    assert!(error.contains("connection requires a valid client certificate"), "{error}");

    // A CA that did not sign the server's certificate: refused by the client.
    let wrong = files.path().join("wrong-ca.pem");
    write_unrelated_ca(&wrong).unwrap();
    let attempt = rerun(&connections(Some(SideTls { sslrootcert: Some(wrong), ..tls })));
    assert_eq!(attempt.status, "ERROR");
    let error = attempt.error.unwrap_or_default();
    assert!(
        error.contains("cannot connect to the target database") && error.contains("certificate verify failed"),
        "{error}"
    );
}
