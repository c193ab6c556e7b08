//! Failover on a Redis Cluster of 3 masters and 3 replicas: the master serving a project is
//! SIGKILLed; its warrior calls answer (503 with `Retry-After`, never hang) while the failover
//! lasts, then resume on the promoted replica by themselves, and no item is lost.

use futures::StreamExt;
use std::time::{Duration, Instant};
use tests::{cluster::Cluster, TestApp};
use tokio_tungstenite::tungstenite::Message;

/// The longest a warrior call may take while its master is down. fred's cluster client
/// resynchronises inline: every command of the process waits until the failed master's replica
/// is promoted (measured: 3 to 6 s with a 2 s node timeout), so the tracker's Redis deadline
/// (`TRACKER_REDIS_DEADLINE`, 500 ms here) answers 503 first; 3 s, six times the deadline and
/// under the shortest failover, tells the two apart on a busy machine.
const CALL_DEADLINE: Duration = Duration::from_secs(3);

/// How long the failover may take (node timeout 2 s, then an election, on a busy machine).
const FAILOVER_DEADLINE: Duration = Duration::from_secs(60);

/// What one claim answered, and when.
#[derive(Debug)]
struct Call {
    at: Duration,
    took: Duration,
    status: u16,
    retry_after: Option<String>,
}

async fn claim(app: &TestApp, http: &reqwest::Client, slug: &str) -> (Call, String) {
    let started = Instant::now();
    let resp = http
        .post(app.url(&format!("/{slug}/request")))
        .body(r#"{"downloader":"alice","api_version":"2"}"#)
        .send()
        .await
        .unwrap_or_else(|e| {
            panic!("a claim of {slug} got no answer within {CALL_DEADLINE:?}: {e}")
        });
    let status = resp.status().as_u16();
    let retry_after = resp
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .map(String::from);
    let body = resp.text().await.unwrap_or_default();
    let call = Call {
        at: Duration::ZERO,
        took: started.elapsed(),
        status,
        retry_after,
    };
    (call, body)
}

/// A call during the failover: served, or 503 with `Retry-After`, in time.
fn assert_answered(call: &Call, body: &str) {
    assert!(call.took <= CALL_DEADLINE, "{call:?}");
    if call.status != 200 {
        assert_eq!(call.status, 503, "{call:?} {body}");
        assert!(
            call.retry_after.is_some(),
            "503 without Retry-After: {call:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_master_fails_over_and_its_project_resumes_with_nothing_lost() {
    let started = Instant::now();
    let cluster = Cluster::start(3, 1, 2_000);
    let formed = started.elapsed();
    let app = TestApp::start_on_cluster_with(&cluster, |c| c.limits.redis_deadline_ms = 500).await;
    let placed = cluster.slugs_on_every_master("f");
    let (victim, master) = placed[0].clone();
    let (bystander, _) = placed[1].clone();
    let items: Vec<String> = (0..100).map(|i| format!("i{i}")).collect();
    let refs: Vec<&str> = items.iter().map(String::as_str).collect();
    app.project(&victim, &refs).await;
    app.project(&bystander, &refs).await;

    let url = format!("ws://{}/{victim}/ws", app.addr);
    let (mut ws, _) = tokio_tungstenite::connect_async(url.clone())
        .await
        .expect("connect");
    assert_eq!(super::live::next_json(&mut ws).await["type"], "snapshot");
    for _ in 0..10 {
        let item = app.claim(&victim, "alice").await;
        assert_eq!(app.done(&victim, "alice", &item, 1).await.status, 200);
    }
    // Asynchronous replication: only what the replica has survives the master.
    cluster.wait_replicated(master, Duration::from_secs(10));

    let http = reqwest::Client::builder()
        .timeout(CALL_DEADLINE)
        .build()
        .expect("client");
    let killed = Instant::now();
    cluster.kill(master);
    // Meanwhile the other project, on a master that lives, answers too (served, or 503 while
    // the client resynchronises).
    let other = async {
        let (mut other, body) = claim(&app, &http, &bystander).await;
        other.at = killed.elapsed();
        assert_answered(&other, &body);
        other
    };
    let victim_calls = async {
        let mut calls = Vec::new();
        loop {
            let (mut call, body) = claim(&app, &http, &victim).await;
            call.at = killed.elapsed();
            let status = call.status;
            calls.push(call);
            if status == 200 {
                let v: serde_json::Value = serde_json::from_str(&body).expect("claim JSON");
                let item = v["item_name"].as_str().expect("item_name").to_string();
                return (calls, item);
            }
            assert_answered(&calls[calls.len() - 1], &body);
            assert!(
                killed.elapsed() < FAILOVER_DEADLINE,
                "no failover within {FAILOVER_DEADLINE:?}: {calls:#?}"
            );
            // A warrior's pause between tries (it would wait Retry-After).
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    };
    let (other, (calls, resumed)) = tokio::join!(other, victim_calls);
    let recovery = calls.last().map(|c| c.at);
    eprintln!(
        "cluster formed in {formed:?}; claims resumed {recovery:?} after the kill: {calls:?}; \
         the other project's claim: {other:?}"
    );
    let promoted = cluster.master_of(&format!("{{{victim}}}"));
    assert!(promoted.is_some_and(|p| p != master), "a replica took over");

    let (after, _) = claim(&app, &http, &bystander).await;
    assert_eq!(after.status, 200, "the other project is served");

    assert_eq!(app.done(&victim, "alice", &resumed, 1).await.status, 200);
    // The viewer follows the project on its new master: the completion comes as an event, or in
    // the snapshot of a resync. While Redis was out of reach the tracker may have closed the
    // socket (it had no snapshot to send); the viewer then reconnects, as the page does.
    let deadline = Instant::now() + FAILOVER_DEADLINE;
    let mut reconnects = 0;
    loop {
        assert!(
            Instant::now() < deadline,
            "the viewer never saw the completion"
        );
        let next = tokio::time::timeout(Duration::from_secs(20), ws.next())
            .await
            .expect("a message or the socket's end within 20 s");
        let msg: serde_json::Value = match next {
            Some(Ok(Message::Text(t))) => serde_json::from_str(t.as_str()).expect("JSON"),
            Some(Ok(_)) => continue,
            None | Some(Err(_)) => {
                reconnects += 1;
                ws = tests::wait_for("the viewer to reconnect", FAILOVER_DEADLINE, || async {
                    tokio_tungstenite::connect_async(url.clone())
                        .await
                        .ok()
                        .map(|(ws, _)| ws)
                })
                .await;
                continue;
            }
        };
        let in_events = msg["events"].as_array().is_some_and(|events| {
            events.iter().any(|e| {
                e["items"]
                    .as_array()
                    .is_some_and(|i| i.contains(&resumed.as_str().into()))
            })
        });
        if in_events || msg["board"]["counts"]["done"].as_u64() == Some(11) {
            break;
        }
    }
    eprintln!("the viewer reconnected {reconnects} times");

    let counts = app.counts(&victim).await;
    assert_eq!(counts.done, 11);
    assert_eq!(
        counts.todo + counts.out + counts.done,
        100,
        "no item lost: {counts:?}"
    );
    app.assert_invariant(&victim).await;
    eprintln!("failover test took {:?}", started.elapsed());
}
