//! `/admin/api/tokens`: per-account API tokens acting with their owner's role until revoked or the
//! account is deleted.

use server::store::Role;
use tests::panel::{account, json, last_audit, new_token, Panel};
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
        .post(
            "/admin/api/tokens",
            serde_json::json!({"name": "ingest", "password": "password123"}),
        )
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
    let stored = format!("{:?}", app.store.people().tokens("pat", 0).await.unwrap());
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
        .post(
            "/admin/api/tokens",
            serde_json::json!({"name": "later", "password": "password123"}),
        )
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
    let mut a = app.store.people().account(name).await.unwrap().unwrap();
    a.role = role;
    app.store.people().save_account(&a).await.unwrap();
}

#[tokio::test]
async fn deleting_an_account_revokes_its_tokens() {
    let app = TestApp::start().await;
    app.project("p1", &[]).await;
    account(&app, "root", Role::Global, &[]).await;
    account(&app, "bob", Role::Global, &[]).await;
    let mut bob = Panel::logged_in(&app, "bob").await;
    let secret = new_token(&mut bob, "t").await;
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

/// A leaked token does not become lasting access: with a global account's token, or the admin
/// token, no account can be listed, made, changed or deleted and no token made; and a new
/// password for an account revokes every token it had.
#[tokio::test]
async fn a_token_reaches_no_account_nor_token_and_dies_with_its_accounts_password() {
    let app = TestApp::start_with(|c| c.admin_token = Some(tests::ADMIN_TOKEN.into())).await;
    app.project("p1", &[]).await;
    account(&app, "root", Role::Global, &[]).await;
    account(&app, "bob", Role::Global, &[]).await;
    let mut bob = Panel::logged_in(&app, "bob").await;
    let secret = new_token(&mut bob, "t").await;
    let call = |secret: String, method: reqwest::Method, path: &'static str, body: &'static str| {
        let app = &app;
        async move {
            app.send(
                app.http
                    .request(method, app.url(path))
                    .header("authorization", format!("Bearer {secret}"))
                    .header("content-type", "application/json")
                    .body(body),
            )
            .await
        }
    };
    let new_user = r#"{"name":"mallory","password":"a long enough password","role":"global"}"#;
    for s in [secret.clone(), tests::ADMIN_TOKEN.to_string()] {
        use reqwest::Method;
        for (method, path, body) in [
            (Method::GET, "/admin/api/users", ""),
            (Method::POST, "/admin/api/users", new_user),
            (
                Method::PUT,
                "/admin/api/users/root",
                r#"{"password":"known to mallory 1"}"#,
            ),
            (Method::DELETE, "/admin/api/users/root", ""),
            (Method::POST, "/admin/api/tokens", r#"{"name":"more"}"#),
        ] {
            let r = call(s.clone(), method.clone(), path, body).await;
            assert_eq!(r.status, 403, "{method} {path}: {}", r.body);
        }
    }
    assert!(app
        .store
        .people()
        .account("mallory")
        .await
        .unwrap()
        .is_none());
    // The token still does what its owner's role allows...
    let r = call(
        secret.clone(),
        reqwest::Method::GET,
        "/admin/api/p1/settings",
        "",
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.body);
    // ...until the account's password changes.
    let mut root = Panel::logged_in(&app, "root").await;
    let r = root
        .send(
            reqwest::Method::PUT,
            "/admin/api/users/bob",
            serde_json::json!({"password": "a new password for bob"}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let r = call(secret, reqwest::Method::GET, "/admin/api/p1/settings", "").await;
    assert_eq!(r.status, 401, "{}", r.body);
    assert!(app
        .store
        .people()
        .tokens("bob", 0)
        .await
        .unwrap()
        .is_empty());
}

/// A global admin lists and revokes any account's token (a leaked one), from a session; others
/// cannot.
#[tokio::test]
async fn a_global_admin_revokes_another_accounts_token() {
    let app = TestApp::start().await;
    app.project("p1", &[]).await;
    account(&app, "root", Role::Global, &[]).await;
    account(&app, "pat", Role::Project, &["p1"]).await;
    let mut pat = Panel::logged_in(&app, "pat").await;
    let secret = new_token(&mut pat, "leaky").await;
    let mut root = Panel::logged_in(&app, "root").await;
    let listed = json(&root.get("/admin/api/users/pat/tokens").await);
    let id = listed[0]["id"].as_str().unwrap().to_string();
    assert!(!listed.to_string().contains(&secret), "no secret shown");
    assert_eq!(pat.get("/admin/api/users/pat/tokens").await.status, 403);
    let path = format!("/admin/api/users/pat/tokens/{id}");
    let r = pat
        .send(reqwest::Method::DELETE, &path, serde_json::json!({}))
        .await;
    assert_eq!(r.status, 403, "{}", r.body);
    let r = root
        .send(reqwest::Method::DELETE, &path, serde_json::json!({}))
        .await;
    assert_eq!(r.status, 204, "{}", r.body);
    assert_eq!(
        with_token(&app, &secret, "/admin/api/p1/items", "a\n")
            .await
            .status,
        401
    );
    let audit = last_audit(&mut root, "token.revoke").await;
    assert!(audit["detail"].as_str().unwrap().contains(&id), "{audit}");
    let r = root
        .send(reqwest::Method::DELETE, &path, serde_json::json!({}))
        .await;
    assert_eq!(r.status, 404);
}

/// Making a token asks for the password again (counted like a login), and its lifetime is
/// bounded: a session left open cannot make lasting access.
#[tokio::test]
async fn a_token_needs_the_password_again_and_expires() {
    use server::store::{now_ms, token_hash, ApiToken, TOKEN_DAYS_DEFAULT, TOKEN_DAYS_MAX};
    let app = TestApp::start().await;
    app.project("p1", &[]).await;
    account(&app, "pat", Role::Project, &["p1"]).await;
    let mut p = Panel::logged_in(&app, "pat").await;
    let make = |body: serde_json::Value| {
        let mut body = body;
        body["name"] = "script".into();
        body
    };
    for (body, status) in [
        (serde_json::json!({}), 403),
        (serde_json::json!({"password": "wrong password"}), 403),
        (
            serde_json::json!({"password": "password123", "days": 0}),
            400,
        ),
        (
            serde_json::json!({"password": "password123", "days": TOKEN_DAYS_MAX + 1}),
            400,
        ),
    ] {
        let r = p.post("/admin/api/tokens", make(body.clone())).await;
        assert_eq!(r.status, status, "{body}: {}", r.body);
    }
    assert!(app
        .store
        .people()
        .tokens("pat", 0)
        .await
        .unwrap()
        .is_empty());
    assert_eq!(
        app.store
            .people()
            .login_attempts("pat", "127.0.0.1")
            .await
            .unwrap(),
        (2, 2),
        "the wrong (and the missing) password counted as login attempts"
    );

    let before = now_ms();
    let r = p
        .post(
            "/admin/api/tokens",
            make(serde_json::json!({"password": "password123"})),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.body);
    let expires = json(&r)["expires"].as_u64().unwrap();
    let day = 86_400_000;
    let default = u64::from(TOKEN_DAYS_DEFAULT) * day;
    assert!(
        (before + default..=now_ms() + default).contains(&expires),
        "{expires}"
    );
    let r = p
        .post(
            "/admin/api/tokens",
            make(serde_json::json!({"password": "password123", "days": 7})),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.body);
    assert!(json(&r)["expires"].as_u64().unwrap() <= now_ms() + 7 * day);

    // A token past its time is refused, and leaves the account's list.
    let secret = "trk_expiredexpiredexpiredexpiredexpired1";
    let old = ApiToken {
        id: "old1".into(),
        name: "old".into(),
        t: now_ms() - 10 * day,
        expires: now_ms() - day,
    };
    app.store
        .people()
        .create_token("pat", &old, &token_hash(secret))
        .await
        .unwrap();
    let r = with_token(&app, secret, "/admin/api/p1/items?queue=todo", "a\n").await;
    assert_eq!(r.status, 401, "{}", r.body);
    assert!(r.body.contains("expired"), "{}", r.body);
    assert_eq!(app.counts("p1").await.todo, 0);
    let listed = json(&p.get("/admin/api/tokens").await);
    let ids: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids.len(), 2, "{listed}");
    assert!(!ids.contains(&"old1"));
}

/// Every account changes its own password, given the current one: weak ones are refused; the
/// change ends its other sessions and revokes its tokens, and this session goes on.
#[tokio::test]
async fn every_account_changes_its_own_password() {
    let app = TestApp::start().await;
    app.project("p1", &[]).await;
    account(&app, "pat", Role::Project, &["p1"]).await;
    account(&app, "ro", Role::ReadOnly, &[]).await;
    let mut p = Panel::logged_in(&app, "pat").await;
    let mut other = Panel::logged_in(&app, "pat").await;
    let secret = new_token(&mut p, "ingest").await;
    let change = |current: &str, new: &str| serde_json::json!({"current": current, "new": new});
    let r = p
        .post(
            "/admin/api/password",
            change("wrong password", "vivid otter juggles plywood"),
        )
        .await;
    assert_eq!(r.status, 403, "{}", r.body);
    for weak in ["aaaaaaaaaa", "          ", "password1234", "pat-pat-pat"] {
        let r = p
            .post("/admin/api/password", change("password123", weak))
            .await;
        assert_eq!(r.status, 400, "{weak:?}: {}", r.body);
    }
    let r = with_token(&app, &secret, "/admin/api/p1/items?queue=todo", "a\n").await;
    assert_eq!(r.status, 200, "refusals changed nothing: {}", r.body);

    let r = p
        .post(
            "/admin/api/password",
            change("password123", "vivid otter juggles plywood"),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    p.csrf = json(&r)["csrf"].as_str().unwrap().to_string();
    assert_eq!(json(&p.get("/admin/api/session").await)["user"], "pat");
    assert_eq!(
        json(&other.get("/admin/api/session").await)["user"],
        serde_json::Value::Null,
        "the other session ended"
    );
    let r = with_token(&app, &secret, "/admin/api/p1/items?queue=todo", "b\n").await;
    assert_eq!(
        r.status, 401,
        "the token died with the password: {}",
        r.body
    );
    let mut fresh = Panel::open(&app).await;
    assert_eq!(fresh.login("pat", "password123").await.status, 401);
    assert_eq!(
        fresh
            .login("pat", "vivid otter juggles plywood")
            .await
            .status,
        200
    );
    assert!(last_audit(&mut p, "user.update").await["detail"]
        .as_str()
        .unwrap()
        .contains("tokens_revoked=1"));

    // A read-only account too; never with a token.
    let mut ro = Panel::logged_in(&app, "ro").await;
    let r = ro
        .post(
            "/admin/api/password",
            change("password123", "plywood otters juggle vividly"),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let r = app
        .send(
            app.http
                .post(app.url("/admin/api/password"))
                .header("authorization", format!("Bearer {}", tests::ADMIN_TOKEN))
                .header("content-type", "application/json")
                .body(change("x", "vivid otter juggles plywood").to_string()),
        )
        .await;
    assert_eq!(r.status, 403, "{}", r.body);
}

/// Revoking a token with each of its Redis calls faulted (it fails, runs late, or runs with its
/// answer lost): whatever answer the revoke gets, the token either still works and is listed,
/// or no longer works; a second revoke always finishes it, and nothing of it is left.
#[tokio::test]
async fn a_revoke_whose_redis_calls_fail_is_finished_by_the_next() {
    use server::store::{now_ms, token_hash, ApiToken};
    use std::time::Duration;
    use tests::fault_proxy::Fault;
    let app = TestApp::start_private().await;
    let (proxy, store) = tests::fault_proxy::behind_proxy(&app, 1).await;
    let make = |n: usize| ApiToken {
        id: format!("t{n}"),
        name: "script".into(),
        t: now_ms(),
        expires: now_ms() + 86_400_000,
    };
    // A clean revoke: its calls are the ones to fault.
    app.store
        .people()
        .create_token("pat", &make(0), &token_hash("s0"))
        .await
        .unwrap();
    proxy.clear();
    assert!(store.people().revoke_token("pat", "t0").await.unwrap());
    let calls = proxy.seen();
    assert!(calls.len() >= 3, "{calls:?}");
    let mut n = 0;
    for at in 1..=calls.len() {
        for (_, fault) in Fault::EACH {
            n += 1;
            let (id, secret) = (format!("t{n}"), format!("s{n}"));
            app.store
                .people()
                .create_token("pat", &make(n), &token_hash(&secret))
                .await
                .unwrap();
            proxy.fault_at(at, fault);
            let first = store.people().revoke_token("pat", &id).await;
            proxy.clear();
            wait_for_idle(&proxy).await;
            let works = app
                .store
                .people()
                .token_owner(&token_hash(&secret), now_ms())
                .await
                .unwrap()
                .is_some();
            let listed = app
                .store
                .people()
                .tokens("pat", now_ms())
                .await
                .unwrap()
                .iter()
                .any(|t| t.id == id);
            let what = format!("call {at} ({}) {fault:?}: {first:?}", calls[at - 1]);
            assert!(!works || listed, "{what}: a working token is not listed");
            if first.is_ok() {
                assert!(!works, "{what}: revoked, yet it works");
            }
            // The owner (or a global admin) revokes it again: it is gone, all of it.
            let again = tests::wait_for(&what, Duration::from_secs(10), || async {
                store.people().revoke_token("pat", &id).await.ok()
            })
            .await;
            assert_eq!(again, listed, "{what}");
            assert!(app
                .store
                .people()
                .token_owner(&token_hash(&secret), now_ms())
                .await
                .unwrap()
                .is_none());
            assert!(!app
                .store
                .people()
                .tokens("pat", now_ms())
                .await
                .unwrap()
                .iter()
                .any(|t| t.id == id));
        }
    }
}

/// Until every late command of `proxy` has run.
async fn wait_for_idle(proxy: &tests::fault_proxy::FaultProxy) {
    tests::wait_for(
        "the late command",
        std::time::Duration::from_secs(5),
        || async { proxy.idle().then_some(()) },
    )
    .await;
}
