//! Backfeed shards: made when first named, up to a cap; a shard pattern; shards in use before
//! they were declared.

use super::*;

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
        app.store
            .queue()
            .item_status("p", "s1")
            .await
            .unwrap()
            .detail,
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
    let shards = app.store.projects().backfeed_shards("p").await.unwrap();
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
    let cleared = app
        .store
        .queue()
        .clear_queue("p", "todo:backfeed", false)
        .await;
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
    let mut shards = app.store.projects().backfeed_shards("p").await.unwrap();
    shards.sort();
    assert_eq!(shards, ["busy", "north", "periodic2026124"]);
    let retired = app
        .store
        .projects()
        .retire_empty_shards("p", &["north".into()])
        .await;
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
        .queue()
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
            .projects()
            .project("p")
            .await
            .unwrap()
            .unwrap()
            .backfeed_shards,
        ["old"]
    );
    app.assert_invariant("p").await;
}
