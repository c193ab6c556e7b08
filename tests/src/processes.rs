//! The processes tests start besides the in-process server: tracker binaries (built from this
//! source) and `redis-server`s, each killed when its handle is dropped.

use std::{
    path::PathBuf,
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

/// A child process, SIGKILLed when dropped (also when a test fails).
pub struct Killed(pub Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `bin serve` against `redis_url` under `namespace` on 127.0.0.1:`port`, quiet; more settings
/// may be added before it is spawned.
pub fn tracker_command(
    bin: &std::path::Path,
    redis_url: &str,
    namespace: &str,
    port: u16,
) -> Command {
    let mut cmd = Command::new(bin);
    cmd.arg("serve")
        .env("REDIS_URL", redis_url)
        .env("TRACKER_NAMESPACE", namespace)
        .env("TRACKER_LISTEN", format!("127.0.0.1:{port}"))
        // Its files (log archives, offloaded items) under the temp dir, not the working dir.
        .env("TRACKER_ARCHIVE_DIR", files_dir(namespace).join("archive"))
        .env("TRACKER_OFFLOAD_DIR", files_dir(namespace).join("offload"))
        .env("RUST_LOG", "error")
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    cmd
}

/// Where a tracker started by [`tracker_command`] with `namespace` keeps its files
/// (`archive/`, `offload/`): under the temp dir, not the working dir.
pub fn files_dir(namespace: &str) -> PathBuf {
    std::env::temp_dir().join(format!("tracker-files-{namespace}"))
}

/// A store of the test's own on `redis_url` under `namespace` (`pool` connections), its segment
/// files where [`spawn_tracker`]'s process keeps them ([`files_dir`]).
pub async fn connect_store(
    redis_url: &str,
    namespace: &str,
    pool: usize,
) -> server::store::StoreResult<server::store::Store> {
    server::store::Store::connect(
        redis_url,
        namespace,
        pool,
        files_dir(namespace).join("offload"),
    )
    .await
}

/// Runs `bin serve` against `redis_url` under `namespace` on 127.0.0.1:`port`, quietly.
pub fn spawn_tracker(bin: &std::path::Path, redis_url: &str, namespace: &str, port: u16) -> Killed {
    Killed(
        tracker_command(bin, redis_url, namespace, port)
            .spawn()
            .unwrap_or_else(|e| panic!("start {}: {e}", bin.display())),
    )
}

/// The tracker binary built from this source: `TRACKER_BIN` (`make test` points it at the
/// release build it has just made), or else built here once per test process with this run's
/// profile (`cargo build -p server`, a no-op when it is up to date), so a bare `cargo test`
/// never runs a stale binary.
pub fn tracker_bin() -> PathBuf {
    static BIN: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BIN.get_or_init(|| {
        if let Some(bin) = std::env::var_os("TRACKER_BIN").filter(|b| !b.is_empty()) {
            return bin.into();
        }
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let release = !cfg!(debug_assertions);
        let mut build = Command::new(std::env::var_os("CARGO").unwrap_or("cargo".into()));
        build
            .args(["build", "-q", "-p", "server", "--bin", "tracker"])
            .current_dir(&root);
        if release {
            build.arg("--release");
        }
        let status = build.status().expect("run cargo build -p server");
        assert!(status.success(), "cargo build -p server failed");
        let target =
            std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), PathBuf::from);
        target
            .join(if release { "release" } else { "debug" })
            .join("tracker")
    })
    .clone()
}

/// `redis-server` on `port` with its data in `dir`: every write in the append-only file and
/// fsynced before the reply, so a SIGKILL loses nothing the tracker was told was written.
pub fn durable_redis(dir: &std::path::Path, port: u16) -> Killed {
    let child = Command::new("redis-server")
        .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
        .args([
            "--save",
            "",
            "--appendonly",
            "yes",
            "--appendfsync",
            "always",
        ])
        .args(server::embedded_redis::hash_listpack_args())
        .args(["--daemonize", "no", "--logfile"])
        .arg(dir.join("redis.log"))
        .arg("--dir")
        .arg(dir)
        .stdout(Stdio::null())
        .spawn()
        .expect("redis-server must be installed (make test installs it)");
    Killed(child)
}

/// Starts a private `redis-server` on a unix socket in `dir`; returns it and its URL.
pub fn start_redis(dir: &std::path::Path) -> (Child, String) {
    let socket = dir.join("redis.sock");
    let child = Command::new("redis-server")
        .args([
            "--port",
            "0",
            "--save",
            "",
            "--appendonly",
            "no",
            "--daemonize",
            "no",
        ])
        .args(server::embedded_redis::hash_listpack_args())
        .arg("--unixsocket")
        .arg(&socket)
        .arg("--dir")
        .arg(dir)
        .stdout(Stdio::null())
        .spawn()
        .expect("redis-server must be installed (make test installs it)");
    let end = Instant::now() + Duration::from_secs(10);
    while std::os::unix::net::UnixStream::connect(&socket).is_err() {
        assert!(Instant::now() < end, "redis-server did not start");
        std::thread::sleep(Duration::from_millis(5));
    }
    (child, format!("redis+unix://{}", socket.display()))
}
