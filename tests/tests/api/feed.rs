//! The compatibility feed: `GET /SLUG/live` (server-sent events) and `GET /SLUG/recent.json`.

use server::api::feed::KEEP_ALIVE;
use std::time::Duration;
use tests::TestApp;

/// An open `GET /SLUG/live` and what it has sent so far.
struct Feed {
    resp: reqwest::Response,
    text: String,
}

impl Feed {
    async fn open(app: &TestApp, slug: &str, last_id: Option<&str>) -> Feed {
        let mut req = app.http.get(app.url(&format!("/{slug}/live")));
        if let Some(id) = last_id {
            req = req.header("Last-Event-ID", id);
        }
        let resp = req.send().await.expect("GET live");
        assert_eq!(resp.status(), 200);
        assert_eq!(resp.headers()["content-type"], "text/event-stream");
        Feed {
            resp,
            text: String::new(),
        }
    }

    /// Reads until the text contains `want`; returns the events (id, data JSON) seen so far,
    /// and drops them from the buffer.
    async fn until(&mut self, want: &str, within: Duration) -> Vec<(u64, serde_json::Value)> {
        let end = tokio::time::Instant::now() + within;
        while !self.text.contains(want) {
            let chunk = tokio::time::timeout_at(end, self.resp.chunk())
                .await
                .unwrap_or_else(|_| panic!("no {want:?} in {:?}", self.text))
                .expect("chunk")
                .expect("feed open");
            self.text
                .push_str(std::str::from_utf8(&chunk).expect("utf-8"));
        }
        let events = parse_events(&self.text);
        self.text.clear();
        events
    }
}

/// The `id:`/`data:` events of an event-stream text; comments and `retry:` are skipped.
fn parse_events(text: &str) -> Vec<(u64, serde_json::Value)> {
    text.split("\n\n")
        .filter_map(|block| {
            let mut id = None;
            let mut data = None;
            for line in block.lines() {
                if let Some(v) = line.strip_prefix("id: ") {
                    id = v.parse::<u64>().ok();
                } else if let Some(v) = line.strip_prefix("data: ") {
                    data = Some(serde_json::from_str(v).expect("data is JSON"));
                }
            }
            Some((id?, data?))
        })
        .collect()
}

fn ids(events: &[(u64, serde_json::Value)]) -> Vec<u64> {
    events.iter().map(|(id, _)| *id).collect()
}

#[tokio::test]
async fn the_live_feed_sends_each_completion_in_the_old_broadcaster_shape() {
    let app = TestApp::start().await;
    app.project("p1", &["a", "b", "c"]).await;
    app.claim_all("p1").await;
    let mut feed = Feed::open(&app, "p1", None).await;
    feed.until("retry: ", Duration::from_secs(5)).await;

    let body = serde_json::json!({"downloader": "alice", "item": "a\u{0}b",
        "bytes": {"data": 3 * 1024 * 1024}, "version": "20240101.01"});
    let r = app
        .post_with(
            "/p1/done",
            &[("user-agent", "ArchiveTeam Warrior/0.10.3 Warrior")],
            body.to_string(),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let events = feed.until("\n\n", Duration::from_secs(5)).await;
    assert_eq!(ids(&events), [1]);
    // The production tracker's fields: rates, queue sizes and figures, from the statistics
    // last read for the project's watchers (numbers whenever they were read).
    let mut event = events[0].1.clone();
    let counts = event["counts"].as_object_mut().unwrap();
    for rate in ["rcr", "rcsr", "irsr", "ifir", "ifar"] {
        let r = counts
            .remove(rate)
            .unwrap_or_else(|| panic!("counts.{rate}"));
        assert!((0.0..=1.0).contains(&r.as_f64().unwrap()), "{rate}: {r}");
    }
    let stats = event.as_object_mut().unwrap().remove("stats").unwrap();
    assert!(
        stats["queues"].is_object() && stats["values"].is_object(),
        "{stats}"
    );
    assert_eq!(stats["values"]["done_counter"], 2.0);
    let queuestats = event.as_object_mut().unwrap().remove("queuestats").unwrap();
    assert_eq!(queuestats, stats["queues"]);
    assert_eq!(
        event,
        serde_json::json!({
            "downloader": "alice",
            "user_agent": "ArchiveTeam Warrior/0.10.3 Warrior",
            "item": "a\u{0}b",
            "items": ["a", "b"],
            "move_items": ["a", "b"],
            "bytes": 3145728,
            "megabytes": 3.0,
            "domain_bytes": {"data": 3145728},
            "version": "20240101.01",
            "is_duplicate": false,
            "counts": {"todo": 0, "out": 1, "done": 2},
        })
    );
}

/// The production dashboard lists `stats.queues` and `stats.values` and shows the `counts`
/// rates as percentages: once the statistics were read for the feed's watchers, every event
/// carries them, the queues under the old tracker's names.
#[tokio::test]
async fn live_events_carry_the_production_trackers_rates_and_queue_sizes() {
    let app = TestApp::start().await;
    app.project("p1", &["a", "b", "c", "d"]).await;
    app.claim_all("p1").await;
    let mut feed = Feed::open(&app, "p1", None).await;
    feed.until("retry: ", Duration::from_secs(5)).await;
    app.done("p1", "bob", "a", 1).await;
    feed.until("id: 1\n", Duration::from_secs(5)).await;
    // The statistics are read for watched projects every few seconds; recent.json (a new URL
    // each time: public reads are cached for a second) shows them once read after that done.
    let mut n = 0;
    tests::wait_for(
        "the statistics read after the done",
        Duration::from_secs(20),
        || {
            n += 1;
            let app = &app;
            async move {
                let list = app.get(&format!("/p1/recent.json?n={n}")).await;
                let list: serde_json::Value = serde_json::from_str(&list.body).ok()?;
                (list[0]["queuestats"]["done"] == 1).then_some(())
            }
        },
    )
    .await;
    app.done("p1", "bob", "b", 1).await;
    let events = feed.until("id: 2\n", Duration::from_secs(5)).await;
    let e = &events.last().unwrap().1;
    assert_eq!(e["counts"]["done"], 2, "{e}");
    let queues = &e["stats"]["queues"];
    for (queue, n) in [
        ("todo", 0),
        ("todo:secondary", 0),
        ("todo:redo", 0),
        ("todo:backfeed", 0),
        ("claims", 3),
        ("done", 1),
        ("unretrievable", 0),
    ] {
        assert_eq!(queues[queue], n, "{queue}, as last read: {queues}");
    }
    assert_eq!(e["queuestats"], *queues);
    let irsr = e["counts"]["irsr"].as_f64().unwrap();
    assert!(irsr > 0.0 && irsr <= 1.0, "claims were served: {e}");
    assert_eq!(e["stats"]["values"]["item_request_serve_rate"], irsr);
    assert_eq!(e["stats"]["values"]["done_counter"], 2.0);
}

#[tokio::test]
async fn a_reconnecting_feed_gets_what_it_missed_then_live_completions() {
    let app = TestApp::start().await;
    app.project("p1", &["a", "b", "c", "d"]).await;
    app.claim_all("p1").await;
    for item in ["a", "b", "c"] {
        app.done("p1", "bob", item, 1).await;
    }
    let mut feed = Feed::open(&app, "p1", Some("1")).await;
    let missed = feed.until("id: 3\n", Duration::from_secs(5)).await;
    assert_eq!(ids(&missed), [2, 3]);
    app.done("p1", "bob", "d", 1).await;
    let live = feed.until("id: 4\n", Duration::from_secs(5)).await;
    assert_eq!(ids(&live), [4], "each completion once");
    assert_eq!(live[0].1["items"], serde_json::json!(["d"]));
}

#[tokio::test]
async fn the_feed_sends_keep_alives_when_idle() {
    let app = TestApp::start().await;
    app.project("p1", &[]).await;
    let mut feed = Feed::open(&app, "p1", None).await;
    feed.until(": keep-alive\n\n", KEEP_ALIVE + Duration::from_secs(5))
        .await;
}

#[tokio::test]
async fn the_feed_refuses_unknown_projects_and_bad_ids() {
    let app = TestApp::start().await;
    app.project("p1", &[]).await;
    assert_eq!(app.get("/nope/live").await.status, 404);
    let r = app
        .http
        .get(app.url("/p1/live"))
        .header("Last-Event-ID", "yesterday")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    assert!(r.text().await.unwrap().contains("Last-Event-ID"));
}

#[tokio::test]
async fn recent_json_lists_the_last_twenty_completions_newest_first() {
    let app = TestApp::start().await;
    let names: Vec<String> = (0..25).map(|i| format!("item{i:02}")).collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    app.project("p1", &refs).await;
    app.claim_all("p1").await;
    assert_eq!(app.get("/p1/recent.json").await.body.trim(), "[]");
    for (i, item) in names.iter().enumerate() {
        app.done("p1", "bob", item, i as u64).await;
    }
    // Public reads are cached for a second: the next answer made after the dones shows them.
    let r = tests::wait_for(
        "recent.json to show the dones",
        std::time::Duration::from_secs(5),
        || async {
            let r = app.get("/p1/recent.json").await;
            (r.status == 200 && r.body.contains("item24")).then_some(r)
        },
    )
    .await;
    assert!(r.headers["content-type"]
        .to_str()
        .unwrap()
        .starts_with("application/json"));
    let list: Vec<serde_json::Value> = serde_json::from_str(&r.body).unwrap();
    assert_eq!(list.len(), 20);
    assert_eq!(list[0]["item"], "item24");
    assert_eq!(list[19]["item"], "item05");
    let keys: Vec<&str> = list[0]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    let mut want = [
        "bytes",
        "move_items",
        "counts",
        "domain_bytes",
        "downloader",
        "is_duplicate",
        "item",
        "items",
        "megabytes",
        "queuestats",
        "stats",
        "user_agent",
        "version",
    ];
    want.sort();
    let mut keys = keys;
    keys.sort();
    assert_eq!(keys, want);
    assert_eq!(
        list[0]["counts"],
        serde_json::json!({"todo": 0, "out": 0, "done": 25,
            "rcr": 0.0, "rcsr": 0.0, "irsr": 0.0, "ifir": 0.0, "ifar": 0.0}),
        "nobody watches: no statistics read, rates 0"
    );
    assert_eq!(app.get("/nope/recent.json").await.status, 404);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_feed_client_that_falls_behind_gets_the_missed_completions_from_the_history() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    // A client that does not read (HTTP/1.0: no chunked encoding).
    let (app, mut stream, names) = super::live_frames::slow_reader_on_big_items().await;
    stream
        .write_all(b"GET /p1/live HTTP/1.0\r\n\r\n")
        .await
        .unwrap();
    // The feed subscribes before it sends its first bytes.
    let mut raw = Vec::new();
    let mut buf = vec![0; 1 << 16];
    while !String::from_utf8_lossy(&raw).contains("retry: 3000\n\n") {
        let n = tokio::time::timeout(Duration::from_secs(5), stream.read(&mut buf))
            .await
            .expect("the feed starts")
            .unwrap();
        assert!(n > 0, "feed closed");
        raw.extend_from_slice(&buf[..n]);
    }
    let mut seq = 0;
    let mut overflowed = false;
    for batch in names.chunks(200) {
        let body = serde_json::json!({"downloader": "bob", "item": batch.join("\0"),
            "bytes": {"data": 1}, "version": "1"});
        assert_eq!(app.post("/p1/done", body.to_string()).await.status, 200);
        seq += 1;
        tests::wait_for("the frame", Duration::from_secs(5), || async {
            (app.hub.flushed("p1") >= seq).then_some(())
        })
        .await;
        if overflowed {
            break;
        }
        overflowed = app.hub.queued("p1") >= server::hub::WATCHER_BUFFER;
    }
    assert!(overflowed, "the client never fell a buffer behind");

    // Read it all: every completion once, in order, though frames were lost to this client.
    let want = format!("id: {seq}\n");
    let find = |hay: &[u8], pat: &[u8]| hay.windows(pat.len()).position(|w| w == pat);
    let mut last_at = None;
    let end = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(at) = last_at {
            if find(&raw[at..], b"\n\n").is_some() {
                break;
            }
        }
        let n = tokio::time::timeout_at(end, stream.read(&mut buf))
            .await
            .expect("the feed goes on")
            .unwrap();
        assert!(n > 0, "feed closed");
        let from = raw.len().saturating_sub(want.len());
        raw.extend_from_slice(&buf[..n]);
        if last_at.is_none() {
            last_at = find(&raw[from..], want.as_bytes()).map(|i| from + i);
        }
    }
    let text = String::from_utf8(raw).unwrap();
    let body = text.split_once("\r\n\r\n").expect("headers").1;
    assert_eq!(ids(&parse_events(body)), (1..=seq).collect::<Vec<u64>>());
    assert!(!body.contains("missed"), "the history still had them");
}
