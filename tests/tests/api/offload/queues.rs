//! Long queues on disk and back in order, the completion log across disk and Redis, the
//! server's own offloader, and the big-project settings' checks.

use super::{claim, complete_all, names, offloader, project, report, settle};
use server::store::DoneReport;
use std::time::Duration;
use tests::{wait_for, TestApp, ADMIN_TOKEN};

/// A long queue keeps `queue_high` items in Redis and the rest on disk; claims come only from
/// Redis, and in FIFO order across the two, as the segments come back.
#[tokio::test]
async fn a_long_queue_waits_on_disk_and_comes_back_in_order() {
    let app = TestApp::start_local().await;
    project(&app, "long", 6000, |s| {
        s.fifo = true;
        s.queue_high = 2000;
        s.segment_items = 1000;
    })
    .await;
    let o = offloader(&app);
    settle(&o, "long").await;
    let k = app.store.keys().project("long");
    let in_redis: u64 = {
        use fred::prelude::*;
        app.store.client().zcard(k.queue("todo")).await.unwrap()
    };
    assert!(in_redis <= 2500, "{in_redis} in Redis");
    let state = app.store.offload().offload_summary("long").await.unwrap();
    assert_eq!(state.todo_on_disk + in_redis, 6000);
    assert_eq!(app.counts("long").await.todo, 6000);
    app.assert_invariant("long").await;
    // The last item waits on disk, and is known there.
    let last = app
        .store
        .queue()
        .item_status("long", "long-05999")
        .await
        .unwrap();
    assert_eq!(last.state.as_deref(), Some("todo"));
    assert_eq!(
        app.store
            .queue()
            .add_items("long", "todo", &names("long", 6000))
            .await
            .unwrap(),
        0
    );

    let mut claimed = Vec::new();
    while claimed.len() < 6000 {
        let items = claim(&app, "long", 250).await;
        if items.is_empty() {
            // Redis ran dry before the refill: the offloader brings the next segment.
            let did = o.tick("long", false).await.unwrap().unwrap_or_default();
            assert!(
                did.refilled > 0,
                "nothing claimed and nothing refilled at {}",
                claimed.len()
            );
            continue;
        }
        claimed.extend(items);
        o.tick("long", false).await.unwrap();
    }
    assert_eq!(claimed, names("long", 6000), "served in FIFO order");
    app.assert_invariant("long").await;
    assert_eq!(
        app.store
            .offload()
            .offload_summary("long")
            .await
            .unwrap()
            .segments,
        0
    );

    // The segments brought back left the registry noted with Redis's time: their files stay a
    // minute more (a Redis that loses its last second registers them again and finds them),
    // whatever the files' own times say, then go.
    let left = app.store.offload().segments_gone("long").await.unwrap();
    assert!(!left.is_empty());
    let dir = app.dir.join("offload").join("long");
    let old = std::time::SystemTime::now() - Duration::from_secs(24 * 3600);
    for entry in std::fs::read_dir(&dir).unwrap() {
        let f = std::fs::File::options()
            .write(true)
            .open(entry.unwrap().path())
            .unwrap();
        f.set_modified(old).unwrap();
    }
    assert_eq!(o.sweep("long").await.unwrap(), 0, "kept a minute");
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), left.len());
    let a_minute_on = server::store::offload::offloader::Orphans {
        registered: Default::default(),
        left: left.clone(),
        tag: app.store.projects().files_tag("long").await.unwrap(),
        now: app.store.offload().redis_now_ms().await.unwrap() + 60_000,
        age: 60_000,
    };
    assert_eq!(a_minute_on.remove(&dir), left.len() as u64);
}

#[tokio::test]
async fn the_completion_log_goes_to_disk_and_downloads_whole() {
    let app = TestApp::start().await;
    project(&app, "logs", 2600, |s| s.log_keep = 1000).await;
    // One report per item: 2600 log entries.
    let items = claim(&app, "logs", 2600).await;
    for chunk in items.chunks(200) {
        let reports: Vec<DoneReport> = chunk.iter().map(|i| report(vec![i.clone()])).collect();
        app.store
            .queue()
            .done_batch("logs", &reports, server::store::now_ms())
            .await
            .unwrap();
    }
    let o = offloader(&app);
    let did = o.tick("logs", false).await.unwrap().unwrap();
    assert_eq!(did.logged, 1600);
    let len: u64 = {
        use fred::prelude::*;
        app.store
            .client()
            .xlen(app.store.keys().project("logs").log())
            .await
            .unwrap()
    };
    assert_eq!(len, 1000);
    let r = app
        .send(
            app.http
                .get(app.url("/admin/api/logs/log"))
                .bearer_auth(ADMIN_TOKEN),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let lines: Vec<serde_json::Value> = r
        .body
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2600, "the archive's entries, then Redis's");
    let got: Vec<String> = lines
        .iter()
        .map(|l| l["items"][0].as_str().unwrap().to_string())
        .collect();
    assert_eq!(got, items, "in completion order");
    let state = app.store.offload().offload_summary("logs").await.unwrap();
    assert!(state.last_run.is_some());
}

/// The server's own offloader, switched on, does the work without being asked, and its state
/// shows in the panel's API and the public statistics.
#[tokio::test]
async fn the_servers_offloader_works_by_itself_and_shows_its_state() {
    let app = TestApp::start_with(|c| c.offloader = true).await;
    project(&app, "auto", 2500, |s| {
        s.done_policy = "offload".into();
        s.offload_keep = 500;
        s.segment_items = 1000;
    })
    .await;
    complete_all(&app, "auto").await;
    wait_for(
        "the server to offload 2000 done items",
        Duration::from_secs(30),
        || async {
            let s = app.store.offload().offload_summary("auto").await.unwrap();
            (s.done_on_disk == 2000).then_some(())
        },
    )
    .await;
    let r = app
        .send(
            app.http
                .get(app.url("/admin/api/auto/offload"))
                .bearer_auth(ADMIN_TOKEN),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let v: serde_json::Value = serde_json::from_str(&r.body).unwrap();
    assert_eq!(v["done_on_disk"], 2000, "{v}");
    assert_eq!(v["segments"], 2, "{v}");
    assert_eq!(v["leased"], true, "{v}");
    assert!(v["last_run"].as_u64().is_some(), "{v}");
    let r = app.get("/auto/tracker-stats.json").await;
    let v: serde_json::Value = serde_json::from_str(&r.body).unwrap();
    assert_eq!(v["offload"]["done_on_disk"], 2000, "{v}");
    app.assert_invariant("auto").await;
}

#[tokio::test]
async fn big_project_settings_are_checked() {
    let app = TestApp::start().await;
    app.project("cfg", &[]).await;
    let before = app.store.projects().project("cfg").await.unwrap().unwrap();
    for (change, says) in [
        (
            "done_policy=forget",
            "done_policy must be keep, offload or discard",
        ),
        ("segment_items=10", "segment_items must be from 1000"),
        ("queue_high=1500", "queue_high must be 0"),
        ("log_keep=95000", "log_keep must be from 1000"),
    ] {
        let r = app.cli(&["project", "set", "cfg", change], b"");
        assert!(!r.ok, "{change} accepted");
        assert!(r.err.contains(says), "{change}: {}", r.err);
    }
    assert_eq!(
        *app.store.projects().project("cfg").await.unwrap().unwrap(),
        *before,
        "refused settings change nothing"
    );
    let r = app.cli(
        &[
            "project",
            "set",
            "cfg",
            "done_policy=offload",
            "queue_high=0",
        ],
        b"",
    );
    assert!(r.ok, "{}", r.err);
    // Another process changed them: this one follows within a second or so.
    wait_for("the new settings", Duration::from_secs(10), || async {
        let s = app.store.projects().project("cfg").await.unwrap().unwrap();
        (s.done_policy == "offload" && s.queue_high == 0).then_some(())
    })
    .await;
}

/// A search finds items on disk too, by state and name, page by page (the cursor moving from
/// Redis's keys to the segments), and a bulk action leaves them alone.
#[tokio::test]
async fn a_search_finds_items_on_disk() {
    let app = TestApp::start().await;
    project(&app, "sd", 6000, |s| {
        s.done_policy = "offload".into();
        s.offload_keep = 1000;
        s.queue_high = 2000;
        s.segment_items = 1000;
    })
    .await;
    let o = offloader(&app);
    settle(&o, "sd").await;
    let queued_on_disk = app
        .store
        .offload()
        .offload_summary("sd")
        .await
        .unwrap()
        .todo_on_disk;
    assert!(queued_on_disk >= 2000, "{queued_on_disk} queued on disk");
    let mut done = 0;
    while done < 3000 {
        let items = claim(&app, "sd", 100).await;
        if items.is_empty() {
            // Redis ran dry: the offloader brings a segment back.
            o.tick("sd", false).await.unwrap();
            continue;
        }
        done += items.len();
        app.store
            .queue()
            .done("sd", &report(items), server::store::now_ms())
            .await
            .unwrap();
    }
    settle(&o, "sd").await;
    let s = app.store.offload().offload_summary("sd").await.unwrap();
    assert!(s.done_on_disk >= 1000, "{} done on disk", s.done_on_disk);

    let search = |query: &'static str| {
        let app = &app;
        async move {
            let (mut found, mut cursor, mut pages) = (Vec::new(), String::new(), 0);
            loop {
                let url = format!("/admin/api/sd/search?{query}&limit=200&cursor={cursor}");
                let r = app
                    .send(app.http.get(app.url(&url)).bearer_auth(ADMIN_TOKEN))
                    .await;
                assert_eq!(r.status, 200, "{query}: {}", r.body);
                let page: serde_json::Value = serde_json::from_str(&r.body).unwrap();
                for f in page["items"].as_array().unwrap() {
                    let (item, state) = (f["item"].as_str().unwrap(), f["state"].as_str().unwrap());
                    found.push((item.to_string(), state.to_string()));
                }
                pages += 1;
                match page["cursor"].as_str() {
                    Some(c) => cursor = c.to_string(),
                    None => break,
                }
                assert!(pages < 200, "the cursor moves on");
            }
            found.sort();
            found.dedup();
            found
        }
    };
    let on_disk = |found: &[(String, String)], state: &str| {
        found.iter().filter(|(_, s)| s == state).count() as u64
    };
    // Every item, once, wherever it is.
    let all = search("").await;
    assert_eq!(all.len(), 6000, "every item found once");
    assert_eq!(on_disk(&all, "disk:done"), s.done_on_disk);
    assert_eq!(on_disk(&all, "disk:todo"), s.todo_on_disk);
    // By state: done in Redis and on disk; `disk` only what is on disk.
    let done_found = search("state=done").await;
    assert_eq!(done_found.len(), 3000);
    let disk = search("state=disk").await;
    assert_eq!(disk.len() as u64, s.done_on_disk + s.todo_on_disk);
    assert!(disk.iter().all(|(_, state)| state.starts_with("disk:")));
    // A glob and a regex match names on disk as in Redis.
    let last = search("state=disk&match=sd-029*").await;
    let expected = all
        .iter()
        .filter(|(i, s)| i.starts_with("sd-029") && s.starts_with("disk:"));
    assert_eq!(last.len(), expected.count());
    assert!(!last.is_empty());
    let re = search("regex=sd-0299.").await;
    assert_eq!(re.len(), 10, "{re:?}");
    // A move of the queued items acts on those in Redis only.
    let body = r#"{"state":"queued","action":"move","to":"todo:secondary","dry_run":true}"#;
    let req = app
        .http
        .post(app.url("/admin/api/sd/search/act"))
        .bearer_auth(ADMIN_TOKEN);
    let r = app
        .send(req.header("content-type", "application/json").body(body))
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let counted: serde_json::Value = serde_json::from_str(&r.body).unwrap();
    assert_eq!(
        counted["count"].as_u64(),
        Some(3000 - s.todo_on_disk),
        "{counted}"
    );
    app.assert_invariant("sd").await;
}
