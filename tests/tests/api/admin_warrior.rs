//! `/admin/api/warrior/...` and `/projects.json`: the Warrior HQ project list, validated,
//! sanitised, versioned and served.

use server::store::Role;
use tests::panel::{account, json, Panel};
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
    // JSONP as a script of the tracker's own page (what an injected `<script src>` would be,
    // and the pages' CSP allows the origin's scripts) is refused, also right after the same
    // address was answered from the read cache; another site's page gets it, varying by site.
    let as_script = |site: &str| {
        app.http
            .get(app.url("/projects.json?callback=cb"))
            .header("Sec-Fetch-Site", site)
            .header("Sec-Fetch-Dest", "script")
    };
    let theirs = app.send(as_script("cross-site")).await;
    assert_eq!(theirs.status, 200, "{}", theirs.body);
    assert!(theirs.body.starts_with("cb({"), "{}", theirs.body);
    assert!(
        theirs
            .headers
            .get_all("vary")
            .iter()
            .any(|v| v == "Sec-Fetch-Site"),
        "{:?}",
        theirs.headers
    );
    let ours = app.send(as_script("same-origin")).await;
    assert_eq!(ours.status, 403, "{}", ours.body);
    assert!(ours.body.contains("other sites"), "{}", ours.body);
    // Its own page's fetch of the JSON (not a script) is served as ever.
    let fetched = app
        .send(
            app.http
                .get(app.url("/projects.json"))
                .header("Sec-Fetch-Site", "same-origin")
                .header("Sec-Fetch-Dest", "empty"),
        )
        .await;
    assert_eq!(fetched.status, 200);

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
