//! The chaos run of issue 18: simulated warriors against several tracker processes on one
//! durable `redis-server`, while processes and Redis are killed with SIGKILL and restarted; then a
//! drain, and the proof that every item was done exactly once and credited to a warrior that was
//! told `OK`. Shared by the short integration test (`tests/tests/api/chaos.rs`) and the long run
//! (`bench --chaos`, `make chaos`).
//!
//! ```text
//! setup   redis-server (append-only file, fsync before every reply) on a free TCP port, a
//!         project with N items and reclaims on, P tracker processes on their own ports
//! chaos   W warriors (half single, half multi=20; 5 % drop some items, 5 % hold some past
//!         their reclaim and report them late), paced so that the queue runs dry at about 80 %
//!         of the phase; a process SIGKILLed and restarted every few seconds, Redis every ~30 s,
//!         and Redis paused (SIGSTOP, then SIGCONT) for longer than the tracker's command
//!         timeout; the project offloads its done items to small segment files all along
//!         (`done_policy=offload`), its completion log archived past a low `log_keep`
//! drain   no more faults, no more misbehaviour: warriors work until nothing is queued or out
//! stop    the tracker processes are killed, so nothing moves between Redis and disk
//! verify  see `verify.rs`
//! ```

mod fleet;
mod report;
pub mod verify;
mod warrior;

use fleet::Fleet;
use fred::interfaces::HashesInterface as _;
pub use report::{RedisRecovery, Report};
use server::store::{NewProject, Store};
use std::{
    path::{Path, PathBuf},
    sync::Arc,
    time::{Duration, Instant},
};
pub use warrior::Ledger;
use warrior::{Phase, Shared};

/// The slug of the chaos project.
pub const SLUG: &str = "chaos";

/// The name of item `i` of the chaos project (fixed width, so that it parses back).
pub fn item_name(i: usize) -> String {
    format!("i{i:08}")
}

/// The index of an item named by [`item_name`].
pub fn item_index(name: &str) -> Option<usize> {
    name.strip_prefix('i')?.parse().ok()
}

/// What to run.
#[derive(Clone, Debug)]
pub struct Config {
    /// Items in the project.
    pub items: usize,
    /// Simulated warriors.
    pub warriors: usize,
    /// Tracker processes.
    pub processes: usize,
    /// Items a multi-item warrior asks for (`multi=N`).
    pub multi: usize,
    /// How long faults go on (and warriors misbehave).
    pub chaos: Duration,
    /// A process killed and restarted every this long.
    pub process_kill_every: Duration,
    /// Redis killed and restarted every this long.
    pub redis_kill_every: Duration,
    /// The project's `reclaim_ttl`, seconds.
    pub reclaim_ttl: u64,
    /// The longest the drain may take before the run fails.
    pub drain_deadline: Duration,
    /// The tracker binary.
    pub tracker_bin: PathBuf,
    /// Print a progress line every this long (`None`: quiet).
    pub progress: Option<Duration>,
    /// Redis paused (SIGSTOP) every this long, for [`Config::redis_pause`].
    pub redis_pause_every: Duration,
    /// How long each pause lasts: longer than the tracker's Redis command timeout (5 s).
    pub redis_pause: Duration,
    /// The project's done items kept in Redis (`offload_keep`); the rest go to segments.
    pub offload_keep: u64,
    /// Items per segment file (`segment_items`).
    pub segment_items: u64,
    /// Completion log entries kept in Redis (`log_keep`); older ones are archived.
    pub log_keep: u64,
    /// Segments in an object store (a real S3-speaking server, [`crate::s3`]) instead of a
    /// shared directory: each process then has an empty directory of its own, and the object
    /// server is killed and paused as Redis is.
    pub object_store: Option<ObjectFaults>,
}

/// The object server's faults of a run with [`Config::object_store`].
#[derive(Clone, Copy, Debug)]
pub struct ObjectFaults {
    /// Killed (SIGKILL) and restarted a second later every this long.
    pub kill_every: Duration,
    /// Paused (SIGSTOP, then SIGCONT) every this long...
    pub pause_every: Duration,
    /// ...for this long.
    pub pause: Duration,
}

impl Config {
    /// The run of `make test`: 20,000 items, 40 warriors, 3 processes, 4 process kills and 2
    /// Redis kills in 30 s of chaos.
    pub fn short(tracker_bin: PathBuf) -> Config {
        Config {
            items: 20_000,
            warriors: 40,
            processes: 3,
            multi: 20,
            chaos: Duration::from_secs(30),
            process_kill_every: Duration::from_secs(6),
            redis_kill_every: Duration::from_secs(11),
            reclaim_ttl: 3,
            drain_deadline: Duration::from_secs(40),
            tracker_bin,
            progress: None,
            redis_pause_every: Duration::from_secs(20),
            redis_pause: Duration::from_secs(7),
            offload_keep: 1_000,
            segment_items: 1_000,
            log_keep: 1_000,
            object_store: None,
        }
    }

    /// [`Config::short`] with its segments in an object store, killed every 9 s and paused
    /// for 3 s every 13 s.
    pub fn short_object_store(tracker_bin: PathBuf) -> Config {
        Config {
            object_store: Some(ObjectFaults {
                kill_every: Duration::from_secs(9),
                pause_every: Duration::from_secs(13),
                pause: Duration::from_secs(3),
            }),
            ..Config::short(tracker_bin)
        }
    }

    /// The run of `make chaos` (issue 18): 1,000,000 items, 200 warriors, 3 processes, 10
    /// minutes of chaos, a process killed every 5 s and Redis every 30 s.
    pub fn long(tracker_bin: PathBuf) -> Config {
        Config {
            items: 1_000_000,
            warriors: 200,
            processes: 3,
            multi: 20,
            chaos: Duration::from_secs(600),
            process_kill_every: Duration::from_secs(5),
            redis_kill_every: Duration::from_secs(30),
            reclaim_ttl: 5,
            drain_deadline: Duration::from_secs(600),
            tracker_bin,
            progress: Some(Duration::from_secs(10)),
            redis_pause_every: Duration::from_secs(45),
            redis_pause: Duration::from_secs(8),
            offload_keep: 20_000,
            segment_items: 10_000,
            log_keep: 10_000,
            object_store: None,
        }
    }
}

/// Waits for `cond` (polled every 250 ms) until `deadline`; whether it held.
async fn poll_until<F, Fut>(deadline: Instant, mut cond: F) -> bool
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    loop {
        if cond().await {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// Creates the project with the configured items, reclaims and offloading.
async fn load(store: &Store, cfg: &Config) -> Result<(), String> {
    let (n, ttl) = (cfg.items, cfg.reclaim_ttl);
    let p = NewProject {
        slug: SLUG.into(),
        title: "Chaos".into(),
        domains: vec!["data".into()],
    };
    store
        .projects()
        .create_project(&p)
        .await
        .map_err(|e| e.to_string())?;
    let mut s = (*store
        .projects()
        .project(SLUG)
        .await
        .map_err(|e| e.to_string())?
        .ok_or("no project")?)
    .clone();
    s.reclaim_ttl = ttl;
    s.done_policy = "offload".into();
    s.offload_keep = cfg.offload_keep;
    s.segment_items = cfg.segment_items;
    s.log_keep = cfg.log_keep;
    store
        .projects()
        .save_settings(SLUG, &s)
        .await
        .map_err(|e| e.to_string())?;
    let mut added = 0;
    for start in (0..n).step_by(50_000) {
        let chunk: Vec<String> = (start..n.min(start + 50_000)).map(item_name).collect();
        added += store
            .queue()
            .add_items(SLUG, "todo", &chunk)
            .await
            .map_err(|e| e.to_string())?;
    }
    if added != n as u64 {
        return Err(format!("{added} of {n} items added"));
    }
    Ok(())
}

/// Runs the chaos described by `cfg` and proves what it left.
pub async fn run(cfg: &Config) -> Report {
    let mut report = Report {
        setup: format!(
            "{} items, {} warriors (half multi={}), {} processes, reclaim_ttl {} s, a process killed every {} s, redis every {} s, redis paused {} s every {} s, done items offloaded past {} in segments of {}, log archived past {}, {} s of chaos",
            cfg.items,
            cfg.warriors,
            cfg.multi,
            cfg.processes,
            cfg.reclaim_ttl,
            cfg.process_kill_every.as_secs_f64(),
            cfg.redis_kill_every.as_secs_f64(),
            cfg.redis_pause.as_secs_f64(),
            cfg.redis_pause_every.as_secs_f64(),
            cfg.offload_keep,
            cfg.segment_items,
            cfg.log_keep,
            cfg.chaos.as_secs()
        ),
        ..Report::default()
    };
    if let Some(o) = cfg.object_store {
        report.setup.push_str(&format!(
            ", segments in an object store (s3s-fs) killed every {} s and paused {} s every {} s, each process with an empty directory of its own",
            o.kill_every.as_secs(),
            o.pause.as_secs(),
            o.pause_every.as_secs()
        ));
    }
    let fleet =
        Arc::new(Fleet::start(&cfg.tracker_bin, cfg.processes, cfg.object_store.is_some()).await);
    // Reads of whole structures at the end (a check of a million items) take seconds.
    let timeout = Duration::from_secs(120);
    let offload = crate::files_dir(&fleet.namespace).join("offload");
    let store =
        match Store::connect_with(&fleet.redis_url, &fleet.namespace, 2, timeout, offload).await {
            Ok(s) => match fleet.storage() {
                Some(url) => {
                    let handle = tokio::runtime::Handle::current();
                    match server::storage::Storage::open(Some(&url), Path::new(""), handle) {
                        Ok(storage) => s.with_storage(storage),
                        Err(e) => {
                            report
                                .violations
                                .push(format!("open the object store: {e}"));
                            return report;
                        }
                    }
                }
                None => s,
            },
            Err(e) => {
                report.violations.push(format!("connect to redis: {e}"));
                return report;
            }
        };
    if let Err(e) = load(&store, cfg).await {
        report.violations.push(format!("load the project: {e}"));
        return report;
    }
    if let Err(e) = fleet.wait_all_healthy(Duration::from_secs(60)).await {
        report.violations.push(e);
        return report;
    }

    // Paced so that the queue runs dry at about 80 % of the chaos: the rest of it is spent on
    // reclaims and late reports under faults.
    let rate = cfg.items as f64 / (cfg.chaos.as_secs_f64() * 0.8);
    let shared = Arc::new(Shared::new(
        fleet.bases.clone(),
        cfg.multi,
        cfg.reclaim_ttl,
        rate,
    ));
    let warriors: Vec<_> = (0..cfg.warriors)
        .map(|i| tokio::spawn(warrior::work(shared.clone(), i)))
        .collect();
    let started = Instant::now();
    let until = started + cfg.chaos;
    let process_faults = tokio::spawn(fleet::process_faults(
        fleet.clone(),
        cfg.process_kill_every,
        until,
    ));
    let redis_faults = tokio::spawn(fleet::redis_faults(
        fleet.clone(),
        cfg.redis_kill_every,
        until,
    ));
    let redis_pauses = tokio::spawn(fleet::redis_pauses(
        fleet.clone(),
        cfg.redis_pause_every,
        cfg.redis_pause,
        until,
    ));
    let object_faults = cfg
        .object_store
        .map(|o| tokio::spawn(fleet::object_faults(fleet.clone(), o, until)));
    let progress = cfg.progress.map(|every| {
        let shared = shared.clone();
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(every).await;
                eprintln!(
                    "# {:>5.0} s: {}",
                    started.elapsed().as_secs_f64(),
                    shared.progress()
                );
            }
        })
    });
    tokio::time::sleep_until(until.into()).await;
    match process_faults.await {
        Ok((kills, problems)) => {
            report.process_kills = kills;
            report.violations.extend(problems);
        }
        Err(e) => report.violations.push(format!("process faults: {e}")),
    }
    match redis_faults.await {
        Ok((kills, problems)) => {
            report.redis_kills = kills;
            report.violations.extend(problems);
        }
        Err(e) => report.violations.push(format!("redis faults: {e}")),
    }
    match redis_pauses.await {
        Ok((pauses, problems)) => {
            report.redis_pauses = pauses;
            report.violations.extend(problems);
        }
        Err(e) => report.violations.push(format!("redis pauses: {e}")),
    }
    if let Some(faults) = object_faults {
        match faults.await {
            Ok((kills, pauses, problems)) => {
                report.object_kills = kills;
                report.object_pauses = pauses;
                report.violations.extend(problems);
            }
            Err(e) => report.violations.push(format!("object store faults: {e}")),
        }
    }
    report.chaos = started.elapsed();
    if let Err(e) = fleet.wait_all_healthy(Duration::from_secs(60)).await {
        report.violations.push(e);
    }
    report.done_after_chaos = store
        .figures()
        .leaderboard(SLUG, 0, 0)
        .await
        .ok()
        .flatten()
        .map_or(0, |b| b.counts.done);

    // The drain: honest warriors until nothing is queued, out, held or being reported.
    shared.set_phase(Phase::Drain);
    let drain_started = Instant::now();
    let drained = poll_until(drain_started + cfg.drain_deadline, || async {
        // Counts first: an item claimed before they were read is out in them, or done with
        // its warrior (or late sender) busy until told OK.
        let Ok(Some(b)) = store.figures().leaderboard(SLUG, 0, 0).await else {
            return false;
        };
        b.counts.todo == 0 && b.counts.out == 0 && shared.busy() == 0
    })
    .await;
    report.drain = drain_started.elapsed();
    if !drained {
        let counts = store.figures().leaderboard(SLUG, 0, 0).await.ok().flatten();
        report.violations.push(format!(
            "the drain did not finish within {} s: counts {:?}, {} warriors or late reports busy",
            cfg.drain_deadline.as_secs(),
            counts.map(|b| b.counts),
            shared.busy()
        ));
        shared.set_phase(Phase::Abort);
    } else {
        shared.set_phase(Phase::Stop);
    }
    if let Some(p) = progress {
        p.abort();
    }
    let mut ledgers = Vec::new();
    for w in warriors {
        match tokio::time::timeout(Duration::from_secs(30), w).await {
            Ok(Ok(ledger)) => ledgers.push(ledger),
            Ok(Err(e)) => report.violations.push(format!("a warrior failed: {e}")),
            Err(_) => report
                .violations
                .push("a warrior did not stop within 30 s".into()),
        }
    }
    report.errors = shared.errors();
    report.counters = shared.counters();
    report.violations.extend(shared.problems());

    // Done items reach a segment within a second of passing `offload_keep`, unless the process
    // holding the offload lease was killed: its lease then runs out (`LEASE_MS`) before another
    // process takes it, which a short run's chaos may not outlast. Waited for, so that the
    // proof always reads items from disk as well as from Redis.
    let waited = Instant::now();
    let lease = Duration::from_millis(server::store::offload::offloader::LEASE_MS);
    let wait = if drained {
        lease + Duration::from_secs(15)
    } else {
        Duration::ZERO
    };
    poll_until(waited + wait, || async {
        let k = store.keys().project(SLUG);
        let on_disk = store
            .client()
            .hget::<Option<u64>, _, _>(k.stats(), "disk_done")
            .await
            .ok()
            .flatten();
        on_disk.unwrap_or(0) > 0
    })
    .await;
    report.offload_wait = waited.elapsed();

    // The processes stop first: their offloaders would otherwise move done items to disk
    // (and their timelines with them) while the proof reads Redis and then the segments.
    fleet.stop_processes();
    let archives = server::store::offload::offloader::archive::archive_dir_of(
        &store,
        &crate::files_dir(&fleet.namespace).join("archive"),
        SLUG,
    )
    .await
    .expect("the project's archive directory");
    let (verdict, problems) =
        verify::verify(&store, SLUG, cfg.items, &ledgers, Some(&archives)).await;
    report.verdict = verdict;
    report.violations.extend(problems);
    report.violations.extend(fleet.cli_check(SLUG).await);
    if !report.violations.is_empty() {
        report.violations.extend(fleet.log_tails(5));
        let dir = fleet.keep();
        report
            .violations
            .push(format!("data and logs kept in {dir}"));
    }
    report
}
