//! The Lua scripts survive a Redis that lost their library (reload on "Function not found"),
//! and keep a project's settings across calls only while its stamp holds.

use fred::prelude::*;
use server::store::{now_ms, BackfeedRecord, ClaimOutcome, ClaimRequest, DoneOutcome, DoneReport};
use tests::TestApp;

#[tokio::test]
async fn every_script_reloads_after_function_flush() {
    // A Redis of its own: the flush deletes the functions of every test on the same Redis.
    let app = TestApp::start_private().await;
    every_script(&app).await;
}

/// Deletes the app's Redis's functions. Not on a cluster: the test cluster is shared by tests
/// running at once, and a flush between another test's reload and its retry would fail that
/// call ("Function not found" twice); there each master loads the library on first use anyway.
async fn flush_scripts(app: &TestApp) {
    let client = app.store.client();
    if !client.is_clustered() {
        client.function_flush::<()>(false).await.unwrap();
    }
}

/// Calls every script through its wrapper, each after its library was flushed (on one server), on
/// project `p1` of `app`; also run on a cluster, where a script whose keys crossed slots would fail.
pub(super) async fn every_script(app: &TestApp) {
    app.project("p1", &["a", "b"]).await;
    let store = &app.store;
    let flush = || flush_scripts(app);
    let now = now_ms();

    flush().await;
    assert_eq!(
        store
            .queue()
            .add_items("p1", "todo", &["c".to_string()])
            .await
            .unwrap(),
        1
    );
    flush().await;
    let who = ClaimRequest {
        downloader: "alice".into(),
        n: 1,
        name_ok: true,
        ..Default::default()
    };
    let ClaimOutcome::Items(items, _) = store.queue().claim("p1", &who, now).await.unwrap() else {
        panic!("claim")
    };
    flush().await;
    let report = DoneReport {
        downloader: "alice".into(),
        bytes: vec![("data".into(), 1)],
        items: items.clone(),
        ..Default::default()
    };
    assert!(matches!(
        store.queue().done("p1", &report, now).await.unwrap(),
        DoneOutcome::Recorded { counted: 1, .. }
    ));
    flush().await;
    // The done's log entry folded into alice's figures (fold_base, then fold).
    assert_eq!(store.figures().fold("p1").await.unwrap(), 1);
    let board = store
        .figures()
        .leaderboard("p1", -1, 5)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(board.downloaders[0].items, 1, "{:?}", board.downloaders);
    flush().await;
    assert_eq!(
        store
            .queue()
            .item_status("p1", &items[0])
            .await
            .unwrap()
            .state
            .as_deref(),
        Some("done")
    );
    flush().await;
    let ClaimOutcome::Items(more, _) = store.queue().claim("p1", &who, now).await.unwrap() else {
        panic!("claim")
    };
    flush().await;
    assert!(store
        .queue()
        .release("p1", &more[0], "alice", "", false, now)
        .await
        .unwrap());
    flush().await;
    let rec = BackfeedRecord {
        hash: 42,
        part: String::new(),
        item: "new-one".into(),
    };
    assert_eq!(
        store
            .queue()
            .backfeed("p1", "todo:backfeed", false, 1000, &[rec], now)
            .await
            .unwrap(),
        Some((1, 0))
    );
    flush().await;
    let board = store
        .figures()
        .leaderboard("p1", -1, 5)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(board.counts.done, 1);
    admin_scripts_reload(app, now).await;
    flush().await;
    assert_eq!(
        store
            .people()
            .login_attempt("root", "192.0.2.1", (5, 20), 60)
            .await
            .unwrap(),
        None
    );
    flush().await;
    store
        .people()
        .login_undo("root", "192.0.2.1", true)
        .await
        .unwrap();
    assert_eq!(
        store
            .people()
            .login_attempts("root", "192.0.2.1")
            .await
            .unwrap(),
        (0, 0)
    );
    flush().await;
    assert_eq!(
        store
            .people()
            .login_name("root", false, 1, 60)
            .await
            .unwrap(),
        None
    );
    flush().await;
    assert!(store
        .people()
        .login_name("root", false, 1, 60)
        .await
        .unwrap()
        .is_some());
    assert_eq!(
        store
            .people()
            .login_name("root", true, 1, 60)
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        store
            .people()
            .login_name("root", false, 1, 60)
            .await
            .unwrap(),
        None
    );
    flush().await;
    assert_eq!(
        store
            .projects()
            .rescue_attempt("192.0.2.1", 1, now)
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        store
            .projects()
            .rescue_attempt("192.0.2.1", 1, now)
            .await
            .unwrap(),
        Some(60),
        "one a minute: the next in a minute"
    );
    flush().await;
    let seen = server::store::SeenClient {
        slug: "p1".into(),
        downloader: "alice".into(),
        ip: "192.0.2.1".into(),
        seen: now,
        done: 1,
        ..Default::default()
    };
    let flushed = store.fleet().flush_fleet(&[seen], now).await.unwrap();
    assert_eq!((flushed.stored, flushed.dropped), (1, 0));
    assert_eq!(store.fleet().warriors_at_work("p1", now).await.unwrap(), 1);
    flush().await;
    // The offloader's two: a waiting item out to a (registered) queue segment and back.
    assert!(store
        .offload()
        .offload_lease("p1", "lease-token", 30_000)
        .await
        .unwrap());
    let waiting: Vec<(String, f64)> = {
        use fred::prelude::*;
        let k = store.keys().project("p1");
        store
            .client()
            .zrange(k.queue("todo"), 0, 0, None, false, None, true)
            .await
            .unwrap()
    };
    let (item, score) = waiting.first().cloned().expect("an item waiting");
    let entry = server::store::SegmentEntry {
        kind: "queue".into(),
        part: "todo".into(),
        count: 1,
        ..Default::default()
    };
    let one = vec![(item, score.to_string())];
    assert_eq!(
        store
            .offload()
            .commit_segment("p1", "lease-token", "queue-1", &entry, &one, u64::MAX)
            .await
            .unwrap(),
        1
    );
    flush().await;
    assert_eq!(
        store
            .offload()
            .refill_chunk("p1", "lease-token", "queue-1", "todo", 0, 1, &one)
            .await
            .unwrap(),
        1
    );
    assert!(store
        .offload()
        .segment_entries("p1")
        .await
        .unwrap()
        .is_empty());
    flush().await;
    // A drained shard is retired, a declared one kept even when empty.
    let recs = [BackfeedRecord {
        hash: 43,
        part: String::new(),
        item: "shard-one".into(),
    }];
    let fed = store
        .queue()
        .backfeed("p1", "todo:backfeed:daily1", false, 1000, &recs, now);
    assert_eq!(fed.await.unwrap(), Some((1, 0)), "queued in a new shard");
    assert_eq!(
        store
            .projects()
            .retire_empty_shards("p1", &[])
            .await
            .unwrap(),
        Vec::<String>::new()
    );
    store
        .queue()
        .clear_queue("p1", "todo:backfeed", false)
        .await
        .unwrap();
    flush().await;
    assert_eq!(
        store
            .projects()
            .retire_empty_shards("p1", &[])
            .await
            .unwrap(),
        ["todo:backfeed:daily1"]
    );
    // `tracker check`'s atomic looks (counts, and the places of the items it looks at).
    store.upkeep().check("p1").await.unwrap();
    flush().await;
    store.upkeep().check("p1").await.unwrap();
    // The lifetime counters: the tally, then its reader.
    flush().await;
    store.figures().tally("p1", now + 3_600_000).await.unwrap();
    flush().await;
    let totals = store
        .figures()
        .lifetime("p1", now + 3_600_000)
        .await
        .unwrap();
    assert!(totals.is_some_and(|t| t[&server::keys::Counter::Claimed] >= 1));
    // `tracker migrate`'s import: a claim, a done item, the totals.
    flush().await;
    let claim = (
        "imported-1".to_string(),
        now,
        "bob".to_string(),
        "10.0.0.2".to_string(),
    );
    assert_eq!(
        store
            .upkeep()
            .import_claims("p1", &[], &[claim])
            .await
            .unwrap(),
        1
    );
    flush().await;
    let done = ["imported-2".to_string()];
    assert_eq!(
        store.upkeep().import_done("p1", &[], &done).await.unwrap(),
        1
    );
    flush().await;
    let figures = store.upkeep().import_figures("p1", 0, 0).await.unwrap();
    assert_eq!(figures.done_gap, 0);
    store.upkeep().check("p1").await.unwrap();
    // A plain write guarded by the project's existence, and the log's budget.
    flush().await;
    store
        .projects()
        .record_upload("p1", &serde_json::json!({"uploader": "alice"}))
        .await
        .unwrap();
    flush().await;
    assert_eq!(
        store.offload().shed_log("p1", 1_000_000, 10).await.unwrap(),
        0
    );
    flush().await;
    // delete_if: a lease given up by its holder only, a mark cleared only while unchanged.
    app.project("p2", &[]).await;
    assert!(store
        .offload()
        .offload_lease("p2", "me", 60_000)
        .await
        .unwrap());
    store
        .offload()
        .release_offload_lease("p2", "another")
        .await
        .unwrap();
    assert!(!store
        .offload()
        .offload_lease("p2", "another", 60_000)
        .await
        .unwrap());
    store
        .offload()
        .release_offload_lease("p2", "me")
        .await
        .unwrap();
    assert!(store
        .offload()
        .offload_lease("p2", "another", 60_000)
        .await
        .unwrap());
    let (_, mark) = store.queue().destroy_project("p2").await.unwrap();
    flush().await;
    store.queue().forget_destroyed("p2", &mark).await.unwrap();
    assert_eq!(store.queue().destroyed_mark("p2").await.unwrap(), None);
    assert_eq!(
        store.scripts().all().len(),
        30,
        "every script is exercised above"
    );
}

/// The admin panel's bulk scripts after a flush: release_items, move_items, clear_queue,
/// resolve_failed; recount, of `tracker check --recount`; and shuffle, which the tracker runs
/// at start.
async fn admin_scripts_reload(app: &TestApp, now: u64) {
    let store = &app.store;
    let flush = || flush_scripts(app);
    let who = ClaimRequest {
        downloader: "bob".into(),
        n: 1,
        name_ok: true,
        ..Default::default()
    };
    let ClaimOutcome::Items(_, _) = store.queue().claim("p1", &who, now).await.unwrap() else {
        panic!("claim")
    };
    flush().await;
    let filter = server::store::ClaimFilter {
        downloader: Some("bob".into()),
        ..Default::default()
    };
    assert_eq!(
        store
            .queue()
            .release_matching("p1", &filter, "admin", now, false)
            .await
            .unwrap(),
        1
    );
    flush().await;
    assert!(
        store
            .queue()
            .move_items("p1", "todo", "todo:redo", None, false)
            .await
            .unwrap()
            >= 1
    );
    flush().await;
    assert!(
        store
            .queue()
            .clear_queue("p1", "todo:redo", false)
            .await
            .unwrap()
            >= 1
    );
    flush().await;
    let failed = store.keys().project("p1").failed();
    let _: () = store.client().hset(&failed, ("f", "{}")).await.unwrap();
    // Put there behind the tracker's back: the count of known items is set from the states
    // (the done item, the backfed one and `f`; the queue cleared above held the others).
    flush().await;
    assert_eq!(
        store.upkeep().recount("p1").await.unwrap(),
        Some((Some(2), 3))
    );
    flush().await;
    assert_eq!(
        store
            .queue()
            .resolve_failed("p1", None, true, "admin", now, false)
            .await
            .unwrap(),
        1
    );
    // A project from before queues were scored for random order, with an item waiting.
    app.store
        .queue()
        .add_items("p1", "todo", &["older".to_string()])
        .await
        .unwrap();
    let meta = store.keys().project("p1").meta();
    let _: () = store.client().hdel(&meta, "shuffled").await.unwrap();
    flush().await;
    assert!(store.queue().shuffle_queues("p1").await.unwrap() >= 1);
    app.assert_invariant("p1").await;
}

#[tokio::test]
async fn the_scripts_keep_the_settings_while_the_stamp_holds_and_for_at_most_a_second() {
    use server::store::Refusal;
    let app = TestApp::start().await;
    app.project("p", &["a", "b", "c", "d", "e", "f"]).await;
    let store = &app.store;
    let meta = store.keys().project("p").meta();
    let who = ClaimRequest {
        downloader: "alice".into(),
        n: 1,
        name_ok: true,
        ..Default::default()
    };
    let now = now_ms();
    let claim = |at: u64| {
        let who = who.clone();
        async move { store.queue().claim("p", &who, at).await.unwrap() }
    };
    let paused =
        |outcome: &ClaimOutcome| matches!(outcome, ClaimOutcome::Refused(Refusal::NotActive));
    assert!(matches!(claim(now).await, ClaimOutcome::Items(_, _)));
    // Saved settings come with a new stamp: the next claim obeys them.
    let mut settings = (*store.projects().project("p").await.unwrap().unwrap()).clone();
    settings.state = "paused".into();
    store
        .projects()
        .save_settings("p", &settings)
        .await
        .unwrap();
    assert!(paused(&claim(now).await));
    settings.state = "active".into();
    store
        .projects()
        .save_settings("p", &settings)
        .await
        .unwrap();
    assert!(matches!(claim(now).await, ClaimOutcome::Items(_, _)));
    // A write without a new stamp (by hand, or by an older process) is seen within a second.
    let _: () = store
        .client()
        .hset(&meta, ("state", "paused"))
        .await
        .unwrap();
    assert!(matches!(claim(now + 1).await, ClaimOutcome::Items(_, _)));
    assert!(paused(&claim(now + 1_000).await));
    // A project without a stamp (made before it) is read at every call.
    let _: () = store.client().hdel(&meta, "stamp").await.unwrap();
    let _: () = store
        .client()
        .hset(&meta, ("state", "active"))
        .await
        .unwrap();
    assert!(matches!(
        claim(now + 1_001).await,
        ClaimOutcome::Items(_, _)
    ));
    let _: () = store
        .client()
        .hset(&meta, ("state", "paused"))
        .await
        .unwrap();
    assert!(paused(&claim(now + 1_002).await));
}
