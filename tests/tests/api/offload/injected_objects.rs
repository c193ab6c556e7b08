//! Fault injection at every object store call of the offloader and the archiver: an offloader
//! whose segments and log archives are in a real S3-speaking server reached through an
//! [`S3Proxy`] runs a project's offload (done items to the bucket, a long queue spilled, the
//! completion log archived) with one request faulted, once for each request of a clean run and
//! each way it can go wrong: it fails (and so do the library's retries of it), or it runs and
//! its answer is lost (the library's retry then meets what it did: an upload finds its own
//! object there). Then the same offloader runs with no fault until it has nothing left to do,
//! and the project is checked as after a faulted Redis call ([`super::injected::check`]):
//! every item in exactly one state, every object registered and every registered segment in
//! the bucket, every completion in the log exactly once, in an archive or in Redis.

use super::injected::{check, copy_project, prepare, rounds};
use super::Offloader;
use std::time::Duration;
use tests::{
    s3::S3,
    s3_proxy::{S3Fault, S3Proxy},
    wait_for, TestApp,
};

/// An S3 server, a proxy in front of it, an app whose segments are in its bucket (reached
/// directly), and a store of the app's namespace whose object store calls go through the
/// proxy.
struct Setup {
    dir: std::path::PathBuf,
    s3: S3,
    proxy: S3Proxy,
    app: TestApp,
    store: server::store::Store,
}

impl Setup {
    async fn start() -> Setup {
        let dir = std::env::temp_dir().join(tests::random_name("tracker-s3-"));
        let s3 = S3::start(&dir);
        let proxy = S3Proxy::start(s3.port).await;
        let app = TestApp::start_private_with(|c| c.storage = Some(s3.storage_url("faults"))).await;
        let storage = server::storage::Storage::open(
            Some(&proxy.storage_url("faults")),
            &app.dir,
            tokio::runtime::Handle::current(),
        )
        .unwrap();
        let store = server::store::Store::connect_with(
            &app.redis_url,
            &app.namespace,
            2,
            Duration::from_secs(2),
            app.dir.join("offload"),
        )
        .await
        .unwrap()
        .with_storage(storage);
        Setup {
            dir,
            s3,
            proxy,
            app,
            store,
        }
    }

    fn offloader(&self) -> Offloader {
        Offloader::new(self.store.clone(), self.app.dir.join("archive"))
    }

    /// The files the S3 server holds under `path` of its bucket.
    fn objects_under(&self, path: &str) -> usize {
        fn count(dir: &std::path::Path) -> usize {
            std::fs::read_dir(dir).map_or(0, |r| {
                r.flatten()
                    .map(|e| {
                        if e.path().is_dir() {
                            count(&e.path())
                        } else {
                            1
                        }
                    })
                    .sum()
            })
        }
        count(&self.s3.root.join(tests::s3::BUCKET).join(path))
    }

    fn stop(self) {
        let dir = self.dir.clone();
        drop(self);
        let _ = std::fs::remove_dir_all(dir);
    }
}

#[tokio::test]
async fn any_object_store_call_of_the_offloader_may_fail_or_lose_its_answer() {
    let setup = Setup::start().await;
    let (app, proxy) = (&setup.app, &setup.proxy);
    let offloader = || setup.offloader();

    prepare(app, "tpl").await;
    app.assert_invariant("tpl").await;
    let template = app.dump_project("tpl").await;
    // A clean run: its requests are the ones to fault.
    copy_project(app, &template, "tpl", "clean").await;
    proxy.clear();
    rounds(&offloader(), "clean").await.unwrap();
    let calls = proxy.seen();
    eprintln!("{} requests in a clean run: {calls:?}", calls.len());
    check(app, "clean", "clean run").await;
    for (what, pattern) in [
        ("a segment uploaded", ".seg"),
        ("an archive uploaded", "/_archives/"),
    ] {
        assert!(
            calls
                .iter()
                .any(|c| c.starts_with("PUT ") && c.contains(pattern)),
            "{what}: {calls:?}"
        );
    }
    for (at, call) in calls.iter().enumerate() {
        let at = at + 1;
        for (code, fault) in S3Fault::EACH {
            let slug = format!("o{at}{code}");
            copy_project(app, &template, "tpl", &slug).await;
            let o = offloader();
            proxy.fault_at(at, fault);
            let faulted = rounds(&o, &slug).await;
            proxy.clear();
            let what = format!("request {at} ({call}) {fault:?}: faulted run {faulted:?}");
            wait_for(
                &format!("{what}: a clean run"),
                Duration::from_secs(20),
                || async { rounds(&o, &slug).await.ok() },
            )
            .await;
            check(app, &slug, &what).await;
        }
    }
    setup.stop();
}

/// The sweep of a project's unregistered objects, then the purge of the project once
/// destroyed, with each of their requests faulted in turn: no registered segment is deleted
/// while the project lives, nor any object of another project; and once the faults stop, the
/// destroyed project's segments and log archives are gone and its mark with them.
#[tokio::test]
async fn any_object_store_call_of_the_sweep_and_the_purge_may_fail_or_lose_its_answer() {
    let setup = Setup::start().await;
    let app = &setup.app;
    prepare(app, "tpl").await;
    app.assert_invariant("tpl").await;
    let template = app.dump_project("tpl").await;
    // A project that stays: none of its objects may go.
    copy_project(app, &template, "tpl", "stays").await;
    rounds(&setup.offloader(), "stays").await.unwrap();
    let kept = (
        setup.objects_under("faults/stays"),
        setup.objects_under("faults/_archives/stays"),
    );
    assert!(kept.0 > 0 && kept.1 > 0, "{kept:?}");

    let calls = purge_run(&setup, &template, kept, "clean".into(), None).await;
    eprintln!(
        "{} requests in a clean sweep and purge: {calls:?}",
        calls.len()
    );
    for (what, pattern) in [
        ("the orphan deleted", "?delete"),
        ("a listing", "list-type=2"),
    ] {
        assert!(
            calls.iter().any(|c| c.contains(pattern)),
            "{what}: {calls:?}"
        );
    }
    for at in 1..=calls.len() {
        for (code, fault) in S3Fault::EACH {
            purge_run(
                &setup,
                &template,
                kept,
                format!("s{at}{code}"),
                Some((at, fault)),
            )
            .await;
        }
    }
    setup.stop();
}

/// Project `slug` made from `template` and offloaded, with an unregistered segment (an old
/// orphan), swept, then destroyed and purged, with `fault` set for request `at` of the sweep
/// and the purge; then purged with no fault. The requests of the sweep and the purge.
async fn purge_run(
    setup: &Setup,
    template: &tests::Snapshot,
    kept: (usize, usize),
    slug: String,
    fault: Option<(usize, S3Fault)>,
) -> Vec<String> {
    let (app, proxy) = (&setup.app, &setup.proxy);
    copy_project(app, template, "tpl", &slug).await;
    let o = setup.offloader();
    rounds(&o, &slug).await.unwrap();
    let tag = app.store.projects().files_tag(&slug).await.unwrap();
    let registered = app.segment_objects(&slug).await;
    let orphan = format!("{slug}/done-1-0000000000000000-{tag}.seg");
    let (storage, key) = (app.store.storage().clone(), orphan.clone());
    tokio::task::spawn_blocking(move || storage.put_bytes(&key, b"an orphan".to_vec()))
        .await
        .unwrap()
        .unwrap();
    match fault {
        Some((at, f)) => proxy.fault_at(at, f),
        None => proxy.clear(),
    }
    let swept = o.sweep(&slug).await;
    let now = app.segment_objects(&slug).await;
    assert!(
        registered.iter().all(|k| now.contains(k)),
        "{fault:?}: the sweep ({swept:?}) deleted a registered segment: {registered:?} {now:?}"
    );
    app.store.queue().destroy_project(&slug).await.unwrap();
    let purged = o.sweep_destroyed().await;
    let calls = proxy.seen();
    proxy.clear();
    // With no fault: the sweep and the purge end their work.
    wait_for(
        &format!("{fault:?}: sweep {swept:?}, purge {purged:?}: a clean purge"),
        Duration::from_secs(20),
        || async {
            o.sweep_destroyed().await.ok()?;
            app.store
                .queue()
                .destroyed_mark(&slug)
                .await
                .ok()?
                .is_none()
                .then_some(())
        },
    )
    .await;
    assert_eq!(
        (
            setup.objects_under(&format!("faults/{slug}")),
            setup.objects_under(&format!("faults/_archives/{slug}"))
        ),
        (0, 0),
        "{fault:?}: the destroyed project's objects are gone"
    );
    assert_eq!(
        (
            setup.objects_under("faults/stays"),
            setup.objects_under("faults/_archives/stays")
        ),
        kept,
        "{fault:?}: another project's objects stay"
    );
    calls
}
