//! `--phases fsync`: what Redis forcing its append-only file to disk before answering each
//! write (`appendfsync always`) costs the pairs load, against once a second (`everysec`): the
//! measurement behind the default of `TRACKER_FSYNC`.

use std::{
    path::{Path, PathBuf},
    process::Command,
    time::{Duration, Instant},
};

/// Rounds of each setting. They alternate, so the machine's drifting load weighs on both.
const ROUNDS: usize = 3;

/// The project the phase drains: enough items for every round at the rates seen here (about
/// 7,000 pairs/s at most, 6 rounds of 10 s), so no round runs dry.
pub const ITEMS: usize = 1_000_000;

/// Where a rig keeps its Redis data: the temp directory, unless it is a tmpfs, where fsync
/// costs nothing and the figure would flatter `always`; then `target/bench-data`, on disk.
pub fn data_parent() -> PathBuf {
    let tmp = std::env::temp_dir();
    if filesystem(&tmp).1 == "tmpfs" {
        let disk = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/bench-data");
        std::fs::create_dir_all(&disk).unwrap();
        return disk;
    }
    tmp
}

/// The device and filesystem type holding `dir` (`df`), or "?" for what cannot be read.
fn filesystem(dir: &Path) -> (String, String) {
    let out = Command::new("df")
        .args(["--output=source,fstype"])
        .arg(dir)
        .output();
    let text = out
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    let mut fields = text.lines().nth(1).unwrap_or_default().split_whitespace();
    let mut next = || fields.next().unwrap_or("?").to_string();
    (next(), next())
}

/// `redis-cli -s SOCKET ARGS`: its output; panics if the command fails.
fn cli(socket: &str, args: &[&str]) -> String {
    let out = Command::new("redis-cli")
        .args(["-s", socket])
        .args(args)
        .output()
        .expect("redis-cli must be installed");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success() && !text.starts_with("ERR"),
        "redis-cli {args:?}: {text}"
    );
    text
}

/// A field of `INFO persistence`; stops the run when it is missing.
fn persistence(socket: &str, field: &str) -> String {
    let info = cli(socket, &["INFO", "persistence"]);
    let prefix = format!("{field}:");
    info.lines()
        .find_map(|l| l.strip_prefix(prefix.as_str()))
        .unwrap_or_else(|| panic!("no {field} in INFO persistence:\n{info}"))
        .trim()
        .to_string()
}

/// A numeric field of `INFO persistence`; stops the run when it is missing or not a number.
fn persistence_figure(socket: &str, field: &str) -> f64 {
    let text = persistence(socket, field);
    text.parse()
        .unwrap_or_else(|_| panic!("{field} is not a number: {text:?}"))
}

/// Milliseconds that `fdatasync` of a 4 KiB append takes in `dir`: the median and p99 of 200,
/// the disk's own price of `always` (a virtual disk whose host caches writes answers in
/// microseconds).
async fn fsync_latency(dir: &Path) -> (f64, f64) {
    let path = dir.join("fsync-probe");
    tokio::task::spawn_blocking(move || {
        use std::io::Write as _;
        let mut file = std::fs::File::create(&path).unwrap();
        let mut ms: Vec<f64> = (0..200)
            .map(|_| {
                let t = Instant::now();
                file.write_all(&[b'x'; 4096]).unwrap();
                file.sync_data().unwrap();
                t.elapsed().as_secs_f64() * 1000.0
            })
            .collect();
        let _ = std::fs::remove_file(&path);
        ms.sort_by(f64::total_cmp);
        (ms[ms.len() / 2], ms[ms.len() * 99 / 100])
    })
    .await
    .unwrap()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// One round's figures.
struct Round {
    setting: &'static str,
    rate: f64,
    request_p99: f64,
    done_p99: f64,
}

/// Turns the rig's Redis (`url`, data in `dir`) to an append-only file, then runs the pairs
/// load on `slug` under each `appendfsync` in turn and prints the figures.
pub async fn run(base: &str, url: &str, dir: &Path, slug: &str) {
    let socket = url
        .strip_prefix("redis+unix://")
        .expect("the rig's Redis listens on a unix socket");
    let (device, fstype) = filesystem(dir);
    let (probe_p50, probe_p99) = fsync_latency(dir).await;
    println!(
        "# fsync: append-only file in {} ({fstype} on {device}); fdatasync of 4 KiB there: \
         p50 {probe_p50:.2} ms, p99 {probe_p99:.2} ms",
        dir.display()
    );
    // No automatic rewrite: one would fork in the middle of some round, noise for either side.
    cli(
        socket,
        &["CONFIG", "SET", "auto-aof-rewrite-percentage", "0"],
    );
    cli(socket, &["CONFIG", "SET", "appendfsync", "everysec"]);
    cli(socket, &["CONFIG", "SET", "appendonly", "yes"]);
    let started = Instant::now();
    // The initial rewrite writes the whole data set; only then is every write appended.
    while persistence(socket, "aof_rewrite_in_progress") != "0"
        || persistence(socket, "aof_rewrite_scheduled") != "0"
        || persistence(socket, "aof_enabled") != "1"
    {
        assert!(
            started.elapsed() < Duration::from_secs(300),
            "the initial AOF rewrite did not finish in 300 s"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(persistence(socket, "aof_last_bgrewrite_status"), "ok");
    println!(
        "#   initial rewrite: {:.1} s, {} bytes",
        started.elapsed().as_secs_f64(),
        persistence(socket, "aof_current_size")
    );

    let mut rounds = vec![];
    for round in 1..=ROUNDS {
        for setting in ["everysec", "always"] {
            cli(socket, &["CONFIG", "SET", "appendfsync", setting]);
            let aof_before = persistence_figure(socket, "aof_current_size");
            let l = crate::pairs(base, &[slug], crate::SECONDS, None).await;
            let aof_after = persistence_figure(socket, "aof_current_size");
            let r = Round {
                setting,
                rate: l.pairs as f64 / crate::SECONDS as f64,
                request_p99: crate::percentile(&l.request, 0.99),
                done_p99: crate::percentile(&l.done, 0.99),
            };
            println!(
                "round {round} {setting:>8}: {:.0} pairs/s; request p50 {:.2} ms p99 {:.2} ms; \
                 done p50 {:.2} ms p99 {:.2} ms; AOF {:.0} bytes/pair",
                r.rate,
                crate::percentile(&l.request, 0.5),
                r.request_p99,
                crate::percentile(&l.done, 0.5),
                r.done_p99,
                (aof_after - aof_before) / (l.pairs.max(1) as f64)
            );
            rounds.push(r);
        }
    }
    let of = |setting: &str, field: fn(&Round) -> f64| {
        median(
            rounds
                .iter()
                .filter(|r| r.setting == setting)
                .map(field)
                .collect(),
        )
    };
    for setting in ["everysec", "always"] {
        println!(
            "median {setting:>8}: {:.0} pairs/s; request p99 {:.2} ms; done p99 {:.2} ms",
            of(setting, |r| r.rate),
            of(setting, |r| r.request_p99),
            of(setting, |r| r.done_p99)
        );
    }
    let ratio = of("always", |r| r.rate) / of("everysec", |r| r.rate);
    println!(
        "always/everysec pairs/s = {ratio:.3}: always costs {:.1} % (aof_delayed_fsync: {})",
        100.0 * (1.0 - ratio),
        persistence(socket, "aof_delayed_fsync")
    );
    println!(
        "# command: {}",
        std::env::args().collect::<Vec<_>>().join(" ")
    );
    cli(socket, &["CONFIG", "SET", "appendonly", "no"]);
}
