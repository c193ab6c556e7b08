//! `/api/register.json`, `/api/update.json`, `/api/stats.json`: Warrior HQ's fleet, with the
//! bodies seesaw-kit's Warrior sends.

use fred::prelude::*;
use tests::TestApp;

/// `POST path` with a JSON `body`: status and parsed body (`null` when not JSON).
async fn post(app: &TestApp, path: &str, body: serde_json::Value) -> (u16, serde_json::Value) {
    let r = app.post(path, body.to_string()).await;
    let v = serde_json::from_str(&r.body).unwrap_or(serde_json::Value::Null);
    (r.status, v)
}

/// Registers a warrior as the Warrior does; its id.
async fn register(app: &TestApp) -> String {
    let (status, v) = post(
        app,
        "/api/register.json",
        serde_json::json!({"warrior": {"version": "4.1-20240906.01"}}),
    )
    .await;
    assert_eq!(status, 200, "{v}");
    v["warrior_id"]
        .as_str()
        .expect("warrior_id, a string")
        .to_string()
}

/// The update body of a Warrior with `id`, running `project` as `downloader`.
fn update(
    id: &str,
    downloader: &str,
    project: &str,
    lat_lng: serde_json::Value,
) -> serde_json::Value {
    serde_json::json!({"warrior": {
        "warrior_id": id,
        "lat_lng": lat_lng,
        "downloader": downloader,
        "selected_project": project,
        "version": "4.1-20240906.01",
        "concurrency": 2,
    }})
}

#[tokio::test]
async fn a_warrior_registers_updates_and_gets_the_project_list() {
    let app = TestApp::start().await;
    let (a, b) = (register(&app).await, register(&app).await);
    assert_ne!(a, b, "each registration gets its own id");
    let list = serde_json::json!({"warrior": {"seesaw_version": "0.10.3"}, "auto_project": "p1",
        "projects": [{"name": "p1", "title": "P", "repository": "https://example.org/p1-grab"}]});
    let _: () = app
        .store
        .client()
        .set(
            app.store.keys().warrior_projects(),
            list.to_string(),
            None,
            None,
            false,
        )
        .await
        .unwrap();
    let (status, answer) = post(
        &app,
        "/api/update.json",
        update(&a, "alice", "auto", serde_json::json!([51.51, -0.13])),
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    // The saved entry is another tracker's project (none of this tracker's is listed), and
    // `auto_project` is the tracker's choice: none has work here.
    let mut expected = list.clone();
    expected["auto_project"] = serde_json::Value::Null;
    assert_eq!(
        answer, expected,
        "the update is answered with the project list"
    );
    let (status, _) = post(
        &app,
        "/api/update.json",
        update(&b, "bob", "p1", serde_json::json!(["40.7", "-74.0"])),
    )
    .await;
    assert_eq!(status, 200);
    // A second update of the same warrior replaces its record.
    post(
        &app,
        "/api/update.json",
        update(&a, "alice", "auto", serde_json::json!([51.49, -0.4])),
    )
    .await;

    let stats: serde_json::Value =
        serde_json::from_str(&app.get("/api/stats.json").await.body).unwrap();
    assert_eq!(stats["warriors"], 2, "{stats}");
    assert_eq!(stats["projects"], serde_json::json!({"auto": 1, "p1": 1}));
    assert_eq!(
        stats["positions"],
        serde_json::json!([[41, -74, 1], [51, 0, 1]]),
        "whole degrees"
    );
    let fleet = app.store.fleet(server::store::now_ms()).await.unwrap();
    assert_eq!(fleet.len(), 2);
    assert_eq!(
        (fleet[0].downloader.as_str(), fleet[0].ip.as_str()),
        ("alice", "127.0.0.1")
    );
}

#[tokio::test]
async fn warriors_silent_for_15_minutes_are_forgotten() {
    let app = TestApp::start().await;
    let (old, new) = (register(&app).await, register(&app).await);
    for id in [&old, &new] {
        let (status, _) = post(
            &app,
            "/api/update.json",
            update(id, "d", "auto", serde_json::Value::Null),
        )
        .await;
        assert_eq!(status, 200);
    }
    // `old` was last heard from 15 minutes and a second ago.
    let long_ago = (server::store::now_ms() - server::store::FLEET_TTL_MS - 1000) as f64;
    let _: () = app
        .store
        .client()
        .zadd(
            app.store.keys().hq_seen(),
            None,
            None,
            false,
            false,
            (long_ago, old.as_str()),
        )
        .await
        .unwrap();
    let fleet = app.store.fleet(server::store::now_ms()).await.unwrap();
    let ids: Vec<String> = fleet.iter().map(|w| w.id.to_string()).collect();
    assert_eq!(ids, std::slice::from_ref(&new));
    let left: u64 = app
        .store
        .client()
        .hlen(app.store.keys().hq_warriors())
        .await
        .unwrap();
    assert_eq!(left, 1, "its record is gone from Redis too");
    // It may come back with the id it has.
    let (status, _) = post(
        &app,
        "/api/update.json",
        update(&old, "d", "auto", serde_json::Value::Null),
    )
    .await;
    assert_eq!(status, 200);
}

#[tokio::test]
async fn bad_updates_get_a_400_or_404_and_record_nothing() {
    let app = TestApp::start().await;
    let id = register(&app).await;
    let never = (id.parse::<u64>().unwrap() + 1000).to_string();
    for (body, status, says) in [
        (
            update(&never, "d", "auto", serde_json::Value::Null),
            404,
            "register again",
        ),
        (
            update("x", "d", "auto", serde_json::Value::Null),
            400,
            "warrior_id",
        ),
        (
            update(&id, "d", "Not A Slug", serde_json::Value::Null),
            400,
            "selected_project",
        ),
        (
            update(&id, "d", "auto", serde_json::json!([95, 0])),
            400,
            "lat_lng",
        ),
        (
            update(&id, &"x".repeat(65), "auto", serde_json::Value::Null),
            400,
            "downloader",
        ),
        (serde_json::json!({"nope": 1}), 400, "warrior"),
    ] {
        let r = app.post("/api/update.json", body.to_string()).await;
        assert_eq!(r.status, status, "{body}: {}", r.body);
        assert!(r.body.contains(says), "{says}: {}", r.body);
    }
    let r = app.post("/api/register.json", "not json").await;
    assert_eq!(r.status, 400, "{}", r.body);
    let r = app.post("/api/update.json", vec![b'{'; 64 << 10]).await;
    assert_eq!(r.status, 413, "a body over the claim body limit");
    let known: u64 = app
        .store
        .client()
        .hlen(app.store.keys().hq_warriors())
        .await
        .unwrap();
    assert_eq!(known, 0, "nothing recorded");
}
