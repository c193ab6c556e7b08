//! Today's seesaw-kit, as the Warrior VM and the grab images install it (seesaw-kit at
//! 700fadd7, pinned by ArchiveTeam/grab-base-df `requirements.txt` at
//! 3889737774a66966f7ad7a035a39d35f0ed6bea4). Its calls are those its own tests state:
//! ArchiveTeam/seesaw-kit `tests/tracker_test.py` at 4729e84c90d8812ff7c474d137fd625a242bcfb6.
//! A grab script's tracker URL is `https://HOST/SLUG/multi=N/` (ArchiveTeam/urls-grab
//! `pipeline.py` at 343d732bc3fedb1361342c053dd1ed746dd1f6dd; youtube-grab's N is 1, with an
//! `item_filter`: ArchiveTeam/youtube-grab `pipeline.py` at
//! 6ff926964e06db95b677574d4fab16a9928a854e).

use super::client::{accepted_claim, accepted_done, accepted_release, filter_input, seesaw_post};
use tests::{TestApp, ADMIN_TOKEN};

/// `GetItemFromTracker.data`: exactly `{"downloader", "version"}`, no `api_version`
/// (`test_sends_the_downloader_and_version`).
fn request_body(who: &str) -> String {
    serde_json::json!({"downloader": who, "version": "20260327.01"}).to_string()
}

async fn post(app: &TestApp, path: &str, body: String) -> tests::Reply {
    seesaw_post(app, "0.10.4", path, body).await
}

/// The 40-item project of the issue.
async fn forty(app: &TestApp) -> Vec<String> {
    let items: Vec<String> = (0..40).map(|i| format!("item-{i:02}")).collect();
    let refs: Vec<&str> = items.iter().map(String::as_str).collect();
    app.project("p", &refs).await;
    items
}

async fn state_of(app: &TestApp, item: &str) -> Option<String> {
    app.store
        .queue()
        .item_status("p", item)
        .await
        .unwrap()
        .state
}

#[tokio::test]
async fn a_claim_through_multi_n_slash_request_without_api_version_gets_json_with_items_and_queues()
{
    // `test_strips_a_trailing_slash_from_the_url`: `.../p/multi=5/` + `/request`.
    let app = TestApp::start().await;
    forty(&app).await;
    let r = post(&app, "/p/multi=5/request", request_body("alice")).await;
    let claim = accepted_claim(&r).unwrap_or_else(|| panic!("{} {}", r.status, r.body));
    let pairs = filter_input(&claim);
    assert_eq!(pairs.len(), 5);
    let names: Vec<&str> = pairs.iter().map(|(i, _)| i.as_str()).collect();
    assert_eq!(
        claim["item_name"],
        names.join("\0"),
        "NUL-joined, as 0.10.3"
    );
    assert!(pairs.iter().all(|(_, q)| q == "todo"), "{pairs:?}");
    for (item, _) in &pairs {
        assert_eq!(state_of(&app, item).await.as_deref(), Some("out"));
    }

    // One item, the plain URL: the same shape.
    let r = post(&app, "/p/request", request_body("alice")).await;
    let claim = accepted_claim(&r).unwrap_or_else(|| panic!("{} {}", r.status, r.body));
    assert_eq!(filter_input(&claim).len(), 1);
    assert!(!r.body.contains("api_version"));
}

#[tokio::test]
async fn the_item_filter_sees_each_item_with_the_queue_it_came_from() {
    // `test_an_item_filter_sees_the_items_and_queues`: `[{"item","queue"}, ...]`.
    let app = TestApp::start().await;
    app.project("p", &["main-1"]).await;
    let second: Vec<String> = vec!["second-1".into(), "second-2".into()];
    app.store
        .queue()
        .add_items("p", "todo:secondary", &second)
        .await
        .unwrap();
    let backfed: Vec<String> = vec!["fed-1".into()];
    app.store
        .queue()
        .add_items("p", "todo:backfeed", &backfed)
        .await
        .unwrap();
    let r = post(&app, "/p/multi=10/request", request_body("alice")).await;
    let claim = accepted_claim(&r).unwrap_or_else(|| panic!("{} {}", r.status, r.body));
    let mut pairs = filter_input(&claim);
    pairs.sort();
    assert_eq!(
        pairs,
        [
            ("fed-1", "todo:backfeed"),
            ("main-1", "todo"),
            ("second-1", "todo:secondary"),
            ("second-2", "todo:secondary"),
        ]
        .map(|(i, q)| (i.to_string(), q.to_string()))
    );
}

#[tokio::test]
async fn rejected_items_come_back_as_a_list_and_the_answer_is_exactly_the_items_released() {
    // `test_rejected_items_are_released_and_the_rest_accepted`, and `release` on the project
    // root with the `multi=N` part dropped (`test_the_release_url_drops_the_multi_suffix`).
    let app = TestApp::start().await;
    forty(&app).await;
    let r = post(&app, "/p/multi=5/request", request_body("alice")).await;
    let claim = accepted_claim(&r).unwrap();
    let pairs = filter_input(&claim);
    let rejected: Vec<String> = pairs[..2].iter().map(|(i, _)| i.clone()).collect();
    let kept: Vec<String> = pairs[2..].iter().map(|(i, _)| i.clone()).collect();
    let body =
        serde_json::json!({"downloader": "alice", "version": "20260327.01", "items": rejected});
    let r = post(&app, "/p/release", body.to_string()).await;
    let released = accepted_release(&r).unwrap_or_else(|| panic!("{} {}", r.status, r.body));
    assert_eq!(released, rejected);
    for item in &rejected {
        assert_eq!(state_of(&app, item).await.as_deref(), Some("todo"));
    }
    for item in &kept {
        assert_eq!(state_of(&app, item).await.as_deref(), Some("out"));
    }
    // What is kept is reported done, as the grab script then does.
    let done = serde_json::json!({"downloader": "alice", "version": "20260327.01",
        "item": kept.join("\0"), "bytes": {"data": 10}});
    assert!(accepted_done(
        &post(&app, "/p/done", done.to_string()).await
    ));
    app.assert_invariant("p").await;
}

#[tokio::test]
async fn a_list_release_gives_back_only_what_the_caller_holds() {
    let app = TestApp::start().await;
    forty(&app).await;
    let alice = filter_input(
        &accepted_claim(&post(&app, "/p/multi=3/request", request_body("alice")).await).unwrap(),
    );
    let bob = filter_input(
        &accepted_claim(&post(&app, "/p/multi=2/request", request_body("bobby")).await).unwrap(),
    );
    // bob names his own, alice's, one nobody holds and one twice.
    let mut named: Vec<String> = bob.iter().map(|(i, _)| i.clone()).collect();
    named.push(alice[0].0.clone());
    named.push("never-queued".into());
    named.push(bob[0].0.clone());
    let body = serde_json::json!({"downloader": "bobby", "version": "1", "items": named});
    let r = post(&app, "/p/release", body.to_string()).await;
    let released = accepted_release(&r).unwrap_or_else(|| panic!("{} {}", r.status, r.body));
    let bobs: Vec<String> = bob.iter().map(|(i, _)| i.clone()).collect();
    assert_eq!(released, bobs, "his own, once each, in the order named");
    assert_eq!(state_of(&app, &alice[0].0).await.as_deref(), Some("out"));
    // Nothing of his left: the answer is an empty list, still exactly `{"items": []}`.
    let r = post(&app, "/p/release", body.to_string()).await;
    assert_eq!(accepted_release(&r), Some(vec![]));
    // The admin token gives back anyone's.
    let body = serde_json::json!({"downloader": "", "items": [alice[0].0]});
    let r = app
        .post_with(
            "/p/release",
            &[("authorization", &format!("Bearer {ADMIN_TOKEN}"))],
            body.to_string(),
        )
        .await;
    assert_eq!(accepted_release(&r), Some(vec![alice[0].0.clone()]));
    app.assert_invariant("p").await;
}

#[tokio::test]
async fn a_partial_done_leaves_the_stripped_items_claimed() {
    // urls-grab strips aborted URLs from the batch before `PrepareStatsForTracker`
    // (ArchiveTeam/urls-grab `pipeline.py` `SetBadUrls`, at 343d732b).
    let app = TestApp::start().await;
    forty(&app).await;
    let pairs = filter_input(
        &accepted_claim(&post(&app, "/p/multi=5/request", request_body("alice")).await).unwrap(),
    );
    let names: Vec<String> = pairs.into_iter().map(|(i, _)| i).collect();
    let done = serde_json::json!({"downloader": "alice", "version": "20260327.01",
        "item": names[..3].join("\0"), "bytes": {"data": 1234},
        "id": {"pipeline_hash": "abc", "lua_hash": "def", "python_version": "3.9.2"}});
    assert!(accepted_done(
        &post(&app, "/p/done", done.to_string()).await
    ));
    for item in &names[..3] {
        assert_eq!(state_of(&app, item).await.as_deref(), Some("done"));
    }
    for item in &names[3..] {
        assert_eq!(state_of(&app, item).await.as_deref(), Some("out"), "{item}");
    }
    app.assert_invariant("p").await;
}

#[tokio::test]
async fn every_form_of_the_claim_url_claims_and_done_plus_request_too() {
    let app = TestApp::start().await;
    forty(&app).await;
    for (path, n) in [
        ("/p/request", 1),
        ("/p/multi=3/request", 3),
        ("/p/multi=3//request", 3),
    ] {
        let r = post(&app, path, request_body("alice")).await;
        let claim = accepted_claim(&r).unwrap_or_else(|| panic!("{path}: {} {}", r.status, r.body));
        assert_eq!(filter_input(&claim).len(), n, "{path}");
    }
    // done+request in each form: the done recorded, then a claim of the form's size.
    let held = filter_input(
        &accepted_claim(&post(&app, "/p/multi=3/request", request_body("carol")).await).unwrap(),
    );
    for (i, (path, n)) in [
        ("/p/done+request", 1),
        ("/p/multi=2/done+request", 2),
        ("/p/multi=2//done+request", 2),
    ]
    .into_iter()
    .enumerate()
    {
        let done = serde_json::json!({"downloader": "carol", "version": "1",
            "item": held[i].0, "bytes": {"data": 1}});
        let r = post(&app, path, done.to_string()).await;
        let claim = accepted_claim(&r).unwrap_or_else(|| panic!("{path}: {} {}", r.status, r.body));
        assert_eq!(filter_input(&claim).len(), n, "{path}");
        assert_eq!(state_of(&app, &held[i].0).await.as_deref(), Some("done"));
    }
    app.assert_invariant("p").await;
}

#[tokio::test]
async fn an_unknown_path_under_a_project_is_a_plain_404_with_a_reason() {
    // seesaw reads any 404 as "no items available" and retries forever: the reason must be
    // there for whoever reads its log, and never the HTML page.
    let app = TestApp::start().await;
    forty(&app).await;
    for path in [
        "/p/multi=5/requets",
        "/p/multi=0/request",
        "/p/multi=abc/request",
        "/p/reqest",
        "/p/a/b/c",
        "/nope/anything",
    ] {
        let r = post(&app, path, request_body("alice")).await;
        assert_eq!(r.status, 404, "{path}: {}", r.body);
        let ct = r.headers["content-type"].to_str().unwrap();
        assert!(ct.starts_with("text/plain"), "{path}: {ct}");
        assert!(!r.body.contains("<html"), "{path}: {}", r.body);
        assert!(r.body.len() > 10, "{path}: a reason: {}", r.body);
    }
    let r = app.get("/p/no-such-page").await;
    assert_eq!(r.status, 404);
    assert!(!r.body.contains("<html"), "{}", r.body);
    assert_eq!(app.counts("p").await.out, 0, "nothing claimed");
}

#[tokio::test]
async fn a_bad_release_is_refused_with_a_reason_and_changes_nothing() {
    let app = TestApp::start().await;
    forty(&app).await;
    let held = filter_input(
        &accepted_claim(&post(&app, "/p/multi=2/request", request_body("alice")).await).unwrap(),
    );
    for body in [
        serde_json::json!({"downloader": "alice"}),
        serde_json::json!({"downloader": "alice", "item": held[0].0, "items": [held[1].0]}),
        serde_json::json!({"downloader": "alice", "items": "not a list"}),
        serde_json::json!({"downloader": "alice", "items": [""]}),
        serde_json::json!({"downloader": "alice", "items": ["x".repeat(5000)]}),
        serde_json::json!({"downloader": "alice", "items": vec!["x"; 1001]}),
        serde_json::json!({"downloader": "bad name", "items": [held[0].0]}),
    ] {
        let r = post(&app, "/p/release", body.to_string()).await;
        assert_eq!(r.status, 400, "{body}: {}", r.body);
        assert!(r.body.len() > 10, "a reason: {}", r.body);
    }
    for (item, _) in &held {
        assert_eq!(state_of(&app, item).await.as_deref(), Some("out"));
    }
}
