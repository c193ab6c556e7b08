//! Redis faults under a running tracker: a Redis that stops answering writes (`CLIENT PAUSE`), or
//! dies and comes back, never holds a warrior call: it is answered 503 with `Retry-After` within
//! a second, `/healthz` and the pages say the tracker is reconnecting, and everything resumes by
//! itself, with no item lost or left claimed by a caller that was refused.

use fred::prelude::*;
use std::time::{Duration, Instant};
use tests::{free_port, random_name, tracker_bin, tracker_command, wait_for, Killed, TestApp};

/// A claim through `http` at `base`: its status, `Retry-After`, body, and how long it took.
async fn timed_claim(
    http: &reqwest::Client,
    base: &str,
    slug: &str,
) -> (u16, Option<String>, String, Duration) {
    let started = Instant::now();
    let r = http
        .post(format!("{base}/{slug}/request"))
        .body(r#"{"downloader":"alice","version":"1"}"#)
        .send()
        .await
        .expect("the tracker answers");
    let status = r.status().as_u16();
    let retry = r
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .map(String::from);
    let body = r.text().await.unwrap_or_default();
    (status, retry, body, started.elapsed())
}

#[tokio::test]
async fn a_claim_stuck_behind_paused_writes_is_refused_within_a_second_then_given_back() {
    let app = TestApp::start_private().await;
    let items: Vec<String> = (0..10).map(|i| format!("i{i}")).collect();
    let refs: Vec<&str> = items.iter().map(String::as_str).collect();
    app.project("p1", &refs).await;
    let held = app.claim("p1", "bob").await;
    // Writes (every claim script) wait for 4 s (four times the deadline); reads and PING
    // still answer.
    let _: () = app
        .store
        .client()
        .custom(fred::cmd!("CLIENT"), vec!["PAUSE", "4000", "WRITE"])
        .await
        .expect("CLIENT PAUSE");
    let paused = Instant::now();
    let (status, retry, body, took) = timed_claim(&app.http, &app.url(""), "p1").await;
    assert_eq!(status, 503, "{body}");
    assert_eq!(retry.as_deref(), Some("2"), "Retry-After");
    assert!(body.contains("reconnecting"), "{body}");
    // Answered at the 1 s deadline while the writes were still held, not when they resumed.
    assert!(
        took < Duration::from_millis(3500) && paused.elapsed() < Duration::from_secs(4),
        "refused after {took:?}: it waited for the paused writes"
    );
    // Once writes resume, the refused claim runs, finds its caller gone and gives its item
    // back: only bob's item stays claimed.
    wait_for("writes to resume", Duration::from_secs(10), || async {
        let (status, ..) = timed_claim(&app.http, &app.url(""), "p1").await;
        (status == 200).then_some(())
    })
    .await;
    wait_for(
        "the refused claim to be given back",
        Duration::from_secs(10),
        || async {
            let c = app.counts("p1").await;
            (c.out == 2 && c.todo == 8).then_some(())
        },
    )
    .await;
    let status = app
        .store
        .queue()
        .item_status("p1", &held)
        .await
        .expect("status");
    assert_eq!(status.state.as_deref(), Some("out"), "{status:?}");
    app.assert_invariant("p1").await;
}

/// [`tests::durable_redis`], once it accepts connections.
fn durable_redis(dir: &std::path::Path, port: u16) -> Killed {
    let redis = tests::durable_redis(dir, port);
    let end = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < end, "redis-server did not start");
        std::thread::sleep(Duration::from_millis(10));
    }
    redis
}

/// The status of `GET base/path`, or 0 when nothing answers.
async fn status_of(http: &reqwest::Client, url: String) -> u16 {
    match http.get(url).send().await {
        Ok(r) => r.status().as_u16(),
        Err(_) => 0,
    }
}

#[tokio::test]
async fn a_redis_that_dies_gets_503s_within_a_second_and_is_followed_when_it_comes_back() {
    let dir = std::env::temp_dir().join(random_name("tracker-faults-"));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let redis_port = free_port();
    let mut redis = durable_redis(&dir, redis_port);
    let url = format!("redis://127.0.0.1:{redis_port}");
    let namespace = random_name("t");
    let store = tests::connect_store(&url, &namespace, 1)
        .await
        .expect("connect");
    let p = server::store::NewProject {
        slug: "p1".into(),
        title: "P1".into(),
        domains: vec!["data".into()],
    };
    store.projects().create_project(&p).await.expect("project");
    let items: Vec<String> = (0..20).map(|i| format!("i{i}")).collect();
    store
        .queue()
        .add_items("p1", "todo", &items)
        .await
        .expect("items");

    let port = free_port();
    // A 3 s deadline: long enough to tell "at once" (under 1.5 s) from "at the deadline",
    // and "at the deadline" (under 4.5 s) from the 5 s command timeout, on a busy machine.
    let _tracker = Killed(
        tracker_command(&tracker_bin(), &url, &namespace, port)
            .env("TRACKER_REDIS_DEADLINE", "3000")
            .spawn()
            .expect("start the tracker"),
    );
    let base = format!("http://127.0.0.1:{port}");
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(20))
        .build()
        .expect("client");
    wait_for("the tracker", Duration::from_secs(20), || async {
        (status_of(&http, format!("{base}/healthz")).await == 200).then_some(())
    })
    .await;
    let (status, ..) = timed_claim(&http, &base, "p1").await;
    assert_eq!(status, 200);
    // A viewer of the live feed, attached before Redis dies.
    let mut viewer = http
        .get(format!("{base}/p1/live"))
        .send()
        .await
        .expect("GET live");
    assert_eq!(viewer.status().as_u16(), 200);

    let _ = redis.0.kill();
    let _ = redis.0.wait();
    // At once: the claim waits at most for the Redis deadline (3 s here), never for the
    // command timeout (5 s).
    let (status, retry, body, took) = timed_claim(&http, &base, "p1").await;
    assert_eq!(status, 503, "{body}");
    assert_eq!(retry.as_deref(), Some("2"));
    assert!(
        took < Duration::from_millis(4500),
        "answered after {took:?}, not at the 3 s deadline"
    );
    wait_for("/healthz to say 503", Duration::from_secs(5), || async {
        (status_of(&http, format!("{base}/healthz")).await == 503).then_some(())
    })
    .await;
    // Once the probe has noticed (a new viewer is refused only then), without waiting at all.
    wait_for("the probe to notice", Duration::from_secs(5), || async {
        (status_of(&http, format!("{base}/p1/live")).await == 503).then_some(())
    })
    .await;
    let (status, retry, body, took) = timed_claim(&http, &base, "p1").await;
    assert_eq!(status, 503, "{body}");
    assert_eq!(retry.as_deref(), Some("2"));
    assert!(
        took < Duration::from_millis(1500),
        "answered after {took:?}: it waited for the deadline"
    );
    // The health check stays JSON for monitors (the HTML notice is for pages only).
    let health = http
        .get(format!("{base}/healthz"))
        .send()
        .await
        .expect("healthz");
    assert_eq!(health.status().as_u16(), 503);
    assert!(health.headers().contains_key("retry-after"));
    let health: serde_json::Value = health.json().await.expect("healthz is JSON");
    assert_eq!(health["status"], "unavailable", "{health}");
    let page = http.get(format!("{base}/p1/")).send().await.expect("page");
    assert_eq!(page.status().as_u16(), 503);
    assert!(page.headers().contains_key("retry-after"));
    let text = page.text().await.unwrap_or_default();
    assert!(text.contains("reconnecting"), "{text}");
    // The viewer's feed is ended (its client reconnects), and reconnecting is refused for now.
    let ended = tokio::time::timeout(Duration::from_secs(5), async {
        while let Ok(Some(_)) = viewer.chunk().await {}
    })
    .await;
    assert!(ended.is_ok(), "the live feed still open with Redis gone");
    assert_eq!(status_of(&http, format!("{base}/p1/live")).await, 503);

    // Back on the same port, from its append-only file: the tracker follows by itself.
    redis = durable_redis(&dir, redis_port);
    wait_for("/healthz to say 200", Duration::from_secs(15), || async {
        (status_of(&http, format!("{base}/healthz")).await == 200).then_some(())
    })
    .await;
    let (status, _, body, _) = timed_claim(&http, &base, "p1").await;
    assert_eq!(status, 200, "{body}");
    let store = tests::connect_store(&url, &namespace, 1)
        .await
        .expect("reconnect");
    // Claims refused while Redis was gone may run once it is back (they were queued in the
    // client); each then finds its caller gone and gives its item back. Only the two claims
    // answered 200 stay (`check` reads structure by structure, so it runs once that settled).
    let out_key = store.keys().project("p1").out();
    wait_for(
        "refused claims to be given back",
        Duration::from_secs(10),
        || async {
            let out: u64 = store.client().zcard(&out_key).await.ok()?;
            (out == 2).then_some(())
        },
    )
    .await;
    let problems = store.upkeep().check("p1").await.expect("check");
    assert!(problems.is_empty(), "{problems:?}");
    drop(redis);
    let _ = std::fs::remove_dir_all(&dir);
}
