//! `/admin/api/users`: accounts and roles, reserved names, and accounts made with the command line.

use server::store::Role;
use tests::panel::{account, json, Panel};
use tests::TestApp;

#[tokio::test]
async fn names_the_logs_give_other_actors_cannot_be_taken() {
    let app = TestApp::start().await;
    let token = server::admin::prepare_setup(&app.store)
        .await
        .unwrap()
        .unwrap();
    let mut p = Panel::open(&app).await;
    let setup = serde_json::json!({"token": token, "username": "System", "password": "correct horse battery"});
    let r = p.post("/admin/api/setup", setup).await;
    assert_eq!(r.status, 400, "{}", r.body);
    assert!(r.body.contains("reserved"), "{}", r.body);

    account(&app, "root", Role::Global, &[]).await;
    let mut root = Panel::logged_in(&app, "root").await;
    for name in server::store::RESERVED_USER_NAMES {
        let body =
            serde_json::json!({"name": name.to_uppercase(), "password": "correct horse battery"});
        let r = root.post("/admin/api/users", body).await;
        assert_eq!(r.status, 400, "{name}: {}", r.body);
        assert!(r.body.contains("reserved"), "{name}: {}", r.body);
    }
    let body = serde_json::json!({"name": "carol", "password": "correct horse battery"});
    assert_eq!(
        root.post("/admin/api/users", body).await.status,
        201,
        "others are fine"
    );

    let run = app.cli(&["admin", "create-user", "cli", "--global"], b"");
    assert!(!run.ok);
    let err = run.err;
    assert!(err.contains("reserved"), "{err}");
    assert!(app.store.people().account("cli").await.unwrap().is_none());
}

#[tokio::test]
async fn roles_limit_what_an_account_may_do() {
    let app = TestApp::start().await;
    app.project("p1", &["a"]).await;
    app.project("p2", &["b"]).await;
    account(&app, "pa", Role::Project, &["p1"]).await;
    account(&app, "ro", Role::ReadOnly, &[]).await;
    let clear = serde_json::json!({"queue": "todo"});

    let mut pa = Panel::logged_in(&app, "pa").await;
    let overview = json(&pa.get("/admin/api/overview").await);
    let slugs: Vec<_> = overview["projects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["slug"].clone())
        .collect();
    assert_eq!(slugs, ["p1"], "sees only its projects");
    assert_eq!(pa.get("/admin/api/p2/claims").await.status, 403);
    assert_eq!(
        pa.post("/admin/api/p2/clear", clear.clone()).await.status,
        403
    );
    assert_eq!(
        pa.post("/admin/api/p2/items", serde_json::json!("x"))
            .await
            .status,
        403
    );
    assert_eq!(pa.get("/admin/api/users").await.status, 403);
    assert_eq!(
        pa.post("/admin/api/p1/clear", clear.clone()).await.status,
        200
    );

    let mut ro = Panel::logged_in(&app, "ro").await;
    assert_eq!(
        ro.get("/admin/api/p2/claims").await.status,
        200,
        "read-only sees"
    );
    let r = ro.post("/admin/api/p2/clear", clear.clone()).await;
    assert_eq!(r.status, 403, "{}", r.body);
    assert_eq!(app.counts("p2").await.todo, 1);
}

#[tokio::test]
async fn the_cli_creates_an_account_with_the_password_from_stdin() {
    let app = TestApp::start().await;
    let run = app.cli(
        &["admin", "create-user", "Alice", "--global"],
        b"a long password\n",
    );
    assert!(run.ok, "{}", run.err);
    let mut p = Panel::open(&app).await;
    assert_eq!(p.login("alice", "a long password").await.status, 200);
    assert_eq!(json(&p.get("/admin/api/session").await)["role"], "global");
}
