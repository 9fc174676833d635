use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};

use datadiff_testkit::{Error, MariaDb, MariaDbOptions, shared_mariadb};
use mysql::prelude::Queryable;
use mysql::{Conn, OptsBuilder, SslOpts};

use crate::cleanup::{eventually, process_alive};

/// The server's error code of a failed statement or login.
fn server_code(error: &mysql::Error) -> Option<u16> {
    match error {
        mysql::Error::MySqlError(server) => Some(server.code),
        _ => None,
    }
}

#[test]
fn the_shared_server_serves_isolated_fresh_databases_over_tcp() {
    let server = shared_mariadb();
    assert_ne!(server.port(), 3306);
    assert!(server.version().to_lowercase().contains("mariadb"), "{}", server.version());
    let first = server.fresh_database().unwrap();
    let second = server.fresh_database().unwrap();
    assert_ne!(first.name(), second.name());

    let mut client = first.client().unwrap();
    client.query_drop("CREATE TABLE only_here (id bigint PRIMARY KEY, note text)").unwrap();
    client.exec_drop("INSERT INTO only_here VALUES (?, ?), (?, ?)", (1, "é", 2, "two")).unwrap();
    let rows: Vec<(i64, String)> = client.query("SELECT id, note FROM only_here ORDER BY id").unwrap();
    assert_eq!(rows, [(1, "é".to_owned()), (2, "two".to_owned())]);

    let mut other = second.client().unwrap();
    let database: Option<String> = other.query_first("SELECT DATABASE()").unwrap();
    assert_eq!(database.as_deref(), Some(second.name()));
    let visible: Option<i64> = other
        .exec_first(
            "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = 'only_here'",
            (second.name(),),
        )
        .unwrap();
    assert_eq!(visible, Some(0), "a table created in one fresh database must not appear in another");
    // The superuser came in over TCP from 127.0.0.1, not through the socket.
    let user: Option<String> = other.query_first("SELECT USER()").unwrap();
    assert_eq!(user.as_deref(), Some("root@127.0.0.1"));
}

#[test]
fn users_authenticate_with_their_password_only_and_get_their_grants_only() {
    let server = shared_mariadb();
    let database = server.fresh_database().unwrap();
    let elsewhere = server.fresh_database().unwrap();
    database.client().unwrap().query_drop("CREATE TABLE t (id int); INSERT INTO t VALUES (7)").unwrap();
    elsewhere.client().unwrap().query_drop("CREATE TABLE t (id int)").unwrap();
    database.create_user("reader_a", "right-pass'word\\", &["SELECT"]).unwrap();

    let mut reader = mysql::Conn::new(database.opts_for("reader_a", "right-pass'word\\")).unwrap();
    let user: Option<String> = reader.query_first("SELECT USER()").unwrap();
    assert_eq!(user.as_deref(), Some("reader_a@127.0.0.1"));
    let value: Option<i32> = reader.query_first("SELECT id FROM t").unwrap();
    assert_eq!(value, Some(7));
    let write = reader.query_drop("INSERT INTO t VALUES (8)").unwrap_err();
    assert_eq!(server_code(&write), Some(1142), "SELECT only: {write}");
    let other_database = reader.query_drop(format!("SELECT id FROM `{}`.t", elsewhere.name())).unwrap_err();
    assert_eq!(server_code(&other_database), Some(1142), "grants on one database only: {other_database}");

    let refused = mysql::Conn::new(database.opts_for("reader_a", "wrong-password")).unwrap_err();
    assert_eq!(server_code(&refused), Some(1045), "expected access denied, got {refused}");
}

#[test]
fn a_privilege_that_is_not_a_keyword_list_is_refused_before_any_sql() {
    let server = shared_mariadb();
    let database = server.fresh_database().unwrap();
    for privilege in ["SELECT; DROP DATABASE mysql", "select", "", "SHOW  VIEW"] {
        let error = server.grant("nobody_here", &[privilege], Some(database.name())).unwrap_err();
        assert!(matches!(error, Error::Privilege(ref text) if text == privilege), "{error}");
    }
}

#[test]
fn dropping_a_server_stops_it_and_removes_its_directory() {
    let server = MariaDb::start().unwrap();
    let pid = server.server_pid().unwrap();
    let dir = server.dir().to_path_buf();
    assert!(dir.exists() && process_alive(pid));
    drop(server);
    assert!(!dir.exists(), "the directory must be gone once drop returns");
    assert!(eventually(|| !process_alive(pid)), "mariadbd {pid} outlived its server");
}

#[test]
fn a_sigkilled_holder_leaves_no_mariadb_server_and_no_directory() {
    let mut holder = Command::new(env!("CARGO_BIN_EXE_datadiff-testkit"))
        .arg("--mariadb")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(holder.stdout.take().unwrap()).lines();
    let mut dir = None;
    let mut pid = None;
    for line in lines.by_ref() {
        let line = line.unwrap();
        if let Some(value) = line.strip_prefix("dir=") {
            dir = Some(PathBuf::from(value));
        } else if let Some(value) = line.strip_prefix("server_pid=") {
            pid = Some(value.parse::<u32>().unwrap());
        } else if line == "ready" {
            break;
        }
    }
    let (dir, pid) = (dir.unwrap(), pid.unwrap());
    assert!(dir.exists() && process_alive(pid), "the holder must have a running server");

    holder.kill().unwrap(); // SIGKILL: no destructor, no handler runs in the holder.
    holder.wait().unwrap();

    assert!(eventually(|| !process_alive(pid)), "mariadbd {pid} outlived a SIGKILLed holder");
    assert!(eventually(|| !dir.exists()), "{} outlived a SIGKILLed holder", dir.display());
}

#[test]
fn the_mariadb_server_does_not_run_as_root() {
    let server = shared_mariadb();
    let pid = server.server_pid().unwrap();
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let uid_line = status.lines().find(|line| line.starts_with("Uid:")).unwrap();
    let effective: u32 = uid_line.split_whitespace().nth(2).unwrap().parse().unwrap();
    assert_ne!(effective, 0, "mariadbd must run as an unprivileged user");
}

#[test]
fn a_dedicated_server_stops_and_restarts_keeping_its_data() {
    let server = MariaDb::start().unwrap();
    let database = server.fresh_database().unwrap();
    database.client().unwrap().query_drop("CREATE TABLE kept (id int); INSERT INTO kept VALUES (42)").unwrap();
    let port = server.port();

    server.stop().unwrap();
    assert!(server.server_pid().is_none(), "a clean shutdown removes the pid file");
    assert!(database.client().is_err(), "a stopped server must refuse connections");

    server.restart().unwrap();
    assert_eq!(server.port(), port);
    let value: Option<i32> = database.client().unwrap().query_first("SELECT id FROM kept").unwrap();
    assert_eq!(value, Some(42));
}

/// The session's TLS cipher, empty without TLS.
fn cipher(conn: &mut Conn) -> String {
    let row: Option<(String, String)> = conn.query_first("SHOW SESSION STATUS LIKE 'Ssl_cipher'").unwrap();
    row.map(|(_name, value)| value).unwrap_or_default()
}

#[test]
fn a_tls_server_serves_a_certificate_signed_by_its_ca_for_the_requested_names() {
    let server = MariaDb::start_with(MariaDbOptions::new().tls(&["localhost"], &[])).unwrap();
    let ca = server.ca_certificate().unwrap().to_path_buf();
    let verified = SslOpts::default().with_root_cert_path(Some(ca.clone()));

    // Verified against the server's CA with the host name on the certificate: TLS in use.
    let opts = OptsBuilder::from_opts(server.opts(None)).ip_or_hostname(Some("localhost")).ssl_opts(verified.clone());
    assert!(!cipher(&mut Conn::new(opts).unwrap()).is_empty(), "the session must be encrypted");

    // 127.0.0.1 is not on the certificate: verification refuses it.
    let wrong_name = OptsBuilder::from_opts(server.opts(None)).ssl_opts(verified);
    assert!(Conn::new(wrong_name).is_err(), "a host name the certificate lacks must fail verification");

    // Without TLS the server still accepts password logins (TLS is optional here).
    assert!(cipher(&mut Conn::new(server.opts(None)).unwrap()).is_empty());
}

#[test]
fn a_server_that_requires_tls_refuses_plain_connections() {
    let server = MariaDb::start_with(MariaDbOptions::new().require_tls()).unwrap();
    let refused = Conn::new(server.opts(None)).unwrap_err();
    // MariaDB answers a plain login under require_secure_transport with "access denied" (the
    // misleading refusal PipelineWise's opportunistic TLS avoids).
    assert_eq!(server_code(&refused), Some(1045), "the server itself refuses: {refused}");

    let ca = server.ca_certificate().unwrap().to_path_buf();
    let opts = OptsBuilder::from_opts(server.opts(None)).ssl_opts(SslOpts::default().with_root_cert_path(Some(ca)));
    let mut conn = Conn::new(opts).unwrap();
    assert!(!cipher(&mut conn).is_empty());
    let database = server.fresh_database().unwrap();
    assert!(database.name().starts_with('t'), "setup statements go over the socket");
}
