//! `/admin/api/SLUG/items`, `/move`, `/clear`: adding items (session or API token), moving and
//! clearing queues, with dry runs.

use server::store::Role;
use tests::panel::{account, json, Panel};
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
