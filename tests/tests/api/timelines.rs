//! An item's timeline through claims: a claim's line waits in its claim record and joins the
//! timeline when the item leaves the claim (done, released, reclaimed), and done.lua reads the
//! record's downloader, claim time and line, one way for the records claim.lua writes and
//! another for any other.

use fred::prelude::*;
use server::store::{ClaimOutcome, ClaimRequest};
use tests::TestApp;

const T0: u64 = 1_700_000_000_000;

/// A done of a batch decodes each distinct claim record once; items whose records differ (one
/// reclaimed by another downloader, so counted twice and marked) must each keep their own lines.
#[tokio::test]
async fn a_batch_done_writes_each_item_its_own_claim_line() {
    let app = TestApp::start().await;
    app.project("p", &["a", "b", "c"]).await;
    app.settings("p", |s| s.claims_limit = 3).await;
    let mut mine = app.claim_items("p", "alice", 3, T0).await;
    mine.sort();
    assert_eq!(mine, ["a", "b", "c"]);
    // At the claims limit, bob's claim takes back the oldest claim (the first by name).
    assert_eq!(app.claim_items("p", "bob", 1, T0 + 1).await, ["a"]);
    let report = server::store::DoneReport {
        downloader: "alice".into(),
        version: "20240101.01".into(),
        user_agent: String::new(),
        ip: "127.0.0.1".into(),
        id: "null".into(),
        bytes: vec![("data".into(), 30)],
        items: ["a", "b", "c"].map(String::from).to_vec(),
        ..Default::default()
    };
    app.store.queue().done("p", &report, T0 + 2).await.unwrap();
    let lines = |item: &'static str| {
        let app = &app;
        async move {
            let status = app.store.queue().item_status("p", item).await.unwrap();
            assert_eq!(status.state.as_deref(), Some("done"), "{item}");
            serde_json::from_str::<Vec<serde_json::Value>>(&status.timeline)
                .unwrap()
                .iter()
                .map(|e| {
                    format!(
                        "{} {} {}",
                        e["t"],
                        e["e"].as_str().unwrap(),
                        e["d"].as_str().unwrap()
                    )
                })
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(
        lines("a").await,
        [
            format!("{T0} claimed alice"),
            format!("{} reclaimed bob", T0 + 1),
            format!("{} done alice", T0 + 2)
        ]
    );
    for item in ["b", "c"] {
        assert_eq!(
            lines(item).await,
            [
                format!("{T0} claimed alice"),
                format!("{} done alice", T0 + 2)
            ]
        );
    }
    app.assert_invariant("p").await;
}

/// done.lua reads a claim record as claim.lua writes it with one match, and any other record
/// whole: a version or user agent with escapes, and a record in an older layout, must give the
/// same timeline line, claim time and count of items held as the common one.
#[tokio::test]
async fn claim_records_with_escapes_or_an_older_layout_are_read_whole() {
    let app = TestApp::start().await;
    app.project("p", &["a", "b", "c", "d"]).await;
    let k = app.store.keys().project("p");
    let client = app.store.client();
    let claim = |downloader: &str, user_agent: &str, version: &str| ClaimRequest {
        downloader: downloader.into(),
        ip: "10.0.0.1".into(),
        user_agent: user_agent.into(),
        version: version.into(),
        n: 1,
        name_ok: true,
        globally_blocked: false,
        pipeline: None,
    };
    let mut held = Vec::new();
    for (who, ua, version, at) in [
        ("alice", "plain", "20240101.01", T0),
        ("bob", r#"a "quoted", \ agent","v":"x"#, "1.0", T0 + 1),
        ("carol", "plain", "2024/01 beta", T0 + 2),
        ("dave", "plain", "3", T0 + 3),
    ] {
        match app
            .store
            .queue()
            .claim("p", &claim(who, ua, version), at)
            .await
            .unwrap()
        {
            ClaimOutcome::Items(items, _) => held.push((who, items[0].clone())),
            other => panic!("{other:?}"),
        }
    }
    // Dave's record as an older tracker wrote it: other fields first, no address or agent.
    let older = format!(r#"{{"n":1,"v":"3 old","t":{},"d":"dave"}}"#, T0 + 3);
    let _: () = client
        .hset(k.claims(), (held[3].1.as_str(), older))
        .await
        .unwrap();
    for (i, (who, item)) in held.iter().enumerate() {
        let report = server::store::DoneReport {
            downloader: who.to_string(),
            version: "2".into(),
            ip: "10.0.0.1".into(),
            id: "null".into(),
            bytes: vec![("data".into(), 10)],
            items: vec![item.clone()],
            ..Default::default()
        };
        app.store
            .queue()
            .done("p", &report, T0 + 10 + i as u64)
            .await
            .unwrap();
    }
    for ((who, item), version) in held
        .iter()
        .zip(["20240101.01", "1.0", "2024/01_beta", "3_old"])
    {
        let status = app.store.queue().item_status("p", item).await.unwrap();
        let events: Vec<serde_json::Value> = serde_json::from_str(&status.timeline).unwrap();
        assert_eq!(events[0]["e"], "claimed", "{who}: {events:?}");
        assert_eq!(events[0]["d"], *who, "{who}: {events:?}");
        assert_eq!(events[0]["v"], version, "{who}: {events:?}");
        assert_eq!(events[1]["e"], "done", "{who}: {events:?}");
    }
    // Each log entry carries its item's claim time.
    let entries: Vec<(String, std::collections::HashMap<String, String>)> =
        client.xrange(k.log(), "-", "+", None).await.unwrap();
    let claimed: Vec<&str> = entries.iter().map(|(_, f)| f["claimed"].as_str()).collect();
    assert_eq!(
        claimed,
        [
            format!("[{T0}]"),
            format!("[{}]", T0 + 1),
            format!("[{}]", T0 + 2),
            format!("[{}]", T0 + 3)
        ]
    );
    // Nobody holds anything any more: each record's downloader was read.
    app.assert_invariant("p").await;
}

/// A claim keeps its count and its timeline line in its record; both must survive the item
/// leaving the claim undone (released), or max_attempts and the history would forget it.
#[tokio::test]
async fn released_items_keep_their_claim_count_and_their_history() {
    let app = TestApp::start().await;
    app.project("p", &["x"]).await;
    app.settings("p", |s| s.max_attempts = 2).await;
    let events = |timeline: &str| -> Vec<(String, String)> {
        serde_json::from_str::<Vec<serde_json::Value>>(timeline)
            .unwrap()
            .iter()
            .map(|e| {
                (
                    e["e"].as_str().unwrap().into(),
                    e["d"].as_str().unwrap().into(),
                )
            })
            .collect()
    };
    let pair = |e: &str, d: &str| (e.to_string(), d.to_string());

    assert_eq!(app.claim_items("p", "alice", 1, T0).await, ["x"]);
    let status = app.store.queue().item_status("p", "x").await.unwrap();
    assert_eq!(events(&status.timeline), [pair("claimed", "alice")]);
    assert!(app
        .store
        .queue()
        .release("p", "x", "alice", "10.0.0.1", false, T0 + 1)
        .await
        .unwrap());
    assert_eq!(app.claim_items("p", "bob", 1, T0 + 2).await, ["x"]);
    assert!(app
        .store
        .queue()
        .release("p", "x", "bob", "10.0.0.1", false, T0 + 3)
        .await
        .unwrap());
    assert!(
        app.claim_items("p", "carol", 1, T0 + 4).await.is_empty(),
        "the third claim fails it: the two released claims counted"
    );
    let status = app.store.queue().item_status("p", "x").await.unwrap();
    assert_eq!(status.state.as_deref(), Some("failed"));
    assert!(
        status.detail.contains("claimed 2 times"),
        "{}",
        status.detail
    );
    assert_eq!(
        events(&status.timeline),
        [
            pair("claimed", "alice"),
            pair("released", "alice"),
            pair("claimed", "bob"),
            pair("released", "bob"),
            pair("failed", ""),
        ]
    );
    app.assert_invariant("p").await;
}
