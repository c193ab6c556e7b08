//! The fold's runs: their sums, where they end, their round trips.

use super::run::*;

#[test]
fn round_trips_fall_in_the_bucket_of_their_upper_bound() {
    assert_eq!(round_trip_bucket(0), 0);
    assert_eq!(round_trip_bucket(10_000), 0);
    assert_eq!(round_trip_bucket(10_001), 1);
    assert_eq!(round_trip_bucket(3_600_000), 4);
    assert_eq!(round_trip_bucket(259_200_000), 8);
    assert_eq!(round_trip_bucket(u64::MAX), 9);
}

fn entry(t: u64, who: &str, items: &str, bytes: &str) -> (String, Vec<(String, String)>) {
    let f = |k: &str, v: &str| (k.to_string(), v.to_string());
    (
        format!("{t}-0"),
        vec![
            f("t", &t.to_string()),
            f("d", who),
            f("ip", "1.2.3.4"),
            f("ua", "ua"),
            f("v", "v1"),
            f("items", items),
            f("claimed", "[0]"),
            f("bytes", bytes),
            f("id", "null"),
        ],
    )
}

#[test]
fn a_run_sums_per_downloader_and_ends_at_a_new_minute() {
    let page = vec![
        entry(60_000, "a", r#"["x","y"]"#, r#"{"d":5,"e":7}"#),
        entry(60_001, "b", r#"["z"]"#, r#"{"d":1}"#),
        entry(60_002, "a", r#"["w"]"#, r#"{"d":9007199254740000}"#),
        entry(120_000, "a", r#"["v"]"#, r#"{"d":1}"#),
    ];
    let run = read_run(page, Some((0, 0))).unwrap();
    assert_eq!((run.entries, run.items, run.minute), (3, 4, 1));
    assert_eq!(run.to, "60002-0");
    assert_eq!(run.whos.len(), 2);
    assert_eq!(run.whos[0].0, "a");
    assert_eq!(run.whos[0].1.items, 3);
    assert_eq!(run.whos[0].1.bytes, 12 + 9007199254740000);
    assert_eq!(run.whos[0].1.seen, 60_002);
    assert_eq!(run.ips, ["1.2.3.4"]);
    assert_eq!(run.events[2].1, 0);
    assert_eq!(
        (run.events[2].2, run.events[2].3),
        (3, 12 + 9007199254740000)
    );
    let closed = format!("{}}}", run.events[1].0);
    let v: serde_json::Value = serde_json::from_str(&closed).unwrap();
    assert_eq!(v["downloader"], "b");
    assert_eq!(v["items"][0], "z");
    assert_eq!(v["bytes"], 1);
    assert!(read_run(vec![], None).is_none());
}

/// The per-minute done counters are of the entries from `counts_from` on: a done script from
/// before it counted its own entries' when it wrote them.
#[test]
fn a_run_counts_per_minute_only_from_counts_from_on() {
    let page = || {
        vec![
            entry(60_000, "a", r#"["x","y"]"#, r#"{"d":5}"#),
            entry(60_001, "b", r#"["z"]"#, r#"{"d":1}"#),
        ]
    };
    let counted = |from| {
        let run = read_run(page(), from).unwrap();
        assert_eq!((run.entries, run.items), (2, 3));
        (run.done_items, run.bytes)
    };
    assert_eq!(counted(None), (0, 0));
    assert_eq!(counted(Some((60_001, 0))), (1, 1));
    assert_eq!(counted(Some((60_000, 0))), (3, 6));
    assert_eq!(stream_id("60001-7"), Some((60_001, 7)));
    assert_eq!(stream_id("x-1"), None);
}

#[test]
fn the_id_after_an_id() {
    assert_eq!(next_id("5-1"), "5-2");
    assert_eq!(next_id(&format!("5-{}", u64::MAX)), "6-0");
}
