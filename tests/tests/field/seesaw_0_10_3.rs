//! seesaw 0.10.3 (PyPI's newest, of 2019; ArchiveTeam/seesaw-kit `seesaw/tracker.py` at
//! 699b0d215768c2208b5b48844c9f0f75bd6a1cbc), still run by grab scripts built before 2026:
//! `{"downloader", "api_version": "2", "version"}` to the tracker URL as given, so
//! `.../SLUG/multi=N/` + `/request` is `multi=N//request`; every key of the answer is copied
//! into the item.

use super::client::{accepted_claim, accepted_done, seesaw_post};
use tests::TestApp;

fn body(who: &str) -> String {
    serde_json::json!({"downloader": who, "api_version": "2", "version": "20240101.01"}).to_string()
}

async fn post(app: &TestApp, path: &str, body: String) -> tests::Reply {
    seesaw_post(app, "0.10.3", path, body).await
}

#[tokio::test]
async fn a_multi_claim_through_the_double_slash_then_its_done() {
    let app = TestApp::start().await;
    let items: Vec<String> = (0..10).map(|i| format!("u{i}")).collect();
    let refs: Vec<&str> = items.iter().map(String::as_str).collect();
    app.project("p", &refs).await;
    // A project's extra fields ride along; keys naming the pipeline's internals never do.
    app.settings("p", |s| {
        s.extra.insert("custom_key".into(), "v".into());
        s.extra.insert("item_dir".into(), "/tmp/evil".into());
    })
    .await;
    let r = post(&app, "/p/multi=4//request", body("alice")).await;
    let claim = accepted_claim(&r).unwrap_or_else(|| panic!("{} {}", r.status, r.body));
    let name = claim["item_name"].as_str().unwrap();
    let names: Vec<&str> = name.split('\0').collect();
    assert_eq!(names.len(), 4);
    assert_eq!(claim["custom_key"], "v");
    assert!(!claim.contains_key("item_dir"), "{claim:?}");
    // `items` and `queues` are copied into 0.10.3's item too: harmless extra keys.
    assert_eq!(claim["items"].as_array().unwrap().len(), 4);
    let done = serde_json::json!({"downloader": "alice", "version": "20240101.01",
        "item": name, "bytes": {"data": 5}});
    assert!(accepted_done(
        &post(&app, "/p/done", done.to_string()).await
    ));
    app.assert_invariant("p").await;
}

#[tokio::test]
async fn only_an_api_version_other_than_2_asks_for_the_plain_text_answer() {
    // universal-tracker's first API answered the bare name; no seesaw asks for it.
    let app = TestApp::start().await;
    app.project("p", &["only", "other"]).await;
    let r = post(
        &app,
        "/p/request",
        r#"{"downloader":"alice","api_version":"1"}"#.into(),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(["only", "other"].contains(&r.body.as_str()), "{}", r.body);
    let r = post(&app, "/p/request", body("alice")).await;
    assert!(accepted_claim(&r).is_some(), "{}", r.body);
}

#[tokio::test]
async fn every_refusal_is_a_status_seesaw_retries_with_its_reason() {
    // 455, 404 and 429 each have seesaw's message (`TrackerRequest.handle_response`); none is
    // a 200 it would take for an item.
    let app = TestApp::start().await;
    app.project("p", &["a"]).await;
    app.settings("p", |s| s.min_version = "20250101.01".into())
        .await;
    let r = post(&app, "/p/request", body("alice")).await;
    assert_eq!(r.status, 455, "{}", r.body);
    app.settings("p", |s| s.min_version = String::new()).await;
    assert!(accepted_claim(&post(&app, "/p/request", body("alice")).await).is_some());
    let r = post(&app, "/p/request", body("alice")).await;
    assert_eq!(r.status, 404, "nothing left: {}", r.body);
}
