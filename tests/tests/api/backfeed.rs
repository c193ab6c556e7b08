//! `POST /backfeed/legacy/KEY`: de-duplicated queueing of discovered items.

use fred::prelude::*;
use std::{
    io::Write,
    time::{Duration, Instant},
};
use tests::TestApp;

async fn with_backfeed(app: &TestApp) {
    app.project("p", &[]).await;
    app.settings("p", |s| {
        s.backfeed_key = "s3cret".into();
        s.bloom_capacity = 100;
    })
    .await;
}

/// Whether project `p`'s settings changed by `f` fail the checks every save passes.
async fn refused_setting(app: &TestApp, f: impl FnOnce(&mut server::store::Settings)) -> bool {
    let mut s = app
        .store
        .project("p")
        .await
        .unwrap()
        .unwrap()
        .as_ref()
        .clone();
    f(&mut s);
    server::ops::validate_settings(&s).is_err()
}

fn reply(r: &tests::Reply) -> (u64, u64) {
    assert_eq!(r.status, 200, "{}", r.body);
    let v: serde_json::Value = serde_json::from_str(&r.body).unwrap();
    assert_eq!(v["status_code"], 200);
    (
        v["added"].as_u64().unwrap(),
        v["duplicates"].as_u64().unwrap(),
    )
}

#[tokio::test]
async fn records_are_queued_once() {
    let app = TestApp::start().await;
    with_backfeed(&app).await;
    assert_eq!(
        app.post("/backfeed/legacy/p-wrong?delimiter=%00", "a\0")
            .await
            .status,
        403
    );
    assert_eq!(
        app.post("/backfeed/legacy/nope-s3cret", "a\0").await.status,
        403
    );
    let r = app
        .post("/backfeed/legacy/p-s3cret?delimiter=%00", "a\0b\0c\0")
        .await;
    assert_eq!(reply(&r), (3, 0));
    let r = app
        .post("/backfeed/legacy/p-s3cret?delimiter=%00", "a\0b\0d\0")
        .await;
    assert_eq!(reply(&r), (1, 2));
    let r = app
        .post("/backfeed/legacy/p-s3cret?delimiter=%0A", "e\nf\n")
        .await;
    assert_eq!(reply(&r), (2, 0));
    let board = app.store.snapshot("p", -1, 0).await.unwrap().unwrap();
    assert_eq!(board.0.counts.todo, 6);
    app.assert_invariant("p").await;
}

/// Items queued by other means never passed the filter: the exact check must find them in
/// whatever state they are (done, claimed, queued), while empty tables are skipped.
#[tokio::test]
async fn records_new_to_the_filter_but_known_in_any_state_are_duplicates() {
    let app = TestApp::start().await;
    with_backfeed(&app).await;
    app.store
        .add_items("p", "todo", &["a".into(), "b".into(), "c".into()])
        .await
        .unwrap();
    let finished = app.claim("p", "alice").await;
    app.done("p", "alice", &finished, 10).await;
    let held = app.claim("p", "alice").await;
    let queued = ["a", "b", "c"]
        .into_iter()
        .find(|i| *i != finished && *i != held)
        .unwrap();
    let body = format!("{finished}\0{held}\0{queued}\0fresh\0");
    let r = app
        .post("/backfeed/legacy/p-s3cret?delimiter=%00", body)
        .await;
    assert_eq!(reply(&r), (1, 3), "only `fresh` is new");
    let state = |item: &'static str| {
        let app = &app;
        async move { app.store.item_status("p", item).await.unwrap().state }
    };
    assert_eq!(state("fresh").await.as_deref(), Some("todo"));
    let board = app.store.snapshot("p", -1, 0).await.unwrap().unwrap();
    assert_eq!(
        (board.0.counts.todo, board.0.counts.out, board.0.counts.done),
        (2, 1, 1)
    );
    app.assert_invariant("p").await;
}

#[tokio::test]
async fn compressed_bodies_separators_shards_and_skipbloom() {
    let app = TestApp::start().await;
    with_backfeed(&app).await;
    app.settings("p", |s| s.backfeed_shards = vec!["east".into()])
        .await;
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(b"k1\x1fitem-one\0k2\x1fitem-two\0").unwrap();
    let body = gz.finish().unwrap();
    let r = app
        .post_with(
            "/backfeed/legacy/p-s3cret?delimiter=%00&itemseparator=%1F",
            &[("content-encoding", "gzip")],
            body,
        )
        .await;
    assert_eq!(reply(&r), (2, 0));
    assert_eq!(
        app.store
            .item_status("p", "item-one")
            .await
            .unwrap()
            .state
            .as_deref(),
        Some("todo")
    );
    // The filter sees the key, not the item.
    let r = app
        .post(
            "/backfeed/legacy/p-s3cret?itemseparator=%1F",
            "k1\x1fitem-three\0",
        )
        .await;
    assert_eq!(reply(&r), (0, 1));
    let r = app
        .post("/backfeed/legacy/p-s3cret?shard=east", "s1\0")
        .await;
    assert_eq!(reply(&r), (1, 0));
    assert_eq!(
        app.store.item_status("p", "s1").await.unwrap().detail,
        "todo:backfeed:east"
    );
    let r = app
        .post("/backfeed/legacy/p-s3cret?skipbloom=1", "s2\0s2\0")
        .await;
    assert_eq!(
        reply(&r),
        (1, 1),
        "without the filter, known items are still not queued twice"
    );
    // A record that is not UTF-8 is rejected alone: the call answers 200, rejected 1.
    let r = app
        .post("/backfeed/legacy/p-s3cret", vec![0xffu8, 0xfe, 0])
        .await;
    assert_eq!(reply(&r), (0, 0));
    assert!(r.body.contains(r#""rejected":1"#), "{}", r.body);
    assert_eq!(
        app.post_with(
            "/backfeed/legacy/p-s3cret",
            &[("content-encoding", "gzip")],
            "nope"
        )
        .await
        .status,
        400
    );
    // Shard items are claimable.
    let mut claimed = Vec::new();
    for _ in 0..4 {
        claimed.push(app.claim("p", "alice").await);
    }
    assert!(claimed.contains(&"s1".to_string()), "{claimed:?}");
    app.assert_invariant("p").await;
}

#[tokio::test]
async fn the_filter_grows_by_layers_instead_of_degrading() {
    let app = TestApp::start().await;
    with_backfeed(&app).await;
    let body: String = (0..450).map(|i| format!("rec{i}\0")).collect();
    assert_eq!(
        reply(&app.post("/backfeed/legacy/p-s3cret", body.clone()).await),
        (450, 0)
    );
    let layers = app.store.bloom_layers("p").await.unwrap();
    assert!(
        layers.len() >= 3,
        "capacity 100 then 200 then 400: {layers:?}"
    );
    assert!(layers.iter().all(|l| l.count <= l.capacity));
    assert!(server::store::estimated_fp(&layers) <= 1e-6);
    assert_eq!(
        reply(&app.post("/backfeed/legacy/p-s3cret", body).await),
        (0, 450)
    );
}

/// Concurrent backfeeds of overlapping records touch the same filter blocks: the script applies
/// a block only if it is unchanged since it was read, and the tracker decides the others again.
/// Every record is queued once, and every other sighting is counted as a duplicate.
#[tokio::test]
async fn concurrent_overlapping_backfeeds_queue_each_record_once() {
    let app = TestApp::start().await;
    app.project("p", &[]).await;
    app.settings("p", |s| {
        s.backfeed_key = "s3cret".into();
        // Small: the layers fill and grow (100, 200, 400, ...) while the posters race.
        s.bloom_capacity = 100;
    })
    .await;
    // Eight posters, each sending records 0..3000 starting at a different place.
    let posts = (0..8).map(|c| {
        let body: String = (0..3000)
            .map(|i| format!("rec{}\0", (i + c * 375) % 3000))
            .collect();
        app.post("/backfeed/legacy/p-s3cret", body)
    });
    let replies = futures::future::join_all(posts).await;
    let (mut added, mut dups) = (0, 0);
    for r in &replies {
        let (a, d) = reply(r);
        added += a;
        dups += d;
    }
    assert_eq!((added, dups), (3000, 7 * 3000));
    let layers = app.store.bloom_layers("p").await.unwrap();
    assert!(layers.iter().all(|l| l.count <= l.capacity), "{layers:?}");
    assert_eq!(layers.iter().map(|l| l.count).sum::<u64>(), 3000);
    let board = app.store.snapshot("p", -1, 0).await.unwrap().unwrap();
    assert_eq!(board.0.counts.todo, 3000);
    app.assert_invariant("p").await;
}

/// `total` bytes of `pattern` over and over, gzipped as they are written, so the test never
/// holds them.
fn gzip_bomb(pattern: &[u8], total: usize) -> Vec<u8> {
    let chunk = pattern.repeat((1 << 20) / pattern.len());
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    let mut written = 0;
    while written < total {
        gz.write_all(&chunk).unwrap();
        written += chunk.len();
    }
    gz.finish().unwrap()
}

/// One zstd frame of `byte` repeated `blocks` x 128 KiB: raw RLE blocks of 4 bytes each, made
/// by hand (RFC 8878: magic, a descriptor with no options, a 128 KiB window, block headers).
fn zstd_bomb(byte: u8, blocks: usize) -> Vec<u8> {
    let mut frame = vec![0x28, 0xb5, 0x2f, 0xfd, 0x00, 7 << 3];
    for i in 0..blocks {
        let header = u32::from(i + 1 == blocks) | (1 << 1) | ((128 * 1024) << 3);
        frame.extend_from_slice(&header.to_le_bytes()[..3]);
        frame.push(byte);
    }
    frame
}

/// Posts `body` with `encoding`; the reply and how long the server took.
async fn post_encoded(app: &TestApp, encoding: &str, body: Vec<u8>) -> (tests::Reply, Duration) {
    let started = Instant::now();
    let r = app
        .post_with(
            "/backfeed/legacy/p-s3cret?delimiter=%00",
            &[("content-encoding", encoding)],
            body,
        )
        .await;
    (r, started.elapsed())
}

/// Nothing of a refused call is left: no item queued, no record in the filter.
async fn assert_nothing_queued(app: &TestApp) {
    assert_eq!(app.counts("p").await.todo, 0);
    let layers = app.store.bloom_layers("p").await.unwrap();
    assert_eq!(layers.iter().map(|l| l.count).sum::<u64>(), 0, "{layers:?}");
}

/// A GiB of records compressed to about a MiB (gzip), and a GiB in 32 KiB (zstd RLE blocks):
/// each is refused with 413 by the ratio cap after a few MiB of output, fast, and queues nothing.
#[tokio::test]
async fn compression_bombs_are_refused_fast_and_queue_nothing() {
    let app = TestApp::start().await;
    with_backfeed(&app).await;
    let gzip = gzip_bomb(b"bomb-item\0", 1 << 30);
    assert!(gzip.len() < 4 << 20, "{} bytes", gzip.len());
    let zstd = zstd_bomb(b'x', 8192);
    assert_eq!(zstd.len(), 6 + 4 * 8192);
    for (encoding, bomb) in [("gzip", gzip), ("zstd", zstd)] {
        let (r, took) = post_encoded(&app, encoding, bomb).await;
        assert_eq!(r.status, 413, "{encoding}: {}", r.body);
        assert!(
            r.body.contains("more than 100 times its compressed size"),
            "{encoding}: {}",
            r.body
        );
        assert!(took < Duration::from_secs(5), "{encoding}: {took:?}");
        assert_nothing_queued(&app).await;
    }
    // The tracker is fine after: a small compressed body goes through.
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(b"after\0").unwrap();
    let (r, _) = post_encoded(&app, "gzip", gz.finish().unwrap()).await;
    assert_eq!(reply(&r), (1, 0));
    app.assert_invariant("p").await;
}

/// With the ratio cap out of the way, the output cap alone stops a bomb: 413 as soon as the
/// output passes it, and nothing queued; a zstd frame asking for a window over 8 MiB is refused
/// before anything is decoded.
#[tokio::test]
async fn the_decompressed_size_is_capped_whatever_the_ratio() {
    let app = TestApp::start_with(|app| {
        app.limits.backfeed_ratio = 1_000_000;
        app.limits.backfeed_decoded = 4 << 20;
    })
    .await;
    with_backfeed(&app).await;
    for (encoding, bomb) in [
        ("gzip", gzip_bomb(b"bomb-item\0", 64 << 20)),
        ("zstd", zstd_bomb(b'x', 8192)),
    ] {
        let (r, took) = post_encoded(&app, encoding, bomb).await;
        assert_eq!(r.status, 413, "{encoding}: {}", r.body);
        assert!(
            r.body.contains("decompresses to more than 4194304 bytes"),
            "{encoding}: {}",
            r.body
        );
        assert!(took < Duration::from_secs(5), "{encoding}: {took:?}");
    }
    let mut wide = zstd_bomb(b'x', 1);
    wide[5] = 20 << 3; // a 1 GiB window
    let (r, _) = post_encoded(&app, "zstd", wide).await;
    assert_eq!(r.status, 413, "{}", r.body);
    assert!(r.body.contains("zstd window"), "{}", r.body);
    assert_nothing_queued(&app).await;
    app.assert_invariant("p").await;
}

/// 100,001 records are refused whole (413, nothing queued), plain or compressed; 100,000 go.
#[tokio::test]
async fn at_most_100_000_records_per_call() {
    let app = TestApp::start().await;
    app.project("p", &[]).await;
    app.settings("p", |s| {
        s.backfeed_key = "s3cret".into();
        s.bloom_capacity = 200_000;
    })
    .await;
    let records = |n: usize| -> String { (0..n).map(|i| format!("rec{i}\0")).collect() };
    let r = app
        .post("/backfeed/legacy/p-s3cret?delimiter=%00", records(100_001))
        .await;
    assert_eq!(r.status, 413, "{}", r.body);
    assert!(r.body.contains("At most 100000 records"), "{}", r.body);
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(records(100_001).as_bytes()).unwrap();
    let (r, _) = post_encoded(&app, "gzip", gz.finish().unwrap()).await;
    assert_eq!(r.status, 413, "{}", r.body);
    assert_nothing_queued(&app).await;
    let r = app
        .post("/backfeed/legacy/p-s3cret?delimiter=%00", records(100_000))
        .await;
    assert_eq!(reply(&r), (100_000, 0));
    assert_eq!(app.counts("p").await.todo, 100_000);
    app.assert_invariant("p").await;
}

/// Shards are made when first named, as the grab scripts name them (urls-grab's daily
/// `periodic<YEAR><DAY-OF-YEAR>`, `onetime`, telegram-grab's `telegram`, youtube-grab's
/// `error_age_restricted`): a name of 1-64 of `[A-Za-z0-9_.:-]`, up to 256 shard queues per
/// project; a bad name or one past the cap is 400 with the reason, and queues nothing.
#[tokio::test]
async fn shards_are_made_when_first_named_up_to_a_cap() {
    let app = TestApp::start().await;
    with_backfeed(&app).await;
    let post = |shard: String| {
        let app = &app;
        async move {
            app.post(&format!("/backfeed/legacy/p-s3cret?shard={shard}"), "s1\0")
                .await
        }
    };
    for (shard, says) in [("..%2Fx", "shard name"), ("a%20b", "shard name")] {
        let r = post(shard.into()).await;
        assert_eq!(r.status, 400, "{shard}: {}", r.body);
        assert!(r.body.contains(says), "{shard}: {}", r.body);
    }
    assert_nothing_queued(&app).await;
    assert_eq!(reply(&post("periodic2026123".into()).await), (1, 0));
    assert_eq!(
        app.store.item_status("p", "s1").await.unwrap().detail,
        "todo:backfeed:periodic2026123"
    );
    for shard in ["onetime", "telegram", "error_age_restricted"] {
        let r = app
            .post(
                &format!("/backfeed/legacy/p-s3cret?shard={shard}&delimiter=%00"),
                format!("{shard}-item\0"),
            )
            .await;
        assert_eq!(reply(&r), (1, 0), "{shard}");
    }
    let meta = server::keys::Keys::new(&app.namespace).project("p").meta();
    let queues: String = app.store.client().hget(&meta, "queues").await.unwrap();
    assert!(queues.contains("todo:backfeed:periodic2026123"), "{queues}");
    // Up to the cap: a flood of new names from one caller stops there, and queues nothing more.
    let cap = server::api::backfeed::MAX_SHARDS;
    let mut refused = 0;
    for i in 0..cap + 10 {
        let r = app
            .post(
                &format!("/backfeed/legacy/p-s3cret?shard=flood{i}"),
                format!("flood-{i}\0"),
            )
            .await;
        match r.status {
            200 => {}
            400 => {
                assert!(
                    r.body.contains("shards holding items already"),
                    "{}",
                    r.body
                );
                refused += 1;
            }
            other => panic!("{other}: {}", r.body),
        }
    }
    let shards = app.store.backfeed_shards("p").await.unwrap();
    assert_eq!(shards.len(), cap, "{shards:?}");
    assert_eq!(
        refused, 14,
        "4 shards were there; the rest past the cap refused"
    );
    assert_eq!(app.counts("p").await.todo, (1 + 3 + cap - 4) as u64);
    // Declared shards are in the claim order before any item reaches them, and a declared
    // shard is always accepted, whatever the cap.
    app.settings("p", |s| s.backfeed_shards = vec!["north".into()])
        .await;
    let queues: String = app.store.client().hget(&meta, "queues").await.unwrap();
    assert!(queues.contains("todo:backfeed:north"), "{queues}");
    assert!(refused_setting(&app, |s| s.backfeed_shards = vec!["a/b".into()]).await);
    // Drained shards make room: a new name past the cap retires the empty ones (urls-grab
    // names one a day), but never a declared one or one that holds items.
    let cleared = app.store.clear_queue("p", "todo:backfeed", false).await;
    assert_eq!(cleared.unwrap(), (1 + 3 + cap - 4) as u64);
    let r = app
        .post("/backfeed/legacy/p-s3cret?shard=busy", "busy-1\0")
        .await;
    assert_eq!(reply(&r), (1, 0));
    let r = app
        .post("/backfeed/legacy/p-s3cret?shard=periodic2026124", "day-2\0")
        .await;
    assert_eq!(
        reply(&r),
        (1, 0),
        "a new day's shard once the old ones are drained"
    );
    let mut shards = app.store.backfeed_shards("p").await.unwrap();
    shards.sort();
    assert_eq!(shards, ["busy", "north", "periodic2026124"]);
    let retired = app.store.retire_empty_shards("p", &["north".into()]).await;
    assert_eq!(retired.unwrap(), Vec::<String>::new(), "both hold an item");
    assert_eq!(app.counts("p").await.todo, 2);
    app.assert_invariant("p").await;
}

/// A project may narrow the shard names calls make (`shard_pattern`, matched whole): urls-grab's
/// `periodic<YEAR><DAY>` and `onetime` pass, a typo does not, and declared shards always do.
#[tokio::test]
async fn a_shard_pattern_admits_only_the_names_it_matches() {
    let app = TestApp::start().await;
    with_backfeed(&app).await;
    app.settings("p", |s| {
        s.shard_pattern = r"periodic\d{7}|onetime".into();
        s.backfeed_shards = vec!["telegram".into()];
    })
    .await;
    for (i, (shard, status)) in [
        ("periodic2026330", 200),
        ("onetime", 200),
        ("telegram", 200),
        ("periodic2026330x", 400),
        ("xonetime", 400),
        ("error_age_restricted", 400),
    ]
    .into_iter()
    .enumerate()
    {
        let r = app
            .post(
                &format!("/backfeed/legacy/p-s3cret?shard={shard}"),
                format!("i{i}\0"),
            )
            .await;
        assert_eq!(r.status, status, "{shard}: {}", r.body);
        if status == 400 {
            assert!(r.body.contains("matching"), "{}", r.body);
        }
    }
    assert_eq!(
        app.counts("p").await.todo,
        3,
        "the refused ones queued nothing"
    );
    assert!(refused_setting(&app, |s| s.shard_pattern = "(unclosed".into()).await);
    assert!(refused_setting(&app, |s| s.shard_pattern = "a".repeat(300)).await);
}

/// A project saved before `backfeed_shards` existed has no such field: the shards its claim
/// order holds (made by earlier calls) stay accepted.
#[tokio::test]
async fn shards_in_use_before_declarations_stay_accepted() {
    let app = TestApp::start().await;
    with_backfeed(&app).await;
    let record = server::store::BackfeedRecord {
        hash: 1,
        part: String::new(),
        item: "old-1".into(),
    };
    app.store
        .backfeed("p", "todo:backfeed:old", false, 100, &[record], 0)
        .await
        .unwrap();
    let meta = server::keys::Keys::new(&app.namespace).project("p").meta();
    let _: i64 = app
        .store
        .client()
        .hdel(&meta, "backfeed_shards")
        .await
        .unwrap();
    let r = app
        .post("/backfeed/legacy/p-s3cret?shard=old", "old-2\0")
        .await;
    assert_eq!(reply(&r), (1, 0));
    assert_eq!(
        app.store
            .project("p")
            .await
            .unwrap()
            .unwrap()
            .backfeed_shards,
        ["old"]
    );
    app.assert_invariant("p").await;
}

/// urls-grab's batches as it sends them: NUL-delimited records with a trailing NUL, `url\x1f`
/// `url\x1f` context; among 300 good ones, a 5 KiB URL found on a page and a record that is not
/// UTF-8. They are rejected one by one, the 300 are queued, and `status_code` stays 200, which
/// the script checks before it lets its item go on.
#[tokio::test]
async fn one_odd_record_is_rejected_alone_and_the_rest_of_the_batch_queued() {
    let app = TestApp::start().await;
    with_backfeed(&app).await;
    let mut body = Vec::new();
    for i in 0..300 {
        let url = format!("https://example.org/page/{i}");
        body.extend_from_slice(
            format!("{url}\x1f{url}\x1fparent=https%3A%2F%2Fexample.org%2F\0").as_bytes(),
        );
        if i == 100 {
            let long = format!("https://example.org/{}", "x".repeat(5 * 1024));
            body.extend_from_slice(format!("{long}\x1f{long}\0").as_bytes());
        }
        if i == 200 {
            body.extend_from_slice(b"https://example.org/\xff\xfe\x1fbad\0");
        }
    }
    let r = app
        .post(
            "/backfeed/legacy/p-s3cret?delimiter=%00&itemseparator=%1F&shard=",
            body,
        )
        .await;
    assert_eq!(reply(&r), (300, 0), "{}", r.body);
    let v: serde_json::Value = serde_json::from_str(&r.body).unwrap();
    assert_eq!(v["rejected"], 2, "{v}");
    assert!(
        v["rejected_reason"].as_str().unwrap().contains("bytes"),
        "{v}"
    );
    assert_eq!(app.counts("p").await.todo, 300);
    app.assert_invariant("p").await;
}

/// `urls` is fed by five grab scripts, each with its own secret: a project takes several keys
/// (`backfeed_key=k1,k2`), each working alone, and one revoked stops working alone. A sink (a
/// project this tracker does not host, or one key) answers as taken and queues nothing.
#[tokio::test]
async fn a_project_fed_under_several_keys_and_sinks_that_drop_what_they_get() {
    let app = TestApp::start_with(|c| {
        c.limits.backfeed_sinks = vec!["telegram".into(), "p-sunk1".into()];
    })
    .await;
    with_backfeed(&app).await;
    app.settings("p", |s| s.backfeed_key = "urlsgrab1,redditgrab2".into())
        .await;
    for (key, item) in [("urlsgrab1", "u1"), ("redditgrab2", "r1")] {
        let r = app
            .post(&format!("/backfeed/legacy/p-{key}"), format!("{item}\0"))
            .await;
        assert_eq!(reply(&r), (1, 0), "{key}");
    }
    // One revoked: it alone stops working.
    app.settings("p", |s| s.backfeed_key = "urlsgrab1".into())
        .await;
    let r = app.post("/backfeed/legacy/p-redditgrab2", "r2\0").await;
    assert_eq!(r.status, 403, "{}", r.body);
    assert_eq!(
        reply(&app.post("/backfeed/legacy/p-urlsgrab1", "u2\0").await),
        (1, 0)
    );
    assert!(refused_setting(&app, |s| s.backfeed_key = "a,,b".into()).await);
    // Sinks: a slug this tracker does not host, and one key of a project it does.
    let before = app.counts("p").await.todo;
    for key in ["telegram-x2kj4uadm0lrniv", "p-sunk1"] {
        let r = app
            .post(
                &format!("/backfeed/legacy/{key}?shard=telegram"),
                "t1\0t2\0",
            )
            .await;
        assert_eq!(reply(&r), (0, 0), "{key}");
        assert!(r.body.contains(r#""sink":true"#), "{}", r.body);
    }
    assert_eq!(app.counts("p").await.todo, before, "nothing queued");
    app.assert_invariant("p").await;
}
