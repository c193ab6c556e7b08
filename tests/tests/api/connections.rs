//! Connections and load: slow headers and bodies, the connection cap, the live viewers' caps,
//! viewers that stop answering, and a stop with thousands of viewers attached.

use futures::StreamExt;
use std::time::{Duration, Instant};
use tests::{wait_for, TestApp};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Reads from `stream` until the server closes it; what it sent. Panics after `deadline`, and
/// when the stream ends in an error (a reset) rather than being closed.
async fn read_until_closed(stream: &mut tokio::net::TcpStream, deadline: Duration) -> String {
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    let end = Instant::now() + deadline;
    loop {
        let left = end.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, stream.read(&mut buf)).await {
            Ok(Ok(0)) => return String::from_utf8_lossy(&got).into_owned(),
            Ok(Err(e)) => panic!(
                "the stream ended in an error ({e}), not closed, after {:?}",
                String::from_utf8_lossy(&got)
            ),
            Ok(Ok(n)) => got.extend_from_slice(&buf[..n]),
            Err(_) => panic!("the server kept the connection open past {deadline:?}"),
        }
    }
}

#[tokio::test]
async fn connections_that_send_half_a_header_are_closed_after_the_header_timeout() {
    let app = TestApp::start_with(|app| app.limits.header_timeout_s = 1).await;
    app.project("p", &["a"]).await;
    let mut slow = Vec::new();
    for _ in 0..200 {
        let mut s = tokio::net::TcpStream::connect(app.addr).await.unwrap();
        s.write_all(b"GET /p/stats.json HTTP/1.1\r\nHost: x\r\nX-Slow: ")
            .await
            .unwrap();
        slow.push(s);
    }
    // Each is closed (the header timeout is 1 s; 30 s bounds a busy machine, not the feature).
    for s in &mut slow {
        read_until_closed(s, Duration::from_secs(30)).await;
    }
    // Honest callers were served all along, and still are.
    assert_eq!(app.get("/p/stats.json").await.status, 200);
    app.assert_invariant("p").await;
}

#[tokio::test]
async fn a_connection_over_the_cap_gets_503_and_honest_ones_go_on_once_slots_free() {
    let app = TestApp::start_with(|app| app.limits.connections = 8).await;
    app.project("p", &["a"]).await;
    let mut held = Vec::new();
    for _ in 0..8 {
        held.push(tokio::net::TcpStream::connect(app.addr).await.unwrap());
    }
    // The server takes connections in order: the ninth finds every slot taken.
    let mut extra = tokio::net::TcpStream::connect(app.addr).await.unwrap();
    let answer = read_until_closed(&mut extra, Duration::from_secs(5)).await;
    assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
    assert!(answer.contains("Retry-After"), "{answer}");
    drop(held);
    wait_for("a slot to free", Duration::from_secs(10), || async {
        let r = reqwest::get(app.url("/p/stats.json")).await.ok()?;
        (r.status() == 200).then_some(())
    })
    .await;
    app.assert_invariant("p").await;
}

#[tokio::test]
async fn a_request_whose_body_never_ends_gets_408() {
    let app = TestApp::start_with(|app| app.limits.request_timeout_s = 1).await;
    app.project("p", &["a"]).await;
    let mut s = tokio::net::TcpStream::connect(app.addr).await.unwrap();
    s.write_all(
        b"POST /p/request HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"downloader\":",
    )
    .await
    .unwrap();
    let answer = read_until_closed(&mut s, Duration::from_secs(10)).await;
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert_eq!(app.counts("p").await.out, 0);
    app.assert_invariant("p").await;
}

#[tokio::test]
async fn live_viewers_are_capped_per_ip_with_503_and_slots_come_back() {
    let app = TestApp::start_with(|app| app.limits.viewers_per_ip = 2).await;
    app.project("p", &["a"]).await;
    let open = || async { reqwest::get(app.url("/p/live")).await.expect("GET /p/live") };
    let first = open().await;
    let second = open().await;
    assert_eq!(
        (first.status().as_u16(), second.status().as_u16()),
        (200, 200)
    );
    let third = open().await;
    assert_eq!(third.status(), 503);
    assert!(third.headers().contains_key("retry-after"));
    assert!(third
        .text()
        .await
        .unwrap()
        .contains("maximum of 2 live viewers"));
    let ws = tokio_tungstenite::connect_async(format!("ws://{}/p/ws", app.addr)).await;
    let Err(tokio_tungstenite::tungstenite::Error::Http(refused)) = ws else {
        panic!("the websocket counts too")
    };
    assert_eq!(refused.status(), 503);
    drop(first);
    wait_for("the slot to come back", Duration::from_secs(10), || async {
        (reqwest::get(app.url("/p/live")).await.ok()?.status() == 200).then_some(())
    })
    .await;
    drop(second);
}

#[tokio::test]
async fn a_viewer_that_stops_answering_pings_is_dropped() {
    // Pings every 2 s: the reading viewer answers well within the 5 s a silent one is given,
    // even on a busy machine.
    let app = TestApp::start_with(|config| config.limits.viewer_ping_s = 2).await;
    let viewers = app.state.viewers.clone();
    app.project("p", &["a"]).await;
    // One viewer reads (and so answers pings); the other never reads again.
    let (mut alive, _) = tokio_tungstenite::connect_async(format!("ws://{}/p/ws", app.addr))
        .await
        .unwrap();
    let (silent, _) = tokio_tungstenite::connect_async(format!("ws://{}/p/ws", app.addr))
        .await
        .unwrap();
    assert_eq!(viewers.count(), 2);
    let reader = tokio::spawn(async move { while let Some(Ok(_)) = alive.next().await {} });
    wait_for(
        "the silent viewer to be dropped",
        Duration::from_secs(30),
        || async { (viewers.count() == 1).then_some(()) },
    )
    .await;
    assert!(!reader.is_finished(), "the viewer that answers stays");
    reader.abort();
    drop(silent);
}

#[tokio::test]
async fn sigterm_closes_thousands_of_viewers_and_exits_within_ten_seconds() {
    let dir = std::env::temp_dir().join(tests::random_name("tracker-stop-"));
    std::fs::create_dir_all(&dir).unwrap();
    let (_redis, redis_url) = tests::start_redis(&dir);
    let redis = tests::Killed(_redis);
    let port = tests::free_port();
    let namespace = tests::random_name("stop");
    let store = tests::connect_store(&redis_url, &namespace, 1)
        .await
        .unwrap();
    store
        .projects()
        .create_project(&server::store::NewProject {
            slug: "p".into(),
            title: "P".into(),
            domains: vec!["data".into()],
        })
        .await
        .unwrap();
    let mut tracker = tests::tracker_command(&tests::tracker_bin(), &redis_url, &namespace, port)
        .env("TRACKER_MAX_VIEWERS_PER_IP", "5000")
        .spawn()
        .unwrap();
    let base = format!("http://127.0.0.1:{port}");
    wait_for("the tracker to start", Duration::from_secs(30), || async {
        reqwest::get(format!("{base}/healthz"))
            .await
            .ok()
            .map(|_| ())
    })
    .await;
    // 1,000 websocket and 1,000 server-sent-event viewers.
    const EACH: usize = 1000;
    let mut sockets = Vec::new();
    for _ in 0..EACH {
        let (ws, _) = tokio_tungstenite::connect_async(format!("ws://127.0.0.1:{port}/p/ws"))
            .await
            .unwrap();
        sockets.push(ws);
    }
    let http = reqwest::Client::new();
    let mut feeds = Vec::new();
    for _ in 0..EACH {
        let r = http.get(format!("{base}/p/live")).send().await.unwrap();
        assert_eq!(r.status(), 200);
        feeds.push(r);
    }
    let started = Instant::now();
    let kill = std::process::Command::new("kill")
        .args(["-TERM", &tracker.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let status = wait_for("the tracker to exit", Duration::from_secs(10), || {
        let status = tracker.try_wait().ok().flatten();
        async move { status }
    })
    .await;
    assert!(status.success(), "{status:?}");
    assert!(started.elapsed() < Duration::from_secs(10));
    // The viewers were told: each websocket got a close frame or its end.
    for ws in &mut sockets[..50] {
        let last = tokio::time::timeout(Duration::from_secs(5), async {
            let mut last = None;
            while let Some(Ok(m)) = ws.next().await {
                last = Some(m);
            }
            last
        })
        .await
        .expect("the socket ended");
        if let Some(m) = last {
            assert!(m.is_close(), "{m:?}");
        }
    }
    drop(redis);
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn public_reads_are_limited_per_address_and_warriors_are_not() {
    let app = TestApp::start_with(|app| {
        app.limits.public_reads = 1;
        app.limits.public_reads_burst = 4;
        app.trust_proxy = true;
    })
    .await;
    app.project("p", &["a"]).await;
    let app = &app;
    let from = |ip: &'static str, path: &'static str| {
        let req = app.http.get(app.url(path)).header("x-forwarded-for", ip);
        async move { app.send(req).await }
    };
    for _ in 0..5 {
        assert_eq!(from("10.0.0.1", "/p/stats.json").await.status, 200);
    }
    let refused = from("10.0.0.1", "/p/stats.json").await;
    assert_eq!(refused.status, 429, "{}", refused.body);
    assert!(refused.headers.contains_key("retry-after"));
    assert_eq!(from("10.0.0.1", "/p/").await.status, 429, "pages count too");
    assert_eq!(from("10.0.0.2", "/p/").await.status, 200, "another address");
    let claim = app
        .post_with(
            "/p/request",
            &[("x-forwarded-for", "10.0.0.1")],
            r#"{"downloader":"alice","api_version":"2"}"#,
        )
        .await;
    assert_eq!(claim.status, 200, "the warrior API is not a public read");
}
