//! `datadiff.yml`'s `tls` block (per-side TLS of scheduled checks) and the backend's client
//! certificate.

use std::path::PathBuf;

use datadiff_config::SideTls;
use datadiff_diff_core::definition::SslMode;

use crate::{CONFIG, TARGET, VALID, load_ok, problems, project, tap, write_certificates};

/// A project with `datadiff.yml` = `extensions`, the certificate files `certs/ca.pem`,
/// `certs/dd.crt` and `certs/dd.key` (real PEM: the loader reads them), and `target`.
fn with_certs(target: &str, extensions: &str) -> tempfile::TempDir {
    let text = tap("", "", VALID);
    let dir = project(&[
        ("config.yml", CONFIG),
        ("target_postgres.yml", target),
        ("tap_payments.yml", &text),
        ("datadiff.yml", extensions),
    ]);
    write_certificates(dir.path());
    dir
}

#[test]
fn per_side_tls_is_read_with_paths_resolved_against_the_project() {
    let extensions = "tls:\n  taps:\n    payments:\n      sslmode: verify-full\n      sslrootcert: certs/ca.pem\n      sslcert: certs/dd.crt\n      sslkey: certs/dd.key\n  targets:\n    postgres: {sslmode: verify-ca, sslrootcert: system}\n";
    let dir = with_certs(TARGET, extensions);
    let project = load_ok(&dir);
    let certs = dir.path().join("certs");
    assert_eq!(
        project.tls.tap("payments"),
        Some(&SideTls {
            sslmode: Some(SslMode::VerifyFull),
            sslrootcert: Some(certs.join("ca.pem")),
            sslcert: Some(certs.join("dd.crt")),
            sslkey: Some(certs.join("dd.key")),
        })
    );
    assert_eq!(
        project.tls.target("postgres"),
        Some(&SideTls {
            sslmode: Some(SslMode::VerifyCa),
            sslrootcert: Some(PathBuf::from("system")),
            ..SideTls::default()
        })
    );
    assert_eq!(project.tls.target("payments"), None, "taps and targets are separate namespaces");
}

#[test]
fn bad_tls_entries_name_the_file_and_key_path() {
    let extensions = "tls:\n  taps:\n    payments: {sslmode: sometimes, sslcert: certs/missing.crt, sslkey: certs/dd.key}\n    nope: {sslmode: require}\n  targets:\n    postgres: {sslmode: allow, sslcert: certs/dd.crt, cipher: x}\n  replicas: {}\n";
    let found = problems(&with_certs(TARGET, extensions));
    let paths: Vec<(&str, &str)> = found.iter().map(|p| (p.path.as_str(), p.message.as_str())).collect();
    assert!(found.iter().all(|p| p.file == "datadiff.yml" && p.line.is_some()), "{found:#?}");
    let has = |path: &str, words: &str| paths.iter().any(|(p, m)| *p == path && m.contains(words));
    assert!(has("tls.replicas", "unknown key"), "{paths:#?}");
    assert!(has("tls.taps.payments.sslmode", "verify-full"), "{paths:#?}");
    assert!(has("tls.taps.payments.sslcert", "certs/missing.crt does not exist"), "{paths:#?}");
    assert!(has("tls.taps.nope", "unknown tap 'nope'"), "{paths:#?}");
    assert!(has("tls.targets.postgres.sslmode", "allow is not supported"), "{paths:#?}");
    assert!(has("tls.targets.postgres.sslcert", "needs sslkey"), "{paths:#?}");
    assert!(has("tls.targets.postgres.cipher", ""), "{paths:#?}");
}

#[test]
fn a_mode_weaker_than_ssl_true_is_refused() {
    let target = TARGET.replace("dbname: warehouse}", "dbname: warehouse, ssl: true}");
    let found = problems(&with_certs(&target, "tls:\n  targets:\n    postgres: {sslmode: prefer}\n"));
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_eq!(found[0].path, "tls.targets.postgres.sslmode");
    assert_eq!(found[0].message, "sslmode prefer is weaker than the target's db_conn ssl: true (require)");
    let project = load_ok(&with_certs(&target, "tls:\n  targets:\n    postgres: {sslrootcert: certs/ca.pem}\n"));
    assert_eq!(project.tls.target("postgres").and_then(|tls| tls.sslmode), None, "ssl: true stays require");
}

#[test]
fn the_backend_takes_a_client_certificate_from_datadiff_yml() {
    let extensions = "backend_db: {sslrootcert: certs/ca.pem, sslcert: certs/dd.crt, sslkey: certs/dd.key}\n";
    let dir = with_certs(TARGET, extensions);
    let backend = load_ok(&dir).backend.unwrap_or_else(|| panic!("backend"));
    assert_eq!(backend.sslcert, Some(dir.path().join("certs/dd.crt")));
    assert_eq!(backend.sslkey, Some(dir.path().join("certs/dd.key")));
    let found = problems(&with_certs(TARGET, "backend_db: {sslkey: /nonexistent/dd.key}\n"));
    let messages: Vec<(&str, &str)> = found.iter().map(|p| (p.path.as_str(), p.message.as_str())).collect();
    assert_eq!(
        messages,
        [
            ("backend_db.sslkey", "sslkey file /nonexistent/dd.key does not exist"),
            ("backend_db.sslkey", "sslkey needs sslcert: a client certificate is a certificate and its key"),
        ]
    );
}

#[test]
fn a_postgres_db_conn_takes_a_service_and_libpq_keys_relative_to_the_project() {
    let target = TARGET.replace(
        "dbname: warehouse}",
        "dbname: warehouse, service: dwh, sslmode: verify-full, sslrootcert: certs/ca.pem, \
         sslcert: certs/dd.crt, sslkey: certs/dd.key, keepalives_idle: 30, options: '-c work_mem=8MB', \
         filter_schemas: public}",
    );
    let dir = with_certs(&target, "");
    let project = load_ok(&dir);
    let libpq = &project.target("postgres").unwrap().db_conn.as_ref().unwrap().libpq;
    let certs = dir.path().join("certs");
    assert_eq!(libpq.service.as_deref(), Some("dwh"));
    assert_eq!(
        libpq.tls,
        SideTls {
            sslmode: Some(SslMode::VerifyFull),
            sslrootcert: Some(certs.join("ca.pem")),
            sslcert: Some(certs.join("dd.crt")),
            sslkey: Some(certs.join("dd.key")),
        }
    );
    assert_eq!(
        libpq.driver,
        [("options".to_owned(), "-c work_mem=8MB".to_owned()), ("keepalives_idle".to_owned(), "30".to_owned())],
        "in DRIVER_KEYS' order; filter_schemas (PipelineWise's) ignored"
    );
}

#[test]
fn libpq_keys_datadiff_does_not_apply_and_contradictions_are_errors_naming_the_key() {
    let target = TARGET.replace(
        "dbname: warehouse}",
        "dbname: warehouse, ssl: true, sslmode: prefer, sslcrl: certs/crl.pem, application_name: mine, \
         sslrootcert: certs/missing.pem, sslcert: certs/dd.crt}",
    );
    let found = problems(&with_certs(&target, ""));
    let paths: Vec<(&str, &str)> = found.iter().map(|p| (p.path.as_str(), p.message.as_str())).collect();
    assert!(found.iter().all(|p| p.file == "target_postgres.yml" && p.line.is_some()), "{found:#?}");
    let has = |path: &str, words: &str| paths.iter().any(|(p, m)| *p == path && m.contains(words));
    assert!(has("db_conn.sslmode", "contradicts ssl: true"), "{paths:#?}");
    assert!(has("db_conn.sslcrl", "not applied by datadiff"), "{paths:#?}");
    assert!(has("db_conn.application_name", "pipelinewise-data-diff-source"), "{paths:#?}");
    assert!(has("db_conn.sslrootcert", "certs/missing.pem does not exist"), "{paths:#?}");
    assert!(has("db_conn.sslcert", "needs sslkey"), "{paths:#?}");
}

/// A PEM file must hold what its key takes, found when the project loads (`validate`), not at
/// every run: garbage, a certificate given as `sslkey`, a key that is not the certificate's, a
/// key file other users can read (libpq refuses it), a directory given as a file.
#[test]
fn pem_files_must_hold_what_their_key_takes() {
    use std::os::unix::fs::PermissionsExt as _;
    let problem_of = |extensions: &str, prepare: &dyn Fn(&std::path::Path)| {
        let dir = with_certs(TARGET, extensions);
        prepare(dir.path());
        let found = problems(&dir);
        assert_eq!(found.len(), 1, "{found:#?}");
        let problem = &found[0];
        assert_eq!(problem.file, "datadiff.yml");
        (problem.path.clone(), problem.message.replace(&format!("{}/", dir.path().display()), ""))
    };
    let tap_tls = |settings: &str| format!("tls:\n  taps:\n    payments: {{{settings}}}\n");

    let garbage = |dir: &std::path::Path| std::fs::write(dir.join("certs/ca.pem"), "not a certificate\n").unwrap();
    assert_eq!(
        problem_of(&tap_tls("sslmode: verify-ca, sslrootcert: certs/ca.pem"), &garbage),
        ("tls.taps.payments.sslrootcert".into(), "sslrootcert file certs/ca.pem holds no PEM certificate".into())
    );
    assert_eq!(
        problem_of(&tap_tls("sslmode: verify-ca, sslrootcert: certs"), &|_| {}),
        ("tls.taps.payments.sslrootcert".into(), "sslrootcert file certs is a directory, not a PEM file".into())
    );
    assert_eq!(
        problem_of(&tap_tls("sslcert: certs/dd.crt, sslkey: certs/ca.pem"), &|dir| {
            std::fs::set_permissions(dir.join("certs/ca.pem"), std::fs::Permissions::from_mode(0o600)).unwrap();
        }),
        ("tls.taps.payments.sslkey".into(), "sslkey file certs/ca.pem holds a certificate, not a private key".into())
    );
    let readable = |dir: &std::path::Path| {
        std::fs::set_permissions(dir.join("certs/dd.key"), std::fs::Permissions::from_mode(0o644)).unwrap();
    };
    let (path, message) = problem_of(&tap_tls("sslcert: certs/dd.crt, sslkey: certs/dd.key"), &readable);
    assert_eq!(path, "tls.taps.payments.sslkey");
    assert!(message.starts_with("sslkey file certs/dd.key has group or world access (mode 0644)"), "{message}");
    let other_key = |dir: &std::path::Path| {
        let other = crate::Certificates::generate_for_test();
        std::fs::write(dir.join("certs/dd.key"), other.key).unwrap();
    };
    assert_eq!(
        problem_of("backend_db: {sslcert: certs/dd.crt, sslkey: certs/dd.key}\n", &other_key),
        ("backend_db.sslkey".into(), "sslkey file certs/dd.key: the key does not belong to the certificate".into())
    );
}
