//! Unit tests of the shared types.

use super::*;

fn ev(seq: u64, who: &str, n: usize) -> DoneEvent {
    DoneEvent {
        seq,
        time: 0,
        downloader: who.into(),
        items: (0..n).map(|i| format!("i{seq}-{i}")).collect(),
        bytes: 10,
        domain_bytes: [("data".to_string(), 10)].into(),
        version: String::new(),
        user_agent: String::new(),
        counts: Counts {
            todo: 1,
            out: 2,
            done: seq,
            failed: 0,
        },
        dl_items: 0,
        dl_bytes: 0,
        n: 0,
    }
}

fn board() -> Leaderboard {
    Leaderboard {
        slug: "p".into(),
        title: "P".into(),
        ..Leaderboard::default()
    }
}

#[test]
fn apply_skips_events_already_included() {
    let mut b = board();
    assert!(b.apply(&ev(1, "a", 1)));
    assert!(!b.apply(&ev(1, "a", 1)));
    assert_eq!(b.downloaders[0].items, 1);
    assert_eq!(b.total_bytes, 10);
}

#[test]
fn apply_keeps_downloaders_sorted_and_recent_capped() {
    let mut b = board();
    b.apply(&ev(1, "a", 2));
    b.apply(&ev(2, "b", 1));
    b.apply(&ev(3, "b", 2));
    assert_eq!(b.downloaders[0].name, "b");
    assert_eq!(b.downloaders[1].name, "a");
    for s in 4..40 {
        b.apply(&ev(s, "c", 1));
    }
    assert_eq!(b.recent.len(), RECENT_LEN);
    assert_eq!(b.recent[0].seq, 39);
    assert_eq!(b.counts.done, 39);
}

#[test]
fn apply_takes_the_events_totals_and_keeps_only_the_top_rows() {
    let mut b = board();
    b.downloaders = (0..TOP_DOWNLOADERS as u64)
        .map(|i| DownloaderRow {
            name: format!("top{i}"),
            items: 1000 - i,
            ..DownloaderRow::default()
        })
        .collect();
    b.downloader_count = 5000;
    // Someone far below the top rows does one more item: not shown, not a new downloader.
    let mut e = ev(1, "low", 1);
    (e.dl_items, e.dl_bytes) = (7, 70);
    assert!(b.apply(&e));
    assert_eq!(b.downloaders.len(), TOP_DOWNLOADERS);
    assert!(!b.downloaders.iter().any(|d| d.name == "low"));
    assert_eq!(b.downloader_count, 5000);
    // A first completion counts a new downloader.
    let mut e = ev(2, "new", 1);
    (e.dl_items, e.dl_bytes) = (1, 10);
    b.apply(&e);
    assert_eq!(b.downloader_count, 5001);
    // A climber enters with its real total, and the last top row leaves.
    let mut e = ev(3, "low", 1);
    (e.dl_items, e.dl_bytes) = (2000, 9);
    b.apply(&e);
    assert_eq!(
        (b.downloaders[0].name.as_str(), b.downloaders[0].items),
        ("low", 2000)
    );
    assert_eq!(b.downloaders.len(), TOP_DOWNLOADERS);
    assert_eq!(b.downloaders.last().unwrap().name, "top98");
    // A top row takes its total from the event, not its own sum.
    let mut e = ev(4, "top5", 1);
    (e.dl_items, e.dl_bytes) = (996, 1);
    b.apply(&e);
    let row = b.downloaders.iter().find(|d| d.name == "top5").unwrap();
    assert_eq!((row.items, row.bytes), (996, 1));
}

#[test]
fn apply_feeds_rates_and_window_sums_and_a_snapshot_keeps_page_data() {
    let mut b = board();
    b.window = 5;
    let mut e = ev(1, "a", 3);
    e.time = 60_000 * 1000 + 30_000;
    e.version = "v2".into();
    b.apply(&e);
    assert_eq!(b.minutes, vec![MinuteCount(1000, 3, 10)]);
    assert_eq!(b.now, e.time);
    assert!(b.rate(5).items_per_s > 0.0);
    let row = &b.downloaders[0];
    assert_eq!(
        (row.window_items, row.last_seen, row.version.as_str()),
        (3, e.time, "v2")
    );

    b.set_window_sums(60, vec![("a".into(), 9, 9)]);
    assert_eq!(
        b.downloaders[0].window_items, 3,
        "a stale answer for another window"
    );
    b.set_window_sums(5, vec![]);
    assert_eq!(b.downloaders[0].window_items, 0);

    let mut fresh = board();
    fresh.seq = 7;
    fresh.downloaders = vec![DownloaderRow {
        name: "a".into(),
        items: 5,
        ..DownloaderRow::default()
    }];
    b.downloaders[0].window_items = 4;
    b.adopt(fresh);
    assert_eq!(b.seq, 7);
    assert_eq!(b.downloaders[0].window_items, 4);
    assert_eq!(
        b.minutes.len(),
        1,
        "per-minute counts survive a websocket snapshot"
    );
}
