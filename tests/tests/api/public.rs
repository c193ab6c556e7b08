//! Public pages and JSON.

use tests::TestApp;

#[tokio::test]
async fn healthz_reports_the_redis_round_trip() {
    let app = TestApp::start().await;
    let r = app.get("/healthz").await;
    assert_eq!(r.status, 200);
    let v: serde_json::Value = serde_json::from_str(&r.body).unwrap();
    assert!(v["redis_rtt_ms"].as_f64().unwrap() >= 0.0);
}

#[tokio::test]
async fn leaderboard_page_is_rendered_with_counts_and_recent_items() {
    let app = TestApp::start().await;
    app.project("p1", &["alpha-item", "beta-item"]).await;
    let item = app.claim("p1", "alice").await;
    app.done("p1", "alice", &item, 2048).await;

    let r = app.get("/p1/").await;
    assert_eq!(r.status, 200);
    assert!(r.body.contains("Project p1"), "title");
    assert!(r.body.contains(&item), "recent completion");
    assert!(r.body.contains("alice"), "downloader row");
    assert!(r.body.contains("2.00 KiB"), "bytes formatted");

    let home = app.get("/").await;
    assert_eq!(home.status, 200);
    assert!(home.body.contains(r#"href="/p1/""#));
}

#[tokio::test]
async fn unknown_project_page_is_404() {
    let app = TestApp::start().await;
    assert_eq!(app.get("/nope/").await.status, 404);
    assert_eq!(app.get("/nope/stats.json").await.status, 404);
}

#[tokio::test]
async fn slug_without_slash_redirects_and_other_segments_are_files() {
    let app = TestApp::start().await;
    app.project("p1", &[]).await;
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let r = client.get(app.url("/p1")).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 308);
    assert_eq!(r.headers()["location"], "/p1/");
    let r = client
        .get(app.url("/no-such-file.svg"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 404);
}

#[tokio::test]
async fn healthz_is_503_when_redis_is_down() {
    let mut app = TestApp::start().await;
    if !app.kill_redis() {
        return; // a shared REDIS_URL is not ours to stop
    }
    let r = app.get("/healthz").await;
    assert_eq!(r.status, 503, "{}", r.body);
    assert!(r.body.contains("unavailable"));
}

#[tokio::test]
async fn project_list_reads_counts_without_downloader_rows() {
    let app = TestApp::start().await;
    app.project("p1", &["a", "b"]).await;
    app.done("p1", "alice", &app.claim("p1", "alice").await, 1)
        .await;
    let counts_only = app.store.leaderboard("p1", 0, 0).await.unwrap().unwrap();
    assert!(
        counts_only.downloaders.is_empty(),
        "0 means no rows, not all of them"
    );
    assert_eq!(counts_only.counts.done, 1);
    assert_eq!(
        app.store
            .leaderboard("p1", -1, 0)
            .await
            .unwrap()
            .unwrap()
            .downloaders
            .len(),
        1
    );
}
