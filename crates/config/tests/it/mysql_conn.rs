//! A `tap-mysql` tap's connection keys beyond PostgreSQL's: `engine` and the TLS keys
//! `ssl_ca`, `ssl_cert`, `ssl_key`, read as PipelineWise's data-diff reads them.

use datadiff_config::{DbConn, Pem, Project};
use datadiff_diff_core::mysql::MySqlEngine;

use crate::{CONFIG, Certificates, TARGET, VALID, load_ok, problems, project, tap, write_certificates};

/// A tap-mysql tap whose flow `db_conn` mapping carries `extra` (e.g. `engine: mariadb`),
/// in a project with `certs/ca.pem`, `certs/dd.crt` and `certs/dd.key`.
fn mysql_project(extra: &str) -> tempfile::TempDir {
    let text = tap("", "", VALID).replace("type: tap-postgres", "type: tap-mysql").replace(
        "db_conn: {host: primary, dbname: payments}",
        &format!("db_conn: {{host: primary, dbname: payments{extra}}}"),
    );
    let dir = project(&[("config.yml", CONFIG), ("target_postgres.yml", TARGET), ("tap_payments.yml", &text)]);
    write_certificates(dir.path());
    dir
}

fn db_conn(project: &Project) -> DbConn {
    project.tap("payments").and_then(|tap| tap.db_conn.clone()).unwrap_or_default()
}

#[test]
fn engine_and_tls_keys_are_read_with_paths_resolved_against_the_project() {
    let dir = mysql_project(", engine: mariadb, ssl_ca: certs/ca.pem, ssl_cert: certs/dd.crt, ssl_key: certs/dd.key");
    let conn = db_conn(&load_ok(&dir));
    let certs = dir.path().join("certs");
    assert_eq!(conn.engine, Some(MySqlEngine::MariaDb));
    assert_eq!(conn.ssl_ca, Some(Pem::File(certs.join("ca.pem"))));
    assert_eq!(conn.ssl_cert, Some(Pem::File(certs.join("dd.crt"))));
    assert_eq!(conn.ssl_key, Some(Pem::File(certs.join("dd.key"))));
    assert!(!conn.ssl, "ssl_ca alone does not set ssl");

    let conn = db_conn(&load_ok(&mysql_project(", engine: mysql")));
    assert_eq!((conn.engine, conn.ssl_ca), (Some(MySqlEngine::MySql), None));
    let conn = db_conn(&load_ok(&mysql_project("")));
    assert_eq!(conn.engine, None, "without engine the server's version decides");
}

/// PEM text as a double-quoted YAML scalar holds it: line ends escaped.
fn yaml_text(pem: &str) -> String {
    pem.replace('\n', "\\n")
}

#[test]
fn pem_text_is_taken_as_is_and_never_printed() {
    let certificates = Certificates::generate_for_test();
    let (pem, cert) = (yaml_text(&certificates.key), yaml_text(&certificates.certificate));
    let dir = mysql_project(&format!(", ssl: 'true', ssl_cert: \"{cert}\", ssl_key: \"{pem}\""));
    let project = load_ok(&dir);
    let conn = db_conn(&project);
    assert!(conn.ssl);
    match &conn.ssl_key {
        Some(Pem::Text(text)) => assert!(text.expose().starts_with("-----BEGIN PRIVATE KEY-----\n")),
        other => panic!("expected PEM text, got {other:?}"),
    }
    assert!(matches!(conn.ssl_cert, Some(Pem::Text(_))));
    let body = certificates.key.lines().nth(1).unwrap();
    assert!(!format!("{project:?}").contains(body), "the key's text is redacted");
}

#[test]
fn bad_mysql_keys_name_the_file_and_key_path() {
    let found = problems(&mysql_project(", engine: MariaDB, ssl_ca: certs/missing.pem, ssl_cert: [a]"));
    let paths: Vec<(&str, &str)> = found.iter().map(|p| (p.path.as_str(), p.message.as_str())).collect();
    assert!(found.iter().all(|p| p.file == "tap_payments.yml" && p.line.is_some()), "{found:#?}");
    let has = |path: &str, words: &str| paths.iter().any(|(p, m)| *p == path && m.contains(words));
    assert!(has("db_conn.engine", "unknown engine 'MariaDB': use mysql or mariadb"), "{paths:#?}");
    assert!(has("db_conn.ssl_ca", "certs/missing.pem does not exist"), "{paths:#?}");
    assert!(has("db_conn.ssl_cert", "must be a string, got list"), "{paths:#?}");
    assert_eq!(found.len(), 3, "{found:#?}");

    let found = problems(&mysql_project(", ssl: true, ssl_cert: certs/dd.crt"));
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_eq!(found[0].path, "db_conn.ssl_cert");
    assert_eq!(found[0].message, "MySQL ssl_cert and ssl_key must be configured together (ssl_key is missing)");

    let found = problems(&mysql_project(", engine: 3"));
    assert_eq!((found[0].path.as_str(), found.len()), ("db_conn.engine", 1), "{found:#?}");
}

#[test]
fn a_client_certificate_without_verified_tls_is_ignored_with_a_warning() {
    // Upstream reads ssl_cert and ssl_key only under verified TLS; TLS stays opportunistic.
    let project = load_ok(&mysql_project(", ssl_cert: certs/dd.crt"));
    let conn = db_conn(&project);
    assert_eq!((conn.ssl_cert, conn.ssl_key), (None, None));
    assert!(
        project.warnings.iter().any(|warning| warning.contains("db_conn.ssl_cert") && warning.contains("ignored")),
        "{:?}",
        project.warnings
    );
}

#[test]
fn mysql_keys_are_not_read_for_postgres_taps() {
    let text = tap("", "", VALID).replace(
        "db_conn: {host: primary, dbname: payments}",
        "db_conn: {host: primary, dbname: payments, engine: whatever, ssl_ca: missing.pem}",
    );
    let dir = project(&[("config.yml", CONFIG), ("target_postgres.yml", TARGET), ("tap_payments.yml", &text)]);
    let conn = db_conn(&load_ok(&dir));
    assert_eq!((conn.engine, conn.ssl_ca), (None, None));
}

#[test]
fn connection_keys_do_not_enter_the_definition_hash() {
    let hashes = |extra: &str| -> Vec<String> {
        load_ok(&mysql_project(extra)).definitions.iter().map(|definition| definition.config_hash()).collect()
    };
    let plain = hashes("");
    assert_eq!(plain.len(), 1);
    assert_eq!(
        hashes(", engine: mysql, ssl: true, ssl_ca: certs/ca.pem, ssl_cert: certs/dd.crt, ssl_key: certs/dd.key"),
        plain
    );
}

/// A tap-mysql's PEM values (files or text) must hold certificates (`ssl_ca`, `ssl_cert`)
/// or an unencrypted key (`ssl_key`), and its `db_conn` a host: found when the project loads,
/// never at every run.
#[test]
fn mysql_pem_values_and_the_host_are_checked_when_the_project_loads() {
    let found = |extra: &str, prepare: &dyn Fn(&std::path::Path)| {
        let dir = mysql_project(extra);
        prepare(dir.path());
        problems(&dir)
            .into_iter()
            .map(|problem| (problem.path, problem.message.replace(&format!("{}/", dir.path().display()), "")))
            .collect::<Vec<_>>()
    };
    let garbage = |dir: &std::path::Path| std::fs::write(dir.join("certs/ca.pem"), "garbage\n").unwrap();
    assert_eq!(
        found(", ssl_ca: certs/ca.pem", &garbage),
        [("db_conn.ssl_ca".to_owned(), "certs/ca.pem holds no PEM certificate".to_owned())]
    );
    let text = "-----BEGIN CERTIFICATE-----\\nbm90IGEgY2VydGlmaWNhdGU=\\n-----END CERTIFICATE-----\\n";
    assert_eq!(
        found(&format!(", ssl_ca: \"{text}\""), &|_| {}),
        [("db_conn.ssl_ca".to_owned(), "the PEM text holds no PEM certificate".to_owned())]
    );
    assert_eq!(
        found(", ssl: true, ssl_cert: certs/dd.crt, ssl_key: certs/dd.crt", &|_| {}),
        [("db_conn.ssl_key".to_owned(), "certs/dd.crt holds a certificate, not a private key".to_owned())]
    );
    let hostless = tap("", "", VALID)
        .replace("type: tap-postgres", "type: tap-mysql")
        .replace("db_conn: {host: primary, dbname: payments}", "db_conn: {dbname: payments, user: reader}");
    let dir = project(&[("config.yml", CONFIG), ("target_postgres.yml", TARGET), ("tap_payments.yml", &hostless)]);
    let problems = problems(&dir);
    assert_eq!(problems.len(), 1, "{problems:#?}");
    assert_eq!((problems[0].file.as_str(), problems[0].path.as_str()), ("tap_payments.yml", "db_conn.host"));
    assert_eq!(
        problems[0].message,
        "a tap-mysql db_conn needs host (or replica_host): the MySQL source is reached over TCP"
    );
}
