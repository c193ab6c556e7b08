//! The leaderboard websocket.

use futures::StreamExt;
use std::time::Duration;
use tests::TestApp;
use tokio_tungstenite::tungstenite::Message;

/// The next text message of `ws` as JSON (20 s at most: a loaded 2-core machine is slow).
pub(super) async fn next_json(
    ws: &mut (impl StreamExt<Item = Result<Message, tokio_tungstenite::tungstenite::Error>> + Unpin),
) -> serde_json::Value {
    loop {
        let msg = tokio::time::timeout(Duration::from_secs(20), ws.next())
            .await
            .expect("a message within 20 s")
            .expect("socket open")
            .expect("no error");
        if let Message::Text(t) = msg {
            return serde_json::from_str(t.as_str()).expect("JSON message");
        }
    }
}

type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// A tracker with project `p1` (items `a`, `b`), a viewer of it, and the viewer's first message.
async fn watch_p1() -> (TestApp, Socket, serde_json::Value) {
    let app = TestApp::start().await;
    app.project("p1", &["a", "b"]).await;
    let (mut ws, _) = tokio_tungstenite::connect_async(format!("ws://{}/p1/ws", app.addr))
        .await
        .expect("connect");
    let first = next_json(&mut ws).await;
    (app, ws, first)
}

#[tokio::test]
async fn websocket_receives_the_event_of_a_done() {
    let (app, mut ws, first) = watch_p1().await;
    assert_eq!(first["type"], "snapshot");
    assert_eq!(first["board"]["counts"]["todo"], 2);
    let seq = first["board"]["seq"].as_u64().unwrap();

    let item = app.claim("p1", "bob").await;
    assert_eq!(app.done("p1", "bob", &item, 99).await.status, 200);

    let ev = next_json(&mut ws).await;
    assert_eq!(ev["type"], "events");
    let e = &ev["events"][0];
    assert_eq!(e["seq"].as_u64().unwrap(), seq + 1);
    assert_eq!(e["downloader"], "bob");
    assert_eq!(e["items"][0], item.as_str());
    assert_eq!(e["bytes"], 99);
    assert_eq!(
        e["counts"],
        serde_json::json!({"todo": 1, "out": 0, "done": 1, "failed": 0})
    );
}

#[tokio::test]
async fn the_tracker_statistics_follow_completions_without_a_reload() {
    let (app, mut ws, first) = watch_p1().await;
    assert_eq!(first["board"]["tracker"]["unique_downloaders_30d"], 0);
    assert!(first["board"]["tracker"]["item_request_serve_rate"].is_null());

    let item = app.claim("p1", "bob").await;
    assert_eq!(app.done("p1", "bob", &item, 99).await.status, 200);
    // The event comes first; the statistics, read once for all viewers every few seconds
    // while items complete, follow in a later message (next_json waits 20 s at most).
    let tracker = loop {
        let msg = next_json(&mut ws).await;
        assert_eq!(msg["type"], "events");
        if !msg["tracker"].is_null() {
            break msg["tracker"].clone();
        }
    };
    assert_eq!(tracker["unique_downloaders_30d"], 1);
    assert_eq!(tracker["item_request_serve_rate"], 1.0);
}

#[tokio::test]
async fn websocket_of_unknown_project_is_refused() {
    let app = TestApp::start().await;
    assert!(
        tokio_tungstenite::connect_async(format!("ws://{}/nope/ws", app.addr))
            .await
            .is_err()
    );
}

#[tokio::test]
async fn a_viewer_resumes_from_its_sequence_number_or_gets_a_snapshot() {
    let app = TestApp::start().await;
    app.project("p1", &["a", "b", "c"]).await;
    for _ in 0..3 {
        let item = app.claim("p1", "bob").await;
        app.done("p1", "bob", &item, 1).await;
    }
    let (mut ws, _) = tokio_tungstenite::connect_async(format!("ws://{}/p1/ws?since=1", app.addr))
        .await
        .unwrap();
    let first = next_json(&mut ws).await;
    assert_eq!(first["type"], "events");
    let seqs: Vec<u64> = first["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["seq"].as_u64().unwrap())
        .collect();
    assert_eq!(seqs, [2, 3], "exactly the missed events");

    // History trimmed below the viewer's position: a snapshot, not a silent gap.
    let key = format!("{}:{{p1}}:history", app.namespace);
    let _: () = fred::prelude::ListInterface::ltrim(app.store.client(), &key, 0, 0)
        .await
        .unwrap();
    let (mut ws, _) = tokio_tungstenite::connect_async(format!("ws://{}/p1/ws?since=0", app.addr))
        .await
        .unwrap();
    let first = next_json(&mut ws).await;
    assert_eq!(first["type"], "snapshot");
    assert_eq!(first["board"]["seq"], 3);
}

/// The sequence numbers of an events message.
pub(super) fn seqs(msg: &serde_json::Value) -> Vec<u64> {
    assert_eq!(msg["type"], "events", "{msg}");
    msg["events"]
        .as_array()
        .expect("events")
        .iter()
        .map(|e| e["seq"].as_u64().expect("seq"))
        .collect()
}

/// `n` items named `{prefix}0000`...
pub(super) fn items(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}{i:04}")).collect()
}

#[tokio::test]
async fn a_resumed_viewer_gets_the_missed_events_then_live_ones_each_once() {
    let app = TestApp::start().await;
    let names = items("i", 300);
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    app.project("p1", &refs).await;
    app.claim_all("p1").await;
    for item in &names[..20] {
        assert_eq!(app.done("p1", "bob", item, 1).await.status, 200);
    }
    // Completions keep coming while the viewer reads the history and subscribes.
    let posting = async {
        for item in &names[20..] {
            assert_eq!(app.done("p1", "bob", item, 1).await.status, 200);
        }
    };
    let watching = async {
        let (mut ws, _) =
            tokio_tungstenite::connect_async(format!("ws://{}/p1/ws?since=10", app.addr))
                .await
                .expect("connect");
        let mut got = Vec::new();
        while got.last() != Some(&300) {
            got.extend(seqs(&next_json(&mut ws).await));
        }
        got
    };
    let ((), got) = tokio::join!(posting, watching);
    assert_eq!(
        got,
        (11..=300).collect::<Vec<u64>>(),
        "each event once, in order"
    );
}

#[tokio::test]
async fn a_viewer_ahead_of_the_project_gets_a_snapshot() {
    let app = TestApp::start().await;
    app.project("p1", &["a"]).await;
    app.claim_all("p1").await;
    app.done("p1", "bob", "a", 1).await;
    let (mut ws, _) = tokio_tungstenite::connect_async(format!("ws://{}/p1/ws?since=99", app.addr))
        .await
        .unwrap();
    let first = next_json(&mut ws).await;
    assert_eq!(
        first["type"], "snapshot",
        "a viewer of an older database starts over"
    );
    assert_eq!(first["board"]["seq"], 1);
}

#[tokio::test]
async fn a_bad_since_is_refused() {
    let app = TestApp::start().await;
    app.project("p1", &[]).await;
    match tokio_tungstenite::connect_async(format!("ws://{}/p1/ws?since=abc", app.addr)).await {
        Err(tokio_tungstenite::tungstenite::Error::Http(resp)) => {
            assert_eq!(resp.status(), 400);
            let body = String::from_utf8_lossy(resp.body().as_deref().unwrap_or_default());
            assert!(body.contains("since"), "{body}");
        }
        other => panic!("expected a 400, got {other:?}"),
    }
}

/// The next message of `ws` that is not text (20 s at most); `None` when the stream ended.
async fn next_control(ws: &mut Socket) -> Option<Message> {
    loop {
        match tokio::time::timeout(Duration::from_secs(20), ws.next())
            .await
            .expect("a message within 20 s")
        {
            Some(Ok(Message::Text(_))) => continue,
            Some(Ok(msg)) => return Some(msg),
            Some(Err(_)) | None => return None,
        }
    }
}

#[tokio::test]
async fn a_viewer_is_answered_by_the_protocol_pings_data_and_close() {
    use futures::SinkExt;
    use tokio_tungstenite::tungstenite::protocol::{frame::coding::CloseCode, CloseFrame};
    let (app, mut ws, _) = watch_p1().await;
    ws.send(Message::Ping(b"are you there".to_vec().into()))
        .await
        .unwrap();
    assert_eq!(
        next_control(&mut ws).await,
        Some(Message::Pong(b"are you there".to_vec().into()))
    );
    // What a viewer says is read and dropped: the events keep coming.
    ws.send(Message::Text("hello".into())).await.unwrap();
    let item = app.claim("p1", "bob").await;
    assert_eq!(app.done("p1", "bob", &item, 1).await.status, 200);
    assert_eq!(next_json(&mut ws).await["events"][0]["items"][0], item);

    ws.send(Message::Close(Some(CloseFrame {
        code: CloseCode::Normal,
        reason: "bye".into(),
    })))
    .await
    .unwrap();
    match next_control(&mut ws).await {
        Some(Message::Close(Some(f))) => assert_eq!(f.code, CloseCode::Normal),
        other => panic!("expected the close answered, got {other:?}"),
    }
    assert_eq!(
        next_control(&mut ws).await,
        None,
        "then the connection ends"
    );
}

#[tokio::test]
async fn a_viewer_that_sends_too_much_is_closed_with_1009() {
    use futures::SinkExt;
    use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
    let (_app, mut ws, _) = watch_p1().await;
    ws.send(Message::Text("x".repeat(20 * 1024).into()))
        .await
        .unwrap();
    match next_control(&mut ws).await {
        Some(Message::Close(Some(f))) => assert_eq!(f.code, CloseCode::Size),
        other => panic!("expected a close with 1009, got {other:?}"),
    }
}

#[tokio::test]
async fn a_plain_get_of_the_websocket_is_refused_with_the_reason() {
    let app = TestApp::start().await;
    app.project("p1", &[]).await;
    let reply = app.get("/p1/ws").await;
    assert_eq!(reply.status, 400);
    assert!(reply.body.contains("WebSocket upgrade"), "{}", reply.body);
    let old = app
        .send(
            app.http
                .get(app.url("/p1/ws"))
                .header("connection", "Upgrade")
                .header("upgrade", "websocket")
                .header("sec-websocket-version", "8")
                .header("sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ=="),
        )
        .await;
    assert_eq!(old.status, 400);
    assert!(old.body.contains("must be 13"), "{}", old.body);
}
