//! Hostile warrior input: every poisoned or oversized call is a clear 4xx that changes nothing,
//! and each test ends with the invariant `tracker check` verifies.

use server::store::{ClaimOutcome, ClaimRequest, DoneOutcome, DoneReport, Refusal};
use tests::TestApp;

/// The project's `stats.json`.
async fn stats(app: &TestApp, slug: &str) -> serde_json::Value {
    serde_json::from_str(&app.get(&format!("/{slug}/stats.json")).await.body).expect("stats JSON")
}

/// Posts a done body; the reply.
async fn done_raw(app: &TestApp, slug: &str, body: serde_json::Value) -> tests::Reply {
    app.post(&format!("/{slug}/done"), body.to_string()).await
}

#[tokio::test]
async fn oversized_claim_fields_are_refused_before_anything_is_claimed() {
    let app = TestApp::start().await;
    app.project("p", &["a", "b", "c"]).await;
    let cases = [
        (
            format!(
                r#"{{"downloader":"alice","version":"{}"}}"#,
                "v".repeat(1 << 20)
            ),
            "version is longer than 64 bytes",
        ),
        (
            format!(r#"{{"downloader":"alice","version":"{}"}}"#, "v".repeat(65)),
            "version is longer than 64 bytes",
        ),
        (
            format!(r#"{{"downloader":"{}"}}"#, "d".repeat(65)),
            "downloader is longer than 64 bytes",
        ),
    ];
    for (body, reason) in &cases {
        for path in ["/p/request", "/p/multi=100//request"] {
            let r = app.post(path, body.clone()).await;
            // Only a body over the claim cap may be refused by its size before it is read
            // as JSON; a 65-byte field is refused for what it is.
            let over_cap = body.len() > 16 * 1024;
            assert!(
                (r.status == 400 && r.body.contains(reason)) || (over_cap && r.status == 413),
                "{path}: {} {}",
                r.status,
                r.body
            );
        }
    }
    let r = app
        .post(
            "/p/multi=100//request",
            format!(
                r#"{{"downloader":"alice","version":"{}"}}"#,
                "v".repeat(8 << 20)
            ),
        )
        .await;
    assert_eq!(r.status, 413, "an 8 MiB claim body: {}", r.body);
    let counts = app.counts("p").await;
    assert_eq!((counts.todo, counts.out), (3, 0));
    app.assert_invariant("p").await;
}

#[tokio::test]
async fn poisoned_byte_counts_are_refused_and_change_nothing() {
    let app = TestApp::start().await;
    app.project("p", &["a"]).await;
    let item = app.claim("p", "alice").await;
    let many: serde_json::Map<String, serde_json::Value> = (0..17)
        .map(|i| (format!("d{i}"), serde_json::json!(1)))
        .collect();
    let poisons = [
        serde_json::json!({"data": u64::MAX}),
        serde_json::json!({"data": (1u64 << 50) + 1}),
        serde_json::json!({"data": 1e17}),
        serde_json::json!({"data": -1}),
        serde_json::json!({"data": 1.5}),
        serde_json::json!({"data": "12"}),
        serde_json::json!({"data": null}),
        serde_json::Value::Object(many),
    ];
    for bytes in poisons {
        let r = done_raw(
            &app,
            "p",
            serde_json::json!({"downloader": "alice", "item": item, "bytes": bytes}),
        )
        .await;
        assert_eq!(r.status, 400, "{bytes}: {}", r.body);
        assert!(
            r.body.contains("bytes") || r.body.contains("domains"),
            "{}",
            r.body
        );
        let counts = app.counts("p").await;
        assert_eq!((counts.out, counts.done), (1, 0), "{bytes} changed state");
        app.assert_invariant("p").await;
    }
    // The largest legal count is exact.
    let r = done_raw(
        &app,
        "p",
        serde_json::json!({"downloader": "alice", "item": item, "bytes": {"data": 1u64 << 50}}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let stats = stats(&app, "p").await;
    assert_eq!(stats["total_bytes"], 1u64 << 50);
    assert_eq!(stats["downloader_bytes"]["alice"], 1u64 << 50);
    app.assert_invariant("p").await;
}

#[tokio::test]
async fn empty_nul_only_and_oversized_items_and_fields_are_refused() {
    let app = TestApp::start().await;
    app.project("p", &["a", "b"]).await;
    let items = app.claim_n("p", "alice", 2).await;
    let joined = items.join("\0");
    let bad = [
        serde_json::json!({"downloader": "alice", "item": "", "bytes": {"data": 1}}),
        serde_json::json!({"downloader": "alice", "item": "\0", "bytes": {"data": 1}}),
        serde_json::json!({"downloader": "alice", "item": format!("{joined}\0"), "bytes": {"data": 1}}),
        serde_json::json!({"downloader": "alice", "item": "x".repeat(4097), "bytes": {"data": 1}}),
        serde_json::json!({"downloader": "d".repeat(65), "item": joined, "bytes": {"data": 1}}),
        serde_json::json!({"downloader": "alice", "version": "v".repeat(65), "item": joined, "bytes": {"data": 1}}),
        serde_json::json!({"downloader": "alice", "id": "i".repeat(5000), "item": joined, "bytes": {"data": 1}}),
        serde_json::json!({"downloader": "alice", "id": {"k": "i".repeat(5000)}, "item": joined, "bytes": {"data": 1}}),
    ];
    for body in bad {
        let r = done_raw(&app, "p", body.clone()).await;
        assert_eq!(
            r.status,
            400,
            "{}: {}",
            &body.to_string()[..80.min(body.to_string().len())],
            r.body
        );
        let counts = app.counts("p").await;
        assert_eq!((counts.out, counts.done), (2, 0));
    }
    // A body far over what a done of a whole batch needs is refused by its size.
    let huge = serde_json::json!({"downloader": "alice", "item": joined, "bytes": {"data": 1}, "id": "x".repeat(6 << 20)});
    assert_eq!(done_raw(&app, "p", huge).await.status, 413);
    assert_eq!(app.counts("p").await.done, 0);
    app.assert_invariant("p").await;
}

#[tokio::test]
async fn only_handed_out_items_can_be_completed() {
    let app = TestApp::start().await;
    app.project("p", &["a", "b", "c"]).await;
    // Never claimed: 404 with the reason, and the item stays in its queue.
    let r = app.done("p", "alice", "b", 10).await;
    assert_eq!(r.status, 404, "{}", r.body);
    assert!(r.body.contains("never handed out"), "{}", r.body);
    let unknown = app.done("p", "alice", "nope", 10).await;
    assert_eq!(unknown.status, 404, "{}", unknown.body);
    let counts = app.counts("p").await;
    assert_eq!((counts.todo, counts.done), (3, 0));
    let status: serde_json::Value =
        serde_json::from_str(&app.get("/p/items/b.json").await.body).unwrap();
    assert_eq!(status["status"], "todo");

    // Claimed, released, then reported late: counted, credited to the sender.
    let item = app.claim("p", "alice").await;
    let r = app
        .post(
            "/p/release",
            format!(r#"{{"item":"{item}","downloader":"alice"}}"#),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let r = app.done("p", "bob", &item, 7).await;
    assert_eq!(
        r.status, 200,
        "a late report after a release counts: {}",
        r.body
    );
    let stats = stats(&app, "p").await;
    assert_eq!(stats["downloader_count"]["bob"], 1);
    assert_eq!(app.counts("p").await.done, 1);
    app.assert_invariant("p").await;
}

#[tokio::test]
async fn release_is_for_the_claimant_at_its_ip_or_an_admin() {
    let app = TestApp::start().await;
    app.project("p", &["a"]).await;
    let who = ClaimRequest {
        downloader: "alice".into(),
        ip: "10.0.0.1".into(),
        n: 1,
        name_ok: true,
        ..Default::default()
    };
    let now = server::store::now_ms();
    let ClaimOutcome::Items(items, _) = app.store.queue().claim("p", &who, now).await.unwrap()
    else {
        panic!("claim")
    };
    let item = &items[0];
    // Over HTTP the caller is 127.0.0.1, not the IP it claimed from: refused.
    let r = app
        .post(
            "/p/release",
            format!(r#"{{"item":"{item}","downloader":"alice"}}"#),
        )
        .await;
    assert_eq!(r.status, 403, "{}", r.body);
    assert!(r.body.contains("IP"), "{}", r.body);
    let r = app
        .post(
            "/p/release",
            format!(r#"{{"item":"{item}","downloader":"bob"}}"#),
        )
        .await;
    assert_eq!(r.status, 403, "{}", r.body);
    assert_eq!(app.counts("p").await.out, 1);
    // The claimant at its IP may.
    assert!(app
        .store
        .queue()
        .release("p", item, "alice", "10.0.0.1", false, now + 1)
        .await
        .unwrap());
    assert_eq!(app.counts("p").await.out, 0);
    app.assert_invariant("p").await;
}

#[tokio::test]
async fn one_poisoned_report_in_a_batch_is_refused_alone() {
    let app = TestApp::start().await;
    app.project("p", &["a", "b", "c", "d"]).await;
    let items = app.claim_n("p", "alice", 4).await;
    let report = |item: &str, bytes: u64| DoneReport {
        downloader: "alice".into(),
        version: "1".into(),
        ip: "127.0.0.1".into(),
        id: "null".into(),
        bytes: vec![("data".into(), bytes)],
        items: vec![item.to_string()],
        ..Default::default()
    };
    let mut empty = report(&items[3], 5);
    empty.items.push(String::new());
    let batch = [
        report(&items[0], 10),
        report(&items[1], 1 << 60),
        empty,
        report(&items[2], 20),
    ];
    let now = server::store::now_ms();
    let outcomes = app
        .store
        .queue()
        .done_batch("p", &batch, now)
        .await
        .unwrap();
    assert!(matches!(
        outcomes[0],
        DoneOutcome::Recorded { counted: 1, .. }
    ));
    assert_eq!(outcomes[1], DoneOutcome::Refused(Refusal::Invalid));
    assert_eq!(outcomes[2], DoneOutcome::Refused(Refusal::Invalid));
    assert!(matches!(
        outcomes[3],
        DoneOutcome::Recorded { counted: 1, .. }
    ));
    let counts = app.counts("p").await;
    assert_eq!((counts.out, counts.done), (2, 2));
    let stats = stats(&app, "p").await;
    assert_eq!(stats["total_bytes"], 30);
    app.assert_invariant("p").await;
}

#[tokio::test]
async fn a_report_that_would_pass_exact_counters_is_refused() {
    use fred::prelude::HashesInterface;
    let app = TestApp::start().await;
    app.project("p", &["a", "b"]).await;
    let items = app.claim_n("p", "alice", 2).await;
    let max = 1u64 << 50;
    let r = done_raw(
        &app,
        "p",
        serde_json::json!({"downloader": "alice", "item": items[0], "bytes": {"data": max}}),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    // As if the project had done 2^53 - 2^50 + 1 bytes: one more report at 2^50 would pass 2^53.
    let stats = app.store.keys().project("p").stats();
    let pool = app.store.pool();
    let near: u64 = (1u64 << 53) - max + 1;
    let _: () = pool
        .hset(&stats, ("done_bytes", near.to_string()))
        .await
        .unwrap();
    let r = done_raw(
        &app,
        "p",
        serde_json::json!({"downloader": "alice", "item": items[1], "bytes": {"data": max}}),
    )
    .await;
    assert_eq!(r.status, 413, "{}", r.body);
    let counts = app.counts("p").await;
    assert_eq!((counts.out, counts.done), (1, 1));
    let untouched: Option<String> = pool.hget(&stats, "done_bytes").await.unwrap();
    assert_eq!(
        untouched,
        Some(near.to_string()),
        "the refused report added no bytes"
    );
    let _: () = pool
        .hset(&stats, ("done_bytes", max.to_string()))
        .await
        .unwrap();
    app.assert_invariant("p").await;
}

#[tokio::test]
async fn claims_whose_caller_left_are_given_back_or_never_run() {
    use fred::prelude::*;
    let app = TestApp::start().await;
    app.project("p", &["a", "b", "c", "d", "e", "f"]).await;
    // Redis holds every script that writes while paused: the claims below wait in their batches
    // while their callers give up. (That a request whose caller left before its batch ran is
    // left out is the batcher's unit test.)
    let _: () = app
        .store
        .client()
        .custom(fred::cmd!("CLIENT"), vec!["PAUSE", "1500", "WRITE"])
        .await
        .unwrap();
    let impatient = reqwest::Client::builder()
        .timeout(std::time::Duration::from_millis(300))
        .build()
        .unwrap();
    let calls = (0..4).map(|i| {
        let req = impatient
            .post(app.url("/p/request"))
            .body(format!(r#"{{"downloader":"gone{i}","api_version":"2"}}"#));
        async move { req.send().await.is_err() }
    });
    let timed_out = futures::future::join_all(calls).await;
    assert!(timed_out.iter().all(|&t| t), "every caller gave up");
    // Once Redis goes on, what ran for a caller that left goes back, and nothing stays out.
    let gone_back = tests::wait_for(
        "the claims of callers that left to go back",
        std::time::Duration::from_secs(10),
        || async {
            let mut back = 0;
            for item in ["a", "b", "c", "d", "e", "f"] {
                let s = app.store.queue().item_status("p", item).await.ok()?;
                if s.timeline.contains("caller-gone") {
                    back += 1;
                }
            }
            let counts = app.counts("p").await;
            (back >= 1 && counts.out == 0).then_some(back)
        },
    )
    .await;
    assert!(gone_back <= 4, "{gone_back} went back");
    let counts = app.counts("p").await;
    assert_eq!((counts.todo, counts.out), (6, 0));
    app.assert_invariant("p").await;
}
