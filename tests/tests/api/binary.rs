//! The `tracker` binary as an operator runs it: settings from the environment reach the
//! server, and the commands that no other test runs.

use std::time::Duration;
use tests::{free_port, tracker_bin, tracker_command, wait_for, Killed, TestApp};

/// `tracker serve` on the Redis and namespace of `app`, with `env`; its base URL, once it
/// answers.
async fn serve_with(app: &TestApp, env: &[(&str, &str)]) -> (Killed, String) {
    let port = free_port();
    let mut cmd = tracker_command(&tracker_bin(), &app.redis_url, &app.namespace, port);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let child = Killed(cmd.spawn().expect("start the tracker"));
    let base = format!("http://127.0.0.1:{port}");
    wait_for("the tracker to listen", Duration::from_secs(30), || async {
        let r = app.http.get(format!("{base}/healthz")).send().await.ok()?;
        (r.status() == 200).then_some(())
    })
    .await;
    (child, base)
}

/// `tracker ARGS` on the Redis and namespace of `app`, `input` on stdin: (success, stdout).
fn cli(app: &TestApp, args: &[&str], input: &str) -> (bool, String) {
    let run = app.cli(args, input.as_bytes());
    (run.ok, run.out)
}

/// A claim on `base` for project `slug` with `X-Forwarded-For: xff`: the status.
async fn claim_from(app: &TestApp, base: &str, slug: &str, xff: &str) -> u16 {
    app.http
        .post(format!("{base}/{slug}/request"))
        .header("x-forwarded-for", xff)
        .body(r#"{"downloader":"alice","api_version":"2"}"#)
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

#[tokio::test]
async fn trust_proxy_from_the_environment_takes_the_forwarded_address() {
    let app = TestApp::start().await;
    app.project("p1", &["a", "b", "c"]).await;
    let (ok, _) = cli(&app, &["block", "ip", "203.0.113.9", "--project", "p1"], "");
    assert!(ok, "block");
    let (_plain, direct) = serve_with(&app, &[]).await;
    assert_eq!(
        claim_from(&app, &direct, "p1", "203.0.113.9").await,
        200,
        "without the setting the header is not believed"
    );
    let (_proxied, behind) = serve_with(&app, &[("TRACKER_TRUST_PROXY", "true")]).await;
    assert_eq!(
        claim_from(&app, &behind, "p1", "203.0.113.9").await,
        403,
        "the forwarded address is the blocked one"
    );
    assert_eq!(claim_from(&app, &behind, "p1", "198.51.100.1").await, 200);
}

/// Logs in as root/correct horse battery at `base`: the `Set-Cookie` header.
async fn login_cookie(app: &TestApp, base: &str) -> String {
    let r = app
        .http
        .post(format!("{base}/admin/api/login"))
        .header("origin", base)
        .json(&serde_json::json!({"username": "root", "password": "correct horse battery"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    r.headers()["set-cookie"].to_str().unwrap().to_string()
}

#[tokio::test]
async fn the_session_cookie_is_secure_when_the_environment_says_so() {
    let app = TestApp::start().await;
    let (ok, _) = cli(
        &app,
        &["admin", "create-user", "root", "--global"],
        "correct horse battery\n",
    );
    assert!(ok, "create-user");
    let (_plain, base) = serve_with(&app, &[]).await;
    let cookie = login_cookie(&app, &base).await;
    assert!(!cookie.contains("Secure"), "plain HTTP: {cookie}");
    assert!(cookie.contains("HttpOnly"), "{cookie}");
    let (_secure, base) = serve_with(&app, &[("TRACKER_SECURE_COOKIES", "true")]).await;
    let cookie = login_cookie(&app, &base).await;
    assert!(cookie.contains("Secure"), "{cookie}");
    let (_https, base) = serve_with(&app, &[("TRACKER_PUBLIC_URL", "https://t.example")]).await;
    let cookie = login_cookie(&app, &base).await;
    assert!(cookie.contains("Secure"), "an https public URL: {cookie}");
}

#[tokio::test]
async fn reset_password_sets_a_password_that_logs_in() {
    let app = TestApp::start().await;
    assert!(
        cli(
            &app,
            &["admin", "create-user", "root", "--global"],
            "correct horse battery\n"
        )
        .0
    );
    assert!(
        cli(
            &app,
            &["admin", "reset-password", "root"],
            "another password\n"
        )
        .0
    );
    let (_server, base) = serve_with(&app, &[]).await;
    let login = |password: &'static str| {
        let (http, base) = (app.http.clone(), base.clone());
        async move {
            http.post(format!("{base}/admin/api/login"))
                .header("origin", &base)
                .json(&serde_json::json!({"username": "root", "password": password}))
                .send()
                .await
                .unwrap()
                .status()
                .as_u16()
        }
    };
    assert_eq!(
        login("correct horse battery").await,
        401,
        "the old password"
    );
    assert_eq!(login("another password").await, 200, "the new one");
    let (ok, _) = cli(&app, &["admin", "reset-password", "nobody"], "x password\n");
    assert!(!ok, "an unknown account");
}

#[tokio::test]
async fn items_show_tells_where_an_item_is_and_its_transitions() {
    let app = TestApp::start().await;
    app.project("p1", &["one", "two"]).await;
    let show = |item: &str| {
        let (ok, out) = cli(&app, &["items", "show", "p1", item], "");
        assert!(ok, "items show {item}");
        serde_json::from_str::<serde_json::Value>(&out)
            .unwrap_or_else(|e| panic!("items show prints JSON ({e}): {out}"))
    };
    assert_eq!(show("one")["status"], "todo");
    let item = app.claim("p1", "alice").await;
    let out = show(&item);
    assert_eq!(out["status"], "out", "claimed: {out}");
    assert_eq!(out["downloader"], "alice", "{out}");
    app.done("p1", "alice", &item, 5).await;
    let done = show(&item);
    assert_eq!(done["status"], "done");
    let history = done["history"].as_array().expect("the transitions");
    assert!(history.len() >= 2, "claimed, then done: {done}");
    assert!(
        history.iter().all(|t| t["d"] == "alice"),
        "alice's claim and done: {done}"
    );
    assert_eq!(show("never-added")["status"], serde_json::Value::Null);
}

#[tokio::test]
async fn a_destroyed_project_leaves_no_key() {
    use fred::prelude::*;
    let app = TestApp::start().await;
    app.project("gone", &["a", "b", "c"]).await;
    app.project("kept", &["x"]).await;
    let item = app.claim("gone", "alice").await;
    app.done("gone", "alice", &item, 5).await;
    let held = app.claim("gone", "bob").await;
    assert!(cli(&app, &["block", "dl", "mallory", "--project", "gone"], "").0);
    assert!(cli(&app, &["target", "gone", "rsync://h/m/:downloader/"], "").0);
    let keys = |pattern: String| {
        let client = app.store.client().clone();
        async move {
            let found: (String, Vec<String>) = client
                .custom(
                    fred::cmd!("SCAN"),
                    vec![
                        "0".to_string(),
                        "MATCH".into(),
                        pattern,
                        "COUNT".into(),
                        "100000".into(),
                    ],
                )
                .await
                .unwrap();
            found.1
        }
    };
    let of = |slug: &str| format!("{}:{{{slug}}}*", app.namespace);
    assert!(keys(of("gone")).await.len() > 10, "the project had keys");
    app.store.queue().destroy_project("gone").await.unwrap();
    assert_eq!(keys(of("gone")).await, Vec::<String>::new(), "no key left");
    let projects: Vec<String> = app
        .store
        .client()
        .smembers(app.store.keys().projects())
        .await
        .unwrap();
    assert_eq!(projects, ["kept"]);
    assert!(
        !keys(of("kept")).await.is_empty(),
        "the other project is whole"
    );

    // A process that has not heard of the destroy yet (its settings a second old, a fold or an
    // offload round under way) writes nothing: each write it would make is refused.
    let store = &app.store;
    let now = server::store::now_ms();
    let report = server::store::DoneReport {
        downloader: "bob".into(),
        items: vec![held.clone()],
        bytes: vec![("data".into(), 1)],
        ip: "127.0.0.1".into(),
        id: "null".into(),
        ..Default::default()
    };
    let gone = |what: &str, r: Result<(), server::store::StoreError>| match r {
        Err(server::store::StoreError::NoProject) => {}
        other => panic!("{what} after the destroy: {other:?}"),
    };
    gone(
        "done",
        store.queue().done("gone", &report, now).await.map(|_| ()),
    );
    gone(
        "release",
        store
            .queue()
            .release("gone", &held, "bob", "127.0.0.1", true, now)
            .await
            .map(|_| ()),
    );
    let items = ["new".to_string()];
    gone(
        "add",
        store
            .queue()
            .add_items("gone", "todo", &items)
            .await
            .map(|_| ()),
    );
    gone(
        "tally",
        store
            .figures()
            .tally("gone", now + 3_600_000)
            .await
            .map(|_| ()),
    );
    let upload = serde_json::json!({"uploader": "bob"});
    gone(
        "upload",
        store.projects().record_upload("gone", &upload).await,
    );
    let run = vec![("run", now.to_string())];
    gone(
        "offload note",
        store.offload().note_offload("gone", run).await,
    );
    gone(
        "state",
        store
            .projects()
            .record_state("gone", "active", now)
            .await
            .map(|_| ()),
    );
    gone(
        "fed",
        store.queue().count_fed("gone", "k1", 5, 2, now).await,
    );
    assert_eq!(
        keys(of("gone")).await,
        Vec::<String>::new(),
        "still no key after the late writes"
    );
}

/// A Redis that evicts keys when full would delete items to make room: `tracker serve` refuses
/// to start on it, saying which setting to change, and starts once it is `noeviction`; switched
/// to evicting while the tracker serves, it is shown on `/healthz` from the next check on.
#[tokio::test]
async fn serve_refuses_a_redis_that_evicts_keys_when_full() {
    use fred::prelude::*;
    // Its own Redis: it changes the server's policy, which other tests' starts would meet.
    let app = TestApp::start_private().await;
    app.project("p1", &["a"]).await;
    let set_policy = |policy: &'static str| {
        let client = app.store.client().clone();
        async move {
            let _: () = client
                .custom(
                    fred::cmd!("CONFIG"),
                    vec!["SET", "maxmemory-policy", policy],
                )
                .await
                .expect("CONFIG SET");
        }
    };
    for policy in ["allkeys-lru", "volatile-ttl"] {
        set_policy(policy).await;
        let mut cmd = tracker_command(&tracker_bin(), &app.redis_url, &app.namespace, free_port());
        cmd.stderr(std::process::Stdio::piped());
        let mut child = Killed(cmd.spawn().expect("start the tracker"));
        let ended = wait_for("the tracker to stop", Duration::from_secs(30), || {
            let status = child.0.try_wait().expect("try_wait");
            async move { status }
        })
        .await;
        assert!(!ended.success(), "{policy}: it must not serve");
        let mut err = String::new();
        std::io::Read::read_to_string(&mut child.0.stderr.take().expect("stderr"), &mut err)
            .expect("read stderr");
        assert!(
            err.contains(&format!("maxmemory-policy {policy}"))
                && err.contains("maxmemory-policy noeviction"),
            "{policy}: {err}"
        );
    }
    // Set right, it serves; the item it refused to serve meanwhile is still queued.
    set_policy("noeviction").await;
    let env = [
        ("TRACKER_REDIS_CHECK", "1"),
        ("TRACKER_METRICS_PUBLIC", "1"),
    ];
    let (_serving, base) = serve_with(&app, &env).await;
    // The gauge of /metrics, for alerts: the problems the last check found.
    let gauge = || {
        let (http, url) = (app.http.clone(), format!("{base}/metrics"));
        async move {
            let body = http.get(url).send().await.ok()?.text().await.ok()?;
            let line = body
                .lines()
                .find(|l| l.starts_with("tracker_redis_problems "))?;
            line.split_whitespace().nth(1)?.parse::<i64>().ok()
        }
    };
    assert_eq!(claim_from(&app, &base, "p1", "198.51.100.7").await, 200);
    // Switched to evicting while it serves: the next check shows it on /healthz (still 200:
    // Redis answers), until it is set right again.
    let problems = || {
        let (http, url) = (app.http.clone(), format!("{base}/healthz"));
        async move {
            // Only a 200 counts (a poll past the public read rate gets a 429).
            let r = http
                .get(url)
                .send()
                .await
                .ok()
                .filter(|r| r.status() == 200)?;
            let health: serde_json::Value = r.json().await.ok()?;
            Some(health["redis_problems"].clone())
        }
    };
    assert_eq!(problems().await, Some(serde_json::Value::Null));
    set_policy("allkeys-lru").await;
    let shown = wait_for(
        "the check to see the policy",
        Duration::from_secs(20),
        || async { problems().await.filter(|p| !p.is_null()) },
    )
    .await;
    assert!(
        shown[0]
            .as_str()
            .is_some_and(|p| p.contains("maxmemory-policy allkeys-lru")),
        "{shown}"
    );
    assert_eq!(gauge().await, Some(1));
    set_policy("noeviction").await;
    wait_for("the check to clear", Duration::from_secs(20), || async {
        problems()
            .await
            .filter(serde_json::Value::is_null)
            .map(|_| ())
    })
    .await;
    assert_eq!(gauge().await, Some(0));
}

#[test]
fn a_command_whose_reader_goes_ends_quietly_with_the_broken_pipe_status() {
    use std::io::Read;
    // The library (over 100 KiB) does not fit in a pipe's buffer: the command is still
    // writing when its reader closes the pipe, as `tracker script library | head` does.
    let mut child = std::process::Command::new(tracker_bin())
        .args(["script", "library"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start the tracker");
    let mut head = [0u8; 64];
    child.stdout.take().unwrap().read_exact(&mut head).unwrap();
    assert!(head.starts_with(b"#!lua"), "{head:?}");
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(141), "{status:?}: {stderr}");
    assert!(stderr.is_empty(), "{stderr}");
}
