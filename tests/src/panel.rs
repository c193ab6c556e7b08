//! A browser-like client of the admin API ([`Panel`]) and the helpers the admin tests share.
//! The client keeps its session cookie by hand, so tests can see it change.

use crate::{Reply, TestApp};
use server::store::{Account, Role};

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
        self.request(method, path, "application/json", body.to_string())
            .await
    }

    /// `method` with the cookie, the CSRF token and a same-origin `Origin`, raw `body` (a file
    /// the page uploads).
    pub async fn send_bytes(
        &mut self,
        method: reqwest::Method,
        path: &str,
        body: Vec<u8>,
    ) -> Reply {
        self.request(method, path, "application/octet-stream", body)
            .await
    }

    async fn request(
        &mut self,
        method: reqwest::Method,
        path: &str,
        content_type: &str,
        body: impl Into<reqwest::Body>,
    ) -> Reply {
        let origin = format!("http://{}", self.app.addr);
        let req = self
            .app
            .http
            .request(method, self.app.url(path))
            .header("cookie", &self.cookie)
            .header("x-csrf-token", &self.csrf)
            .header("origin", origin)
            .header("content-type", content_type)
            .body(body);
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
    assert!(app.store.people().create_account(&account).await.unwrap());
}

/// Makes an API token named `name` for `p`'s account; its secret.
pub async fn new_token(p: &mut Panel<'_>, name: &str) -> String {
    let r = p
        .post(
            "/admin/api/tokens",
            serde_json::json!({ "name": name, "password": "password123" }),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.body);
    json(&r)["secret"].as_str().expect("secret").to_string()
}

/// The newest audit entry with action `action`.
pub async fn last_audit(p: &mut Panel<'_>, action: &str) -> serde_json::Value {
    let list = json(&p.get(&format!("/admin/api/audit?action={action}")).await);
    list[0].clone()
}

/// A browser's login (same-origin `Origin`, no cookie) from address `ip`.
pub async fn log_in_from(app: &TestApp, ip: &str, name: &str, password: &str) -> Reply {
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
