//! The admin API's blocks, users and projects; the Warrior HQ list (projects.json); the
//! completion log download.

use super::admin::{account, json, Panel};
use server::store::{now_ms, Role};
use tests::TestApp;

#[tokio::test]
async fn the_warrior_project_list_is_validated_sanitised_versioned_and_served() {
    let app = TestApp::start().await;
    account(&app, "root", Role::Global, &[]).await;
    let mut p = Panel::logged_in(&app, "root").await;
    let put = |doc: serde_json::Value, dry: bool| serde_json::json!({"json": doc.to_string(), "dry_run": dry});
    let doc = |deadline: &str| {
        serde_json::json!({"warrior": {"seesaw_version": "0.10.3"}, "broadcast_message": "<p>hi</p><script>x()</script>",
            "projects": [{"name": "demo", "repository": "https://example.org/demo.git", "deadline": deadline,
                          "description": "<b onclick=\"y()\">Demo</b>"}]})
    };
    let path = "/admin/api/warrior/projects";
    let r = p
        .send(
            reqwest::Method::PUT,
            path,
            put(serde_json::json!({"projects": []}), false),
        )
        .await;
    assert_eq!(r.status, 400, "{}", r.body);
    assert!(r.body.contains("seesaw_version"));
    let r = p
        .send(
            reqwest::Method::PUT,
            path,
            put(doc("2013-13-30 23:59"), false),
        )
        .await;
    assert_eq!(r.status, 400, "{}", r.body);
    assert!(r.body.contains("deadline"));

    let preview = json(
        &p.send(
            reqwest::Method::PUT,
            path,
            put(doc("2013-04-30T23:59:59Z"), true),
        )
        .await,
    );
    assert_eq!(preview["json"]["broadcast_message"], "<p>hi</p>");
    assert_eq!(preview["json"]["projects"][0]["description"], "<b>Demo</b>");
    let public = app.get("/projects.json").await;
    assert_eq!(
        json(&public)["projects"],
        serde_json::json!([]),
        "a preview saves nothing"
    );

    assert_eq!(
        p.send(
            reqwest::Method::PUT,
            path,
            put(doc("2013-04-30T23:59:59Z"), false)
        )
        .await
        .status,
        200
    );
    let public = app.get("/projects.json").await;
    assert_eq!(public.headers["access-control-allow-origin"], "*");
    let served = json(&public);
    assert_eq!(served["projects"][0]["name"], "demo");
    assert!(
        !public.body.contains("<script") && !public.body.contains("onclick"),
        "{}",
        public.body
    );
    let jsonp = app.get("/projects.json?callback=cb").await;
    assert!(
        jsonp.body.starts_with("cb({") && jsonp.body.ends_with(");"),
        "{}",
        jsonp.body
    );
    assert_eq!(
        app.get("/projects.json?callback=alert(1)").await.status,
        400
    );

    assert_eq!(
        p.send(
            reqwest::Method::PUT,
            path,
            put(doc("2020-01-01T00:00:00Z"), false)
        )
        .await
        .status,
        200
    );
    assert_eq!(
        json(&app.get("/projects.json").await)["projects"][0]["deadline"],
        "2020-01-01T00:00:00Z"
    );
    let listed = json(&p.get(path).await);
    assert_eq!(listed["versions"].as_array().unwrap().len(), 2);
    let r = p
        .post(
            "/admin/api/warrior/restore",
            serde_json::json!({"index": 1}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        json(&app.get("/projects.json").await)["projects"][0]["deadline"],
        "2013-04-30T23:59:59Z"
    );
    let audit = json(&p.get("/admin/api/audit?action=warrior_projects").await);
    assert_eq!(audit.as_array().unwrap().len(), 3);
}

#[tokio::test]
async fn the_completion_log_downloads_as_ndjson_for_a_time_range() {
    let app = TestApp::start().await;
    app.project("p1", &["a", "b", "c"]).await;
    account(&app, "root", Role::ReadOnly, &[]).await;
    for _ in 0..3 {
        let item = app.claim("p1", "alice").await;
        assert_eq!(app.done("p1", "alice", &item, 10).await.status, 200);
    }
    let mut p = Panel::logged_in(&app, "root").await;
    let r = p.get("/admin/api/p1/log").await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.headers["content-type"], "application/x-ndjson");
    let lines: Vec<serde_json::Value> = r
        .body
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 3);
    assert_eq!(lines[0]["d"], "alice");
    assert_eq!(lines[0]["items"].as_array().unwrap().len(), 1);
    let later = p
        .get(&format!("/admin/api/p1/log?from={}", now_ms() + 60_000))
        .await;
    assert_eq!(later.body, "", "nothing after now");
    // Ranges are by the log's own clock: the millisecond part of `log_id`.
    let ms = |v: &serde_json::Value| -> u64 {
        v["log_id"]
            .as_str()
            .unwrap()
            .split('-')
            .next()
            .unwrap()
            .parse()
            .unwrap()
    };
    let (t0, t2) = (ms(&lines[0]), ms(&lines[2]));
    let first = p.get(&format!("/admin/api/p1/log?from=0&to={t0}")).await;
    let expect = lines.iter().filter(|l| ms(l) <= t0).count();
    assert_eq!(first.body.lines().count(), expect);
    let last = p.get(&format!("/admin/api/p1/log?from={t2}")).await;
    assert_eq!(
        last.body.lines().count(),
        lines.iter().filter(|l| ms(l) >= t2).count()
    );
    assert_eq!(p.get("/admin/api/nope/log").await.status, 404);
}

#[tokio::test]
async fn blocks_users_and_projects_are_managed_and_audited() {
    let app = TestApp::start().await;
    app.project("p1", &[]).await;
    account(&app, "root", Role::Global, &[]).await;
    let mut p = Panel::logged_in(&app, "root").await;
    let block = serde_json::json!({"kind": "dl", "value": "spammer", "project": "p1", "reason": "junk", "hours": 2});
    assert_eq!(p.post("/admin/api/blocks", block.clone()).await.status, 204);
    let rows = json(&p.get("/admin/api/blocks?project=p1").await);
    assert_eq!(rows[0]["value"], "spammer");
    assert_eq!(rows[0]["by"], "root");
    assert!(rows[0]["expires"].as_u64().unwrap() > 0);
    assert_eq!(p.post("/admin/api/unblock", block).await.status, 204);
    assert_eq!(
        json(&p.get("/admin/api/blocks?project=p1").await),
        serde_json::json!([])
    );

    let r = p.post("/admin/api/users", serde_json::json!({"name": "Bob", "password": "password123", "role": "project", "projects": ["p1"]})).await;
    assert_eq!(r.status, 201, "{}", r.body);
    assert!(!r.body.contains("argon2"), "the hash is never sent");
    assert_eq!(
        p.post(
            "/admin/api/users",
            serde_json::json!({"name": "bob", "password": "password123"})
        )
        .await
        .status,
        409
    );
    let r = p
        .send(
            reqwest::Method::DELETE,
            "/admin/api/users/root",
            serde_json::json!({}),
        )
        .await;
    assert_eq!(r.status, 400, "not the last global admin: {}", r.body);
    let r = p
        .send(
            reqwest::Method::PUT,
            "/admin/api/users/BOB",
            serde_json::json!({"role": "read_only"}),
        )
        .await;
    assert_eq!(json(&r)["role"], "read_only");
    assert_eq!(
        p.send(
            reqwest::Method::DELETE,
            "/admin/api/users/bob",
            serde_json::json!({})
        )
        .await
        .status,
        204
    );

    assert_eq!(
        p.post(
            "/admin/api/projects",
            serde_json::json!({"slug": "p2", "title": "Two"})
        )
        .await
        .status,
        201
    );
    assert_eq!(
        p.send(
            reqwest::Method::DELETE,
            "/admin/api/p2?confirm=p1",
            serde_json::json!({})
        )
        .await
        .status,
        400
    );
    assert_eq!(
        p.send(
            reqwest::Method::DELETE,
            "/admin/api/p2?confirm=p2",
            serde_json::json!({})
        )
        .await
        .status,
        200
    );
    assert!(app.store.project("p2").await.unwrap().is_none());

    let audit = json(&p.get("/admin/api/audit").await);
    let actions: Vec<&str> = audit
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["action"].as_str().unwrap())
        .collect();
    assert_eq!(
        actions,
        [
            "project.destroy",
            "project.create",
            "user.delete",
            "user.update",
            "user.create",
            "unblock",
            "block",
            "login"
        ]
    );
    assert!(audit.as_array().unwrap().iter().all(|e| e["who"] == "root"));
}
