//! `/admin/api/SLUG/settings`: validation, the sanitised description, admins and priority, and what
//! read-only accounts may see.

use server::store::Role;
use tests::panel::{account, json, last_audit, Panel};
use tests::TestApp;

#[tokio::test]
async fn settings_are_validated_and_the_description_sanitised() {
    let app = TestApp::start().await;
    app.project("p1", &[]).await;
    account(&app, "root", Role::Global, &[]).await;
    let mut p = Panel::logged_in(&app, "root").await;
    let mut s = json(&p.get("/admin/api/p1/settings").await);
    s["description"] = r#"<p>Hi <b>all</b></p><script>alert(1)</script><a href="javascript:x()" onclick="y()">l</a>"#.into();
    s["settings"]["rate"] = 5.0.into();
    s["settings"]["title"] = "New title".into();
    let r = p
        .send(reqwest::Method::PUT, "/admin/api/p1/settings", s.clone())
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let saved = json(&p.get("/admin/api/p1/settings").await);
    let d = saved["description"].as_str().unwrap();
    assert!(d.contains("<b>all</b>"), "{d}");
    assert!(
        !d.contains("script") && !d.contains("onclick") && !d.contains("javascript"),
        "{d}"
    );
    assert_eq!(
        app.store
            .projects()
            .project("p1")
            .await
            .unwrap()
            .unwrap()
            .title,
        "New title"
    );

    s["settings"]["state"] = "sleeping".into();
    let r = p
        .send(reqwest::Method::PUT, "/admin/api/p1/settings", s)
        .await;
    assert_eq!(r.status, 400, "{}", r.body);
    assert!(r.body.contains("state"));

    let key = json(
        &p.post("/admin/api/p1/backfeed-key", serde_json::json!({}))
            .await,
    );
    let key = key["backfeed_key"].as_str().unwrap().to_string();
    assert_eq!(
        app.store
            .projects()
            .project("p1")
            .await
            .unwrap()
            .unwrap()
            .backfeed_key,
        key
    );
    let t = p
        .post(
            "/admin/api/p1/targets",
            serde_json::json!({"target": "rsync://h/m/", "action": "activate"}),
        )
        .await;
    assert_eq!(json(&t), serde_json::json!([["rsync://h/m/", true]]));
    let audit = json(&p.get("/admin/api/audit?action=settings").await);
    let saved = audit
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["action"] == "settings.save")
        .unwrap_or_else(|| panic!("{audit}"));
    assert_eq!(saved["detail"], "rate,title", "{audit}");
    // The description's change has an entry of its own.
    assert!(
        audit
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["action"] == "settings.description"),
        "{audit}"
    );
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

    let before = app.store.projects().project("p1").await.unwrap().unwrap();
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
        *app.store.projects().project("p1").await.unwrap().unwrap(),
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
    let sam = app.store.people().account("sam").await.unwrap().unwrap();
    assert_eq!(sam.projects, ["p2", "p1"]);
    assert!(app
        .store
        .people()
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
    let r = sam.send(reqwest::Method::PUT, path, mine.clone()).await;
    assert_eq!(r.status, 403, "{}", r.body);
    // Whatever names it tries, the answer is the same: it learns no account's name or role.
    let mut answers = Vec::new();
    for names in [["sam", "root"], ["sam", "no-such-account"], ["sam", "ro"]] {
        mine["admins"] = serde_json::json!(names);
        let r = sam.send(reqwest::Method::PUT, path, mine.clone()).await;
        assert_eq!(r.status, 403, "{names:?}: {}", r.body);
        answers.push(r.body);
    }
    answers.dedup();
    assert_eq!(answers.len(), 1, "{answers:?}");
    mine["admins"] = serde_json::json!(["sam"]);
    // Without `priority` and `admins` (the raw JSON editor), both stay.
    let saved = json(&root.get(path).await);
    assert_eq!(saved["priority"], 7);
    assert_eq!(saved["admins"], serde_json::json!(["sam"]));

    let mut ro = Panel::logged_in(&app, "ro").await;
    let r = ro.send(reqwest::Method::PUT, path, saved).await;
    assert_eq!(r.status, 403);
}

#[tokio::test]
async fn read_only_accounts_see_no_secrets() {
    let app = TestApp::start().await;
    app.project("p1", &["a"]).await;
    app.settings("p1", |s| s.backfeed_key = "backfeedsecret42".into())
        .await;
    account(&app, "root", Role::Global, &[]).await;
    account(&app, "pa", Role::Project, &["p1"]).await;
    account(&app, "ro", Role::ReadOnly, &[]).await;
    let mut root = Panel::logged_in(&app, "root").await;
    let token = json(
        &root
            .post(
                "/admin/api/tokens",
                serde_json::json!({"name": "s", "password": "password123"}),
            )
            .await,
    )["secret"]
        .as_str()
        .unwrap()
        .to_string();
    app.store
        .people()
        .set_setup_token("setupsecret42")
        .await
        .unwrap();

    let mut pa = Panel::logged_in(&app, "pa").await;
    let shown = json(&pa.get("/admin/api/p1/settings").await);
    assert_eq!(
        shown["settings"]["backfeed_key"], "backfeedsecret42",
        "its admins see it"
    );
    assert_eq!(shown["secrets_hidden"], false);

    let mut ro = Panel::logged_in(&app, "ro").await;
    let r = ro.get("/admin/api/p1/settings").await;
    assert_eq!(r.status, 200);
    assert_eq!(json(&r)["settings"]["backfeed_key"], "");
    assert_eq!(json(&r)["secrets_hidden"], true);
    for path in [
        "/admin/api/session",
        "/admin/api/overview",
        "/admin/api/p1/settings",
        "/admin/api/p1/queues",
        "/admin/api/p1/claims",
        "/admin/api/p1/failed",
        "/admin/api/blocks",
        "/admin/api/audit",
        "/admin/api/tokens",
        "/admin/api/users",
        "/admin/api/warrior/projects",
        "/admin/api/p1/log",
        "/admin/api/p1/archives",
    ] {
        let r = ro.get(path).await;
        assert!(r.status < 500, "{path}: {}", r.status);
        for secret in ["backfeedsecret42", "setupsecret42", token.as_str()] {
            assert!(
                !r.body.contains(secret),
                "{path} shows {secret}: {}",
                r.body
            );
        }
    }
    let r = ro
        .post("/admin/api/p1/backfeed-key", serde_json::json!({}))
        .await;
    assert_eq!(r.status, 403, "nor makes a new one");
}

/// A project fed by several grab scripts has a key for each: the panel shows what each fed (by
/// an id that names it without showing it), and adds, rotates or revokes one key alone.
#[tokio::test]
async fn backfeed_keys_are_counted_and_changed_one_by_one() {
    let app = TestApp::start().await;
    app.project("p1", &[]).await;
    app.settings("p1", |s| s.backfeed_key = "urlsgrab1,redditgrab2".into())
        .await;
    account(&app, "root", Role::Global, &[]).await;
    account(&app, "ro", Role::ReadOnly, &[]).await;
    let fed = |key: &'static str, body: &'static str| {
        let app = &app;
        async move {
            let r = app.post(&format!("/backfeed/legacy/p1-{key}"), body).await;
            assert_eq!(r.status, 200, "{key}: {}", r.body);
        }
    };
    fed("urlsgrab1", "a\0b\0c\0").await;
    fed("urlsgrab1", "c\0d\0").await;
    fed("redditgrab2", "e\0").await;
    let mut p = Panel::logged_in(&app, "root").await;
    let keys = json(&p.get("/admin/api/p1/settings").await)["backfeed_keys"].clone();
    let id = |k: &serde_json::Value| k["id"].as_str().unwrap().to_string();
    let (urls, reddit) = (keys[0].clone(), keys[1].clone());
    assert_eq!(urls["key"], "urlsgrab1");
    assert_eq!(
        (urls["records"].as_u64(), urls["added"].as_u64()),
        (Some(5), Some(4))
    );
    assert_eq!(
        (reddit["records"].as_u64(), reddit["added"].as_u64()),
        (Some(1), Some(1))
    );
    assert!(urls["last"].as_u64().unwrap() > 0);
    assert_eq!(id(&urls).len(), 8);
    // Read-only accounts see the counts and ids, not the secrets.
    let mut ro = Panel::logged_in(&app, "ro").await;
    let seen = json(&ro.get("/admin/api/p1/settings").await)["backfeed_keys"].clone();
    assert_eq!(seen[0]["id"], urls["id"]);
    assert_eq!(seen[0]["key"], "");
    assert_eq!(seen[0]["records"], 5);

    // Rotate one key: it alone changes, and its count starts again.
    let r = p
        .post(
            "/admin/api/p1/backfeed-key",
            serde_json::json!({"action": "rotate", "id": id(&reddit)}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let now = json(&r)["backfeed_key"].as_str().unwrap().to_string();
    let list: Vec<&str> = now.split(',').collect();
    assert_eq!(list.len(), 2);
    assert_eq!(list[0], "urlsgrab1", "the other key is kept");
    assert_ne!(list[1], "redditgrab2");
    assert_eq!(
        app.post("/backfeed/legacy/p1-redditgrab2", "f\0")
            .await
            .status,
        403
    );
    let audit = last_audit(&mut p, "backfeed_key.rotate").await;
    assert_eq!(audit["detail"], id(&reddit), "{audit}");
    let keys = json(&p.get("/admin/api/p1/settings").await)["backfeed_keys"].clone();
    assert_eq!(keys[1]["records"], 0);
    assert_eq!(keys[0]["records"], 5);

    // Add a key, then revoke the first one alone.
    let r = p
        .post(
            "/admin/api/p1/backfeed-key",
            serde_json::json!({"action": "add"}),
        )
        .await;
    assert_eq!(
        json(&r)["backfeed_key"]
            .as_str()
            .unwrap()
            .split(',')
            .count(),
        3
    );
    let r = p
        .post(
            "/admin/api/p1/backfeed-key",
            serde_json::json!({"action": "revoke", "id": id(&urls)}),
        )
        .await;
    let now = json(&r)["backfeed_key"].as_str().unwrap().to_string();
    assert_eq!(now.split(',').count(), 2);
    assert!(!now.contains("urlsgrab1"));
    assert_eq!(
        app.post("/backfeed/legacy/p1-urlsgrab1", "g\0")
            .await
            .status,
        403
    );
    assert_eq!(
        last_audit(&mut p, "backfeed_key.revoke").await["detail"],
        id(&urls)
    );

    // Bad changes are refused with the reason and change nothing.
    let keys_now = || async {
        app.store
            .projects()
            .project("p1")
            .await
            .unwrap()
            .unwrap()
            .backfeed_key
            .clone()
    };
    let before = keys_now().await;
    for (body, status, says) in [
        (
            serde_json::json!({"action": "revoke", "id": "00000000"}),
            404,
            "that id",
        ),
        (
            serde_json::json!({"action": "explode"}),
            400,
            "add, rotate or revoke",
        ),
        (serde_json::json!({"action": 5}), 400, "The body is"),
    ] {
        let r = p.post("/admin/api/p1/backfeed-key", body).await;
        assert_eq!(r.status, status, "{}", r.body);
        assert!(r.body.contains(says), "{}", r.body);
    }
    // 2 keys now: 14 more, then the 17th is refused.
    for n in 3..=17 {
        let r = p
            .post(
                "/admin/api/p1/backfeed-key",
                serde_json::json!({"action": "add"}),
            )
            .await;
        let want = if n <= 16 { 200 } else { 400 };
        assert_eq!(r.status, want, "key {n} (16 at most): {}", r.body);
    }
    let after = keys_now().await;
    assert_eq!(after.split(',').count(), 16);
    assert!(after.starts_with(&before), "keys are added at the end");
}
