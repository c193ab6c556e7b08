//! The scenarios that matter, on a Redis Cluster (the test binary's shared one: 3 masters,
//! 3 replicas), with a project on every master: warrior calls, backfeed, the month's
//! contributors, a live viewer, admin login and a bulk action, every script, `tracker check`,
//! the hub's per-project channels.

use server::store::Role;
use std::collections::HashSet;
use tests::panel::{account, json, Panel};
use tests::{
    cluster::{cli, Cluster},
    TestApp,
};

/// Creates projects `{prefix}N`, one on each master of the shared cluster, each with `items`;
/// their slugs. Asserts that they are on at least two masters.
async fn projects_on_every_master(app: &TestApp, prefix: &str, items: &[&str]) -> Vec<String> {
    let placed = Cluster::shared().slugs_on_every_master(prefix);
    let masters: HashSet<u16> = placed.iter().map(|(_, m)| *m).collect();
    assert!(
        masters.len() >= 2,
        "projects on several masters: {placed:?}"
    );
    assert_eq!(masters.len(), placed.len());
    for (slug, _) in &placed {
        app.project(slug, items).await;
    }
    placed.into_iter().map(|(slug, _)| slug).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn warrior_calls_and_backfeed_on_every_master() {
    let app = TestApp::start_cluster().await;
    let slugs = projects_on_every_master(&app, "w", &["a", "b", "c", "d", "e"]).await;
    for slug in &slugs {
        let item = app.claim(slug, "alice").await;
        assert_eq!(app.done(slug, "alice", &item, 10).await.status, 200);
        let status = app.get(&format!("/{slug}/items/{item}.json")).await;
        assert_eq!(json(&status)["status"], "done", "{slug}");

        let items = app.claim_n(slug, "bob", 3).await;
        assert_eq!(items.len(), 3, "{slug}");
        for item in &items[..2] {
            assert_eq!(app.done(slug, "bob", item, 5).await.status, 200);
        }
        let body = serde_json::json!({"item": items[2], "downloader": "bob"});
        let r = app
            .post(&format!("/{slug}/release"), body.to_string())
            .await;
        assert_eq!(r.status, 200, "{slug}: {}", r.body);

        app.settings(slug, |s| s.backfeed_key = "k".into()).await;
        let r = app
            .post(
                &format!("/backfeed/legacy/{slug}-k?delimiter=%00"),
                "n1\0n2\0a\0",
            )
            .await;
        assert_eq!(r.status, 200, "{slug}: {}", r.body);
        assert_eq!(json(&r)["added"], 2, "{slug}: a is known");

        let counts = app.counts(slug).await;
        assert_eq!((counts.done, counts.out), (3, 0), "{slug}");
        assert_eq!(
            counts.todo, 4,
            "{slug}: one never claimed, one released, two new"
        );
        app.assert_invariant(slug).await;
    }
    // Redis's own figures for /metrics are every master's added up: at least the claims and
    // dones above on each master, and no fewer than any one master counts.
    let cluster = Cluster::shared();
    let fcalls_on = |port: u16| {
        let info = cli(port, &["INFO", "commandstats"]).unwrap_or_default();
        server::store::redis_info::parse_commandstats(&info)
            .into_iter()
            .find(|(name, _)| name == "fcall")
            .map_or(0, |(_, s)| s.calls)
    };
    let per_master: Vec<u64> = cluster.masters().into_iter().map(fcalls_on).collect();
    let summed = app.store.redis_commands().await.unwrap().commands["fcall"].calls;
    assert!(
        per_master.iter().filter(|&&n| n > 0).count() >= 2,
        "{per_master:?}"
    );
    assert!(
        summed >= per_master.iter().sum::<u64>(),
        "{summed} < {per_master:?}"
    );
    // The month's contributors of all projects: a global key, in a slot of its own, written by
    // the process rather than by the projects' scripts.
    tests::wait_for(
        "the month's contributors",
        std::time::Duration::from_secs(15),
        || async {
            let c = app
                .store
                .figures()
                .contributors(server::store::now_ms())
                .await
                .ok()?;
            (c.months[0].contributors == 2).then_some(())
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_viewer_gets_the_completions_of_a_project_on_any_master() {
    let app = TestApp::start_cluster().await;
    // Created after the hub started: the viewer's arrival subscribes to the project's channel.
    let slugs = projects_on_every_master(&app, "v", &["a", "b"]).await;
    for slug in &slugs {
        let url = format!("ws://{}/{slug}/ws", app.addr);
        let (mut ws, _) = tokio_tungstenite::connect_async(url)
            .await
            .expect("connect");
        let first = super::live::next_json(&mut ws).await;
        assert_eq!(first["type"], "snapshot", "{slug}");
        assert!(app.hub.follows(&app.store, slug), "{slug}");
        let item = app.claim(slug, "bob").await;
        assert_eq!(app.done(slug, "bob", &item, 7).await.status, 200);
        let ev = super::live::next_json(&mut ws).await;
        assert_eq!(ev["type"], "events", "{slug}");
        assert_eq!(ev["events"][0]["items"][0], item.as_str(), "{slug}");
        let _ = ws.close(None).await;
    }
}

/// How many clients the master on `port` counts on shard channel `channel`.
fn shard_subscribers(port: u16, channel: &str) -> Option<u64> {
    // PUBSUB SHARDNUMSUB answers the channel, then its count.
    cli(port, &["PUBSUB", "SHARDNUMSUB", channel])?
        .lines()
        .nth(1)?
        .trim()
        .parse()
        .ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_hub_follows_exactly_the_projects_that_exist() {
    let app = TestApp::start_cluster().await;
    let slugs = projects_on_every_master(&app, "h", &[]).await;
    // The periodic sync may run meanwhile too: what it leaves matters, not who did it.
    let synced = app.hub.sync_projects(&app.store).await.unwrap();
    assert_eq!(synced.removed, 0);
    assert!(slugs.iter().all(|s| app.hub.follows(&app.store, s)));
    let again = app.hub.sync_projects(&app.store).await.unwrap();
    assert_eq!((again.added, again.removed), (0, 0), "idempotent");
    // Each project's channel is followed on its own master, by this app's hub alone.
    let cluster = Cluster::shared();
    let channel = |slug: &str| app.store.keys().project(slug).events();
    let master = |slug: &str| cluster.master_of(&format!("{{{slug}}}")).unwrap();
    for slug in &slugs {
        assert_eq!(shard_subscribers(master(slug), &channel(slug)), Some(1));
    }
    app.store.queue().destroy_project(&slugs[0]).await.unwrap();
    let after = app.hub.sync_projects(&app.store).await.unwrap();
    assert_eq!(after.added, 0);
    assert!(!app.hub.follows(&app.store, &slugs[0]));
    assert!(slugs[1..].iter().all(|s| app.hub.follows(&app.store, s)));
    assert_eq!(
        shard_subscribers(master(&slugs[0]), &channel(&slugs[0])),
        Some(0)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admin_login_and_a_bulk_release_on_a_cluster() {
    let app = TestApp::start_cluster().await;
    let slugs = projects_on_every_master(&app, "a", &["i1", "i2", "i3"]).await;
    account(&app, "root", Role::Global, &[]).await;
    let mut p = Panel::open(&app).await;
    assert_eq!(p.login("root", "wrong password").await.status, 401);
    assert_eq!(p.login("root", "password123").await.status, 200);
    for slug in &slugs {
        for who in ["alice", "alice", "bob"] {
            app.claim(slug, who).await;
        }
        let release = serde_json::json!({"downloader": "alice", "dry_run": false});
        let r = p.post(&format!("/admin/api/{slug}/release"), release).await;
        assert_eq!(json(&r)["count"], 2, "{slug}: {}", r.body);
        let counts = app.counts(slug).await;
        assert_eq!((counts.out, counts.todo), (1, 2), "{slug}");
        app.assert_invariant(slug).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_script_runs_on_a_cluster() {
    let app = TestApp::start_cluster().await;
    super::scripts::every_script(&app).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tracker_check_runs_on_a_cluster() {
    let app = TestApp::start_cluster().await;
    let slugs = projects_on_every_master(&app, "k", &["a", "b", "c"]).await;
    for slug in &slugs {
        let item = app.claim(slug, "alice").await;
        assert_eq!(app.done(slug, "alice", &item, 1).await.status, 200);
        app.claim(slug, "bob").await;
        let run = app.cli(&["check", slug], b"");
        assert!(run.ok, "{slug}: {}", run.out);
        assert!(run.out.contains("holds its invariant"), "{}", run.out);
    }
}
