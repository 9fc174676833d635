//! TLS against a cluster that requires client certificates: sessions (`audit`), side
//! sessions and row streams verify the server as their `sslmode` says and present the
//! configured client certificate.

use std::sync::OnceLock;
use std::time::Duration;

use datadiff_access::stream::{Decoder, Endpoint, KeyDecoder, RowQuery, RowStream, StreamOptions};
use datadiff_access::{
    ClientCertificate, Dsn, Environment, RootCertificates, Session, SessionSettings, SideConfig, SideSession,
    TableName, TlsSettings, chain,
};
use datadiff_diff_core::{Side, definition::SslMode};
use datadiff_testkit::{Cluster, ClusterOptions, write_unrelated_ca};

/// The cluster (its certificate names only `localhost`), a database with a table `public.t`
/// readable by `app`, and `app`'s client certificate.
struct Fixture {
    cluster: Cluster,
    database: String,
    files: tempfile::TempDir,
    client: ClientCertificate,
}

fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let cluster =
            Cluster::start_with(ClusterOptions::new().tls(&["localhost"], &[]).require_client_certificates()).unwrap();
        cluster.create_role("app", "app-pw").unwrap();
        let database = cluster.fresh_database().unwrap().name().to_owned();
        let mut client = cluster.connect(&database).unwrap();
        client
            .batch_execute("CREATE TABLE public.t (id int PRIMARY KEY, v text); INSERT INTO public.t VALUES (1, 'a'), (2, 'b'); GRANT SELECT ON public.t TO app")
            .unwrap();
        let files = tempfile::tempdir().unwrap();
        let issued = cluster.issue_client_certificate("app", files.path()).unwrap();
        let client = ClientCertificate { certificate: issued.certificate, key: issued.key };
        Fixture { cluster, database, files, client }
    })
}

fn dsn_text(host: &str, extra: &str) -> String {
    let fixture = fixture();
    format!("host={host} port={} user=app password=app-pw dbname={} {extra}", fixture.cluster.port(), fixture.database)
}

fn ca() -> String {
    fixture().cluster.ca_certificate().unwrap().display().to_string()
}

fn client_params() -> String {
    let client = &fixture().client;
    format!("sslcert={} sslkey={}", client.certificate.display(), client.key.display())
}

fn connect(text: &str) -> Result<Session, String> {
    let dsn = Dsn::parse("replica", text, &Environment::default()).map_err(|error| chain(&error))?;
    Session::connect(&dsn, SessionSettings::audit()).map_err(|error| chain(&error))
}

#[test]
fn verify_full_with_the_right_ca_and_a_client_certificate_connects() {
    let text = dsn_text("localhost", &format!("sslmode=verify-full sslrootcert={} {}", ca(), client_params()));
    let mut session = connect(&text).unwrap();
    assert!(session.uses_tls().unwrap());
    let user: String = session.client().query_one("SELECT current_user::text", &[]).unwrap().get(0);
    assert_eq!(user, "app");
}

#[test]
fn a_wrong_ca_or_host_name_is_refused_by_the_client_with_a_clear_message() {
    let wrong = fixture().files.path().join("wrong-ca.pem");
    write_unrelated_ca(&wrong).unwrap();
    let text =
        dsn_text("localhost", &format!("sslmode=verify-full sslrootcert={} {}", wrong.display(), client_params()));
    let error = connect(&text).err().unwrap();
    assert!(error.starts_with("cannot connect to the replica database"), "{error}");
    assert!(error.contains("certificate verify failed"), "{error}");

    // 127.0.0.1 is not on the certificate: verify-full refuses it, verify-ca does not check.
    let text = dsn_text("127.0.0.1", &format!("sslmode=verify-full sslrootcert={} {}", ca(), client_params()));
    let error = connect(&text).err().unwrap();
    assert!(error.contains("does not match host name \"127.0.0.1\""), "{error}");
    let text = dsn_text("127.0.0.1", &format!("sslmode=verify-ca sslrootcert={} {}", ca(), client_params()));
    assert!(connect(&text).unwrap().uses_tls().unwrap());
}

#[test]
fn without_a_client_certificate_the_server_refuses() {
    let text = dsn_text("localhost", &format!("sslmode=verify-full sslrootcert={}", ca()));
    let error = connect(&text).err().unwrap();
    assert!(error.contains("connection requires a valid client certificate"), "{error}");
    // A missing certificate file is the client's clear error, before connecting.
    let text = dsn_text("localhost", "sslmode=require sslcert=/nonexistent/app.crt sslkey=/nonexistent/app.key");
    let error = connect(&text).err().unwrap();
    assert!(
        error.starts_with("cannot load the client certificate /nonexistent/app.crt for the replica connection"),
        "{error}"
    );
}

/// A side's settings as the runner builds them, with `tls` and `host`.
fn side_config(host: &str, tls: &TlsSettings) -> SideConfig {
    let fixture = fixture();
    let mut config = postgres::Config::new();
    config
        .host(host)
        .port(fixture.cluster.port())
        .user("app")
        .password("app-pw")
        .dbname(&fixture.database)
        .ssl_mode(tls.driver_mode());
    SideConfig {
        side: Side::Target,
        config,
        address: format!("{host}:{}/{}", fixture.cluster.port(), fixture.database),
        connect_timeout: Duration::from_secs(30),
        tls: tls.client_tls().unwrap(),
    }
}

#[test]
fn side_sessions_and_their_row_streams_use_the_sides_tls() {
    let fixture = fixture();
    let roots = RootCertificates::File(fixture.cluster.ca_certificate().unwrap().to_path_buf());
    let settings = |mode| TlsSettings { mode, roots: roots.clone(), client: Some(fixture.client.clone()) };
    // verify-ca to an address not on the certificate: the chain is checked, the name is not,
    // by the side session and by the stream's own connection alike.
    for (host, mode) in [("localhost", SslMode::VerifyFull), ("127.0.0.1", SslMode::VerifyCa)] {
        let side = side_config(host, &settings(mode));
        let mut session = SideSession::open(&side, Duration::from_secs(30)).unwrap();
        let ssl: bool = session
            .with_client("reading pg_stat_ssl", |client| {
                client.query_one("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()", &[]).map(|row| row.get(0))
            })
            .unwrap()
            .unwrap();
        assert!(ssl, "{host} {mode:?}");
        session.close();
        let table: TableName = "public.t".parse().unwrap();
        let query = RowQuery::for_table(&table, "id", KeyDecoder::Int, vec![("v".to_owned(), Decoder::Text)], None);
        let endpoint = Endpoint::new("target", &side.config, Some(side.tls.ssl_connector().unwrap()));
        let rows: Vec<_> =
            std::thread::scope(|scope| RowStream::connect(scope, endpoint, query, StreamOptions::default()).collect());
        assert_eq!(rows.len(), 2, "{host} {mode:?}");
        assert!(rows.iter().all(Result::is_ok), "{host} {mode:?}: {:?}", rows.iter().find_map(|r| r.as_ref().err()));
    }
    // verify-full to an address not on the certificate: refused by both.
    let side = side_config("127.0.0.1", &settings(SslMode::VerifyFull));
    let error = SideSession::open(&side, Duration::from_secs(30)).unwrap_err();
    // Named as psql names it, not as OpenSSL's internal error.
    assert!(
        error.contains(
            "TLS handshake failed: server certificate for \"localhost\" does not match host name \"127.0.0.1\""
        ),
        "{error}"
    );
    let table: TableName = "public.t".parse().unwrap();
    let query = RowQuery::for_table(&table, "id", KeyDecoder::Int, vec![], None);
    let endpoint = Endpoint::new("target", &side.config, Some(side.tls.ssl_connector().unwrap()));
    let rows: Vec<_> =
        std::thread::scope(|scope| RowStream::connect(scope, endpoint, query, StreamOptions::default()).collect());
    assert!(rows.iter().any(Result::is_err), "the stream must not connect to a host the certificate does not name");
}

#[test]
fn a_private_key_others_can_read_is_refused_as_libpq_refuses_it() {
    use std::os::unix::fs::PermissionsExt as _;
    let client = &fixture().client;
    let readable = fixture().files.path().join("readable.key");
    std::fs::copy(&client.key, &readable).unwrap();
    std::fs::set_permissions(&readable, std::fs::Permissions::from_mode(0o644)).unwrap();
    let text = dsn_text(
        "localhost",
        &format!(
            "sslmode=verify-full sslrootcert={} sslcert={} sslkey={}",
            ca(),
            client.certificate.display(),
            readable.display()
        ),
    );
    let error = connect(&text).err().unwrap();
    assert!(error.contains(&readable.display().to_string()), "names the key file: {error}");
    assert!(error.contains("has group or world access (mode 0644)"), "{error}");
}

/// Whether `text` shows OpenSSL's internal error (`error:0A000086:SSL
/// routines:tls_post_process_server_certificate:certificate verify failed:
/// ../ssl/statem/statem_clnt.c:1889:`) rather than the cause.
fn shows_openssl_internals(text: &str) -> bool {
    text.contains("0A000086") || text.contains("statem") || text.contains("SSL routines")
}

#[test]
fn an_audit_session_names_a_rejected_server_certificate_as_psql_does() {
    // 127.0.0.1 is not on the certificate (it names localhost only).
    let text = dsn_text("127.0.0.1", &format!("sslmode=verify-full sslrootcert={} {}", ca(), client_params()));
    let error = connect(&text).err().unwrap();
    assert!(error.starts_with("cannot connect to the replica database"), "{error}");
    assert!(error.contains("server certificate for \"localhost\" does not match host name \"127.0.0.1\""), "{error}");
    assert!(!shows_openssl_internals(&error), "{error}");

    // A CA that did not sign the server's certificate: the file is named.
    let wrong = fixture().files.path().join("session-unrelated-ca.pem");
    write_unrelated_ca(&wrong).unwrap();
    let text = dsn_text("localhost", &format!("sslmode=verify-ca sslrootcert={} {}", wrong.display(), client_params()));
    let error = connect(&text).err().unwrap();
    assert!(error.contains("certificate verify failed: "), "{error}");
    assert!(
        error.contains(&format!("no root certificate in {} signed the server's certificate", wrong.display())),
        "{error}"
    );
    assert!(!shows_openssl_internals(&error), "{error}");

    // A root certificate file that does not exist: named before connecting.
    let missing = fixture().files.path().join("session-missing-root.crt");
    let text =
        dsn_text("localhost", &format!("sslmode=verify-full sslrootcert={} {}", missing.display(), client_params()));
    let error = connect(&text).err().unwrap();
    assert!(error.contains(&format!("root certificate file \"{}\" does not exist", missing.display())), "{error}");
    assert!(!shows_openssl_internals(&error), "{error}");
}

/// The first error of a row stream of `public.t` through `side`'s own connection.
fn stream_error(side: &SideConfig) -> String {
    let table: TableName = "public.t".parse().unwrap();
    let query = RowQuery::for_table(&table, "id", KeyDecoder::Int, vec![], None);
    let endpoint = Endpoint::new("target", &side.config, Some(side.tls.ssl_connector().unwrap()));
    let rows: Vec<_> =
        std::thread::scope(|scope| RowStream::connect(scope, endpoint, query, StreamOptions::default()).collect());
    let error = rows.into_iter().find_map(Result::err).expect("the stream must not connect");
    chain(&error)
}

#[test]
fn a_row_stream_names_a_rejected_server_certificate_as_psql_does() {
    let fixture = fixture();
    let settings = |mode, roots| TlsSettings { mode, roots, client: Some(fixture.client.clone()) };
    let right = RootCertificates::File(fixture.cluster.ca_certificate().unwrap().to_path_buf());

    let error = stream_error(&side_config("127.0.0.1", &settings(SslMode::VerifyFull, right)));
    assert!(error.starts_with("cannot connect the target stream"), "{error}");
    assert!(error.contains("server certificate for \"localhost\" does not match host name \"127.0.0.1\""), "{error}");
    assert!(!shows_openssl_internals(&error), "{error}");

    let wrong = fixture.files.path().join("stream-unrelated-ca.pem");
    write_unrelated_ca(&wrong).unwrap();
    let error =
        stream_error(&side_config("localhost", &settings(SslMode::VerifyCa, RootCertificates::File(wrong.clone()))));
    assert!(error.contains("certificate verify failed: "), "{error}");
    assert!(
        error.contains(&format!("no root certificate in {} signed the server's certificate", wrong.display())),
        "{error}"
    );
    assert!(!shows_openssl_internals(&error), "{error}");

    // A root certificate file that does not exist: the side's TLS (which its streams use)
    // cannot be made, and says why.
    let missing = fixture.files.path().join("stream-missing-root.crt");
    let error = settings(SslMode::VerifyFull, RootCertificates::File(missing.clone())).client_tls().unwrap_err();
    let error = chain(&error.for_role("target"));
    assert!(error.contains(&format!("root certificate file \"{}\" does not exist", missing.display())), "{error}");
}
