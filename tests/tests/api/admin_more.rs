//! The admin API's newer parts: per-account API tokens, log archives, the settings form's
//! fields (admins, priority, validation), and their permissions and audit entries.

use super::admin::{account, json, Panel};
use server::store::Role;
use std::io::Read;
use tests::{Reply, TestApp};

/// `POST path` with `Authorization: Bearer secret` and a plain body, no cookie, no CSRF.
async fn with_token(app: &TestApp, secret: &str, path: &str, body: &str) -> Reply {
    app.send(
        app.http
            .post(app.url(path))
            .header("authorization", format!("Bearer {secret}"))
            .header("content-type", "application/json")
            .body(body.to_string()),
    )
    .await
}

/// The newest audit entry with action `action`.
async fn last_audit(p: &mut Panel<'_>, action: &str) -> serde_json::Value {
    let list = json(&p.get(&format!("/admin/api/audit?action={action}")).await);
    list[0].clone()
}

#[tokio::test]
async fn api_tokens_add_items_with_the_owners_role_until_revoked() {
    let app = TestApp::start().await;
    app.project("p1", &[]).await;
    app.project("p2", &[]).await;
    account(&app, "pat", Role::Project, &["p1"]).await;
    account(&app, "ro", Role::ReadOnly, &[]).await;
    let mut p = Panel::logged_in(&app, "pat").await;

    let r = p
        .post("/admin/api/tokens", serde_json::json!({"name": "  "}))
        .await;
    assert_eq!(r.status, 400, "{}", r.body);
    let r = p
        .post("/admin/api/tokens", serde_json::json!({"name": "ingest"}))
        .await;
    assert_eq!(r.status, 201, "{}", r.body);
    let created = json(&r);
    let (secret, id) = (
        created["secret"].as_str().unwrap().to_string(),
        created["id"].as_str().unwrap().to_string(),
    );
    let listed = json(&p.get("/admin/api/tokens").await);
    assert_eq!(listed[0]["id"], id.as_str());
    assert!(
        !listed.to_string().contains(&secret),
        "the secret is shown once"
    );
    let stored = format!("{:?}", app.store.tokens("pat").await.unwrap());
    assert!(!stored.contains(&secret), "only its hash is stored");

    let r = with_token(&app, &secret, "/admin/api/p1/items?queue=todo", "a\nb\n").await;
    assert_eq!(r.status, 200, "no session, no CSRF: {}", r.body);
    assert_eq!(json(&r)["count"], 2);
    assert_eq!(app.counts("p1").await.todo, 2);
    let r = with_token(&app, &secret, "/admin/api/p2/items?queue=todo", "a\n").await;
    assert_eq!(r.status, 403, "the owner's role: {}", r.body);
    assert_eq!(app.counts("p2").await.todo, 0);
    let audit = last_audit(&mut p, "items").await;
    assert_eq!(audit["who"], "pat");
    assert!(audit["detail"].as_str().unwrap().contains(&id), "{audit}");
    let r = with_token(&app, &secret, "/admin/api/tokens", r#"{"name":"x"}"#).await;
    assert_eq!(r.status, 403, "a token cannot mint tokens: {}", r.body);

    let r = with_token(&app, "trk_wrong", "/admin/api/p1/items", "c\n").await;
    assert_eq!(r.status, 401);
    let r = p
        .send(
            reqwest::Method::DELETE,
            &format!("/admin/api/tokens/{id}"),
            serde_json::json!({}),
        )
        .await;
    assert_eq!(r.status, 204, "{}", r.body);
    let r = with_token(&app, &secret, "/admin/api/p1/items", "c\n").await;
    assert_eq!(r.status, 401, "revoked: {}", r.body);
    assert_eq!(app.counts("p1").await.todo, 2);
    assert_eq!(
        last_audit(&mut p, "token.revoke").await["detail"],
        id.as_str()
    );

    // Read-only accounts make no tokens; a token of an account made read-only later only reads.
    let mut ro = Panel::logged_in(&app, "ro").await;
    let r = ro
        .post("/admin/api/tokens", serde_json::json!({"name": "look"}))
        .await;
    assert_eq!(r.status, 403, "{}", r.body);
    let r = p
        .post("/admin/api/tokens", serde_json::json!({"name": "later"}))
        .await;
    let secret = json(&r)["secret"].as_str().unwrap().to_string();
    account_role(&app, "pat", Role::ReadOnly).await;
    let r = with_token(&app, &secret, "/admin/api/p1/items", "z\n").await;
    assert_eq!(r.status, 403, "{}", r.body);
    let r = app
        .send(
            app.http
                .get(app.url("/admin/api/p1/queues"))
                .header("authorization", format!("Bearer {secret}")),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(app.counts("p1").await.todo, 2);
}

/// Gives account `name` role `role`.
async fn account_role(app: &TestApp, name: &str, role: Role) {
    let mut a = app.store.account(name).await.unwrap().unwrap();
    a.role = role;
    app.store.save_account(&a).await.unwrap();
}

#[tokio::test]
async fn deleting_an_account_revokes_its_tokens() {
    let app = TestApp::start().await;
    app.project("p1", &[]).await;
    account(&app, "root", Role::Global, &[]).await;
    account(&app, "bob", Role::Global, &[]).await;
    let mut bob = Panel::logged_in(&app, "bob").await;
    let r = bob
        .post("/admin/api/tokens", serde_json::json!({"name": "t"}))
        .await;
    let secret = json(&r)["secret"].as_str().unwrap().to_string();
    let mut root = Panel::logged_in(&app, "root").await;
    let r = root
        .send(
            reqwest::Method::DELETE,
            "/admin/api/users/bob",
            serde_json::json!({}),
        )
        .await;
    assert_eq!(r.status, 204, "{}", r.body);
    assert_eq!(
        with_token(&app, &secret, "/admin/api/p1/items", "a\n")
            .await
            .status,
        401
    );
}

#[tokio::test]
async fn archiving_writes_the_oldest_log_entries_to_gzip_and_trims_them() {
    let app = TestApp::start().await;
    app.project("p1", &["a", "b", "c", "d"]).await;
    account(&app, "root", Role::Global, &[]).await;
    account(&app, "ro", Role::ReadOnly, &[]).await;
    account(&app, "other", Role::Project, &["p2"]).await;
    for _ in 0..3 {
        let item = app.claim("p1", "alice").await;
        assert_eq!(app.done("p1", "alice", &item, 10).await.status, 200);
    }
    let mut p = Panel::logged_in(&app, "root").await;
    let log = p.get("/admin/api/p1/log").await.body;
    let ids: Vec<String> = log
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["log_id"].to_string())
        .collect();
    assert_eq!(ids.len(), 3);
    let ms = |id: &str| -> u64 {
        id.trim_matches('"')
            .split('-')
            .next()
            .unwrap()
            .parse()
            .unwrap()
    };
    let cut = ms(&ids[1]);
    let expected = ids.iter().filter(|i| ms(i) <= cut).count();

    for who in ["ro", "other"] {
        let mut q = Panel::logged_in(&app, who).await;
        let r = q
            .post("/admin/api/p1/log/archive", serde_json::json!({"to": cut}))
            .await;
        assert_eq!(r.status, 403, "{who}: {}", r.body);
    }
    let r = p
        .post(
            "/admin/api/p1/log/archive",
            serde_json::json!({"to": "soon"}),
        )
        .await;
    assert_eq!(r.status, 422, "{}", r.body);
    let dry = json(
        &p.post(
            "/admin/api/p1/log/archive",
            serde_json::json!({"to": cut, "dry_run": true}),
        )
        .await,
    );
    assert_eq!(dry["count"], expected);
    assert_eq!(p.get("/admin/api/p1/log").await.body.lines().count(), 3);

    let done = json(
        &p.post("/admin/api/p1/log/archive", serde_json::json!({"to": cut}))
            .await,
    );
    assert_eq!(done["count"], expected);
    let file = done["file"].as_str().unwrap().to_string();
    assert!(
        file.starts_with("p1-") && file.ends_with(".ndjson.gz"),
        "{file}"
    );
    let left = p.get("/admin/api/p1/log").await.body;
    assert_eq!(left.lines().count(), 3 - expected, "trimmed from Redis");

    let listed = json(&p.get("/admin/api/p1/archives").await);
    assert_eq!(listed[0]["name"], file.as_str());
    let r = app
        .send(
            app.http
                .get(app.url(&format!("/admin/api/p1/archives/{file}")))
                .header("cookie", &p.cookie),
        )
        .await;
    assert_eq!(r.status, 200);
    let raw = app
        .http
        .get(app.url(&format!("/admin/api/p1/archives/{file}")))
        .header("cookie", &p.cookie)
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    let mut text = String::new();
    flate2::read::GzDecoder::new(&raw[..])
        .read_to_string(&mut text)
        .unwrap();
    let archived: Vec<&str> = text.lines().collect();
    assert_eq!(archived.len(), expected);
    assert_eq!(
        archived.join("\n"),
        log.lines().take(expected).collect::<Vec<_>>().join("\n")
    );
    assert_eq!(
        p.get("/admin/api/p1/archives/..%2F..%2Fetc%2Fpasswd")
            .await
            .status,
        404
    );
    let audit = last_audit(&mut p, "log.archive").await;
    assert_eq!(audit["count"], expected);
    assert_eq!(audit["detail"], file.as_str());

    // Nothing left before the cut: no file.
    let again = json(
        &p.post("/admin/api/p1/log/archive", serde_json::json!({"to": cut}))
            .await,
    );
    assert_eq!(again["count"], 0);
    assert!(again["file"].is_null());
}

#[tokio::test]
async fn the_settings_form_sets_admins_priority_and_refuses_bad_fields() {
    let app = TestApp::start().await;
    app.project("p1", &[]).await;
    app.project("p2", &[]).await;
    account(&app, "root", Role::Global, &[]).await;
    account(&app, "pat", Role::Project, &["p1"]).await;
    account(&app, "sam", Role::Project, &["p2"]).await;
    account(&app, "ro", Role::ReadOnly, &[]).await;
    let mut root = Panel::logged_in(&app, "root").await;
    let path = "/admin/api/p1/settings";
    let mut s = json(&root.get(path).await);
    assert_eq!(s["admins"], serde_json::json!(["pat"]));

    let before = app.store.project("p1").await.unwrap().unwrap();
    for (field, value, says) in [
        (
            "pattern_limits",
            serde_json::json!([{"name": "Bad Name", "pattern": "x", "rate": 1.0, "burst": 1.0}]),
            "pattern limit name",
        ),
        (
            "extra",
            serde_json::json!({"item_name": "x"}),
            "extra field",
        ),
        (
            "item_pattern",
            serde_json::json!("(unclosed"),
            "item_pattern",
        ),
        ("domains", serde_json::json!([]), "domains"),
    ] {
        let mut bad = s.clone();
        bad["settings"][field] = value;
        let r = root.send(reqwest::Method::PUT, path, bad).await;
        assert_eq!(r.status, 400, "{field}: {}", r.body);
        assert!(r.body.contains(says), "{field}: {}", r.body);
    }
    let mut bad = s.clone();
    bad["admins"] = serde_json::json!(["pat", "ro"]);
    let r = root.send(reqwest::Method::PUT, path, bad).await;
    assert_eq!(r.status, 400, "{}", r.body);
    assert!(r.body.contains("not a project-admin"), "{}", r.body);
    assert_eq!(
        *app.store.project("p1").await.unwrap().unwrap(),
        *before,
        "nothing changed"
    );

    s["admins"] = serde_json::json!(["sam"]);
    s["priority"] = 7.into();
    s["settings"]["extra"] = serde_json::json!({"warc_prefix": "p1-"});
    s["settings"]["pattern_limits"] =
        serde_json::json!([{"name": "big", "pattern": "^big-", "rate": 2.0, "burst": 4.0}]);
    let r = root.send(reqwest::Method::PUT, path, s.clone()).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let saved = json(&r);
    assert_eq!(saved["admins"], serde_json::json!(["sam"]));
    assert_eq!(saved["priority"], 7);
    assert_eq!(saved["settings"]["extra"]["warc_prefix"], "p1-");
    let sam = app.store.account("sam").await.unwrap().unwrap();
    assert_eq!(sam.projects, ["p2", "p1"]);
    assert!(app
        .store
        .account("pat")
        .await
        .unwrap()
        .unwrap()
        .projects
        .is_empty());
    assert_eq!(
        last_audit(&mut root, "settings.admins").await["detail"],
        "sam"
    );

    // A project admin saves settings but cannot change who administers.
    let mut sam = Panel::logged_in(&app, "sam").await;
    let mut mine = json(&sam.get(path).await);
    mine["settings"]["rate"] = 3.0.into();
    assert_eq!(
        sam.send(reqwest::Method::PUT, path, mine.clone())
            .await
            .status,
        200
    );
    mine["admins"] = serde_json::json!(["sam", "pat"]);
    let r = sam.send(reqwest::Method::PUT, path, mine).await;
    assert_eq!(r.status, 403, "{}", r.body);
    // Without `priority` and `admins` (the raw JSON editor), both stay.
    let saved = json(&root.get(path).await);
    assert_eq!(saved["priority"], 7);
    assert_eq!(saved["admins"], serde_json::json!(["sam"]));

    let mut ro = Panel::logged_in(&app, "ro").await;
    let r = ro.send(reqwest::Method::PUT, path, saved).await;
    assert_eq!(r.status, 403);
}

#[tokio::test]
async fn destroying_a_project_takes_it_off_its_admins() {
    let app = TestApp::start().await;
    app.project("p1", &[]).await;
    app.project("p2", &[]).await;
    account(&app, "root", Role::Global, &[]).await;
    account(&app, "pat", Role::Project, &["p1", "p2"]).await;
    let mut root = Panel::logged_in(&app, "root").await;
    let r = root
        .send(
            reqwest::Method::DELETE,
            "/admin/api/p1?confirm=p1",
            serde_json::json!({}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let pat = app.store.account("pat").await.unwrap().unwrap();
    assert_eq!(pat.projects, ["p2"], "a new p1 would not be pat's");
    assert_eq!(
        last_audit(&mut root, "project.destroy").await["detail"],
        "admins removed: pat"
    );
}
