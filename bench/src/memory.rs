//! `--phases memory`: Redis memory of a big project with offloading on. Loads N items (names of
//! 32 bytes; `--memory-items N`, default 10,000,000) into a project whose done items are
//! offloaded and whose queue keeps 100,000 items in Redis, then completes them all (claims of
//! 500, one done report per item, through the store's batched scripts) while the tracker's own
//! offloader runs, and prints Redis `used_memory` at every million done. Then the cost of
//! offloading to the warrior API: pairs over HTTP on a project with `keep` and on one whose
//! offloader works all along, alternated, medians.

use super::rig::Rig;
use server::store::{
    now_ms, ClaimOutcome, ClaimRequest, DoneOutcome, DoneReport, Refusal, Settings, Store,
};
use std::time::{Duration, Instant};

/// The big project's settings: what a real one of hundreds of millions would set, scaled so
/// that Redis holds a bounded amount whatever N.
fn big(s: &mut Settings) {
    s.done_policy = "offload".into();
    s.offload_keep = 50_000;
    s.segment_items = 10_000;
    s.queue_high = 100_000;
    s.log_keep = 20_000;
}

/// Redis's `used_memory`. A read that fails stops the run: a 0 would pass for a figure.
async fn used_memory(store: &Store) -> u64 {
    use fred::prelude::*;
    let info: String = store
        .client()
        .custom(fred::cmd!("INFO"), vec!["memory"])
        .await
        .unwrap_or_else(|e| panic!("memory: reading INFO memory failed: {e}"));
    info.lines()
        .find_map(|l| l.strip_prefix("used_memory:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("memory: no used_memory in INFO memory"))
}

async fn create(store: &Store, slug: &str, f: impl FnOnce(&mut Settings)) {
    store
        .projects()
        .create_project(&server::store::NewProject {
            slug: slug.into(),
            title: slug.into(),
            domains: vec!["data".into()],
        })
        .await
        .unwrap();
    let mut s: Settings = (*store.projects().project(slug).await.unwrap().unwrap()).clone();
    f(&mut s);
    server::ops::validate_settings(&s).unwrap();
    store.projects().save_settings(slug, &s).await.unwrap();
}

async fn load(store: &Store, slug: &str, n: u64) {
    let mut i = 0;
    while i < n {
        let end = (i + 100_000).min(n);
        let chunk: Vec<String> = (i..end).map(|j| format!("{slug}-item-{j:020}")).collect();
        store.queue().add_items(slug, "todo", &chunk).await.unwrap();
        i = end;
    }
}

/// Claims and completes items of `slug` until `n` are done, one done report per item.
async fn drain(store: Store, slug: &'static str, worker: usize) {
    let req = ClaimRequest {
        downloader: format!("mem-{worker}"),
        ip: "10.1.0.1".into(),
        n: 500,
        name_ok: true,
        ..Default::default()
    };
    let mut idle = 0;
    loop {
        let items = match store.queue().claim(slug, &req, now_ms()).await {
            Ok(ClaimOutcome::Items(items, _)) => items,
            Ok(ClaimOutcome::Refused(Refusal::NothingToGive)) => {
                idle += 1;
                if idle > 3000 {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
            other => panic!("memory: claim answered {other:?}"),
        };
        idle = 0;
        let reports: Vec<DoneReport> = items
            .into_iter()
            .map(|item| DoneReport {
                downloader: req.downloader.clone(),
                version: "20240101.01".into(),
                ip: req.ip.clone(),
                id: "null".into(),
                bytes: vec![("data".into(), 1234)],
                items: vec![item],
                ..Default::default()
            })
            .collect();
        for out in store
            .queue()
            .done_batch(slug, &reports, now_ms())
            .await
            .unwrap()
        {
            assert!(
                matches!(out, DoneOutcome::Recorded { counted: 1, .. }),
                "memory: a done was not counted once: {out:?}"
            );
        }
    }
}

async fn done_items(store: &Store, slug: &str) -> u64 {
    use fred::prelude::*;
    let n: Option<u64> = store
        .client()
        .hget(store.keys().project(slug).stats(), "done_items")
        .await
        .unwrap_or(None);
    n.unwrap_or(0)
}

fn mb(b: u64) -> String {
    format!("{:.1} MB", b as f64 / 1e6)
}

/// The phase; `n` items.
pub async fn run(rig: &Rig, n: u64) {
    let store = &rig.store;
    let slug = "memory";
    create(store, slug, big).await;
    let empty = used_memory(store).await;
    let t = Instant::now();
    load(store, slug, n).await;
    let loaded = used_memory(store).await;
    println!(
        "memory: {n} items loaded in {:.0} s; used_memory {} after the load (the tracker spills the queue's tail meanwhile)",
        t.elapsed().as_secs_f64(),
        mb(loaded)
    );
    // The tracker's offloader brings the queue down to its mark.
    let k = store.keys().project(slug);
    let t = Instant::now();
    loop {
        use fred::prelude::*;
        let in_redis: u64 = store.client().zcard(k.queue("todo")).await.unwrap();
        if in_redis <= 110_000 || t.elapsed() > Duration::from_secs(1800) {
            println!(
                "memory: queue down to {in_redis} in Redis after {:.0} s more; used_memory {}",
                t.elapsed().as_secs_f64(),
                mb(used_memory(store).await)
            );
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    println!(
        "memory: done       used_memory   (empty Redis: {})",
        mb(empty)
    );
    let start = Instant::now();
    let workers: Vec<_> = (0..4)
        .map(|w| tokio::spawn(drain(store.clone(), slug, w)))
        .collect();
    let mut samples = Vec::new();
    let mut next = 1_000_000u64.min(n);
    while next <= n {
        let done = done_items(store, slug).await;
        if done >= next {
            let used = used_memory(store).await;
            println!("memory: {done:>10}  {:>12}", mb(used));
            samples.push(used);
            next += 1_000_000;
            continue;
        }
        if workers.iter().all(|w| w.is_finished()) {
            println!("memory: the workers stopped at {done} done");
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    for w in workers {
        w.abort();
    }
    let secs = start.elapsed().as_secs_f64();
    let state = store.offload().offload_summary(slug).await.unwrap();
    println!(
        "memory: {n} done in {secs:.0} s ({:.0}/s); on disk: {} done items, {} waiting, {} segments, {}",
        n as f64 / secs,
        state.done_on_disk,
        state.todo_on_disk,
        state.segments,
        mb(state.bytes)
    );
    if let (Some(lo), Some(hi)) = (samples.iter().min(), samples.iter().max()) {
        println!(
            "memory: used_memory from the first million to the last: {} to {}, spread {:.1} % of the lowest (target: within 10 %)",
            mb(*lo),
            mb(*hi),
            100.0 * (*hi - *lo) as f64 / *lo as f64
        );
    }
    cost(rig).await;
}

/// Pairs over HTTP on a `keep` project and on an offloading one, alternated: medians.
async fn cost(rig: &Rig) {
    const SECS: u64 = 15;
    let store = &rig.store;
    create(store, "mem-keep", |_| {}).await;
    create(store, "mem-off", |s| {
        big(s);
        s.offload_keep = 10_000;
    })
    .await;
    load(store, "mem-keep", 600_000).await;
    load(store, "mem-off", 600_000).await;
    let (mut keep, mut off) = (Vec::new(), Vec::new());
    for _ in 0..3 {
        for (slug, rates) in [("mem-keep", &mut keep), ("mem-off", &mut off)] {
            let l = super::pairs(&rig.base, &[slug], SECS, None).await;
            rates.push(l.pairs as f64 / SECS as f64);
        }
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let state = store.offload().offload_summary("mem-off").await.unwrap();
    let (k, o) = (median(&mut keep), median(&mut off));
    println!(
        "memory: pairs over HTTP, {SECS} s runs alternated, medians: keep {k:.0}/s, offload {o:.0}/s ({:.0} %; {} done items went to disk meanwhile)",
        100.0 * o / k,
        state.done_on_disk
    );
}
