//! `POST /backfeed/legacy/KEY`: de-duplicated queueing of discovered items.

use std::io::Write;
use tests::TestApp;

async fn with_backfeed(app: &TestApp) {
    app.project("p", &[]).await;
    app.settings("p", |s| {
        s.backfeed_key = "s3cret".into();
        s.bloom_capacity = 100;
    })
    .await;
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
    assert_eq!(
        app.post("/backfeed/legacy/p-s3cret", vec![0xffu8, 0xfe, 0])
            .await
            .status,
        400
    );
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
