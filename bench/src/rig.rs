//! What a bench run measures: its Redis (a private server, or with `--cluster` a local
//! 3-master Redis Cluster) and the release tracker, and the CPU they use.

use server::store::Store;
use std::time::Duration;
use tests::{cluster::Cluster, Killed};

/// CPU ticks (user, system) and resident memory of a process, from /proc.
pub(crate) struct ProcSample {
    pub(crate) user: u64,
    pub(crate) system: u64,
    pub(crate) rss_kib: u64,
    pub(crate) hwm_kib: u64,
}

/// The CPU times and memory of process `pid` from `/proc`; stops the run when they cannot be
/// read (a figure of 0 would look like a result).
pub(crate) fn sample(pid: u32) -> ProcSample {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .unwrap_or_else(|e| panic!("/proc/{pid}/stat: {e} (has the tracker exited?)"));
    // Fields after the command name: state is the first, utime the 12th, stime the 13th.
    let fields: Vec<&str> = stat
        .rsplit_once(") ")
        .map(|(_, rest)| rest.split(' ').collect())
        .unwrap_or_default();
    let field = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<u64>().ok())
            .unwrap_or_else(|| panic!("field {i} of /proc/{pid}/stat: {stat}"))
    };
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_else(|e| panic!("/proc/{pid}/status: {e}"));
    let kib = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("{name} in /proc/{pid}/status"))
    };
    ProcSample {
        user: field(11),
        system: field(12),
        rss_kib: kib("VmRSS:"),
        hwm_kib: kib("VmHWM:"),
    }
}

/// The unit of `/proc/PID/stat`'s CPU times.
pub(crate) fn ticks_per_second() -> f64 {
    unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64
}

/// CPU seconds (user + kernel) that processes have used, read before a phase and compared
/// after it: the cost of one unit of work in each, which the machine's other load (and the load
/// generator sharing the cores) disturbs far less than the throughput.
pub struct CpuMeter {
    /// Each part (tracker, redis) and its processes (a cluster's nodes add up).
    pids: Vec<(&'static str, Vec<u32>)>,
    start: Vec<f64>,
}

impl CpuMeter {
    fn seconds(pids: &[u32]) -> f64 {
        pids.iter()
            .map(|&pid| {
                let s = sample(pid);
                (s.user + s.system) as f64 / ticks_per_second()
            })
            .sum()
    }

    /// Starts counting the CPU of the tracker and of the Redis processes.
    pub fn start(tracker: u32, redis: &[u32]) -> Self {
        Self::of(vec![("tracker", vec![tracker]), ("redis", redis.to_vec())])
    }

    /// Starts counting the CPU of `pids`, each part named.
    pub fn of(pids: Vec<(&'static str, Vec<u32>)>) -> Self {
        Self {
            start: pids.iter().map(|(_, p)| Self::seconds(p)).collect(),
            pids,
        }
    }

    /// `# CPU per UNIT: tracker N µs, redis M µs` for `units` done since the start.
    pub fn report(&self, units: f64, unit: &str) -> String {
        let parts: Vec<String> = self
            .pids
            .iter()
            .zip(&self.start)
            .map(|((name, pids), t0)| {
                let us = (Self::seconds(pids) - t0) * 1e6 / units.max(1.0);
                format!("{name} {us:.1} µs")
            })
            .collect();
        format!("#   CPU per {unit}: {}", parts.join(", "))
    }
}

/// The Redis µs of a `#   CPU per UNIT: tracker N µs, redis M µs` line.
pub fn redis_us(line: &str) -> Option<f64> {
    let (_, rest) = line.split_once("redis ")?;
    rest.split(' ').next()?.parse().ok()
}

/// The Redis of a bench run, held until the run ends (dropped: stopped).
enum Redis {
    Server(#[allow(dead_code)] Killed),
    Cluster(Cluster),
}

/// A Redis and the release tracker on a free port, started for a bench run.
pub struct Rig {
    /// Its temporary directory (the private Redis's data).
    pub dir: std::path::PathBuf,
    /// The Redis URL.
    pub url: String,
    /// A store on that Redis, to load projects and call scripts directly.
    pub store: Store,
    /// `http://127.0.0.1:PORT` of the tracker.
    pub base: String,
    /// The Redis processes.
    pub redis_pids: Vec<u32>,
    /// The tracker's process.
    pub tracker_pid: u32,
    redis: Redis,
    _tracker: Killed,
}

impl Rig {
    /// Starts both (data under a fresh directory named after `what`, in the temp directory unless
    /// it is a tmpfs; with `cluster`, a cluster of 3 masters without replicas) and waits for
    /// `/healthz`.
    pub async fn start(what: &str, pool: usize, cluster: bool) -> Rig {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        // `TRACKER_BIN` compares another build (an A/B run) under the same load.
        let bin = std::env::var_os("TRACKER_BIN")
            .map(std::path::PathBuf::from)
            .unwrap_or_else(|| root.join("target/release/tracker"));
        let dir =
            super::fsync::data_parent().join(format!("tracker-{what}-{:x}", rand::random::<u32>()));
        std::fs::create_dir_all(&dir).unwrap();
        let (redis, url, redis_pids) = if cluster {
            let c = Cluster::start(3, 0, 15_000);
            let (url, pids) = (c.url(), c.pids());
            (Redis::Cluster(c), url, pids)
        } else {
            let (child, url) = tests::start_redis(&dir);
            let pid = child.id();
            (Redis::Server(Killed(child)), url, vec![pid])
        };
        // The tracker's files: the same directory for its segments and this store's lookups.
        let files = tests::files_dir("bench");
        let _ = std::fs::remove_dir_all(&files);
        let store = Store::connect(&url, "bench", pool, files.join("offload"))
            .await
            .unwrap();
        let port = tests::free_port();
        let base = format!("http://127.0.0.1:{port}");
        let _tracker = tests::spawn_tracker(&bin, &url, "bench", port);
        let tracker_pid = _tracker.0.id();
        let http = reqwest::Client::new();
        while http.get(format!("{base}/healthz")).send().await.is_err() {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Rig {
            dir,
            url,
            store,
            base,
            redis_pids,
            tracker_pid,
            redis,
            _tracker,
        }
    }

    /// Where project `slug` lives: `slug`, and on a cluster `slug@PORT` of its master.
    pub fn placement(&self, slug: &str) -> String {
        match &self.redis {
            Redis::Server(_) => slug.to_string(),
            Redis::Cluster(c) => match c.master_of(&format!("{{{slug}}}")) {
                Some(port) => format!("{slug}@{port}"),
                None => slug.to_string(),
            },
        }
    }

    /// Counts the CPU of the tracker and the Redis processes from now.
    pub fn meter(&self) -> CpuMeter {
        CpuMeter::start(self.tracker_pid, &self.redis_pids)
    }

    /// The CPU of this process (the bench, calling the store directly: the tracker's own side
    /// of the Redis calls, without HTTP) and of Redis.
    pub fn meter_of_self(&self) -> CpuMeter {
        CpuMeter::of(vec![
            ("store without HTTP", vec![std::process::id()]),
            ("redis", self.redis_pids.clone()),
        ])
    }
}

/// Redis's own time per command (`INFO commandstats`: calls and µs), for
/// `BENCH_COMMANDSTATS=1`: where the Redis CPU of a phase goes.
pub async fn commandstats(store: &Store) -> std::collections::HashMap<String, (u64, u64)> {
    use fred::prelude::*;
    let text: String = store
        .client()
        .info(Some(fred::types::InfoKind::CommandStats))
        .await
        .unwrap_or_default();
    text.lines()
        .filter_map(|l| {
            let (name, rest) = l.strip_prefix("cmdstat_")?.split_once(':')?;
            let num = |k: &str| -> Option<u64> {
                rest.split(',')
                    .find_map(|kv| kv.strip_prefix(k))?
                    .parse()
                    .ok()
            };
            Some((name.to_string(), (num("calls=")?, num("usec=")?)))
        })
        .collect()
}

/// Prints the commands that took the most Redis time since `before`, per pair of `pairs`.
pub async fn print_commandstats(
    store: &Store,
    before: &std::collections::HashMap<String, (u64, u64)>,
    pairs: f64,
) {
    let after = commandstats(store).await;
    println!("{}", commandstats_line(before, &after, pairs, "pair"));
}

/// The commands that took the most Redis time between `before` and `after`, per `units`.
fn commandstats_line(
    before: &std::collections::HashMap<String, (u64, u64)>,
    after: &std::collections::HashMap<String, (u64, u64)>,
    units: f64,
    unit: &str,
) -> String {
    let mut rows: Vec<(String, f64, f64)> = after
        .iter()
        .map(|(name, (calls, us))| {
            let (c0, u0) = before.get(name).copied().unwrap_or((0, 0));
            (
                name.clone(),
                (calls - c0) as f64 / units.max(1.0),
                (us - u0) as f64 / units.max(1.0),
            )
        })
        .filter(|r| r.1 > 0.0)
        .collect();
    rows.sort_by(|a, b| b.2.total_cmp(&a.2));
    let parts: Vec<String> = rows
        .iter()
        .take(8)
        .map(|(n, c, u)| format!("{n} {u:.1} µs ({c:.2} calls)"))
        .collect();
    format!("#   Redis per {unit} by command: {}", parts.join(", "))
}
