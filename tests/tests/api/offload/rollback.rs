//! A Redis rolled back (a failover, a restore, a restart without its last second of writes)
//! loses an offload's latest commit: the segments of the lost commit are never served, and a
//! done retried across the rollback is answered for what Redis holds then, never 404.

use super::{claim, offloader, project, report, settle};
use server::store::{DoneOutcome, Refusal};
use std::time::Duration;
use tests::{
    fault_proxy::{behind_proxy, Fault},
    TestApp,
};

/// A project `slug` of `n` items whose done items are all offloaded, 1000 to a segment.
async fn offloading(app: &TestApp, slug: &str, n: usize) {
    project(app, slug, n, |s| {
        s.done_policy = "offload".into();
        s.offload_keep = 0;
        s.segment_items = 1000;
        s.fifo = true;
    })
    .await;
}

/// A Redis rolled back (a failover or a restore that lost the latest commit) hands out a
/// registry gen again only if gens can repeat: a process that cached what was on disk by gen
/// must see the registry as it is after the next commit, not the segments of the lost one.
#[tokio::test]
async fn a_registry_rolled_back_never_serves_the_lost_segments() {
    use fred::prelude::*;
    let app = TestApp::start().await;
    offloading(&app, "rb", 3000).await;
    let o = offloader(&app);
    let finish = |n: usize| {
        let app = &app;
        async move {
            let items = claim(app, "rb", n).await;
            assert_eq!(items.len(), n);
            app.store
                .queue()
                .done("rb", &report(items), server::store::now_ms())
                .await
                .unwrap();
        }
    };
    finish(1000).await;
    settle(&o, "rb").await;
    let snapshot = app.dump_project("rb").await;
    finish(1000).await;
    settle(&o, "rb").await;
    // This process now holds the segments of the commit the rollback loses.
    let lost = app.store.offload().on_disk("rb").await.unwrap();
    assert_eq!(lost.segments.len(), 2);
    app.roll_back("rb", &snapshot).await;
    // The same work done again: a new commit.
    finish(1000).await;
    settle(&o, "rb").await;
    let registered: Vec<String> = app
        .store
        .client()
        .hkeys(app.store.keys().project("rb").segs())
        .await
        .unwrap();
    let mut seen: Vec<String> = app
        .store
        .offload()
        .on_disk("rb")
        .await
        .unwrap()
        .segments
        .iter()
        .map(|s| s.id.clone())
        .collect();
    let mut registered = registered;
    registered.sort();
    seen.sort();
    assert_eq!(seen, registered, "the segments as registered now");
    app.assert_invariant("rb").await;
}

/// A project `slug` of 1000 items, all claimed and done in one report (counted once), then
/// offloaded: its items, and a snapshot of its keys from before the offload (Redis as a
/// restart that lost the offload's commit has it).
async fn done_then_offloaded(app: &TestApp, slug: &str) -> (Vec<String>, tests::Snapshot) {
    offloading(app, slug, 1000).await;
    let items = claim(app, slug, 1000).await;
    assert_eq!(items.len(), 1000);
    let first = app
        .store
        .queue()
        .done(slug, &report(items.clone()), server::store::now_ms())
        .await
        .unwrap();
    assert!(
        matches!(first, DoneOutcome::Recorded { counted: 1000, .. }),
        "{first:?}"
    );
    let snapshot = app.dump_project(slug).await;
    settle(&offloader(app), slug).await;
    (items, snapshot)
}

/// Runs `call` on a store whose second Redis call (the first after the script that found the
/// item unknown: the first of the lookup on disk) is held while `slug` is rolled back to
/// `snapshot`; its answer, and the names of the calls it made.
async fn across_rollback<T, F>(
    app: &TestApp,
    slug: &str,
    snapshot: &tests::Snapshot,
    call: impl FnOnce(server::store::Store) -> F,
) -> (T, Vec<String>)
where
    F: std::future::Future<Output = T> + Send + 'static,
    T: Send + 'static,
{
    let (proxy, store) = behind_proxy(app, 1).await;
    proxy.fault_at(2, Fault::Held);
    let answer = tokio::spawn(call(store));
    proxy.held(Duration::from_secs(10)).await;
    let first = proxy.seen()[0].clone();
    assert!(
        first.starts_with("EVALSHA") || first.starts_with("FCALL"),
        "a script ran first: {:?}",
        proxy.seen()
    );
    app.roll_back(slug, snapshot).await;
    proxy.release();
    (answer.await.unwrap(), proxy.seen())
}

/// A done retried after its items were offloaded is refused as unknown by the done script;
/// if Redis then loses the offload's commit (a restart without its last second of writes)
/// before the items are looked up on disk, they are on neither side of that lookup: they are
/// done in Redis again. The retry must be answered as the duplicate it is, not 404 (seen in
/// the chaos proof with a bucket: a warrior retrying 20 items was told "Unknown item" for
/// items done and credited).
#[tokio::test]
async fn a_done_retried_across_a_rolled_back_offload_is_a_duplicate_not_unknown() {
    let app = TestApp::start_private().await;
    let (items, snapshot) = done_then_offloaded(&app, "rd").await;
    let done_in_redis = app.counts("rd").await.done;
    let retried = report(items[..20].to_vec());
    let (out, calls) = across_rollback(&app, "rd", &snapshot, |store| async move {
        store
            .queue()
            .done_batch("rd", &[retried], server::store::now_ms())
            .await
    })
    .await;
    let out = out.unwrap();
    assert!(
        !matches!(
            out.as_slice(),
            [DoneOutcome::Refused(Refusal::UnknownItem { .. })]
        ),
        "a done item refused as unknown: {out:?} (calls {calls:?})"
    );
    assert!(
        matches!(
            out.as_slice(),
            [DoneOutcome::Recorded {
                counted: 0,
                duplicates: 20
            }]
        ),
        "{out:?}"
    );
    // Counted once, in Redis again, and the project whole.
    assert_eq!(app.counts("rd").await.done, done_in_redis);
    app.assert_invariant("rd").await;
}

/// The same race for an item's status (`GET /SLUG/items/ITEM.json`, the panel's and the CLI's
/// item lookup): Redis says unknown, the offload's commit is lost before the lookup on disk,
/// and the item, done in Redis again, must not be answered as unknown.
#[tokio::test]
async fn an_items_status_asked_across_a_rolled_back_offload_is_done_not_unknown() {
    let app = TestApp::start_private().await;
    let (items, snapshot) = done_then_offloaded(&app, "rs").await;
    let on_disk = app
        .store
        .queue()
        .item_status("rs", &items[0])
        .await
        .unwrap();
    assert!(on_disk.detail.starts_with("on disk"), "{on_disk:?}");
    let item = items[0].clone();
    let (status, calls) = across_rollback(&app, "rs", &snapshot, |store| async move {
        store.queue().item_status("rs", &item).await
    })
    .await;
    let status = status.unwrap();
    assert_eq!(
        status.state.as_deref(),
        Some("done"),
        "{status:?} (calls {calls:?})"
    );
    assert!(
        !status.detail.starts_with("on disk"),
        "in Redis: {status:?}"
    );
}
