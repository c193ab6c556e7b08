//! The private `redis-server` used when `REDIS_URL` is unset: data, append-only file and unix
//! socket under the data directory, no TCP port.
//!
//! A server already answering on the socket (started by an earlier run that was killed, or by
//! the CLI) is reused and left running; one started here is supervised, restarted from its
//! append-only file whenever it exits (with a growing pause between tries, logged), until
//! [`EmbeddedRedis::stop`] stops it.
//!
//! Its memory is capped (`maxmemory`, policy `noeviction`): past the cap Redis refuses writes
//! (the API answers 503) instead of growing until the kernel kills it or evicting queued items.
//! Its append-only file is forced to disk as [`Fsync`] says (`appendfsync`), by every server
//! started here, restarts included.

use crate::config::Fsync;
use std::{
    io::{Read, Write},
    os::unix::{fs::PermissionsExt, net::UnixStream},
    path::{Path, PathBuf},
    time::{Duration, Instant},
};

/// A private Redis, started here or found running.
pub struct EmbeddedRedis {
    socket: PathBuf,
    supervisor: Option<Supervisor>,
}

/// The task that keeps a server started here running, and the switch that stops it.
struct Supervisor {
    stop: tokio::sync::watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
}

/// How a server started here is started (again).
#[derive(Clone)]
struct Launch {
    dir: PathBuf,
    socket: PathBuf,
    log: PathBuf,
    maxmemory: u64,
    fsync: Fsync,
}

impl Launch {
    fn spawn(&self) -> std::io::Result<tokio::process::Child> {
        let _ = std::fs::remove_file(&self.socket);
        tokio::process::Command::new("redis-server")
            .args([
                "--port",
                "0",
                "--unixsocketperm",
                "700",
                "--appendonly",
                "yes",
            ])
            .args(["--appendfsync", self.fsync.as_str()])
            .args(["--save", "", "--daemonize", "no"])
            .args(hash_listpack_args())
            .args(["--maxmemory-policy", "noeviction", "--maxmemory"])
            .arg(self.maxmemory.to_string())
            .arg("--unixsocket")
            .arg(&self.socket)
            .arg("--dir")
            .arg(&self.dir)
            .arg("--logfile")
            .arg(&self.log)
            // Its own process group: Ctrl-C reaches the tracker, which stops Redis after itself.
            .process_group(0)
            .stdin(std::process::Stdio::null())
            .spawn()
    }
}

/// The longest pause between restarts of a server that keeps exiting.
const MAX_BACKOFF: Duration = Duration::from_secs(10);

/// Keeps `child` running: when it exits, starts it again after a pause that doubles while it
/// keeps exiting soon after a start; on `stop`, ends it with SIGTERM (Redis flushes its
/// append-only file) and returns.
async fn supervise(
    launch: Launch,
    mut child: tokio::process::Child,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
    let mut backoff = Duration::from_millis(100);
    let mut started = Instant::now();
    loop {
        tokio::select! {
            status = child.wait() => {
                if started.elapsed() > Duration::from_secs(60) {
                    backoff = Duration::from_millis(100);
                }
                tracing::warn!(?status, ?backoff, "the private redis-server exited; restarting it from its append-only file");
                loop {
                    tokio::select! {
                        () = tokio::time::sleep(backoff) => {}
                        _ = stop.changed() => return,
                    }
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                    match launch.spawn() {
                        Ok(c) => {
                            child = c;
                            started = Instant::now();
                            tracing::info!("restarted the private redis-server");
                            break;
                        }
                        Err(e) => tracing::error!(error = %e, "could not restart redis-server; trying again"),
                    }
                }
            }
            _ = stop.changed() => {
                if let Some(pid) = child.id() {
                    // SAFETY: sending a signal to our own child process.
                    unsafe { libc::kill(pid as i32, libc::SIGTERM) };
                }
                match tokio::time::timeout(Duration::from_secs(10), child.wait()).await {
                    Ok(_) => tracing::info!("private redis-server stopped"),
                    Err(_) => {
                        tracing::warn!("redis-server did not stop in 10 s; killing it");
                        let _ = child.kill().await;
                    }
                }
                return;
            }
        }
    }
}

/// Why the private Redis could not be started.
#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    /// Filesystem or process error.
    #[error("{0}: {1}")]
    Io(String, std::io::Error),
    /// redis-server did not answer in time.
    #[error("redis-server did not start (see {0})")]
    NotReady(PathBuf),
    /// The running redis-server refused the memory or `appendfsync` settings.
    #[error("could not configure the running redis-server (maxmemory, appendfsync): {0}")]
    Config(fred::error::Error),
}

impl EmbeddedRedis {
    /// Finds or starts the private Redis of `data_dir`, capped at `maxmemory` bytes (`0`: no
    /// cap), writing its append-only file to disk as `fsync` says. `None`: a server started
    /// here gets [`default_maxmemory`] and [`Fsync::DEFAULT`]; one found running keeps its cap
    /// (or gets the default if it has none) and its `appendfsync`, so that a CLI command run
    /// without the settings leaves those of the server's Redis as they are.
    pub async fn ensure(
        data_dir: &Path,
        maxmemory: Option<u64>,
        fsync: Option<Fsync>,
    ) -> Result<Self, LaunchError> {
        let dir = private_dir(data_dir)?;
        let socket = dir.join("redis.sock");
        let log = dir.join("redis.log");
        // Something listens on the socket: a server already running, perhaps too busy to answer
        // at once. Wait for it; starting a second one on the same files would split the data.
        if UnixStream::connect(&socket).is_ok() {
            let deadline = Instant::now() + Duration::from_secs(15);
            while !ping(&socket) {
                if Instant::now() > deadline {
                    return Err(LaunchError::NotReady(log));
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            tracing::info!(socket = %socket.display(), "using the private redis-server already running");
            let redis = Self {
                socket,
                supervisor: None,
            };
            redis.configure(maxmemory, fsync).await?;
            return Ok(redis);
        }
        let maxmemory = maxmemory.unwrap_or_else(default_maxmemory);
        let fsync = fsync.unwrap_or(Fsync::DEFAULT);
        let launch = Launch {
            dir: dir.clone(),
            socket: socket.clone(),
            log: log.clone(),
            maxmemory,
            fsync,
        };
        let child = launch
            .spawn()
            .map_err(|e| LaunchError::Io("start redis-server (is it installed?)".into(), e))?;
        let deadline = Instant::now() + Duration::from_secs(15);
        while !ping(&socket) {
            if Instant::now() > deadline {
                return Err(LaunchError::NotReady(log));
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        tracing::info!(socket = %socket.display(), maxmemory, appendfsync = fsync.as_str(), "started private redis-server");
        let (stop, stopped) = tokio::sync::watch::channel(false);
        let task = tokio::spawn(supervise(launch, child, stopped));
        Ok(Self {
            socket,
            supervisor: Some(Supervisor { stop, task }),
        })
    }

    /// The URL to connect to it.
    pub fn url(&self) -> String {
        format!("redis+unix://{}", self.socket.display())
    }

    /// Configures a server found running: its memory cap, `maxmemory` when given, else the
    /// default when it has no cap; the `noeviction` policy, whatever it had; and `appendfsync`
    /// when `fsync` is given (logged either way, as the start of a server is).
    async fn configure(
        &self,
        maxmemory: Option<u64>,
        fsync: Option<Fsync>,
    ) -> Result<(), LaunchError> {
        use fred::prelude::*;
        let config = Config {
            server: ServerConfig::new_unix_socket(&self.socket),
            ..Config::default()
        };
        let client = Builder::from_config(config)
            .with_connection_config(|c| c.connection_timeout = Duration::from_secs(5))
            .build()
            .map_err(LaunchError::Config)?;
        client.init().await.map_err(LaunchError::Config)?;
        let result = async {
            let cap = match maxmemory {
                Some(bytes) => Some(bytes),
                None => {
                    let (_, current): (String, u64) = client
                        .custom(fred::cmd!("CONFIG"), vec!["GET", "maxmemory"])
                        .await?;
                    (current == 0).then(default_maxmemory)
                }
            };
            let mut args = vec![
                "SET".to_string(),
                "maxmemory-policy".into(),
                "noeviction".into(),
                "hash-max-listpack-entries".into(),
                HASH_LISTPACK_ENTRIES.to_string(),
            ];
            if let Some(bytes) = cap {
                args.extend(["maxmemory".into(), bytes.to_string()]);
                tracing::info!(
                    maxmemory = bytes,
                    "capped the memory of the running redis-server"
                );
            }
            if let Some(fsync) = fsync {
                args.extend(["appendfsync".into(), fsync.as_str().into()]);
            }
            client.custom::<(), _>(fred::cmd!("CONFIG"), args).await?;
            let (_, appendfsync): (String, String) = client
                .custom(fred::cmd!("CONFIG"), vec!["GET", "appendfsync"])
                .await?;
            tracing::info!(appendfsync, "the running redis-server's append-only file");
            Ok(())
        }
        .await;
        let _ = client.quit().await;
        result.map_err(LaunchError::Config)
    }

    /// Stops the server if it was started here (SIGTERM: Redis flushes its append-only file).
    pub async fn stop(mut self) {
        let Some(Supervisor { stop, task }) = self.supervisor.take() else {
            return;
        };
        let _ = stop.send(true);
        let _ = task.await;
    }
}

/// Creates `data_dir` if needed and makes it private to this user (0700): it holds every item,
/// account and session, and the socket. Returns its absolute path.
fn private_dir(data_dir: &Path) -> Result<PathBuf, LaunchError> {
    let io = |what: &str| {
        let what = format!("{what} {}", data_dir.display());
        move |e: std::io::Error| LaunchError::Io(what, e)
    };
    std::fs::create_dir_all(data_dir).map_err(io("create"))?;
    let mode = std::fs::metadata(data_dir)
        .map_err(io("read"))?
        .permissions()
        .mode();
    if mode & 0o777 != 0o700 {
        std::fs::set_permissions(data_dir, std::fs::Permissions::from_mode(0o700))
            .map_err(io("make private (chmod 700)"))?;
        tracing::info!(dir = %data_dir.display(), was = format!("{:o}", mode & 0o777), "made the data directory private (700)");
    }
    data_dir.canonicalize().map_err(io("resolve"))
}

/// The most fields a hash keeps in Redis's compact encoding (a list scanned from its start) before
/// it becomes a hash table (`hash-max-listpack-entries`, Redis's default 512). The per-downloader
/// hashes of a project (items held, versions, last seen, the minute and hour windows) get one
/// field per downloader and are read and written a batch of fields at a time: past a few dozen
/// downloaders every field looked up in a list costs a scan. Set on the private Redis and on the
/// test harness's; README, "Redis", asks it of one's own (bench/README.md, "Hashes of 64 fields").
pub const HASH_LISTPACK_ENTRIES: u32 = 64;

/// The command-line arguments of `redis-server` that set [`HASH_LISTPACK_ENTRIES`].
pub fn hash_listpack_args() -> [String; 2] {
    [
        "--hash-max-listpack-entries".into(),
        HASH_LISTPACK_ENTRIES.to_string(),
    ]
}

/// The smallest default cap, for machines (or containers) with little memory.
pub const MIN_DEFAULT_MAXMEMORY: u64 = 64 << 20;

/// The default cap of the private Redis: a quarter of the memory this process may use (the
/// machine's `MemTotal`, or a lower cgroup limit), at least [`MIN_DEFAULT_MAXMEMORY`]; 1 GiB
/// when neither can be read.
pub fn default_maxmemory() -> u64 {
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let cgroup = std::fs::read_to_string("/sys/fs/cgroup/memory.max").ok();
    share_of_memory(&meminfo, cgroup.as_deref())
}

/// [`default_maxmemory`] from the text of `/proc/meminfo` and of cgroup v2's `memory.max`.
fn share_of_memory(meminfo: &str, cgroup_max: Option<&str>) -> u64 {
    let total = meminfo.lines().find_map(|l| {
        let kb = l.strip_prefix("MemTotal:")?.trim().strip_suffix("kB")?;
        kb.trim().parse::<u64>().ok()?.checked_mul(1024)
    });
    // "max" (no limit) does not parse, and is ignored.
    let cgroup = cgroup_max.and_then(|s| s.trim().parse::<u64>().ok());
    let available = match (total, cgroup) {
        (Some(t), Some(c)) => t.min(c),
        (Some(m), None) | (None, Some(m)) => m,
        (None, None) => return 1 << 30,
    };
    (available / 4).max(MIN_DEFAULT_MAXMEMORY)
}

/// Whether a Redis answers `PING` on `socket`.
fn ping(socket: &Path) -> bool {
    let Ok(mut s) = UnixStream::connect(socket) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_millis(500)));
    let mut buf = [0u8; 7];
    s.write_all(b"PING\r\n").is_ok() && s.read_exact(&mut buf).is_ok() && &buf == b"+PONG\r\n"
}

#[cfg(test)]
mod tests {
    use super::*;
    use fred::prelude::*;

    #[test]
    fn the_default_cap_is_a_quarter_of_memory_and_at_least_64_mb() {
        let meminfo = "MemTotal:       16384000 kB\nMemFree:         1000 kB\n";
        assert_eq!(share_of_memory(meminfo, None), 16384000 * 1024 / 4);
        assert_eq!(share_of_memory(meminfo, Some("max\n")), 16384000 * 1024 / 4);
        // A container's cgroup limit lower than the machine's memory wins.
        assert_eq!(share_of_memory(meminfo, Some("2147483648\n")), 512 << 20);
        let small = "MemTotal:         131072 kB\n";
        assert_eq!(share_of_memory(small, None), MIN_DEFAULT_MAXMEMORY);
        assert_eq!(share_of_memory("", None), 1 << 30);
        assert_eq!(share_of_memory("", Some("1073741824")), 256 << 20);
        assert!(default_maxmemory() >= MIN_DEFAULT_MAXMEMORY);
    }

    async fn config_get(redis: &EmbeddedRedis, name: &str) -> String {
        let config = Config {
            server: ServerConfig::new_unix_socket(&redis.socket),
            ..Config::default()
        };
        let client = Builder::from_config(config).build().expect("client");
        client.init().await.expect("connect");
        let (_, value): (String, String) = client
            .custom(fred::cmd!("CONFIG"), vec!["GET", name])
            .await
            .expect("CONFIG GET");
        let _ = client.quit().await;
        value
    }

    /// Needs `redis-server` on the PATH, as the tracker itself does.
    #[tokio::test]
    async fn the_private_redis_is_capped_keeps_small_hashes_compact_and_its_directory_private() {
        let dir =
            std::env::temp_dir().join(format!("tracker-embedded-{:016x}", rand::random::<u64>()));
        std::fs::create_dir(&dir).expect("create");
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).expect("chmod");

        let started = EmbeddedRedis::ensure(&dir, Some(100 << 20), None)
            .await
            .expect("start");
        let mode = std::fs::metadata(&dir).expect("stat").permissions().mode();
        assert_eq!(mode & 0o777, 0o700, "the data directory is private");
        assert_eq!(
            config_get(&started, "maxmemory").await,
            (100u64 << 20).to_string()
        );
        assert_eq!(config_get(&started, "maxmemory-policy").await, "noeviction");
        let listpack = HASH_LISTPACK_ENTRIES.to_string();
        assert_eq!(
            config_get(&started, "hash-max-listpack-entries").await,
            listpack
        );
        let default = Fsync::DEFAULT.as_str();
        assert_eq!(config_get(&started, "appendfsync").await, default);

        // A server found running keeps its cap and appendfsync when none is given, and takes
        // those given.
        let found = EmbeddedRedis::ensure(&dir, None, None)
            .await
            .expect("reuse");
        assert!(found.supervisor.is_none(), "reused, not started");
        assert_eq!(
            config_get(&found, "maxmemory").await,
            (100u64 << 20).to_string()
        );
        assert_eq!(config_get(&found, "appendfsync").await, default);
        let other = match Fsync::DEFAULT {
            Fsync::Always => Fsync::Everysec,
            Fsync::Everysec => Fsync::Always,
        };
        let found = EmbeddedRedis::ensure(&dir, Some(200 << 20), Some(other))
            .await
            .expect("reuse");
        assert_eq!(
            config_get(&found, "maxmemory").await,
            (200u64 << 20).to_string()
        );
        assert_eq!(config_get(&found, "appendfsync").await, other.as_str());
        // One running with no cap (and evicting) gets the default cap and noeviction.
        let config = |args: Vec<&'static str>| async {
            let c = Builder::from_config(Config {
                server: ServerConfig::new_unix_socket(&found.socket),
                ..Config::default()
            })
            .build()
            .expect("client");
            c.init().await.expect("connect");
            c.custom::<(), _>(fred::cmd!("CONFIG"), args)
                .await
                .expect("CONFIG SET");
            let _ = c.quit().await;
        };
        config(vec![
            "SET",
            "maxmemory",
            "0",
            "maxmemory-policy",
            "allkeys-lru",
            "hash-max-listpack-entries",
            "512",
        ])
        .await;
        let found = EmbeddedRedis::ensure(&dir, None, None)
            .await
            .expect("reuse");
        assert_eq!(
            config_get(&found, "maxmemory").await,
            default_maxmemory().to_string()
        );
        assert_eq!(config_get(&found, "appendfsync").await, other.as_str());
        assert_eq!(config_get(&found, "maxmemory-policy").await, "noeviction");
        assert_eq!(
            config_get(&found, "hash-max-listpack-entries").await,
            listpack
        );

        found.stop().await;
        started.stop().await;
        let _ = std::fs::remove_dir_all(&dir);
    }
}
