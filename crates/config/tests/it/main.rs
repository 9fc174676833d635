//! Integration tests of `datadiff-config`: whole project directories on disk.

mod fixture;
mod fuzz;
mod horizon;
mod mysql_conn;
mod reverify;
mod rules;
mod secrets;
mod settings;
mod tls;
mod unrunnable;

use std::collections::BTreeMap;

use datadiff_config::{LoadOptions, Problem, Project, Secret};
use tempfile::TempDir;

/// The environment the tests render with.
pub(crate) fn env() -> BTreeMap<String, String> {
    BTreeMap::from([
        ("SLACK_TOKEN".to_owned(), "xoxb-test".to_owned()),
        ("BACKEND_PASSWORD".to_owned(), "backend-pw".to_owned()),
    ])
}

/// A project directory holding `files`.
pub(crate) fn project(files: &[(&str, &str)]) -> TempDir {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
    for (name, text) in files {
        std::fs::write(dir.path().join(name), text).unwrap_or_else(|e| panic!("write {name}: {e}"));
    }
    dir
}

pub(crate) fn options(secret: Option<&str>) -> LoadOptions {
    LoadOptions { secret: secret.map(Secret::new), env: Some(env()) }
}

/// Loads a project that must be valid.
pub(crate) fn load_ok(dir: &TempDir) -> Project {
    match datadiff_config::load_with(dir.path(), &options(None)) {
        Ok(project) => project,
        Err(error) => panic!("{error}: {:#?}", error.problems()),
    }
}

/// Loads a project that must be invalid, returning its problems.
pub(crate) fn problems_with(dir: &TempDir, secret: Option<&str>) -> Vec<Problem> {
    match datadiff_config::load_with(dir.path(), &options(secret)) {
        Ok(project) => panic!("expected problems, loaded {} definitions", project.definitions.len()),
        Err(error) => {
            assert!(!error.problems().is_empty(), "{error}");
            error.problems().to_vec()
        }
    }
}

pub(crate) fn problems(dir: &TempDir) -> Vec<Problem> {
    problems_with(dir, None)
}

pub(crate) const CONFIG: &str = "\
backend_db:
  host: localhost
  user: app
  password: app-pw
  dbname: datadiff
  ddl_user: owner
  ddl_password: owner-pw
";

pub(crate) const TARGET: &str = "\
id: postgres
name: Warehouse
type: target-postgres
db_conn: {host: replica, dbname: warehouse}
";

/// A tap file with one table whose `data_diff` block is `data_diff` (indented by the caller
/// as a block under `data_diff:`), `defaults` (a block under `data_diff_defaults:`, or empty)
/// and extra table keys.
pub(crate) fn tap(defaults: &str, table_extra: &str, data_diff: &str) -> String {
    let defaults =
        if defaults.is_empty() { String::new() } else { format!("data_diff_defaults:\n{}", indent(defaults, 2)) };
    format!(
        "id: payments\nname: Payments\ntype: tap-postgres\ntarget: postgres\ndb_conn: {{host: primary, dbname: payments}}\n{defaults}schemas:\n  - source_schema: public\n    target_schema: replicated\n    tables:\n      - table_name: transfers\n{}        data_diff:\n{}",
        indent(table_extra, 8),
        indent(data_diff, 10)
    )
}

pub(crate) fn indent(text: &str, by: usize) -> String {
    text.lines().map(|line| format!("{}{line}\n", " ".repeat(by))).collect()
}

/// A valid table block.
pub(crate) const VALID: &str = "\
checks: [row_count, row_checksum]
key_column: id
timestamp_column: updated_at
compare_columns: [amount, status]
frequency: '0 * * * *'
window_start: -2h
window_end: -1h
";

/// The one problem of a project whose tap is built from these parts.
pub(crate) fn single_problem(defaults: &str, table_extra: &str, data_diff: &str) -> Problem {
    let dir = project(&[
        ("config.yml", CONFIG),
        ("target_postgres.yml", TARGET),
        ("tap_payments.yml", &tap(defaults, table_extra, data_diff)),
    ]);
    let found = problems(&dir);
    assert_eq!(found.len(), 1, "{found:#?}");
    found.into_iter().next().unwrap_or_else(|| panic!("one problem"))
}

/// Real PEM files in `dir/certs`: `ca.pem` (a CA certificate), `dd.crt` and `dd.key` (a
/// client certificate and its key, the key `0600` as libpq requires). Returns their texts.
pub(crate) fn write_certificates(dir: &std::path::Path) -> Certificates {
    use std::os::unix::fs::PermissionsExt as _;
    let certificates = Certificates::generate();
    let certs = dir.join("certs");
    std::fs::create_dir_all(&certs).unwrap();
    std::fs::write(certs.join("ca.pem"), &certificates.ca).unwrap();
    std::fs::write(certs.join("dd.crt"), &certificates.certificate).unwrap();
    std::fs::write(certs.join("dd.key"), &certificates.key).unwrap();
    std::fs::set_permissions(certs.join("dd.key"), std::fs::Permissions::from_mode(0o600)).unwrap();
    certificates
}

/// PEM texts of a CA certificate, a client certificate and the client certificate's key.
pub(crate) struct Certificates {
    pub(crate) ca: String,
    pub(crate) certificate: String,
    pub(crate) key: String,
}

impl Certificates {
    /// Fresh ones, not written anywhere.
    pub(crate) fn generate_for_test() -> Certificates {
        Certificates::generate()
    }

    fn generate() -> Certificates {
        use openssl::x509::{X509, X509Name};
        use openssl::{asn1::Asn1Time, ec::EcGroup, ec::EcKey, hash::MessageDigest, nid::Nid, pkey::PKey};
        let self_signed = |common_name: &str| {
            let group = EcGroup::from_curve_name(Nid::X9_62_PRIME256V1).unwrap();
            let key = PKey::from_ec_key(EcKey::generate(&group).unwrap()).unwrap();
            let mut name = X509Name::builder().unwrap();
            name.append_entry_by_text("CN", common_name).unwrap();
            let name = name.build();
            let mut builder = X509::builder().unwrap();
            builder.set_subject_name(&name).unwrap();
            builder.set_issuer_name(&name).unwrap();
            builder.set_pubkey(&key).unwrap();
            builder.set_not_before(&Asn1Time::days_from_now(0).unwrap()).unwrap();
            builder.set_not_after(&Asn1Time::days_from_now(1).unwrap()).unwrap();
            builder.sign(&key, MessageDigest::sha256()).unwrap();
            let text = |pem: Vec<u8>| String::from_utf8(pem).unwrap();
            (text(builder.build().to_pem().unwrap()), text(key.private_key_to_pem_pkcs8().unwrap()))
        };
        let (ca, _) = self_signed("datadiff test CA");
        let (certificate, key) = self_signed("datadiff");
        Certificates { ca, certificate, key }
    }
}
