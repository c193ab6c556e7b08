//! The warrior API: request, done.

use tests::TestApp;

#[tokio::test]
async fn claim_done_then_stats_count_it() {
    let app = TestApp::start().await;
    app.project("p1", &["a", "b", "c"]).await;

    let item = app.claim("p1", "alice").await;
    assert!(["a", "b", "c"].contains(&item.as_str()));
    let r = app.done("p1", "alice", &item, 1234).await;
    assert_eq!((r.status, r.body.as_str()), (200, "OK\n"));

    let stats: serde_json::Value =
        serde_json::from_str(&app.get("/p1/stats.json").await.body).unwrap();
    assert_eq!(
        serde_json::json!({"todo": stats["counts"]["todo"], "out": stats["counts"]["out"], "done": stats["counts"]["done"]}),
        serde_json::json!({"todo": 2, "out": 0, "done": 1})
    );
    assert_eq!(stats["downloader_count"]["alice"], 1);
    assert_eq!(stats["downloader_bytes"]["alice"], 1234);
    assert_eq!(stats["total_bytes"], 1234);
    assert_eq!(stats["total_items"], 3);
}

#[tokio::test]
async fn repeated_done_is_ok_and_counted_once() {
    let app = TestApp::start().await;
    app.project("p1", &["a"]).await;
    let item = app.claim("p1", "alice").await;
    assert_eq!(app.done("p1", "alice", &item, 10).await.status, 200);
    let again = app.done("p1", "alice", &item, 10).await;
    assert_eq!((again.status, again.body.as_str()), (200, "OK\n"));
    let stats: serde_json::Value =
        serde_json::from_str(&app.get("/p1/stats.json").await.body).unwrap();
    assert_eq!(stats["total_items_done"], 1);
    assert_eq!(stats["total_bytes"], 10);
}

#[tokio::test]
async fn text_claim_only_for_an_api_version_other_than_2() {
    // Today's seesaw sends no api_version and reads JSON (docs/PROTOCOL.md); only a request
    // naming another API gets the bare name.
    let app = TestApp::start().await;
    app.project("p1", &["only", "next"]).await;
    let r = app.post("/p1/request", r#"{"downloader":"alice"}"#).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let v: serde_json::Value = serde_json::from_str(&r.body).unwrap();
    assert_eq!(v["items"], serde_json::json!([v["item_name"]]));
    assert_eq!(v["queues"], serde_json::json!(["todo"]));
    let r = app
        .post("/p1/request", r#"{"downloader":"alice","api_version":"1"}"#)
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(["only", "next"].contains(&r.body.as_str()), "{}", r.body);
}

#[tokio::test]
async fn empty_queue_is_404() {
    let app = TestApp::start().await;
    app.project("p1", &["a"]).await;
    app.claim("p1", "alice").await;
    let r = app
        .post("/p1/request", r#"{"downloader":"alice","api_version":"2"}"#)
        .await;
    assert_eq!(r.status, 404, "{}", r.body);
    let r = app
        .post(
            "/nope/request",
            r#"{"downloader":"alice","api_version":"2"}"#,
        )
        .await;
    assert_eq!(r.status, 404, "{}", r.body);
}

#[tokio::test]
async fn bad_input_is_400_and_changes_nothing() {
    let app = TestApp::start().await;
    app.project("p1", &["a"]).await;
    let item = app.claim("p1", "alice").await;
    let before = app.get("/p1/stats.json").await.body;
    for (path, body) in [
        ("/p1/request", "{not json"),
        ("/p1/request", r#"{"downloader":"a"}"#),
        ("/p1/request", r#"{"downloader":"bad\nname"}"#),
        ("/p1/request", r#"{"downloader":42}"#),
        ("/p1/done", "{not json"),
        (
            "/p1/done",
            &format!(r#"{{"downloader":"alice","item":"{item}","bytes":{{"data":-5}}}}"#),
        ),
        (
            "/p1/done",
            &format!(r#"{{"downloader":"alice","item":"{item}","bytes":{{"data":"x"}}}}"#),
        ),
        (
            "/p1/done",
            &format!(r#"{{"downloader":"x","item":"{item}","bytes":{{"data":1}}}}"#),
        ),
        (
            "/p1/done",
            &format!(
                r#"{{"downloader":"alice","item":"{}","bytes":{{}}}}"#,
                "x".repeat(5000)
            ),
        ),
    ] {
        let r = app.post(path, body.to_string()).await;
        assert_eq!(r.status, 400, "{path} {body}: {}", r.body);
        assert!(!r.body.trim().is_empty(), "a 400 says why");
    }
    assert_eq!(app.get("/p1/stats.json").await.body, before);
}

#[tokio::test]
async fn done_of_an_unknown_item_is_404_and_changes_nothing() {
    let app = TestApp::start().await;
    app.project("p1", &["a"]).await;
    let item = app.claim("p1", "alice").await;
    let r = app
        .post(
            "/p1/done",
            format!(r#"{{"downloader":"alice","item":"{item}\u0000ghost","bytes":{{"data":1}}}}"#),
        )
        .await;
    assert_eq!(r.status, 404);
    assert!(r.body.contains("ghost"));
    let stats: serde_json::Value =
        serde_json::from_str(&app.get("/p1/stats.json").await.body).unwrap();
    assert_eq!(
        serde_json::json!({"todo": stats["counts"]["todo"], "out": stats["counts"]["out"], "done": stats["counts"]["done"]}),
        serde_json::json!({"todo": 0, "out": 1, "done": 0})
    );
}
