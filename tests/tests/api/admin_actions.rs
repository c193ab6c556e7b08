//! The admin API's actions: items, queues, claims, failed items, settings, blocks, users,
//! each with its dry run, the invariant kept, and an audit entry.

use super::admin::{account, json, Panel};
use fred::prelude::*;
use server::store::Role;
use tests::{TestApp, ADMIN_TOKEN};

/// Items waiting in any queue of p1.
async fn todo(app: &TestApp) -> u64 {
    app.counts("p1").await.todo
}

#[tokio::test]
async fn items_are_added_moved_and_cleared_with_dry_runs() {
    let app = TestApp::start().await;
    app.project("p1", &["known"]).await;
    account(&app, "root", Role::Global, &[]).await;
    let mut p = Panel::logged_in(&app, "root").await;
    let add = |dry: bool| {
        format!(
            "/admin/api/p1/items?queue=todo{}",
            if dry { "&dry_run=1" } else { "" }
        )
    };
    let lines = "a1\r\na2\n\nb1\nknown\na1\n";
    let send = |p: &Panel, path: String, body: Vec<u8>| {
        app.http
            .post(app.url(&path))
            .header("cookie", &p.cookie)
            .header("x-csrf-token", &p.csrf)
            .body(body)
    };
    let dry = app.send(send(&p, add(true), lines.into())).await;
    assert_eq!(json(&dry)["count"], 3, "only new items count: {}", dry.body);
    assert_eq!(todo(&app).await, 1, "dry run changes nothing");
    let real = app.send(send(&p, add(false), lines.into())).await;
    assert_eq!(json(&real)["count"], 3, "known items are skipped");
    assert_eq!(todo(&app).await, 4);

    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(
        &mut gz,
        (0..5000)
            .map(|i| format!("z{i}\n"))
            .collect::<String>()
            .as_bytes(),
    )
    .unwrap();
    let r = app
        .send(send(
            &p,
            "/admin/api/p1/items?queue=todo:secondary".into(),
            gz.finish().unwrap(),
        ))
        .await;
    assert_eq!(json(&r)["count"], 5000, "{}", r.body);

    let mv =
        |dry| serde_json::json!({"from": "todo", "to": "todo:redo", "regex": "^a", "dry_run": dry});
    assert_eq!(
        json(&p.post("/admin/api/p1/move", mv(true)).await)["count"],
        2
    );
    assert_eq!(
        json(&p.get("/admin/api/p1/queues").await)["queues"]["todo:redo"],
        0
    );
    assert_eq!(
        json(&p.post("/admin/api/p1/move", mv(false)).await)["count"],
        2
    );
    let q = json(&p.get("/admin/api/p1/queues").await);
    assert_eq!(q["queues"]["todo:redo"], 2, "{q}");
    assert_eq!(q["queues"]["todo"], 2);
    app.assert_invariant("p1").await;

    let clear = |dry| serde_json::json!({"queue": "todo:secondary", "dry_run": dry});
    assert_eq!(
        json(&p.post("/admin/api/p1/clear", clear(true)).await)["count"],
        5000
    );
    assert_eq!(
        json(&p.post("/admin/api/p1/clear", clear(false)).await)["count"],
        5000
    );
    assert_eq!(
        json(&p.get("/admin/api/p1/queues").await)["queues"]["todo:secondary"],
        0
    );
    app.assert_invariant("p1").await;

    let bad = p
        .post(
            "/admin/api/p1/move",
            serde_json::json!({"from": "todo", "to": "nope"}),
        )
        .await;
    assert_eq!(bad.status, 400);
    let bad = p
        .post(
            "/admin/api/p1/move",
            serde_json::json!({"from": "todo", "to": "todo:redo", "regex": "("}),
        )
        .await;
    assert_eq!(bad.status, 400, "{}", bad.body);

    let audit = json(&p.get("/admin/api/audit?project=p1").await);
    let actions: Vec<_> = audit
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["action"].as_str().unwrap().to_string(),
                e["count"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        actions,
        [
            ("queue.clear".into(), 5000),
            ("items.move".into(), 2),
            ("items.add".into(), 5000),
            ("items.add".into(), 3)
        ],
        "every action, with its count, and no dry run"
    );
}

#[tokio::test]
async fn scripts_add_items_with_the_api_token() {
    let app = TestApp::start().await;
    app.project("p1", &[]).await;
    let r = app
        .post_with(
            "/admin/api/p1/items?queue=todo",
            &[("authorization", &format!("Bearer {ADMIN_TOKEN}"))],
            "x\ny\n",
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(json(&r)["count"], 2);
    let r = app
        .post_with(
            "/admin/api/p1/items",
            &[("authorization", "Bearer wrong")],
            "z\n",
        )
        .await;
    assert_eq!(r.status, 401, "no session, no token: refused ({})", r.body);
    assert_eq!(todo(&app).await, 2);
}

#[tokio::test]
async fn claims_of_one_downloader_are_released_after_a_dry_run() {
    let app = TestApp::start().await;
    app.project("p1", &["i1", "i2", "i3", "i4", "i5"]).await;
    account(&app, "root", Role::Global, &[]).await;
    for who in ["alice", "alice", "alice", "bob"] {
        app.claim("p1", who).await;
    }
    let mut p = Panel::logged_in(&app, "root").await;
    let groups = json(&p.get("/admin/api/p1/claims").await);
    assert_eq!(groups[0]["downloader"], "alice");
    assert_eq!(groups[0]["count"], 3);
    assert_eq!(groups[0]["ips"], serde_json::json!(["127.0.0.1"]));
    assert_eq!(groups[1]["count"], 1);

    let release = |dry| serde_json::json!({"downloader": "alice", "dry_run": dry});
    assert_eq!(
        json(&p.post("/admin/api/p1/release", release(true)).await)["count"],
        3
    );
    assert_eq!(app.counts("p1").await.out, 4);
    assert_eq!(
        json(&p.post("/admin/api/p1/release", release(false)).await)["count"],
        3
    );
    let counts = app.counts("p1").await;
    assert_eq!((counts.out, counts.todo), (1, 4));
    app.assert_invariant("p1").await;

    let r = p.post("/admin/api/p1/release", serde_json::json!({})).await;
    assert_eq!(r.status, 400, "a filter is required: {}", r.body);
    let r = p
        .post(
            "/admin/api/p1/release",
            serde_json::json!({"older_than_s": 0, "regex": "^i"}),
        )
        .await;
    assert_eq!(json(&r)["count"], 1);
    app.assert_invariant("p1").await;
    // Every claim was released (alice's three by name, bob's by the regex): all five are
    // served again.
    let mut served = app.claim_n("p1", "carol", 10).await;
    served.sort();
    assert_eq!(
        served,
        ["i1", "i2", "i3", "i4", "i5"],
        "released items are served again"
    );
}

#[tokio::test]
async fn failed_items_are_requeued_or_dropped() {
    let app = TestApp::start().await;
    app.project("p1", &[]).await;
    account(&app, "root", Role::Global, &[]).await;
    let failed = app.store.keys().project("p1").failed();
    for item in ["f1", "f2", "f3"] {
        let _: () = app
            .store
            .client()
            .hset(&failed, (item, r#"{"reason":"max attempts","t":1}"#))
            .await
            .unwrap();
    }
    // Put there behind the tracker's back: the count of known items is set from the states.
    app.store.recount("p1").await.unwrap();
    let mut p = Panel::logged_in(&app, "root").await;
    let list = json(&p.get("/admin/api/p1/failed").await);
    assert_eq!(list["total"], 3);
    assert_eq!(list["items"][0]["reason"], "max attempts");
    let requeue =
        serde_json::json!({"action": "requeue", "items": ["f1", "nope"], "dry_run": true});
    assert_eq!(
        json(&p.post("/admin/api/p1/failed", requeue.clone()).await)["count"],
        1
    );
    let mut requeue = requeue;
    requeue["dry_run"] = false.into();
    assert_eq!(
        json(&p.post("/admin/api/p1/failed", requeue).await)["count"],
        1
    );
    assert_eq!(
        json(
            &p.post(
                "/admin/api/p1/failed",
                serde_json::json!({"action": "drop"})
            )
            .await
        )["count"],
        2
    );
    let counts = app.counts("p1").await;
    assert_eq!((counts.todo, counts.failed), (1, 0));
    app.assert_invariant("p1").await;
}

#[tokio::test]
async fn settings_are_validated_and_the_description_sanitised() {
    let app = TestApp::start().await;
    app.project("p1", &[]).await;
    account(&app, "root", Role::Global, &[]).await;
    let mut p = Panel::logged_in(&app, "root").await;
    let mut s = json(&p.get("/admin/api/p1/settings").await);
    s["description"] = r#"<p>Hi <b>all</b></p><script>alert(1)</script><a href="javascript:x()" onclick="y()">l</a>"#.into();
    s["settings"]["rate"] = 5.0.into();
    s["settings"]["title"] = "New title".into();
    let r = p
        .send(reqwest::Method::PUT, "/admin/api/p1/settings", s.clone())
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let saved = json(&p.get("/admin/api/p1/settings").await);
    let d = saved["description"].as_str().unwrap();
    assert!(d.contains("<b>all</b>"), "{d}");
    assert!(
        !d.contains("script") && !d.contains("onclick") && !d.contains("javascript"),
        "{d}"
    );
    assert_eq!(
        app.store.project("p1").await.unwrap().unwrap().title,
        "New title"
    );

    s["settings"]["state"] = "sleeping".into();
    let r = p
        .send(reqwest::Method::PUT, "/admin/api/p1/settings", s)
        .await;
    assert_eq!(r.status, 400, "{}", r.body);
    assert!(r.body.contains("state"));

    let key = json(
        &p.post("/admin/api/p1/backfeed-key", serde_json::json!({}))
            .await,
    );
    let key = key["backfeed_key"].as_str().unwrap().to_string();
    assert_eq!(
        app.store.project("p1").await.unwrap().unwrap().backfeed_key,
        key
    );
    let t = p
        .post(
            "/admin/api/p1/targets",
            serde_json::json!({"target": "rsync://h/m/", "action": "activate"}),
        )
        .await;
    assert_eq!(json(&t), serde_json::json!([["rsync://h/m/", true]]));
    let audit = json(&p.get("/admin/api/audit?action=settings").await);
    assert_eq!(audit[0]["detail"], "rate,title", "{audit}");
}
