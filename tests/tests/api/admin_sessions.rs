//! `/admin/api/session` and `/admin/api/logout`: sessions begin only at login, change id at login,
//! end at logout, at a password reset and when the account is deleted.

use fred::prelude::*;
use server::store::Role;
use tests::panel::{account, json, log_in_from, Panel};
use tests::{Reply, TestApp};

/// GET `path` with `cookie`: the status.
async fn status_with(app: &TestApp, cookie: &str, path: &str) -> Reply {
    app.send(app.http.get(app.url(path)).header("cookie", cookie))
        .await
}

/// Whether Redis holds the session of `cookie` (`tracker_admin=ID`; the store keys it by ID).
async fn session_stored(app: &TestApp, cookie: &str) -> bool {
    let id = cookie.strip_prefix("tracker_admin=").unwrap();
    let n: u64 = app.store.client().exists(id).await.unwrap();
    n == 1
}

#[tokio::test]
async fn sessions_end_when_their_password_is_reset_or_their_account_deleted() {
    let app = TestApp::start().await;
    account(&app, "root", Role::Global, &[]).await;
    account(&app, "alice", Role::ReadOnly, &[]).await;
    account(&app, "bob", Role::ReadOnly, &[]).await;
    let mut root = Panel::logged_in(&app, "root").await;
    let alice = Panel::logged_in(&app, "alice").await.cookie;
    let bob = Panel::logged_in(&app, "bob").await.cookie;
    assert_eq!(
        status_with(&app, &alice, "/admin/api/overview")
            .await
            .status,
        200
    );
    assert!(session_stored(&app, &alice).await);

    let reset = serde_json::json!({"password": "another password"});
    let r = root
        .send(reqwest::Method::PUT, "/admin/api/users/alice", reset)
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let r = status_with(&app, &alice, "/admin/api/overview").await;
    assert_eq!(r.status, 401, "the old password's session is over");
    assert!(!session_stored(&app, &alice).await, "and deleted");
    let cleared = r.headers["set-cookie"].to_str().unwrap().to_lowercase();
    assert!(
        cleared.contains("max-age=0"),
        "the cookie is cleared: {cleared}"
    );
    let mut again = Panel::open(&app).await;
    assert_eq!(again.login("alice", "another password").await.status, 200);
    assert_eq!(again.get("/admin/api/overview").await.status, 200);

    // The command line's reset ends sessions too.
    let run = app.cli(&["admin", "reset-password", "alice"], b"a third password\n");
    assert!(run.ok, "{}", run.err);
    assert_eq!(again.get("/admin/api/overview").await.status, 401);

    let r = root
        .send(
            reqwest::Method::DELETE,
            "/admin/api/users/bob",
            serde_json::json!(null),
        )
        .await;
    assert_eq!(r.status, 204, "{}", r.body);
    assert_eq!(
        status_with(&app, &bob, "/admin/api/session").await.status,
        200
    );
    assert!(
        !session_stored(&app, &bob).await,
        "a deleted account's session is deleted"
    );
    let recreate =
        serde_json::json!({"name": "bob", "password": "correct horse battery", "role": "global"});
    assert_eq!(root.post("/admin/api/users", recreate).await.status, 201);
    assert_eq!(
        status_with(&app, &bob, "/admin/api/overview").await.status,
        401,
        "a new account of the same name inherits no session"
    );
    assert_eq!(
        root.get("/admin/api/overview").await.status,
        200,
        "others stay"
    );
}

/// Keys in Redis outside the app's namespace: the sessions (their store adds no prefix).
async fn session_keys(app: &TestApp) -> usize {
    use fred::prelude::*;
    let keys: Vec<String> = app
        .store
        .client()
        .custom(fred::cmd!("KEYS"), vec!["*"])
        .await
        .unwrap();
    let ours = format!("{}:", app.namespace);
    keys.iter().filter(|k| !k.starts_with(&ours)).count()
}

#[tokio::test]
async fn a_visitor_who_has_not_logged_in_gets_no_session() {
    // A Redis of its own: on a shared one, others' sessions would come and go.
    let app = TestApp::start_private().await;
    account(&app, "root", Role::Global, &[]).await;
    let before = session_keys(&app).await;
    for path in [
        "/admin",
        "/admin/users",
        "/admin/api/session",
        "/admin/api/overview",
    ] {
        let r = app.get(path).await;
        assert!(r.status < 500, "{path}: {}", r.status);
        assert!(
            r.headers.get("set-cookie").is_none(),
            "{path} sets a cookie"
        );
    }
    let r = app.get("/admin/api/session").await;
    assert_eq!(json(&r)["user"], serde_json::Value::Null);
    assert_eq!(json(&r)["csrf"], "", "no CSRF token without a session");
    let r = log_in_from(&app, "127.0.0.1", "root", "wrong password").await;
    assert_eq!(r.status, 401);
    assert!(
        r.headers.get("set-cookie").is_none(),
        "a failed login stores nothing"
    );
    assert_eq!(session_keys(&app).await, before, "no session stored");

    let r = log_in_from(&app, "127.0.0.1", "root", "password123").await;
    assert_eq!(r.status, 200, "a login needs no CSRF token: {}", r.body);
    assert!(r.headers.get("set-cookie").is_some());
    assert_ne!(json(&r)["csrf"], "", "the session's CSRF token");
    assert_eq!(session_keys(&app).await, before + 1, "the login's session");
}

#[tokio::test]
async fn the_session_id_changes_at_login_and_logout_ends_it() {
    let app = TestApp::start().await;
    account(&app, "root", Role::Global, &[]).await;
    let mut p = Panel::open(&app).await;
    assert!(p.cookie.is_empty(), "no session before a login");
    let r = p.login("root", "password123").await;
    assert_eq!(r.status, 200);
    let cookie = r
        .headers
        .get_all("set-cookie")
        .iter()
        .map(|v| v.to_str().unwrap().to_lowercase())
        .find(|v| v.starts_with("tracker_admin="))
        .expect("the session cookie");
    assert!(
        cookie.contains("httponly") && cookie.contains("samesite=lax"),
        "{cookie}"
    );
    let before = p.cookie.clone();
    assert!(
        before.starts_with("tracker_admin="),
        "a session cookie: {before:?}"
    );
    // Logging in again (as a planted session would be) gives a new id; the old one is gone.
    assert_eq!(p.login("root", "password123").await.status, 200);
    assert_ne!(p.cookie, before, "new session id at login");
    let old = app
        .send(
            app.http
                .get(app.url("/admin/api/overview"))
                .header("cookie", &before),
        )
        .await;
    assert_eq!(old.status, 401, "the earlier id is gone");
    assert_eq!(p.get("/admin/api/overview").await.status, 200);
    let logged_in = p.cookie.clone();
    let r = app
        .send(
            app.http
                .get(app.url("/admin/api/session"))
                .header("cookie", &logged_in),
        )
        .await;
    assert_eq!(json(&r)["user"], "root");

    assert_eq!(
        p.post("/admin/api/logout", serde_json::json!({}))
            .await
            .status,
        204
    );
    assert_eq!(p.get("/admin/api/overview").await.status, 401);
}
