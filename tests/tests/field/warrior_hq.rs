//! The Warrior and Warrior HQ. seesaw's Warrior (`seesaw/warrior.py` at
//! 699b0d215768c2208b5b48844c9f0f75bd6a1cbc) posts `{"warrior": {"warrior_id", "lat_lng",
//! "downloader", "selected_project"}}` to `/api/update.json` every 10 minutes and reads
//! `warrior.seesaw_version`, `projects` and `auto_project`. Today's Warrior also reads
//! `auto_projects_config: [{"project", "weight"}]` and picks among those projects by weight,
//! falling back to `auto_project` when the list is not usable (ArchiveTeam/seesaw-kit
//! `tests/warrior_test.py` at 4729e84c90d8812ff7c474d137fd625a242bcfb6,
//! `AutoProjectConfigTest`: a non-empty list of objects with a string `project` and a number
//! `weight`, not a bool, not negative, summing above 0, naming projects of the list).

use super::client::seesaw_agent;
use tests::panel::{account, json, Panel};
use tests::TestApp;

async fn update(app: &TestApp) -> serde_json::Value {
    let body = serde_json::json!({"warrior": {"warrior_id": "", "lat_lng": null,
        "downloader": "alice", "selected_project": "auto"}});
    let agent = seesaw_agent("0.10.4");
    let r = app
        .post_with(
            "/api/update.json",
            &[("user-agent", &agent), ("content-type", "application/json")],
            body.to_string(),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    serde_json::from_str(&r.body).unwrap()
}

/// The update's answer once `ready` holds (the anonymous list is remade at most once a second).
async fn until(app: &TestApp, ready: impl Fn(&serde_json::Value) -> bool) -> serde_json::Value {
    tests::wait_for(
        "the next project list",
        std::time::Duration::from_secs(10),
        || async {
            let answer = update(app).await;
            ready(&answer).then_some(answer)
        },
    )
    .await
}

/// `normalize_auto_projects_config` as today's Warrior applies it: project -> share, or
/// `None` when it falls back to `auto_project`.
fn warrior_weights(answer: &serde_json::Value) -> Option<Vec<(String, f64)>> {
    let listed: Vec<&str> = answer["projects"]
        .as_array()?
        .iter()
        .filter_map(|p| p["name"].as_str())
        .collect();
    let config = answer.get("auto_projects_config")?.as_array()?;
    if config.is_empty() {
        return None;
    }
    let mut shares: Vec<(String, f64)> = Vec::new();
    for e in config {
        let project = e.get("project")?.as_str()?;
        let w = e.get("weight")?;
        if w.is_boolean() || !w.is_number() || w.as_f64()? < 0.0 || !listed.contains(&project) {
            return None;
        }
        match shares.iter_mut().find(|(p, _)| p == project) {
            Some((_, s)) => *s += w.as_f64()?,
            None => shares.push((project.to_string(), w.as_f64()?)),
        }
    }
    let total: f64 = shares.iter().map(|(_, w)| w).sum();
    (total > 0.0).then(|| shares.into_iter().map(|(p, w)| (p, w / total)).collect())
}

async fn listed(app: &TestApp, slug: &str, items: &[&str]) {
    app.project(slug, items).await;
    let run = app.cli(
        &[
            "project",
            "listing",
            slug,
            &format!("repository=https://github.com/ArchiveTeam/{slug}-grab"),
        ],
        b"",
    );
    assert!(run.ok, "{} {}", run.out, run.err);
}

#[tokio::test]
async fn weights_set_on_the_listings_reach_todays_warrior_and_auto_project_stays_for_older_ones() {
    let app = TestApp::start().await;
    listed(&app, "alpha", &["a1"]).await;
    listed(&app, "beta", &["b1"]).await;
    listed(&app, "dry", &[]).await;
    // No weights: no list, the Warrior falls back to auto_project.
    let answer = update(&app).await;
    assert!(answer.get("auto_projects_config").is_none(), "{answer}");
    assert_eq!(answer["auto_project"], "alpha");
    assert!(answer["warrior"]["seesaw_version"].is_string());

    for (slug, w) in [("alpha", "3"), ("beta", "1"), ("dry", "5")] {
        let run = app.cli(&["project", "listing", slug, &format!("weight={w}")], b"");
        assert!(run.ok, "{} {}", run.out, run.err);
    }
    // The list is made at most once a second: the weights are in the next one.
    let answer = until(&app, |a| a.get("auto_projects_config").is_some()).await;
    let shares = warrior_weights(&answer).unwrap_or_else(|| panic!("usable: {answer}"));
    assert_eq!(
        shares,
        vec![("alpha".to_string(), 0.75), ("beta".to_string(), 0.25)],
        "a project with nothing to hand out is left out"
    );
    assert_eq!(answer["auto_project"], "alpha", "kept for older Warriors");
    // /projects.json says the same.
    let list: serde_json::Value =
        serde_json::from_str(&app.get("/projects.json").await.body).unwrap();
    assert_eq!(list["auto_projects_config"], answer["auto_projects_config"]);

    // A pin holds for both: auto_project and the weighted list name it alone.
    account(&app, "root", server::store::Role::Global, &[]).await;
    let mut admin = Panel::logged_in(&app, "root").await;
    let r = admin
        .send(
            reqwest::Method::PUT,
            "/admin/api/warrior/auto",
            serde_json::json!({"pin": "beta"}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let answer = until(&app, |a| a["auto_project"] == "beta").await;
    assert_eq!(
        warrior_weights(&answer),
        Some(vec![("beta".to_string(), 1.0)])
    );
    assert_eq!(answer["auto_project"], "beta");
}

#[tokio::test]
async fn only_a_global_admin_changes_a_weight_and_each_change_is_audited() {
    let app = TestApp::start().await;
    listed(&app, "alpha", &["a1"]).await;
    account(&app, "projadmin", server::store::Role::Project, &["alpha"]).await;
    let mut pa = Panel::logged_in(&app, "projadmin").await;
    let mut listing = json(&pa.get("/admin/api/alpha/listing").await)["listing"].clone();
    listing["weight"] = 7.into();
    let r = pa
        .send(
            reqwest::Method::PUT,
            "/admin/api/alpha/listing",
            listing.clone(),
        )
        .await;
    assert_eq!(r.status, 403, "{}", r.body);
    assert!(r.body.contains("global admin"), "{}", r.body);
    assert_eq!(
        app.store.projects().listing("alpha").await.unwrap().weight,
        0
    );
    // The rest of the listing stays theirs to save, the weight as it was.
    listing["weight"] = 0.into();
    listing["host"] = "example.org".into();
    let r = pa
        .send(
            reqwest::Method::PUT,
            "/admin/api/alpha/listing",
            listing.clone(),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);

    account(&app, "root", server::store::Role::Global, &[]).await;
    let mut admin = Panel::logged_in(&app, "root").await;
    listing["weight"] = 7.into();
    let r = admin
        .send(
            reqwest::Method::PUT,
            "/admin/api/alpha/listing",
            listing.clone(),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        app.store.projects().listing("alpha").await.unwrap().weight,
        7
    );
    let audit = tests::panel::last_audit(&mut admin, "listing.save").await;
    assert!(
        audit["detail"].as_str().unwrap().contains("weight 0 -> 7"),
        "{audit}"
    );
    let auto = json(&admin.get("/admin/api/warrior/auto").await);
    assert_eq!(auto["weights"], serde_json::json!([["alpha", 7]]));

    // Out of bounds, refused with the reason, nothing changed.
    listing["weight"] = 1001.into();
    let r = admin
        .send(reqwest::Method::PUT, "/admin/api/alpha/listing", listing)
        .await;
    assert_eq!(r.status, 400, "{}", r.body);
    let run = app.cli(&["project", "listing", "alpha", "weight=-1"], b"");
    assert!(!run.ok);
    assert_eq!(
        app.store.projects().listing("alpha").await.unwrap().weight,
        7
    );
}
