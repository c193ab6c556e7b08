//! The live websocket under load: coalesced frames, and a watcher that falls behind.

use super::live::{items, next_json, seqs};
use futures::StreamExt;
use server::hub::WATCHER_BUFFER;
use std::time::{Duration, Instant};
use tests::{wait_for, TestApp};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_completions_make_at_most_four_frames_a_second() {
    let app = TestApp::start().await;
    let names = items("i", 1000);
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    app.project("p1", &refs).await;
    app.claim_all("p1").await;
    let (mut ws, _) = tokio_tungstenite::connect_async(format!("ws://{}/p1/ws", app.addr))
        .await
        .expect("connect");
    assert_eq!(next_json(&mut ws).await["board"]["seq"], 0);

    let reader = tokio::spawn(async move {
        let mut frames = Vec::new();
        let mut got = Vec::new();
        while got.last() != Some(&1000) {
            let msg = next_json(&mut ws).await;
            frames.push(Instant::now());
            got.extend(seqs(&msg));
        }
        (frames, got)
    });
    let statuses: Vec<u16> = futures::stream::iter(&names)
        .map(|item| async { app.done("p1", "bob", item, 1).await.status })
        .buffer_unordered(16)
        .collect()
        .await;
    assert!(statuses.iter().all(|s| *s == 200));
    let (frames, got) = reader.await.expect("reader");

    assert_eq!(
        got,
        (1..=1000).collect::<Vec<u64>>(),
        "every event once, in order"
    );
    // Four frames a second, 250 ms apart when sent: any five span a second, less the jitter
    // of their arrival here (a loaded machine delays one, bunching it with the next).
    for five in frames.windows(5) {
        let span = five[4] - five[0];
        assert!(
            span >= Duration::from_millis(750),
            "five frames within {span:?}"
        );
    }
    assert!(frames.len() < 1000 / 4, "{} frames", frames.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watcher_that_does_not_read_gets_a_snapshot_not_a_gap() {
    let (app, stream, names) = slow_reader_on_big_items().await;
    let (mut ws, _) = tokio_tungstenite::client_async(format!("ws://{}/p1/ws", app.addr), stream)
        .await
        .expect("connect");
    assert_eq!(next_json(&mut ws).await["type"], "snapshot");

    // Stop reading; complete batches, one frame each, until the hub holds a full buffer of
    // frames this watcher has not taken, then one more.
    let mut seq = 0;
    let mut overflowed = false;
    for batch in names.chunks(200) {
        let body = serde_json::json!({"downloader": "bob", "item": batch.join("\0"),
            "bytes": {"data": 1}, "version": "1"});
        assert_eq!(app.post("/p1/done", body.to_string()).await.status, 200);
        seq += 1;
        wait_for("the frame", Duration::from_secs(5), || async {
            (app.hub.flushed("p1") >= seq).then_some(())
        })
        .await;
        if overflowed {
            break;
        }
        overflowed = app.hub.queued("p1") >= WATCHER_BUFFER;
    }
    assert!(overflowed, "the watcher never fell a buffer behind");

    // Now read: consecutive events up to where the buffer was lost, then a snapshot, then on.
    let mut known = 0;
    let mut snapshots = 0;
    while known < seq {
        let msg = next_json(&mut ws).await;
        if msg["type"] == "snapshot" {
            snapshots += 1;
            known = msg["board"]["seq"].as_u64().unwrap();
            continue;
        }
        let s = seqs(&msg);
        assert_eq!(s[0], known + 1, "a gap after {known}");
        known = *s.last().unwrap();
    }
    assert_eq!(snapshots, 1, "exactly one snapshot for the lag");
}

/// A project `p1` of 16,000 items of 2 KB each (so that socket buffers fill after a few
/// completions), a connection to the server with a 4 KiB receive buffer, not yet read, and the
/// item names.
pub async fn slow_reader_on_big_items() -> (TestApp, tokio::net::TcpStream, Vec<String>) {
    let app = TestApp::start().await;
    let long = "x".repeat(2000);
    let names: Vec<String> = (0..200 * 80).map(|i| format!("{long}{i:05}")).collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    app.project("p1", &refs).await;
    app.claim_all("p1").await;
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let stream = socket.connect(app.addr).await.unwrap();
    (app, stream, names)
}
