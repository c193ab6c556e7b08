//! A full Redis (used memory past `maxmemory`, policy `noeviction`): every write answers 503
//! with `Retry-After` and changes nothing, reads keep answering, and writes succeed again as
//! soon as there is room, with nothing restarted.

use fred::prelude::*;
use server::store::StoreError;
use std::{os::unix::fs::PermissionsExt, time::Duration};
use tests::{Reply, TestApp, ADMIN_TOKEN};

/// Sets the app's Redis memory cap (`0`: none), as an operator would.
async fn set_maxmemory(app: &TestApp, bytes: &str) {
    let args = vec!["SET", "maxmemory", bytes, "maxmemory-policy", "noeviction"];
    app.store
        .pool()
        .next()
        .custom::<(), _>(fred::cmd!("CONFIG"), args)
        .await
        .expect("CONFIG SET");
}

fn assert_full(r: &Reply, what: &str) {
    assert_eq!(r.status, 503, "{what}: {}", r.body);
    let retry = r
        .headers
        .get("retry-after")
        .map(|v| v.to_str().unwrap_or(""));
    assert_eq!(retry, Some("5"), "{what}: Retry-After");
    assert_eq!(
        r.body, "The tracker's storage is full; retry later.\n",
        "{what}"
    );
}

async fn add_by_api(app: &TestApp, items: &str) -> Reply {
    let auth = format!("Bearer {ADMIN_TOKEN}");
    app.post_with(
        "/admin/api/p1/items?queue=todo",
        &[("authorization", auth.as_str())],
        items.to_string(),
    )
    .await
}

async fn release(app: &TestApp, item: &str) -> Reply {
    let body = serde_json::json!({"item": item, "downloader": "alice"});
    app.post("/p1/release", body.to_string()).await
}

#[tokio::test]
async fn a_full_redis_refuses_writes_whole_and_recovers_without_a_restart() {
    let app = TestApp::start_private().await;
    app.project("p1", &["a", "b", "c", "d", "e"]).await;
    let held = app.claim("p1", "alice").await;
    let kept = app.claim("p1", "alice").await;
    let before = app.counts("p1").await;
    // One byte: below whatever Redis uses, so it is full from now on.
    set_maxmemory(&app, "1").await;

    // claim.lua's first write is a ZPOPMIN, which Redis lets through a full memory (then the
    // whole script would run): only its `#!lua` line gets it refused before it starts.
    let claim = r#"{"downloader":"bob","api_version":"2"}"#;
    assert_full(&app.post("/p1/request", claim).await, "claim");
    assert_full(
        &app.post("/p1/multi=3//request", claim).await,
        "multi claim",
    );
    // Concurrent claims share one batched script call, refused as a whole.
    let many = (0..8).map(|_| app.post("/p1/request", claim));
    for r in futures::future::join_all(many).await {
        assert_full(&r, "concurrent claim");
    }
    assert_full(&app.done("p1", "alice", &held, 100).await, "done");
    assert_full(&release(&app, &kept).await, "release");
    assert_full(&add_by_api(&app, "new-1\nnew-2\n").await, "admin items add");
    let added = app
        .store
        .queue()
        .add_items("p1", "todo", &["new-3".to_string()])
        .await;
    assert!(matches!(added, Err(StoreError::Full)), "{added:?}");

    assert_eq!(app.counts("p1").await, before, "nothing changed");
    app.assert_invariant("p1").await;

    // Reads keep answering.
    for path in [
        "/",
        "/p1/",
        "/p1/stats.json",
        "/board/p1/page.json?window=60",
        "/healthz",
    ] {
        let r = app.get(path).await;
        assert_eq!(r.status, 200, "{path}: {}", r.body);
    }
    let status = app.get(&format!("/p1/items/{held}.json")).await;
    assert_eq!(status.status, 200, "{}", status.body);
    assert!(status.body.contains("\"out\""), "{}", status.body);

    // Room again: the same calls succeed, on the same connections.
    set_maxmemory(&app, "0").await;
    let claimed = app.claim("p1", "bob").await;
    let r = app.done("p1", "alice", &held, 100).await;
    assert_eq!((r.status, r.body.as_str()), (200, "OK\n"), "done");
    assert_eq!(release(&app, &kept).await.status, 200, "release");
    let r = add_by_api(&app, "new-1\nnew-2\n").await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(r.body.contains("\"count\":2"), "{}", r.body);
    let after = app.counts("p1").await;
    assert_eq!(after.done, before.done + 1);
    assert_eq!(after.out, 1, "only {claimed} is out");
    assert_eq!(
        after.todo,
        before.todo - 1 + 1 + 2,
        "one claimed, one released, two added"
    );
    app.assert_invariant("p1").await;
}

/// The private Redis of a tracker run in a temporary data directory, shut down and removed on
/// drop (also when the test fails: it runs in its own process group, a killed tracker leaves it).
struct DataDir(std::path::PathBuf);

impl DataDir {
    fn socket(&self) -> std::path::PathBuf {
        self.0.join("redis.sock")
    }

    /// `CONFIG GET name` of the private Redis, once it answers.
    async fn config(&self, name: &str) -> Option<String> {
        let out = tokio::process::Command::new("redis-cli")
            .arg("-s")
            .arg(self.socket())
            .args(["CONFIG", "GET", name])
            .output()
            .await
            .ok()?;
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let mut lines = text.lines();
        (lines.next() == Some(name)).then(|| lines.next().unwrap_or_default().to_string())
    }

    /// Runs `tracker ARGS` without `REDIS_URL`, with `env`.
    fn tracker(&self, args: &[&str], env: &[(&str, &str)]) -> tokio::process::Command {
        let mut cmd = tokio::process::Command::new(tests::tracker_bin());
        cmd.args(args)
            .env_remove("REDIS_URL")
            .env_remove("TRACKER_REDIS_MAXMEMORY")
            .env_remove("TRACKER_FSYNC")
            .env("TRACKER_DATA_DIR", &self.0)
            .env("RUST_LOG", "error")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .envs(env.iter().copied());
        cmd
    }
}

impl Drop for DataDir {
    fn drop(&mut self) {
        let _ = std::process::Command::new("redis-cli")
            .arg("-s")
            .arg(self.socket())
            .args(["SHUTDOWN", "NOSAVE"])
            .output();
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[tokio::test]
async fn serve_and_the_cli_cap_the_private_redis_and_keep_its_directory_private() {
    let dir = DataDir(std::env::temp_dir().join(tests::random_name("tracker-data-")));
    let mut serve = dir
        .tracker(
            &["serve"],
            &[
                ("TRACKER_LISTEN", "127.0.0.1:0"),
                ("TRACKER_REDIS_MAXMEMORY", "100mb"),
            ],
        )
        .kill_on_drop(true)
        .spawn()
        .expect("start the tracker (cargo build -p server)");
    let cap = tests::wait_for("the private redis", Duration::from_secs(30), || {
        dir.config("maxmemory")
    })
    .await;
    assert_eq!(cap, (100u64 << 20).to_string());
    assert_eq!(
        dir.config("maxmemory-policy").await.as_deref(),
        Some("noeviction")
    );
    let mode = std::fs::metadata(&dir.0)
        .expect("data dir")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o700, "the data directory is private");

    // A CLI command uses the server's Redis, and sets the cap it is given...
    let created = dir
        .tracker(
            &["project", "create", "demo"],
            &[("TRACKER_REDIS_MAXMEMORY", "200mb")],
        )
        .status()
        .await
        .expect("tracker project create");
    assert!(created.success());
    assert_eq!(
        dir.config("maxmemory").await,
        Some((200u64 << 20).to_string())
    );
    // ...and leaves it as it is when none is given.
    let shown = dir
        .tracker(&["project", "show", "demo"], &[])
        .status()
        .await;
    assert!(shown.expect("tracker project show").success());
    assert_eq!(
        dir.config("maxmemory").await,
        Some((200u64 << 20).to_string())
    );

    // SIGTERM: the tracker stops the Redis it started.
    let pid = serve.id().expect("pid").to_string();
    let killed = tokio::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .await;
    assert!(killed.expect("kill").success());
    let stopped = tokio::time::timeout(Duration::from_secs(20), serve.wait()).await;
    assert!(stopped.is_ok(), "the tracker stops on SIGTERM");
    // Its redis-server was told to shut down; it may take a moment to exit.
    tests::wait_for("its redis to stop too", Duration::from_secs(10), || async {
        dir.config("maxmemory").await.is_none().then_some(())
    })
    .await;
}

impl DataDir {
    /// `redis-cli -s SOCKET ARGS` of the private Redis: its answer, once it answers.
    async fn cli(&self, args: &[&str]) -> Option<String> {
        let out = tokio::process::Command::new("redis-cli")
            .arg("-s")
            .arg(self.socket())
            .args(args)
            .output()
            .await
            .ok()?;
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        (out.status.success() && !text.starts_with("Could not connect") && !text.is_empty())
            .then_some(text)
    }

    /// The private Redis's process id, once it answers.
    async fn redis_pid(&self) -> Option<u32> {
        let info = self.cli(&["INFO", "server"]).await?;
        info.lines()
            .find_map(|l| l.strip_prefix("process_id:"))
            .and_then(|p| p.trim().parse().ok())
    }
}

#[tokio::test]
async fn a_private_redis_that_dies_is_restarted_from_its_append_only_file() {
    let dir = DataDir(std::env::temp_dir().join(tests::random_name("tracker-data-")));
    let port = tests::free_port();
    let base = format!("http://127.0.0.1:{port}");
    let mut serve = dir
        .tracker(
            &["serve"],
            // Every write on disk before it is answered, and so after a restart too.
            &[
                ("TRACKER_LISTEN", &format!("127.0.0.1:{port}")),
                ("TRACKER_FSYNC", "always"),
            ],
        )
        .kill_on_drop(true)
        .spawn()
        .expect("start the tracker (cargo build -p server)");
    let first = tests::wait_for("the private redis", Duration::from_secs(30), || {
        dir.redis_pid()
    })
    .await;
    let created = dir
        .tracker(&["project", "create", "demo"], &[])
        .status()
        .await;
    assert!(created.expect("tracker project create").success());
    let mut add = dir.tracker(&["items", "add", "demo", "-"], &[]);
    let mut add = add.stdin(std::process::Stdio::piped()).spawn().unwrap();
    use tokio::io::AsyncWriteExt;
    let mut stdin = add.stdin.take().unwrap();
    stdin.write_all(b"a\nb\nc\n").await.unwrap();
    drop(stdin);
    assert!(add.wait().await.unwrap().success());

    // The tracker serves (and so supervises the Redis it started) before that Redis is killed.
    let http = reqwest::Client::new();
    tests::wait_for("the tracker to serve", Duration::from_secs(30), || {
        let req = http.get(format!("{base}/demo/stats.json"));
        async move { (req.send().await.ok()?.status() == 200).then_some(()) }
    })
    .await;
    assert!(
        serve.try_wait().expect("the tracker's status").is_none(),
        "the tracker is running"
    );
    let killed = std::process::Command::new("kill")
        .args(["-KILL", &first.to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let second = tests::wait_for("a new redis-server", Duration::from_secs(20), || async {
        dir.redis_pid().await.filter(|&p| p != first)
    })
    .await;
    // The tracker reconnects by itself and the items are there.
    tests::wait_for("a claim after the restart", Duration::from_secs(20), || {
        let req = http
            .post(format!("{base}/demo/request"))
            .body(r#"{"downloader":"alice","api_version":"2"}"#);
        async move {
            let r = req.send().await.ok()?;
            (r.status() == 200).then_some(())
        }
    })
    .await;
    let status = http
        .get(format!("{base}/demo/stats.json"))
        .send()
        .await
        .unwrap();
    let stats: serde_json::Value = status.json().await.unwrap();
    assert_eq!(stats["total_items"], 3, "nothing lost: {stats}");
    assert_eq!(
        dir.config("appendfsync").await.as_deref(),
        Some("always"),
        "the restarted server keeps the setting"
    );

    // SIGTERM stops the restarted server too.
    let pid = serve.id().expect("pid").to_string();
    let term = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status();
    assert!(term.unwrap().success());
    let stopped = tokio::time::timeout(Duration::from_secs(20), serve.wait()).await;
    assert!(stopped.is_ok(), "the tracker stops on SIGTERM");
    tests::wait_for(
        "the restarted redis to stop",
        Duration::from_secs(10),
        || async {
            let alive = std::path::Path::new(&format!("/proc/{second}")).exists();
            (!alive).then_some(())
        },
    )
    .await;
}

#[tokio::test]
async fn the_fsync_setting_reaches_the_private_redis_and_a_cli_command_keeps_it() {
    let dir = DataDir(std::env::temp_dir().join(tests::random_name("tracker-data-")));
    let mut serve = dir
        .tracker(
            &["serve"],
            &[
                ("TRACKER_LISTEN", "127.0.0.1:0"),
                ("TRACKER_FSYNC", "always"),
            ],
        )
        .kill_on_drop(true)
        .spawn()
        .expect("start the tracker (cargo build -p server)");
    let set = tests::wait_for("the private redis", Duration::from_secs(30), || {
        dir.config("appendfsync")
    })
    .await;
    assert_eq!(set, "always");

    // A CLI command given the setting changes the running server's; one without leaves it.
    let show = |env: &'static [(&'static str, &'static str)]| {
        dir.tracker(&["project", "show", "none"], env).status()
    };
    let _ = show(&[("TRACKER_FSYNC", "everysec")])
        .await
        .expect("tracker");
    assert_eq!(dir.config("appendfsync").await.as_deref(), Some("everysec"));
    let _ = show(&[]).await.expect("tracker");
    assert_eq!(dir.config("appendfsync").await.as_deref(), Some("everysec"));
    // A value that is not a setting is refused before anything changes.
    let bad = show(&[("TRACKER_FSYNC", "no")]).await.expect("tracker");
    assert!(!bad.success());
    assert_eq!(dir.config("appendfsync").await.as_deref(), Some("everysec"));
    let _ = serve.kill().await;

    // Without the setting, a new private Redis gets the default.
    let other = DataDir(std::env::temp_dir().join(tests::random_name("tracker-data-")));
    let _serve = other
        .tracker(&["serve"], &[("TRACKER_LISTEN", "127.0.0.1:0")])
        .kill_on_drop(true)
        .spawn()
        .expect("start the tracker");
    let default = tests::wait_for("the private redis", Duration::from_secs(30), || {
        other.config("appendfsync")
    })
    .await;
    assert_eq!(default, "everysec", "the default chosen in bench/README.md");
}
