//! A verifying connection's rejected server certificate is the driver error's cause, in
//! psql's words ([`CertificateRejected`]), never OpenSSL's internal error text.

use datadiff_connect::{CertificateRejected, ClientTls, RootCertificates, Verify, chain};
use datadiff_testkit::{Cluster, ClusterOptions, SUPERUSER, write_unrelated_ca};

fn connect(cluster: &Cluster, host: &str, tls: &ClientTls) -> Result<postgres::Client, postgres::Error> {
    let mut config = postgres::Config::new();
    config
        .host(host)
        .port(cluster.port())
        .user(SUPERUSER)
        .password(cluster.superuser_password())
        .dbname("postgres")
        .ssl_mode(postgres::config::SslMode::Require);
    config.connect(tls.lazy())
}

#[test]
fn a_rejected_certificate_is_the_connection_errors_cause_in_psqls_words() {
    // The server's certificate names localhost only.
    let cluster = Cluster::start_with(ClusterOptions::new().tls(&["localhost"], &[])).unwrap();
    let right = RootCertificates::File(cluster.ca_certificate().unwrap().to_path_buf());
    let internals = |text: &str| text.contains("0A000086") || text.contains("statem") || text.contains("SSL routines");

    let full = ClientTls::new(&right, Some(Verify::ChainAndHost), None).unwrap();
    let error = connect(&cluster, "127.0.0.1", &full).err().expect("the connection fails");
    let rejected = CertificateRejected::find(&error).expect("the cause is named");
    assert!(rejected.is_name_mismatch());
    assert_eq!(rejected.host(), "127.0.0.1");
    assert_eq!(rejected.to_string(), "server certificate for \"localhost\" does not match host name \"127.0.0.1\"");
    assert!(!internals(&chain(&error)), "{}", chain(&error));
    // The same context connects to the name the certificate holds; verify-ca ignores the name.
    connect(&cluster, "localhost", &full).unwrap();
    connect(&cluster, "127.0.0.1", &ClientTls::new(&right, Some(Verify::Chain), None).unwrap()).unwrap();

    let files = tempfile::tempdir().unwrap();
    let wrong = files.path().join("unrelated-ca.pem");
    write_unrelated_ca(&wrong).unwrap();
    let unknown = ClientTls::new(&RootCertificates::File(wrong.clone()), Some(Verify::Chain), None).unwrap();
    let error = connect(&cluster, "localhost", &unknown).err().expect("the connection fails");
    let rejected = CertificateRejected::find(&error).expect("the cause is named");
    assert!(!rejected.is_name_mismatch());
    let text = rejected.to_string();
    assert!(text.starts_with("certificate verify failed: "), "{text}");
    assert!(text.ends_with(&format!("no root certificate in {} signed the server's certificate", wrong.display())));
    assert!(!internals(&chain(&error)), "{}", chain(&error));

    // A server that declines nothing but a wrong password fails without a rejected certificate.
    let unverified = ClientTls::unverified();
    let mut config = postgres::Config::new();
    config.host("localhost").port(cluster.port()).user(SUPERUSER).password("wrong").dbname("postgres");
    let error = config.connect(unverified.lazy()).err().expect("the connection fails");
    assert!(CertificateRejected::find(&error).is_none(), "{error}");
}
