//! The fold: the per-downloader figures and the events are made from the completion log, each
//! entry exactly once, whichever process folds it, while `tracker check` counts the entries
//! not folded yet.

use server::store::{now_ms, DoneOutcome, DoneReport, Store};
use std::collections::{BTreeMap, HashSet};
use tests::TestApp;

/// A one-item done report of `who` from 192.0.2.7 with `bytes` bytes of `data`, version v1.
fn report(who: &str, item: &str, bytes: u64) -> DoneReport {
    DoneReport {
        downloader: who.into(),
        version: "v1".into(),
        ip: "192.0.2.7".into(),
        bytes: vec![("data".into(), bytes)],
        items: vec![item.to_string()],
        ..Default::default()
    }
}

const ITEMS: usize = 240;
const WHO: [&str; 3] = ["ann", "bob", "cy"];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn entries_fold_once_whoever_folds_and_check_counts_the_unfolded() {
    let app = TestApp::start().await;
    let names: Vec<String> = (0..ITEMS).map(|i| format!("f{i:03}")).collect();
    app.project(
        "fold",
        &names.iter().map(String::as_str).collect::<Vec<_>>(),
    )
    .await;
    // A second process's store: same Redis and namespace, its own connections and notes.
    let other = Store::connect(&app.redis_url, &app.namespace, 2, app.dir.join("other"))
        .await
        .unwrap();
    let now = now_ms();
    // Each downloader claims a third; the reports (one item each, 7 bytes) go in batches of
    // 10 through the second store while both stores fold as fast as they can.
    let mut reports = Vec::new();
    for who in WHO {
        for item in app.claim_items("fold", who, ITEMS / 3, now).await {
            reports.push(report(who, &item, 7));
        }
    }
    assert_eq!(reports.len(), ITEMS);
    let done = tokio::sync::watch::channel(false);
    let folders: Vec<_> = [app.store.clone(), other.clone()]
        .into_iter()
        .map(|s| {
            let mut stop = done.1.clone();
            tokio::spawn(async move {
                let mut folded = 0;
                while !*stop.borrow_and_update() {
                    folded += s.figures().fold("fold").await.unwrap();
                    tokio::task::yield_now().await;
                }
                folded
            })
        })
        .collect();
    for (i, batch) in reports.chunks(10).enumerate() {
        let out = other
            .queue()
            .done_batch("fold", batch, now + i as u64)
            .await
            .unwrap();
        assert!(out
            .iter()
            .all(|o| matches!(o, DoneOutcome::Recorded { counted: 1, .. })));
        if i == 5 {
            // While entries may wait unfolded: the check counts them with the totals.
            assert!(app.store.upkeep().check("fold").await.unwrap().is_empty());
        }
    }
    done.0.send(true).unwrap();
    let mut by_folders = 0;
    for f in folders {
        by_folders += f.await.unwrap();
    }
    let last = app.store.figures().fold("fold").await.unwrap();
    // The app's own folder may have taken some; none was folded twice (below).
    assert!(by_folders + last <= ITEMS as u64, "{by_folders} + {last}");
    assert_eq!(app.store.figures().unfolded("fold").await.unwrap(), (0, 0));

    let board = app
        .store
        .figures()
        .leaderboard("fold", -1, 0)
        .await
        .unwrap()
        .unwrap();
    let totals: BTreeMap<&str, (u64, u64)> = board
        .downloaders
        .iter()
        .map(|d| (d.name.as_str(), (d.items, d.bytes)))
        .collect();
    let third = (ITEMS / 3) as u64;
    let want: BTreeMap<&str, (u64, u64)> = WHO.iter().map(|w| (*w, (third, 7 * third))).collect();
    assert_eq!(
        totals, want,
        "each entry folded once into its downloader's totals"
    );
    // One event per entry, numbered 1..=N without a gap or a repeat, each carrying its
    // downloader's running totals.
    let events = server::hub::history::recent(&app.store, "fold", ITEMS)
        .await
        .unwrap();
    assert_eq!(events.len(), ITEMS);
    let seqs: HashSet<u64> = events.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, (1..=ITEMS as u64).collect::<HashSet<_>>());
    let mut running: BTreeMap<&str, u64> = BTreeMap::new();
    for e in events.iter().rev() {
        let n = running.entry(e.downloader.as_str()).or_default();
        *n += 1;
        assert_eq!(e.dl_items, *n, "{e:?}");
        assert_eq!(e.dl_bytes, 7 * *n, "{e:?}");
        assert!(e.counts.done >= *n, "{e:?}");
    }
    assert!(app.store.upkeep().check("fold").await.unwrap().is_empty());
}

/// `fold.lua` writes a run only if the event sequence number and each downloader's totals are
/// still those the tracker made the run's events from (read by `fold_base.lua` just before):
/// a run made from figures another writer has moved since is refused whole, nothing written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_made_from_moved_figures_is_refused_whole() {
    use fred::prelude::*;
    let app = TestApp::start().await;
    app.project("stale", &["x"]).await;
    let store = &app.store;
    let k = store.keys().project("stale");
    let redis = store.client();
    // A fold cursor and no unfolded entries: the tracker's own folder leaves the project alone.
    let _: () = redis.hset(k.stats(), ("folded", "0-1")).await.unwrap();
    let t = now_ms();
    let event = r#"{"time":1,"downloader":"ann","seq":1,"dl_items":1}"#;
    let fold = |seq: &'static str, base_items: &'static str| {
        let args: Vec<Value> = vec![
            k.prefix().into(),
            "0-1".into(),
            "5-0".into(),
            "5-1".into(),
            1.into(),
            1.into(),
            ((t / 60_000) as i64).into(),
            2000.into(),
            100_000.into(),
            "".into(),
            seq.into(),
            // One downloader: its sums over the run, then its totals the events were made from.
            1.into(),
            "ann".into(),
            1.into(),
            "7".into(),
            "v1".into(),
            (t as i64).into(),
            base_items.into(),
            "0".into(),
            0.into(),
            // One event, the last one of it for the history, then the events joined.
            1.into(),
            1.into(),
            event.into(),
            event.into(),
            0.into(),
        ];
        let keys = k.fold_keys(&app::model::month_name(t));
        async move {
            store
                .scripts()
                .run::<String>(redis, &store.scripts().fold, keys, args)
                .await
                .unwrap()
        }
    };
    let unchanged = || async {
        let seq: Option<String> = redis.get(k.seq()).await.unwrap();
        let folded: Option<String> = redis.hget(k.stats(), "folded").await.unwrap();
        let ann: Option<f64> = redis.zscore(k.dl_items(), "ann").await.unwrap();
        let history: u64 = redis.llen(k.history()).await.unwrap();
        assert_eq!(
            (seq, folded.as_deref(), ann, history),
            (None, Some("0-1"), None, 0),
            "a refused run writes nothing"
        );
    };
    // ann has no items yet, but the events were made from 5.
    assert_eq!(fold("0", "5").await, "stale");
    unchanged().await;
    // The events were numbered from 3, but the sequence is at 0.
    assert_eq!(fold("3", "0").await, "stale");
    unchanged().await;
    // Made from the figures as they are: written, events as given.
    assert_eq!(fold("0", "0").await, "folded");
    let seq: Option<String> = redis.get(k.seq()).await.unwrap();
    let folded: Option<String> = redis.hget(k.stats(), "folded").await.unwrap();
    let ann: Option<f64> = redis.zscore(k.dl_items(), "ann").await.unwrap();
    let history: Vec<String> = redis.lrange(k.history(), 0, -1).await.unwrap();
    assert_eq!(
        (seq.as_deref(), folded.as_deref(), ann, history),
        (Some("1"), Some("5-0"), Some(1.0), vec![event.to_string()])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_run_publishes_every_event_and_keeps_its_last_ones_in_the_history() {
    use server::keys::HISTORY_RUN_TAIL;
    let n = HISTORY_RUN_TAIL + 44;
    let app = TestApp::start().await;
    let names: Vec<String> = (0..n).map(|i| format!("h{i:03}")).collect();
    app.project(
        "long",
        &names.iter().map(String::as_str).collect::<Vec<_>>(),
    )
    .await;
    let now = now_ms();
    let reports: Vec<DoneReport> = app
        .claim_items("long", "ann", n, now)
        .await
        .into_iter()
        .map(|item| report("ann", &item, 1))
        .collect();
    // One call: every entry is logged before any fold, so they fold as one run, whoever folds.
    let out = app
        .store
        .queue()
        .done_batch("long", &reports, now)
        .await
        .unwrap();
    assert!(out
        .iter()
        .all(|o| matches!(o, DoneOutcome::Recorded { counted: 1, .. })));
    app.store.figures().fold("long").await.unwrap();
    assert_eq!(app.store.figures().unfolded("long").await.unwrap(), (0, 0));
    // Numbered through; the history holds the run's last events, newest first.
    let events = server::hub::history::recent(&app.store, "long", n)
        .await
        .unwrap();
    let seqs: Vec<u64> = events.iter().map(|e| e.seq).collect();
    let want: Vec<u64> = (n - HISTORY_RUN_TAIL + 1..=n)
        .rev()
        .map(|s| s as u64)
        .collect();
    assert_eq!(seqs, want);
    // A viewer that saw the run's first events catches up from the history; one that saw
    // none of them needs a snapshot.
    let after = server::hub::history::events_after(&app.store, "long", 100)
        .await
        .unwrap()
        .expect("the history reaches back to 101");
    assert_eq!(after.len(), n - 100);
    assert!(server::hub::history::events_after(&app.store, "long", 0)
        .await
        .unwrap()
        .is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_chart_takes_a_point_when_a_minute_starts_and_shows_the_totals_of_the_last() {
    use fred::prelude::*;
    let app = TestApp::start().await;
    app.project("chart", &["c1", "c2", "c3", "c4"]).await;
    let now = now_ms();
    let items = app.claim_items("chart", "ann", 4, now).await;
    let m0 = now / 60_000 + 1;
    let (t0, t1) = (m0 * 60_000, (m0 + 1) * 60_000);
    let done = |item: &str, at: u64| {
        let report = report("ann", item, 10);
        let store = app.store.clone();
        async move {
            let out = store
                .queue()
                .done_batch("chart", &[report], at)
                .await
                .unwrap();
            assert!(matches!(
                out[..],
                [DoneOutcome::Recorded { counted: 1, .. }]
            ));
        }
    };
    let k = app.store.keys().project("chart");
    let points = || async {
        let raw: Vec<String> = app.store.client().lrange(k.chart(), 0, -1).await.unwrap();
        let charts = app.store.figures().charts("chart", 0).await.unwrap();
        (raw, charts.items, charts.bytes)
    };
    let (s0, s1) = (m0 * 60, (m0 + 1) * 60);
    done(&items[0], t0 + 1_000).await;
    done(&items[1], t0 + 2_000).await;
    // The minute's point was written by its first batch; the chart shows the totals now.
    assert_eq!(
        points().await,
        (vec![format!("{m0} 1 10")], vec![(s0, 2)], vec![(s0, 20)])
    );
    done(&items[2], t1 + 1_000).await;
    done(&items[3], t1 + 2_000).await;
    // A new minute closed the last one with its totals at its end.
    assert_eq!(
        points().await,
        (
            vec![format!("{m0} 2 20"), format!("{} 3 30", m0 + 1)],
            vec![(s0, 2), (s1, 4)],
            vec![(s0, 20), (s1, 40)]
        )
    );
}

/// Issue 52: with the project's archive directory unwritable (a full disk, a wrong mount),
/// 147,300 one-item reports left 100,027 log entries in Redis and nothing on disk: the fold
/// trimmed the stream to its length whatever was archived. Now only the archive trims it, and
/// only through what its file holds: every completion record stays until it is on disk.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_log_that_cannot_be_archived_keeps_every_entry_in_redis() {
    use fred::prelude::*;
    let app = TestApp::start().await;
    // Past the length the fold used to keep (100,000) and its slack (1,000).
    const N: usize = 102_500;
    app.project("arch", &[]).await;
    app.settings("arch", |s| s.log_keep = 1_000).await;
    let names: Vec<String> = (0..N).map(|i| format!("a{i:06}")).collect();
    for chunk in names.chunks(20_000) {
        app.store
            .queue()
            .add_items("arch", "todo", chunk)
            .await
            .unwrap();
    }
    let now = now_ms();
    let mut claimed = Vec::with_capacity(N);
    while claimed.len() < N {
        let got = app.claim_items("arch", "ann", 1000, now).await;
        assert!(!got.is_empty());
        claimed.extend(got);
    }
    // The archive directory is a file: nothing can be written under it.
    let blocked = app.dir.join("not-a-directory");
    std::fs::write(&blocked, b"x").unwrap();
    let offloader =
        server::store::offload::offloader::Offloader::new(app.store.clone(), blocked.clone());
    for (i, batch) in claimed.chunks(1000).enumerate() {
        let reports: Vec<DoneReport> = batch.iter().map(|item| report("ann", item, 1)).collect();
        let out = app
            .store
            .queue()
            .done_batch("arch", &reports, now + i as u64)
            .await
            .unwrap();
        assert!(out
            .iter()
            .all(|o| matches!(o, DoneOutcome::Recorded { .. })));
        app.store.figures().fold("arch").await.unwrap();
        // Now and then the offloader tries to archive, and fails: nothing may leave the log.
        if i % 25 == 0 {
            let _ = offloader.tick("arch", false).await;
        }
    }
    while app.store.figures().fold("arch").await.unwrap() > 0 {}
    let _ = offloader.tick("arch", false).await;
    let len: u64 = app
        .store
        .client()
        .xlen(app.store.keys().project("arch").log())
        .await
        .unwrap();
    assert_eq!(len as usize, N, "every completion record is still in Redis");
    assert_eq!(std::fs::read(&blocked).unwrap(), b"x");

    // Once the directory can be written, the archive takes them and only then trims them.
    offloader.release("arch").await.unwrap();
    let good = server::store::offload::offloader::Offloader::new(
        app.store.clone(),
        app.dir.join("archive"),
    );
    let mut archived = 0;
    for _ in 0..20 {
        if let Ok(Some(did)) = good.tick("arch", false).await {
            archived += did.logged;
        }
    }
    let left: u64 = app
        .store
        .client()
        .xlen(app.store.keys().project("arch").log())
        .await
        .unwrap();
    assert_eq!(
        archived + left,
        N as u64,
        "archived or still in Redis, each once"
    );
    assert!(
        left < 20_000,
        "the archive trimmed what it wrote: {left} left"
    );
}

/// Archiving failing for long, the log does not fill Redis: past its budget its oldest entries
/// go, only folded ones, counted as lost; the panel's figures, `/metrics` and the project's
/// offload state say so.
#[tokio::test]
async fn past_its_budget_an_unarchivable_log_sheds_its_oldest_folded_entries_counted() {
    use fred::prelude::*;
    let app = TestApp::start_with(|c| c.admin_token = Some("metrics-token".into())).await;
    const N: usize = 3_000;
    const BUDGET: u64 = 2_000;
    app.project("shed", &[]).await;
    app.settings("shed", |s| s.log_keep = 1_000).await;
    let names: Vec<String> = (0..N).map(|i| format!("s{i:05}")).collect();
    app.store
        .queue()
        .add_items("shed", "todo", &names)
        .await
        .unwrap();
    let now = now_ms();
    let mut claimed = Vec::with_capacity(N);
    while claimed.len() < N {
        claimed.extend(app.claim_items("shed", "ann", 1000, now).await);
    }
    let blocked = app.dir.join("not-a-directory");
    std::fs::write(&blocked, b"x").unwrap();
    let offloader = server::store::offload::offloader::Offloader::new(app.store.clone(), blocked)
        .with_log_budget(BUDGET);
    let log_len = || async {
        let n: u64 = app
            .store
            .client()
            .xlen(app.store.keys().project("shed").log())
            .await
            .unwrap();
        n
    };
    let reports: Vec<DoneReport> = claimed.iter().map(|i| report("ann", i, 1)).collect();
    for (i, chunk) in reports.chunks(500).enumerate() {
        app.store
            .queue()
            .done_batch("shed", chunk, now + i as u64)
            .await
            .unwrap();
    }
    // Folded (by the tracker's folder, or here), the oldest past the budget go, counted.
    while app.store.figures().fold("shed").await.unwrap() > 0 {}
    assert!(
        offloader.tick("shed", false).await.is_err(),
        "archiving fails"
    );
    assert_eq!(log_len().await, BUDGET);
    let state = app.store.offload().offload_summary("shed").await.unwrap();
    assert!(state.failing, "{state:?}");
    assert_eq!(state.log_entries, BUDGET);
    assert_eq!(state.log_lost, N as u64 - BUDGET);
    assert_eq!(
        app.counts("shed").await.done,
        N as u64,
        "every item still done once"
    );
    tests::panel::account(&app, "root", server::store::Role::Global, &[]).await;
    let mut p = tests::panel::Panel::logged_in(&app, "root").await;
    let panel = tests::panel::json(&p.get("/admin/api/shed/offload").await);
    assert_eq!(panel["log_budget"], server::limits::LOG_BUDGET, "{panel}");
    assert_eq!(panel["failing"], true, "{panel}");
    assert_eq!(panel["log_lost"], 1000, "{panel}");
    let metrics = app
        .send(
            app.http
                .get(app.url("/metrics"))
                .header("authorization", "Bearer metrics-token"),
        )
        .await;
    assert_eq!(metrics.status, 200);
    for line in [
        "tracker_log_entries_lost_total{project=\"shed\"} 1000",
        "tracker_log_entries{project=\"shed\"} 2000",
        "tracker_offload_failing{project=\"shed\"} 1",
    ] {
        assert!(metrics.body.contains(line), "{line}: {}", metrics.body);
    }
}

/// The log's budget drops only entries already folded into the figures: with the fold cursor
/// behind, the entries after it stay, whatever the budget.
#[tokio::test]
async fn the_log_budget_never_drops_an_entry_not_yet_folded() {
    use fred::prelude::*;
    let app = TestApp::start().await;
    app.project("raw", &[]).await;
    let k = app.store.keys().project("raw");
    let client = app.store.client();
    for i in 1..=100u64 {
        let _: String = client
            .xadd(k.log(), false, None, format!("{i}-1"), ("t", i.to_string()))
            .await
            .unwrap();
    }
    let len = || async {
        let n: u64 = client.xlen(k.log()).await.unwrap();
        n
    };
    let lost = || async {
        let n: Option<u64> = client.hget(k.stats(), "log_lost").await.unwrap();
        n.unwrap_or(0)
    };
    // No fold cursor: nothing is known folded.
    assert_eq!(
        app.store.offload().shed_log("raw", 10, 1000).await.unwrap(),
        0
    );
    let _: () = client.hset(k.stats(), ("folded", "40-1")).await.unwrap();
    assert_eq!(
        app.store.offload().shed_log("raw", 10, 1000).await.unwrap(),
        40
    );
    assert_eq!((len().await, lost().await), (60, 40));
    assert_eq!(
        app.store.offload().shed_log("raw", 10, 1000).await.unwrap(),
        0,
        "the rest is not folded"
    );
    let _: () = client.hset(k.stats(), ("folded", "100-1")).await.unwrap();
    // At most `step` a call.
    assert_eq!(
        app.store.offload().shed_log("raw", 10, 30).await.unwrap(),
        30
    );
    assert_eq!(
        app.store.offload().shed_log("raw", 10, 30).await.unwrap(),
        20
    );
    assert_eq!((len().await, lost().await), (10, 90));
    assert_eq!(
        app.store.offload().shed_log("raw", 10, 30).await.unwrap(),
        0
    );
}
