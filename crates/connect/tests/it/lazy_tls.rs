//! [`LazyTls`] against a plaintext server and a TLS one: the OpenSSL context is built only
//! for a server that accepts TLS.

use datadiff_connect::LazyTls;
use datadiff_testkit::{Cluster, ClusterOptions, SUPERUSER};

/// How often [`counted_tls`] built a connector.
static BUILT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

fn counted_tls() -> Result<postgres_openssl::MakeTlsConnector, openssl::error::ErrorStack> {
    BUILT.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let mut builder = openssl::ssl::SslConnector::builder(openssl::ssl::SslMethod::tls_client())?;
    builder.set_verify(openssl::ssl::SslVerifyMode::NONE);
    Ok(postgres_openssl::MakeTlsConnector::new(builder.build()))
}

fn prefer_ssl(cluster: &Cluster) -> bool {
    let database = cluster.fresh_database().unwrap();
    let mut config = postgres::Config::new();
    config
        .host(cluster.host())
        .port(cluster.port())
        .user(SUPERUSER)
        .password(cluster.superuser_password())
        .dbname(database.name())
        .ssl_mode(postgres::config::SslMode::Prefer);
    let mut client = config.connect(LazyTls::new(counted_tls)).unwrap();
    client.query_one("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()", &[]).unwrap().get(0)
}

#[test]
fn lazy_tls_builds_its_connector_only_for_a_server_that_accepts_tls() {
    // The one test using BUILT: the count is exact.
    assert!(!prefer_ssl(datadiff_testkit::shared_cluster()));
    assert_eq!(BUILT.load(std::sync::atomic::Ordering::SeqCst), 0, "a plaintext server cost a TLS context");
    let tls_cluster = Cluster::start_with(ClusterOptions::new().tls(&["localhost"], &[])).unwrap();
    assert!(prefer_ssl(&tls_cluster));
    assert_eq!(BUILT.load(std::sync::atomic::Ordering::SeqCst), 1);
}
