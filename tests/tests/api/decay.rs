//! Score decay (`decay_factor`, `decay_threshold`): reclaims decay an item until it fails, a
//! decayed item waits behind fresher work, decay off keeps `max_attempts`, the settings'
//! checks, and the score on the item's timeline in the panel, the item JSON and the CLI.

use server::store::{now_ms, Role};
use std::time::Duration;
use tests::panel::{account, json, Panel};
use tests::{wait_for, TestApp};

/// One claim over HTTP: the item, or `None` when there is nothing to give.
async fn http_claim(app: &TestApp, downloader: &str) -> Option<String> {
    let r = app
        .post(
            "/p/request",
            format!(r#"{{"downloader":"{downloader}","api_version":"2"}}"#),
        )
        .await;
    match r.status {
        200 => Some(
            serde_json::from_str::<serde_json::Value>(&r.body).unwrap()["item_name"]
                .as_str()
                .unwrap()
                .to_string(),
        ),
        404 => None,
        other => panic!("claim answered {other}: {}", r.body),
    }
}

/// The events of an item's timeline with their scores, as the item JSON gives them to admins.
async fn history(app: &TestApp, item: &str) -> Vec<(String, Option<f64>)> {
    let r = app
        .send(
            app.http
                .get(app.url(&format!("/p/items/{item}.json?history=1")))
                .bearer_auth(tests::ADMIN_TOKEN),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let v: serde_json::Value = serde_json::from_str(&r.body).unwrap();
    v["history"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["e"].as_str().unwrap().to_string(), e["score"].as_f64()))
        .collect()
}

#[tokio::test]
async fn reclaims_decay_an_item_until_it_fails_with_its_score_and_reclaims() {
    let app = TestApp::start().await;
    app.project("p", &["x"]).await;
    app.settings("p", |s| {
        s.reclaim_ttl = 1;
        s.decay_factor = 0.1;
        s.decay_threshold = 0.05;
    })
    .await;
    let claimed = std::time::Instant::now();
    assert_eq!(http_claim(&app, "alice").await.as_deref(), Some("x"));
    let second = http_claim(&app, "bob").await;
    // Within the claim's 1 s it is not handed out again (past it, on a slow machine, it may
    // be: nothing to assert then).
    if claimed.elapsed() < Duration::from_millis(900) {
        assert_eq!(second, None, "claimed, not expired");
    }
    // After 1 s the claim expires: the item decays to 0.1, goes back to its queue, and as
    // nothing fresher waits it is served again at once.
    let again = match second {
        Some(x) => x,
        None => {
            wait_for("the expired claim", Duration::from_secs(10), || async {
                http_claim(&app, "bob").await
            })
            .await
        }
    };
    assert_eq!(again, "x");
    let status = app.store.queue().item_status("p", "x").await.unwrap();
    assert_eq!(status.downloader.as_deref(), Some("bob"));
    assert_eq!((status.score, status.reclaims), (Some(0.1), 1));
    let events = history(&app, "x").await;
    assert_eq!(
        events,
        [
            ("claimed".into(), None),
            ("decayed".into(), Some(0.1)),
            ("claimed".into(), None)
        ],
        "the claim the item was served again by is a claim, not a reclaim"
    );
    app.assert_invariant("p").await;

    // Its second claim expires after 2 x 1 s: 0.1 x 0.1 is below 0.05, so it fails.
    wait_for("the item to fail", Duration::from_secs(15), || async {
        assert_eq!(http_claim(&app, "carol").await, None, "never handed out");
        let status = app.store.queue().item_status("p", "x").await.unwrap();
        (status.state.as_deref() == Some("failed")).then_some(())
    })
    .await;
    let status = app.store.queue().item_status("p", "x").await.unwrap();
    let reason: serde_json::Value = serde_json::from_str(&status.detail).unwrap();
    assert_eq!(
        reason["reason"], "score 0.01 after 2 reclaims, below the decay threshold 0.05",
        "{reason}"
    );
    assert_eq!(status.score, None, "a failed item keeps no score");
    let events: Vec<String> = history(&app, "x").await.into_iter().map(|e| e.0).collect();
    assert_eq!(
        events[events.len() - 3..],
        ["claimed", "decayed", "failed"],
        "{events:?}"
    );
    let counts = app.counts("p").await;
    assert_eq!((counts.todo, counts.out, counts.failed), (0, 0, 1));
    app.assert_invariant("p").await;
}

#[tokio::test]
async fn a_decayed_item_waits_behind_fresher_items_fifo_or_shuffled() {
    for fifo in [true, false] {
        let app = TestApp::start().await;
        app.project("p", &[]).await;
        app.settings("p", |s| {
            s.fifo = fifo;
            s.reclaim_ttl = 60;
            s.decay_factor = 0.8;
        })
        .await;
        app.store
            .queue()
            .add_items("p", "todo", &["old".into()])
            .await
            .unwrap();
        let t0 = now_ms();
        assert_eq!(app.claim_items("p", "alice", 1, t0).await, ["old"]);
        let fresh: Vec<String> = (0..5).map(|i| format!("fresh{i}")).collect();
        app.store
            .queue()
            .add_items("p", "todo", &fresh[..3])
            .await
            .unwrap();
        // The claim has expired: taken back, decayed to 0.8, queued 6 h (plus a day when
        // shuffled) behind; bob gets fresher work instead.
        let t1 = t0 + 60_000;
        let got = app.claim_items("p", "bob", 1, t1).await;
        assert!(got[0].starts_with("fresh"), "fifo {fifo}: {got:?}");
        let status = app.store.queue().item_status("p", "old").await.unwrap();
        assert_eq!(status.state.as_deref(), Some("todo"), "fifo {fifo}");
        assert_eq!(status.detail, "todo", "back in the part it came from");
        assert_eq!((status.score, status.reclaims), (Some(0.8), 1));
        // Work queued after the reclaim goes ahead of it too.
        app.store
            .queue()
            .add_items("p", "todo", &fresh[3..])
            .await
            .unwrap();
        let rest = app.claim_items("p", "carol", 10, t1).await;
        assert_eq!(rest.len(), 5, "fifo {fifo}: {rest:?}");
        assert_eq!(
            rest.last().map(String::as_str),
            Some("old"),
            "fifo {fifo}: {rest:?}"
        );
        // Served again, it keeps its score until it is done.
        assert_eq!(
            app.store
                .queue()
                .item_status("p", "old")
                .await
                .unwrap()
                .score,
            Some(0.8)
        );
        app.assert_invariant("p").await;
        let done = app.done("p", "carol", "old", 1).await;
        assert_eq!(done.status, 200, "{}", done.body);
        let status = app.store.queue().item_status("p", "old").await.unwrap();
        assert_eq!(
            (status.state.as_deref(), status.score),
            (Some("done"), None)
        );
        app.assert_invariant("p").await;
    }
}

#[tokio::test]
async fn with_decay_off_reclaims_are_handed_out_and_max_attempts_fails_items() {
    let app = TestApp::start().await;
    app.project("p", &["x", "y"]).await;
    app.settings("p", |s| {
        s.reclaim_ttl = 60;
        s.max_attempts = 2;
    })
    .await;
    assert_eq!(
        app.store
            .projects()
            .project("p")
            .await
            .unwrap()
            .unwrap()
            .decay_factor,
        0.0
    );
    let t0 = now_ms();
    let mut mine = app.claim_items("p", "alice", 2, t0).await;
    mine.sort();
    assert_eq!(mine, ["x", "y"]);
    // Expired: handed straight to the next claimant, marked reclaimed, no score.
    let mut again = app.claim_items("p", "bob", 2, t0 + 60_000).await;
    again.sort();
    assert_eq!(again, ["x", "y"]);
    let status = app.store.queue().item_status("p", "x").await.unwrap();
    assert_eq!((status.score, status.reclaims), (None, 0));
    let events: Vec<String> = history(&app, "x").await.into_iter().map(|e| e.0).collect();
    assert_eq!(events, ["claimed", "reclaimed"]);
    // A third claim (after 2 x 60 s) fails them instead.
    assert!(app
        .claim_items("p", "carol", 2, t0 + 60_000 + 120_000)
        .await
        .is_empty());
    for item in ["x", "y"] {
        let status = app.store.queue().item_status("p", item).await.unwrap();
        assert_eq!(status.state.as_deref(), Some("failed"));
        assert!(
            status.detail.contains("claimed 2 times"),
            "{}",
            status.detail
        );
    }
    app.assert_invariant("p").await;
}

#[tokio::test]
async fn decay_and_max_attempts_together_and_a_cleared_queue_drops_the_scores() {
    let app = TestApp::start().await;
    app.project("p", &["x"]).await;
    app.settings("p", |s| {
        s.reclaim_ttl = 60;
        s.decay_factor = 0.5;
        s.max_attempts = 2;
    })
    .await;
    let t0 = now_ms();
    assert_eq!(app.claim_items("p", "alice", 1, t0).await, ["x"]);
    // Reclaimed (0.5) and served again: its second claim.
    assert_eq!(app.claim_items("p", "bob", 1, t0 + 60_000).await, ["x"]);
    // Reclaimed again (0.25), then a third claim is one too many.
    assert!(app
        .claim_items("p", "carol", 1, t0 + 60_000 + 120_000)
        .await
        .is_empty());
    let status = app.store.queue().item_status("p", "x").await.unwrap();
    assert_eq!(status.state.as_deref(), Some("failed"));
    assert!(
        status.detail.contains("claimed 2 times"),
        "{}",
        status.detail
    );
    assert_eq!(status.score, None);
    app.assert_invariant("p").await;

    // A waiting item's score goes with its queue when the queue is cleared.
    app.store
        .queue()
        .add_items("p", "todo", &["z".into()])
        .await
        .unwrap();
    let t2 = t0 + 1_000_000;
    assert_eq!(app.claim_items("p", "dave", 1, t2).await, ["z"]);
    app.settings("p", |s| s.max_attempts = 0).await;
    // Expired: it decays to 0.5; dave asks for more than there is, so z comes back to him.
    assert_eq!(app.claim_items("p", "dave", 1, t2 + 60_000).await, ["z"]);
    let release = app
        .store
        .queue()
        .release("p", "z", "dave", "10.0.0.1", false, t2 + 60_001)
        .await
        .unwrap();
    assert!(release);
    assert_eq!(
        app.store.queue().item_status("p", "z").await.unwrap().score,
        Some(0.5),
        "a release keeps the score"
    );
    assert_eq!(
        app.store
            .queue()
            .clear_queue("p", "todo", false)
            .await
            .unwrap(),
        1
    );
    let decay: std::collections::HashMap<String, String> = fred::prelude::HashesInterface::hgetall(
        app.store.client(),
        app.store.keys().project("p").decay(),
    )
    .await
    .unwrap();
    assert!(decay.is_empty(), "{decay:?}");
    app.assert_invariant("p").await;
}

#[tokio::test]
async fn bad_decay_settings_are_refused_and_nothing_is_saved() {
    let app = TestApp::start().await;
    app.project("p", &[]).await;
    account(&app, "root", Role::Global, &[]).await;
    let mut panel = Panel::logged_in(&app, "root").await;
    let path = "/admin/api/p/settings";
    let shown = json(&panel.get(path).await);
    assert_eq!(shown["settings"]["decay_factor"], 0.0);
    assert_eq!(shown["settings"]["decay_threshold"], 0.005);
    let before = app.store.projects().project("p").await.unwrap().unwrap();
    for (field, value) in [
        ("decay_factor", serde_json::json!(1.0)),
        ("decay_factor", serde_json::json!(1.5)),
        ("decay_factor", serde_json::json!(-0.2)),
        ("decay_threshold", serde_json::json!(0.0)),
        ("decay_threshold", serde_json::json!(1.0)),
        ("decay_threshold", serde_json::json!(-1)),
    ] {
        let mut s = shown.clone();
        s["settings"][field] = value.clone();
        s["settings"]["title"] = "Changed".into();
        let r = panel.send(reqwest::Method::PUT, path, s).await;
        assert_eq!(r.status, 400, "{field}={value}: {}", r.body);
        assert!(r.body.contains(field), "{field}={value}: {}", r.body);
        assert_eq!(
            *app.store.projects().project("p").await.unwrap().unwrap(),
            *before,
            "{field}={value} saved nothing"
        );
    }
    // The command line refuses the same, and writes nothing (read from Redis itself: another
    // process's change reaches this one's settings cache only within a second).
    let meta = app.store.keys().project("p").meta();
    let stored = || async {
        let fields: Vec<Option<String>> = fred::prelude::HashesInterface::hmget(
            app.store.client(),
            &meta,
            vec!["title", "decay_factor", "decay_threshold"],
        )
        .await
        .unwrap();
        fields
    };
    let unchanged = stored().await;
    for change in ["decay_factor=2", "decay_threshold=0", "decay_factor=x"] {
        let run = app.cli(&["project", "set", "p", change, "title=Changed"], b"");
        assert!(!run.ok, "{change}: {}", run.out);
        assert!(run.err.contains("decay_"), "{change}: {}", run.err);
        assert_eq!(stored().await, unchanged, "{change}");
    }

    // Valid values are saved, through either door.
    let mut s = shown.clone();
    s["settings"]["decay_factor"] = 0.8.into();
    let r = panel.send(reqwest::Method::PUT, path, s).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let run = app.cli(&["project", "set", "p", "decay_threshold=0.01"], b"");
    assert!(run.ok, "{}", run.err);
    assert_eq!(
        stored().await[1..],
        [Some("0.8".to_string()), Some("0.01".to_string())]
    );
}

#[tokio::test]
async fn the_panel_shows_an_items_score_and_its_timeline() {
    let app = TestApp::start().await;
    app.project("p", &["x"]).await;
    app.settings("p", |s| {
        s.reclaim_ttl = 60;
        s.decay_factor = 0.8;
    })
    .await;
    let t0 = now_ms();
    assert_eq!(app.claim_items("p", "alice", 1, t0).await, ["x"]);
    assert_eq!(app.claim_items("p", "bob", 1, t0 + 60_000).await, ["x"]);
    account(&app, "ro", Role::ReadOnly, &[]).await;
    let mut panel = Panel::logged_in(&app, "ro").await;
    let info: app::model::admin::ItemInfo =
        serde_json::from_str(&panel.get("/admin/api/p/item?name=x").await.body).unwrap();
    assert_eq!(info.state.as_deref(), Some("out"));
    assert_eq!(info.downloader.as_deref(), Some("bob"));
    assert_eq!((info.score, info.reclaims), (Some(0.8), 1));
    let lines: Vec<(&str, &str, Option<f64>)> = info
        .timeline
        .iter()
        .map(|e| (e.e.as_str(), e.d.as_str(), e.score))
        .collect();
    assert_eq!(
        lines,
        [
            ("claimed", "alice", None),
            ("decayed", "", Some(0.8)),
            ("claimed", "bob", None)
        ]
    );
    // The command line shows the same.
    let run = app.cli(&["items", "show", "p", "x"], b"");
    assert!(run.ok, "{}", run.err);
    let shown: serde_json::Value = serde_json::from_str(&run.out).unwrap();
    assert_eq!(
        (shown["score"].as_f64(), shown["reclaims"].as_u64()),
        (Some(0.8), Some(1))
    );
    assert_eq!(shown["history"][1]["e"], "decayed");
    let unknown: app::model::admin::ItemInfo =
        serde_json::from_str(&panel.get("/admin/api/p/item?name=nope").await.body).unwrap();
    assert_eq!((unknown.state, unknown.score), (None, None));
    for bad in ["/admin/api/p/item?name=", "/admin/api/p/item"] {
        assert_eq!(panel.get(bad).await.status, 400, "{bad}");
    }
    let long = format!("/admin/api/p/item?name={}", "a".repeat(5000));
    assert_eq!(panel.get(&long).await.status, 400);
    assert_eq!(panel.get("/admin/api/nope/item?name=x").await.status, 404);
}
