//! The admin API: first-run setup, sessions, CSRF, login throttling, roles. The [`Panel`]
//! client keeps its session cookie by hand, so tests can see it change.

use server::store::{Account, Role};
use tests::{Reply, TestApp};

/// A browser-like client of the admin API: one session cookie, the CSRF token, same-origin
/// `Origin` on writes.
pub struct Panel<'a> {
    pub app: &'a TestApp,
    pub cookie: String,
    pub csrf: String,
}

impl<'a> Panel<'a> {
    /// A fresh visitor: reads the session (which stores nothing until a login).
    pub async fn open(app: &'a TestApp) -> Panel<'a> {
        let mut p = Panel {
            app,
            cookie: String::new(),
            csrf: String::new(),
        };
        let r = p.get("/admin/api/session").await;
        assert_eq!(r.status, 200, "{}", r.body);
        p.csrf = json(&r)["csrf"].as_str().unwrap().to_string();
        p
    }

    /// A logged-in session of `name` (password `password123`).
    pub async fn logged_in(app: &'a TestApp, name: &str) -> Panel<'a> {
        let mut p = Panel::open(app).await;
        let r = p.login(name, "password123").await;
        assert_eq!(r.status, 200, "login: {}", r.body);
        p
    }

    fn take_cookie(&mut self, r: &Reply) {
        for v in r.headers.get_all("set-cookie") {
            let v = v.to_str().unwrap();
            if let Some(rest) = v.strip_prefix("tracker_admin=") {
                self.cookie = format!("tracker_admin={}", rest.split(';').next().unwrap());
            }
        }
    }

    /// GET with the session cookie.
    pub async fn get(&mut self, path: &str) -> Reply {
        let r = self
            .app
            .send(
                self.app
                    .http
                    .get(self.app.url(path))
                    .header("cookie", &self.cookie),
            )
            .await;
        self.take_cookie(&r);
        r
    }

    /// `method` with the cookie, the CSRF token and a same-origin `Origin`, JSON `body`.
    pub async fn send(
        &mut self,
        method: reqwest::Method,
        path: &str,
        body: serde_json::Value,
    ) -> Reply {
        let origin = format!("http://{}", self.app.addr);
        let req = self
            .app
            .http
            .request(method, self.app.url(path))
            .header("cookie", &self.cookie)
            .header("x-csrf-token", &self.csrf)
            .header("origin", origin)
            .header("content-type", "application/json")
            .body(body.to_string());
        let r = self.app.send(req).await;
        self.take_cookie(&r);
        r
    }

    /// POST JSON.
    pub async fn post(&mut self, path: &str, body: serde_json::Value) -> Reply {
        self.send(reqwest::Method::POST, path, body).await
    }

    /// Logs in; keeps the new CSRF token.
    pub async fn login(&mut self, name: &str, password: &str) -> Reply {
        let r = self
            .post(
                "/admin/api/login",
                serde_json::json!({"username": name, "password": password}),
            )
            .await;
        if r.status == 200 {
            self.csrf = json(&r)["csrf"].as_str().unwrap().to_string();
        }
        r
    }
}

/// The body as JSON.
pub fn json(r: &Reply) -> serde_json::Value {
    serde_json::from_str(&r.body).unwrap_or_else(|e| panic!("JSON {e}: {}", r.body))
}

/// Creates account `name` with password `password123`.
pub async fn account(app: &TestApp, name: &str, role: Role, projects: &[&str]) {
    let account = Account {
        name: name.into(),
        hash: server::ops::accounts::hash_password_now("password123").unwrap(),
        role,
        projects: projects.iter().map(|s| s.to_string()).collect(),
        t: 0,
        gen: server::store::new_session_gen(),
    };
    assert!(app.store.create_account(&account).await.unwrap());
}

#[tokio::test]
async fn setup_link_creates_the_first_global_admin_once() {
    let app = TestApp::start().await;
    // The link the start-up printed: this server's own address, and a token.
    let link = app
        .setup_link
        .clone()
        .expect("a setup link while no account exists");
    let token = link
        .strip_prefix(&format!("{}?token=", app.url("/admin/setup")))
        .unwrap_or_else(|| panic!("a link to this server's setup page: {link}"))
        .to_string();
    let page = app.get(&link.replacen(&app.url(""), "", 1)).await;
    assert_eq!(page.status, 200, "the link opens the setup page");
    let mut p = Panel::open(&app).await;
    assert_eq!(
        json(&p.get("/admin/api/session").await)["setup_pending"],
        true
    );
    assert_eq!(
        p.get("/admin/api/overview").await.status,
        401,
        "no open admin"
    );

    let body =
        |t: &str| serde_json::json!({"token": t, "username": "Root", "password": "password123"});
    assert_eq!(p.post("/admin/api/setup", body("wrong")).await.status, 403);
    let r = p.post("/admin/api/setup", body(&token)).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(json(&r)["user"], "root", "names are lowercase");
    assert_eq!(json(&r)["role"], "global");
    p.csrf = json(&r)["csrf"].as_str().unwrap().into();
    assert_eq!(p.get("/admin/api/overview").await.status, 200);

    let mut other = Panel::open(&app).await;
    assert_eq!(
        other.post("/admin/api/setup", body(&token)).await.status,
        403,
        "one time"
    );
    assert!(server::admin::prepare_setup(&app.store)
        .await
        .unwrap()
        .is_none());
    assert_eq!(
        other.login("ROOT", "password123").await.status,
        200,
        "case-insensitive"
    );
}

#[tokio::test]
async fn posts_without_the_csrf_token_or_from_another_origin_are_refused() {
    let app = TestApp::start().await;
    app.project("p1", &["a", "b"]).await;
    account(&app, "root", Role::Global, &[]).await;
    let mut p = Panel::logged_in(&app, "root").await;
    let clear = serde_json::json!({"queue": "todo"});

    let no_token = app
        .send(
            app.http
                .post(app.url("/admin/api/p1/clear"))
                .header("cookie", &p.cookie)
                .header("content-type", "application/json")
                .body(clear.to_string()),
        )
        .await;
    assert_eq!(no_token.status, 403, "{}", no_token.body);
    let evil = app
        .send(
            app.http
                .post(app.url("/admin/api/p1/clear"))
                .header("cookie", &p.cookie)
                .header("x-csrf-token", &p.csrf)
                .header("origin", "http://evil.example")
                .header("content-type", "application/json")
                .body(clear.to_string()),
        )
        .await;
    assert_eq!(evil.status, 403, "{}", evil.body);
    assert_eq!(app.counts("p1").await.todo, 2, "nothing cleared");
    let login_without_origin = app
        .send(
            app.http
                .post(app.url("/admin/api/login"))
                .header("content-type", "application/json")
                .body(r#"{"username":"root","password":"password123"}"#),
        )
        .await;
    assert_eq!(
        login_without_origin.status, 403,
        "a login needs a same-origin Origin"
    );
    let evil_login = app
        .send(
            app.http
                .post(app.url("/admin/api/login"))
                .header("origin", "http://evil.example")
                .header("content-type", "application/json")
                .body(r#"{"username":"root","password":"password123"}"#),
        )
        .await;
    assert_eq!(evil_login.status, 403, "{}", evil_login.body);
    assert!(evil_login.headers.get("set-cookie").is_none());

    let r = p.post("/admin/api/p1/clear", clear).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(json(&r)["count"], 2);
}

#[tokio::test]
async fn wrong_passwords_are_throttled_per_name_and_ip() {
    use server::admin::login::MAX_ATTEMPTS_PER_NAME_AND_NET as MAX;
    let app = TestApp::start().await;
    account(&app, "root", Role::Global, &[]).await;
    let mut p = Panel::open(&app).await;
    for _ in 0..MAX {
        assert_eq!(p.login("root", "wrong password").await.status, 401);
    }
    let r = p.login("root", "password123").await;
    assert_eq!(
        r.status, 429,
        "throttled even with the right password: {}",
        r.body
    );
    assert!(r.headers.get("retry-after").is_some());
    let counted = app.store.login_attempts("root", "127.0.0.1").await.unwrap();
    assert_eq!(counted, (MAX, MAX), "counted per name and IP, and per IP");
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
        .get("set-cookie")
        .unwrap()
        .to_str()
        .unwrap()
        .to_lowercase();
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
    use std::io::Write;
    let app = TestApp::start().await;
    let mut child = std::process::Command::new(tests::tracker_bin())
        .args(["admin", "create-user", "Alice", "--global"])
        .env("REDIS_URL", &app.redis_url)
        .env("TRACKER_NAMESPACE", &app.namespace)
        .env("RUST_LOG", "error")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"a long password\n")
        .unwrap();
    assert!(child.wait().unwrap().success());
    let mut p = Panel::open(&app).await;
    assert_eq!(p.login("alice", "a long password").await.status, 200);
    assert_eq!(json(&p.get("/admin/api/session").await)["role"], "global");
}
