//! Offloading under faults: a Redis that stalls or answers late never makes the offloader
//! delete a file that holds items; a destroyed project's files go with it (and only then);
//! the log archive runs under the lease and never archives an entry twice; files are private.

use super::{archive_now, complete_all, offloader, project, settle};
use fred::prelude::*;
use std::{
    os::unix::fs::PermissionsExt,
    path::{Path, PathBuf},
    time::{Duration, SystemTime},
};
use tests::{wait_for, TestApp, ADMIN_TOKEN};

/// The segment files of `slug` (registered or not).
fn seg_files(app: &TestApp, slug: &str) -> Vec<PathBuf> {
    let Ok(read) = std::fs::read_dir(app.dir.join("offload").join(slug)) else {
        return vec![];
    };
    let mut out: Vec<PathBuf> = read
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "seg"))
        .collect();
    out.sort();
    out
}

/// Sets the modification time of `path` (a file or a directory) to `ago` before now.
fn age(path: &Path, ago: Duration) {
    std::fs::File::open(path)
        .and_then(|f| f.set_modified(SystemTime::now() - ago))
        .unwrap_or_else(|e| panic!("aging {}: {e}", path.display()));
}

async fn pause(app: &TestApp, ms: u64, what: &str) {
    let _: () = app
        .store
        .client()
        .custom(fred::cmd!("CLIENT"), vec!["PAUSE", &ms.to_string(), what])
        .await
        .expect("CLIENT PAUSE");
}

/// `POST /admin/api/projects` for `slug`, as a global admin.
async fn create(app: &TestApp, slug: &str) -> tests::Reply {
    app.send(
        app.http
            .post(app.url("/admin/api/projects"))
            .bearer_auth(ADMIN_TOKEN)
            .json(&serde_json::json!({ "slug": slug })),
    )
    .await
}

/// A project of 2,000 items, all done, offloading past 1,000 in segments of 1,000.
async fn all_done(app: &TestApp, slug: &str) {
    project(app, slug, 2000, |s| {
        s.done_policy = "offload".into();
        s.offload_keep = 1000;
        s.segment_items = 1000;
    })
    .await;
    assert_eq!(complete_all(app, slug).await, 2000);
}

/// A project with 2,000 done items, 1,000 of them in a segment on disk.
async fn offloaded(app: &TestApp, slug: &str) {
    all_done(app, slug).await;
    let o = offloader(app);
    settle(&o, slug).await;
    o.release(slug).await.unwrap();
    assert_eq!(seg_files(app, slug).len(), 1);
}

#[tokio::test]
async fn a_redis_stall_deletes_no_project_files_and_unknown_directories_stay() {
    let app = TestApp::start_private_local().await;
    offloaded(&app, "kept").await;
    // Everything old enough for any sweep, and a directory no project or destroy names.
    let stray = app.dir.join("offload").join("stray");
    std::fs::create_dir_all(&stray).unwrap();
    std::fs::write(stray.join("x.seg"), b"someone's").unwrap();
    for p in seg_files(&app, "kept").into_iter().chain([
        app.dir.join("offload/kept"),
        stray.join("x.seg"),
        stray.clone(),
    ]) {
        age(&p, Duration::from_secs(7200));
    }
    // Every command waits 6 s (past the 5 s command timeout): the offloader's first round,
    // a sweep, finds the project list unreadable.
    pause(&app, 6000, "ALL").await;
    let closing = tokio_util::sync::CancellationToken::new();
    offloader(&app).spawn(closing.clone());
    let since = server::store::now_ms() + 6000;
    wait_for(
        "a round of the offloader after the stall",
        Duration::from_secs(30),
        || async {
            let state = app.store.offload().offload_state("kept").await.ok()?;
            let run: u64 = state.get("run")?.parse().ok()?;
            (run > since).then_some(())
        },
    )
    .await;
    closing.cancel();
    assert_eq!(seg_files(&app, "kept").len(), 1, "the project's segment");
    assert!(stray.join("x.seg").exists(), "a directory no destroy named");
    let check = app.cli(&["check", "kept"], b"");
    assert!(check.ok, "tracker check: {} {}", check.out, check.err);
}

#[tokio::test]
async fn a_commit_that_times_out_and_runs_later_keeps_its_file() {
    let app = TestApp::start_private_local().await;
    all_done(&app, "late").await;
    let o = offloader(&app);
    assert!(o.lease("late").await.unwrap());
    let settings = app.store.projects().project("late").await.unwrap().unwrap();
    // The script loaded first (a commit past its deadline, refused): a paused Redis would
    // hold its loading too, and the commit would then never be sent.
    let token = app.store.offload().offload_token().unwrap();
    let entry = server::store::SegmentEntry {
        kind: "done".into(),
        count: 1,
        ..Default::default()
    };
    let refused = app
        .store
        .offload()
        .commit_segment(
            "late",
            &token,
            "done-0",
            &entry,
            &[("late-00001".into(), String::new())],
            0,
        )
        .await;
    assert!(refused.is_err(), "{refused:?}");
    // Writes wait 7 s: the commit outlives its 5 s timeout, then runs.
    pause(&app, 7000, "WRITE").await;
    let r = o
        .offload_done(
            "late",
            &settings,
            server::store::offload::offloader::StopAfter::Never,
        )
        .await;
    // Past its timeout the commit's outcome is unknown, and the registry says: read on
    // another connection, before the commit runs (not registered: an error), or on the
    // commit's own, after it (registered: its items).
    assert!(
        matches!(r, Err(_) | Ok(1000)),
        "the commit's outcome is unknown, or read from the registry: {r:?}"
    );
    wait_for(
        "the late commit to run",
        Duration::from_secs(20),
        || async {
            let e = app.store.offload().segment_entries("late").await.ok()?;
            (!e.is_empty()).then_some(())
        },
    )
    .await;
    // Registered, so its file must be there: the items left Redis for it.
    assert_eq!(
        seg_files(&app, "late").len(),
        1,
        "the registered segment's file"
    );
    assert_eq!(app.counts("late").await.done, 2000);
    let check = app.cli(&["check", "late"], b"");
    assert!(check.ok, "tracker check: {} {}", check.out, check.err);
    // And the sweep, a minute on, keeps it.
    for p in seg_files(&app, "late") {
        age(&p, Duration::from_secs(3600));
    }
    assert_eq!(o.sweep("late").await.unwrap(), 0);
    assert_eq!(seg_files(&app, "late").len(), 1);
}

#[tokio::test]
async fn a_commit_past_its_window_is_refused_and_changes_nothing() {
    let app = TestApp::start().await;
    project(&app, "window", 10, |_| {}).await;
    assert_eq!(complete_all(&app, "window").await, 10);
    let o = offloader(&app);
    assert!(o.lease("window").await.unwrap());
    let token = app
        .store
        .offload()
        .offload_token()
        .expect("the offloader's token");
    let entry = server::store::SegmentEntry {
        kind: "done".into(),
        count: 1,
        ..Default::default()
    };
    let now = app.store.offload().redis_now_ms().await.unwrap();
    let r = app
        .store
        .offload()
        .commit_segment(
            "window",
            &token,
            "done-late",
            &entry,
            &[("window-00001".into(), String::new())],
            now - 1,
        )
        .await;
    assert!(
        matches!(
            r,
            Err(server::store::StoreError::Refused(
                server::store::Refusal::Stale { .. }
            ))
        ),
        "{r:?}"
    );
    assert!(app
        .store
        .offload()
        .segment_entries("window")
        .await
        .unwrap()
        .is_empty());
    assert_eq!(app.counts("window").await.done, 10);
    let k = app.store.keys().project("window");
    let still: bool = app
        .store
        .client()
        .sismember(k.done(), "window-00001")
        .await
        .unwrap();
    assert!(still, "the item stayed in Redis");
}

#[tokio::test]
async fn a_segment_brought_back_stays_on_disk_a_minute_then_the_sweep_deletes_it() {
    let app = TestApp::start_local().await;
    project(&app, "back", 5000, |s| {
        s.fifo = true;
        s.queue_high = 2000;
        s.segment_items = 1000;
    })
    .await;
    let o = offloader(&app);
    settle(&o, "back").await;
    let on_disk = app.store.offload().segment_entries("back").await.unwrap();
    assert!(!on_disk.is_empty(), "a queue segment");
    let (id, entry) = on_disk[0].clone();
    let path = server::store::offload::segment_path(&app.dir.join("offload"), "back", &id);
    age(&path, Duration::from_secs(3600));
    assert_eq!(o.refill("back", &id, &entry).await.unwrap(), entry.count);
    // Unregistered, but kept: a Redis that loses its last second would name it again.
    assert!(path.exists(), "kept after its last chunk");
    assert_eq!(o.sweep("back").await.unwrap(), 0);
    assert!(
        path.exists(),
        "kept by a sweep within the minute (the file's own time is old)"
    );
    // It left the registry two minutes ago, on Redis's clock.
    let k = app.store.keys().project("back");
    let left = app.store.offload().segments_gone("back").await.unwrap();
    assert!(left.contains_key(&id), "{left:?}");
    let then = app.store.offload().redis_now_ms().await.unwrap() - 120_000;
    let _: () = app
        .store
        .client()
        .hset(k.segs_gone(), (id.as_str(), then.to_string()))
        .await
        .unwrap();
    assert_eq!(o.sweep("back").await.unwrap(), 1);
    assert!(!path.exists(), "deleted a minute after it left");
    assert!(
        !app.store
            .offload()
            .segments_gone("back")
            .await
            .unwrap()
            .contains_key(&id),
        "and its note forgotten"
    );
    app.assert_invariant("back").await;
}

#[tokio::test]
async fn a_destroyed_projects_files_go_with_it_and_a_new_project_of_its_slug_inherits_none() {
    let app = TestApp::start_local().await;
    offloaded(&app, "gone").await;
    // A log archive, through the panel.
    let r = archive_now(&app, "gone").await;
    assert_eq!(r.status, 200, "{}", r.body);
    let archives = app.dir.join("archive/gone");
    assert!(std::fs::read_dir(&archives).unwrap().count() > 0);
    let r = app
        .send(
            app.http
                .delete(app.url("/admin/api/gone?confirm=gone"))
                .bearer_auth(ADMIN_TOKEN),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(!archives.exists(), "the archives went with the project");
    assert!(!app.dir.join("offload/gone").exists(), "and its segments");
    assert!(app
        .store
        .queue()
        .destroyed_projects()
        .await
        .unwrap()
        .is_empty());
    let r = create(&app, "gone").await;
    assert_eq!(r.status, 201, "{}", r.body);
    let r = app
        .send(
            app.http
                .get(app.url("/admin/api/gone/archives"))
                .bearer_auth(ADMIN_TOKEN),
        )
        .await;
    assert_eq!(r.body, "[]", "the new project inherits no archive");
}

#[tokio::test]
async fn a_slug_marked_destroyed_is_not_created_again_until_the_sweep_deleted_its_files() {
    let app = TestApp::start_local().await;
    offloaded(&app, "half").await;
    // A destroy whose process stopped before deleting the files: the mark stays.
    app.store.queue().destroy_project("half").await.unwrap();
    assert!(app.dir.join("offload/half").exists());
    let r = create(&app, "half").await;
    assert_eq!(r.status, 409, "{}", r.body);
    assert!(r.body.contains("still being deleted"), "{}", r.body);
    assert_eq!(offloader(&app).sweep_destroyed().await.unwrap(), 1);
    assert!(!app.dir.join("offload/half").exists());
    let r = create(&app, "half").await;
    assert_eq!(r.status, 201, "{}", r.body);
}

#[tokio::test]
async fn segment_and_archive_files_are_private() {
    let app = TestApp::start_local().await;
    offloaded(&app, "priv").await;
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    for f in seg_files(&app, "priv") {
        assert_eq!(mode(&f), 0o600, "{}", f.display());
    }
    assert_eq!(mode(&app.dir.join("offload/priv")), 0o700);
    let r = archive_now(&app, "priv").await;
    assert_eq!(r.status, 200, "{}", r.body);
    let dir = app.archive_dir("priv").await;
    assert_eq!(mode(&dir), 0o700);
    assert_eq!(mode(&app.dir.join("archive/priv")), 0o700);
    for f in std::fs::read_dir(&dir).unwrap().flatten() {
        assert_eq!(mode(&f.path()), 0o600, "{}", f.path().display());
    }
}

/// The entries of every archive of `slug`, in name order.
async fn archived_ids(app: &TestApp, slug: &str) -> Vec<String> {
    app.archived(slug)
        .await
        .into_iter()
        .flat_map(|(_, lines)| lines)
        .map(|v| v["log_id"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn an_archive_whose_trim_failed_is_not_archived_again() {
    let app = TestApp::start().await;
    project(&app, "twice", 300, |_| {}).await;
    assert_eq!(complete_all(&app, "twice").await, 300);
    let o = offloader(&app);
    let token = app.store.offload().offload_token().unwrap();
    let archives = app.archives("twice").await;
    let end = format!("{}-{}", server::store::now_ms(), u64::MAX);
    let first = server::store::offload::offloader::archive::write_archive(
        &app.store, &archives, "twice", &end, &token,
    )
    .await
    .unwrap()
    .expect("an archive");
    assert_eq!(first.count, 3);
    // As if the trim after it had failed: its entries are back in Redis.
    let k = app.store.keys().project("twice");
    let ids = archived_ids(&app, "twice").await;
    let _: i64 = app.store.client().del(k.log()).await.unwrap();
    for id in &ids {
        let _: String = app
            .store
            .client()
            .custom(
                fred::cmd!("XADD"),
                vec![k.log(), id.clone(), "re".into(), "added".into()],
            )
            .await
            .unwrap();
    }
    let again = server::store::offload::offloader::archive::write_archive(
        &app.store, &archives, "twice", &end, &token,
    )
    .await
    .unwrap();
    assert!(again.is_none(), "nothing new to archive");
    assert_eq!(
        archived_ids(&app, "twice").await,
        ids,
        "no entry archived twice"
    );
    let left: u64 = app.store.client().xlen(k.log()).await.unwrap();
    assert_eq!(left, 0, "the failed trim was done");
    drop(o);
}

#[tokio::test]
async fn the_panels_archive_waits_for_another_process_holding_the_lease() {
    let app = TestApp::start().await;
    project(&app, "held", 100, |_| {}).await;
    assert_eq!(complete_all(&app, "held").await, 100);
    // Another process's offloader holds the lease (this process runs none).
    let other = offloader(&app);
    assert!(other.lease("held").await.unwrap());
    // This process's panel: no offloader of its own here, so a token of its own.
    app.store.offload().set_offload_token("this-process");
    let r = archive_now(&app, "held").await;
    assert_eq!(r.status, 409, "{}", r.body);
    assert!(r.body.contains("lease"), "{}", r.body);
    assert!(
        archived_ids(&app, "held").await.is_empty(),
        "nothing archived"
    );
    let k = app.store.keys().project("held");
    let left: u64 = app.store.client().xlen(k.log()).await.unwrap();
    assert_eq!(left, 1, "the log untouched");
}
