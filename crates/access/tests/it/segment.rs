//! Segment positions of text keys, computed by a real server.

use datadiff_access::segment::Position;
use datadiff_testkit::shared_cluster;

/// A text's position as the module docs define it: its first 60 bits, UTF-8, zero-padded.
fn expected(text: &str) -> i64 {
    let mut first = [0u8; 8];
    let bytes = text.trim_end_matches(' ').as_bytes();
    let length = bytes.len().min(8);
    first[..length].copy_from_slice(&bytes[..length]);
    (u64::from_be_bytes(first) >> 4) as i64
}

/// Tricky keys: empty, one byte, non-ASCII (two-, three- and four-byte UTF-8), a prefix longer
/// than eight bytes, keys differing only after byte 8, bytes above 0x7f against ASCII.
const KEYS: &[&str] = &[
    "",
    "\u{1}",
    " a",
    "A",
    "B",
    "a",
    "a-1",
    "ab",
    "z",
    "zz",
    "é",
    "éa",
    "€",
    "😀",
    "common-prefix-0001",
    "common-prefix-0002",
    "common-prefix-1000",
    "abcdefgh",
    "abcdefgh\u{0}",
    "abcdefghX",
    "abcdefghY",
    "abcdefgi",
    "\u{7f}",
    "\u{80}",
    "\u{ffff}",
];

#[test]
fn text_positions_are_non_decreasing_in_byte_order_and_are_the_first_60_bits() {
    let database = shared_cluster().fresh_database().unwrap();
    let mut client = database.client().unwrap();
    client.batch_execute("CREATE TABLE keys (k text COLLATE \"C\", c char(12))").unwrap();
    for key in KEYS {
        // A char(12) column holds the keys that fit, padded.
        let padded = (key.chars().count() <= 12 && !key.contains('\u{0}')).then_some(*key);
        let key = key.replace('\u{0}', "\u{1}");
        client.execute("INSERT INTO keys VALUES ($1, $2)", &[&key, &padded]).unwrap();
    }
    let text = Position::Text.sql("\"k\"");
    let padded = Position::PaddedText.sql("\"c\"");
    let rows = client
        .query(format!("SELECT k, {text}, c::text, {padded} FROM keys ORDER BY k COLLATE \"C\"").as_str(), &[])
        .unwrap();
    let mut previous = i64::MIN;
    for row in &rows {
        let (key, position): (String, i64) = (row.get(0), row.get(1));
        assert!(position >= 0, "{key:?}: a position is a non-negative bigint");
        assert!(position >= previous, "{key:?}: positions must not decrease in byte order");
        assert_eq!(position, expected(&key), "{key:?}: the first 60 bits of its bytes");
        previous = position;
        if let (Some(trimmed), Some(padded)) = (row.get::<_, Option<String>>(2), row.get::<_, Option<i64>>(3)) {
            assert_eq!(padded, expected(&trimmed), "{key:?} as char(12): the trimmed text's position");
            assert_eq!(padded, position, "{key:?}: char(n) padding does not move the position");
        }
    }
    assert_eq!(rows.len(), KEYS.len());
    assert_eq!(expected(""), 0);
    assert_eq!(expected("abcdefghX"), expected("abcdefghY"), "keys differing after byte 8 share a position");
    assert_eq!(expected("common-prefix-0001"), expected("common-prefix-1000"));
    // The eighth byte counts by its high half only: "h" (0x68) and "i" (0x69) share it.
    assert_eq!(expected("abcdefgh"), expected("abcdefgi"));
    assert!(expected("abcdefgh") < expected("abcdefgp"));
}

#[test]
fn a_uuid_compared_with_text_is_positioned_as_its_text() {
    let database = shared_cluster().fresh_database().unwrap();
    let mut client = database.client().unwrap();
    let uuid = "6f1c0a2e-91b4-4c3e-8a7d-2b9f1e0c5d44";
    let row = client
        .query_one(format!("SELECT {} FROM (SELECT '{uuid}'::uuid AS u) AS t", Position::Text.sql("u")).as_str(), &[])
        .unwrap();
    assert_eq!(row.get::<_, i64>(0), expected(uuid));
}

/// Keys sharing a long prefix (and one that is only the prefix, one longer, multi-byte
/// characters right after it and inside), as a replica keyed like `customer-000000001` holds.
const PREFIXED: &[&str] = &[
    "customer-000000000001",
    "customer-000000000002",
    "customer-000000000010",
    "customer-000000000099",
    "customer-000000000100",
    "customer-000000012345",
    "customer-000000099999",
    "customer-000000100000",
    "customer-000001000000",
    "customer-00000",
    "customer-000000",
    "customer-0000000000001\u{1}",
    "customer-0000é",
    "customer-0000éé-1",
    "customer-0000€",
    "customer-0000😀",
    "customer-0000\u{7f}",
];

#[test]
fn text_positions_after_a_skipped_prefix_are_the_next_60_bits() {
    use datadiff_access::segment::{common_prefix, text_position_of};
    let database = shared_cluster().fresh_database().unwrap();
    let mut client = database.client().unwrap();
    client.batch_execute("CREATE TABLE keys (k text)").unwrap();
    for key in PREFIXED.iter().chain(KEYS).map(|key| key.replace('\u{0}', "\u{1}")) {
        client.execute("INSERT INTO keys VALUES ($1)", &[&key]).unwrap();
    }
    let lowest = PREFIXED.iter().min().unwrap().as_bytes();
    let highest = PREFIXED.iter().max().unwrap().as_bytes();
    assert_eq!(common_prefix(lowest, highest), b"customer-0000");
    for skip in [0, 1, 7, 13, 14, 21, 40] {
        let position = Position::Text.sql_after("k", skip);
        let rows = client.query(format!("SELECT k, {position} FROM keys").as_str(), &[]).unwrap();
        for row in rows {
            let (key, position): (String, i64) = (row.get(0), row.get(1));
            assert_eq!(position, text_position_of(key.as_bytes(), skip), "{key:?} after {skip} bytes");
            assert!(position >= 0);
        }
    }
    // Keys with the prefix: positions after it are non-decreasing in byte order.
    let mut sorted: Vec<&[u8]> = PREFIXED.iter().map(|key| key.as_bytes()).collect();
    sorted.sort();
    let positions: Vec<i64> = sorted.iter().map(|key| text_position_of(key, 13)).collect();
    assert!(positions.windows(2).all(|pair| pair[0] <= pair[1]), "{positions:?}");
    // The empty key, and a key that is the prefix itself, are position 0.
    assert_eq!(text_position_of(b"", 13), 0);
    assert_eq!(text_position_of(b"customer-0000", 13), 0);
}

#[test]
fn text_positions_are_of_the_utf8_bytes_in_a_latin1_database_whatever_the_options_ask() {
    use datadiff_access::segment::text_position_of;
    let cluster = shared_cluster();
    let name = "positions_latin1";
    cluster
        .connect("postgres")
        .unwrap()
        .batch_execute(&format!(
            "CREATE DATABASE {name} ENCODING 'LATIN1' LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0"
        ))
        .unwrap();
    // The options ask for a LATIN1 client encoding; the driver's own startup parameter
    // (UTF8) is applied after them, and the positions read the client encoding's bytes.
    let mut config = cluster.config(name);
    config.options("-c client_encoding=LATIN1");
    let mut client = config.connect(postgres::NoTls).unwrap();
    let encoding: String = client.query_one("SHOW client_encoding", &[]).unwrap().get(0);
    assert_eq!(encoding, "UTF8");
    client.batch_execute("CREATE TABLE keys (k text, c char(16))").unwrap();
    let keys = ["", "a", "é", "éa", "customer-0000é", "ÿÿÿÿÿÿÿÿÿ", "Ä-1", "\\x41"];
    for key in keys {
        client.execute("INSERT INTO keys VALUES ($1, $1::text)", &[&key]).unwrap();
    }
    for skip in [0, 1, 9, 13] {
        let (text, padded) = (Position::Text.sql_after("k", skip), Position::PaddedText.sql_after("c", skip));
        let rows = client.query(format!("SELECT k, {text}, {padded} FROM keys").as_str(), &[]).unwrap();
        assert_eq!(rows.len(), keys.len());
        for row in rows {
            let key: String = row.get(0);
            let expected = text_position_of(key.as_bytes(), skip);
            assert_eq!(row.get::<_, i64>(1), expected, "{key:?} after {skip} bytes: its UTF-8 bytes, not LATIN1's");
            assert_eq!(row.get::<_, i64>(2), expected, "{key:?} as char(16) after {skip} bytes");
        }
    }
    // A two-byte character in UTF-8 is one byte in LATIN1: the position tells them apart.
    assert_ne!(text_position_of("é".as_bytes(), 0), i64::from(0xe9u8) << 52);
}

/// The keys of `table` whose rows `predicate` keeps, in byte order.
fn selected(client: &mut postgres::Client, table: &str, predicate: &str) -> Vec<String> {
    client
        .query(format!("SELECT k::text FROM {table} WHERE {predicate} ORDER BY k::text COLLATE \"C\"").as_str(), &[])
        .unwrap()
        .iter()
        .map(|row| row.get(0))
        .collect()
}

#[test]
fn a_key_range_selects_exactly_the_rows_of_the_position_predicate_with_or_without_an_index() {
    use datadiff_access::TableName;
    use datadiff_access::segment::{KeyRange, SegmentQuery, common_prefix, text_position_of};
    use datadiff_diff_core::segment::Segment;
    let database = shared_cluster().fresh_database().unwrap();
    let mut client = database.client().unwrap();
    // (table, DDL, the range its index serves)
    let tables = [
        (
            "c_keys",
            "CREATE TABLE c_keys (k text COLLATE \"C\" PRIMARY KEY)",
            Some(KeyRange::Collated("pg_catalog.\"C\"".into())),
        ),
        // The test clusters' default collation is C: a plain primary key serves a range.
        (
            "default_keys",
            "CREATE TABLE default_keys (k varchar(40) PRIMARY KEY)",
            Some(KeyRange::Collated("pg_catalog.\"default\"".into())),
        ),
        (
            "pattern_keys",
            "CREATE TABLE pattern_keys (k text COLLATE \"en-x-icu\" NOT NULL); \
             CREATE UNIQUE INDEX ON pattern_keys (k text_pattern_ops)",
            Some(KeyRange::Pattern),
        ),
        // A linguistic collation's index cannot serve a byte-order range: positions only.
        ("icu_keys", "CREATE TABLE icu_keys (k text COLLATE \"en-x-icu\" PRIMARY KEY)", None),
        ("bare_keys", "CREATE TABLE bare_keys (k text NOT NULL)", None),
    ];
    for (table, ddl, range) in tables {
        client.batch_execute(ddl).unwrap();
        for key in PREFIXED {
            client.execute(format!("INSERT INTO {table} VALUES ($1)").as_str(), &[key]).unwrap();
        }
        client.batch_execute(&format!("ANALYZE {table}")).unwrap();
        let query = SegmentQuery::new("source", &TableName::new("public", table), "k", Position::Text, &[], None);
        let overview = query.overview(&mut client, true).unwrap().unwrap().unwrap();
        assert_eq!(query.key_range(), range, "{table}");
        let [low, high] = query.key_bytes().unwrap();
        let lowest = PREFIXED.iter().map(|key| key.as_bytes()).min().unwrap();
        let highest = PREFIXED.iter().map(|key| key.as_bytes()).max().unwrap();
        assert_eq!(
            (low.as_slice(), high.as_slice()),
            (lowest, highest),
            "{table}: the keys lowest and highest in byte order"
        );
        // Without the duplicate check, a key its index orders bytewise is read through the
        // index (a linguistic order would put "customer-0000€" last): the same two keys.
        let unchecked = SegmentQuery::new("source", &TableName::new("public", table), "k", Position::Text, &[], None);
        assert_eq!(unchecked.overview(&mut client, false).unwrap().unwrap().unwrap(), overview, "{table}");
        assert_eq!(unchecked.key_bytes(), Some([low.clone(), high.clone()]), "{table}");
        let through_index = unchecked.overview_sql(false).contains("LIMIT 1");
        assert_eq!(through_index, range.is_some(), "{table}: through the index exactly where one orders bytewise");
        let prefix = common_prefix(&low, &high).to_vec();
        assert_eq!(prefix, b"customer-0000");
        query.skip_prefix(&prefix);
        let span = Segment { first: query.text_position(&low), last: query.text_position(&high) };
        assert_eq!(overview.rows, PREFIXED.len() as u64);
        let position = Position::Text.sql_after("k", prefix.len());
        let mut segments = vec![span];
        for key in PREFIXED {
            let at = text_position_of(key.as_bytes(), prefix.len());
            for (below, above) in [(0, 0), (1, 0), (0, 1), (1 << 36, 0), (0, 1 << 44), (3, 1 << 20)] {
                segments.push(Segment { first: (at - below).max(0), last: at + above });
            }
        }
        // A level's children: equal widths across the span.
        let width = (span.last - span.first) / 7 + 1;
        segments.extend(
            (0..7)
                .map(|index| Segment { first: span.first + index * width, last: span.first + (index + 1) * width - 1 }),
        );
        let mut seen = 0;
        for segment in segments {
            let exact =
                selected(&mut client, table, &format!("{position} BETWEEN {} AND {}", segment.first, segment.last));
            let filtered = selected(&mut client, table, &query.leaves_filter(&[segment]));
            assert_eq!(filtered, exact, "{table}, {segment:?}");
            seen += exact.len();
        }
        assert!(seen > PREFIXED.len(), "{table}: the segments select rows");
        // Several leaves at once, as a stream of the leaves selects them.
        let children: Vec<Segment> = (0..7)
            .map(|index| Segment { first: span.first + index * width, last: span.first + (index + 1) * width - 1 })
            .collect();
        for picked in [vec![0, 2, 5], vec![1, 3, 4, 6], vec![0, 1, 2, 3, 4, 5, 6]] {
            let leaves: Vec<Segment> = picked.iter().map(|&index| children[index]).collect();
            let mut exact = Vec::new();
            for leaf in &leaves {
                exact.extend(selected(
                    &mut client,
                    table,
                    &format!("{position} BETWEEN {} AND {}", leaf.first, leaf.last),
                ));
            }
            exact.sort_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
            assert_eq!(selected(&mut client, table, &query.leaves_filter(&leaves)), exact, "{table}, {picked:?}");
        }
        if range.is_some() {
            // The range is what lets the index find a narrow segment's rows.
            let at = text_position_of(b"customer-000000012345", prefix.len());
            let filter = query.leaves_filter(&[Segment { first: at, last: at }]);
            let plan: Vec<String> = {
                let mut transaction = client.transaction().unwrap();
                transaction.batch_execute("SET LOCAL enable_seqscan = off").unwrap();
                transaction
                    .query(format!("EXPLAIN SELECT k FROM {table} WHERE {filter}").as_str(), &[])
                    .unwrap()
                    .iter()
                    .map(|row| row.get(0))
                    .collect()
            };
            assert!(plan.iter().any(|line| line.contains("Index")), "{table}: {plan:?}");
            assert!(!plan.iter().any(|line| line.contains("Seq Scan")), "{table}: {plan:?}");
        }
    }
}

/// Levels read each split through the key's index only where the rows lie in the key's
/// order, or the level's splits hold few rows: random uuids scattered over the heap are read
/// in one pass unless a level holds at most a sixteenth of the rows (an index read costs a
/// heap page per row); the same keys inserted in order, an integer key, and a table without
/// statistics use the index up to half the rows.
#[test]
fn levels_read_through_the_index_where_the_rows_lie_in_key_order_or_are_few() {
    use datadiff_access::TableName;
    use datadiff_access::segment::SegmentQuery;
    use datadiff_diff_core::segment::{Segment, Split};
    let database = shared_cluster().fresh_database().unwrap();
    let mut client = database.client().unwrap();
    client
        .batch_execute(
            "CREATE TABLE scattered (id uuid PRIMARY KEY); \
             INSERT INTO scattered SELECT md5('event-' || g)::uuid FROM generate_series(1, 20000) g; \
             CREATE TABLE ordered (id uuid PRIMARY KEY); \
             INSERT INTO ordered SELECT id FROM scattered ORDER BY id; \
             CREATE TABLE numbers (id bigint PRIMARY KEY); \
             INSERT INTO numbers SELECT g FROM generate_series(1, 20000) g; \
             CREATE TABLE fresh (id uuid PRIMARY KEY) WITH (autovacuum_enabled = false); \
             INSERT INTO fresh SELECT id FROM scattered; \
             ANALYZE scattered; ANALYZE ordered; ANALYZE numbers",
        )
        .unwrap();
    // (table, position, rows in order) — each table holds 20,000 rows.
    for (table, position, ordered) in [
        ("scattered", Position::Uuid, false),
        ("ordered", Position::Uuid, true),
        ("numbers", Position::Integer, true),
        ("fresh", Position::Uuid, true),
    ] {
        let query = SegmentQuery::new("source", &TableName::new("public", table), "id", position, &[], None);
        let overview = query.overview(&mut client, false).unwrap().unwrap().unwrap();
        let level = |rows: &[u64]| -> Vec<Split> {
            let width = (overview.last - overview.first) / rows.len() as i64 + 1;
            rows.iter()
                .enumerate()
                .map(|(index, rows)| {
                    let first = overview.first + index as i64 * width;
                    Split::new(Segment { first, last: (first + width - 1).min(overview.last) }, 8).holding(*rows)
                })
                .collect()
        };
        // A few splits of a few hundred rows: through the index, scattered or not.
        assert!(query.reads_through_index(&level(&[300, 200, 500])), "{table}");
        // A sixteenth of the rows (1,250): still through the index; more: only in key order.
        assert!(query.reads_through_index(&level(&[600, 650])), "{table}");
        assert_eq!(query.reads_through_index(&level(&[700, 700])), ordered, "{table}");
        assert_eq!(query.reads_through_index(&level(&[5_000, 5_000])), ordered, "{table}");
        // More than half the table: one pass, whatever the order.
        assert!(!query.reads_through_index(&level(&[6_000, 5_000])), "{table}");
        // A split whose rows are not known counts as the whole table.
        assert!(!query.reads_through_index(&[Split::new(Segment { first: overview.first, last: overview.last }, 8)]));
    }
    // A level read through the index switches the session's JIT compilation off (its cost
    // estimate is far above `jit_above_cost`); a pass leaves it as it was.
    let jit = |client: &mut postgres::Client| client.query_one("SHOW jit", &[]).unwrap().get::<_, String>(0);
    let mut client = database.client().unwrap();
    let query = SegmentQuery::new("source", &TableName::new("public", "numbers"), "id", Position::Integer, &[], None);
    query.overview(&mut client, false).unwrap().unwrap().unwrap();
    client.batch_execute("SET jit = on").unwrap();
    let whole = Split::new(Segment { first: 1, last: 20_000 }, 8);
    query.level(&mut client, &[whole, Split::new(Segment { first: 20_001, last: 20_002 }, 2)]).unwrap();
    assert_eq!(jit(&mut client), "on");
    let few = [
        Split::new(Segment { first: 1, last: 10 }, 2).holding(10),
        Split::new(Segment { first: 20, last: 30 }, 2).holding(11),
    ];
    query.level(&mut client, &few).unwrap();
    assert_eq!(jit(&mut client), "off");
    // No unique index (the overview looks for duplicates): always one pass.
    let query = SegmentQuery::new("source", &TableName::new("public", "numbers"), "id", Position::Integer, &[], None);
    query.overview(&mut client, true).unwrap().unwrap().unwrap();
    assert!(!query.reads_through_index(&[Split::new(Segment { first: 1, last: 10 }, 2).holding(10)]));
}

/// A small deterministic generator (splitmix64), so that the leaves are the same on every run.
struct Draws(u64);

impl Draws {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, bound: u64) -> u64 {
        self.next() % bound.max(1)
    }
}

/// `count` ascending, disjoint, non-adjacent leaves across `positions` (sorted): each starts at
/// a row's position (or just beside one); one in `wide_one_in` is up to `wide` positions wide,
/// the others one position.
fn drawn_leaves(
    draws: &mut Draws,
    positions: &[i64],
    (count, wide, wide_one_in): (usize, i64, u64),
) -> Vec<datadiff_diff_core::segment::Segment> {
    use datadiff_diff_core::segment::Segment;
    let mut starts: Vec<i64> = (0..count * 2)
        .map(|_| positions[draws.below(positions.len() as u64) as usize] + draws.below(3) as i64 - 1)
        .collect();
    starts.sort_unstable();
    starts.dedup();
    let mut leaves: Vec<Segment> = Vec::new();
    for first in starts {
        let width = if draws.below(wide_one_in) == 0 { 1 + draws.below(wide as u64) as i64 } else { 1 };
        if leaves.last().is_some_and(|last| last.last + 1 >= first) {
            continue;
        }
        leaves.push(Segment { first: first.max(0), last: first.max(0) + width - 1 });
        if leaves.len() == count {
            break;
        }
    }
    leaves
}

/// The keys whose position lies in one of `leaves`, in byte order.
fn in_leaves(rows: &[(String, i64)], leaves: &[datadiff_diff_core::segment::Segment]) -> Vec<String> {
    let mut kept: Vec<String> = rows
        .iter()
        .filter(|(_, position)| {
            let at = leaves.partition_point(|leaf| leaf.last < *position);
            leaves.get(at).is_some_and(|leaf| leaf.first <= *position)
        })
        .map(|(key, _)| key.clone())
        .collect();
    kept.sort_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
    kept
}

#[test]
fn thousands_of_leaves_select_exactly_their_rows_for_every_key_kind_with_or_without_an_index() {
    use datadiff_access::TableName;
    use datadiff_access::segment::{LISTED_POSITIONS, OR_LEAVES, SegmentQuery, text_position_of};
    let database = shared_cluster().fresh_database().unwrap();
    let mut client = database.client().unwrap();
    const ROWS: i64 = 12_000;
    // (table, DDL, key values, position, unique index)
    let tables = [
        ("ints", "CREATE TABLE ints (k bigint PRIMARY KEY)", "i * 97", Position::Integer, true),
        ("bare_ints", "CREATE TABLE bare_ints (k integer NOT NULL)", "i * 97 - 70000", Position::Integer, false),
        ("uuids", "CREATE TABLE uuids (k uuid PRIMARY KEY)", "md5(i::text)::uuid", Position::Uuid, true),
        ("bare_uuids", "CREATE TABLE bare_uuids (k uuid NOT NULL)", "md5(i::text)::uuid", Position::Uuid, false),
        ("texts", "CREATE TABLE texts (k text COLLATE \"C\" PRIMARY KEY)", "md5(i::text)", Position::Text, true),
        ("bare_texts", "CREATE TABLE bare_texts (k text NOT NULL)", "md5(i::text)", Position::Text, false),
    ];
    let mut draws = Draws(31);
    for (table, ddl, key, position, unique) in tables {
        client.batch_execute(ddl).unwrap();
        client
            .batch_execute(&format!(
                "INSERT INTO {table} SELECT {key} FROM pg_catalog.generate_series(1, {ROWS}) AS i; ANALYZE {table}"
            ))
            .unwrap();
        let query = SegmentQuery::new("source", &TableName::new("public", table), "k", position, &[], None);
        query.overview(&mut client, !unique).unwrap().unwrap().unwrap();
        let mut rows: Vec<(String, i64)> = client
            .query(format!("SELECT k::text FROM {table}").as_str(), &[])
            .unwrap()
            .iter()
            .map(|row| {
                let key: String = row.get(0);
                let at = match position {
                    Position::Integer => key.parse().unwrap(),
                    Position::Uuid => i64::from_str_radix(&key.replace('-', "")[..15], 16).unwrap(),
                    _ => text_position_of(key.as_bytes(), 0),
                };
                (key, at)
            })
            .collect();
        rows.sort_by_key(|(_, at)| *at);
        let positions: Vec<i64> = rows.iter().map(|(_, at)| *at).collect();
        let span = positions[positions.len() - 1] - positions[0];
        // A few leaves (one OR arm each), thousands of mostly one-position leaves, and
        // thousands of wide ones (integers: most of them wider than the listed keys).
        let sets = [
            drawn_leaves(&mut draws, &positions, (40, span / 200, 4)),
            drawn_leaves(&mut draws, &positions, (3 * OR_LEAVES, 40, 4)),
            drawn_leaves(&mut draws, &positions, (3 * OR_LEAVES, span / 4_000, 1)),
        ];
        for (index, leaves) in sets.iter().enumerate() {
            assert!(leaves.len() > 30, "{table}: {} leaves drawn", leaves.len());
            let filter = query.leaves_filter(leaves);
            let expected = in_leaves(&rows, leaves);
            assert!(!expected.is_empty() && expected.len() < rows.len(), "{table} set {index}: {}", expected.len());
            assert_eq!(selected(&mut client, table, &filter), expected, "{table}, leaf set {index}");
            if position == Position::Text && unique {
                // Through the index for any number of leaves, the ranges written as hex.
                assert!(filter.contains("CROSS JOIN LATERAL") && !filter.contains(" OR "), "{table}: {filter}");
            }
            if position == Position::Uuid && unique {
                // Through the index for any number of leaves, written as positions.
                assert!(filter.contains("CROSS JOIN LATERAL") && !filter.contains("'::uuid"), "{table}: {filter}");
            }
            if leaves.len() > OR_LEAVES {
                let listed = leaves.iter().filter(|leaf| leaf.positions() <= LISTED_POSITIONS).count();
                let shape = match position {
                    Position::Integer if leaves.len() - listed <= OR_LEAVES => "= ANY('{",
                    Position::Uuid if unique => "CROSS JOIN LATERAL",
                    _ => "width_bucket",
                };
                assert!(filter.contains(shape), "{table}, leaf set {index}: expected {shape}");
                assert!(filter.matches(" OR ").count() <= OR_LEAVES, "{table}, leaf set {index}: an OR arm per leaf");
            }
        }
    }
}

#[test]
fn text_keys_are_split_at_sampled_quantiles_and_views_and_other_keys_keep_equal_widths() {
    use datadiff_access::TableName;
    use datadiff_access::segment::{SegmentQuery, common_prefix};
    use datadiff_diff_core::segment::{Segment, Split};
    let database = shared_cluster().fresh_database().unwrap();
    let mut client = database.client().unwrap();
    client
        .batch_execute(
            "CREATE TABLE texts (id text COLLATE \"C\" PRIMARY KEY, n integer); \
             INSERT INTO texts SELECT 'customer-' || lpad(g::text, 12, '0'), g FROM generate_series(1, 40000) g; \
             CREATE VIEW texts_view AS SELECT * FROM texts; \
             CREATE TABLE numbers (id bigint PRIMARY KEY); \
             INSERT INTO numbers SELECT g FROM generate_series(1, 40000) g; \
             ANALYZE texts; ANALYZE numbers",
        )
        .unwrap();
    let keys: Vec<String> = (1..=40_000).map(|g| format!("customer-{g:012}")).collect();
    let query = SegmentQuery::new("source", &TableName::new("public", "texts"), "id", Position::Text, &[], None);
    query.overview(&mut client, false).unwrap().unwrap().unwrap();
    let prefix = common_prefix(keys[0].as_bytes(), keys[39_999].as_bytes()).to_vec();
    query.skip_prefix(&prefix);
    let positions: Vec<i64> = keys.iter().map(|key| query.text_position(key.as_bytes())).collect();
    let span = Segment { first: positions[0], last: positions[39_999] };
    // Equal widths: the digits fill few of 20 children, four of which hold nearly every row.
    let equal = Split::new(span, 20);
    let mut filled = vec![0u64; equal.children() as usize];
    for position in &positions {
        filled[((position - span.first) as u64 / equal.width) as usize] += 1;
    }
    assert_eq!(filled.iter().filter(|rows| **rows >= 9_999).count(), 4, "{filled:?}");
    // Sampled quantiles: 19 points, each piece about 2,000 rows.
    let points = query.split_points(&mut client, span, 20).unwrap();
    assert!(points.len() >= 15 && points.len() <= 19, "{points:?}");
    assert!(points.windows(2).all(|pair| pair[0] <= pair[1]), "{points:?}");
    let mut bounds = vec![span.first];
    bounds.extend(&points);
    bounds.push(span.last + 1);
    for piece in bounds.windows(2) {
        let rows = positions.iter().filter(|position| piece[0] <= **position && **position < piece[1]).count();
        assert!((1_000..=3_500).contains(&rows), "a piece of {rows} rows: {points:?}");
    }
    // The same again (a run repeats its splits).
    assert_eq!(query.split_points(&mut client, span, 20).unwrap(), points);
    // A view cannot be sampled, and integer keys fill equal widths: no points.
    let view = SegmentQuery::new("source", &TableName::new("public", "texts_view"), "id", Position::Text, &[], None);
    view.overview(&mut client, true).unwrap().unwrap().unwrap();
    view.skip_prefix(&prefix);
    assert_eq!(view.split_points(&mut client, span, 20).unwrap(), Vec::<i64>::new());
    let numbers = SegmentQuery::new("source", &TableName::new("public", "numbers"), "id", Position::Integer, &[], None);
    numbers.overview(&mut client, false).unwrap().unwrap().unwrap();
    assert_eq!(numbers.split_points(&mut client, Segment { first: 1, last: 40_000 }, 20).unwrap(), Vec::<i64>::new());
}

/// A side's sketch answers cells equal to those of the diff core's [`Sketch`] built from each
/// row's digest (read back one position at a time): the cell each row falls in, the check,
/// and every sum wrapped as the core wraps it — negative keys and hashes included — for
/// integer, uuid and text keys.
#[test]
fn a_sketch_answers_the_cells_the_diff_core_computes() {
    use datadiff_access::TableName;
    use datadiff_access::segment::SegmentQuery;
    use datadiff_diff_core::segment::Search;
    use datadiff_diff_core::sketch::{Sketch, SketchShape};
    let database = shared_cluster().fresh_database().unwrap();
    let mut client = database.client().unwrap();
    client
        .batch_execute(
            "CREATE TABLE numbers (id bigint PRIMARY KEY, note text); \
             INSERT INTO numbers SELECT g * 7919 - 20000000, 'note ' || g FROM generate_series(1, 5000) g; \
             CREATE TABLE uuids (id uuid PRIMARY KEY, note text); \
             INSERT INTO uuids SELECT md5('u' || g)::uuid, 'note ' || g FROM generate_series(1, 5000) g; \
             CREATE TABLE texts (id text COLLATE \"C\" PRIMARY KEY, note text); \
             INSERT INTO texts SELECT 'k' || g, 'note ' || g FROM generate_series(1, 5000) g",
        )
        .unwrap();
    let fields = vec!["note".to_owned()];
    for (table, position) in [("numbers", Position::Integer), ("uuids", Position::Uuid), ("texts", Position::Text)] {
        let query = SegmentQuery::new("source", &TableName::new("public", table), "id", position, &fields, None);
        query.overview(&mut client, false).unwrap().unwrap().unwrap();
        // Every row's position and digest, read back one position at a time.
        let sql = match position {
            Position::Integer => "SELECT id FROM numbers",
            Position::Uuid => "SELECT ('x' || left(replace(id::text, '-', ''), 15))::bit(60)::bigint FROM uuids",
            _ => {
                "SELECT (('x' || rpad(encode(convert_to(id, 'UTF8'), 'hex'), 16, '0'))::bit(64)::bigint >> 4) \
                 & 1152921504606846975 FROM texts"
            }
        };
        let mut positions: Vec<i64> = client.query(sql, &[]).unwrap().iter().map(|row| row.get(0)).collect();
        positions.sort_unstable();
        positions.dedup();
        assert_eq!(positions.len(), 5_000, "{table}: one row a position");
        let per_position = query.level(&mut client, &Search::position_splits(&positions)).unwrap();
        assert_eq!(per_position.iter().map(|child| child.digest.rows).sum::<u64>(), 5_000, "{table}: positions");
        for shape in [SketchShape::with_cells(97), SketchShape::with_cells(1_000)] {
            let mut expected = Sketch::new(shape);
            for child in &per_position {
                expected.add(positions[child.split], child.digest.hash);
            }
            let expected: Vec<_> = expected.cells().iter().filter(|cell| cell.rows != 0).copied().collect();
            let mut cells = query.sketch(&mut client, shape).unwrap();
            cells.sort_unstable_by_key(|cell| cell.index);
            assert_eq!(cells, expected, "{table}, {} cells a table", shape.table_cells);
        }
    }
}

/// Date and timestamp keys from one end of PostgreSQL's range to the other, the infinities
/// included, with the positions the module docs define (days since 2000-01-01, as
/// PostgreSQL subtracts dates; microseconds since its midnight UTC, shifted right by two bits).
const CALENDAR: &[(&str, i64, i64)] = &[
    ("-infinity", i32::MIN as i64, i64::MIN >> 2),
    ("4714-11-24 BC", -2_451_545, (-2_451_545 * 86_400_000_000) >> 2),
    ("0044-03-15 BC", -746_117, (-746_117 * 86_400_000_000) >> 2),
    ("1999-12-31", -1, -86_400_000_000 >> 2),
    ("2000-01-01", 0, 0),
    ("2026-07-01", 9_678, (9_678 * 86_400_000_000) >> 2),
    ("294276-12-31", 106_751_982, (106_751_982 * 86_400_000_000) >> 2),
    ("infinity", i32::MAX as i64, i64::MAX >> 2),
];

#[test]
fn date_and_timestamp_positions_are_their_binary_values_in_key_order() {
    use datadiff_access::segment::CalendarKey;

    let database = shared_cluster().fresh_database().unwrap();
    let mut client = database.client().unwrap();
    client
        .batch_execute("SET TimeZone = 'Asia/Kathmandu'; CREATE TABLE keys (d date, t timestamp, z timestamptz)")
        .unwrap();
    for (day, _, _) in CALENDAR {
        client.execute("INSERT INTO keys VALUES ($1::text::date, $1::text::date, $1::text::date::timestamp AT TIME ZONE 'UTC')", &[day]).unwrap();
    }
    // A microsecond apart: the same position (four microseconds a position), the next one 4 µs on.
    client
        .batch_execute(
            "INSERT INTO keys VALUES (NULL, '2026-07-01 12:00:00.000001', '2026-07-01 12:00:00.000001+00'), \
             (NULL, '2026-07-01 12:00:00.000004', '2026-07-01 17:45:00.000004+05:45')",
        )
        .unwrap();
    let date = Position::Calendar(CalendarKey::Date).sql("d");
    let midnight = Position::Calendar(CalendarKey::DateAsTimestamp).sql("d");
    let naive = Position::Calendar(CalendarKey::Timestamp).sql("t");
    let aware = Position::Calendar(CalendarKey::TimestampTz).sql("z");
    let rows = client
        .query(format!("SELECT d::text, {date}, {midnight}, {naive}, {aware} FROM keys ORDER BY t").as_str(), &[])
        .unwrap();
    let mut previous = i64::MIN;
    let mut dated = CALENDAR.iter();
    let mut instants = Vec::new();
    for row in &rows {
        let (naive, aware): (i64, i64) = (row.get(3), row.get(4));
        assert_eq!(naive, aware, "a timestamp is read as UTC, a timestamptz in UTC whatever the session's zone");
        assert!(naive >= previous, "positions must not decrease in key order");
        previous = naive;
        match row.get::<_, Option<String>>(0) {
            Some(day) => {
                let (literal, days, micros) = dated.next().unwrap();
                assert_eq!(&day, literal);
                assert_eq!(row.get::<_, i64>(1), *days, "{day}: a date's position is its days since 2000-01-01");
                assert_eq!(row.get::<_, i64>(2), *micros, "{day}: a date against a timestamp is its midnight");
                assert_eq!(naive, *micros, "{day}: its midnight as a timestamp");
            }
            None => instants.push(naive),
        }
    }
    assert_eq!(rows.len(), CALENDAR.len() + 2);
    // 2026-07-01 12:00:00.000001 shares the position of 12:00:00 (836,222,400 s after 2000).
    assert_eq!(instants, [836_222_400_000_000 >> 2, 836_222_400_000_004 >> 2]);
    assert_eq!(836_222_400_000_001i64 >> 2, 836_222_400_000_000 >> 2);
}

/// Segment bounds of date and timestamp keys, which their index serves: for positions across
/// the whole range (the infinities, the finite ends, the gaps beyond them, around 2000 and
/// 2026), the bounds written in Rust and those the server derives from the positions are the
/// same keys; the lowest key is the first of the position (a key one day or microsecond
/// lower has a lower position), the highest the last.
#[test]
fn date_and_timestamp_segment_bounds_are_the_first_and_last_keys_of_their_positions() {
    use datadiff_access::segment::CalendarKey;
    use datadiff_diff_core::segment::Segment;

    let database = shared_cluster().fresh_database().unwrap();
    let mut client = database.client().unwrap();
    client.batch_execute("SET TimeZone = 'Pacific/Chatham'").unwrap();
    let finite_days = [-2_451_545i64, 2_145_031_948];
    let finite_micros = [-211_813_488_000_000_000i64, 9_223_371_331_199_999_999];
    let days: Vec<i64> = [i32::MIN as i64, i32::MAX as i64, -2_451_546, 2_145_031_949, -1, 0, 1, 9_678, -746_117]
        .into_iter()
        .chain(finite_days)
        .collect();
    let instants: Vec<i64> = [
        i64::MIN >> 2,
        i64::MAX >> 2,
        (i64::MIN >> 2) + 1,
        (i64::MAX >> 2) - 1,
        finite_micros[0] / 4 - 1,
        finite_micros[0] / 4,
        finite_micros[1] / 4,
        finite_micros[1] / 4 + 1,
        -1,
        0,
        1,
        836_222_400_000_000 / 4,
        836_222_400_000_001,
        -186_531_840_000_000,
    ]
    .into_iter()
    .collect();
    for (calendar, positions) in
        [(CalendarKey::Date, &days), (CalendarKey::Timestamp, &instants), (CalendarKey::TimestampTz, &instants)]
    {
        let position = Position::Calendar(calendar);
        for &at in positions {
            let (low, high) = position.bounds(Segment { first: at, last: at });
            // Positions as expressions of several terms, as the leaves write them.
            let (low_sql, high_sql) = position.bounds_sql("$1::bigint + 0", "0 + $1::bigint");
            let of = |key: &str| position.sql(&format!("({key})"));
            let step = if calendar == CalendarKey::Date { "1" } else { "INTERVAL '1 microsecond'" };
            // The first and last finite keys: those of the positions next to the infinities'.
            let (first, last) = match calendar {
                CalendarKey::Date => (i64::from(i32::MIN) + 1, i64::from(i32::MAX) - 1),
                _ => ((i64::MIN >> 2) + 1, (i64::MAX >> 2) - 1),
            };
            let (min, max) = position.bounds(Segment { first, last });
            let row = client
                .query_one(
                    format!(
                        "SELECT {low} = {low_sql}, {high} = {high_sql}, {low}::text, {high}::text, \
                         {low_check}, {high_check}, \
                         {low_position}, {high_position}",
                        low_position = of(&low),
                        high_position = of(&high),
                        // Only of a finite key inside the range (SQL would fold the key
                        // beyond the range, and fail, whatever guarded it).
                        low_check = match low.starts_with("'infinity'") || low.starts_with("'-infinity'") {
                            true => "true".to_owned(),
                            false if low == min => format!("{} >= $1", of(&low)),
                            false => format!("{} >= $1 AND {} < $1", of(&low), of(&format!("{low} - {step}"))),
                        },
                        high_check = match high.starts_with("'infinity'") || high.starts_with("'-infinity'") {
                            true => "true".to_owned(),
                            false if high == max => format!("{} <= $1", of(&high)),
                            false => format!("{} <= $1 AND {} > $1", of(&high), of(&format!("{high} + {step}"))),
                        },
                    )
                    .as_str(),
                    &[&at],
                )
                .unwrap();
            let context = format!("{calendar:?} position {at}: {low} .. {high}");
            assert!(row.get::<_, bool>(0), "{context}: the lowest key in Rust and in SQL");
            assert!(row.get::<_, bool>(1), "{context}: the highest key in Rust and in SQL");
            assert!(row.get::<_, bool>(4), "{context}: the lowest key is the position's first");
            assert!(row.get::<_, bool>(5), "{context}: the highest key is the position's last");
            // A position past the last finite key holds no finite key: its lowest is infinity.
            if calendar == CalendarKey::Date && at > finite_days[1] && at < i64::from(i32::MAX) {
                assert_eq!(row.get::<_, String>(2), "infinity", "{context}");
            }
        }
    }
}
