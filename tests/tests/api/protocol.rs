//! Every status of PROTOCOL.md's request call, in its order of precedence, and the other calls.

use server::store::{BlockEntry, BlockKind};
use tests::{TestApp, ADMIN_TOKEN};

mod other_calls;

fn req(downloader: &str, version: &str) -> String {
    format!(r#"{{"downloader":"{downloader}","api_version":"2","version":"{version}"}}"#)
}

#[tokio::test]
async fn request_statuses_follow_protocol_precedence() {
    let app = TestApp::start().await;
    app.project("p", &["a", "b"]).await;
    app.settings("p", |s| {
        s.min_version = "20240101.02".into();
        s.state = "paused".into();
        s.rate = 0.001;
        s.burst = 1.0;
    })
    .await;
    let block = BlockEntry {
        reason: "test".into(),
        by: "test".into(),
        ..Default::default()
    };
    app.store
        .projects()
        .block(Some("p"), BlockKind::Downloader, "blocked-user", &block)
        .await
        .unwrap();

    // 455 beats everything: old or missing version, even with a bad name.
    assert_eq!(app.post("/p/request", req("x", "3")).await.status, 455);
    assert_eq!(
        app.post("/p/request", r#"{"downloader":"blocked-user"}"#)
            .await
            .status,
        455
    );
    // 400: bad name, with a good version.
    assert_eq!(
        app.post("/p/request", req("x", "20240101.10")).await.status,
        400
    );
    // 403: blocked, although the project is paused.
    assert_eq!(
        app.post("/p/request", req("blocked-user", "20240101.02"))
            .await
            .status,
        403
    );
    // 404: paused.
    assert_eq!(
        app.post("/p/request", req("alice", "20240101.02"))
            .await
            .status,
        404
    );
    app.settings("p", |s| s.state = "active".into()).await;
    // 200, which spends the only token...
    let ok = app.post("/p/request", req("alice", "20240101.02")).await;
    assert_eq!(ok.status, 200, "{}", ok.body);
    // ...so 429 with Retry-After comes before "nothing to give".
    let limited = app.post("/p/request", req("alice", "20240101.02")).await;
    assert_eq!(limited.status, 429);
    assert!(
        limited.headers["retry-after"]
            .to_str()
            .unwrap()
            .parse::<u64>()
            .unwrap()
            >= 1
    );
    app.settings("p", |s| s.rate = 0.0).await;
    app.post("/p/request", req("alice", "20240101.02")).await;
    // 404: nothing left.
    assert_eq!(
        app.post("/p/request", req("alice", "20240101.02"))
            .await
            .status,
        404
    );
    app.assert_invariant("p").await;
}

#[tokio::test]
async fn per_downloader_budget_is_404_and_release_restores_it() {
    let app = TestApp::start().await;
    app.project("p", &["a", "b", "c"]).await;
    app.settings("p", |s| s.dl_max_claims = 1).await;
    let item = app.claim("p", "alice").await;
    assert_eq!(app.post("/p/request", req("alice", "")).await.status, 404);
    assert_eq!(
        app.post(
            "/p/release",
            format!(r#"{{"item":"{item}","downloader":"bob"}}"#)
        )
        .await
        .status,
        403
    );
    let r = app
        .post(
            "/p/release",
            format!(r#"{{"item":"{item}","downloader":"alice"}}"#),
        )
        .await;
    assert_eq!((r.status, r.body.as_str()), (200, "Released OK.\n"));
    assert_eq!(
        app.post(
            "/p/release",
            format!(r#"{{"item":"{item}","downloader":"alice"}}"#)
        )
        .await
        .status,
        404
    );
    let again = app.claim("p", "alice").await;
    let admin = [("authorization", &*format!("Bearer {ADMIN_TOKEN}"))];
    let r = app
        .post_with("/p/release", &admin, format!(r#"{{"item":"{again}"}}"#))
        .await;
    assert_eq!(r.status, 200, "an admin releases anyone's claim");
    app.assert_invariant("p").await;
}

#[tokio::test]
async fn multi_claims_a_batch_and_done_accepts_a_subset() {
    let app = TestApp::start().await;
    app.project("p", &["a", "b", "c", "d"]).await;
    let r = app.post("/p/multi=3//request", req("alice", "")).await;
    assert_eq!(r.status, 200);
    let v: serde_json::Value = serde_json::from_str(&r.body).unwrap();
    let items: Vec<&str> = v["item_name"].as_str().unwrap().split('\0').collect();
    assert_eq!(items.len(), 3);
    let subset = items[..2].join("\u{0}");
    let done = serde_json::json!({"downloader": "alice", "item": subset, "bytes": {"data": 10}});
    assert_eq!(app.post("/p/done", done.to_string()).await.body, "OK\n");
    let stats: serde_json::Value =
        serde_json::from_str(&app.get("/p/stats.json").await.body).unwrap();
    assert_eq!(
        serde_json::json!({"todo": stats["counts"]["todo"], "out": stats["counts"]["out"], "done": stats["counts"]["done"]}),
        serde_json::json!({"todo": 1, "out": 1, "done": 2})
    );
    assert_eq!(
        app.post("/p/multi=0//request", req("alice", ""))
            .await
            .status,
        404
    );
    assert_eq!(
        app.post("/p/multi=x//request", req("alice", ""))
            .await
            .status,
        404
    );
    app.assert_invariant("p").await;
}

#[tokio::test]
async fn done_plus_request_hands_out_the_next_item() {
    let app = TestApp::start().await;
    app.project("p", &["a", "b"]).await;
    let first = app.claim("p", "alice").await;
    let body = serde_json::json!({"downloader": "alice", "item": first, "bytes": {"data": 1}, "api_version": "2"});
    let r = app.post("/p/done+request", body.to_string()).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let next: serde_json::Value = serde_json::from_str(&r.body).unwrap();
    assert_ne!(next["item_name"], first.as_str());
    app.assert_invariant("p").await;
}

#[tokio::test]
async fn item_json_tells_where_an_item_is_and_history_is_for_admins() {
    let app = TestApp::start().await;
    app.project("p", &["only"]).await;
    let status = |app: &TestApp| {
        let url = app.url("/p/items/only.json");
        let http = app.http.clone();
        async move {
            http.get(url)
                .send()
                .await
                .unwrap()
                .json::<serde_json::Value>()
                .await
                .unwrap()
        }
    };
    assert_eq!(status(&app).await, serde_json::json!({"status": "todo"}));
    app.claim("p", "alice").await;
    assert_eq!(
        status(&app).await,
        serde_json::json!({"status": "out", "downloader": "alice"})
    );
    app.done("p", "alice", "only", 5).await;
    assert_eq!(status(&app).await["status"], "done");
    assert_eq!(
        app.get("/p/items/nothing.json").await.body,
        r#"{"status":null}"#
    );
    assert_eq!(app.get("/p/items/only.json?history=1").await.status, 403);
    let r = app
        .http
        .get(app.url("/p/items/only.json?history=1"))
        .bearer_auth(ADMIN_TOKEN)
        .send()
        .await
        .unwrap();
    let v: serde_json::Value = r.json().await.unwrap();
    let events: Vec<&str> = v["history"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["e"].as_str().unwrap())
        .collect();
    assert_eq!(events, ["claimed", "done"]);
}

#[tokio::test]
async fn mismatched_byte_domains_block_the_ip_and_release_the_item() {
    let app = TestApp::start().await;
    app.project("p", &["a", "b"]).await;
    let item = app.claim("p", "alice").await;
    let body = serde_json::json!({"downloader": "alice", "item": item, "bytes": {"warc": 5}});
    let r = app.post("/p/done", body.to_string()).await;
    assert_eq!(r.status, 403, "{}", r.body);
    let stats: serde_json::Value =
        serde_json::from_str(&app.get("/p/stats.json").await.body).unwrap();
    assert_eq!(
        serde_json::json!({"todo": stats["counts"]["todo"], "out": stats["counts"]["out"], "done": stats["counts"]["done"]}),
        serde_json::json!({"todo": 2, "out": 0, "done": 0})
    );
    assert_eq!(
        app.post("/p/request", req("alice", "")).await.status,
        403,
        "the IP is blocked"
    );
    let blocks = app
        .store
        .projects()
        .blocks(Some("p"), BlockKind::Ip)
        .await
        .unwrap();
    let entry = &blocks["127.0.0.1"];
    assert_eq!(entry.by, "auto");
    assert!(entry.expires > entry.t, "automatic blocks expire");
    app.assert_invariant("p").await;
}

#[tokio::test]
async fn global_blocks_apply_unless_the_project_ignores_them() {
    let app = TestApp::start().await;
    app.project("p", &["a"]).await;
    app.store
        .projects()
        .block(None, BlockKind::Ip, "127.0.0.1", &BlockEntry::default())
        .await
        .unwrap();
    assert_eq!(app.post("/p/request", req("alice", "")).await.status, 403);
    app.settings("p", |s| s.ignore_global_blocks = true).await;
    assert_eq!(app.post("/p/request", req("alice", "")).await.status, 200);
}
