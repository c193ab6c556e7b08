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
    let fleet = app
        .store
        .fleet()
        .registered(server::store::now_ms())
        .await
        .unwrap();
    assert_eq!(fleet.len(), 2);
    let alice = fleet
        .iter()
        .find(|w| w.downloader == "alice")
        .expect("alice");
    assert_eq!(alice.ip, "127.0.0.1");
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
    let fleet = app
        .store
        .fleet()
        .registered(server::store::now_ms())
        .await
        .unwrap();
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
async fn bad_updates_get_a_400_and_record_nothing() {
    let app = TestApp::start().await;
    let id = register(&app).await;
    for (body, status, says) in [
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

/// The user agent seesaw 0.10.3 sends to Warrior HQ.
const SEESAW_UA: &str = "ArchiveTeam Warrior/0.10.3 Warrior";

/// `POST /api/update.json` as seesaw sends it, from `ip` (the app trusts X-Forwarded-For).
async fn seesaw_update(
    app: &TestApp,
    ip: &str,
    body: &serde_json::Value,
) -> (u16, serde_json::Value) {
    let r = app
        .send(
            app.http
                .post(app.url("/api/update.json"))
                .header("content-type", "application/json")
                .header("user-agent", SEESAW_UA)
                .header("x-forwarded-for", ip)
                .body(body.to_string()),
        )
        .await;
    let v = serde_json::from_str(&r.body).unwrap_or(serde_json::Value::Null);
    (r.status, v)
}

/// The instances recorded now, by id.
async fn recorded(app: &TestApp) -> std::collections::HashMap<String, String> {
    app.store
        .client()
        .hgetall(app.store.keys().hq_warriors())
        .await
        .unwrap()
}

#[tokio::test]
async fn docker_warriors_without_an_id_and_warriors_of_another_hq_get_the_list_counted_once() {
    let app = TestApp::start_with(|c| c.trust_proxy = true).await;
    app.project("p1", &["a"]).await;
    // warrior-dockerfile's start.py writes "warrior_id": "" when WARRIOR_ID is unset, and
    // seesaw registers only when the id is missing: this is every update such a warrior sends.
    let docker = serde_json::json!({"warrior": {"warrior_id": "", "lat_lng": null,
        "downloader": "alice", "selected_project": "auto"}});
    for _ in 0..3 {
        let (status, v) = seesaw_update(&app, "192.0.2.10", &docker).await;
        assert_eq!(status, 200, "{v}");
        assert!(v["projects"].is_array(), "the project list: {v}");
        assert!(v.get("auto_project").is_some(), "{v}");
    }
    let after_docker = recorded(&app).await;
    assert_eq!(
        after_docker.len(),
        1,
        "counted once over its updates: {after_docker:?}"
    );
    let derived = after_docker.keys().next().unwrap().clone();
    // An id from another HQ (a number this tracker never made): served, under its own id.
    let foreign = serde_json::json!({"warrior": {"warrior_id": "1234567", "lat_lng": null,
        "downloader": "bob", "selected_project": "p1"}});
    let (status, v) = seesaw_update(&app, "198.51.100.7", &foreign).await;
    assert_eq!(status, 200, "{v}");
    assert!(v["projects"].is_array(), "{v}");
    let now = recorded(&app).await;
    assert_eq!(now.len(), 2);
    assert!(
        !now.contains_key("1234567"),
        "not recorded under an id it chose"
    );
    // Another address sending the Docker warrior's derived id does not take it over.
    let stolen = serde_json::json!({"warrior": {"warrior_id": derived, "lat_lng": null,
        "downloader": "mallory", "selected_project": "p1"}});
    let (status, _) = seesaw_update(&app, "203.0.113.66", &stolen).await;
    assert_eq!(status, 200);
    let now = recorded(&app).await;
    assert!(
        now[&derived].contains("alice"),
        "still alice's: {}",
        now[&derived]
    );
    assert_eq!(now.len(), 3);
}

#[tokio::test]
async fn new_ids_are_unguessable_and_a_flood_of_registrations_is_throttled() {
    let app = TestApp::start().await;
    let a: u64 = register(&app).await.parse().unwrap();
    let b: u64 = register(&app).await.parse().unwrap();
    assert!(a.abs_diff(b) > 1 << 20, "not sequential: {a} {b}");
    assert!(a < 1 << 53 && b < 1 << 53, "JSON-safe");
    // Its neighbour is no id: an update naming it is recorded under a derived id instead.
    let (status, _) = post(
        &app,
        "/api/update.json",
        update(&(a + 1).to_string(), "d", "auto", serde_json::Value::Null),
    )
    .await;
    assert_eq!(status, 200);
    assert!(!recorded(&app).await.contains_key(&(a + 1).to_string()));
    // One address registering over and over is held back, and nothing else changes.
    let mut throttled = 0;
    for _ in 0..200 {
        let r = app
            .post("/api/register.json", r#"{"warrior":{"version":"0.10.3"}}"#)
            .await;
        match r.status {
            200 => {}
            429 => throttled += 1,
            other => panic!("{other}: {}", r.body),
        }
    }
    assert!(throttled > 0, "a flood of registrations is throttled");
    assert_eq!(
        recorded(&app).await.len(),
        1,
        "registrations record nothing"
    );
}

#[tokio::test]
async fn warrior_hqs_own_stats_and_positions_are_served() {
    let app = TestApp::start().await;
    for (project, lat_lng) in [
        ("p1", serde_json::json!([51.51, -0.13])),
        ("p1", serde_json::json!([40.7, -74.0])),
        ("", serde_json::Value::Null),
    ] {
        let id = register(&app).await;
        let (status, v) = post(&app, "/api/update.json", update(&id, "d", project, lat_lng)).await;
        assert_eq!(status, 200, "{v}");
    }
    let r = app.get("/stats.json").await;
    assert_eq!(r.status, 200, "{}", r.body);
    let v: serde_json::Value = serde_json::from_str(&r.body).unwrap();
    assert_eq!(
        v["projects"],
        serde_json::json!([["p1", 2], [null, 1]]),
        "{v}"
    );
    let coords = v["coords"].as_array().unwrap();
    assert_eq!(coords.len(), 2, "{v}");
    assert!(
        coords.contains(&serde_json::json!([52.0, 0.0])),
        "whole degrees: {v}"
    );
    let r = app.get("/positions.json").await;
    assert_eq!(r.status, 200, "{}", r.body);
    let v: serde_json::Value = serde_json::from_str(&r.body).unwrap();
    assert_eq!(v.as_array().unwrap().len(), 2, "{v}");
    assert!(
        v.as_array()
            .unwrap()
            .contains(&serde_json::json!([41, -74])),
        "{v}"
    );
}

/// Each user agent of a network is an instance of its own, so a network could fill the fleet
/// by changing its user agent at each update: one network holds at most
/// `MAX_WARRIORS_PER_NETWORK` instances. A warrior whose instance cannot be recorded (its
/// network or the fleet full) still gets the project list it runs from.
#[tokio::test]
async fn one_network_holds_a_bounded_share_of_the_fleet_and_every_warrior_gets_its_list() {
    use server::store::{FleetRefusal, WarriorRecord, MAX_WARRIORS_PER_NETWORK};
    let app = TestApp::start().await;
    app.project("p1", &["a"]).await;
    let now = server::store::now_ms();
    let record = |id: u64| WarriorRecord {
        id,
        seen: now,
        ..Default::default()
    };
    let net = "127.0.0.1";
    for id in 1..=MAX_WARRIORS_PER_NETWORK {
        let r = app
            .store
            .fleet()
            .update_warrior(&record(id), net, now)
            .await
            .unwrap();
        assert_eq!(r, Ok(()), "instance {id}");
    }
    let over = MAX_WARRIORS_PER_NETWORK + 1;
    assert_eq!(
        app.store
            .fleet()
            .update_warrior(&record(over), net, now)
            .await
            .unwrap(),
        Err(FleetRefusal::NetworkFull)
    );
    assert_eq!(
        app.store
            .fleet()
            .update_warrior(&record(7), net, now)
            .await
            .unwrap(),
        Ok(()),
        "an instance the network holds updates as before"
    );
    assert_eq!(
        app.store
            .fleet()
            .update_warrior(&record(over), "192.0.2.9", now)
            .await
            .unwrap(),
        Ok(()),
        "another network is not held back"
    );
    assert_eq!(recorded(&app).await.len() as u64, over);
    // Over HTTP from the full network (127.0.0.1): answered with the list, not recorded.
    let (status, v) = post(
        &app,
        "/api/update.json",
        update("", "d", "auto", serde_json::Value::Null),
    )
    .await;
    assert_eq!(status, 200, "{v}");
    assert!(v["projects"].is_array(), "the project list: {v}");
    assert_eq!(recorded(&app).await.len() as u64, over, "not recorded");
    // Once the network's instances fall silent, it is served and counted again.
    let later = now + server::store::FLEET_TTL_MS + 1;
    assert_eq!(
        app.store
            .fleet()
            .update_warrior(&record(over + 1), net, later)
            .await
            .unwrap(),
        Ok(())
    );
}
