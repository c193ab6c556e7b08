//! `/admin/api/blocks`, `/unblock`, `/projects`, `/audit`: blocks, users and projects managed, and
//! every change in the audit log.

use server::store::Role;
use tests::panel::{account, json, Panel};
use tests::TestApp;

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

    let r = p.post("/admin/api/users", serde_json::json!({"name": "Bob", "password": "correct horse battery", "role": "project", "projects": ["p1"]})).await;
    assert_eq!(r.status, 201, "{}", r.body);
    assert!(!r.body.contains("argon2"), "the hash is never sent");
    assert_eq!(
        p.post(
            "/admin/api/users",
            serde_json::json!({"name": "bob", "password": "correct horse battery"})
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
    assert!(app.store.projects().project("p2").await.unwrap().is_none());

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
