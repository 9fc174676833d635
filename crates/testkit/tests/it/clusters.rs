use datadiff_testkit::{Cluster, shared_cluster};

#[test]
fn the_shared_cluster_serves_isolated_fresh_databases() {
    let cluster = shared_cluster();
    assert_ne!(cluster.port(), 5432);
    let first = cluster.fresh_database().unwrap();
    let second = cluster.fresh_database().unwrap();
    assert_ne!(first.name(), second.name());

    first.client().unwrap().batch_execute("CREATE TABLE only_here (id int); INSERT INTO only_here VALUES (1)").unwrap();
    let mut other = second.client().unwrap();
    let visible: i64 =
        other.query_one("SELECT count(*) FROM pg_class WHERE relname = 'only_here'", &[]).unwrap().get(0);
    assert_eq!(visible, 0, "a table created in one fresh database must not appear in another");
    let database: String = other.query_one("SELECT current_database()", &[]).unwrap().get(0);
    assert_eq!(database, second.name());
}

#[test]
fn roles_authenticate_with_their_password_only() {
    let cluster = shared_cluster();
    let database = cluster.fresh_database().unwrap();
    cluster.create_role("reader_a", "right-password").unwrap();

    let mut client = database.config_for("reader_a", "right-password").connect(postgres::NoTls).unwrap();
    let user: String = client.query_one("SELECT current_user::text", &[]).unwrap().get(0);
    assert_eq!(user, "reader_a");

    let refused = database.config_for("reader_a", "wrong-password").connect(postgres::NoTls);
    let Err(error) = refused else { panic!("a wrong password must be refused over TCP") };
    let code = error.as_db_error().map(|db| db.code().code().to_owned());
    assert_eq!(code.as_deref(), Some("28P01"), "expected invalid_password, got {error}");
}

#[test]
fn urls_carry_encoded_credentials() {
    let cluster = shared_cluster();
    let database = cluster.fresh_database().unwrap();
    cluster.create_role("url user", "p@ss:w/rd").unwrap();
    let url = database.url("url user", "p@ss:w/rd");
    let mut client = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    let user: String = client.query_one("SELECT current_user::text", &[]).unwrap().get(0);
    assert_eq!(user, "url user");
}

#[test]
fn two_clusters_run_at_once_on_different_ports() {
    let first = Cluster::start().unwrap();
    let second = Cluster::start().unwrap();
    assert_ne!(first.port(), second.port());
    assert_ne!(first.dir(), second.dir());
    first.connect("postgres").unwrap().batch_execute("CREATE DATABASE in_first").unwrap();
    let mut client = second.connect("postgres").unwrap();
    let found: i64 =
        client.query_one("SELECT count(*) FROM pg_database WHERE datname = 'in_first'", &[]).unwrap().get(0);
    assert_eq!(found, 0);
}

#[test]
fn a_dedicated_cluster_stops_and_restarts_keeping_its_data() {
    let cluster = Cluster::start().unwrap();
    let database = cluster.fresh_database().unwrap();
    database.client().unwrap().batch_execute("CREATE TABLE kept (id int); INSERT INTO kept VALUES (42)").unwrap();

    cluster.stop().unwrap();
    assert!(cluster.postmaster_pid().is_none());
    assert!(database.client().is_err(), "a stopped cluster must refuse connections");

    cluster.restart().unwrap();
    let value: i32 = database.client().unwrap().query_one("SELECT id FROM kept", &[]).unwrap().get(0);
    assert_eq!(value, 42);
}

#[test]
fn the_server_does_not_run_as_root() {
    let cluster = shared_cluster();
    let pid = cluster.postmaster_pid().unwrap();
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let uid_line = status.lines().find(|line| line.starts_with("Uid:")).unwrap();
    let effective: u32 = uid_line.split_whitespace().nth(2).unwrap().parse().unwrap();
    assert_ne!(effective, 0, "the postmaster must run as an unprivileged user");
}
