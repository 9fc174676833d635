use datadiff_testkit::{Cluster, ClusterOptions, write_unrelated_ca};
use openssl::ssl::{SslConnector, SslMethod};
use postgres::config::SslMode;
use postgres_openssl::MakeTlsConnector;

fn connector(ca: &std::path::Path) -> MakeTlsConnector {
    let mut builder = SslConnector::builder(SslMethod::tls_client()).unwrap();
    builder.set_ca_file(ca).unwrap();
    MakeTlsConnector::new(builder.build())
}

#[test]
fn a_tls_cluster_serves_a_certificate_signed_by_its_ca_for_the_requested_names() {
    let cluster = Cluster::start_with(ClusterOptions::new().tls(&["localhost"], &[])).unwrap();
    let ca = cluster.ca_certificate().unwrap().to_path_buf();

    // Verified against the cluster's CA with the host name on the certificate: TLS in use.
    let mut config = cluster.config("postgres");
    config.host("localhost").ssl_mode(SslMode::Require);
    let mut client = config.connect(connector(&ca)).unwrap();
    let ssl: bool = client.query_one("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()", &[]).unwrap().get(0);
    assert!(ssl);

    // The certificate does not carry 127.0.0.1: host-name verification refuses it.
    let mut config = cluster.config("postgres");
    config.ssl_mode(SslMode::Require);
    assert!(config.connect(connector(&ca)).is_err(), "127.0.0.1 is not on the certificate");

    // A CA that did not sign it: refused.
    let wrong = cluster.dir().join("wrong-ca.pem");
    write_unrelated_ca(&wrong).unwrap();
    let mut config = cluster.config("postgres");
    config.host("localhost").ssl_mode(SslMode::Require);
    assert!(config.connect(connector(&wrong)).is_err(), "an unrelated CA must not verify the server");
}

#[test]
fn a_client_certificate_cluster_admits_only_roles_presenting_one_it_signed() {
    let cluster =
        Cluster::start_with(ClusterOptions::new().tls(&["localhost"], &[]).require_client_certificates()).unwrap();
    cluster.create_role("app", "app-pw").unwrap();
    let ca = cluster.ca_certificate().unwrap().to_path_buf();
    let dir = tempfile::tempdir().unwrap();
    let with_client = |files: &datadiff_testkit::ClientCertificateFiles| {
        let mut builder = SslConnector::builder(SslMethod::tls_client()).unwrap();
        builder.set_ca_file(&ca).unwrap();
        builder.set_certificate_chain_file(&files.certificate).unwrap();
        builder.set_private_key_file(&files.key, openssl::ssl::SslFiletype::PEM).unwrap();
        MakeTlsConnector::new(builder.build())
    };
    let mut config = cluster.config_for("app", "app-pw", "postgres");
    config.host("localhost").ssl_mode(SslMode::Require);

    let signed = cluster.issue_client_certificate("app", dir.path()).unwrap();
    let mut client = config.connect(with_client(&signed)).unwrap();
    let ssl: bool = client.query_one("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()", &[]).unwrap().get(0);
    assert!(ssl);

    let Err(refused) = config.connect(connector(&ca)) else { panic!("connected without a client certificate") };
    let message = refused.as_db_error().map(|db| db.message().to_owned()).unwrap_or_else(|| refused.to_string());
    assert!(message.contains("client certificate"), "no client certificate: {message}");
    let unrelated_dir = dir.path().join("unrelated");
    std::fs::create_dir(&unrelated_dir).unwrap();
    let unrelated = datadiff_testkit::write_unrelated_client_certificate("app", &unrelated_dir).unwrap();
    assert!(config.connect(with_client(&unrelated)).is_err(), "a certificate the cluster's CA did not sign");
    let other = cluster.issue_client_certificate("someone", dir.path()).unwrap();
    assert!(config.connect(with_client(&other)).is_err(), "verify-full: the CN must be the role");
    // The superuser keeps plain TCP for the testkit's own sessions.
    cluster.connect("postgres").unwrap();
}
