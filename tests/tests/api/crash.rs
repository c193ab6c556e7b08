//! Killing the tracker (SIGKILL) at any instant loses no item and counts nothing twice.
//!
//! Concurrent simulated warriors claim (single and multi) and complete items against the real
//! `tracker` binary while it is killed and restarted several times. Like seesaw, a warrior
//! retries a done until it gets `OK`; claims whose reply was lost come back by reclaim.

use server::store::{NewProject, Store};
use std::{
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc,
    },
    time::{Duration, Instant},
};
use tests::{spawn_tracker, start_redis, tracker_bin, wait_for, Killed};

const ITEMS: usize = 1500;
const WARRIORS: usize = 12;
const KILLS: usize = 4;

async fn warrior(base: String, name: String, stop: Arc<AtomicBool>) {
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(2))
        .build()
        .expect("client");
    let mut round = 0usize;
    while !stop.load(Ordering::Relaxed) {
        round += 1;
        let path = if round.is_multiple_of(3) {
            "/crash/multi=5//request"
        } else {
            "/crash/request"
        };
        let body = format!(r#"{{"downloader":"{name}","api_version":"2"}}"#);
        let reply = http.post(format!("{base}{path}")).body(body).send().await;
        let items = match reply {
            Ok(r) if r.status() == 200 => match r.json::<serde_json::Value>().await {
                Ok(v) => v["item_name"].as_str().unwrap_or_default().to_string(),
                Err(_) => continue,
            },
            // Empty queue, or the tracker is down: try again shortly.
            _ => {
                tokio::time::sleep(Duration::from_millis(20)).await;
                continue;
            }
        };
        let done = serde_json::json!({"downloader": name, "item": items, "bytes": {"data": 100}})
            .to_string();
        // seesaw retries a done until it is acknowledged.
        loop {
            match http
                .post(format!("{base}/crash/done"))
                .body(done.clone())
                .send()
                .await
            {
                Ok(r) if r.status() == 200 => break,
                Ok(r) if r.status().is_client_error() => panic!("done refused: {}", r.status()),
                _ => tokio::time::sleep(Duration::from_millis(20)).await,
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_at_any_instant_loses_nothing_and_counts_nothing_twice() {
    let dir = std::env::temp_dir().join(format!("tracker-crash-{:x}", rand::random::<u64>()));
    std::fs::create_dir_all(&dir).unwrap();
    let (redis, redis_url) = start_redis(&dir);
    let _redis = Killed(redis);
    let namespace = "crash";
    let store = tests::connect_store(&redis_url, namespace, 2)
        .await
        .unwrap();
    let project = NewProject {
        slug: "crash".into(),
        title: "Crash".into(),
        domains: vec!["data".into()],
    };
    store.projects().create_project(&project).await.unwrap();
    let mut settings = (*store.projects().project("crash").await.unwrap().unwrap()).clone();
    settings.reclaim_ttl = 1;
    store
        .projects()
        .save_settings("crash", &settings)
        .await
        .unwrap();
    let items: Vec<String> = (0..ITEMS).map(|i| format!("item-{i}")).collect();
    store
        .queue()
        .add_items("crash", "todo", &items)
        .await
        .unwrap();

    let port = tests::free_port();
    let base = format!("http://127.0.0.1:{port}");
    let mut tracker = spawn_tracker(&tracker_bin(), &redis_url, namespace, port);
    let stop = Arc::new(AtomicBool::new(false));
    let warriors: Vec<_> = (0..WARRIORS)
        .map(|i| tokio::spawn(warrior(base.clone(), format!("warrior-{i}"), stop.clone())))
        .collect();

    let done_count = |store: Store| async move {
        store
            .figures()
            .leaderboard("crash", 0, 0)
            .await
            .ok()
            .flatten()
            .map(|b| b.counts.done)
            .unwrap_or(0)
    };
    for kill in 0..KILLS {
        // Let work happen, then kill mid-stream: wait for progress, not for time.
        let target = ((kill + 1) * ITEMS / (KILLS + 2)) as u64;
        let s = store.clone();
        wait_for("progress before a kill", Duration::from_secs(60), || {
            let s = s.clone();
            async move { (done_count(s).await >= target).then_some(()) }
        })
        .await;
        drop(tracker);
        tracker = spawn_tracker(&tracker_bin(), &redis_url, namespace, port);
    }

    let s = store.clone();
    let started = Instant::now();
    wait_for("every item done", Duration::from_secs(120), || {
        let s = s.clone();
        async move { (done_count(s).await >= ITEMS as u64).then_some(()) }
    })
    .await;
    stop.store(true, Ordering::Relaxed);
    for w in warriors {
        w.await.expect("warrior");
    }
    eprintln!(
        "finished {} s after the last restart",
        started.elapsed().as_secs()
    );

    // The log entries the killed processes left unfolded, folded (exactly once each).
    store.figures().fold("crash").await.unwrap();
    let board = store
        .figures()
        .leaderboard("crash", -1, 0)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(board.counts.done, ITEMS as u64, "every item done once");
    assert_eq!(
        (board.counts.todo, board.counts.out, board.counts.failed),
        (0, 0, 0)
    );
    let per_downloader: u64 = board.downloaders.iter().map(|d| d.items).sum();
    assert_eq!(per_downloader, ITEMS as u64, "no item counted twice");
    let problems = store.upkeep().check("crash").await.unwrap();
    assert!(problems.is_empty(), "{problems:#?}");
    drop(tracker);
    let _ = std::fs::remove_dir_all(&dir);
}
