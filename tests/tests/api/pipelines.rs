//! Pipeline tokens: `/admin/api/pipelines` (issued by global admins, the secret shown once and
//! stored only as its SHA-256), and the warrior API with a token inside the tracker URL
//! (`/SLUG/token=SECRET/...`) or as a bearer token: projects that require one, tags, match-only
//! pipelines, and claims only their own pipeline may report or release.

use fred::prelude::*;
use server::store::{may_serve, Pipeline, Role};
use std::time::Duration;
use tests::panel::{account, json, last_audit, Panel};
use tests::{wait_for, Reply, TestApp};

const CLAIM: &str = r#"{"downloader":"alice","api_version":"2"}"#;

/// Issues pipeline `name` through the panel; its secret.
async fn issue(p: &mut Panel<'_>, name: &str, tags: &[&str], match_only: bool) -> String {
    let body = serde_json::json!({"name": name, "tags": tags, "match_only": match_only});
    let r = p.post("/admin/api/pipelines", body).await;
    assert_eq!(r.status, 201, "{}", r.body);
    let created = json(&r);
    assert_eq!(created["name"], name);
    created["secret"].as_str().unwrap().to_string()
}

/// `POST path` with `body` and, when given, `Authorization: Bearer bearer`.
async fn call(app: &TestApp, path: &str, bearer: Option<&str>, body: &str) -> Reply {
    let auth = bearer.map(|b| format!("Bearer {b}"));
    let headers: Vec<(&str, &str)> = auth.iter().map(|a| ("authorization", a.as_str())).collect();
    app.post_with(path, &headers, body.to_string()).await
}

/// The item a claim answered.
fn item_of(r: &Reply) -> String {
    assert_eq!(r.status, 200, "claim: {}", r.body);
    json(r)["item_name"].as_str().unwrap().to_string()
}

fn done_body(item: &str) -> String {
    serde_json::json!({"downloader": "alice", "item": item, "bytes": {"data": 10}}).to_string()
}

/// A global admin's panel session on `app`.
async fn root(app: &TestApp) -> Panel<'_> {
    account(app, "root", Role::Global, &[]).await;
    Panel::logged_in(app, "root").await
}

#[tokio::test]
async fn a_project_requiring_a_token_serves_pipelines_with_it_in_the_url_or_as_bearer() {
    let app = TestApp::start().await;
    let mut p = root(&app).await;
    app.project("p", &["a", "b", "c", "d", "e", "f"]).await;
    app.settings("p", |s| s.require_token = true).await;

    let r = call(&app, "/p/request", None, CLAIM).await;
    assert_eq!(r.status, 403, "{}", r.body);
    assert!(r.body.contains("pipeline token"), "{}", r.body);
    let r = call(&app, "/p/token=trp_wrong/request", None, CLAIM).await;
    assert_eq!(r.status, 403, "{}", r.body);
    assert!(r.body.contains("Unknown or revoked"), "{}", r.body);
    let r = call(&app, "/p/request", Some("trp_wrong"), CLAIM).await;
    assert_eq!(r.status, 403, "{}", r.body);
    assert_eq!(app.counts("p").await.out, 0, "nothing was claimed");

    let secret = issue(&mut p, "grab-1", &[], false).await;
    // seesaw joins `<tracker url>/request`: with and without a slash ending the URL.
    let item = item_of(&call(&app, &format!("/p/token={secret}/request"), None, CLAIM).await);
    let status = app.store.queue().item_status("p", &item).await.unwrap();
    assert!(
        status.detail.contains(r#""p":"grab-1""#),
        "{}",
        status.detail
    );
    let second = item_of(&call(&app, &format!("/p/token={secret}//request"), None, CLAIM).await);
    let third = item_of(&call(&app, "/p/request", Some(&secret), CLAIM).await);
    let r = call(
        &app,
        &format!("/p/token={secret}/multi=2//request"),
        None,
        CLAIM,
    )
    .await;
    let batch = item_of(&r);
    assert_eq!(batch.split('\0').count(), 2, "{batch:?}");
    assert_eq!(app.counts("p").await.out, 5);

    // Every call of the warrior API under the same prefix.
    for (path, item) in [
        (format!("/p/token={secret}/done"), &item),
        (format!("/p/token={secret}//done"), &second),
    ] {
        let r = call(&app, &path, None, &done_body(item)).await;
        assert_eq!((r.status, r.body.trim()), (200, "OK"), "{path}");
    }
    let r = call(&app, "/p/done", Some(&secret), &done_body(&third)).await;
    assert_eq!((r.status, r.body.trim()), (200, "OK"));
    let r = call(
        &app,
        &format!("/p/token={secret}/done+request"),
        None,
        &done_body(batch.split('\0').next().unwrap()),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let r = app
        .get(&format!("/p/token={secret}/items/{item}.json"))
        .await;
    assert_eq!(json(&r)["status"], "done");
    let counts = app.counts("p").await;
    assert_eq!((counts.done, counts.out), (4, 2));
    app.assert_invariant("p").await;
}

#[tokio::test]
async fn tags_choose_the_pipelines_a_project_serves() {
    let app = TestApp::start().await;
    let mut p = root(&app).await;
    let items: Vec<String> = (0..20).map(|i| format!("i{i}")).collect();
    let items: Vec<&str> = items.iter().map(String::as_str).collect();
    app.project("tagged", &items).await;
    app.project("open", &items).await;
    app.settings("tagged", |s| s.tags = vec!["east".into(), "north".into()])
        .await;
    let pipelines = [
        ("plain", vec![], false),
        ("east-1", vec!["east"], false),
        ("west-only", vec!["west"], true),
        ("east-only", vec!["east", "west"], true),
    ];
    let mut secrets = vec![];
    for (name, tags, match_only) in &pipelines {
        secrets.push(issue(&mut p, name, tags, *match_only).await);
    }
    // (project, pipeline: its index or none, served)
    let cases = [
        ("tagged", None, true),
        ("tagged", Some(0), false),
        ("tagged", Some(1), true),
        ("tagged", Some(2), false),
        ("tagged", Some(3), true),
        ("open", None, true),
        ("open", Some(0), true),
        ("open", Some(1), true),
        ("open", Some(2), false),
        ("open", Some(3), false),
    ];
    for (slug, which, served) in cases {
        let before = app.counts(slug).await.out;
        let path = match which {
            Some(i) => format!("/{slug}/token={}/request", secrets[i]),
            None => format!("/{slug}/request"),
        };
        let r = call(&app, &path, None, CLAIM).await;
        let label = format!("{slug} {:?}", which.map(|i| pipelines[i].0));
        if served {
            assert_eq!(r.status, 200, "{label}: {}", r.body);
        } else {
            assert_eq!(r.status, 403, "{label}: {}", r.body);
            assert!(
                r.body.contains("does not serve your pipeline"),
                "{}",
                r.body
            );
            assert_eq!(
                app.counts(slug).await.out,
                before,
                "{label}: nothing claimed"
            );
        }
        // The pure function the tracker's project choice uses agrees with the claim script.
        let settings = app.store.projects().project(slug).await.unwrap().unwrap();
        let pipeline = which.map(|i| Pipeline {
            name: pipelines[i].0.into(),
            tags: pipelines[i].1.iter().map(|t| t.to_string()).collect(),
            match_only: pipelines[i].2,
            t: 0,
        });
        assert_eq!(
            may_serve(settings.require_token, &settings.tags, pipeline.as_ref()),
            served,
            "{label}"
        );
    }
}

#[tokio::test]
async fn only_the_claiming_pipeline_reports_or_releases_its_claim() {
    let app = TestApp::start_with(|c| c.admin_token = Some("admin-secret".into())).await;
    let mut p = root(&app).await;
    app.project("p", &["a", "b", "c"]).await;
    let (a, b) = (
        issue(&mut p, "pipe-a", &[], false).await,
        issue(&mut p, "pipe-b", &[], false).await,
    );
    let item = item_of(&call(&app, &format!("/p/token={a}/request"), None, CLAIM).await);
    let before = app.store.queue().item_status("p", &item).await.unwrap();
    let release = serde_json::json!({"item": item, "downloader": "alice"}).to_string();

    let refused = [
        call(&app, &format!("/p/token={b}/done"), None, &done_body(&item)).await,
        call(&app, "/p/done", Some(&b), &done_body(&item)).await,
        call(&app, "/p/done", None, &done_body(&item)).await,
        call(
            &app,
            &format!("/p/token={b}/done+request"),
            None,
            &done_body(&item),
        )
        .await,
        call(&app, &format!("/p/token={b}/release"), None, &release).await,
        call(&app, "/p/release", None, &release).await,
    ];
    for r in &refused {
        assert_eq!(r.status, 403, "{}", r.body);
        assert!(r.body.contains("another pipeline"), "{}", r.body);
    }
    let after = app.store.queue().item_status("p", &item).await.unwrap();
    assert_eq!(after, before, "nothing changed");
    let counts = app.counts("p").await;
    assert_eq!((counts.out, counts.done, counts.todo), (1, 0, 2));

    // Its own pipeline releases it; the admin token releases anyone's.
    let r = call(&app, &format!("/p/token={a}/release"), None, &release).await;
    assert_eq!((r.status, r.body.trim()), (200, "Released OK."));
    let item = item_of(&call(&app, &format!("/p/token={a}/request"), None, CLAIM).await);
    let release = serde_json::json!({"item": item}).to_string();
    let r = call(&app, "/p/release", Some("admin-secret"), &release).await;
    assert_eq!((r.status, r.body.trim()), (200, "Released OK."));

    // Its own pipeline reports it done.
    let item = item_of(&call(&app, "/p/request", Some(&a), CLAIM).await);
    let r = call(&app, "/p/done", Some(&a), &done_body(&item)).await;
    assert_eq!((r.status, r.body.trim()), (200, "OK"));
    // A claim without a token keeps today's rules: anyone reports it.
    let plain = item_of(&call(&app, "/p/request", None, CLAIM).await);
    let r = call(
        &app,
        &format!("/p/token={b}/done"),
        None,
        &done_body(&plain),
    )
    .await;
    assert_eq!((r.status, r.body.trim()), (200, "OK"));
    assert_eq!(app.counts("p").await.done, 2);
    app.assert_invariant("p").await;
}

/// Every key and value in the test's Redis, as text.
async fn everything_in_redis(app: &TestApp) -> String {
    let client = app.store.client();
    let keys: Vec<String> = client.custom(fred::cmd!("KEYS"), vec!["*"]).await.unwrap();
    let mut all = String::new();
    for key in keys {
        let kind: String = client
            .custom(fred::cmd!("TYPE"), vec![key.as_str()])
            .await
            .unwrap();
        let k = key.as_str();
        let (cmd, args) = match kind.as_str() {
            "string" => (fred::cmd!("GET"), vec![k]),
            "hash" => (fred::cmd!("HGETALL"), vec![k]),
            "set" => (fred::cmd!("SMEMBERS"), vec![k]),
            "zset" => (fred::cmd!("ZRANGE"), vec![k, "0", "-1"]),
            "list" => (fred::cmd!("LRANGE"), vec![k, "0", "-1"]),
            "stream" => (fred::cmd!("XRANGE"), vec![k, "-", "+"]),
            _ => continue,
        };
        let value: fred::types::Value = client.custom(cmd, args).await.unwrap();
        all.push_str(&format!("{key} {value:?}\n"));
    }
    all
}

#[tokio::test]
async fn a_secret_is_stored_only_as_its_hash_and_stops_working_when_revoked() {
    let app = TestApp::start().await;
    let mut p = root(&app).await;
    app.project("p", &["a", "b"]).await;
    let secret = issue(&mut p, "grab-1", &["east"], false).await;
    let item = item_of(&call(&app, &format!("/p/token={secret}/request"), None, CLAIM).await);

    let stored = everything_in_redis(&app).await;
    assert!(
        stored.contains("grab-1"),
        "the pipeline is stored: {stored}"
    );
    assert!(!stored.contains(&secret), "the secret is not: {stored}");
    let hash = server::store::token_hash(&secret);
    assert!(stored.contains(&hash), "its SHA-256 is");
    let listed = p.get("/admin/api/pipelines").await;
    assert_eq!(json(&listed)[0]["name"], "grab-1");
    assert_eq!(json(&listed)[0]["tags"], serde_json::json!(["east"]));
    assert!(!listed.body.contains(&secret), "{}", listed.body);

    let r = p
        .send(
            reqwest::Method::DELETE,
            "/admin/api/pipelines/grab-1",
            serde_json::json!({}),
        )
        .await;
    assert_eq!(r.status, 204, "{}", r.body);
    let audit = last_audit(&mut p, "pipeline.revoke").await;
    assert_eq!(
        (audit["who"].as_str(), audit["detail"].as_str()),
        (Some("root"), Some("grab-1"))
    );
    for path in [
        format!("/p/token={secret}/request"),
        format!("/p/token={secret}/done"),
    ] {
        let r = call(&app, &path, None, &done_body(&item)).await;
        assert_eq!(r.status, 403, "{path}: {}", r.body);
        assert!(r.body.contains("Unknown or revoked"), "{}", r.body);
    }
    assert_eq!(app.counts("p").await.done, 0);
    let r = p
        .send(
            reqwest::Method::DELETE,
            "/admin/api/pipelines/grab-1",
            serde_json::json!({}),
        )
        .await;
    assert_eq!(r.status, 404, "{}", r.body);
    assert!(
        !everything_in_redis(&app).await.contains(&hash),
        "its hash is gone too"
    );
}

#[tokio::test]
async fn global_admins_issue_pipelines_with_checked_names_and_tags() {
    let app = TestApp::start().await;
    app.project("p", &[]).await;
    let mut p = root(&app).await;
    account(&app, "pat", Role::Project, &["p"]).await;
    let mut pat = Panel::logged_in(&app, "pat").await;
    assert_eq!(pat.get("/admin/api/pipelines").await.status, 403);
    let body = serde_json::json!({"name": "mine"});
    assert_eq!(pat.post("/admin/api/pipelines", body).await.status, 403);

    let many: Vec<String> = (0..17).map(|i| format!("t{i}")).collect();
    for (body, why) in [
        (serde_json::json!({"name": ""}), "name"),
        (serde_json::json!({"name": "a b"}), "name"),
        (serde_json::json!({"name": "x".repeat(65)}), "name"),
        (serde_json::json!({"name": "ok", "tags": ["East"]}), "tag"),
        (
            serde_json::json!({"name": "ok", "tags": ["a", "a"]}),
            "twice",
        ),
        (serde_json::json!({"name": "ok", "tags": many}), "16"),
        (serde_json::json!({"name": "ok", "match_only": true}), "tag"),
    ] {
        let r = p.post("/admin/api/pipelines", body.clone()).await;
        assert_eq!(r.status, 400, "{body}: {}", r.body);
        assert!(r.body.contains(why), "{body}: {}", r.body);
    }
    assert!(app.store.people().pipelines().await.unwrap().is_empty());

    issue(&mut p, "b.2_x-y", &["east", "west"], true).await;
    let audit = last_audit(&mut p, "pipeline.create").await;
    assert_eq!(audit["detail"], "b.2_x-y tags=east,west match-only");
    issue(&mut p, "a", &[], false).await;
    let r = p
        .post("/admin/api/pipelines", serde_json::json!({"name": "a"}))
        .await;
    assert_eq!(r.status, 409, "{}", r.body);
    let names: Vec<String> = app
        .store
        .people()
        .pipelines()
        .await
        .unwrap()
        .into_iter()
        .map(|p| p.name)
        .collect();
    assert_eq!(names, ["a", "b.2_x-y"]);

    // A project's tags are checked as a pipeline's are.
    let mut s = json(&p.get("/admin/api/p/settings").await);
    s["settings"]["tags"] = serde_json::json!(["East"]);
    let r = p
        .send(reqwest::Method::PUT, "/admin/api/p/settings", s.clone())
        .await;
    assert_eq!(r.status, 400, "{}", r.body);
    s["settings"]["tags"] = serde_json::json!(["east"]);
    s["settings"]["require_token"] = true.into();
    let r = p
        .send(reqwest::Method::PUT, "/admin/api/p/settings", s)
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let saved = app.store.projects().project("p").await.unwrap().unwrap();
    assert_eq!(
        (saved.require_token, saved.tags.clone()),
        (true, vec!["east".to_string()])
    );
}

#[tokio::test]
async fn the_command_line_issues_lists_and_revokes_pipelines() {
    let app = TestApp::start().await;
    app.project("p", &["a"]).await;
    let secret = app.pipeline_secret("cli-1", "east,west");
    let r = call(&app, &format!("/p/token={secret}/request"), None, CLAIM).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let run = app.cli(&["pipeline", "list"], b"");
    assert!(
        run.ok && run.out.contains("cli-1 tags=east,west"),
        "{}",
        run.out
    );
    assert!(!run.out.contains(&secret));
    let run = app.cli(
        &["project", "set", "p", "require_token=true", "tags=east"],
        b"",
    );
    assert!(run.ok, "{}", run.err);
    // The server hears of the change through the settings version (within half a second).
    wait_for("the new settings", Duration::from_secs(3), || async {
        let saved = app.store.projects().project("p").await.unwrap().unwrap();
        (saved.require_token && saved.tags == ["east"]).then_some(())
    })
    .await;
    let run = app.cli(&["pipeline", "revoke", "cli-1"], b"");
    assert!(run.ok, "{}", run.err);
    let run = app.cli(&["pipeline", "revoke", "cli-1"], b"");
    assert!(!run.ok && run.err.contains("No pipeline"), "{}", run.err);
    // Revoked by another process: refused here within the settings check, well under the
    // 5 s a lookup is trusted.
    // (A done of an item the project does not know: 404 while the token works, changing nothing.)
    let path = format!("/p/token={secret}/done");
    let refused = wait_for("the revocation", Duration::from_secs(3), || async {
        let r = call(&app, &path, None, &done_body("unknown")).await;
        (r.status != 404).then_some(r)
    })
    .await;
    assert_eq!(refused.status, 403, "{}", refused.body);
    assert!(
        refused.body.contains("Unknown or revoked"),
        "{}",
        refused.body
    );
}
