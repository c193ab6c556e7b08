//! The viewer benchmark (`cargo run --release -p bench -- --viewers [N,M,...]`): N websocket
//! viewers on one project while warriors complete 1,000 items/s; the 99th percentile lag from
//! completion to delivery, and the tracker's CPU and memory, per viewer count.

use crate::rig::{sample, ticks_per_second, ProcSample};
use futures::StreamExt;
use server::store::{now_ms, NewProject};
use std::{
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};
use tokio_tungstenite::tungstenite::Message;

/// Length of the measured window.
const SECONDS: u64 = 10;
/// Items completed per second during the window.
const RATE: u64 = 1000;
/// Simulated warriors; each claims `multi=BATCH` and reports the batch done.
const WARRIORS: u64 = 20;
const BATCH: u64 = 10;
/// Lag histogram: 10 ms buckets up to 10 s.
const BUCKET_MS: u64 = 10;
const BUCKETS: usize = 1001;

/// What the viewers saw, summed.
#[derive(Default)]
struct Seen {
    lag: Vec<u64>,
    events: u64,
    frames: u64,
    bytes: u64,
    snapshots: u64,
}

/// Percent of one core used between two samples `secs` apart: in all, in user space, in the
/// kernel.
fn cpu_split(a: &ProcSample, b: &ProcSample, secs: f64) -> (f64, f64, f64) {
    let hz = ticks_per_second();
    let pct = |ticks: u64| 100.0 * ticks as f64 / hz / secs;
    let (user, system) = (
        pct(b.user.saturating_sub(a.user)),
        pct(b.system.saturating_sub(a.system)),
    );
    (user + system, user, system)
}

/// Percent of one core used between two samples `secs` apart.
fn cpu_percent(a: &ProcSample, b: &ProcSample, secs: f64) -> f64 {
    cpu_split(a, b, secs).0
}

/// Raises the open-file limit to the hard limit (the tracker, started after, inherits it).
fn raise_nofile() -> u64 {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    unsafe {
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim);
        lim.rlim_cur = lim.rlim_max;
        libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
    }
    lim.rlim_cur
}

fn percentile(hist: &[u64], p: f64) -> u64 {
    let total: u64 = hist.iter().sum();
    let want = (total as f64 * p).ceil() as u64;
    let mut seen = 0;
    for (i, n) in hist.iter().enumerate() {
        seen += n;
        if seen >= want.max(1) {
            return (i as u64 + 1) * BUCKET_MS;
        }
    }
    BUCKETS as u64 * BUCKET_MS
}

/// One viewer: reads frames until `stop`, recording the lag of each event completed within
/// `[from, to]` ms (the completion time is in the event; both clocks are this machine's).
async fn viewer(
    url: String,
    window: Arc<Mutex<(u64, u64)>>,
    mut stop: tokio::sync::watch::Receiver<bool>,
    ready: tokio::sync::mpsc::Sender<()>,
    seen: Arc<Mutex<Seen>>,
) {
    let mut config = tokio_tungstenite::tungstenite::protocol::WebSocketConfig::default();
    config.read_buffer_size = 16 * 1024;
    let connect = tokio_tungstenite::connect_async_with_config(url, Some(config), false);
    let Ok((mut ws, _)) = connect.await else {
        eprintln!("viewer failed to connect");
        return;
    };
    let _ = ws.next().await; // the snapshot
    let _ = ready.send(()).await;
    let mut mine = Seen {
        lag: vec![0; BUCKETS],
        ..Seen::default()
    };
    loop {
        let msg = tokio::select! {
            _ = stop.changed() => break,
            msg = ws.next() => msg,
        };
        let Some(Ok(Message::Text(text))) = msg else {
            if matches!(msg, None | Some(Err(_))) {
                break;
            }
            continue;
        };
        let now = now_ms();
        let (from, to) = *window.lock().unwrap();
        let text = text.as_str();
        mine.frames += 1;
        mine.bytes += text.len() as u64;
        if text.starts_with(r#"{"type":"snapshot""#) {
            mine.snapshots += 1;
            continue;
        }
        // Cheaper than parsing: each event is `{"seq":N,"time":T,...`.
        for (at, _) in text.match_indices(r#""time":"#) {
            let digits: String = text[at + 7..]
                .chars()
                .take_while(|c| c.is_ascii_digit())
                .collect();
            let Ok(t) = digits.parse::<u64>() else {
                continue;
            };
            if t >= from && t <= to {
                mine.events += 1;
                let bucket = (now.saturating_sub(t) / BUCKET_MS) as usize;
                mine.lag[bucket.min(BUCKETS - 1)] += 1;
            }
        }
    }
    let mut all = seen.lock().unwrap();
    if all.lag.is_empty() {
        all.lag = vec![0; BUCKETS];
    }
    for (a, b) in all.lag.iter_mut().zip(&mine.lag) {
        *a += b;
    }
    all.events += mine.events;
    all.frames += mine.frames;
    all.bytes += mine.bytes;
    all.snapshots += mine.snapshots;
}

/// `WARRIORS` warriors claiming and completing `BATCH` items at a time, `RATE` items/s in all,
/// for `secs`; the number of items completed.
async fn warriors(base: &str, slug: &str, secs: u64) -> u64 {
    let http = reqwest::Client::new();
    let every = Duration::from_secs_f64((WARRIORS * BATCH) as f64 / RATE as f64);
    let end = Instant::now() + Duration::from_secs(secs);
    let tasks: Vec<_> = (0..WARRIORS)
        .map(|w| {
            let (http, base, slug) = (http.clone(), base.to_string(), slug.to_string());
            tokio::spawn(async move {
                let name = format!("warrior-{w}");
                let claim = format!(r#"{{"downloader":"{name}","api_version":"2"}}"#);
                // Spread the warriors over the interval.
                let mut next = Instant::now() + every.mul_f64(w as f64 / WARRIORS as f64);
                let mut done = 0;
                while next < end {
                    tokio::time::sleep_until(next.into()).await;
                    next += every;
                    let url = format!("{base}/{slug}/multi={BATCH}//request");
                    let Ok(r) = http.post(url).body(claim.clone()).send().await else {
                        continue;
                    };
                    let v: serde_json::Value = r.json().await.unwrap_or_default();
                    let Some(items) = v["item_name"].as_str() else {
                        continue;
                    };
                    let body = serde_json::json!({"downloader": name, "item": items,
                        "bytes": {"data": 123_456}, "version": "20240101.01"});
                    let r = http
                        .post(format!("{base}/{slug}/done"))
                        .body(body.to_string())
                        .send()
                        .await;
                    if r.is_ok_and(|r| r.status() == 200) {
                        done += items.split('\0').count() as u64;
                    }
                }
                done
            })
        })
        .collect();
    let mut total = 0;
    for t in tasks {
        total += t.await.expect("a warrior task");
    }
    total
}

/// Runs the viewer benchmark for each viewer count in the argument after `--viewers`
/// (default `50,5000`).
pub async fn run() {
    let args: Vec<String> = std::env::args().collect();
    let counts: Vec<usize> = args
        .iter()
        .skip_while(|a| *a != "--viewers")
        .nth(1)
        .map(|s| s.split(',').filter_map(|n| n.parse().ok()).collect())
        .filter(|v: &Vec<usize>| !v.is_empty())
        .unwrap_or_else(|| vec![50, 5000]);
    let nofile = raise_nofile();
    // Every viewer comes from this one address: the tracker's cap on viewers per address
    // (50 by default) is lifted for the tracker started next, unless the caller set it.
    if std::env::var_os("TRACKER_MAX_VIEWERS_PER_IP").is_none() {
        let most = counts.iter().max().copied().unwrap_or(0).max(50);
        std::env::set_var("TRACKER_MAX_VIEWERS_PER_IP", most.to_string());
    }
    let rig = crate::rig::Rig::start("viewers", 4, false).await;
    let (dir, store, base) = (&rig.dir, &rig.store, &rig.base);
    let (redis_pid, pid) = (rig.redis_pids[0], rig.tracker_pid);
    let ws_base = base.replacen("http://", "ws://", 1);
    println!(
        "# viewer bench: {RATE} items/s ({WARRIORS} warriors, done of {BATCH} items each), \
         {SECONDS} s window, open files limit {nofile}, tracker pid {pid}"
    );
    println!("viewers | events delivered | lag p50 / p99 / max | frames/s per viewer | KiB/s per viewer | lag snapshots | tracker CPU (user + kernel) | tracker RSS (peak) | redis CPU | bench CPU");
    for (run, &n) in counts.iter().enumerate() {
        let slug = format!("live{run}");
        let p = NewProject {
            slug: slug.clone(),
            title: "Live".into(),
            domains: vec!["data".into()],
        };
        store.projects().create_project(&p).await.unwrap();
        let items: Vec<String> = (0..RATE * (SECONDS + 5))
            .map(|i| format!("{slug}-item-{i:07}"))
            .collect();
        store
            .queue()
            .add_items(&slug, "todo", &items)
            .await
            .unwrap();

        let window = Arc::new(Mutex::new((u64::MAX, 0)));
        let seen = Arc::new(Mutex::new(Seen::default()));
        let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
        let (ready_tx, mut ready_rx) = tokio::sync::mpsc::channel(n.max(1));
        let ws_url = format!("{ws_base}/{slug}/ws");
        let started = Instant::now();
        let mut tasks = Vec::with_capacity(n);
        for _ in 0..n {
            tasks.push(tokio::spawn(viewer(
                ws_url.clone(),
                window.clone(),
                stop_rx.clone(),
                ready_tx.clone(),
                seen.clone(),
            )));
        }
        drop(ready_tx);
        let mut connected = 0;
        while connected < n && ready_rx.recv().await.is_some() {
            connected += 1;
        }
        let connect_s = started.elapsed().as_secs_f64();

        let (t0, r0, b0) = (sample(pid), sample(redis_pid), sample(std::process::id()));
        let clock = Instant::now();
        *window.lock().unwrap() = (now_ms(), u64::MAX);
        let done = warriors(base, &slug, SECONDS).await;
        window.lock().unwrap().1 = now_ms();
        let secs = clock.elapsed().as_secs_f64();
        let (t1, r1, b1) = (sample(pid), sample(redis_pid), sample(std::process::id()));
        // Let the last frames arrive, then stop the viewers.
        tokio::time::sleep(Duration::from_secs(2)).await;
        let _ = stop_tx.send(true);
        for t in tasks {
            let _ = t.await;
        }
        let seen = seen.lock().unwrap();
        let tracker_cpu = cpu_split(&t0, &t1, secs);
        let per_viewer = |x: u64| x as f64 / connected.max(1) as f64 / secs;
        let max = seen
            .lag
            .iter()
            .rposition(|n| *n > 0)
            .map_or(0, |i| (i as u64 + 1) * BUCKET_MS);
        println!(
            "{connected} (connected in {connect_s:.1} s) | {:.1} % of {done} items | {} / {} / {} ms | {:.1} | {:.0} | {} | {:.0} % ({:.0} + {:.0}) | {} MiB ({} MiB) | {:.0} % | {:.0} %",
            100.0 * seen.events as f64 / (done as f64 / BATCH as f64 * connected as f64).max(1.0),
            percentile(&seen.lag, 0.5),
            percentile(&seen.lag, 0.99),
            max,
            per_viewer(seen.frames),
            per_viewer(seen.bytes) / 1024.0,
            seen.snapshots,
            tracker_cpu.0,
            tracker_cpu.1,
            tracker_cpu.2,
            t1.rss_kib / 1024,
            t1.hwm_kib / 1024,
            cpu_percent(&r0, &r1, secs),
            cpu_percent(&b0, &b1, secs),
        );
    }
    println!(
        "# command: make build && cargo run --release -p bench -- --viewers {}",
        counts
            .iter()
            .map(|n| n.to_string())
            .collect::<Vec<_>>()
            .join(",")
    );
    println!("# CPU is percent of one core over the window (the machine has {} cores shared by tracker, redis and this load generator)", std::thread::available_parallelism().map_or(0, |n| n.get()));
    let dir = dir.clone();
    drop(rig);
    let _ = std::fs::remove_dir_all(&dir);
}
