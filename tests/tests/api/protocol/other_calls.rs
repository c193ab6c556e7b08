//! PROTOCOL.md's calls other than the claim and the done: upload targets, `/now`, charts and
//! update status, rescue-me, stats, the command line's blocks and targets, the old tracker's fields.

use super::*;

#[tokio::test]
async fn upload_targets_substitute_the_downloader() {
    let app = TestApp::start().await;
    app.project("p", &[]).await;
    let body = r#"{"downloader":"alice","item_name":"x","version":"1"}"#;
    assert_eq!(app.post("/p/upload", body).await.body, "{}");
    app.store
        .projects()
        .set_upload_target("p", "rsync://h/m/:downloader", true)
        .await
        .unwrap();
    app.store
        .projects()
        .set_upload_target("p", "rsync://off/m/", false)
        .await
        .unwrap();
    let v: serde_json::Value =
        serde_json::from_str(&app.post("/p/upload", body).await.body).unwrap();
    assert_eq!(v["upload_target"], "rsync://h/m/alice/");
    let r = app
        .post(
            "/p/uploaded",
            r#"{"uploader":"alice","item":"x","server":"h"}"#,
        )
        .await;
    assert_eq!((r.status, r.body.as_str()), (200, "OK\n"));
    assert_eq!(
        app.post("/p/upload", r#"{"downloader":"a"}"#).await.status,
        400
    );
}

#[tokio::test]
async fn now_charts_and_update_status() {
    let app = TestApp::start().await;
    app.project("p", &["a"]).await;
    let now = app.get("/now").await;
    let (secs, millis) = now.body.split_once('.').unwrap();
    assert!(secs.parse::<u64>().unwrap() > 1_600_000_000 && millis.len() == 3);
    assert_eq!(now.headers["cache-control"], "no-store");
    app.done("p", "alice", &app.claim("p", "alice").await, 700)
        .await;
    let charts: serde_json::Value =
        serde_json::from_str(&app.get("/p/charts.json").await.body).unwrap();
    assert_eq!(
        charts["items_done_chart"]
            .as_array()
            .unwrap()
            .last()
            .unwrap()[1],
        1
    );
    assert_eq!(
        charts["bytes_done_chart"]
            .as_array()
            .unwrap()
            .last()
            .unwrap()[1],
        700
    );
    assert_eq!(charts["downloader_chart"]["alice"][0][1], 700);
    let status: serde_json::Value =
        serde_json::from_str(&app.get("/p/update-status.json").await.body).unwrap();
    assert_eq!(status["downloader_version"]["alice"], "20240101.01");
}

#[tokio::test]
async fn rescue_form_queues_matching_items_only() {
    let app = TestApp::start().await;
    app.project("p", &[]).await;
    assert_eq!(
        app.get("/p/rescue-me").await.status,
        404,
        "closed without an item pattern"
    );
    app.settings("p", |s| s.item_pattern = "^user:[a-z]+$".into())
        .await;
    assert_eq!(app.get("/p/rescue-me").await.status, 200);
    let r = app
        .http
        .post(app.url("/p/rescue-me"))
        .form(&[("items", "user:ann\nuser:bob\nnot valid\nuser:ann\n")])
        .send()
        .await
        .unwrap();
    assert!(r.text().await.unwrap().contains("2 new items queued"));
    app.assert_invariant("p").await;
}

/// Rescue-me posts are limited per IP (10 a minute, as many at once; an IPv6 /64 counts as
/// one): past it 429 with `Retry-After` and nothing queued, while other addresses go on. A
/// post of more than 1000 items is 413.
#[tokio::test]
async fn rescue_posts_are_limited_per_ip() {
    let app = TestApp::start_with(|app| app.trust_proxy = true).await;
    app.project("p", &[]).await;
    app.settings("p", |s| s.item_pattern = "^user:[a-z0-9]+$".into())
        .await;
    let post = |ip: &'static str, items: String| {
        let app = &app;
        async move {
            app.send(
                app.http
                    .post(app.url("/p/rescue-me"))
                    .header("x-forwarded-for", format!("198.51.100.9, {ip}"))
                    .form(&[("items", items)]),
            )
            .await
        }
    };
    for i in 0..10 {
        let r = post("192.0.2.1", format!("user:a{i}")).await;
        assert_eq!(r.status, 200, "post {i}: {}", r.body);
        assert!(r.body.contains("1 new items queued"), "{}", r.body);
    }
    let r = post("192.0.2.1", "user:late".into()).await;
    assert_eq!(r.status, 429, "{}", r.body);
    let retry: u64 = r.headers["retry-after"].to_str().unwrap().parse().unwrap();
    assert!((1..=6).contains(&retry), "Retry-After: {retry}");
    assert_eq!(
        app.store
            .queue()
            .item_status("p", "user:late")
            .await
            .unwrap()
            .state,
        None
    );
    // Another address is not held back.
    let r = post("192.0.2.2", "user:other".into()).await;
    assert_eq!(r.status, 200, "{}", r.body);
    // An IPv6 /64 is one limit, whichever of its addresses posts.
    for i in 0..10 {
        let r = post("2001:db8:1:2::1", format!("user:v{i}")).await;
        assert_eq!(r.status, 200, "{}", r.body);
    }
    assert_eq!(
        post("2001:db8:1:2::ff", "user:v10".into()).await.status,
        429
    );
    assert_eq!(post("2001:db8:1:3::1", "user:v11".into()).await.status, 200);
    // At most 1000 items a post, refused whole.
    let many: String = (0..1001).map(|i| format!("user:m{i}\n")).collect();
    let r = post("192.0.2.3", many).await;
    assert_eq!(r.status, 413, "{}", r.body);
    assert!(r.body.contains("At most 1000 items"), "{}", r.body);
    assert_eq!(app.counts("p").await.todo, 10 + 1 + 10 + 1);
    app.assert_invariant("p").await;
}

#[tokio::test]
async fn tracker_stats_compute_serve_rates_and_round_trip() {
    let app = TestApp::start().await;
    app.project("p", &["a"]).await;
    let item = app.claim("p", "alice").await;
    assert_eq!(app.post("/p/request", req("alice", "")).await.status, 404);
    app.done("p", "alice", &item, 10).await;
    let v: serde_json::Value =
        serde_json::from_str(&app.get("/p/tracker-stats.json?minutes=5").await.body).unwrap();
    assert_eq!(v["requests"], 2);
    assert_eq!(v["item_request_serve_rate"], 0.5);
    assert_eq!(v["reclaim_serve_rate"], 0.0);
    assert!(v["mean_round_trip_s"].as_f64().unwrap() >= 0.0);
    assert_eq!(v["items_done"], 1);
    assert_eq!(v["unique_downloaders_30d"], 1);
    assert_eq!(v["items_per_minute"].as_array().unwrap().len(), 5);
}

#[tokio::test]
async fn cli_blocks_and_sets_upload_targets() {
    let app = TestApp::start().await;
    app.project("p", &["a"]).await;
    let cli = |args: &[&str]| {
        let run = app.cli(args, b"");
        assert!(run.ok, "{args:?}: {}", run.err);
        run.out
    };
    cli(&[
        "block",
        "dl",
        "alice",
        "--project",
        "p",
        "--reason",
        "bad data",
        "--hours",
        "2",
    ]);
    assert_eq!(app.post("/p/request", req("alice", "")).await.status, 403);
    let entry = &app
        .store
        .projects()
        .blocks(Some("p"), BlockKind::Downloader)
        .await
        .unwrap()["alice"];
    assert_eq!(
        (entry.reason.as_str(), entry.expires - entry.t),
        ("bad data", 2 * 3_600_000)
    );
    cli(&["unblock", "dl", "alice", "--project", "p"]);
    assert_eq!(app.post("/p/request", req("alice", "")).await.status, 200);
    assert!(cli(&["target", "p", "rsync://h/m/:downloader/"])
        .contains("active   rsync://h/m/:downloader/"));
    let v: serde_json::Value =
        serde_json::from_str(&app.post("/p/upload", r#"{"downloader":"bob"}"#).await.body).unwrap();
    assert_eq!(v["upload_target"], "rsync://h/m/bob/");
    assert!(cli(&["target", "p", "rsync://h/m/:downloader/", "--off"]).contains("inactive"));
    assert_eq!(
        app.post("/p/upload", r#"{"downloader":"bob"}"#).await.body,
        "{}"
    );
}

/// seesaw's UploadWithTracker sends the whole batch as `item_name`: 100 URLs of urls-grab with
/// their contexts, NUL-joined, JSON-escaped (`\u0000`, `\u001f`): well over the 16 KiB of a
/// claim. It gets its target like any other upload.
#[tokio::test]
async fn an_upload_of_a_batch_of_a_hundred_urls_with_contexts_gets_its_target() {
    let app = TestApp::start().await;
    app.project("p", &[]).await;
    app.store
        .projects()
        .set_upload_target("p", "rsync://h/m/:downloader", true)
        .await
        .unwrap();
    let batch: Vec<String> = (0..100)
        .map(|i| {
            let url = format!(
                "https://example.org/some/long/path/{i}?q={}",
                "v".repeat(150)
            );
            format!("{url}\x1f{url}\x1fparent=https%3A%2F%2Fexample.org%2F&depth=2")
        })
        .collect();
    let body = serde_json::json!({"downloader": "alice", "item_name": batch.join("\0"),
        "version": "20260327.01"})
    .to_string();
    assert!(body.len() > 32 * 1024, "{} bytes", body.len());
    let r = app.post("/p/upload", body).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let v: serde_json::Value = serde_json::from_str(&r.body).unwrap();
    assert_eq!(v["upload_target"], "rsync://h/m/alice/");
}

/// The old tracker's `/uploaded` took `user` for `item`; its `update-status.json` had a message;
/// tools built on its `stats.json` read `total_items_todo` and `counts.rcr`.
#[tokio::test]
async fn the_old_trackers_fields_are_served() {
    let app = TestApp::start().await;
    app.project("p", &["a", "b"]).await;
    let r = app
        .post(
            "/p/uploaded",
            r#"{"uploader": "alice", "user": "a", "server": "s1"}"#.to_string(),
        )
        .await;
    assert_eq!((r.status, r.body.as_str()), (200, "OK\n"), "{}", r.body);
    let item = app.claim("p", "alice").await;
    let _ = app.done("p", "alice", &item, 5).await;
    app.settings("p", |s| s.min_version = "20260101.01".into())
        .await;
    let r = app.get("/p/update-status.json").await;
    let v: serde_json::Value = serde_json::from_str(&r.body).unwrap();
    assert_eq!(v["current_version"], "20260101.01", "{v}");
    assert!(
        v["current_version_update_message"]
            .as_str()
            .unwrap()
            .contains("20260101.01"),
        "{v}"
    );
    let r = app.get("/p/stats.json").await;
    let v: serde_json::Value = serde_json::from_str(&r.body).unwrap();
    assert_eq!(v["total_items_todo"], 1, "{v}");
    for rate in ["rcr", "rcsr", "irsr", "ifir", "ifar"] {
        let x = v["counts"][rate].as_f64().unwrap_or(-1.0);
        assert!((0.0..=1.0).contains(&x), "{rate}: {v}");
    }
    assert_eq!(v["counts"]["irsr"], 1.0, "the one claim was served: {v}");
}
