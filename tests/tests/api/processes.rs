//! Several tracker processes on one Redis, as behind a load balancer: warriors spread over them
//! are served as by one, a viewer of any sees every completion, and a settings change made
//! through one process (or behind their backs, with its message missed) is obeyed by all within
//! a second.

use fred::prelude::*;
use server::store::{NewProject, Store};
use std::time::{Duration, Instant};
use tests::{
    free_port, random_name, start_redis, tracker_bin, tracker_command, wait_for, Killed,
    ADMIN_TOKEN,
};

/// Three processes of the tracker binary on their own ports, one Redis and namespace.
struct Fleet {
    bases: Vec<String>,
    store: Store,
    http: reqwest::Client,
    _procs: Vec<Killed>,
    _redis: Option<Killed>,
    dir: std::path::PathBuf,
}

impl Drop for Fleet {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Fleet {
    async fn start(n: usize) -> Fleet {
        let dir = std::env::temp_dir().join(random_name("tracker-fleet-"));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let (redis, url) = match std::env::var("REDIS_URL") {
            Ok(url) if !url.is_empty() => (None, url),
            _ => {
                let (child, url) = start_redis(&dir);
                (Some(Killed(child)), url)
            }
        };
        let namespace = random_name("t");
        let store = tests::connect_store(&url, &namespace, 2)
            .await
            .expect("connect");
        let mut procs = Vec::new();
        let mut bases = Vec::new();
        for _ in 0..n {
            let port = free_port();
            let child = tracker_command(&tracker_bin(), &url, &namespace, port)
                .env("TRACKER_ADMIN_TOKEN", ADMIN_TOKEN)
                // Every request here comes from 127.0.0.1.
                .env("TRACKER_PUBLIC_READS", "0")
                .spawn()
                .expect("start a tracker");
            procs.push(Killed(child));
            bases.push(format!("http://127.0.0.1:{port}"));
        }
        let http = reqwest::Client::new();
        for base in &bases {
            wait_for("a tracker to listen", Duration::from_secs(20), || async {
                let r = http.get(format!("{base}/healthz")).send().await.ok()?;
                (r.status() == 200).then_some(())
            })
            .await;
        }
        Fleet {
            bases,
            store,
            http,
            _procs: procs,
            _redis: redis,
            dir,
        }
    }

    /// Claims one item of `slug` for `who` through process `i`, as today's seesaw does (no
    /// `api_version`, a JSON answer): the status and the item (the body when refused).
    async fn claim(&self, i: usize, slug: &str, who: &str) -> (u16, String) {
        let body = serde_json::json!({"downloader": who, "version": "1"}).to_string();
        let r = self
            .http
            .post(format!("{}/{slug}/request", self.bases[i]))
            .body(body)
            .send()
            .await
            .expect("claim");
        let status = r.status().as_u16();
        let text = r.text().await.unwrap_or_default();
        let item = serde_json::from_str::<serde_json::Value>(&text)
            .ok()
            .and_then(|v| v["item_name"].as_str().map(String::from))
            .unwrap_or(text);
        (status, item)
    }

    /// Reports `item` done for `who` through process `i`.
    async fn done(&self, i: usize, slug: &str, who: &str, item: &str) -> u16 {
        let body = serde_json::json!({
            "downloader": who, "version": "1", "item": item, "bytes": {"data": 10}
        });
        self.http
            .post(format!("{}/{slug}/done", self.bases[i]))
            .body(body.to_string())
            .send()
            .await
            .expect("done")
            .status()
            .as_u16()
    }
}

#[tokio::test]
async fn three_processes_serve_as_one_and_obey_a_change_made_through_any_within_a_second() {
    let fleet = Fleet::start(3).await;
    let p = NewProject {
        slug: "p1".into(),
        title: "P1".into(),
        domains: vec!["data".into()],
    };
    fleet
        .store
        .projects()
        .create_project(&p)
        .await
        .expect("project");
    let items: Vec<String> = (0..30).map(|i| format!("i{i:02}")).collect();
    fleet
        .store
        .queue()
        .add_items("p1", "todo", &items)
        .await
        .expect("items");

    // A viewer on each process.
    let mut viewers = Vec::new();
    for base in &fleet.bases {
        let r = fleet
            .http
            .get(format!("{base}/p1/live"))
            .send()
            .await
            .expect("GET live");
        assert_eq!(r.status(), 200);
        viewers.push(r);
    }
    // Warriors spread over the processes: each item claimed through one, done through another.
    let mut done = Vec::new();
    for n in 0..items.len() {
        let who = format!("warrior{}", n % 5);
        let (status, item) = fleet.claim(n % 3, "p1", &who).await;
        assert_eq!(status, 200, "{item}");
        assert_eq!(fleet.done((n + 1) % 3, "p1", &who, &item).await, 200);
        done.push(item);
    }
    done.sort();
    assert_eq!(done, items, "every item handed out once");
    for (i, viewer) in viewers.iter_mut().enumerate() {
        let mut text = String::new();
        let end = tokio::time::Instant::now() + Duration::from_secs(10);
        while text.matches("\ndata: ").count() + usize::from(text.starts_with("data: "))
            < items.len()
        {
            let chunk = tokio::time::timeout_at(end, viewer.chunk())
                .await
                .unwrap_or_else(|_| panic!("viewer {i} saw only: {text}"))
                .expect("chunk")
                .expect("feed open");
            text.push_str(std::str::from_utf8(&chunk).expect("utf-8"));
        }
        for item in &items {
            assert!(
                text.contains(&format!("\"{item}\"")),
                "viewer {i} missed {item}"
            );
        }
    }

    // A block made through process 0 holds on 1 and 2 within a second (each caches blocks
    // for ten seconds without the settings version).
    let (status, _) = fleet.claim(1, "p1", "mallory").await;
    assert_eq!(status, 404, "nothing left to claim, but not blocked yet");
    let block = serde_json::json!({"kind": "dl", "value": "mallory", "reason": "test"});
    let r = fleet
        .http
        .post(format!("{}/admin/api/blocks", fleet.bases[0]))
        .bearer_auth(ADMIN_TOKEN)
        .json(&block)
        .send()
        .await
        .expect("block");
    assert_eq!(r.status(), 204);
    // Followed through the change's message, not the 10 s safety net of the cached settings:
    // 5 s tells the two apart on a busy machine.
    let changed = Instant::now();
    for i in 1..3 {
        wait_for("the block to hold", Duration::from_secs(5), || async {
            (fleet.claim(i, "p1", "mallory").await.0 == 403).then_some(())
        })
        .await;
    }
    assert!(changed.elapsed() < Duration::from_secs(5));

    // A change whose message every process missed: written behind their backs with the version
    // bumped and nothing published. Each finds the version on a later read.
    let key = fleet.store.keys().global_blocked("dl");
    let _: i64 = fleet
        .store
        .client()
        .hdel(&key, "mallory")
        .await
        .expect("hdel");
    let _: i64 = fleet
        .store
        .client()
        .incr(fleet.store.keys().settings_version())
        .await
        .expect("incr");
    for i in 0..3 {
        wait_for(
            "the lifted block to be seen",
            Duration::from_secs(2),
            || async { (fleet.claim(i, "p1", "mallory").await.0 == 404).then_some(()) },
        )
        .await;
    }
    let problems = fleet.store.upkeep().check("p1").await.expect("check");
    assert!(problems.is_empty(), "{problems:?}");
}
