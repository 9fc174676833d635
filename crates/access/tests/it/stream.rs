//! The streaming readers against a real server: binary decoding of every supported type,
//! batching, and early cancellation — on a caller's session and on a connection of the
//! reader's own (tapped for one host, plain tokio-postgres for several).

use datadiff_access::stream::EncodedRow;
use datadiff_access::stream::{self, Decoder, Endpoint, KeyDecoder, RowQuery, RowStream, StreamOptions};
use datadiff_access::{Dsn, Environment, Error, Session, SessionSettings, TableName};
use datadiff_diff_core::merge::{Key, Numeric, Value, ValuesRow};
use datadiff_testkit::shared_cluster;

fn session(database: &datadiff_testkit::Database<'_>) -> Session {
    let dsn = Dsn::parse("source", &crate::support::superuser_url(database), &Environment::default()).unwrap();
    Session::connect(&dsn, SessionSettings::audit()).unwrap()
}

fn read_all(session: &mut Session, query: RowQuery, options: StreamOptions) -> Vec<Result<EncodedRow, Error>> {
    std::thread::scope(|scope| RowStream::spawn(scope, session, query, options).collect())
}

fn read_own(endpoint: Endpoint, query: RowQuery, options: StreamOptions) -> Vec<Result<EncodedRow, Error>> {
    std::thread::scope(|scope| RowStream::connect(scope, endpoint, query, options).collect())
}

/// An endpoint for `database` over one host (tapped), or listing the same server twice
/// (tokio-postgres chooses, no tap).
fn endpoint(database: &datadiff_testkit::Database<'_>, hosts: usize) -> Endpoint {
    let cluster = database.cluster();
    let text = format!(
        "host={} port={} user={} password={} dbname={}",
        vec![cluster.host(); hosts].join(","),
        cluster.port(),
        datadiff_testkit::SUPERUSER,
        cluster.superuser_password(),
        database.name()
    );
    Endpoint::new("source", &text.parse().unwrap(), None)
}

#[test]
fn every_supported_type_decodes_to_its_canonical_value() {
    let database = shared_cluster().fresh_database().unwrap();
    database
        .client()
        .unwrap()
        .batch_execute(
            "CREATE TYPE mood AS ENUM ('sad', 'happy'); \
             CREATE DOMAIN money2 AS numeric(10,2); \
             CREATE TABLE public.t (id smallint PRIMARY KEY, i4 integer, i8 bigint, n numeric, n2 money2, \
                 r real, d double precision, t text, v varchar(9), c char(4), b boolean, dt date, tm time, \
                 ts timestamp, tz timestamptz, u uuid, by bytea, m mood); \
             SET TIME ZONE 'Asia/Kolkata'; \
             INSERT INTO public.t VALUES (1, -2147483648, 9223372036854775807, -12345678901234567890.000123, 3.5, \
                 0.5, -0.0, 'ünï', 'v', 'ab', true, '2026-07-22', '23:59:59.000001', '2026-07-22 12:00:00', \
                 '2026-07-22 17:30:00+05:30', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '\\x00ff', 'happy'), \
               (2, NULL, NULL, 'NaN', NULL, NULL, 'Infinity', '', NULL, NULL, false, '-infinity', NULL, NULL, NULL, NULL, '', NULL);",
        )
        .unwrap();
    let mut session = session(&database);
    let table: TableName = "public.t".parse().unwrap();
    let columns = stream::read_columns(&mut session, &table).unwrap();
    let decoders: Vec<(String, Decoder)> = columns[1..]
        .iter()
        .map(|column| (column.name.clone(), stream::plan_pair(column, column, "target").unwrap().0))
        .collect();
    let query = RowQuery::for_table(&table, "id", KeyDecoder::Int, decoders, None);
    let decoders = query.decoders();
    let rows: Vec<ValuesRow> = read_all(&mut session, query, StreamOptions::default())
        .into_iter()
        .map(|row| row.unwrap().to_values_row(&decoders).unwrap())
        .collect();
    let numeric = |text: &str| Value::Numeric(Numeric::parse(text).unwrap());
    let noon = 1_784_721_600_000_000;
    let expected_first = vec![
        Value::Int(-2_147_483_648),
        Value::Int(i64::MAX),
        numeric("-12345678901234567890.000123"),
        numeric("3.5"),
        Value::float(0.5),
        Value::float(0.0),
        Value::text("ünï"),
        Value::text("v"),
        Value::text("ab"),
        Value::Bool(true),
        Value::Date(20_656),
        Value::Time(86_399_000_001),
        Value::Timestamp(noon),
        Value::Timestamp(noon),
        Value::Uuid([0xa0, 0xee, 0xbc, 0x99, 0x9c, 0x0b, 0x4e, 0xf8, 0xbb, 0x6d, 0x6b, 0xb9, 0xbd, 0x38, 0x0a, 0x11]),
        Value::Bytes(vec![0x00, 0xff].into()),
        Value::text("happy"),
    ];
    assert_eq!(rows[0].key, Key::Int(1));
    for (index, (got, want)) in rows[0].values.iter().zip(&expected_first).enumerate() {
        assert!(got == want, "column {} decoded wrong: {:?}", columns[index + 1].name, got.canonical_text());
    }
    assert_eq!(rows[0].values.len(), expected_first.len());
    let second = &rows[1].values;
    assert_eq!(second[0], Value::Null);
    assert_eq!(second[2], numeric("NaN"));
    assert_eq!(second[5], Value::float(f64::INFINITY));
    assert_eq!(second[6], Value::text(""));
    assert_eq!(second[10], Value::Date(i32::MIN), "-infinity stays the smallest date");
    assert_eq!(second[15], Value::Bytes(Vec::new().into()));
}

#[test]
fn rows_arrive_in_key_order_across_batch_boundaries() {
    let database = shared_cluster().fresh_database().unwrap();
    database
        .client()
        .unwrap()
        .batch_execute("CREATE TABLE public.t (id bigint PRIMARY KEY, v text); INSERT INTO public.t SELECT g, repeat('x', g % 50) FROM generate_series(1000, 1, -1) g;")
        .unwrap();
    let mut session = session(&database);
    let table: TableName = "public.t".parse().unwrap();
    let query =
        RowQuery::for_table(&table, "id", KeyDecoder::Int, vec![("v".into(), Decoder::Text)], Some("id % 3 <> 0"));
    let rows = read_all(&mut session, query, StreamOptions { batch_rows: 7, queued_batches: 1 });
    let keys: Vec<i64> = rows
        .into_iter()
        .map(|row| match row.unwrap().key() {
            Key::Int(key) => *key,
            other => panic!("unexpected key {other}"),
        })
        .collect();
    let expected: Vec<i64> = (1..=1000).filter(|id| id % 3 != 0).collect();
    assert_eq!(keys, expected);
}

#[test]
fn a_stream_dropped_early_cancels_its_query_and_the_session_stays_usable() {
    let database = shared_cluster().fresh_database().unwrap();
    database
        .client()
        .unwrap()
        .batch_execute(
            "CREATE TABLE public.t (id bigint PRIMARY KEY); INSERT INTO public.t SELECT generate_series(1, 200000);",
        )
        .unwrap();
    let mut session = session(&database);
    let table: TableName = "public.t".parse().unwrap();
    session.begin_snapshot().unwrap();
    std::thread::scope(|scope| {
        let query = RowQuery::for_table(&table, "id", KeyDecoder::Int, vec![], None);
        let mut rows =
            RowStream::spawn(scope, &mut session, query, StreamOptions { batch_rows: 16, queued_batches: 1 });
        assert_eq!(rows.next().unwrap().unwrap().key(), &Key::Int(1));
        drop(rows);
    });
    // The scope joined the reader; the cancelled transaction rolls back and the session works.
    session.finish().unwrap();
    let count: i64 = session.client().query_one("SELECT count(*) FROM public.t", &[]).unwrap().get(0);
    assert_eq!(count, 200_000);
}

#[test]
fn a_null_key_and_a_failing_query_end_the_stream_with_an_error() {
    let database = shared_cluster().fresh_database().unwrap();
    database
        .client()
        .unwrap()
        .batch_execute("CREATE TABLE public.t (id int, v int); INSERT INTO public.t VALUES (1, 1), (NULL, 2);")
        .unwrap();
    let mut session = session(&database);
    let table: TableName = "public.t".parse().unwrap();
    let query = RowQuery::for_table(&table, "id", KeyDecoder::Int, vec![("v".into(), Decoder::Int)], None);
    let rows = read_all(&mut session, query, StreamOptions::default());
    assert!(rows[0].is_ok());
    let error = rows[1].as_ref().unwrap_err();
    assert_eq!(error.to_string(), "the source stream has a NULL key in column id");
    assert_eq!(rows.len(), 2);

    let query = RowQuery::new("SELECT 1/0, 1", "id", KeyDecoder::Int, vec![("v".into(), Decoder::Int)]);
    let rows = read_all(&mut session, query, StreamOptions::default());
    assert!(matches!(rows.as_slice(), [Err(Error::Query { .. } | Error::Stream { .. })]), "{rows:?}");
}

#[test]
fn an_own_connection_reads_what_the_session_reads_tapped_or_not() {
    let database = shared_cluster().fresh_database().unwrap();
    database
        .client()
        .unwrap()
        .batch_execute(
            "CREATE TABLE public.t (id bigint PRIMARY KEY, n numeric(12,2), f double precision, c char(5), \
                 tz timestamptz, v text); \
             INSERT INTO public.t SELECT g, g / 7.0, g / 3.0, 'c' || (g % 10), \
                 timestamptz '2026-01-01' + g * interval '1 minute', CASE WHEN g % 5 = 0 THEN NULL ELSE repeat('v', g % 300) END \
             FROM generate_series(1, 5000) g;",
        )
        .unwrap();
    let mut session = session(&database);
    let table: TableName = "public.t".parse().unwrap();
    let columns = stream::read_columns(&mut session, &table).unwrap();
    let decoders: Vec<(String, Decoder)> = columns[1..]
        .iter()
        .map(|column| (column.name.clone(), stream::plan_pair(column, column, "target").unwrap().0))
        .collect();
    let query = RowQuery::for_table(&table, "id", KeyDecoder::Int, decoders, None);
    let options = StreamOptions { batch_rows: 100, queued_batches: 2 };
    let from_session: Vec<EncodedRow> =
        read_all(&mut session, query.clone(), options).into_iter().map(Result::unwrap).collect();
    assert_eq!(from_session.len(), 5000);
    for hosts in [1, 2] {
        let own: Vec<EncodedRow> =
            read_own(endpoint(&database, hosts), query.clone(), options).into_iter().map(Result::unwrap).collect();
        assert!(own == from_session, "{hosts} host(s): the rows differ from the session's");
    }
}

#[test]
fn an_own_connection_reports_a_null_key_and_a_failing_query() {
    let database = shared_cluster().fresh_database().unwrap();
    database
        .client()
        .unwrap()
        .batch_execute("CREATE TABLE public.t (id int, v int); INSERT INTO public.t VALUES (1, 1), (NULL, 2);")
        .unwrap();
    let table: TableName = "public.t".parse().unwrap();
    for hosts in [1, 2] {
        let query = RowQuery::for_table(&table, "id", KeyDecoder::Int, vec![("v".into(), Decoder::Int)], None);
        let rows = read_own(endpoint(&database, hosts), query, StreamOptions::default());
        assert!(rows[0].is_ok(), "{rows:?}");
        assert_eq!(rows[1].as_ref().unwrap_err().to_string(), "the source stream has a NULL key in column id");
        assert_eq!(rows.len(), 2);

        let query = RowQuery::new("SELECT 1/0, 1", "id", KeyDecoder::Int, vec![("v".into(), Decoder::Int)]);
        let rows = read_own(endpoint(&database, hosts), query, StreamOptions::default());
        match rows.as_slice() {
            [Err(Error::Query { source, .. })] => {
                assert_eq!(source.as_db_error().map(|db| db.message()), Some("division by zero"));
            }
            other => panic!("{hosts} host(s): {other:?}"),
        }
    }
}

#[test]
fn an_own_connection_dropped_early_ends_its_query_on_the_server() {
    let database = shared_cluster().fresh_database().unwrap();
    database
        .client()
        .unwrap()
        .batch_execute(
            "CREATE TABLE public.t (id bigint PRIMARY KEY); INSERT INTO public.t SELECT generate_series(1, 200000);",
        )
        .unwrap();
    let table: TableName = "public.t".parse().unwrap();
    let mut observer = database.client().unwrap();
    for hosts in [1, 2] {
        std::thread::scope(|scope| {
            let query = RowQuery::for_table(&table, "id", KeyDecoder::Int, vec![], None);
            let options = StreamOptions { batch_rows: 16, queued_batches: 1 };
            let mut rows = RowStream::connect(scope, endpoint(&database, hosts), query, options);
            assert_eq!(rows.next().unwrap().unwrap().key(), &Key::Int(1));
            drop(rows);
        });
        // The scope joined the reader: its connection is gone (a guard of two minutes while
        // the server notices, not a timing assertion).
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
        loop {
            let copies: i64 = observer
                .query_one(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() \
                       AND query LIKE 'COPY (SELECT%'",
                    &[],
                )
                .unwrap()
                .get(0);
            if copies == 0 {
                break;
            }
            assert!(std::time::Instant::now() < deadline, "{hosts} host(s): the COPY still runs");
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
}
