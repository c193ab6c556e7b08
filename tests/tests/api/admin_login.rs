//! `/admin/api/login` and `/admin/api/setup`: the first-run setup link, the same-origin and CSRF
//! guards, and login throttling (per name and address, per address, per IPv6 /64, the password
//! checks in flight).

use server::store::Role;
use server::{
    admin::login::{MAX_ATTEMPTS_PER_NAME_AND_NET, MAX_ATTEMPTS_PER_NET},
    limits::PASSWORD_CHECKS,
};
use tests::panel::{account, json, log_in_from, Panel};
use tests::TestApp;

/// A tracker that takes client addresses from `X-Forwarded-For`, as behind a proxy.
async fn behind_proxy() -> TestApp {
    TestApp::start_with(|app| app.trust_proxy = true).await
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

/// The wrong passwords checked (401) among `statuses` (the rest 429, at most `max` checked),
/// then more, one at a time from `who(i)`, until one is refused: how many were checked in all.
async fn checked_then_topped_up(
    app: &TestApp,
    statuses: &[u16],
    max: usize,
    who: impl Fn(usize) -> (&'static str, String),
) -> usize {
    assert!(
        statuses.iter().all(|&s| s == 401 || s == 429),
        "{statuses:?}"
    );
    let mut checked = statuses.iter().filter(|&&s| s == 401).count();
    assert!(checked <= max, "past the limit at once: {statuses:?}");
    for i in 0.. {
        let (ip, name) = who(i);
        let r = log_in_from(app, ip, &name, "wrong password").await;
        match r.status {
            401 => checked += 1,
            429 if r.body.contains("too many") || r.headers.contains_key("retry-after") => break,
            other => panic!("{other}: {}", r.body),
        }
        assert!(checked <= max, "past the limit one by one");
    }
    checked
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
    // Never more than the limit's worth checked at once (fewer when the password checks were
    // all busy: those are refused uncounted); then, one by one, exactly the limit.
    let checked = checked_then_topped_up(&app, &statuses, max, |_| {
        ("203.0.113.9", "root".to_string())
    })
    .await;
    assert_eq!(
        checked, max,
        "exactly the limit's worth of passwords checked"
    );
    assert_eq!(
        app.store
            .people()
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
            .people()
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
    let checked = checked_then_topped_up(&app, &statuses, max, |i| {
        ("203.0.113.10", format!("user{}", i % 6))
    })
    .await;
    assert_eq!(checked, max, "exactly the address's limit checked");
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
        app.store
            .people()
            .login_attempts("root", "127.0.0.1")
            .await
            .unwrap(),
        (0, 0),
        "a password never checked is no failed guess"
    );
    drop(busy);
    let r = log_in_from(&app, "127.0.0.1", "root", "password123").await;
    assert_eq!(r.status, 200, "{}", r.body);
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

    let body = |t: &str| serde_json::json!({"token": t, "username": "Root", "password": "correct horse battery"});
    assert_eq!(p.post("/admin/api/setup", body("wrong")).await.status, 403);
    let mut weak = body(&token);
    weak["password"] = "aaaaaaaaaa".into();
    let r = p.post("/admin/api/setup", weak).await;
    assert_eq!(
        r.status, 400,
        "the password policy holds at setup: {}",
        r.body
    );
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
        other.login("ROOT", "correct horse battery").await.status,
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
    let counted = app
        .store
        .people()
        .login_attempts("root", "127.0.0.1")
        .await
        .unwrap();
    assert_eq!(counted, (MAX, MAX), "counted per name and IP, and per IP");
}

/// The `tracker_device` cookie a login answer sets, as a `Cookie` header value.
fn device_cookie(r: &tests::Reply) -> String {
    r.headers
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find(|v| v.starts_with("tracker_device="))
        .map(|v| v.split(';').next().unwrap().to_string())
        .unwrap_or_else(|| panic!("no device cookie: {:?}", r.headers))
}

/// A login from `ip` carrying cookie `cookie`.
async fn log_in_with(app: &TestApp, ip: &str, cookie: &str, password: &str) -> tests::Reply {
    let body = serde_json::json!({"username": "root", "password": password});
    app.send(
        app.http
            .post(app.url("/admin/api/login"))
            .header("origin", format!("http://{}", app.addr))
            .header("x-forwarded-for", ip)
            .header("cookie", cookie)
            .header("content-type", "application/json")
            .body(body.to_string()),
    )
    .await
}

/// Guesses spread over many addresses (5 from each of 4, each address under its own limits)
/// stop at the account's limit: the right password from a fifth address then waits too. The
/// owner's browser, which logged in before, is not locked out; an operator lifts the limit.
#[tokio::test]
async fn a_guessing_run_from_many_addresses_is_throttled_per_account() {
    use server::admin::login::{DEVICE_COOKIE, MAX_ATTEMPTS_PER_NAME};
    let app = behind_proxy().await;
    account(&app, "root", Role::Global, &[]).await;
    // The owner logged in once from its browser: the answer names that browser.
    let owner = log_in_from(&app, "192.0.2.50", "root", "password123").await;
    assert_eq!(owner.status, 200, "{}", owner.body);
    let cookie = device_cookie(&owner);
    let set = owner.headers["set-cookie"].to_str().unwrap().to_string();
    assert!(
        set.contains("HttpOnly") && set.contains("SameSite=Strict"),
        "{set}"
    );
    assert!(cookie.starts_with(DEVICE_COOKIE));

    let mut wrong = 0;
    let mut refused = 0;
    for net in 1..=4 {
        let ip = format!("203.0.113.{net}");
        for _ in 0..MAX_ATTEMPTS_PER_NAME_AND_NET {
            match log_in_from(&app, &ip, "root", "wrong password")
                .await
                .status
            {
                401 => wrong += 1,
                429 => refused += 1,
                other => panic!("{other}"),
            }
        }
    }
    assert_eq!(
        wrong, MAX_ATTEMPTS_PER_NAME,
        "checked up to the account's limit"
    );
    assert_eq!(
        refused,
        4 * MAX_ATTEMPTS_PER_NAME_AND_NET - MAX_ATTEMPTS_PER_NAME
    );
    let r = log_in_from(&app, "198.51.100.5", "root", "password123").await;
    assert_eq!(r.status, 429, "a fifth address waits too: {}", r.body);
    let retry: u64 = r.headers["retry-after"].to_str().unwrap().parse().unwrap();
    assert!((1..=900).contains(&retry), "Retry-After {retry}");
    // A cookie the attacker makes up is no known browser.
    let forged = format!("{DEVICE_COOKIE}={}", "x".repeat(40));
    let r = log_in_with(&app, "198.51.100.6", &forged, "password123").await;
    assert_eq!(r.status, 429, "{}", r.body);

    // The owner's browser logs in, from anywhere.
    let r = log_in_with(&app, "198.51.100.7", &cookie, "password123").await;
    assert_eq!(r.status, 200, "the owner's browser: {}", r.body);
    // Its wrong guesses still count per address.
    for _ in 0..MAX_ATTEMPTS_PER_NAME_AND_NET {
        let r = log_in_with(&app, "198.51.100.8", &cookie, "wrong password").await;
        assert_eq!(r.status, 401);
    }
    let r = log_in_with(&app, "198.51.100.8", &cookie, "password123").await;
    assert_eq!(r.status, 429, "{}", r.body);

    // The operator lifts the account's limit; logins from new places go through again.
    let run = app.cli(&["admin", "unlock", "ROOT"], b"");
    assert!(run.ok, "{}", run.err);
    assert!(run.out.contains("forgotten"), "{}", run.out);
    let r = log_in_from(&app, "198.51.100.9", "root", "password123").await;
    assert_eq!(r.status, 200, "{}", r.body);
    let run = app.cli(&["admin", "unlock", "nobody"], b"");
    assert!(!run.ok);
    let mut p = Panel::logged_in(&app, "root").await;
    assert_eq!(
        tests::panel::last_audit(&mut p, "user.unlock").await["detail"],
        "root"
    );
}
