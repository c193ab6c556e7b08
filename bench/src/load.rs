//! The bench's loads: warriors doing request then done over HTTP (closed loop, or paced),
//! multi=100 claims, backfeed posts, and the ceiling (the same scripts through the batcher,
//! without HTTP); and the projects they run on.

use server::{
    batcher::Batcher,
    store::{
        now_ms, ClaimOutcome, ClaimRequest, DoneOutcome, DoneReport, NewProject, Settings, Store,
    },
};
use std::time::{Duration, Instant};

pub(crate) const SECONDS: u64 = 10;
pub(crate) const CONNECTIONS: usize = 32;
/// Warriors of the `crowd` phase: enough that the batches reach 32 and more.
pub(crate) const CROWD: usize = 256;

pub(crate) fn percentile(sorted: &[u32], p: f64) -> f64 {
    assert!(
        !sorted.is_empty(),
        "no latency was measured: every call failed (is the tracker up?)"
    );
    sorted[((sorted.len() - 1) as f64 * p) as usize] as f64 / 1000.0
}

/// Latencies (µs) of the calls that succeeded, and the calls that did not, apart.
pub(crate) struct Latencies {
    pub(crate) request: Vec<u32>,
    pub(crate) done: Vec<u32>,
    pub(crate) pairs: u64,
    /// Claims that failed (no answer, or not 200): not in `request`.
    pub(crate) failed_requests: u64,
    /// Dones that failed (no answer, or not 200): not in `done`.
    pub(crate) failed_dones: u64,
}

impl Latencies {
    /// "N failed claims, M failed dones" when any failed, for the lines that print figures.
    pub(crate) fn failures(&self) -> String {
        if self.failed_requests + self.failed_dones == 0 {
            return String::new();
        }
        format!(
            " ({} failed claims, {} failed dones, not in the percentiles)",
            self.failed_requests, self.failed_dones
        )
    }
}

/// `CONNECTIONS` warriors doing request then done for `secs`, spread evenly over the projects
/// `slugs`; with `pace`, each pair starts on a fixed schedule (open loop) so that latency is
/// measured at that rate, from the time a claim was due to go out (a claim held up by a slow
/// one before it counts its wait: no coordinated omission). Failed calls are counted apart.
pub(crate) async fn pairs(base: &str, slugs: &[&str], secs: u64, pace: Option<f64>) -> Latencies {
    pairs_of(CONNECTIONS, base, slugs, secs, pace).await
}

/// [`pairs`] with `warriors` warriors instead of `CONNECTIONS`.
pub(crate) async fn pairs_of(
    warriors: usize,
    base: &str,
    slugs: &[&str],
    secs: u64,
    pace: Option<f64>,
) -> Latencies {
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(warriors * 2)
        .build()
        .unwrap();
    let end = Instant::now() + Duration::from_secs(secs);
    let tasks: Vec<_> = (0..warriors)
        .map(|i| {
            let (http, base) = (http.clone(), base.to_string());
            let slug = slugs[i % slugs.len()].to_string();
            tokio::spawn(async move {
                let name = format!("bench-{i}");
                let claim_body = format!(r#"{{"downloader":"{name}","api_version":"2"}}"#);
                let mut lat = Latencies {
                    request: vec![],
                    done: vec![],
                    pairs: 0,
                    failed_requests: 0,
                    failed_dones: 0,
                };
                let interval = pace.map(|rate| Duration::from_secs_f64(warriors as f64 / rate));
                let mut next = Instant::now();
                while Instant::now() < end {
                    // Paced: timed from when the claim was due, not from when it went out.
                    let t = match interval {
                        Some(iv) => {
                            let due = next;
                            tokio::time::sleep_until(due.into()).await;
                            next += iv;
                            due
                        }
                        None => Instant::now(),
                    };
                    let Ok(r) = http.post(format!("{base}/{slug}/request")).body(claim_body.clone()).send().await else {
                        lat.failed_requests += 1;
                        continue;
                    };
                    let ok = r.status() == 200;
                    let v: serde_json::Value = r.json().await.unwrap_or_default();
                    if !ok {
                        lat.failed_requests += 1;
                        continue;
                    }
                    lat.request.push(t.elapsed().as_micros() as u32);
                    let done = serde_json::json!({"downloader": name, "item": v["item_name"], "bytes": {"data": 1234}});
                    let t = Instant::now();
                    let r = http.post(format!("{base}/{slug}/done")).body(done.to_string()).send().await;
                    if r.is_ok_and(|r| r.status() == 200) {
                        lat.done.push(t.elapsed().as_micros() as u32);
                        lat.pairs += 1;
                    } else {
                        lat.failed_dones += 1;
                    }
                }
                lat
            })
        })
        .collect();
    let mut all = Latencies {
        request: vec![],
        done: vec![],
        pairs: 0,
        failed_requests: 0,
        failed_dones: 0,
    };
    for t in tasks {
        let l = t.await.unwrap();
        all.request.extend(l.request);
        all.done.extend(l.done);
        all.pairs += l.pairs;
        all.failed_requests += l.failed_requests;
        all.failed_dones += l.failed_dones;
    }
    all.request.sort_unstable();
    all.done.sort_unstable();
    all
}

pub(crate) async fn multi(base: &str, slug: &str, secs: u64) -> u64 {
    let http = reqwest::Client::new();
    let end = Instant::now() + Duration::from_secs(secs);
    let tasks: Vec<_> = (0..8)
        .map(|i| {
            let (http, base, slug) = (http.clone(), base.to_string(), slug.to_string());
            tokio::spawn(async move {
                let mut items = 0u64;
                let name = format!("multi-{i}");
                while Instant::now() < end {
                    let body = format!(r#"{{"downloader":"{name}","api_version":"2"}}"#);
                    let r = http.post(format!("{base}/{slug}/multi=100//request")).body(body).send().await.unwrap();
                    if r.status() != 200 {
                        continue;
                    }
                    let v: serde_json::Value = r.json().await.unwrap();
                    let joined = v["item_name"].as_str().unwrap_or_default().to_string();
                    let n = joined.split('\0').count() as u64;
                    let done = serde_json::json!({"downloader": name, "item": joined, "bytes": {"data": 1}});
                    let r = http.post(format!("{base}/{slug}/done")).body(done.to_string()).send().await.unwrap();
                    if r.status() == 200 {
                        items += n;
                    }
                }
                items
            })
        })
        .collect();
    let mut total = 0;
    for t in tasks {
        total += t.await.unwrap();
    }
    total
}

pub(crate) async fn backfeed(base: &str, key: &str, secs: u64) -> u64 {
    let http = reqwest::Client::new();
    let end = Instant::now() + Duration::from_secs(secs);
    let tasks: Vec<_> = (0..4)
        .map(|i| {
            let (http, base, key) = (http.clone(), base.to_string(), key.to_string());
            tokio::spawn(async move {
                let (mut records, mut batch) = (0u64, 0u64);
                while Instant::now() < end {
                    batch += 1;
                    let body: String = (0..1000)
                        .map(|r| format!("https://example.com/{i}/{batch}/{r}\0"))
                        .collect();
                    let r = http
                        .post(format!("{base}/backfeed/legacy/{key}?delimiter=%00"))
                        .body(body)
                        .send()
                        .await
                        .unwrap();
                    if r.status() == 200 {
                        records += 1000;
                    }
                }
                records
            })
        })
        .collect();
    let mut total = 0;
    for t in tasks {
        total += t.await.unwrap();
    }
    total
}

/// The same claim and done scripts called without HTTP, `CONNECTIONS` warriors in flight: through
/// the [`Batcher`] the HTTP handlers use (`batched`: concurrent calls share one script call, up
/// to 128, as over HTTP), or one script call per claim and per done. Every done must be
/// recorded as one newly counted item; anything else stops the run.
pub(crate) async fn ceiling(store: &Store, slug: &str, secs: u64, batched: bool) -> u64 {
    let end = Instant::now() + Duration::from_secs(secs);
    let batcher = Batcher::new(store.clone(), server::config::DEFAULT_BATCH_WORKERS);
    let tasks: Vec<_> = (0..CONNECTIONS)
        .map(|i| {
            let (store, batcher, slug) = (store.clone(), batcher.clone(), slug.to_string());
            tokio::spawn(async move {
                let who = ClaimRequest {
                    downloader: format!("direct-{i}"),
                    n: 1,
                    name_ok: true,
                    ..Default::default()
                };
                let mut pairs = 0u64;
                while Instant::now() < end {
                    let claimed = if batched {
                        batcher.claim(&slug, who.clone()).await
                    } else {
                        store.queue().claim(&slug, &who, now_ms()).await
                    };
                    let items = match claimed.expect("claim") {
                        ClaimOutcome::Items(items, _) => items,
                        other => panic!("ceiling: claim answered {other:?}; the queue ran dry?"),
                    };
                    let report = DoneReport {
                        downloader: who.downloader.clone(),
                        bytes: vec![("data".into(), 1234)],
                        items,
                        ..Default::default()
                    };
                    let outcome = if batched {
                        batcher.done(&slug, report).await
                    } else {
                        store.queue().done(&slug, &report, now_ms()).await
                    };
                    match outcome.expect("done") {
                        DoneOutcome::Recorded { counted: 1, .. } => pairs += 1,
                        other => panic!("ceiling: a done was not counted once: {other:?}"),
                    }
                }
                pairs
            })
        })
        .collect();
    let mut total = 0;
    for t in tasks {
        total += t.await.unwrap();
    }
    total
}

pub(crate) async fn project(store: &Store, slug: &str, items: usize) {
    let p = NewProject {
        slug: slug.into(),
        title: slug.into(),
        domains: vec!["data".into()],
    };
    store.projects().create_project(&p).await.unwrap();
    let mut s: Settings = (*store.projects().project(slug).await.unwrap().unwrap()).clone();
    s.backfeed_key = "benchkey".into();
    s.bloom_capacity = 10_000_000;
    store.projects().save_settings(slug, &s).await.unwrap();
    let batch: Vec<String> = (0..items).map(|i| format!("{slug}-item-{i}")).collect();
    for chunk in batch.chunks(100_000) {
        store.queue().add_items(slug, "todo", chunk).await.unwrap();
    }
}
