//! Sessions: settings, password sources and TLS against real servers.

use std::os::unix::fs::PermissionsExt;

use datadiff_access::{Dsn, Environment, Session, SessionSettings};
use datadiff_testkit::{Cluster, ClusterOptions, SUPERUSER, shared_cluster, write_unrelated_ca};

#[test]
fn audit_sessions_are_read_only_with_a_fifteen_minute_statement_timeout_and_pg_catalog_only() {
    let database = shared_cluster().fresh_database().unwrap();
    database.client().unwrap().batch_execute("CREATE TABLE t (id int)").unwrap();
    let dsn = Dsn::parse("source", &crate::support::superuser_url(&database), &Environment::default()).unwrap();
    let mut session = Session::connect(&dsn, SessionSettings::audit()).unwrap();
    let timeout: String = session.client().query_one("SHOW statement_timeout", &[]).unwrap().get(0);
    assert_eq!(timeout, "15min");
    let path: String = session.client().query_one("SHOW search_path", &[]).unwrap().get(0);
    assert_eq!(path, "pg_catalog", "no function of another schema can shadow a built-in");
    let error = session.client().batch_execute("INSERT INTO public.t VALUES (1)").unwrap_err();
    assert_eq!(error.code().map(|code| code.code()), Some("25006"), "a read-only transaction must refuse writes");
    let count: i64 = database.client().unwrap().query_one("SELECT count(*) FROM t", &[]).unwrap().get(0);
    assert_eq!(count, 0);
}

#[test]
fn a_password_file_supplies_a_missing_password() {
    let cluster = shared_cluster();
    let database = cluster.fresh_database().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("pgpass");
    std::fs::write(
        &path,
        format!(
            "# test\n127.0.0.1:{}:{}:{SUPERUSER}:{}\n",
            cluster.port(),
            database.name(),
            cluster.superuser_password()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    let environment = Environment::from_pairs([("PGPASSFILE", path.display().to_string())]);
    let text = format!("postgresql://{SUPERUSER}@127.0.0.1:{}/{}", cluster.port(), database.name());
    let dsn = Dsn::parse("source", &text, &environment).unwrap();
    assert!(dsn.has_password());
    let mut session = Session::connect(&dsn, SessionSettings::audit()).unwrap();
    let name: String = session.client().query_one("SELECT current_database()::text", &[]).unwrap().get(0);
    assert_eq!(name, database.name());

    // A group-readable file is ignored, as libpq ignores it: authentication then fails.
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
    let dsn = Dsn::parse("source", &text, &environment).unwrap();
    assert!(!dsn.has_password());
    assert!(Session::connect(&dsn, SessionSettings::audit()).is_err());
}

#[test]
fn sslmode_require_encrypts_without_verifying_and_disable_does_not_encrypt() {
    // The certificate names only "localhost": libpq's require does not check it.
    let cluster = Cluster::start_with(ClusterOptions::new().tls(&["localhost"], &[])).unwrap();
    let database = cluster.fresh_database().unwrap();
    let url = database.url(SUPERUSER, cluster.superuser_password());
    for (mode, encrypted) in [("require", true), ("prefer", true), ("disable", false)] {
        let dsn = Dsn::parse("replica", &format!("{url}?sslmode={mode}"), &Environment::default()).unwrap();
        let mut session = Session::connect(&dsn, SessionSettings::audit()).unwrap();
        assert_eq!(session.uses_tls().unwrap(), encrypted, "sslmode={mode}");
    }
    // A server without TLS: require fails, prefer falls back.
    let plain = shared_cluster().fresh_database().unwrap();
    let url = crate::support::superuser_url(&plain);
    let dsn = Dsn::parse("replica", &format!("{url}?sslmode=require"), &Environment::default()).unwrap();
    assert!(Session::connect(&dsn, SessionSettings::audit()).is_err());
    let dsn = Dsn::parse("replica", &format!("{url}?sslmode=prefer"), &Environment::default()).unwrap();
    assert!(!Session::connect(&dsn, SessionSettings::audit()).unwrap().uses_tls().unwrap());
}

#[test]
fn identity_tells_databases_apart_and_sees_one_database_through_any_route() {
    let cluster = shared_cluster();
    let first = cluster.fresh_database().unwrap();
    let second = cluster.fresh_database().unwrap();
    let connect = |text: String| {
        Session::connect(&Dsn::parse("x", &text, &Environment::default()).unwrap(), SessionSettings::audit()).unwrap()
    };
    let over_tcp = connect(crate::support::superuser_url(&first)).identity().unwrap();
    let over_socket = connect(format!(
        "host={} port={} user={SUPERUSER} dbname={}",
        cluster.socket_dir().display(),
        cluster.port(),
        first.name()
    ))
    .identity()
    .unwrap();
    let other = connect(crate::support::superuser_url(&second)).identity().unwrap();
    assert_eq!(over_tcp, over_socket);
    assert_ne!(over_tcp, other);
    assert_eq!(over_tcp.system_identifier, other.system_identifier, "one cluster, two databases");
}

#[test]
fn verifying_modes_check_the_chain_and_verify_full_checks_the_host_name() {
    let cluster = Cluster::start_with(ClusterOptions::new().tls(&["localhost"], &[])).unwrap();
    let database = cluster.fresh_database().unwrap();
    let ca = cluster.ca_certificate().unwrap().display().to_string();
    let unrelated = cluster.dir().join("unrelated-ca.pem");
    write_unrelated_ca(&unrelated).unwrap();
    let unrelated = unrelated.display().to_string();
    let connect = |host: &str, mode: &str, root: &str| {
        let text = format!(
            "host={host} port={} user={SUPERUSER} password={} dbname={} sslmode={mode} sslrootcert={root}",
            cluster.port(),
            cluster.superuser_password(),
            database.name()
        );
        let dsn = Dsn::parse("replica", &text, &Environment::default()).unwrap();
        Session::connect(&dsn, SessionSettings::audit()).and_then(|mut session| session.uses_tls())
    };
    // The certificate names localhost only.
    assert!(connect("localhost", "verify-full", &ca).unwrap());
    assert!(connect("127.0.0.1", "verify-ca", &ca).unwrap(), "verify-ca does not check the host name");
    assert!(connect("127.0.0.1", "verify-full", &ca).is_err(), "verify-full must check the host name");
    assert!(connect("localhost", "verify-ca", &unrelated).is_err(), "an unrelated CA must not verify");
    assert!(connect("localhost", "require", &unrelated).is_err(), "require with a root certificate verifies, as libpq");
    assert!(connect("localhost", "require", &ca).unwrap());
}

#[test]
fn the_connect_timeout_bounds_the_whole_connection_not_only_tcp() {
    // Accepts TCP connections (the kernel's backlog) and never answers the startup.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    let text = format!("host=127.0.0.1 port={port} user=u password=p dbname=d sslmode=disable connect_timeout=1");
    let dsn = Dsn::parse("replica", &text, &Environment::default()).unwrap();
    let error = Session::connect(&dsn, SessionSettings::audit()).unwrap_err();
    assert!(matches!(error, datadiff_access::Error::ConnectTimeout { .. }), "{error:?}");
    assert_eq!(error.to_string(), "cannot connect to the replica database: no answer within the 1 s connect timeout");
    drop(silent);
}
