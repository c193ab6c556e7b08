//! The processes of the chaos run and their faults: a durable `redis-server` on a TCP port and
//! several tracker processes on theirs, each killed with SIGKILL on a schedule and restarted in
//! place (same port, same data), with the time each took to come back.

use super::RedisRecovery;
use crate::{free_port, random_name, tracker_command, Killed};
use std::{
    path::{Path, PathBuf},
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// How long a restarted process or Redis may take to come back before the run fails.
const RECOVERY_DEADLINE: Duration = Duration::from_secs(60);

/// Redis and the tracker processes.
pub(super) struct Fleet {
    dir: PathBuf,
    bin: PathBuf,
    redis_port: u16,
    /// `redis://127.0.0.1:PORT`.
    pub redis_url: String,
    /// The key namespace every process uses.
    pub namespace: String,
    /// `http://127.0.0.1:PORT` of each process.
    pub bases: Vec<String>,
    ports: Vec<u16>,
    redis: Mutex<Option<Killed>>,
    procs: Mutex<Vec<Option<Killed>>>,
    http: reqwest::Client,
    /// Keep the data and logs (a run that failed).
    keep: std::sync::atomic::AtomicBool,
    /// Held by a Redis kill or pause: one at a time.
    redis_fault: tokio::sync::Mutex<()>,
    /// The object server of a run with its segments in one, and their `TRACKER_STORAGE`.
    s3: Option<(Mutex<crate::s3::S3>, String)>,
}

impl Drop for Fleet {
    fn drop(&mut self) {
        self.stop_processes();
        drop(self.redis.lock().unwrap_or_else(|e| e.into_inner()).take());
        if !self.keep.load(std::sync::atomic::Ordering::SeqCst) {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// Whether the Redis on `port` answers PING with PONG (not refused, not still loading).
async fn redis_answers(port: u16) -> bool {
    let Ok(Ok(mut s)) = tokio::time::timeout(
        Duration::from_secs(1),
        tokio::net::TcpStream::connect(("127.0.0.1", port)),
    )
    .await
    else {
        return false;
    };
    if s.write_all(b"PING\r\n").await.is_err() {
        return false;
    }
    let mut buf = [0u8; 64];
    matches!(
        tokio::time::timeout(Duration::from_secs(1), s.read(&mut buf)).await,
        Ok(Ok(n)) if buf[..n].starts_with(b"+PONG")
    )
}

/// Polls `ok` every 10 ms until it holds (the time it took) or `deadline` passes.
async fn time_until<F, Fut>(deadline: Duration, mut ok: F) -> Option<Duration>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let start = Instant::now();
    loop {
        if ok().await {
            return Some(start.elapsed());
        }
        if start.elapsed() > deadline {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

impl Fleet {
    /// Starts Redis and `n` processes of `bin` (not waiting for them).
    pub(super) async fn start(bin: &Path, n: usize, object_store: bool) -> Fleet {
        let dir = std::env::temp_dir().join(random_name("tracker-chaos-"));
        std::fs::create_dir_all(&dir).expect("a temp dir");
        let redis_port = free_port();
        let redis = crate::durable_redis(&dir, redis_port);
        time_until(Duration::from_secs(20), || redis_answers(redis_port))
            .await
            .expect("redis-server did not start");
        let ports: Vec<u16> = (0..n).map(|_| free_port()).collect();
        let namespace = random_name("chaos");
        let s3 = object_store.then(|| {
            let s3 = crate::s3::S3::start(&dir);
            let url = s3.storage_url(&namespace);
            (Mutex::new(s3), url)
        });
        let fleet = Fleet {
            redis_url: format!("redis://127.0.0.1:{redis_port}"),
            namespace,
            s3,
            bases: ports
                .iter()
                .map(|p| format!("http://127.0.0.1:{p}"))
                .collect(),
            ports,
            dir,
            bin: bin.to_path_buf(),
            redis_port,
            redis: Mutex::new(Some(redis)),
            procs: Mutex::new(Vec::new()),
            http: reqwest::Client::builder()
                .timeout(Duration::from_secs(2))
                .build()
                .expect("an HTTP client"),
            keep: Default::default(),
            redis_fault: Default::default(),
        };
        let procs = (0..n).map(|i| Some(fleet.spawn_process(i))).collect();
        *fleet.procs.lock().unwrap_or_else(|e| e.into_inner()) = procs;
        fleet
    }

    /// Stops every tracker process (SIGKILL, as the faults do): what they hold then is what
    /// the proof reads, with no offloader moving items between Redis and disk meanwhile.
    pub(super) fn stop_processes(&self) {
        for p in self
            .procs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter_mut()
        {
            drop(p.take());
        }
    }

    /// Keeps the run's directory (Redis's data and log, each process's log); its path.
    pub(super) fn keep(&self) -> String {
        self.keep.store(true, std::sync::atomic::Ordering::SeqCst);
        self.dir.display().to_string()
    }

    /// The last `n` errors and panics of each process's log (the processes log at `error`;
    /// their standard output, the setup link, goes there too and is left out), each cut to 300
    /// characters: what a failed run's report shows of them, for a reader who has its log but
    /// not its directory (a CI machine's).
    pub(super) fn log_tails(&self, n: usize) -> Vec<String> {
        (0..self.ports.len())
            .flat_map(|i| {
                let name = format!("tracker-{i}.log");
                let text = std::fs::read(self.dir.join(&name)).unwrap_or_default();
                let text = String::from_utf8_lossy(&text);
                let lines: Vec<&str> = text
                    .lines()
                    .filter(|l| l.contains("ERROR") || l.contains("panicked"))
                    .collect();
                lines[lines.len().saturating_sub(n)..]
                    .iter()
                    .map(|l| format!("{name}: {}", l.chars().take(300).collect::<String>()))
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    /// Process `i` on its port, its errors logged to `tracker-<i>.log` in the run's dir.
    fn spawn_process(&self, i: usize) -> Killed {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join(format!("tracker-{i}.log")))
            .expect("a log file");
        let child = tracker_command(&self.bin, &self.redis_url, &self.namespace, self.ports[i])
            // Every warrior here comes from 127.0.0.1; item status reads are public reads.
            .env("TRACKER_PUBLIC_READS", "0")
            // With an object store, each process has an empty directory of its own: nothing
            // of one machine's disk is another's.
            .env("TRACKER_STORAGE", self.storage().unwrap_or_default())
            .env(
                "TRACKER_OFFLOAD_DIR",
                match self.s3 {
                    Some(_) => self.dir.join(format!("offload-{i}")),
                    None => crate::files_dir(&self.namespace).join("offload"),
                },
            )
            .stdout(log.try_clone().expect("a log file"))
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("start {}: {e}", self.bin.display()));
        Killed(child)
    }

    /// Whether process `i` answers `/healthz` with 200.
    async fn healthy(&self, i: usize) -> bool {
        match self
            .http
            .get(format!("{}/healthz", self.bases[i]))
            .send()
            .await
        {
            Ok(r) => r.status() == 200,
            Err(_) => false,
        }
    }

    /// Waits until every process answers `/healthz` with 200.
    pub(super) async fn wait_all_healthy(&self, deadline: Duration) -> Result<Duration, String> {
        let start = Instant::now();
        for i in 0..self.bases.len() {
            let left = deadline.saturating_sub(start.elapsed());
            if time_until(left, || self.healthy(i)).await.is_none() {
                return Err(format!(
                    "process {i} not healthy within {} s",
                    deadline.as_secs()
                ));
            }
        }
        Ok(start.elapsed())
    }

    /// SIGKILLs process `i`, restarts it, and times its return to `/healthz` 200.
    async fn kill_process(&self, i: usize) -> Result<Duration, String> {
        {
            let mut procs = self.procs.lock().unwrap_or_else(|e| e.into_inner());
            drop(procs[i].take()); // SIGKILL, then reaped
            procs[i] = Some(self.spawn_process(i));
        }
        time_until(RECOVERY_DEADLINE, || self.healthy(i))
            .await
            .ok_or_else(|| {
                format!("process {i} not back within {RECOVERY_DEADLINE:?} of its restart")
            })
    }

    /// SIGKILLs Redis, restarts it from its append-only file, and times its loading and its
    /// being followed by every process.
    async fn kill_redis(&self) -> Result<RedisRecovery, String> {
        let _one = self.redis_fault.lock().await;
        {
            let mut redis = self.redis.lock().unwrap_or_else(|e| e.into_inner());
            drop(redis.take()); // SIGKILL, then reaped
            *redis = Some(crate::durable_redis(&self.dir, self.redis_port));
        }
        let restarted = Instant::now();
        let loaded = time_until(RECOVERY_DEADLINE, || redis_answers(self.redis_port))
            .await
            .ok_or("redis not back within a minute of its restart")?;
        self.wait_all_healthy(RECOVERY_DEADLINE).await?;
        Ok(RedisRecovery {
            loaded,
            followed: restarted.elapsed(),
        })
    }

    /// `tracker check SLUG`, the command an operator runs: its complaints, if it fails.
    pub(super) async fn cli_check(&self, slug: &str) -> Vec<String> {
        let out = tokio::process::Command::new(&self.bin)
            .args(["check", slug])
            .env("REDIS_URL", &self.redis_url)
            .env("TRACKER_NAMESPACE", &self.namespace)
            // The processes' offload directory: the check reads every registered segment.
            .env(
                "TRACKER_OFFLOAD_DIR",
                crate::files_dir(&self.namespace).join("offload"),
            )
            .env("TRACKER_STORAGE", self.storage().unwrap_or_default())
            .env("RUST_LOG", "error")
            .output()
            .await;
        match out {
            Ok(o) if o.status.success() => vec![],
            Ok(o) => vec![format!(
                "tracker check failed ({}): {}{}",
                o.status,
                String::from_utf8_lossy(&o.stdout).trim(),
                String::from_utf8_lossy(&o.stderr).trim()
            )],
            Err(e) => vec![format!("tracker check did not run: {e}")],
        }
    }
}

/// Kills a random process every `every` until `until`: each one's recovery time, and the
/// failures to recover.
pub(super) async fn process_faults(
    fleet: Arc<Fleet>,
    every: Duration,
    until: Instant,
) -> (Vec<Duration>, Vec<String>) {
    let (mut times, mut problems) = (Vec::new(), Vec::new());
    let mut next = Instant::now() + every;
    while next < until {
        tokio::time::sleep_until(next.into()).await;
        let i = rand::random_range(0..fleet.bases.len());
        match fleet.kill_process(i).await {
            Ok(t) => times.push(t),
            Err(e) => problems.push(e),
        }
        next += every;
    }
    (times, problems)
}

/// Kills Redis every `every` until `until`: each recovery, and the failures to recover.
pub(super) async fn redis_faults(
    fleet: Arc<Fleet>,
    every: Duration,
    until: Instant,
) -> (Vec<RedisRecovery>, Vec<String>) {
    let (mut times, mut problems) = (Vec::new(), Vec::new());
    let mut next = Instant::now() + every;
    while next < until {
        tokio::time::sleep_until(next.into()).await;
        match fleet.kill_redis().await {
            Ok(t) => times.push(t),
            Err(e) => problems.push(e),
        }
        next += every;
    }
    (times, problems)
}

impl Fleet {
    /// `TRACKER_STORAGE` of the run's object store, if its segments are in one.
    pub(super) fn storage(&self) -> Option<String> {
        self.s3.as_ref().map(|(_, url)| url.clone())
    }

    /// Kills the object server and starts it again a second later (same port, same data).
    fn kill_object_server(&self) -> Result<(), String> {
        let (s3, _) = self.s3.as_ref().ok_or("no object server")?;
        s3.lock().unwrap_or_else(|e| e.into_inner()).kill();
        std::thread::sleep(Duration::from_secs(1));
        s3.lock().unwrap_or_else(|e| e.into_inner()).restart();
        Ok(())
    }

    /// Sends `sig` to the object server.
    fn signal_object_server(&self, sig: libc::c_int) -> Result<(), String> {
        let (s3, _) = self.s3.as_ref().ok_or("no object server")?;
        let pid = s3.lock().unwrap_or_else(|e| e.into_inner()).pid();
        // SAFETY: kill(2) on the pid of a child this fleet started and still owns.
        match unsafe { libc::kill(pid as libc::pid_t, sig) } {
            0 => Ok(()),
            _ => Err(format!("signal {sig} to the object server failed")),
        }
    }

    /// Pauses Redis (SIGSTOP) for `length`, then lets it go on (SIGCONT): how long every
    /// process then took to answer `/healthz` 200.
    async fn pause_redis(&self, length: Duration) -> Result<Duration, String> {
        let _one = self.redis_fault.lock().await;
        let pid = {
            let redis = self.redis.lock().unwrap_or_else(|e| e.into_inner());
            redis
                .as_ref()
                .map(|r| r.0.id())
                .ok_or("no redis to pause")?
        };
        let signal = |sig| {
            // SAFETY: kill(2) on the pid of a child this fleet started and still owns.
            unsafe { libc::kill(pid as libc::pid_t, sig) }
        };
        if signal(libc::SIGSTOP) != 0 {
            return Err("SIGSTOP to redis failed".into());
        }
        tokio::time::sleep(length).await;
        if signal(libc::SIGCONT) != 0 {
            return Err("SIGCONT to redis failed".into());
        }
        self.wait_all_healthy(RECOVERY_DEADLINE).await
    }
}

/// Pauses Redis for `length` every `every` until `until`: each pause and the time to healthy
/// after it, and the failures to recover.
pub(super) async fn redis_pauses(
    fleet: Arc<Fleet>,
    every: Duration,
    length: Duration,
    until: Instant,
) -> (Vec<(Duration, Duration)>, Vec<String>) {
    let (mut times, mut problems) = (Vec::new(), Vec::new());
    // Offset from the kills, so a pause and a kill are not the same instant.
    let mut next = Instant::now() + every / 2 + Duration::from_secs(3);
    while next + length < until {
        tokio::time::sleep_until(next.into()).await;
        match fleet.pause_redis(length).await {
            Ok(t) => times.push((length, t)),
            Err(e) => problems.push(e),
        }
        next += every;
    }
    (times, problems)
}

/// Kills the object server every `faults.kill_every`, and pauses it for `faults.pause` every
/// `faults.pause_every`, until `until`: the kills and pauses made, and what failed.
pub(super) async fn object_faults(
    fleet: Arc<Fleet>,
    faults: super::ObjectFaults,
    until: Instant,
) -> (usize, usize, Vec<String>) {
    let (mut kills, mut pauses, mut problems) = (0, 0, Vec::new());
    let (mut next_kill, mut next_pause) = (
        Instant::now() + faults.kill_every,
        Instant::now() + faults.pause_every,
    );
    loop {
        let next = next_kill.min(next_pause);
        if next >= until {
            return (kills, pauses, problems);
        }
        tokio::time::sleep_until(next.into()).await;
        if next == next_kill {
            let f = fleet.clone();
            match tokio::task::spawn_blocking(move || f.kill_object_server()).await {
                Ok(Ok(())) => kills += 1,
                Ok(Err(e)) => problems.push(e),
                Err(e) => problems.push(format!("killing the object server: {e}")),
            }
            next_kill += faults.kill_every;
        } else {
            let paused = fleet
                .signal_object_server(libc::SIGSTOP)
                .map(|()| pauses += 1);
            tokio::time::sleep(faults.pause).await;
            if let Err(e) = paused.and_then(|()| fleet.signal_object_server(libc::SIGCONT)) {
                problems.push(e);
            }
            next_pause += faults.pause_every;
        }
    }
}
