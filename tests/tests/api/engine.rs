//! The queue engine through the store, with time passed in: claim order, reclaims, attempts,
//! limits, pattern limits.

use fred::prelude::*;
use server::store::{ClaimOutcome, ClaimRequest, PatternLimit, Refusal};
use tests::{who, TestApp};

const T0: u64 = 1_700_000_000_000;

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

#[tokio::test]
async fn fifo_projects_serve_items_in_the_order_added() {
    let app = TestApp::start().await;
    app.project("p", &[]).await;
    app.settings("p", |s| s.fifo = true).await;
    app.store
        .queue()
        .add_items("p", "todo", &strings(&["a", "b", "c", "d"]))
        .await
        .unwrap();
    assert_eq!(app.claim_items("p", "alice", 2, T0).await, ["a", "b"]);
    assert_eq!(app.claim_items("p", "alice", 1, T0).await, ["c"]);
}

/// `n` items `i0000`, `i0001`, ... in the order they are added.
fn numbered(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("i{i:04}")).collect()
}

/// How many of `got` come from the second half of `numbered(n)`.
fn from_second_half(got: &[String], n: usize) -> usize {
    got.iter()
        .filter(|item| item[1..].parse::<usize>().unwrap() >= n / 2)
        .count()
}

#[tokio::test]
async fn random_projects_serve_a_bulk_load_in_random_order() {
    let app = TestApp::start().await;
    app.project("p", &[]).await;
    let items = numbered(1000);
    let before = server::store::now_ms();
    app.store
        .queue()
        .add_items("p", "todo", &items)
        .await
        .unwrap();
    // Every score is a draw within the day after the item was queued (the bound on waiting).
    let key = app.store.keys().project("p").key("todo");
    let scores: Vec<(String, f64)> = app
        .store
        .client()
        .zrange(&key, 0, -1, None, false, None, true)
        .await
        .unwrap();
    assert_eq!(scores.len(), 1000);
    let day = 86_400_000.0;
    let after = server::store::now_ms() as f64;
    for (item, score) in &scores {
        assert!(
            *score >= before as f64 - 1.0 && *score <= after + day,
            "{item} scored {score}, outside [{before}, {after} + a day]"
        );
    }
    let got = app.claim_items("p", "alice", 100, T0).await;
    assert_eq!(got.len(), 100);
    assert_ne!(got, items[..100], "not served in the order added");
    // A random tenth of the load: about half from its second half (odds of 20 or fewer: ~1e-9).
    let late = from_second_half(&got, 1000);
    assert!(late > 20 && late < 80, "{late} of 100 from the second half");
    app.assert_invariant("p").await;
}

#[tokio::test]
async fn older_projects_draw_at_random_until_their_queues_are_scored() {
    let app = TestApp::start().await;
    app.project("p", &[]).await;
    let k = app.store.keys().project("p");
    let client = app.store.client();
    // As an older tracker left it: no mark, no count of known items, and items scored by their
    // order of arrival.
    let _: () = client.hdel(k.meta(), "shuffled").await.unwrap();
    let _: () = client.hdel(k.stats(), "known").await.unwrap();
    let items = numbered(1000);
    let scored: Vec<(f64, String)> = items
        .iter()
        .enumerate()
        .map(|(i, item)| (i as f64 + 1.0, item.clone()))
        .collect();
    let _: () = client
        .zadd(k.key("todo"), None, None, false, false, scored)
        .await
        .unwrap();
    let _: () = client.set(k.qseq(), 1000, None, None, false).await.unwrap();
    let got = app.claim_items("p", "alice", 100, T0).await;
    assert!(
        from_second_half(&got, 1000) > 20,
        "drawn at random, not by score: {got:?}"
    );

    assert_eq!(
        app.store.queue().shuffle_all_queues().await.unwrap(),
        [("p".to_string(), 900)]
    );
    let mark: Option<String> = client.hget(k.meta(), "shuffled").await.unwrap();
    assert_eq!(mark.as_deref(), Some("1"));
    let lowest: Vec<(String, f64)> = client
        .zrange(k.key("todo"), 0, 0, None, false, None, true)
        .await
        .unwrap();
    assert!(lowest[0].1 > 1e12, "scored on the clock: {lowest:?}");
    let got = app.claim_items("p", "alice", 100, T0).await;
    assert!(
        from_second_half(&got, 1000) > 20,
        "popped by the new scores, in random order: {got:?}"
    );
    assert!(
        app.store
            .queue()
            .shuffle_all_queues()
            .await
            .unwrap()
            .is_empty(),
        "done once"
    );
    app.store.upkeep().recount("p").await.unwrap();
    app.assert_invariant("p").await;
}

#[tokio::test]
async fn queues_are_served_in_claim_order_personal_queue_first() {
    let app = TestApp::start().await;
    app.project("p", &[]).await;
    app.settings("p", |s| s.fifo = true).await;
    for (queue, item) in [
        ("todo:redo", "redo"),
        ("todo:secondary", "second"),
        ("todo:backfeed", "fed"),
        ("todo", "main"),
    ] {
        app.store
            .queue()
            .add_items("p", queue, &strings(&[item]))
            .await
            .unwrap();
    }
    app.store
        .queue()
        .add_items("p", "todo:d:alice", &strings(&["mine"]))
        .await
        .unwrap();
    assert_eq!(
        app.claim_items("p", "bob", 1, T0).await,
        ["main"],
        "bob never gets alice's item"
    );
    assert_eq!(
        app.claim_items("p", "alice", 5, T0).await,
        ["mine", "fed", "second", "redo"]
    );
    app.assert_invariant("p").await;
}

#[tokio::test]
async fn known_items_are_never_added_twice() {
    let app = TestApp::start().await;
    app.project("p", &["a"]).await;
    let a = app.claim_items("p", "alice", 1, T0).await;
    assert_eq!(
        app.store
            .queue()
            .add_items("p", "todo:secondary", &strings(&["a", "b", "b"]))
            .await
            .unwrap(),
        1
    );
    assert_eq!(a, ["a"]);
    app.assert_invariant("p").await;
}

#[tokio::test]
async fn stale_claims_are_reclaimed_after_ttl_times_claim_count() {
    let app = TestApp::start().await;
    app.project("p", &["x"]).await;
    app.settings("p", |s| s.reclaim_ttl = 60).await;
    assert_eq!(app.claim_items("p", "alice", 1, T0).await, ["x"]);
    assert!(
        app.claim_items("p", "bob", 1, T0 + 59_000).await.is_empty(),
        "not yet stale"
    );
    assert_eq!(
        app.claim_items("p", "bob", 1, T0 + 60_000).await,
        ["x"],
        "stale after 1 x 60 s"
    );
    // Claimed twice now: stale after 2 x 60 s.
    assert!(app
        .claim_items("p", "carol", 1, T0 + 60_000 + 119_000)
        .await
        .is_empty());
    assert_eq!(
        app.claim_items("p", "carol", 1, T0 + 60_000 + 120_000)
            .await,
        ["x"]
    );
    let status = app.store.queue().item_status("p", "x").await.unwrap();
    assert_eq!(status.downloader.as_deref(), Some("carol"));
    assert!(status.timeline.contains("reclaimed"));
    app.assert_invariant("p").await;
}

#[tokio::test]
async fn items_claimed_more_than_max_attempts_fail() {
    let app = TestApp::start().await;
    app.project("p", &["x"]).await;
    app.settings("p", |s| {
        s.reclaim_ttl = 1;
        s.max_attempts = 2;
    })
    .await;
    assert_eq!(app.claim_items("p", "alice", 1, T0).await, ["x"]);
    assert_eq!(app.claim_items("p", "bob", 1, T0 + 10_000).await, ["x"]);
    assert!(
        app.claim_items("p", "carol", 1, T0 + 60_000)
            .await
            .is_empty(),
        "a third claim fails it instead"
    );
    let status = app.store.queue().item_status("p", "x").await.unwrap();
    assert_eq!(status.state.as_deref(), Some("failed"));
    assert!(status.detail.contains("claimed 2 times"));
    let board = app
        .store
        .figures()
        .leaderboard("p", -1, 0)
        .await
        .unwrap()
        .unwrap();
    assert_eq!((board.counts.out, board.counts.failed), (0, 1));
    app.assert_invariant("p").await;
}

#[tokio::test]
async fn at_the_claims_limit_claims_are_served_reclaims() {
    let app = TestApp::start().await;
    // FIFO orders the items queued after it is set.
    app.project("p", &[]).await;
    app.settings("p", |s| {
        s.claims_limit = 2;
        s.fifo = true;
    })
    .await;
    app.store
        .queue()
        .add_items("p", "todo", &strings(&["a", "b", "c"]))
        .await
        .unwrap();
    assert_eq!(app.claim_items("p", "alice", 2, T0).await, ["a", "b"]);
    assert_eq!(
        app.claim_items("p", "bob", 1, T0 + 1).await,
        ["a"],
        "the oldest claim, not a new item"
    );
    let board = app
        .store
        .figures()
        .leaderboard("p", -1, 0)
        .await
        .unwrap()
        .unwrap();
    assert_eq!((board.counts.out, board.counts.todo), (2, 1));
    app.assert_invariant("p").await;
}

#[tokio::test]
async fn rate_limit_is_smooth_with_burst() {
    let app = TestApp::start().await;
    let items: Vec<String> = (0..100).map(|i| format!("i{i}")).collect();
    app.project("p", &[]).await;
    app.store
        .queue()
        .add_items("p", "todo", &items)
        .await
        .unwrap();
    app.settings("p", |s| {
        s.rate = 10.0;
        s.burst = 5.0;
    })
    .await;
    assert_eq!(
        app.claim_items("p", "alice", 100, T0).await.len(),
        5,
        "the burst"
    );
    assert!(
        matches!(app.store.queue().claim("p", &who("alice", 1), T0).await.unwrap(), ClaimOutcome::Refused(Refusal::RateLimited { wait_ms }) if wait_ms > 0 && wait_ms <= 100)
    );
    assert_eq!(
        app.claim_items("p", "alice", 100, T0 + 100).await.len(),
        1,
        "one per 100 ms"
    );
    assert_eq!(
        app.claim_items("p", "alice", 100, T0 + 1100).await.len(),
        5,
        "refilled up to the burst only"
    );
}

#[tokio::test]
async fn pattern_limits_do_not_starve_the_other_items() {
    let app = TestApp::start().await;
    app.project("p", &[]).await;
    app.settings("p", |s| {
        s.pattern_limits = vec![PatternLimit {
            name: "img".into(),
            pattern: r"\.jpg$".into(),
            rate: 1.0,
            burst: 2.0,
        }];
    })
    .await;
    let mut items: Vec<String> = (0..500).map(|i| format!("https://x/{i}.jpg")).collect();
    items.extend((0..5).map(|i| format!("https://x/page{i}")));
    app.store
        .queue()
        .add_items("p", "todo", &items)
        .await
        .unwrap();
    // Most of the queue is limited, yet a claim gets every unlimited item plus the burst.
    let got = app.claim_items("p", "alice", 20, T0).await;
    let jpg = got.iter().filter(|i| i.ends_with(".jpg")).count();
    assert_eq!((got.len() - jpg, jpg), (5, 2), "{got:?}");
    assert!(
        app.claim_items("p", "alice", 20, T0).await.is_empty(),
        "limited items wait for their rate"
    );
    assert_eq!(app.claim_items("p", "alice", 20, T0 + 1000).await.len(), 1);
    app.assert_invariant("p").await;
}

#[tokio::test]
async fn versions_compare_piecewise_numerically() {
    let app = TestApp::start().await;
    app.project("p", &["a", "b", "c", "d", "e", "f"]).await;
    app.settings("p", |s| s.min_version = "20240101.02".into())
        .await;
    let with_version = |v: &str| ClaimRequest {
        version: v.into(),
        ..who("alice", 1)
    };
    let served = |v: &'static str| {
        let app = &app;
        let req = with_version(v);
        async move {
            let got = app.store.queue().claim("p", &req, T0).await.unwrap();
            matches!(got, ClaimOutcome::Items(_, _))
        }
    };
    // Twice: the second answers are the ones the scripts kept.
    for _ in 0..2 {
        for (v, ok) in [
            ("20240101.10", true),
            ("20240101.02", true),
            ("3", false),
            ("20231231.99", false),
            ("", false),
        ] {
            assert_eq!(served(v).await, ok, "version {v:?}");
        }
    }
    // Past the 1,024 answers kept, all are forgotten and found again.
    for chunk in 0..11 {
        let reqs: Vec<ClaimRequest> = (0..100)
            .map(|i| with_version(&format!("1.{}", chunk * 100 + i)))
            .collect();
        let got = app
            .store
            .queue()
            .claim_batch("p", &reqs, T0)
            .await
            .unwrap()
            .unwrap();
        assert!(got.iter().all(|g| !matches!(g, ClaimOutcome::Items(_, _))));
    }
    assert!(served("20240101.10").await);
    // Kept per minimum version: a new one is compared afresh.
    app.settings("p", |s| s.min_version = "3".into()).await;
    assert!(served("20231231.99").await);
}
