//! The hostile phase (`cargo run --release -p bench -- --phases hostile`): honest warriors paced
//! at half of the peak pairs rate, first alone, then while attackers run every attack of the
//! "safe on the open internet" issue at once: page and JSON floods, 2,000 sockets that send half
//! a request header, oversized bodies, backfeed bombs and login floods. Prints the honest
//! pairs/s and claim p99 of both runs side by side.

use std::{
    sync::{
        atomic::{AtomicBool, AtomicU64, Ordering},
        Arc,
    },
    time::Duration,
};
use tokio::io::AsyncWriteExt;

/// Sockets that send half a request header and wait.
const SLOW_SOCKETS: usize = 2000;
/// Concurrent clients of each flood.
const FLOODERS: usize = 4;

/// What the attackers managed, and how the tracker answered them.
#[derive(Default)]
struct Tally {
    calls: AtomicU64,
    refused: AtomicU64,
    server_errors: AtomicU64,
    /// Slow-header sockets connected and written to, not yet closed; the most at once; in all.
    slow_open: AtomicU64,
    slow_peak: AtomicU64,
    slow_opened: AtomicU64,
}

impl Tally {
    fn count(&self, status: u16) {
        self.calls.fetch_add(1, Ordering::Relaxed);
        if status == 500 || (status > 500 && status != 503) {
            self.server_errors.fetch_add(1, Ordering::Relaxed);
        } else if status >= 400 {
            self.refused.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// A gzip body of `n` zero bytes, compressed (about 1,000:1).
fn gzip_bomb(n: usize) -> Vec<u8> {
    use std::io::Write;
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    let chunk = vec![0u8; 1 << 20];
    let mut left = n;
    while left > 0 {
        let k = left.min(chunk.len());
        enc.write_all(&chunk[..k]).unwrap();
        left -= k;
    }
    enc.finish().unwrap()
}

/// Starts every attack against `base` (project `slug`, backfeed key `key`) until `stop`.
fn attack(
    base: &str,
    slug: &str,
    key: &str,
    stop: Arc<AtomicBool>,
    tally: Arc<Tally>,
) -> Vec<tokio::task::JoinHandle<()>> {
    // `HOSTILE_ATTACKS=pages,slow,big,bombs,logins` runs only those (all by default).
    let only = std::env::var("HOSTILE_ATTACKS").ok();
    let on = |what: &str| {
        only.as_deref()
            .is_none_or(|o| o.split(',').any(|a| a == what))
    };
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap();
    let mut tasks = Vec::new();
    let addr = base.trim_start_matches("http://").to_string();
    // Page and JSON floods.
    let reads = [
        format!("{base}/{slug}/"),
        format!("{base}/"),
        format!("{base}/{slug}/stats.json"),
        format!("{base}/{slug}/downloaders.json"),
        format!("{base}/board/{slug}/page.json"),
        format!("{base}/{slug}/charts.json"),
    ];
    for i in 0..if on("pages") { FLOODERS * 2 } else { 0 } {
        let (http, stop, tally, url) = (
            http.clone(),
            stop.clone(),
            tally.clone(),
            reads[i % reads.len()].clone(),
        );
        tasks.push(tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                if let Ok(r) = http.get(&url).send().await {
                    tally.count(r.status().as_u16());
                    let _ = r.bytes().await;
                }
            }
        }));
    }
    // Sockets that send half a header, reopened as the tracker closes them.
    if on("slow") {
        let (stop, addr, tally) = (stop.clone(), addr.clone(), tally.clone());
        tasks.push(tokio::spawn(async move {
            let mut open = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                open.retain(|t: &tokio::task::JoinHandle<()>| !t.is_finished());
                while open.len() < SLOW_SOCKETS && !stop.load(Ordering::Relaxed) {
                    let (addr, tally) = (addr.clone(), tally.clone());
                    open.push(tokio::spawn(async move {
                        let Ok(mut s) = tokio::net::TcpStream::connect(&addr).await else {
                            return;
                        };
                        if s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\nX-Slow: ")
                            .await
                            .is_ok()
                        {
                            // Held open from here until the tracker closes it: counted.
                            let now = tally.slow_open.fetch_add(1, Ordering::Relaxed) + 1;
                            tally.slow_peak.fetch_max(now, Ordering::Relaxed);
                            tally.slow_opened.fetch_add(1, Ordering::Relaxed);
                            let mut buf = [0u8; 256];
                            let _ = tokio::io::AsyncReadExt::read(&mut s, &mut buf).await;
                            tally.slow_open.fetch_sub(1, Ordering::Relaxed);
                        }
                    }));
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            for t in open {
                t.abort();
            }
        }));
    }
    // Oversized bodies: an 8 MiB version on a claim, a 6 MiB id on a done.
    let huge_claim = format!(
        r#"{{"downloader":"attacker","version":"{}"}}"#,
        "v".repeat(8 << 20)
    );
    let huge_done = format!(
        r#"{{"downloader":"attacker","item":"x","id":"{}"}}"#,
        "i".repeat(6 << 20)
    );
    let big = [("multi=100//request", huge_claim), ("done", huge_done)];
    // `HOSTILE_BIG_BASE=http://HOST:PORT` sends the oversized bodies elsewhere (a sink that
    // refuses them as the tracker does): what they cost the machine without the tracker.
    let big_base = std::env::var("HOSTILE_BIG_BASE").unwrap_or_else(|_| base.to_string());
    for (path, body) in big.into_iter().filter(|_| on("big")) {
        let (http, stop, tally, url) = (
            http.clone(),
            stop.clone(),
            tally.clone(),
            format!("{big_base}/{slug}/{path}"),
        );
        tasks.push(tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                if let Ok(r) = http.post(&url).body(body.clone()).send().await {
                    tally.count(r.status().as_u16());
                }
            }
        }));
    }
    // Backfeed bombs: 1 GiB of zeros, gzipped.
    if on("bombs") {
        let bomb = Arc::new(gzip_bomb(1 << 30));
        let (http, stop, tally) = (http.clone(), stop.clone(), tally.clone());
        let url = format!("{base}/backfeed/legacy/{key}");
        tasks.push(tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                let r = http
                    .post(&url)
                    .header("content-encoding", "gzip")
                    .body(bomb.as_ref().clone())
                    .send()
                    .await;
                if let Ok(r) = r {
                    tally.count(r.status().as_u16());
                }
            }
        }));
    }
    // Login floods: wrong passwords for one name.
    for _ in 0..if on("logins") { FLOODERS } else { 0 } {
        let (http, stop, tally, base) =
            (http.clone(), stop.clone(), tally.clone(), base.to_string());
        tasks.push(tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                let r = http
                    .post(format!("{base}/admin/api/login"))
                    .header("origin", &base)
                    .header("content-type", "application/json")
                    .body(r#"{"username":"admin","password":"wrong password"}"#)
                    .send()
                    .await;
                if let Ok(r) = r {
                    tally.count(r.status().as_u16());
                }
            }
        }));
    }
    tasks
}

/// The attackers' process (`bench --attack BASE SLUG KEY SECONDS`): every attack for SECONDS,
/// then a line with what they got.
pub async fn attack_for(args: &[String]) {
    let [base, slug, key, secs] = args else {
        panic!("--attack BASE SLUG KEY SECONDS")
    };
    let stop = Arc::new(AtomicBool::new(false));
    let tally = Arc::new(Tally::default());
    let tasks = attack(base, slug, key, stop.clone(), tally.clone());
    tokio::time::sleep(Duration::from_secs(secs.parse().unwrap_or(12))).await;
    stop.store(true, Ordering::Relaxed);
    for t in tasks {
        t.abort();
    }
    println!(
        "# attackers: {} answered calls, {} refused (4xx/503), {} server errors; slow-header sockets: at most {} held open at once (aiming at {SLOW_SOCKETS}), {} opened in all",
        tally.calls.load(Ordering::Relaxed),
        tally.refused.load(Ordering::Relaxed),
        tally.server_errors.load(Ordering::Relaxed),
        tally.slow_peak.load(Ordering::Relaxed),
        tally.slow_opened.load(Ordering::Relaxed),
    );
}

/// Runs the phase: `peak` is the measured peak pairs/s. The attackers run in a process of their
/// own at the lowest CPU priority (`nice -n 19`): on this one machine they stand for clients
/// elsewhere, so they get the cores the tracker and the honest warriors leave, and what they cost
/// the honest warriors is what the tracker spends on them, not the load generator's own work.
pub async fn run(base: &str, slug: &str, backfeed_key: &str, peak: f64) {
    let rate = peak / 2.0;
    println!("# hostile: honest warriors paced at {rate:.0} pairs/s (half of peak), {} s alone, then {} s under attack", super::SECONDS, super::SECONDS);
    let calm = super::pairs(base, &[slug], super::SECONDS, Some(rate)).await;
    let me = std::env::current_exe().unwrap();
    let attackers = tokio::process::Command::new("nice")
        .args(["-n", "19"])
        .arg(me)
        .args(["--attack", base, slug, backfeed_key])
        .arg((super::SECONDS + 3).to_string())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Let the attacks reach full strength before measuring.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let hostile = super::pairs(base, &[slug], super::SECONDS, Some(rate)).await;
    let tally = attackers.wait_with_output().await.unwrap();
    let secs = super::SECONDS as f64;
    let (calm_rate, hostile_rate) = (calm.pairs as f64 / secs, hostile.pairs as f64 / secs);
    let (calm_p99, hostile_p99) = (
        super::percentile(&calm.request, 0.99),
        super::percentile(&hostile.request, 0.99),
    );
    println!("| honest warriors | alone | under attack | ratio | target |");
    println!("|---|---|---|---|---|");
    println!(
        "| pairs/s | {calm_rate:.0} | {hostile_rate:.0} | {:.0} % | ≥ 80 % |",
        100.0 * hostile_rate / calm_rate.max(1.0)
    );
    println!(
        "| claim p99 | {calm_p99:.2} ms | {hostile_p99:.2} ms | {:.1}x | ≤ 2x |",
        hostile_p99 / calm_p99.max(0.001)
    );
    print!("{}", String::from_utf8_lossy(&tally.stdout));
    println!("# command: make build && cargo run --release -p bench -- --phases hostile");
}
