//! Fault injection at every Redis call of the offloader and the archiver: an offloader whose
//! store talks to Redis through a [`FaultProxy`] runs a project's offload (done items to disk, a
//! long queue spilled, the completion log archived) with one call faulted, once for each call
//! of a clean run and each way a call can go wrong: it fails (never runs), it runs later (after
//! its connection went), or it runs and its answer is lost. Then the same offloader runs with no
//! fault until it has nothing left to do, and the project is checked: every item in exactly one
//! state, `tracker check` clean, every segment file registered and every registered one on
//! disk, and every completion in the log exactly once, on disk or in Redis. The panel's
//! archive, with a lease of its own, is faulted the same way.

use super::{claim, names, report, Offloader, Orphans};
use std::{collections::HashSet, time::Duration};
use tests::{
    fault_proxy::{behind_proxy, Fault},
    wait_for, TestApp,
};

/// Items of a project; completed; kept in Redis above the queue's high mark.
pub(super) const ITEMS: usize = 5500;
pub(super) const DONE: usize = 2500;

/// A project `slug` with [`ITEMS`] items, [`DONE`] of them done (one report each, so one log
/// entry each), set to offload done items, spill its queue and archive its log.
pub(super) async fn prepare(app: &TestApp, slug: &str) {
    app.project(slug, &[]).await;
    app.settings(slug, |s| {
        s.done_policy = "offload".into();
        s.offload_keep = 0;
        s.segment_items = 1000;
        s.queue_high = 2000;
        s.fifo = true;
        s.log_keep = 1000;
    })
    .await;
    app.store
        .queue()
        .add_items(slug, "todo", &names(slug, ITEMS))
        .await
        .unwrap();
    let items = claim(app, slug, DONE).await;
    assert_eq!(items.len(), DONE);
    let reports: Vec<_> = items.into_iter().map(|i| report(vec![i])).collect();
    for chunk in reports.chunks(500) {
        app.store
            .queue()
            .done_batch(slug, chunk, server::store::now_ms())
            .await
            .unwrap();
    }
    // Its log folded now: the template is copied a key at a time, and a fold by the server's
    // folder between two of those copies would leave the copy's figures and its log apart.
    wait_for(
        "the template's log folded",
        Duration::from_secs(20),
        || async {
            app.store.figures().fold(slug).await.ok()?;
            (app.store.figures().unfolded(slug).await.ok()? == (0, 0)).then_some(())
        },
    )
    .await;
}

/// Project `slug` made a copy of project `from` (as [`prepare`] left it, nothing on disk): each
/// of its keys restored under the new slug's name.
pub(super) async fn copy_project(app: &TestApp, from: &tests::Snapshot, tpl: &str, slug: &str) {
    use fred::prelude::*;
    let client = app.store.client();
    for (key, dump) in from {
        let key = key.replace(&format!("{{{tpl}}}"), &format!("{{{slug}}}"));
        let _: () = client
            .restore(key.as_str(), 0, dump.clone(), true, false, None, None)
            .await
            .unwrap();
    }
    let _: i64 = client
        .sadd(app.store.keys().projects(), slug)
        .await
        .unwrap();
}

/// Rounds of `o` on `slug` until one does nothing; errors (of a faulted call) end it too.
pub(super) async fn rounds(o: &Offloader, slug: &str) -> Result<(), String> {
    for _ in 0..50 {
        match o.tick(slug, false).await {
            Ok(Some(did)) if did != Default::default() => continue,
            Ok(_) => return Ok(()),
            Err(e) => return Err(e.to_string()),
        }
    }
    Err("never settled".into())
}

/// The lines of every log archive of `slug`.
async fn archived_lines(app: &TestApp, slug: &str) -> Vec<String> {
    app.archived(slug)
        .await
        .into_iter()
        .flat_map(|(_, lines)| lines)
        .map(|v| v.to_string())
        .collect()
}

/// Everything that must hold of `slug` after any fault and a clean run.
pub(super) async fn check(app: &TestApp, slug: &str, what: &str) {
    use fred::prelude::*;
    app.assert_invariant(slug).await;
    let counts = app.counts(slug).await;
    assert_eq!(
        (counts.done, counts.todo, counts.out),
        (DONE as u64, (ITEMS - DONE) as u64, 0),
        "{what}"
    );
    // Files: the sweep's judgement with no wait takes what no registry names; then every file
    // is registered and every registered segment has its file.
    let registered: HashSet<String> = app
        .store
        .offload()
        .segment_ids(slug)
        .await
        .unwrap()
        .into_iter()
        .collect();
    let orphans = Orphans {
        registered: registered.clone(),
        left: Default::default(),
        tag: app.store.projects().files_tag(slug).await.unwrap(),
        now: app.store.offload().redis_now_ms().await.unwrap(),
        age: 0,
    };
    let (storage, s) = (app.store.storage().clone(), slug.to_string());
    tokio::task::spawn_blocking(move || orphans.remove_in(&storage, &s))
        .await
        .unwrap();
    let files: HashSet<String> = app
        .segment_objects(slug)
        .await
        .iter()
        .filter_map(|k| k.rsplit('/').next()?.strip_suffix(".seg").map(String::from))
        .collect();
    assert_eq!(files, registered, "{what}: files and registry");
    // The log: each completion once, on disk or in Redis.
    let on_disk = archived_lines(app, slug).await;
    let in_redis: u64 = app
        .store
        .client()
        .xlen(app.store.keys().project(slug).log())
        .await
        .unwrap();
    let unique: HashSet<&String> = on_disk.iter().collect();
    assert_eq!(
        unique.len(),
        on_disk.len(),
        "{what}: an entry archived twice"
    );
    assert_eq!(
        on_disk.len() as u64 + in_redis,
        DONE as u64,
        "{what}: {} archived, {in_redis} in Redis",
        on_disk.len()
    );
}

#[tokio::test]
async fn any_redis_call_of_the_offloader_may_fail_run_late_or_lose_its_answer() {
    let app = TestApp::start_private_local().await;
    let (proxy, store) = behind_proxy(&app, 2).await;
    let offloader = || Offloader::new(store.clone(), app.dir.join("archive"));

    // The project every run starts from, as it is before its offload.
    prepare(&app, "tpl").await;
    // Its reports folded into the figures first (the check folds what is pending).
    app.assert_invariant("tpl").await;
    let template = app.dump_project("tpl").await;
    // A clean run: its calls are the ones to fault.
    copy_project(&app, &template, "tpl", "clean").await;
    proxy.clear();
    rounds(&offloader(), "clean").await.unwrap();
    let calls = proxy.seen();
    eprintln!("{} calls in a clean run: {calls:?}", calls.len());
    check(&app, "clean", "clean run").await;
    assert!(
        calls.iter().any(|c| c.contains("offload_commit")),
        "{calls:?}"
    );
    let every = std::env::var("FAULT_EVERY")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1);
    for (at, call) in calls.iter().enumerate().step_by(every) {
        let at = at + 1;
        for (code, fault) in Fault::EACH {
            let slug = format!("p{at}{code}");
            copy_project(&app, &template, "tpl", &slug).await;
            let o = offloader();
            proxy.fault_at(at, fault);
            let faulted = rounds(&o, &slug).await;
            proxy.clear();
            // A late command has run before the checks.
            wait_for("the late command", Duration::from_secs(5), || async {
                proxy.idle().then_some(())
            })
            .await;
            let what = format!("call {at} ({call}) {fault:?}: faulted run {faulted:?}");
            // The clean run (its first calls may meet the pool still reconnecting).
            wait_for(
                &format!("{what}: a clean run"),
                Duration::from_secs(20),
                || async { rounds(&o, &slug).await.ok() },
            )
            .await;
            check(&app, &slug, &what).await;
        }
    }
}

/// The panel's "Archive" in a process that runs no offloader, which takes a lease of its own
/// for the archive and gives it up after: each of its Redis calls faulted in turn, each way.
/// Then every completion is in the log once (on disk or in Redis), a lease a faulted call left
/// lapses by itself (within the lease's time), and the next archive writes the rest.
#[tokio::test]
async fn any_redis_call_of_the_panels_archive_may_fail_run_late_or_lose_its_answer() {
    use fred::prelude::*;
    use server::store::offload::offloader::{archive::archive_now, LEASE_MS};
    let app = TestApp::start_private().await;
    let (proxy, store) = behind_proxy(&app, 2).await;
    assert!(
        store.offload().offload_token().is_none(),
        "no offloader: a lease of its own"
    );
    let archives = app.dir.join("archive");
    let archive = |slug: String| {
        let (store, archives) = (store.clone(), archives.clone());
        async move {
            let end = format!("{}-{}", server::store::now_ms(), u64::MAX);
            archive_now(&store, &archives, &slug, &end)
                .await
                .map_err(|e| e.to_string())
        }
    };
    prepare(&app, "tpl").await;
    app.assert_invariant("tpl").await;
    let template = app.dump_project("tpl").await;
    copy_project(&app, &template, "tpl", "clean").await;
    proxy.clear();
    let written = archive("clean".into()).await.unwrap().expect("an archive");
    assert!(written.count > 0);
    let calls = proxy.seen();
    eprintln!("{} calls in a clean archive: {calls:?}", calls.len());
    check(&app, "clean", "clean archive").await;
    assert!(calls.iter().any(|c| c.contains("XTRIM")), "{calls:?}");
    for (at, call) in calls.iter().enumerate() {
        let at = at + 1;
        for (code, fault) in Fault::EACH {
            let slug = format!("a{at}{code}");
            copy_project(&app, &template, "tpl", &slug).await;
            proxy.fault_at(at, fault);
            let faulted = archive(slug.clone()).await;
            proxy.clear();
            wait_for("the late command", Duration::from_secs(5), || async {
                proxy.idle().then_some(())
            })
            .await;
            // (A trim that failed leaves entries on disk and in Redis until the next archive
            // trims them first: checked after it. An entry lost now would be missing then.)
            let what = format!("call {at} ({call}) {fault:?}: faulted archive {faulted:?}");
            // A lease the faulted archive could not give up lapses by itself; made to lapse now.
            let lease = app.store.keys().project(&slug).offload_lease();
            let ttl: i64 = app.store.client().pttl(lease.as_str()).await.unwrap();
            assert!(
                ttl == -2 || (1..=LEASE_MS as i64).contains(&ttl),
                "{what}: lease {ttl}"
            );
            let _: bool = app
                .store
                .client()
                .pexpire(lease.as_str(), 1, None)
                .await
                .unwrap();
            // The next archive writes the rest (its first calls may meet the pool reconnecting).
            wait_for(
                &format!("{what}: a clean archive"),
                Duration::from_secs(20),
                || {
                    let archive = archive(slug.clone());
                    async move { archive.await.ok() }
                },
            )
            .await;
            check(&app, &slug, &what).await;
            let (in_redis, clean) = (app.log_len(&slug).await, app.log_len("clean").await);
            assert_eq!(
                in_redis, clean,
                "{what}: archived as far as a clean archive"
            );
        }
    }
}
