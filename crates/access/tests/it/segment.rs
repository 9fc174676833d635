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
