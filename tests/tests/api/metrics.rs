//! `GET /metrics`: who may read it, figures that agree with known traffic, and series that grow
//! with projects, never with downloaders.

use server::store::{now_ms, ClaimOutcome, DoneReport};
use tests::{who, TestApp};

const TOKEN: &str = "metrics-test-token";

async fn scrape(app: &TestApp, token: Option<&str>) -> tests::Reply {
    let mut req = app.http.get(app.url("/metrics"));
    if let Some(t) = token {
        req = req.header("authorization", format!("Bearer {t}"));
    }
    app.send(req).await
}

/// The value of the sample line `series` (name and labels, as written), if there is one.
fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .and_then(|v| v.parse().ok())
}

/// The sample lines (series), not counting the comments.
fn series(text: &str) -> usize {
    text.lines().filter(|l| !l.starts_with('#')).count()
}

#[tokio::test]
async fn metrics_need_a_token_unless_public_and_agree_with_the_traffic() {
    let app = TestApp::start_with(|c| c.admin_token = Some(TOKEN.into())).await;
    app.project("p", &["a", "b", "c", "d", "e"]).await;
    let r = scrape(&app, None).await;
    assert_eq!(r.status, 401, "{}", r.body);
    let r = scrape(&app, Some("wrong")).await;
    assert_eq!(r.status, 401, "{}", r.body);

    let items = app.claim_n("p", "alice", 3).await;
    assert_eq!(items.len(), 3);
    for item in &items[..2] {
        assert_eq!(app.done("p", "alice", item, 100).await.status, 200);
    }
    // A duplicate done, a refusal for an old version, and a release.
    assert_eq!(app.done("p", "alice", &items[0], 100).await.status, 200);
    app.settings("p", |s| s.min_version = "20240101.02".into())
        .await;
    let old = app
        .post(
            "/p/request",
            r#"{"downloader":"bob","version":"20240101.01"}"#,
        )
        .await;
    assert_eq!(old.status, 455, "{}", old.body);
    app.settings("p", |s| s.min_version = String::new()).await;
    let released = app
        .store
        .queue()
        .release_as("p", &items[2], "alice", "127.0.0.1", true, "", now_ms())
        .await
        .unwrap();
    assert!(released);
    let r = scrape(&app, Some(TOKEN)).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let kind = r.headers["content-type"].to_str().unwrap();
    assert!(kind.starts_with("application/openmetrics-text"), "{kind}");
    let t = &r.body;
    let at = |series: &str| sample(t, series).unwrap_or_else(|| panic!("no {series} in\n{t}"));
    assert_eq!(at(r#"tracker_items{project="p",state="todo"}"#), 3.0);
    assert_eq!(at(r#"tracker_items{project="p",state="claimed"}"#), 0.0);
    assert_eq!(at(r#"tracker_items{project="p",state="done"}"#), 2.0);
    assert_eq!(at(r#"tracker_items{project="p",state="failed"}"#), 0.0);
    assert_eq!(
        at(r#"tracker_items{project="p",state="on_disk_done"}"#),
        0.0
    );
    assert_eq!(at(r#"tracker_done_items_total{project="p"}"#), 2.0);
    assert_eq!(at(r#"tracker_done_bytes_total{project="p"}"#), 200.0);
    assert_eq!(
        at(r#"tracker_project_state{project="p",state="active"}"#),
        1.0
    );
    assert_eq!(
        at(r#"tracker_recent_events{project="p",event="claimed"}"#),
        3.0
    );
    assert_eq!(
        at(r#"tracker_recent_events{project="p",event="done_items"}"#),
        2.0
    );
    assert!(at(r#"tracker_recent_round_trip_seconds{project="p"}"#) >= 0.0);
    // The lifetime counters (tallied by this scrape: the project is new).
    let event = |e: &str| {
        at(&format!(
            r#"tracker_events_total{{project="p",event="{e}"}}"#
        ))
    };
    assert_eq!(event("claim_requests"), 2.0);
    assert_eq!(event("claim_requests_served"), 1.0);
    assert_eq!(event("claimed_items"), 3.0);
    assert_eq!(event("released_items"), 1.0);
    assert_eq!(event("duplicate_done_items"), 1.0);
    assert_eq!(event("failed_items"), 0.0);
    assert_eq!(
        at(r#"tracker_refusals_total{project="p",reason="old_version"}"#),
        1.0
    );
    assert_eq!(
        at(r#"tracker_refusals_total{project="p",reason="blocked"}"#),
        0.0
    );
    assert_eq!(
        at(r#"tracker_backfeed_records_total{project="p",result="added"}"#),
        0.0
    );
    // Both completions of a claim, within 10 s of it.
    assert_eq!(at(r#"tracker_round_trip_seconds_count{project="p"}"#), 2.0);
    assert_eq!(
        at(r#"tracker_round_trip_seconds_bucket{le="10.0",project="p"}"#),
        2.0
    );
    assert!(at(r#"tracker_round_trip_seconds_sum{project="p"}"#) < 20.0);
    // Every script call of this process, by script; a failing one counted by kind.
    assert!(at(r#"tracker_redis_script_duration_seconds_count{script="claim"}"#) >= 1.0);
    assert!(at(r#"tracker_redis_script_duration_seconds_count{script="tally"}"#) >= 1.0);
    let k = server::keys::Keys::new(&app.namespace).project("p");
    let scripts = app.store.scripts();
    let bad = vec!["x".into(), "not a minute".into(), "1".into(), "1".into()];
    let failed = scripts
        .run::<i64>(app.store.client(), &scripts.tally, vec![k.tally()], bad)
        .await;
    assert!(failed.is_err(), "{failed:?}");
    let again = scrape(&app, Some(TOKEN)).await.body;
    assert_eq!(
        sample(
            &again,
            r#"tracker_redis_script_errors_total{script="tally",kind="other"}"#
        ),
        Some(1.0),
        "{again}"
    );
    // Every failed Redis call of this process, by kind; and Redis's own view of the script
    // call that failed, beside its calls, time and latency.
    assert!(
        sample(&again, r#"tracker_redis_errors_total{kind="other"}"#).unwrap_or(0.0)
            > sample(t, r#"tracker_redis_errors_total{kind="other"}"#).unwrap_or(0.0),
        "{again}"
    );
    let redis = |text: &str, series: &str| sample(text, series).unwrap_or(0.0);
    assert!(
        redis(
            &again,
            r#"tracker_redis_command_failures_total{command="fcall",kind="failed"}"#
        ) > redis(
            t,
            r#"tracker_redis_command_failures_total{command="fcall",kind="failed"}"#
        ),
        "{again}"
    );
    assert!(at(r#"tracker_redis_commands_total{command="fcall"}"#) >= 3.0);
    assert!(at(r#"tracker_redis_command_seconds_total{command="fcall"}"#) > 0.0);
    // Commands the scripts run are Redis's too.
    assert!(at(r#"tracker_redis_commands_total{command="zadd"}"#) >= 1.0);
    assert!(at(r#"tracker_redis_command_latency_seconds{command="fcall",quantile="0.99"}"#) > 0.0);
    // The health probe pings every 250 ms: its round trips appear.
    let body = tests::wait_for("a ping", std::time::Duration::from_secs(10), || async {
        let body = scrape(&app, Some(TOKEN)).await.body;
        (redis(&body, "tracker_redis_ping_seconds_count") >= 1.0).then_some(body)
    })
    .await;
    assert!(
        redis(&body, "tracker_redis_ping_seconds_sum") > 0.0,
        "{body}"
    );
    // The offloader's progress: nothing offloaded in a `keep` project.
    assert_eq!(at(r#"tracker_offload_segments{project="p"}"#), 0.0);
    assert_eq!(
        at(r#"tracker_offload_last_error_timestamp_seconds{project="p"}"#),
        0.0
    );
    // The claim and the dones went through this process's batcher, each a script call.
    assert!(at(r#"tracker_script_batch_size_count{op="claim"}"#) >= 1.0);
    assert!(at(r#"tracker_script_batch_size_count{op="done"}"#) >= 1.0);
    assert!(at(r#"tracker_redis_script_duration_seconds_sum{script="done"}"#) > 0.0);
    assert_eq!(at("tracker_viewers"), 0.0);
    // The scrape's own reads fold first: nothing of this process's dones waits.
    assert_eq!(at(r#"tracker_fold_pending_entries{project="p"}"#), 0.0);
    assert!(at("tracker_redis_memory_bytes") > 0.0);
    // This process answered the claim and the two dones (and the refused scrapes).
    assert!(at(r#"tracker_http_requests_total{group="warrior",status="200"}"#) >= 3.0);
    assert!(at(r#"tracker_http_requests_total{group="metrics",status="401"}"#) >= 2.0);
    assert!(at(r#"tracker_http_request_duration_seconds_count{group="warrior"}"#) >= 3.0);

    // Every series the shipped dashboard and alert rules read is one this tracker exports.
    let families: std::collections::BTreeSet<&str> = body
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.split(' ').next())
        .collect();
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    for doc in ["docs/grafana-dashboard.json", "docs/alerts.yml"] {
        let text = std::fs::read_to_string(root.join(doc)).unwrap();
        let mut rest = text.as_str();
        while let Some(at) = rest.find("tracker_") {
            rest = &rest[at..];
            let end = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            let name = &rest[..end];
            rest = &rest[end..];
            let family = ["_bucket", "_count", "_sum", "_total"]
                .iter()
                .find_map(|s| name.strip_suffix(s))
                .unwrap_or(name);
            assert!(
                families.contains(family),
                "{doc} reads {name}, which /metrics does not export"
            );
        }
    }

    // `TRACKER_METRICS_PUBLIC` opens them to anyone.
    let public = TestApp::start_with(|c| c.metrics_public = true).await;
    let r = scrape(&public, None).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(r.body.contains("tracker_redis_memory_bytes"), "{}", r.body);
}

#[tokio::test]
async fn series_grow_with_projects_not_with_downloaders() {
    let app = TestApp::start_with(|c| c.admin_token = Some(TOKEN.into())).await;
    let names: Vec<String> = (0..10_000).map(|i| format!("item-{i}")).collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    app.project("big", &refs).await;
    for i in 1..100 {
        app.project(&format!("p{i}"), &[]).await;
    }
    let before = scrape(&app, Some(TOKEN)).await;
    assert_eq!(before.status, 200, "{}", before.body);
    // A project's series (Redis's command series are process-wide: bounded below).
    let project_series = |text: &str| {
        text.lines()
            .filter(|l| !l.starts_with('#') && l.contains("project="))
            .count()
    };
    let per_project = project_series(&before.body) / 100;
    assert!(per_project <= 64, "{per_project} series per project");
    let process_wide = series(&before.body) - project_series(&before.body);
    assert!(process_wide <= 1_000, "{process_wide} process-wide series");

    // 10,000 downloaders claim an item each and report it.
    let now = now_ms();
    for chunk in 0..10 {
        let requests: Vec<_> = (0..1000)
            .map(|i| who(&format!("dl-{chunk}-{i}"), 1))
            .collect();
        let outcomes = app
            .store
            .queue()
            .claim_batch("big", &requests, now)
            .await
            .unwrap();
        let reports: Vec<DoneReport> = requests
            .iter()
            .zip(outcomes.unwrap())
            .map(|(r, o)| match o {
                ClaimOutcome::Items(items, _) => DoneReport {
                    downloader: r.downloader.clone(),
                    version: "1".into(),
                    ip: r.ip.clone(),
                    id: "null".into(),
                    bytes: vec![("data".into(), 1)],
                    items,
                    ..Default::default()
                },
                other => panic!("unexpected {other:?}"),
            })
            .collect();
        app.store
            .queue()
            .done_batch("big", &reports, now)
            .await
            .unwrap();
    }
    let after = scrape(&app, Some(TOKEN)).await;
    let t = &after.body;
    assert_eq!(
        sample(t, r#"tracker_done_items_total{project="big"}"#),
        Some(10_000.0),
        "{t}"
    );
    // The same project series as before; only this process's HTTP series may have grown (the
    // scrape itself is one more group and status).
    assert_eq!(project_series(t), project_series(&before.body));
    assert!(!t.contains("dl-0-0"), "a downloader's name is a label");
    // Redis's figures are by command: as many series as commands the tracker uses, a few each.
    let commands: std::collections::BTreeSet<&str> = t
        .lines()
        .filter_map(|l| l.strip_prefix("tracker_redis_commands_total{command=\""))
        .filter_map(|l| l.split('"').next())
        .collect();
    let redis_series = t
        .lines()
        .filter(|l| l.starts_with("tracker_redis_command"))
        .count();
    assert!(
        !commands.is_empty() && commands.len() <= 100,
        "{commands:?}"
    );
    assert!(redis_series <= 7 * commands.len(), "{redis_series} series");
}

#[tokio::test]
async fn the_tally_moves_each_minute_into_the_totals_exactly_once() {
    use fred::prelude::*;
    use server::keys::{Counter, Keys};
    let app = TestApp::start().await;
    app.project("p", &["a", "b", "c", "d"]).await;
    let items = app.claim_n("p", "alice", 2).await;
    assert_eq!(app.done("p", "alice", &items[0], 1).await.status, 200);
    let now = now_ms();
    let store = &app.store;
    store.figures().tally("p", now).await.unwrap();
    let first = store
        .figures()
        .lifetime("p", now)
        .await
        .unwrap()
        .expect("tallied");
    assert_eq!(first[&Counter::Claimed], 2);
    assert_eq!(first[&Counter::DoneItems], 1);
    // Minutes not tallied yet are read with the totals.
    assert_eq!(app.claim_n("p", "bob", 1).await.len(), 1);
    let now = now_ms();
    let before = store.figures().lifetime("p", now).await.unwrap().unwrap();
    assert_eq!(before[&Counter::Claimed], 3);

    // An hour on, every minute so far is tallied, once however often the tally runs.
    let later = now + 3_600_000;
    store.figures().tally("p", later).await.unwrap();
    store.figures().tally("p", later).await.unwrap();
    assert_eq!(
        store.figures().lifetime("p", later).await.unwrap().unwrap(),
        before
    );
    // The totals are the tally's own: the per-minute counters gone, they stay.
    let k = Keys::new(&app.namespace).project("p");
    let client = store.client();
    for day in (now / 86_400_000 - 1)..=(later / 86_400_000) {
        let _: i64 = client.del(k.minute_stats(day)).await.unwrap();
    }
    assert_eq!(
        store.figures().lifetime("p", later).await.unwrap().unwrap(),
        before
    );
    // A reader does not add up more than two hours after the tally: nothing, not a wrong sum.
    assert_eq!(
        store
            .figures()
            .lifetime("p", later + 86_400_000)
            .await
            .unwrap(),
        None
    );
}

/// The done counters come from the fold, in the minute of their log entries: a run folded after
/// the tally moved its minute into the totals (every process down past the grace) still counts
/// there, once; the per-minute figures have it too.
#[tokio::test]
async fn a_run_folded_after_its_minute_was_tallied_counts_in_the_totals_once() {
    use server::keys::Counter;
    let app = TestApp::start().await;
    app.project("p", &["a", "b"]).await;
    let store = &app.store;
    let later = now_ms() + 3_600_000;
    // The tally is ahead of the done's minute before the done is folded.
    store.figures().tally("p", later).await.unwrap();
    let item = app.claim("p", "alice").await;
    assert_eq!(app.done("p", "alice", &item, 7).await.status, 200);
    tests::wait_for("the fold", std::time::Duration::from_secs(10), || async {
        (store.figures().unfolded("p").await.unwrap() == (0, 0)).then_some(())
    })
    .await;
    let done = |m: &std::collections::BTreeMap<Counter, u64>| {
        [Counter::DoneItems, Counter::DoneBytes, Counter::RoundTrips]
            .map(|c| m.get(&c).copied().unwrap_or(0))
    };
    let totals = store
        .figures()
        .lifetime("p", later)
        .await
        .unwrap()
        .expect("tallied");
    assert_eq!(done(&totals), [1, 7, 1]);
    store.figures().tally("p", later + 60_000).await.unwrap();
    let again = store
        .figures()
        .lifetime("p", later + 60_000)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(done(&again), [1, 7, 1]);
    let minutes = store.figures().minutes("p", now_ms(), 5).await.unwrap();
    let per_minute = [Counter::DoneItems, Counter::DoneBytes, Counter::RoundTrips]
        .map(|c| server::store::stats::sum(&minutes, c));
    assert_eq!(per_minute, [1, 7, 1]);
}

/// A project account's API token reads the series of its own projects, not the others'; a
/// global account's reads them all.
#[tokio::test]
async fn a_project_accounts_token_sees_its_projects_series_only() {
    use server::store::Role;
    use tests::panel::{account, new_token, Panel};
    let app = TestApp::start().await;
    app.project("mine", &["a"]).await;
    app.project("theirs", &["b"]).await;
    account(&app, "pat", Role::Project, &["mine"]).await;
    account(&app, "root", Role::Global, &[]).await;
    let mut secrets = Vec::new();
    for who in ["pat", "root"] {
        let mut p = Panel::logged_in(&app, who).await;
        secrets.push(new_token(&mut p, "scrape").await);
    }
    let mine = "tracker_items{project=\"mine\",state=\"todo\"}";
    let theirs = "tracker_items{project=\"theirs\",state=\"todo\"}";
    let r = scrape(&app, Some(&secrets[0])).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(sample(&r.body, mine), Some(1.0), "{}", r.body);
    assert!(!r.body.contains("project=\"theirs\""), "{}", r.body);
    let r = scrape(&app, Some(&secrets[1])).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(sample(&r.body, mine), Some(1.0));
    assert_eq!(sample(&r.body, theirs), Some(1.0));
    assert_eq!(scrape(&app, None).await.status, 401);
}
