//! Sessions, timeouts, the pool, and errors that never show a password.

use std::net::TcpListener;
use std::time::Duration;

use datadiff_backend_store::{
    APPLICATION_NAME, BackendConfig, Error, MigrateOptions, PoolOptions, Role, Store, migrate_backend,
};

use crate::support::backend;

fn chain(error: &Error) -> String {
    let mut text = format!("{error} / {error:?}");
    let mut cause = std::error::Error::source(error);
    while let Some(inner) = cause {
        text.push_str(&format!(": {inner} / {inner:?}"));
        cause = inner.source();
    }
    text
}

fn setting(client: &mut postgres::Client, name: &str) -> String {
    client.query_one("SELECT current_setting($1)", &[&name]).unwrap().get(0)
}

#[test]
fn application_sessions_are_utc_named_and_time_limited() {
    let backend = backend();
    let config = BackendConfig { statement_timeout: Some(Duration::from_millis(2500)), ..backend.config.clone() };
    let store = Store::open(config).unwrap();
    let mut client = store.connection().unwrap();
    assert_eq!(setting(&mut client, "TimeZone"), "UTC");
    assert_eq!(setting(&mut client, "application_name"), "pipelinewise-data-diff");
    assert_eq!(APPLICATION_NAME, "pipelinewise-data-diff");
    assert_eq!(setting(&mut client, "statement_timeout"), "2500ms");
    let user: String = client.query_one("SELECT current_user::text", &[]).unwrap().get(0);
    assert_eq!(user, backend.config.user);

    let mut ddl = store.connect_ddl().unwrap();
    assert_eq!(setting(&mut ddl, "TimeZone"), "UTC");
    assert_eq!(setting(&mut ddl, "application_name"), "");
    assert_eq!(setting(&mut ddl, "statement_timeout"), "0");
    let user: String = ddl.query_one("SELECT current_user::text", &[]).unwrap().get(0);
    assert_eq!(user, backend.config.ddl_user);
}

#[test]
fn the_pool_hands_out_several_sessions_at_once() {
    let backend = backend();
    let config = BackendConfig { application_name: "datadiff".into(), ..backend.config.clone() };
    let store = Store::open_with(config, PoolOptions { max_size: 3, checkout_timeout: None }).unwrap();
    let mut sessions: Vec<_> = (0..3).map(|_| store.connection().unwrap()).collect();
    let mut pids = std::collections::BTreeSet::new();
    for session in &mut sessions {
        let pid: i32 = session.query_one("SELECT pg_backend_pid()", &[]).unwrap().get(0);
        assert_eq!(setting(session, "TimeZone"), "UTC");
        assert_eq!(setting(session, "application_name"), "datadiff");
        pids.insert(pid);
    }
    assert_eq!(pids.len(), 3);
}

#[test]
fn a_wrong_password_is_a_connection_error_that_never_shows_the_password() {
    let backend = backend();
    let secret = "Wr0ng-Pa55word-7f3e";
    let config = BackendConfig { password: secret.into(), ..backend.config.clone() };
    let error = Store::open(config.clone()).unwrap_err();
    assert!(error.is_connection());
    assert!(matches!(error, Error::Connect { role: Role::Application, .. }));
    let text = chain(&error);
    assert!(text.starts_with(&format!(
        "backend connection failed for the application role {:?} at 127.0.0.1:",
        backend.config.user
    )));
    assert!(text.contains("password authentication failed"), "{text}");
    assert!(!text.contains(secret), "{text}");

    let config = BackendConfig { ddl_password: secret.into(), ..backend.config.clone() };
    let error = migrate_backend(&config, &MigrateOptions::latest()).unwrap_err();
    assert!(matches!(error, Error::Connect { role: Role::Ddl, .. }), "{error}");
    assert!(!chain(&error).contains(secret));
    assert!(!backend.has_relation("alembic_version"));
}

#[test]
fn missing_fields_are_refused_before_connecting() {
    let backend = backend();
    let config = BackendConfig { ddl_user: String::new(), dbname: String::new(), ..backend.config.clone() };
    let error = Store::open(config.clone()).unwrap_err();
    assert_eq!(error.to_string(), "backend_db is missing required fields: dbname, ddl_user");
    let error = migrate_backend(&config, &MigrateOptions::latest()).unwrap_err();
    assert!(matches!(error, Error::MissingFields(_)));
}

#[test]
fn an_unreachable_backend_is_a_connection_error() {
    let backend = backend();
    let port = {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let config = BackendConfig { port, connect_timeout: Duration::from_secs(5), ..backend.config.clone() };
    let error = Store::open(config).unwrap_err();
    assert!(error.is_connection());
    assert!(error.to_string().starts_with("backend connection failed"));
}

#[test]
fn a_backend_that_accepts_and_never_answers_times_out_for_both_roles() {
    let backend = backend();
    // Accepts connections (the kernel completes the TCP handshake) and never says a word.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let _held = std::thread::spawn(move || {
        let mut open = Vec::new();
        for stream in listener.incoming().flatten() {
            open.push(stream);
        }
    });
    let config = BackendConfig { port, connect_timeout: Duration::from_secs(1), ..backend.config.clone() };

    let error = Store::open(config.clone()).unwrap_err();
    assert!(error.is_connection());
    assert!(matches!(error, Error::ConnectTimeout { role: Role::Application, .. }), "{error}");
    assert!(error.to_string().starts_with("backend did not answer within 1s"), "{error}");

    let error = migrate_backend(&config, &MigrateOptions::latest()).unwrap_err();
    assert!(matches!(error, Error::ConnectTimeout { role: Role::Ddl, .. }), "{error}");
}
