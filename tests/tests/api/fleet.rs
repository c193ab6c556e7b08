//! The fleet: downloaders seen on the warrior API (gathered in the process, flushed every 2 s),
//! `GET /admin/api/fleet` (search, sort, totals, addresses for admins only), the warriors at
//! work on the public pages, and the home page's world map.

use app::model::admin::{FleetClient, FleetView};
use fred::prelude::*;
use server::store::Role;
use std::time::Duration;
use tests::{panel, wait_for, TestApp, ADMIN_TOKEN};

const SEESAW_NEW: &str = "ArchiveTeam Warrior/0.10.3 Warrior 4";
const SEESAW_OLD: &str = "ArchiveTeam Warrior/0.8.5 (Standalone ; pipeline 9)";

/// A warrior call to `path` by `downloader` from `ip` (with `TRACKER_TRUST_PROXY`) with user
/// agent `ua`: status and body.
async fn call(
    app: &TestApp,
    path: &str,
    ip: &str,
    ua: &str,
    body: serde_json::Value,
) -> (u16, String) {
    let r = app
        .post_with(
            path,
            &[("x-forwarded-for", ip), ("user-agent", ua)],
            body.to_string(),
        )
        .await;
    (r.status, r.body)
}

/// Claims `n` items of `slug` one by one for `downloader` with script version `version`.
async fn claim(
    app: &TestApp,
    slug: &str,
    downloader: &str,
    ip: &str,
    ua: &str,
    version: &str,
    n: usize,
) -> Vec<String> {
    let mut items = Vec::new();
    for _ in 0..n {
        let body =
            serde_json::json!({"downloader": downloader, "api_version": "2", "version": version});
        let (status, body) = call(app, &format!("/{slug}/request"), ip, ua, body).await;
        assert_eq!(status, 200, "{body}");
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        items.push(v["item_name"].as_str().unwrap().to_string());
    }
    items
}

/// `GET /admin/api/fleet?QUERY` with the admin token.
async fn fleet(app: &TestApp, query: &str) -> FleetView {
    let r = app
        .send(
            app.http
                .get(app.url(&format!("/admin/api/fleet?{query}")))
                .bearer_auth(ADMIN_TOKEN),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    serde_json::from_str(&r.body).unwrap()
}

/// Waits until the fleet (all of it) passes `check`.
async fn fleet_until(app: &TestApp, what: &str, check: impl Fn(&FleetView) -> bool) -> FleetView {
    wait_for(what, Duration::from_secs(15), || async {
        let f = fleet(app, "limit=1000").await;
        check(&f).then_some(f)
    })
    .await
}

fn row<'a>(f: &'a FleetView, project: &str, downloader: &str) -> Option<&'a FleetClient> {
    f.downloaders
        .iter()
        .find(|c| c.project == project && c.downloader == downloader)
}

#[tokio::test]
async fn claims_by_two_downloaders_appear_with_their_versions_claims_and_address_for_admins_only() {
    let app = TestApp::start_with(|c| c.trust_proxy = true).await;
    app.project("p1", &["a", "b", "c", "d", "e"]).await;
    // Many calls of one downloader from one address are one row.
    claim(
        &app,
        "p1",
        "alice",
        "192.0.2.7",
        SEESAW_NEW,
        "20240101.01",
        3,
    )
    .await;
    let bobs = claim(
        &app,
        "p1",
        "bob",
        "198.51.100.9",
        SEESAW_OLD,
        "20231111.02",
        1,
    )
    .await;
    let done = serde_json::json!({"downloader": "bob", "item": bobs[0], "bytes": {"data": 10}, "version": "20231111.03"});
    let (status, body) = call(&app, "/p1/done", "198.51.100.9", SEESAW_OLD, done).await;
    assert_eq!(status, 200, "{body}");

    let f = fleet_until(&app, "alice and bob, bob's done counted", |f| {
        row(f, "p1", "alice").is_some()
            && row(f, "p1", "bob")
                .is_some_and(|b| b.version == "20231111.03" && b.items_per_s > 0.0)
    })
    .await;
    assert_eq!(f.downloaders.len(), 2, "{:?}", f.downloaders);
    let alice = row(&f, "p1", "alice").unwrap();
    assert_eq!(
        (
            alice.seesaw.as_str(),
            alice.version.as_str(),
            alice.ip.as_str()
        ),
        ("0.10.3", "20240101.01", "192.0.2.7")
    );
    assert_eq!(alice.user_agent, SEESAW_NEW);
    assert_eq!(alice.in_flight, 3, "the claims alice holds");
    assert_eq!(alice.items_per_s, 0.0);
    let bob = row(&f, "p1", "bob").unwrap();
    assert_eq!(
        (bob.seesaw.as_str(), bob.ip.as_str()),
        ("0.8.5", "198.51.100.9")
    );
    assert_eq!(bob.in_flight, 0, "bob's one claim is done");
    assert!(bob.id.starts_with("p1:"), "{}", bob.id);
    let p1 = f.projects.iter().find(|p| p.project == "p1").unwrap();
    assert_eq!((p1.downloaders, p1.names, p1.in_flight), (2, 2, 3));

    // The pages count them, and show no address.
    let home = app.get("/").await;
    assert!(
        tests::rendered(&home.body).contains("2 warriors at work"),
        "{}",
        tests::rendered(&home.body)
    );
    let board = app.get("/p1/").await;
    let html = tests::rendered(&board.body);
    assert!(
        html.contains(r#"id="label-warriors" class="label">warriors now<!></span><strong aria-labelledby="label-warriors">2<!></strong>"#),
        "{html}"
    );
    for path in [
        "/",
        "/p1/",
        "/api/stats.json",
        "/board/projects.json",
        "/board/p1/page.json",
        "/board/p1/figures.json",
        "/p1/stats.json",
        "/p1/downloaders.json",
        "/p1/recent.json",
        "/p1/tracker-stats.json",
    ] {
        let r = app.get(path).await;
        assert_eq!(r.status, 200, "{path}");
        for ip in ["192.0.2.7", "198.51.100.9"] {
            assert!(!r.body.contains(ip), "{path} shows {ip}");
        }
    }
    let figures: serde_json::Value =
        serde_json::from_str(&app.get("/board/p1/figures.json").await.body).unwrap();
    assert_eq!(figures["warriors"], 2, "{figures}");
    // The fleet is the admins': no token, no fleet.
    let r = app.get("/admin/api/fleet").await;
    assert_eq!(r.status, 401, "{}", r.body);
}

#[tokio::test]
async fn downloaders_silent_past_the_silence_are_forgotten() {
    let app = TestApp::start_with(|c| c.fleet_silence = Duration::from_secs(3)).await;
    app.project("p1", &["a", "b"]).await;
    app.claim("p1", "alice").await;
    let f = fleet_until(&app, "alice", |f| row(f, "p1", "alice").is_some()).await;
    assert_eq!(f.silence_s, 3);
    assert!(tests::rendered(&app.get("/").await.body).contains("1 warrior at work"));
    // Silent from now on: gone from the fleet, from the counts, and from Redis.
    fleet_until(&app, "alice forgotten", |f| f.downloaders.is_empty()).await;
    let keys = app.store.keys();
    wait_for(
        "alice's record removed",
        Duration::from_secs(15),
        || async {
            let client = app.store.client();
            let records: u64 = client.hlen(keys.fleet_clients()).await.unwrap();
            let seen: u64 = client.zcard(keys.fleet_seen()).await.unwrap();
            let of_p1: u64 = client.zcard(keys.fleet_project("p1")).await.unwrap();
            (records + seen + of_p1 == 0).then_some(())
        },
    )
    .await;
    assert!(tests::rendered(&app.get("/").await.body).contains("0 warriors at work"));
    // A call brings it back.
    app.claim("p1", "alice").await;
    fleet_until(&app, "alice back", |f| row(f, "p1", "alice").is_some()).await;
}

#[tokio::test]
async fn the_admin_fleet_is_searched_sorted_paged_and_totalled() {
    let app = TestApp::start_with(|c| c.trust_proxy = true).await;
    app.project("p1", &["a1", "a2", "a3", "a4", "a5", "a6"])
        .await;
    app.project("p2", &["b1", "b2", "b3"]).await;
    claim(&app, "p1", "alice", "192.0.2.1", SEESAW_NEW, "1", 1).await;
    claim(&app, "p1", "alice", "192.0.2.2", SEESAW_NEW, "1", 2).await;
    claim(&app, "p1", "carol", "192.0.2.3", SEESAW_OLD, "1", 1).await;
    claim(&app, "p2", "bob", "192.0.2.4", SEESAW_NEW, "2", 3).await;
    // Warrior HQ instances.
    for (who, project) in [("dave", "p1"), ("erin", "auto")] {
        let r = app
            .post("/api/register.json", r#"{"warrior":{"version":"0.10.3"}}"#)
            .await;
        let id: serde_json::Value = serde_json::from_str(&r.body).unwrap();
        let update = serde_json::json!({"warrior": {"warrior_id": id["warrior_id"], "downloader": who,
            "selected_project": project, "version": "0.10.3", "lat_lng": [1, 2]}});
        assert_eq!(
            app.post("/api/update.json", update.to_string())
                .await
                .status,
            200
        );
    }
    let all = fleet_until(&app, "four downloaders", |f| f.downloaders.len() == 4).await;
    assert_eq!(all.warriors_matched, 2);

    // Totals: per project (alice's claims counted once for her two addresses), per version.
    let p1 = all.projects.iter().find(|p| p.project == "p1").unwrap();
    assert_eq!(
        (p1.downloaders, p1.names, p1.warriors, p1.in_flight),
        (3, 2, 1, 4)
    );
    let p2 = all.projects.iter().find(|p| p.project == "p2").unwrap();
    assert_eq!((p2.downloaders, p2.in_flight), (1, 3));
    let auto = all.projects.iter().find(|p| p.project == "auto").unwrap();
    assert_eq!((auto.downloaders, auto.warriors), (0, 1));
    let versions: Vec<(&str, u64, u64)> = all
        .versions
        .iter()
        .map(|v| (v.version.as_str(), v.downloaders, v.warriors))
        .collect();
    assert_eq!(versions, [("0.10.3", 3, 2), ("0.8.5", 1, 0)]);

    // Search: names, projects, addresses, versions; any case. Totals stay the whole fleet's.
    let names = |f: &FleetView| -> Vec<String> {
        f.downloaders
            .iter()
            .map(|c| format!("{}@{}", c.downloader, c.ip))
            .collect()
    };
    let f = fleet(&app, "q=ALICE&sort=ip").await;
    assert_eq!(names(&f), ["alice@192.0.2.1", "alice@192.0.2.2"]);
    assert_eq!((f.downloaders_matched, f.warriors_matched), (2, 0));
    assert_eq!(f.projects, all.projects);
    let f = fleet(&app, "q=0.8.5").await;
    assert_eq!(names(&f), ["carol@192.0.2.3"]);
    let f = fleet(&app, "q=dave").await;
    assert_eq!((f.downloaders_matched, f.warriors.len()), (0, 1));
    assert_eq!(f.warriors[0].downloader, "dave");
    assert_eq!(f.warriors[0].lat_lng, Some((1.0, 2.0)));

    // Sort: each order its natural way, `dir=reverse` the other.
    let f = fleet(&app, "sort=in_flight").await;
    let held: Vec<u64> = f.downloaders.iter().map(|c| c.in_flight).collect();
    assert_eq!(held, [3, 3, 3, 1], "bob 3, alice's 3 on each row, carol 1");
    let f = fleet(&app, "sort=downloader&dir=reverse").await;
    assert_eq!(names(&f)[0], "carol@192.0.2.3");
    let f = fleet(&app, "sort=version").await;
    assert_eq!(names(&f).last().unwrap(), "carol@192.0.2.3", "0.8.5 last");
    let f = fleet(&app, "sort=downloader").await;
    let w: Vec<&str> = f.warriors.iter().map(|w| w.downloader.as_str()).collect();
    assert_eq!(w, ["dave", "erin"]);

    // Pages.
    let f = fleet(&app, "sort=ip&offset=1&limit=2").await;
    assert_eq!(names(&f), ["alice@192.0.2.2", "carol@192.0.2.3"]);
    assert_eq!(f.downloaders_matched, 4);

    // Bad queries: 400 with the reason.
    for (query, says) in [
        ("sort=fastest", "sort is one of"),
        ("dir=up", "dir is"),
        (&format!("q={}", "x".repeat(201)) as &str, "q is at most"),
    ] {
        let r = app
            .send(
                app.http
                    .get(app.url(&format!("/admin/api/fleet?{query}")))
                    .bearer_auth(ADMIN_TOKEN),
            )
            .await;
        assert_eq!(r.status, 400, "{query}: {}", r.body);
        assert!(r.body.contains(says), "{query}: {}", r.body);
    }

    // A project admin sees the fleet of their projects only; a read-only account all of it.
    panel::account(&app, "p2admin", Role::Project, &["p2"]).await;
    let mut p = panel::Panel::logged_in(&app, "p2admin").await;
    let f: FleetView = serde_json::from_str(&p.get("/admin/api/fleet").await.body).unwrap();
    assert_eq!(names(&f), ["bob@192.0.2.4"]);
    let projects: Vec<&str> = f.projects.iter().map(|p| p.project.as_str()).collect();
    assert_eq!(projects, ["p2"]);
    assert!(f.warriors.is_empty());
    panel::account(&app, "reader", Role::ReadOnly, &[]).await;
    let mut p = panel::Panel::logged_in(&app, "reader").await;
    let f: FleetView = serde_json::from_str(&p.get("/admin/api/fleet").await.body).unwrap();
    assert_eq!((f.downloaders_matched, f.warriors_matched), (4, 2));
}

#[tokio::test]
async fn the_home_page_draws_the_warriors_on_a_world_map() {
    let app = TestApp::start().await;
    let html = tests::rendered(&app.get("/").await.body);
    assert!(
        html.contains(r#"<svg viewBox="-180 -84 360 144" role="img" aria-label="World map: 0 warriors in 0 places" class="world-map"><path d="M"#),
        "{html}"
    );
    assert!(
        html.contains(r#"z" class="land"></path>"#),
        "the land, drawn by the server"
    );
    assert!(
        html.contains("No warrior has reported to Warrior HQ"),
        "{html}"
    );
    assert!(!html.contains(r#"class="core""#), "no dots yet");

    for (lat_lng, n) in [
        (serde_json::json!([51.51, -0.13]), 2),
        (serde_json::json!(["40.7", "-74.0"]), 1),
    ] {
        for _ in 0..n {
            let r = app
                .post("/api/register.json", r#"{"warrior":{"version":"0.10.3"}}"#)
                .await;
            let id: serde_json::Value = serde_json::from_str(&r.body).unwrap();
            let update = serde_json::json!({"warrior": {"warrior_id": id["warrior_id"],
                "downloader": "d", "selected_project": "auto", "lat_lng": lat_lng}});
            assert_eq!(
                app.post("/api/update.json", update.to_string())
                    .await
                    .status,
                200
            );
        }
    }
    // The page's reads are cached for a second.
    let html = wait_for("the map's dots", Duration::from_secs(5), || async {
        let html = tests::rendered(&app.get("/").await.body);
        html.contains(r#"class="core""#).then_some(html)
    })
    .await;
    // London (52, 0) with two warriors, New York (41, -74) with one: x is the longitude, y
    // minus the latitude; the bigger dot first.
    let london = html.find(r#"<circle cx="0" cy="-52" r="2.2" class="core">"#);
    let new_york = html.find(r#"<circle cx="-74" cy="-41" r="1.9" class="core">"#);
    assert!(london.is_some() && new_york.is_some(), "{html}");
    assert!(london < new_york, "the larger dot is drawn first");
    assert!(html.contains("2 warriors near 52°, 0°"), "{html}");
    assert!(html.contains("3 warriors reporting to Warrior HQ in the last 15 minutes; 3 of them said where they are, in 2 places."), "{html}");
    assert!(
        html.contains(r#"aria-label="World map: 3 warriors in 2 places""#),
        "{html}"
    );
}

#[tokio::test]
async fn the_fleet_is_written_and_read_on_a_cluster() {
    let app = TestApp::start_cluster().await;
    app.project("p1", &["a", "b"]).await;
    app.claim("p1", "alice").await;
    let f = fleet_until(&app, "alice on the cluster", |f| {
        row(f, "p1", "alice").is_some()
    })
    .await;
    assert_eq!(row(&f, "p1", "alice").unwrap().in_flight, 1);
    assert!(tests::rendered(&app.get("/").await.body).contains("1 warrior at work"));
}
