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

/// A run stops before its events pass [`RUN_EVENT_BYTES`], but always takes its first entry:
/// a log of huge reports still folds, one entry a run.
#[test]
fn a_run_ends_before_its_events_pass_their_byte_bound() {
    let big = format!(r#"["{}"]"#, "x".repeat(RUN_EVENT_BYTES / 3));
    let page = || {
        (0..5)
            .map(|i| entry(60_000 + i, "a", &big, r#"{"d":1}"#))
            .collect::<Vec<_>>()
    };
    let run = read_run(page(), None).unwrap();
    assert_eq!((run.entries, run.to.as_str()), (2, "60001-0"));
    let huge = format!(r#"["{}"]"#, "x".repeat(RUN_EVENT_BYTES + 1));
    let run = read_run(
        vec![
            entry(60_000, "a", &huge, "{}"),
            entry(60_001, "a", "[\"y\"]", "{}"),
        ],
        None,
    )
    .unwrap();
    assert_eq!(run.entries, 1, "the first entry is taken whatever its size");
}

/// The events made whole from what `fold_base.lua` read: numbered on from its sequence number,
/// each with its downloader's totals after it and the project's counts, as the pages read them.
#[test]
fn events_are_made_whole_from_the_base() {
    let page = vec![
        entry(60_000, "a", r#"["x","y"]"#, r#"{"d":5}"#),
        entry(60_001, "b", r#"["z"]"#, r#"{"d":9007199254740000}"#),
        entry(60_002, "a", r#"["w"]"#, r#"{"d":2}"#),
    ];
    let run = read_run(page, None).unwrap();
    let base: Base = serde_json::from_str(
        r#"{"seq":"41","todo":7,"out":3,"done":"120","failed":1,"items":["10","0"],"bytes":["1000","0"]}"#,
    )
    .unwrap();
    let events: Vec<app::model::DoneEvent> = run
        .events(&base)
        .iter()
        .map(|e| serde_json::from_str(e).unwrap())
        .collect();
    let figures: Vec<(u64, &str, u64, u64)> = events
        .iter()
        .map(|e| (e.seq, e.downloader.as_str(), e.dl_items, e.dl_bytes))
        .collect();
    assert_eq!(
        figures,
        [
            (42, "a", 12, 1005),
            (43, "b", 1, 9007199254740000),
            (44, "a", 13, 1007)
        ]
    );
    assert!(events
        .iter()
        .all(|e| (e.counts.todo, e.counts.out, e.counts.done, e.counts.failed) == (7, 3, 120, 1)));
}
