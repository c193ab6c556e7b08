//! `tracker check`: an item in two states, items lost from every state (seen through the count
//! of known items that the scripts adding or dropping items keep), and projects from before
//! that count.

use fred::prelude::*;
use server::store::{
    bloom_hash, now_ms, BackfeedRecord, ClaimOutcome, ClaimRequest, DoneOutcome, DoneReport,
};
use tests::TestApp;

/// `tracker check ARGS...` against `app`'s Redis: whether it exited 0, and what it printed.
fn cli(app: &TestApp, args: &[&str]) -> (bool, String) {
    let run = app.cli(&[&["check"], args].concat(), b"");
    (run.ok, run.out)
}

/// The count of items project `slug` knows (stats `known`), if it is kept.
async fn known(app: &TestApp, slug: &str) -> Option<i64> {
    let stats = app.store.keys().project(slug).stats();
    app.store.client().hget(stats, "known").await.unwrap()
}

/// Panics unless project `slug` knows `n` items and holds its whole invariant.
async fn knows(app: &TestApp, slug: &str, n: i64) {
    assert_eq!(known(app, slug).await, Some(n), "items {slug} knows");
    app.assert_invariant(slug).await;
}

fn items(names: &[&str]) -> Vec<String> {
    names.iter().map(|s| s.to_string()).collect()
}

fn alice() -> ClaimRequest {
    ClaimRequest {
        downloader: "alice".into(),
        n: 1,
        name_ok: true,
        ..Default::default()
    }
}

async fn claim_one(app: &TestApp, now: u64) -> String {
    match app.store.queue().claim("p", &alice(), now).await.unwrap() {
        ClaimOutcome::Items(got, _) => got[0].clone(),
        other => panic!("claim: {other:?}"),
    }
}

#[tokio::test]
async fn check_reports_an_item_in_two_states_and_the_cli_exits_non_zero() {
    let app = TestApp::start().await;
    app.project("p", &["a", "b"]).await;
    assert!(cli(&app, &["p"]).0, "a fresh project holds its invariant");
    let done_key = format!("{}:{{p}}:done", app.namespace);
    let _: () = app.store.client().sadd(&done_key, "a").await.unwrap();
    let problems = app.store.upkeep().check("p").await.unwrap();
    assert!(
        problems.iter().any(|p| p.contains("\"a\" is in 2 places")),
        "{problems:?}"
    );
    assert!(
        problems.iter().any(|p| p.contains("stats.done_items")),
        "{problems:?}"
    );
    assert!(
        !problems.iter().any(|p| p.contains("project knows")),
        "a duplicate is not a loss: each item is counted once {problems:?}"
    );
    let (ok, out) = cli(&app, &["p"]);
    assert!(!ok);
    assert!(out.contains("2 places"), "{out}");
}

#[tokio::test]
async fn check_sees_an_item_deleted_behind_the_trackers_back() {
    let app = TestApp::start().await;
    app.project("p", &["a", "b", "c", "d"]).await;
    let now = now_ms();
    let item = claim_one(&app, now).await;
    let report = DoneReport {
        downloader: "alice".into(),
        bytes: vec![("data".into(), 1)],
        items: vec![item],
        ..Default::default()
    };
    assert!(matches!(
        app.store.queue().done("p", &report, now).await.unwrap(),
        DoneOutcome::Recorded { counted: 1, .. }
    ));
    claim_one(&app, now).await;
    knows(&app, "p", 4).await;

    // An item vanishes from its queue: no place holds it twice, yet it is gone.
    let k = app.store.keys().project("p");
    let client = app.store.client();
    let waiting: Vec<String> = client
        .zrange(k.queue("todo"), 0, 0, None, false, None, false)
        .await
        .unwrap();
    let _: () = client.zrem(k.queue("todo"), &waiting[0]).await.unwrap();
    let problems = app.store.upkeep().check("p").await.unwrap();
    assert_eq!(
        problems,
        ["project knows 4 items but 3 are in a state: 1 lost"]
    );
    let (ok, out) = cli(&app, &["p"]);
    assert!(!ok, "tracker check exits non-zero on a loss: {out}");
    assert!(out.contains("1 lost"), "{out}");

    // The operator accepts the loss: the count starts again from what is there.
    let (ok, out) = cli(&app, &["--recount", "p"]);
    assert!(ok, "{out}");
    assert!(out.contains("item count set to 3"), "{out}");
    assert!(out.contains("(was 4)"), "{out}");
    assert!(
        out.contains("ok: p holds its invariant (checked in "),
        "{out}"
    );

    // And the other way: an item that appears without being added.
    let _: () = client
        .zadd(k.queue("todo"), None, None, false, false, (1.0, "stray"))
        .await
        .unwrap();
    let problems = app.store.upkeep().check("p").await.unwrap();
    assert_eq!(
        problems,
        ["project knows 3 items but 4 are in a state: 1 it never counted"]
    );
}

#[tokio::test]
async fn the_count_follows_every_flow_that_adds_or_drops_items() {
    let app = TestApp::start().await;
    let store = &app.store;
    app.project("p", &["a", "b", "c"]).await;
    app.settings("p", |s| s.max_attempts = 1).await;
    knows(&app, "p", 3).await;

    // Only items really added count: not one known already, nor a dry run.
    assert_eq!(
        store
            .queue()
            .add_items("p", "todo", &items(&["a", "d"]))
            .await
            .unwrap(),
        1
    );
    assert_eq!(
        store
            .queue()
            .count_new_items("p", "todo", &items(&["e"]))
            .await
            .unwrap(),
        1
    );
    assert_eq!(
        store
            .queue()
            .add_items("p", "todo:d:bob", &items(&["pb"]))
            .await
            .unwrap(),
        1
    );
    knows(&app, "p", 5).await;
    let rec = |item: &str| BackfeedRecord {
        hash: bloom_hash(item.as_bytes()),
        part: String::new(),
        item: item.into(),
    };
    let records = [rec("n1"), rec("a"), rec("n1")];
    let now = now_ms();
    assert_eq!(
        store
            .queue()
            .backfeed("p", "todo:backfeed", false, 1000, &records, now)
            .await
            .unwrap(),
        Some((1, 2))
    );
    knows(&app, "p", 6).await;

    // Changes of state leave the count alone: claimed, released, failed (claimed twice with
    // max_attempts 1), done.
    let first = claim_one(&app, now).await;
    assert!(store
        .queue()
        .release("p", &first, "root", "", true, now)
        .await
        .unwrap());
    let second = claim_one(&app, now).await;
    assert_ne!(first, second, "the first failed on its second claim");
    let report = DoneReport {
        downloader: "alice".into(),
        bytes: vec![("data".into(), 1)],
        items: vec![second],
        ..Default::default()
    };
    assert!(matches!(
        store.queue().done("p", &report, now).await.unwrap(),
        DoneOutcome::Recorded { counted: 1, .. }
    ));
    assert_eq!(
        store
            .queue()
            .move_items("p", "todo", "todo:secondary", None, false)
            .await
            .unwrap(),
        2
    );
    assert_eq!(app.counts("p").await.failed, 1);
    knows(&app, "p", 6).await;

    // Dropped items leave it; dry runs do not.
    assert_eq!(
        store
            .queue()
            .resolve_failed("p", None, false, "root", now, true)
            .await
            .unwrap(),
        1
    );
    assert_eq!(
        store
            .queue()
            .clear_queue("p", "todo:backfeed", true)
            .await
            .unwrap(),
        1
    );
    knows(&app, "p", 6).await;
    assert_eq!(
        store
            .queue()
            .resolve_failed("p", None, false, "root", now, false)
            .await
            .unwrap(),
        1
    );
    assert_eq!(
        store
            .queue()
            .clear_queue("p", "todo:backfeed", false)
            .await
            .unwrap(),
        1
    );
    knows(&app, "p", 4).await;

    // A destroyed project takes its count along; made again, it starts from nothing.
    store.queue().destroy_project("p").await.unwrap();
    assert_eq!(known(&app, "p").await, None);
    // Its files deleted (it has none), as the panel's destroy does: the slug is free again.
    let o = server::store::offload::offloader::Offloader::new(
        app.store.clone(),
        app.dir.join("archive"),
    );
    assert_eq!(o.sweep_destroyed().await.unwrap(), 1);
    app.project("p", &["z"]).await;
    knows(&app, "p", 1).await;
}

#[tokio::test]
async fn projects_from_before_the_count_are_recounted_on_request() {
    let app = TestApp::start().await;
    let store = &app.store;
    app.project("p", &["a", "b"]).await;
    // As an older tracker left it: no count of known items.
    let stats = store.keys().project("p").stats();
    let _: () = store.client().hdel(&stats, "known").await.unwrap();
    assert_eq!(
        store
            .queue()
            .add_items("p", "todo", &items(&["c"]))
            .await
            .unwrap(),
        1
    );
    assert_eq!(
        store
            .queue()
            .add_items("p", "todo:d:bob", &items(&["pb"]))
            .await
            .unwrap(),
        1
    );
    assert_eq!(
        known(&app, "p").await,
        None,
        "a delta does not start the count from zero"
    );

    let problems = store.upkeep().check("p").await.unwrap();
    assert_eq!(
        problems,
        ["item count not kept yet (a project from before it was): \
          `tracker check --recount p` starts it from the 4 items in a state now"]
    );
    let (ok, out) = cli(&app, &["p"]);
    assert!(!ok, "not verified is not clean: {out}");

    let (ok, out) = cli(&app, &["--recount", "p"]);
    assert!(ok, "{out}");
    assert!(out.contains("item count set to 4"), "{out}");
    assert!(out.contains("(was not kept)"), "{out}");
    assert_eq!(
        store
            .queue()
            .add_items("p", "todo", &items(&["d"]))
            .await
            .unwrap(),
        1
    );
    knows(&app, "p", 5).await;

    assert_eq!(store.upkeep().recount("nope").await.unwrap(), None);
    assert!(!cli(&app, &["--recount", "nope"]).0);
}

/// The check reads big keys a page at a time while the project serves: items claimed, done and
/// released meanwhile, moving from page to page and state to state, are never reported in two
/// places or lost (what a page finds is looked at again atomically, the counts are read in one
/// atomic step).
#[tokio::test]
async fn the_check_is_clean_while_the_project_serves() {
    let app = TestApp::start().await;
    let names: Vec<String> = (0..60_000).map(|i| format!("item-{i:05}")).collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    app.project("p", &refs).await;
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let moved = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let workers: Vec<_> = (0..4)
        .map(|w| {
            let (store, stop, moved) = (app.store.clone(), stop.clone(), moved.clone());
            tokio::spawn(async move {
                let who = format!("w{w}");
                let request = ClaimRequest {
                    downloader: who.clone(),
                    n: 50,
                    name_ok: true,
                    ..Default::default()
                };
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let ClaimOutcome::Items(got, _) =
                        store.queue().claim("p", &request, now_ms()).await.unwrap()
                    else {
                        break;
                    };
                    // Half done, half given back to the queue.
                    let (done, back) = got.split_at(got.len() / 2);
                    let report = DoneReport {
                        downloader: who.clone(),
                        bytes: vec![("data".into(), 1)],
                        items: done.to_vec(),
                        ..Default::default()
                    };
                    store.queue().done("p", &report, now_ms()).await.unwrap();
                    for item in back {
                        store
                            .queue()
                            .release("p", item, &who, "", false, now_ms())
                            .await
                            .unwrap();
                    }
                    moved.fetch_add(got.len() as u64, std::sync::atomic::Ordering::Relaxed);
                }
            })
        })
        .collect();
    for _ in 0..3 {
        let before = moved.load(std::sync::atomic::Ordering::Relaxed);
        let problems = app.store.upkeep().check("p").await.unwrap();
        assert!(problems.is_empty(), "while serving: {problems:?}");
        assert!(
            moved.load(std::sync::atomic::Ordering::Relaxed) > before,
            "items moved while the check ran"
        );
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for w in workers {
        w.await.unwrap();
    }
    app.assert_invariant("p").await;
}
