//! Segments in an object store (`TRACKER_STORAGE=s3://...`, a real S3-speaking server): an
//! install's segments moved into a bucket and back with `tracker storage copy` (resumable,
//! checked), read by the command line from the bucket alone; and an object server that stops
//! while the offloader works loses and duplicates nothing.

use super::{complete_all, offloader, project, settle};
use tests::{s3::S3, TestApp};

#[tokio::test]
async fn tracker_storage_copy_moves_an_installs_segments_into_a_bucket_and_back() {
    let app = TestApp::start_local().await;
    project(&app, "moved", 3000, |s| {
        s.done_policy = "offload".into();
        s.offload_keep = 1000;
        s.segment_items = 1000;
    })
    .await;
    assert_eq!(complete_all(&app, "moved").await, 3000);
    settle(&offloader(&app), "moved").await;
    let local = app.segment_objects("moved").await;
    assert_eq!(local.len(), 2, "{local:?}");

    let s3 = S3::start(&app.dir);
    let bucket = s3.storage_url("moved-install");
    let here = format!("file://{}", app.dir.join("offload").display());
    let copy = app.cli(&["storage", "copy", "--from", &here, "--to", &bucket], b"");
    assert!(copy.ok, "{} {}", copy.out, copy.err);
    assert!(copy.out.starts_with("2 objects ("), "{}", copy.out);
    assert!(copy.out.contains("copied, 0 already there"), "{}", copy.out);
    // Run again (as after a copy stopped half-way): nothing is written twice.
    let again = app.cli(&["storage", "copy", "--from", &here, "--to", &bucket], b"");
    assert!(again.ok, "{} {}", again.out, again.err);
    assert!(
        again
            .out
            .starts_with("0 objects (0 bytes) copied, 2 already there"),
        "{}",
        again.out
    );

    // The command line reads the bucket alone: the local files gone, the check is clean and
    // an item on disk is found there.
    std::fs::rename(app.dir.join("offload"), app.dir.join("offload-moved")).unwrap();
    let env = [("TRACKER_STORAGE", bucket.as_str())];
    let check = app.cli_with(&["check", "moved"], &env, b"");
    assert!(
        check.ok,
        "tracker check on the bucket: {} {}",
        check.out, check.err
    );
    let unread = app.cli(&["check", "moved"], b"");
    assert!(
        !unread.ok,
        "without the bucket the segments are missing: {}",
        unread.out
    );

    // And back into an empty directory, the same to the byte.
    let back = app.dir.join("offload-back");
    let there = format!("file://{}", back.display());
    let home = app.cli(&["storage", "copy", "--from", &bucket, "--to", &there], b"");
    assert!(home.ok, "{} {}", home.out, home.err);
    for key in &local {
        assert_eq!(
            std::fs::read(back.join(key)).unwrap(),
            std::fs::read(app.dir.join("offload-moved").join(key)).unwrap(),
            "{key}"
        );
    }
    let env = [("TRACKER_STORAGE", there.as_str())];
    let check = app.cli_with(&["check", "moved"], &env, b"");
    assert!(
        check.ok,
        "tracker check after the way back: {} {}",
        check.out, check.err
    );

    // A storage that is neither is refused with its reason.
    let bad = app.cli(
        &["storage", "copy", "--from", "ftp://x", "--to", &there],
        b"",
    );
    assert!(
        !bad.ok && bad.err.contains("file://DIR or s3://BUCKET/PREFIX"),
        "{}",
        bad.err
    );
}

#[tokio::test]
async fn an_object_store_that_stops_loses_and_duplicates_nothing() {
    let dir = std::env::temp_dir().join(tests::random_name("tracker-s3-"));
    let mut s3 = S3::start(&dir);
    let url = s3.storage_url("stops");
    let app = TestApp::start_with(|c| c.storage = Some(url.clone())).await;
    project(&app, "gone", 3000, |s| {
        s.done_policy = "offload".into();
        s.offload_keep = 1000;
        s.segment_items = 1000;
    })
    .await;
    assert_eq!(complete_all(&app, "gone").await, 3000);

    // The object server stops before the offloader's first segment: the offload fails, and
    // every done item stays in Redis, counted once.
    s3.kill();
    let o = offloader(&app);
    assert!(o.lease("gone").await.unwrap());
    assert!(
        o.tick("gone", false).await.is_err(),
        "a write to a stopped server fails"
    );
    let m = app
        .send(
            app.http
                .get(app.url("/metrics"))
                .bearer_auth(tests::ADMIN_TOKEN),
        )
        .await;
    let failed = m
        .body
        .lines()
        .find_map(|l| l.strip_prefix("tracker_storage_errors_total "))
        .and_then(|n| n.parse::<u64>().ok());
    assert!(failed.is_some_and(|n| n >= 1), "{}", m.body);
    assert!(
        m.body.contains("tracker_storage_call_seconds_total "),
        "{}",
        m.body
    );
    app.assert_invariant("gone").await;
    assert_eq!(app.counts("gone").await.done, 3000);
    assert!(app
        .store
        .offload()
        .segment_entries("gone")
        .await
        .unwrap()
        .is_empty());

    // Back: the offloader finishes, and every item is where the check finds it.
    s3.restart();
    settle(&o, "gone").await;
    let state = app.store.offload().offload_summary("gone").await.unwrap();
    assert_eq!((state.done_on_disk, state.segments), (2000, 2));
    assert_eq!(app.segment_objects("gone").await.len(), 2);
    assert_eq!(app.counts("gone").await.done, 3000);
    app.assert_invariant("gone").await;
    let check = app.cli(&["check", "gone"], b"");
    assert!(check.ok, "tracker check: {} {}", check.out, check.err);

    // Stopped again while items on disk are asked for: an error, never a wrong answer.
    s3.kill();
    let k = app.store.keys().project("gone");
    let in_redis: Vec<String> = {
        use fred::prelude::*;
        app.store.client().smembers(k.done()).await.unwrap()
    };
    let on_disk = (0..3000)
        .map(|i| format!("gone-{i:05}"))
        .find(|i| !in_redis.contains(i))
        .unwrap();
    let r = app.get(&format!("/gone/items/{on_disk}.json")).await;
    assert_eq!(r.status, 503, "{}", r.body);
    assert!(
        r.body.contains("cannot read its offloaded items"),
        "{}",
        r.body
    );
    // A sweep whose listing fails deletes nothing; nor does the purge of a destroyed project,
    // whose mark stays for the next sweep.
    assert_eq!(o.sweep("gone").await.unwrap(), 0);
    s3.restart();
    let r = app.get(&format!("/gone/items/{on_disk}.json")).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(r.body.contains("\"done\""), "{}", r.body);
    assert_eq!(
        app.segment_objects("gone").await.len(),
        2,
        "the sweep kept them"
    );
    let (_, mark) = app.store.queue().destroy_project("gone").await.unwrap();
    s3.kill();
    assert!(
        o.sweep_destroyed().await.is_err(),
        "a purge that cannot list fails"
    );
    assert_eq!(
        app.store.queue().destroyed_mark("gone").await.unwrap(),
        Some(mark),
        "its mark stays"
    );
    s3.restart();
    o.sweep_destroyed().await.unwrap();
    assert!(app
        .store
        .queue()
        .destroyed_mark("gone")
        .await
        .unwrap()
        .is_none());
    assert!(
        app.segment_objects("gone").await.is_empty(),
        "its segments are gone"
    );
    drop(app);
    let _ = std::fs::remove_dir_all(dir);
}
