//! `POST /backfeed/legacy/KEY`: de-duplicated queueing of discovered items.

use fred::prelude::*;
use std::{
    io::Write,
    time::{Duration, Instant},
};
use tests::TestApp;

mod bodies;
mod shards;

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
        .projects()
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

/// Nothing of a refused call is left: no item queued, no record in the filter.
async fn assert_nothing_queued(app: &TestApp) {
    assert_eq!(app.counts("p").await.todo, 0);
    let layers = app.store.queue().bloom_layers("p").await.unwrap();
    assert_eq!(layers.iter().map(|l| l.count).sum::<u64>(), 0, "{layers:?}");
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
    let board = app
        .store
        .figures()
        .snapshot("p", -1, 0)
        .await
        .unwrap()
        .unwrap();
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
        .queue()
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
        async move {
            app.store
                .queue()
                .item_status("p", item)
                .await
                .unwrap()
                .state
        }
    };
    assert_eq!(state("fresh").await.as_deref(), Some("todo"));
    let board = app
        .store
        .figures()
        .snapshot("p", -1, 0)
        .await
        .unwrap()
        .unwrap();
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
            .queue()
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
        app.store
            .queue()
            .item_status("p", "s1")
            .await
            .unwrap()
            .detail,
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
    let layers = app.store.queue().bloom_layers("p").await.unwrap();
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
    let layers = app.store.queue().bloom_layers("p").await.unwrap();
    assert!(layers.iter().all(|l| l.count <= l.capacity), "{layers:?}");
    assert_eq!(layers.iter().map(|l| l.count).sum::<u64>(), 3000);
    let board = app
        .store
        .figures()
        .snapshot("p", -1, 0)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(board.0.counts.todo, 3000);
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
