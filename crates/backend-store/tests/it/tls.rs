//! libpq `sslmode` semantics against a TLS cluster whose certificate names only `localhost`.

use std::path::PathBuf;
use std::sync::OnceLock;

use datadiff_backend_store::{BackendConfig, MigrateOptions, Store};
use datadiff_diff_core::definition::SslMode;
use datadiff_testkit::{Cluster, ClusterOptions, write_unrelated_ca};

use crate::support::{backend, backend_on, single_role_backend_on};

static TLS_CLUSTER: OnceLock<Cluster> = OnceLock::new();

fn tls_cluster() -> &'static Cluster {
    TLS_CLUSTER.get_or_init(|| Cluster::start_with(ClusterOptions::new().tls(&["localhost"], &[])).unwrap())
}

fn right_ca() -> PathBuf {
    tls_cluster().ca_certificate().unwrap().to_path_buf()
}

fn wrong_ca() -> PathBuf {
    let path = tls_cluster().dir().join("datadiff-store-unrelated-ca.pem");
    if !path.exists() {
        write_unrelated_ca(&path).unwrap();
    }
    path
}

/// Whether the application session is encrypted, or the open error.
fn open_ssl(config: BackendConfig) -> Result<bool, datadiff_backend_store::Error> {
    let store = Store::open(config)?;
    let mut client = store.connection()?;
    Ok(client.query_one("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()", &[]).unwrap().get(0))
}

fn with(config: &BackendConfig, host: &str, mode: SslMode, root: Option<PathBuf>) -> BackendConfig {
    BackendConfig { host: host.to_owned(), sslmode: Some(mode), sslrootcert: root, ..config.clone() }
}

#[test]
fn verify_full_accepts_the_right_ca_and_host_and_migrates_over_tls() {
    let backend = backend_on(tls_cluster());
    let config = with(&backend.config, "localhost", SslMode::VerifyFull, Some(right_ca()));
    assert!(open_ssl(config.clone()).unwrap());
    let store = Store::open(config).unwrap();
    store.migrate(&MigrateOptions::latest()).unwrap();
    let mut ddl = store.connect_ddl().unwrap();
    let ssl: bool = ddl.query_one("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()", &[]).unwrap().get(0);
    assert!(ssl);
    assert_eq!(backend.alembic_versions(), vec!["004"]);
}

#[test]
fn verify_full_refuses_a_host_name_mismatch_that_verify_ca_accepts() {
    let backend = backend_on(tls_cluster());
    // The certificate names localhost only; 127.0.0.1 does not match it.
    let error = open_ssl(with(&backend.config, "127.0.0.1", SslMode::VerifyFull, Some(right_ca()))).unwrap_err();
    assert!(error.is_connection(), "{error}");
    assert!(open_ssl(with(&backend.config, "127.0.0.1", SslMode::VerifyCa, Some(right_ca()))).unwrap());
}

#[test]
fn verify_ca_refuses_a_certificate_from_another_ca() {
    let backend = backend_on(tls_cluster());
    let error = open_ssl(with(&backend.config, "localhost", SslMode::VerifyCa, Some(wrong_ca()))).unwrap_err();
    assert!(error.is_connection(), "{error}");
    assert!(error.to_string().starts_with("backend connection failed"));
    let error = open_ssl(with(&backend.config, "localhost", SslMode::VerifyFull, Some(wrong_ca()))).unwrap_err();
    assert!(error.is_connection(), "{error}");
}

/// A rejected server certificate is named as psql names it, not as OpenSSL's internal error
/// (`error:0A000086:SSL routines:…:certificate verify failed: ../ssl/statem/statem_clnt.c`).
#[test]
fn a_rejected_server_certificate_names_its_cause_as_psql_does() {
    let backend = backend_on(tls_cluster());
    let failure = |config| datadiff_connect::chain(&open_ssl(config).unwrap_err());
    let internals = |text: &str| text.contains("0A000086") || text.contains("statem") || text.contains("SSL routines");

    let error = failure(with(&backend.config, "127.0.0.1", SslMode::VerifyFull, Some(right_ca())));
    assert!(error.starts_with("backend connection failed"), "{error}");
    assert!(error.contains("server certificate for \"localhost\" does not match host name \"127.0.0.1\""), "{error}");
    assert!(!internals(&error), "{error}");

    let error = failure(with(&backend.config, "localhost", SslMode::VerifyCa, Some(wrong_ca())));
    assert!(error.contains("certificate verify failed: "), "{error}");
    assert!(
        error.contains(&format!("no root certificate in {} signed the server's certificate", wrong_ca().display())),
        "{error}"
    );
    assert!(!internals(&error), "{error}");

    let missing = tls_cluster().dir().join("datadiff-store-missing-root.crt");
    let error = failure(with(&backend.config, "localhost", SslMode::VerifyFull, Some(missing.clone())));
    assert!(error.contains(&format!("root certificate file \"{}\" does not exist", missing.display())), "{error}");
    assert!(!internals(&error), "{error}");
}

#[test]
fn require_encrypts_without_verifying_unless_a_root_certificate_is_given() {
    let backend = backend_on(tls_cluster());
    // No root file: any certificate, any name.
    assert!(open_ssl(with(&backend.config, "127.0.0.1", SslMode::Require, None)).unwrap());
    // With a root file, libpq's require verifies the chain like verify-ca.
    assert!(open_ssl(with(&backend.config, "127.0.0.1", SslMode::Require, Some(right_ca()))).unwrap());
    let error = open_ssl(with(&backend.config, "127.0.0.1", SslMode::Require, Some(wrong_ca()))).unwrap_err();
    assert!(error.is_connection(), "{error}");
}

#[test]
fn require_refuses_a_server_without_tls() {
    let backend = backend();
    let error = open_ssl(with(&backend.config, "127.0.0.1", SslMode::Require, None)).unwrap_err();
    assert!(error.is_connection(), "{error}");
}

#[test]
fn prefer_uses_tls_when_offered_and_falls_back_to_plaintext() {
    let plain = backend();
    assert!(!open_ssl(with(&plain.config, "127.0.0.1", SslMode::Prefer, None)).unwrap());
    // Unset means prefer.
    assert!(!open_ssl(BackendConfig { sslmode: None, ..plain.config.clone() }).unwrap());
    let tls = backend_on(tls_cluster());
    assert!(open_ssl(with(&tls.config, "127.0.0.1", SslMode::Prefer, None)).unwrap());
    assert!(open_ssl(BackendConfig { sslmode: None, ..tls.config.clone() }).unwrap());
}

#[test]
fn disable_and_allow_stay_plaintext_when_the_server_accepts_it() {
    let backend = backend_on(tls_cluster());
    assert!(!open_ssl(with(&backend.config, "127.0.0.1", SslMode::Disable, None)).unwrap());
    assert!(!open_ssl(with(&backend.config, "127.0.0.1", SslMode::Allow, None)).unwrap());
}

#[test]
fn allow_falls_back_to_tls_when_the_server_rejects_plaintext() {
    let backend = backend_on(tls_cluster());
    // Reject plaintext logins of this test's application role only (other tests share the
    // cluster), then reload the server's configuration.
    let mut superuser = tls_cluster().connect("postgres").unwrap();
    let hba_file: String = superuser.query_one("SHOW hba_file", &[]).unwrap().get(0);
    let rules = std::fs::read_to_string(&hba_file).unwrap();
    let reject = format!("hostnossl all \"{}\" 127.0.0.1/32 reject\n", backend.config.user);
    std::fs::write(&hba_file, format!("{reject}{rules}")).unwrap();
    superuser.execute("SELECT pg_reload_conf()", &[]).unwrap();

    // Wait (bounded) until the reloaded rules refuse a plaintext login.
    let plaintext = with(&backend.config, "127.0.0.1", SslMode::Disable, None);
    let mut refused = None;
    for _ in 0..200 {
        match open_ssl(plaintext.clone()) {
            Ok(_) => std::thread::sleep(std::time::Duration::from_millis(50)),
            Err(error) => {
                refused = Some(error);
                break;
            }
        }
    }
    let refused = refused.expect("the server kept accepting plaintext");
    assert!(refused.is_connection(), "{refused}");

    assert!(open_ssl(with(&backend.config, "127.0.0.1", SslMode::Allow, None)).unwrap());
}

static CLIENT_CERT_CLUSTER: OnceLock<Cluster> = OnceLock::new();

/// A cluster where every role but the superuser needs a client certificate naming it.
fn client_cert_cluster() -> &'static Cluster {
    CLIENT_CERT_CLUSTER.get_or_init(|| {
        Cluster::start_with(ClusterOptions::new().tls(&["localhost"], &[]).require_client_certificates()).unwrap()
    })
}

#[test]
fn a_client_certificate_opens_and_migrates_a_backend_that_requires_one() {
    let cluster = client_cert_cluster();
    let backend = single_role_backend_on(cluster);
    let files = tempfile::tempdir().unwrap();
    let issued = cluster.issue_client_certificate(&backend.config.user, files.path()).unwrap();
    let ca = cluster.ca_certificate().unwrap().to_path_buf();
    let config = BackendConfig {
        host: "localhost".to_owned(),
        sslmode: Some(SslMode::VerifyFull),
        sslrootcert: Some(ca.clone()),
        sslcert: Some(issued.certificate.clone()),
        sslkey: Some(issued.key.clone()),
        ..backend.config.clone()
    };
    assert!(open_ssl(config.clone()).unwrap());
    let store = Store::open(config.clone()).unwrap();
    store.migrate(&MigrateOptions::latest()).unwrap();
    assert_eq!(backend.alembic_versions(), vec!["004"]);
    // require sends the certificate too (without verifying the server).
    assert!(open_ssl(BackendConfig { sslmode: Some(SslMode::Require), sslrootcert: None, ..config.clone() }).unwrap());

    // Without the certificate the server refuses the login.
    let error = open_ssl(BackendConfig { sslcert: None, sslkey: None, ..config.clone() }).unwrap_err();
    assert!(error.is_connection(), "{error}");
    let text = datadiff_connect::chain(&error);
    assert!(text.contains("connection requires a valid client certificate"), "{text}");

    // A missing key file is a configuration error naming it, before connecting.
    let missing = files.path().join("missing.key");
    let error = open_ssl(BackendConfig { sslkey: Some(missing.clone()), ..config }).unwrap_err();
    assert!(error.is_config(), "{error}");
    assert_eq!(error.to_string(), format!("backend client certificate {} could not be loaded", missing.display()));
}
