//! Project lifecycle (active, draining, finished derived; paused, aborted set), the generated
//! `projects.json` and `auto_project`, with the bodies seesaw-kit's Warrior sends.

use server::store::Role;
use std::time::{Duration, Instant};
use tests::panel::{account, json, last_audit, Panel};
use tests::TestApp;

/// `POST path` with a JSON body: status and parsed answer.
async fn post(app: &TestApp, path: &str, body: serde_json::Value) -> (u16, serde_json::Value) {
    let r = app.post(path, body.to_string()).await;
    let v = serde_json::from_str(&r.body).unwrap_or(serde_json::Value::Null);
    (r.status, v)
}

/// Registers as the Warrior does, then sends its update with `selected_project` "auto": the
/// warrior id and the answer.
async fn warrior_update(app: &TestApp, id: Option<&str>) -> (String, serde_json::Value) {
    let id = match id {
        Some(id) => id.to_string(),
        None => {
            let (status, v) = post(
                app,
                "/api/register.json",
                serde_json::json!({"warrior": {"version": "4.1-20240906.01"}}),
            )
            .await;
            assert_eq!(status, 200, "{v}");
            v["warrior_id"].as_str().unwrap().to_string()
        }
    };
    let (status, answer) = post(
        app,
        "/api/update.json",
        serde_json::json!({"warrior": {"warrior_id": id, "lat_lng": [51.5, -0.1],
            "downloader": "alice", "selected_project": "auto", "version": "4.1-20240906.01",
            "concurrency": 2}}),
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    (id, answer)
}

/// Waits (10 s at most) until the update of warrior `id`, sent with `bearer` if any, names
/// `expected` as `auto_project` (settings reach the server within a second); that answer.
async fn auto_becomes(
    app: &TestApp,
    id: &str,
    bearer: Option<&str>,
    expected: serde_json::Value,
) -> serde_json::Value {
    let body = serde_json::json!({"warrior": {"warrior_id": id, "downloader": "alice",
        "selected_project": "auto", "version": "4.1-20240906.01"}});
    let end = Instant::now() + Duration::from_secs(10);
    loop {
        let mut req = app
            .http
            .post(app.url("/api/update.json"))
            .body(body.to_string());
        if let Some(b) = bearer {
            req = req.bearer_auth(b);
        }
        let r = app.send(req).await;
        assert_eq!(r.status, 200, "{}", r.body);
        let answer: serde_json::Value = serde_json::from_str(&r.body).unwrap();
        if answer["auto_project"] == expected {
            return answer;
        }
        assert!(
            Instant::now() < end,
            "auto_project never became {expected}: {answer}"
        );
        // Polled as fast as one network may update Warrior HQ (20 a second).
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Lists `slug` for Warriors with a repository, at niceness `priority`.
async fn list(p: &mut Panel<'_>, slug: &str, priority: i64) {
    let r = p
        .send(
            reqwest::Method::PUT,
            &format!("/admin/api/{slug}/listing"),
            serde_json::json!({"repository": format!("https://example.org/{slug}-grab"),
                "deadline": "2030-01-01T00:00:00Z", "lat_lng": [52.5, 13.4],
                "marker_html": "<b>here</b><script>x()</script>"}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let mut s = json(&p.get(&format!("/admin/api/{slug}/settings")).await);
    s["priority"] = priority.into();
    let r = p
        .send(
            reqwest::Method::PUT,
            &format!("/admin/api/{slug}/settings"),
            s,
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
}

#[tokio::test]
async fn auto_project_moves_on_when_a_project_runs_dry_and_when_it_is_paused() {
    let app = TestApp::start().await;
    account(&app, "root", Role::Global, &[]).await;
    let mut p = Panel::logged_in(&app, "root").await;
    app.project("first", &["f1", "f2"]).await;
    app.project("second", &["s1"]).await;
    app.project("hidden", &["h1"]).await;
    // Lower niceness runs first; a project without a listing is not offered.
    list(&mut p, "first", -5).await;
    list(&mut p, "second", 3).await;

    let (id, answer) = warrior_update(&app, None).await;
    assert_eq!(answer["auto_project"], "first", "{answer}");
    let names: Vec<&str> = answer["projects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["first", "second"], "listed projects, best first");
    let first = &answer["projects"][0];
    assert_eq!(first["repository"], "https://example.org/first-grab");
    assert_eq!(first["state"], "active");
    assert_eq!(first["deadline"], "2030-01-01T00:00:00Z");
    assert_eq!(first["lat_lng"], serde_json::json!([52.5, 13.4]));
    assert_eq!(first["marker_html"], "<b>here</b>", "sanitised");
    assert!(first["leaderboard"].as_str().unwrap().ends_with("/first/"));
    assert_eq!(answer["warrior"]["seesaw_version"], "0.10.3");

    // The first project runs dry: both items claimed, none left to hand out.
    let a = app.claim("first", "alice").await;
    let b = app.claim("first", "alice").await;
    let answer = auto_becomes(&app, &id, None, "second".into()).await;
    assert_eq!(answer["projects"][0]["state"], "draining");
    let change = last_audit(&mut p, "auto_project.change").await;
    assert_eq!(change["who"], "tracker");
    assert_eq!(change["detail"], "first → second: first is draining");

    // Paused, the second gives way too: nothing has work, and "auto" gets no project.
    app.settings("second", |s| s.state = "paused".into()).await;
    let answer = auto_becomes(&app, &id, None, serde_json::Value::Null).await;
    assert_eq!(answer["projects"][1]["state"], "paused");

    // Finished once its claims are done; work queued again makes it active again.
    app.done("first", "alice", &a, 1).await;
    app.done("first", "alice", &b, 1).await;
    let public = json(&app.get("/projects.json").await);
    assert_eq!(public["projects"][0]["state"], "finished");
    app.cli(&["items", "add", "first", "-"], b"f3\n");
    auto_becomes(&app, &id, None, "first".into()).await;

    // An admin pins the paused project's neighbour; the pin holds while it serves.
    app.settings("second", |s| s.state = "active".into()).await;
    auto_becomes(&app, &id, None, "first".into()).await;
    let r = p
        .send(
            reqwest::Method::PUT,
            "/admin/api/warrior/auto",
            serde_json::json!({"pin": "second"}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(json(&r)["chosen"], "second");
    assert_eq!(
        last_audit(&mut p, "auto_project.pin").await["detail"],
        "pinned to second"
    );
    assert_eq!(
        json(&app.get("/projects.json").await)["auto_project"],
        "second"
    );
    let r = p
        .send(
            reqwest::Method::PUT,
            "/admin/api/warrior/auto",
            serde_json::json!({"pin": "nope"}),
        )
        .await;
    assert_eq!(r.status, 404, "{}", r.body);
    let auto = json(&p.get("/admin/api/warrior/auto").await);
    assert_eq!(auto["pinned"], "second", "a refused pin changes nothing");
    let candidates: Vec<&str> = auto["candidates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["slug"].as_str().unwrap())
        .collect();
    assert_eq!(candidates, ["first", "second"]);
}

/// The listing at `path` once its newest recorded change is to `state` (within 15 s: the
/// changes are noticed every 5 s).
async fn recorded(
    p: &mut Panel<'_>,
    path: &str,
    state: &str,
    states: impl Fn(&serde_json::Value) -> Vec<String>,
) -> serde_json::Value {
    let end = Instant::now() + Duration::from_secs(15);
    loop {
        let v = json(&p.get(path).await);
        if states(&v).first().map(String::as_str) == Some(state) {
            return v;
        }
        assert!(Instant::now() < end, "{state} not recorded: {v}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn derived_state_changes_are_recorded_with_their_time_and_shown() {
    let app = TestApp::start().await;
    account(&app, "root", Role::Global, &[]).await;
    let mut p = Panel::logged_in(&app, "root").await;
    app.project("p", &["one"]).await;
    let item = app.claim("p", "alice").await;
    let path = "/admin/api/p/listing";
    let states = |v: &serde_json::Value| -> Vec<String> {
        v["transitions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["state"].as_str().unwrap().to_string())
            .collect()
    };
    let v = recorded(&mut p, path, "draining", states).await;
    assert_eq!(v["state"], "draining");
    assert_eq!(
        v["entry"],
        serde_json::Value::Null,
        "not listed without a repository"
    );
    app.done("p", "alice", &item, 1).await;
    let v = recorded(&mut p, path, "finished", states).await;
    let t = &v["transitions"][0];
    assert_eq!(t["from"], "draining");
    assert!(t["t"].as_u64().unwrap() > 1_700_000_000_000, "a time in ms");
    // The pages show the state.
    let home = tests::rendered(&app.get("/").await.body);
    assert!(home.contains("state-finished"), "{home}");
    let board = tests::rendered(&app.get("/p/").await.body);
    assert!(board.contains(">finished<"), "{board}");
    let overview = json(&p.get("/admin/api/overview").await);
    assert_eq!(overview["projects"][0]["state"], "finished");
    // An operator's abort stops claims and shows as such.
    app.settings("p", |s| s.state = "aborted".into()).await;
    let add = app.cli(&["items", "add", "p", "-"], b"two\n");
    assert!(add.ok, "{} {}", add.out, add.err);
    assert_eq!(app.counts("p").await.todo, 1, "an item waits");
    let r = app.post("/p/request", r#"{"downloader":"bob"}"#).await;
    assert_eq!(r.status, 404, "{}", r.body);
    assert!(
        r.body.contains("not handing out"),
        "refused for the state: {}",
        r.body
    );
    assert_eq!(app.counts("p").await.todo, 1, "and it still waits");
    assert_eq!(json(&p.get(path).await)["state"], "aborted");
}

#[tokio::test]
async fn bad_listings_and_states_are_refused_and_change_nothing() {
    let app = TestApp::start().await;
    account(&app, "root", Role::Global, &[]).await;
    let mut p = Panel::logged_in(&app, "root").await;
    app.project("p", &[]).await;
    let path = "/admin/api/p/listing";
    for (body, reason) in [
        (serde_json::json!({"repository": ""}), "repository"),
        (serde_json::json!({"repository": "not a url"}), "URL"),
        // What `git clone` on every volunteer's machine would take as an option, or a command.
        (
            serde_json::json!({"repository": "--upload-pack=touch /tmp/x;://x"}),
            "https://",
        ),
        (
            serde_json::json!({"repository": "javascript://x"}),
            "https://",
        ),
        (
            serde_json::json!({"repository": "git://github.com/a/b"}),
            "https://",
        ),
        (
            serde_json::json!({"repository": format!("https://x/{}", "a".repeat(2000))}),
            "1024",
        ),
        (
            serde_json::json!({"repository": "https://x/r", "deadline": "soon"}),
            "deadline",
        ),
        (
            serde_json::json!({"repository": "https://x/r", "lat_lng": [91, 0]}),
            "lat_lng",
        ),
        (
            serde_json::json!({"repository": "https://x/r", "host": "a b"}),
            "host",
        ),
        (
            serde_json::json!({"repository": "https://x/r", "marker_html": "x".repeat(5000)}),
            "4096",
        ),
    ] {
        let r = p.send(reqwest::Method::PUT, path, body.clone()).await;
        assert_eq!(r.status, 400, "{body}: {}", r.body);
        assert!(r.body.contains(reason), "{body}: {}", r.body);
    }
    let v = json(&p.get(path).await);
    assert_eq!(v["listing"]["repository"], "", "nothing saved");
    let r = p
        .send(
            reqwest::Method::PUT,
            "/admin/api/nope/listing",
            serde_json::json!({}),
        )
        .await;
    assert_eq!(r.status, 404);
    // Draining and finished are derived, never set.
    let mut s = json(&p.get("/admin/api/p/settings").await);
    s["settings"]["state"] = "finished".into();
    let r = p
        .send(reqwest::Method::PUT, "/admin/api/p/settings", s)
        .await;
    assert_eq!(r.status, 400, "{}", r.body);
    assert!(r.body.contains("follow from the counts"), "{}", r.body);
    let saved = json(&p.get("/admin/api/p/settings").await);
    assert_eq!(
        saved["settings"]["state"], "active",
        "the refused state is not saved"
    );
    // A read-only account reads but neither lists nor pins.
    account(&app, "viewer", Role::ReadOnly, &[]).await;
    let mut ro = Panel::logged_in(&app, "viewer").await;
    assert_eq!(ro.get(path).await.status, 200);
    let r = ro
        .send(
            reqwest::Method::PUT,
            path,
            serde_json::json!({"repository": "https://x/r"}),
        )
        .await;
    assert_eq!(r.status, 403);
    let v = json(&p.get(path).await);
    assert_eq!(
        v["listing"]["repository"], "",
        "the refused listing is not saved"
    );
    let r = ro
        .send(
            reqwest::Method::PUT,
            "/admin/api/warrior/auto",
            serde_json::json!({"pin": "p"}),
        )
        .await;
    assert_eq!(r.status, 403);
    let auto = json(&p.get("/admin/api/warrior/auto").await);
    assert!(
        auto["pinned"].is_null(),
        "the refused pin is not saved: {auto}"
    );
}

#[tokio::test]
async fn a_pipeline_gets_the_auto_project_its_tags_allow() {
    let app = TestApp::start().await;
    account(&app, "root", Role::Global, &[]).await;
    let mut p = Panel::logged_in(&app, "root").await;
    app.project("tagged", &["t1"]).await;
    app.project("open", &["o1"]).await;
    list(&mut p, "tagged", -10).await;
    list(&mut p, "open", 0).await;
    app.settings("tagged", |s| {
        s.require_token = true;
        s.tags = vec!["big".into()];
    })
    .await;
    let secret = app.pipeline_secret("big-1", "big");
    let (id, _) = warrior_update(&app, None).await;
    // Without a token the project that requires one is skipped, though it comes first.
    auto_becomes(&app, &id, None, "open".into()).await;
    auto_becomes(&app, &id, Some(&secret), "tagged".into()).await;
    let r = app
        .send(
            app.http
                .get(app.url("/projects.json"))
                .bearer_auth("trp_nope"),
        )
        .await;
    assert_eq!(r.status, 403, "an unknown token is refused: {}", r.body);
    // The choice recorded (and audited) is the one for Warriors without a token.
    let auto = json(&p.get("/admin/api/warrior/auto").await);
    assert_eq!(auto["chosen"], "open");
}

/// Which code the fleet runs is a global admin's: a project admin's listing, or a new
/// repository, is saved but waits for a global admin's approval (a global admin's save of the
/// listing); meanwhile Warriors get nothing new, or the repository approved before.
#[tokio::test]
async fn a_project_admin_proposes_a_listing_and_a_global_admin_approves_it() {
    let app = TestApp::start().await;
    account(&app, "root", Role::Global, &[]).await;
    account(&app, "pat", Role::Project, &["mine"]).await;
    app.project("mine", &["m1"]).await;
    let mut pat = Panel::logged_in(&app, "pat").await;
    let mut root = Panel::logged_in(&app, "root").await;
    let served = || async {
        let v: serde_json::Value =
            serde_json::from_str(&app.get("/projects.json").await.body).unwrap();
        let entry = v["projects"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == "mine")
            .cloned();
        (
            entry.map(|e| e["repository"].clone()),
            v["auto_project"].clone(),
        )
    };
    let r = save_listing(&mut pat, "https://example.org/mine-grab").await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(json(&r)["entry"].is_null(), "not offered yet: {}", r.body);
    assert_eq!(served().await, (None, serde_json::Value::Null));
    // The global admin looks and approves, by saving it.
    let r = save_listing(&mut root, "https://example.org/mine-grab").await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        served().await,
        (Some("https://example.org/mine-grab".into()), "mine".into())
    );
    // A new repository from the project admin waits; the approved one is served meanwhile.
    let r = save_listing(&mut pat, "https://example.org/other-grab").await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        json(&r)["listing"]["approved"],
        "https://example.org/mine-grab"
    );
    assert_eq!(
        served().await.0,
        Some("https://example.org/mine-grab".into())
    );
    let audit = last_audit(&mut root, "listing.save").await;
    assert!(
        audit["detail"].as_str().unwrap().contains("approval"),
        "{audit}"
    );
    let r = save_listing(&mut root, "https://example.org/other-grab").await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        served().await.0,
        Some("https://example.org/other-grab".into())
    );
}

/// Saves the listing of `mine` with `repository`, as `p`.
async fn save_listing(p: &mut Panel<'_>, repository: &str) -> tests::Reply {
    let body = serde_json::json!({ "repository": repository });
    p.send(reqwest::Method::PUT, "/admin/api/mine/listing", body)
        .await
}

/// Every change of what the fleet runs is in the audit log, and the Warrior list page's query
/// (the actions of `FLEET_ACTIONS`, comma-separated) finds them and nothing else.
#[tokio::test]
async fn changes_of_what_the_fleet_runs_are_listed_together() {
    use app::model::admin::FLEET_ACTIONS;
    let app = TestApp::start().await;
    account(&app, "root", Role::Global, &[]).await;
    account(&app, "pat", Role::Project, &["p"]).await;
    app.project("p", &[]).await;
    let mut root = Panel::logged_in(&app, "root").await;
    let mut pat = Panel::logged_in(&app, "pat").await;
    let listing = serde_json::json!({"repository": "https://example.org/p-grab"});
    let r = pat
        .send(reqwest::Method::PUT, "/admin/api/p/listing", listing)
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let r = root
        .send(
            reqwest::Method::PUT,
            "/admin/api/warrior/auto",
            serde_json::json!({"pin": "p"}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let r = root
        .send_bytes(
            reqwest::Method::POST,
            "/admin/api/p/items?queue=todo",
            b"a\n".to_vec(),
        )
        .await;
    assert!(r.status < 300, "{}", r.body);
    let query = format!("/admin/api/audit?action={}", FLEET_ACTIONS.join(","));
    for p in [&mut root, &mut pat] {
        let list = json(&p.get(&query).await);
        let actions: Vec<&str> = list
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["action"].as_str().unwrap())
            .collect();
        // (The tracker's own note of the choice changing, `auto_project.change`, may be
        // there too.)
        assert!(
            actions.ends_with(&["auto_project.pin", "listing.save"]),
            "{list}"
        );
        assert!(
            actions
                .iter()
                .all(|a| a.starts_with("auto_project.") || *a == "listing.save"),
            "{list}"
        );
        assert!(list[actions.len() - 1]["detail"]
            .as_str()
            .unwrap()
            .contains("waiting for a global admin"));
    }
}
