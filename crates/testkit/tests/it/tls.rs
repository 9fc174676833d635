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
