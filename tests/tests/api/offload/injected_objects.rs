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

#[tokio::test]
async fn any_object_store_call_of_the_offloader_may_fail_or_lose_its_answer() {
    let dir = std::env::temp_dir().join(tests::random_name("tracker-s3-"));
    let s3 = S3::start(&dir);
    let proxy = S3Proxy::start(s3.port).await;
    let app = TestApp::start_private_with(|c| c.storage = Some(s3.storage_url("faults"))).await;
    // A store of the app's namespace whose object store calls go through the proxy.
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
    let offloader = || Offloader::new(store.clone(), app.dir.join("archive"));

    prepare(&app, "tpl").await;
    app.assert_invariant("tpl").await;
    let template = app.dump_project("tpl").await;
    // A clean run: its requests are the ones to fault.
    copy_project(&app, &template, "tpl", "clean").await;
    proxy.clear();
    rounds(&offloader(), "clean").await.unwrap();
    let calls = proxy.seen();
    eprintln!("{} requests in a clean run: {calls:?}", calls.len());
    check(&app, "clean", "clean run").await;
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
            copy_project(&app, &template, "tpl", &slug).await;
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
            check(&app, &slug, &what).await;
        }
    }
    drop(app);
    drop(s3);
    let _ = std::fs::remove_dir_all(dir);
}
