//! The black-box test harness: a [`TestApp`] is the real server on a free port, against a real
//! `redis-server` (a private one per app, on a unix socket), the one at `REDIS_URL`, or a local
//! Redis Cluster ([`cluster`]), under a random key namespace. Everything is stopped and removed
//! on drop.

pub mod cluster;
pub mod fault_proxy;
mod files;
mod snapshot;

pub mod panel;
pub mod s3;
pub mod s3_proxy;

pub mod chaos;

mod calls;

mod processes;
pub use processes::{
    connect_store, durable_redis, files_dir, spawn_tracker, start_redis, tracker_bin,
    tracker_command, Killed,
};

use server::{store::Store, AppState, Config, StartupReport};
use std::{
    net::SocketAddr,
    path::PathBuf,
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

/// A TCP port free on 127.0.0.1 now (for a process the test starts), never handed out twice
/// by this process. It lies below the kernel's ephemeral range (and so does its Redis Cluster
/// bus port, 10,000 above it): a port taken from that range can be reused, between this call
/// and the child's bind, by any outgoing connection or `bind(0)` of the tests running beside.
pub fn free_port() -> u16 {
    static GIVEN: std::sync::Mutex<Vec<u16>> = std::sync::Mutex::new(Vec::new());
    let ephemeral_low = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|r| r.split_whitespace().next()?.parse::<u16>().ok())
        .unwrap_or(32768);
    let high = ephemeral_low.min(22768);
    let mut given = GIVEN.lock().unwrap_or_else(|e| e.into_inner());
    if high > 11000 {
        for _ in 0..1000 {
            let port = rand::random_range(10000..high);
            if !given.contains(&port) && std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
                given.push(port);
                return port;
            }
        }
    }
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    given.push(port);
    port
}

/// The admin API token of every [`TestApp`].
pub const ADMIN_TOKEN: &str = "test-admin-token";

/// A running tracker for one test.
pub struct TestApp {
    /// Where it listens.
    pub addr: SocketAddr,
    /// The store it uses (same Redis, same namespace).
    pub store: Store,
    /// Its live hub (to wait on frames being sent).
    pub hub: server::hub::Hub,
    /// What its handlers share (its semaphores, its viewers).
    pub state: AppState,
    /// The one-time setup link it made at start (none when an account existed).
    pub setup_link: Option<String>,
    /// Its background start-up tasks, until a test takes them to wait on.
    pub startup: Option<tokio::task::JoinHandle<StartupReport>>,
    /// An HTTP client.
    pub http: reqwest::Client,
    /// The Redis URL it uses.
    pub redis_url: String,
    /// Its key namespace.
    pub namespace: String,
    redis: Option<Child>,
    /// On a test cluster, which is thrown away whole: no keys to remove one by one.
    on_cluster: bool,
    /// Its temporary directory (its Redis's data, `archive/`, `offload/`).
    pub dir: PathBuf,
    /// Its S3 server, when its segments live in one (`TRACKER_TEST_STORAGE=s3`, [`s3`]).
    pub s3: Option<s3::S3>,
    /// `TRACKER_STORAGE` of its segments, when they are not in `offload/`.
    pub storage: Option<String>,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
}

/// What a `tracker` CLI run did ([`TestApp::cli`]).
#[derive(Debug)]
pub struct CliRun {
    /// Whether it exited 0.
    pub ok: bool,
    /// Its standard output.
    pub out: String,
    /// Its standard output, as bytes.
    pub stdout: Vec<u8>,
    /// Its standard error.
    pub err: String,
}

/// A reply: status and body.
#[derive(Debug)]
pub struct Reply {
    /// HTTP status.
    pub status: u16,
    /// Body as text.
    pub body: String,
    /// Response headers.
    pub headers: reqwest::header::HeaderMap,
}

/// A project's keys with their `DUMP`s ([`TestApp::dump_project`]).
pub type Snapshot = Vec<(String, fred::types::Value)>;

/// Polls `check` until it returns `Some`, or panics with `what` after `deadline`.
pub async fn wait_for<T, F, Fut>(what: &str, deadline: Duration, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let end = Instant::now() + deadline;
    loop {
        if let Some(v) = check().await {
            return v;
        }
        assert!(Instant::now() < end, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// `html` without its `<script>` elements (the page data, the hydration code): what the server
/// rendered, so a check cannot pass on a string found only in the embedded JSON.
pub fn rendered(html: &str) -> String {
    let mut out = String::with_capacity(html.len());
    let mut rest = html;
    while let Some(open) = rest.find("<script") {
        out.push_str(&rest[..open]);
        let close = rest[open..].find("</script>").expect("a closed script") + open;
        rest = &rest[close + "</script>".len()..];
    }
    out.push_str(rest);
    out
}

/// `prefix` and 16 random hex digits.
pub fn random_name(prefix: &str) -> String {
    format!("{prefix}{:016x}", rand::random::<u64>())
}

/// Which Redis a [`TestApp`] uses instead of the default (its own, or `REDIS_URL`'s).
enum Redis {
    /// A `redis-server` of its own, whatever `REDIS_URL` says.
    Private,
    /// The cluster at this URL.
    Cluster(String),
}

/// A claim request of up to `n` items for downloader `name` from 10.0.0.1, its name valid.
pub fn who(name: &str, n: usize) -> server::store::ClaimRequest {
    server::store::ClaimRequest {
        downloader: name.into(),
        ip: "10.0.0.1".into(),
        n,
        name_ok: true,
        ..Default::default()
    }
}

impl TestApp {
    /// [`TestApp::start`] with its segments in its local offload directory whatever
    /// `TRACKER_TEST_STORAGE` says: for the tests of the files themselves (their permissions and
    /// times, a directory two installs share, what a purge leaves in it).
    pub async fn start_local() -> TestApp {
        Self::start_with(|c| c.storage = None).await
    }

    /// [`TestApp::start_private`] with its segments in its local offload directory (see
    /// [`TestApp::start_local`]).
    pub async fn start_private_local() -> TestApp {
        Self::start_private_with(|c| c.storage = None).await
    }

    /// Starts Redis (unless `REDIS_URL` is set) and the server on port 0.
    pub async fn start() -> TestApp {
        Self::start_with_site("target/site").await
    }

    /// [`TestApp::start`], serving the site (`pkg/` and other files) from `site_root`.
    pub async fn start_with_site(site_root: &str) -> TestApp {
        Self::start_configured(site_root, |_| {}).await
    }

    /// [`TestApp::start`] with `configure` applied to its [`Config`] first (e.g. `trust_proxy`).
    pub async fn start_with(configure: impl FnOnce(&mut Config)) -> TestApp {
        Self::start_configured("target/site", configure).await
    }

    /// [`TestApp::start`] on a `redis-server` of its own even when `REDIS_URL` is set: for tests
    /// that stop, pause or reconfigure their Redis.
    pub async fn start_private() -> TestApp {
        Self::start_on("target/site", Some(Redis::Private), |_| {}).await
    }

    /// [`TestApp::start_private`] with `configure` applied to its [`Config`] first.
    pub async fn start_private_with(configure: impl FnOnce(&mut Config)) -> TestApp {
        Self::start_on("target/site", Some(Redis::Private), configure).await
    }

    /// [`TestApp::start`] on the test binary's shared Redis Cluster ([`cluster::Cluster::shared`]).
    pub async fn start_cluster() -> TestApp {
        Self::start_on_cluster(cluster::Cluster::shared()).await
    }

    /// [`TestApp::start`] on `cluster`.
    pub async fn start_on_cluster(cluster: &cluster::Cluster) -> TestApp {
        Self::start_on_cluster_with(cluster, |_| {}).await
    }

    /// [`TestApp::start_on_cluster`] with `configure` applied to its [`Config`] first.
    pub async fn start_on_cluster_with(
        cluster: &cluster::Cluster,
        configure: impl FnOnce(&mut Config),
    ) -> TestApp {
        Self::start_on(
            "target/site",
            Some(Redis::Cluster(cluster.url())),
            configure,
        )
        .await
    }

    async fn start_configured(site_root: &str, configure: impl FnOnce(&mut Config)) -> TestApp {
        Self::start_on(site_root, None, configure).await
    }

    async fn start_on(
        site_root: &str,
        redis: Option<Redis>,
        configure: impl FnOnce(&mut Config),
    ) -> TestApp {
        let dir = std::env::temp_dir().join(random_name("tracker-test-"));
        std::fs::create_dir_all(&dir).expect("create temp dir");
        let on_cluster = matches!(redis, Some(Redis::Cluster(_)));
        let (redis, redis_url) = match (redis, std::env::var("REDIS_URL")) {
            (Some(Redis::Cluster(url)), _) => (None, url),
            (None, Ok(url)) if !url.is_empty() => (None, url),
            _ => {
                let (child, url) = start_redis(&dir);
                (Some(child), url)
            }
        };
        let namespace = random_name("test");
        let mut config = Config::new(&redis_url, &namespace);
        config.listen = "127.0.0.1:0".parse().expect("an address");
        config.site_root = site_root.into();
        config.admin_token = Some(ADMIN_TOKEN.to_string());
        config.archive_dir = dir.join("archive");
        config.offload_dir = dir.join("offload");
        // Tests drive the offloader by hand (server::store::offload::offloader), or switch it on.
        config.offloader = false;
        let s3 = s3::wanted().then(|| s3::S3::start(&dir));
        config.storage = s3.as_ref().map(|s| s.storage_url(&namespace));
        configure(&mut config);
        let storage = config.storage.clone();
        // Its S3 server only while it keeps its segments there.
        let s3 = s3.filter(|_| storage.is_some());
        // The very path `tracker serve` takes.
        let mut running = server::start(config).await.expect("start the tracker");
        let (addr, state, setup_link) = (
            running.addr,
            running.state.clone(),
            running.setup_link.clone(),
        );
        let startup = running.startup.take();
        let store = state.store.clone();
        let hub = state.hub.clone();
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(running.serve(async move {
            let _ = rx.await;
        }));
        TestApp {
            addr,
            store,
            hub,
            state,
            setup_link,
            startup,
            http: reqwest::Client::new(),
            redis_url,
            namespace,
            redis,
            on_cluster,
            dir,
            s3,
            storage,
            shutdown: Some(tx),
        }
    }

    /// `http://addr` + `path`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }

    /// Creates project `slug` (domain `data`) with `items` in its todo queue.
    pub async fn project(&self, slug: &str, items: &[&str]) {
        let p = server::store::NewProject {
            slug: slug.into(),
            title: format!("Project {slug}"),
            domains: vec!["data".into()],
        };
        self.store
            .projects()
            .create_project(&p)
            .await
            .expect("create project");
        let items: Vec<String> = items.iter().map(|s| s.to_string()).collect();
        self.store
            .queue()
            .add_items(slug, "todo", &items)
            .await
            .expect("add items");
    }

    /// Stops this app's own Redis (see [`TestApp::start_private`]).
    pub fn kill_redis(&mut self) {
        let mut child = self
            .redis
            .take()
            .expect("a Redis of its own: start the app with TestApp::start_private");
        let _ = child.kill();
        let _ = child.wait();
    }

    /// Claims up to `n` items of `slug` for downloader `name` through the store at `now` (ms):
    /// the items, none when there is nothing to give; panics on any other refusal.
    pub async fn claim_items(&self, slug: &str, name: &str, n: usize, now: u64) -> Vec<String> {
        use server::store::{ClaimOutcome, Refusal};
        match self
            .store
            .queue()
            .claim(slug, &who(name, n), now)
            .await
            .unwrap()
        {
            ClaimOutcome::Items(items, _) => items,
            ClaimOutcome::Refused(Refusal::NothingToGive) => vec![],
            other => panic!("unexpected {other:?}"),
        }
    }

    /// Runs `tracker ARGS...` (the CLI) against this app's Redis and namespace, with `stdin`
    /// as its standard input.
    pub fn cli(&self, args: &[&str], stdin: &[u8]) -> CliRun {
        self.cli_with(args, &[], stdin)
    }

    /// [`TestApp::cli`] with more environment variables.
    pub fn cli_with(&self, args: &[&str], env: &[(&str, &str)], stdin: &[u8]) -> CliRun {
        use std::io::Write;
        let mut child = Command::new(tracker_bin())
            .args(args)
            .env("REDIS_URL", &self.redis_url)
            .env("TRACKER_NAMESPACE", &self.namespace)
            .env("TRACKER_OFFLOAD_DIR", self.dir.join("offload"))
            .env("TRACKER_STORAGE", self.storage.as_deref().unwrap_or(""))
            .env("TRACKER_ARCHIVE_DIR", self.dir.join("archive"))
            .env("RUST_LOG", "error")
            // The caller's own come last: they may change any of these.
            .envs(env.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run tracker");
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(stdin)
            .expect("write stdin");
        let out = child.wait_with_output().expect("tracker exits");
        CliRun {
            ok: out.status.success(),
            out: String::from_utf8_lossy(&out.stdout).into_owned(),
            stdout: out.stdout.clone(),
            err: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    /// Changes project settings with `f` and saves them.
    pub async fn settings(&self, slug: &str, f: impl FnOnce(&mut server::store::Settings)) {
        let mut s = (*self
            .store
            .projects()
            .project(slug)
            .await
            .expect("read settings")
            .expect("project"))
        .clone();
        f(&mut s);
        server::ops::validate_settings(&s).expect("valid settings");
        self.store
            .projects()
            .save_settings(slug, &s)
            .await
            .expect("save settings");
    }

    /// The project's item counts, as the leaderboard reads them.
    pub async fn counts(&self, slug: &str) -> app::model::Counts {
        let (board, _) = self
            .store
            .figures()
            .snapshot(slug, 0, 0)
            .await
            .expect("snapshot")
            .expect("the project exists");
        board.counts
    }

    /// The completion log entries of project `slug` in Redis.
    pub async fn log_len(&self, slug: &str) -> u64 {
        use fred::prelude::*;
        self.store
            .client()
            .xlen(self.store.keys().project(slug).log())
            .await
            .expect("XLEN")
    }

    /// Panics unless `tracker check` finds the project's invariant intact.
    pub async fn assert_invariant(&self, slug: &str) {
        let problems = self.store.upkeep().check(slug).await.expect("check");
        assert!(
            problems.is_empty(),
            "invariant broken in {slug}: {problems:#?}"
        );
    }
}

impl Drop for TestApp {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(mut child) = self.redis.take() {
            let _ = child.kill();
            let _ = child.wait();
        } else if !self.on_cluster {
            // A shared Redis: remove this app's keys.
            let url = self.redis_url.clone();
            let pattern = format!("{}:*", self.namespace);
            let _ = std::thread::spawn(move || {
                let _ = Command::new("redis-cli")
                    .args(["-u", &url, "--scan", "--pattern", &pattern])
                    .output()
                    .map(|out| {
                        for key in String::from_utf8_lossy(&out.stdout).lines() {
                            let _ = Command::new("redis-cli")
                                .args(["-u", &url, "DEL", key])
                                .output();
                        }
                    });
            })
            .join();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
