//! The admin panel on the open internet: login attempts counted before the password is checked
//! (per name and network, per network; a few password checks at once), sessions that end with
//! their account's password, no session for visitors, and names kept for other actors.

use super::admin::{account, json, Panel};
use server::admin::login::{MAX_ATTEMPTS_PER_NAME_AND_NET, MAX_ATTEMPTS_PER_NET, PASSWORD_CHECKS};
use server::store::Role;
use tests::{Reply, TestApp};

/// A tracker that takes client addresses from `X-Forwarded-For`, as behind a proxy.
async fn behind_proxy() -> TestApp {
    TestApp::start_with(|app| app.trust_proxy = true).await
}

/// A browser's login (same-origin `Origin`, no cookie) from address `ip`.
async fn log_in_from(app: &TestApp, ip: &str, name: &str, password: &str) -> Reply {
    let body = serde_json::json!({"username": name, "password": password});
    app.send(
        app.http
            .post(app.url("/admin/api/login"))
            .header("origin", format!("http://{}", app.addr))
            .header("x-forwarded-for", ip)
            .header("content-type", "application/json")
            .body(body.to_string()),
    )
    .await
}

/// The statuses of `n` logins sent at once, sorted.
async fn at_once(app: &TestApp, logins: Vec<(&str, String, &str)>) -> Vec<u16> {
    let sent = logins
        .iter()
        .map(|(ip, name, password)| log_in_from(app, ip, name, password));
    let mut statuses: Vec<u16> = futures::future::join_all(sent)
        .await
        .iter()
        .map(|r| r.status)
        .collect();
    statuses.sort_unstable();
    statuses
}

#[tokio::test]
async fn a_flood_of_wrong_passwords_stops_at_the_limit_and_spares_other_addresses() {
    let app = behind_proxy().await;
    account(&app, "root", Role::Global, &[]).await;
    let flood = (0..50)
        .map(|_| ("203.0.113.9", "root".to_string(), "wrong password"))
        .collect();
    let statuses = at_once(&app, flood).await;
    let max = MAX_ATTEMPTS_PER_NAME_AND_NET as usize;
    assert_eq!(
        statuses.iter().filter(|&&s| s == 401).count(),
        max,
        "exactly the limit's worth of passwords checked: {statuses:?}"
    );
    assert_eq!(statuses.iter().filter(|&&s| s == 429).count(), 50 - max);
    assert_eq!(
        app.store
            .login_attempts("root", "203.0.113.9")
            .await
            .unwrap(),
        (max as u64, max as u64),
        "the counters stop at the limit"
    );

    let r = log_in_from(&app, "203.0.113.9", "root", "password123").await;
    assert_eq!(r.status, 429, "the flooding address waits: {}", r.body);
    let retry: u64 = r.headers["retry-after"].to_str().unwrap().parse().unwrap();
    assert!((1..=900).contains(&retry), "Retry-After {retry}");

    let r = log_in_from(&app, "198.51.100.7", "root", "password123").await;
    assert_eq!(r.status, 200, "the owner elsewhere logs in: {}", r.body);
    assert_eq!(json(&r)["user"], "root");
    assert_eq!(
        app.store
            .login_attempts("root", "198.51.100.7")
            .await
            .unwrap(),
        (0, 0),
        "a login that succeeds is not counted"
    );
}

#[tokio::test]
async fn one_address_guessing_many_names_stops_at_the_address_limit() {
    let app = behind_proxy().await;
    account(&app, "root", Role::Global, &[]).await;
    // Six names, five guesses each: no name reaches its limit, the address does.
    let guesses = (0..30)
        .map(|i| ("203.0.113.10", format!("user{}", i % 6), "wrong password"))
        .collect();
    let statuses = at_once(&app, guesses).await;
    let max = MAX_ATTEMPTS_PER_NET as usize;
    assert_eq!(
        statuses.iter().filter(|&&s| s == 401).count(),
        max,
        "{statuses:?}"
    );
    assert_eq!(statuses.iter().filter(|&&s| s == 429).count(), 30 - max);
    let r = log_in_from(&app, "203.0.113.10", "root", "password123").await;
    assert_eq!(r.status, 429, "a fresh name from that address waits too");
    let r = log_in_from(&app, "203.0.113.11", "root", "password123").await;
    assert_eq!(r.status, 200, "the next address does not: {}", r.body);
}

#[tokio::test]
async fn ipv6_addresses_of_one_64_share_their_counts() {
    let app = behind_proxy().await;
    account(&app, "root", Role::Global, &[]).await;
    for i in 0..MAX_ATTEMPTS_PER_NAME_AND_NET {
        let ip = format!("2001:db8:0:1::{:x}", i + 1);
        let r = log_in_from(&app, &ip, "root", "wrong password").await;
        assert_eq!(r.status, 401);
    }
    let r = log_in_from(&app, "2001:db8:0:1::ffff", "root", "password123").await;
    assert_eq!(r.status, 429, "another address of the same /64");
    let r = log_in_from(&app, "2001:db8:0:2::1", "root", "password123").await;
    assert_eq!(r.status, 200, "another /64: {}", r.body);
}

#[tokio::test]
async fn a_login_that_finds_no_free_password_check_gets_429_and_is_not_counted() {
    let app = TestApp::start().await;
    let checks = app.state.password_checks.clone();
    account(&app, "root", Role::Global, &[]).await;
    let busy = checks
        .clone()
        .acquire_many_owned(PASSWORD_CHECKS as u32)
        .await
        .unwrap();
    let r = log_in_from(&app, "127.0.0.1", "root", "password123").await;
    assert_eq!(r.status, 429, "{}", r.body);
    assert_eq!(r.headers["retry-after"], "2");
    assert_eq!(
        app.store.login_attempts("root", "127.0.0.1").await.unwrap(),
        (0, 0),
        "a password never checked is no failed guess"
    );
    drop(busy);
    let r = log_in_from(&app, "127.0.0.1", "root", "password123").await;
    assert_eq!(r.status, 200, "{}", r.body);
}

/// GET `path` with `cookie`: the status.
async fn status_with(app: &TestApp, cookie: &str, path: &str) -> Reply {
    app.send(app.http.get(app.url(path)).header("cookie", cookie))
        .await
}

/// Whether Redis holds the session of `cookie` (`tracker_admin=ID`; the store keys it by ID).
async fn session_stored(app: &TestApp, cookie: &str) -> bool {
    use fred::prelude::*;
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
    let mut child = std::process::Command::new(tests::tracker_bin())
        .args(["admin", "reset-password", "alice"])
        .env("REDIS_URL", &app.redis_url)
        .env("TRACKER_NAMESPACE", &app.namespace)
        .env("RUST_LOG", "error")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    use std::io::Write;
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"a third password\n").unwrap();
    drop(stdin);
    assert!(child.wait().unwrap().success());
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
    let recreate = serde_json::json!({"name": "bob", "password": "password123", "role": "global"});
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
            .post("/admin/api/tokens", serde_json::json!({"name": "s"}))
            .await,
    )["secret"]
        .as_str()
        .unwrap()
        .to_string();
    app.store.set_setup_token("setupsecret42").await.unwrap();

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

#[tokio::test]
async fn names_the_logs_give_other_actors_cannot_be_taken() {
    let app = TestApp::start().await;
    let token = server::admin::prepare_setup(&app.store)
        .await
        .unwrap()
        .unwrap();
    let mut p = Panel::open(&app).await;
    let setup =
        serde_json::json!({"token": token, "username": "System", "password": "password123"});
    let r = p.post("/admin/api/setup", setup).await;
    assert_eq!(r.status, 400, "{}", r.body);
    assert!(r.body.contains("reserved"), "{}", r.body);

    account(&app, "root", Role::Global, &[]).await;
    let mut root = Panel::logged_in(&app, "root").await;
    for name in server::store::RESERVED_USER_NAMES {
        let body = serde_json::json!({"name": name.to_uppercase(), "password": "password123"});
        let r = root.post("/admin/api/users", body).await;
        assert_eq!(r.status, 400, "{name}: {}", r.body);
        assert!(r.body.contains("reserved"), "{name}: {}", r.body);
    }
    let body = serde_json::json!({"name": "carol", "password": "password123"});
    assert_eq!(
        root.post("/admin/api/users", body).await.status,
        201,
        "others are fine"
    );

    let out = std::process::Command::new(tests::tracker_bin())
        .args(["admin", "create-user", "cli", "--global"])
        .env("REDIS_URL", &app.redis_url)
        .env("TRACKER_NAMESPACE", &app.namespace)
        .env("RUST_LOG", "error")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("reserved"), "{err}");
    assert!(app.store.account("cli").await.unwrap().is_none());
}
