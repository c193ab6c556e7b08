//! Segments in an object store (`TRACKER_STORAGE=s3://...`, a real S3-speaking server): an
//! install's segments moved into a bucket and back with `tracker storage copy` (resumable,
//! checked), read by the command line from the bucket alone; and an object server that stops
//! while the offloader works loses and duplicates nothing.

use super::{archive_now, complete_all, offloader, project, settle};
use tests::{s3::S3, TestApp};

#[tokio::test]
async fn tracker_storage_copy_moves_an_installs_segments_into_a_bucket_and_back() {
    let app = TestApp::start_local().await;
    project(&app, "moved", 3000, |s| {
        s.done_policy = "offload".into();
        s.offload_keep = 1000;
        s.segment_items = 1000;
    })
    .await;
    assert_eq!(complete_all(&app, "moved").await, 3000);
    settle(&offloader(&app), "moved").await;
    let local = app.segment_objects("moved").await;
    assert_eq!(local.len(), 2, "{local:?}");

    let s3 = S3::start(&app.dir);
    let bucket = s3.storage_url("moved-install");
    let here = format!("file://{}", app.dir.join("offload").display());
    let copy = app.cli(&["storage", "copy", "--from", &here, "--to", &bucket], b"");
    assert!(copy.ok, "{} {}", copy.out, copy.err);
    assert!(copy.out.starts_with("2 objects ("), "{}", copy.out);
    assert!(copy.out.contains("copied, 0 already there"), "{}", copy.out);
    // Run again (as after a copy stopped half-way): nothing is written twice.
    let again = app.cli(&["storage", "copy", "--from", &here, "--to", &bucket], b"");
    assert!(again.ok, "{} {}", again.out, again.err);
    assert!(
        again
            .out
            .starts_with("0 objects (0 bytes) copied, 2 already there"),
        "{}",
        again.out
    );

    // The command line reads the bucket alone: the local files gone, the check is clean and
    // an item on disk is found there.
    std::fs::rename(app.dir.join("offload"), app.dir.join("offload-moved")).unwrap();
    let env = [("TRACKER_STORAGE", bucket.as_str())];
    let check = app.cli_with(&["check", "moved"], &env, b"");
    assert!(
        check.ok,
        "tracker check on the bucket: {} {}",
        check.out, check.err
    );
    let unread = app.cli(&["check", "moved"], b"");
    assert!(
        !unread.ok,
        "without the bucket the segments are missing: {}",
        unread.out
    );

    // The log archives move beside them, under `_archives/`, where a process on the bucket
    // reads them.
    let r = archive_now(&app, "moved").await;
    assert_eq!(r.status, 200, "{}", r.body);
    let local_archives = app.archived("moved").await;
    assert_eq!(local_archives.len(), 1);
    let archive_here = format!("file://{}", app.dir.join("archive").display());
    let archive_there = s3.storage_url("moved-install/_archives");
    let copy = app.cli(
        &[
            "storage",
            "copy",
            "--from",
            &archive_here,
            "--to",
            &archive_there,
        ],
        b"",
    );
    assert!(copy.ok, "{} {}", copy.out, copy.err);
    let in_bucket = {
        let storage = server::storage::Storage::open(
            Some(&bucket),
            &app.dir,
            tokio::runtime::Handle::current(),
        )
        .unwrap();
        let tag = app.store.projects().files_tag("moved").await.unwrap();
        let archives = server::store::offload::offloader::archive::Archives::new(
            &storage,
            &app.dir.join("archive"),
            "moved",
            &tag,
        );
        tokio::task::spawn_blocking(move || {
            use std::io::Read;
            let files = archives.files().unwrap();
            files
                .iter()
                .map(|f| {
                    let mut text = String::new();
                    flate2::read::GzDecoder::new(archives.open(&f.name).unwrap())
                        .read_to_string(&mut text)
                        .unwrap();
                    (f.name.clone(), text.lines().count())
                })
                .collect::<Vec<_>>()
        })
        .await
        .unwrap()
    };
    assert_eq!(
        in_bucket,
        vec![(local_archives[0].0.clone(), local_archives[0].1.len())],
        "the archive read from the bucket"
    );

    // And back into an empty directory, the same to the byte.
    let back = app.dir.join("offload-back");
    let there = format!("file://{}", back.display());
    let home = app.cli(&["storage", "copy", "--from", &bucket, "--to", &there], b"");
    assert!(home.ok, "{} {}", home.out, home.err);
    for key in &local {
        assert_eq!(
            std::fs::read(back.join(key)).unwrap(),
            std::fs::read(app.dir.join("offload-moved").join(key)).unwrap(),
            "{key}"
        );
    }
    let env = [("TRACKER_STORAGE", there.as_str())];
    let check = app.cli_with(&["check", "moved"], &env, b"");
    assert!(
        check.ok,
        "tracker check after the way back: {} {}",
        check.out, check.err
    );

    // A storage that is neither is refused with its reason.
    let bad = app.cli(
        &["storage", "copy", "--from", "ftp://x", "--to", &there],
        b"",
    );
    assert!(
        !bad.ok && bad.err.contains("file://DIR or s3://BUCKET/PREFIX"),
        "{}",
        bad.err
    );
}

#[tokio::test]
async fn an_object_store_that_stops_loses_and_duplicates_nothing() {
    let dir = std::env::temp_dir().join(tests::random_name("tracker-s3-"));
    let mut s3 = S3::start(&dir);
    let url = s3.storage_url("stops");
    let app = TestApp::start_with(|c| c.storage = Some(url.clone())).await;
    project(&app, "gone", 3000, |s| {
        s.done_policy = "offload".into();
        s.offload_keep = 1000;
        s.segment_items = 1000;
    })
    .await;
    assert_eq!(complete_all(&app, "gone").await, 3000);

    // The object server stops before the offloader's first segment: the offload fails, and
    // every done item stays in Redis, counted once.
    s3.kill();
    let o = offloader(&app);
    assert!(o.lease("gone").await.unwrap());
    assert!(
        o.tick("gone", false).await.is_err(),
        "a write to a stopped server fails"
    );
    let m = app
        .send(
            app.http
                .get(app.url("/metrics"))
                .bearer_auth(tests::ADMIN_TOKEN),
        )
        .await;
    // The failed upload, counted with its time (the store through which the offloader wrote
    // is this process's: the test's own).
    let series = |name: &str| -> u64 {
        m.body
            .lines()
            .filter(|l| l.starts_with(name))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
            .sum()
    };
    assert!(
        series("tracker_storage_errors_total{op=\"put") >= 1,
        "{}",
        m.body
    );
    assert!(
        series("tracker_storage_call_seconds_count{op=\"put") >= 1,
        "{}",
        m.body
    );
    app.assert_invariant("gone").await;
    assert_eq!(app.counts("gone").await.done, 3000);
    assert!(app
        .store
        .offload()
        .segment_entries("gone")
        .await
        .unwrap()
        .is_empty());

    // Back: the offloader finishes, and every item is where the check finds it.
    s3.restart();
    settle(&o, "gone").await;
    let state = app.store.offload().offload_summary("gone").await.unwrap();
    assert_eq!((state.done_on_disk, state.segments), (2000, 2));
    assert_eq!(app.segment_objects("gone").await.len(), 2);
    assert_eq!(app.counts("gone").await.done, 3000);
    app.assert_invariant("gone").await;
    let check = app.cli(&["check", "gone"], b"");
    assert!(check.ok, "tracker check: {} {}", check.out, check.err);

    // Stopped again while items on disk are asked for: an error, never a wrong answer.
    s3.kill();
    let k = app.store.keys().project("gone");
    let in_redis: Vec<String> = {
        use fred::prelude::*;
        app.store.client().smembers(k.done()).await.unwrap()
    };
    let on_disk = (0..3000)
        .map(|i| format!("gone-{i:05}"))
        .find(|i| !in_redis.contains(i))
        .unwrap();
    let r = app.get(&format!("/gone/items/{on_disk}.json")).await;
    assert_eq!(r.status, 503, "{}", r.body);
    assert!(
        r.body.contains("cannot read its offloaded items"),
        "{}",
        r.body
    );
    // A sweep whose listing fails deletes nothing; nor does the purge of a destroyed project,
    // whose mark stays for the next sweep.
    assert_eq!(o.sweep("gone").await.unwrap(), 0);
    s3.restart();
    let r = app.get(&format!("/gone/items/{on_disk}.json")).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(r.body.contains("\"done\""), "{}", r.body);
    assert_eq!(
        app.segment_objects("gone").await.len(),
        2,
        "the sweep kept them"
    );
    let (_, mark) = app.store.queue().destroy_project("gone").await.unwrap();
    s3.kill();
    assert!(
        o.sweep_destroyed().await.is_err(),
        "a purge that cannot list fails"
    );
    assert_eq!(
        app.store.queue().destroyed_mark("gone").await.unwrap(),
        Some(mark),
        "its mark stays"
    );
    s3.restart();
    o.sweep_destroyed().await.unwrap();
    assert!(app
        .store
        .queue()
        .destroyed_mark("gone")
        .await
        .unwrap()
        .is_none());
    assert!(
        app.segment_objects("gone").await.is_empty(),
        "its segments are gone"
    );
    drop(app);
    let _ = std::fs::remove_dir_all(dir);
}

/// The bytes of every file under `dir`, by path below it.
fn files_under(dir: &std::path::Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let Ok(read) = std::fs::read_dir(dir) else {
        return out;
    };
    for entry in read.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if path.is_dir() {
            out.extend(
                files_under(&path)
                    .into_iter()
                    .map(|(k, v)| (format!("{name}/{k}"), v)),
            );
        } else {
            out.push((name, std::fs::read(&path).unwrap()));
        }
    }
    out
}

#[tokio::test]
async fn log_archives_go_to_the_bucket_and_an_outage_trims_nothing() {
    let dir = std::env::temp_dir().join(tests::random_name("tracker-s3-"));
    let mut s3 = S3::start(&dir);
    let url = s3.storage_url("logs");
    let app = TestApp::start_with(|c| c.storage = Some(url.clone())).await;
    project(&app, "arch", 300, |_| {}).await;
    assert_eq!(complete_all(&app, "arch").await, 300);
    let log_len = || async {
        use fred::prelude::*;
        let n: u64 = app
            .store
            .client()
            .xlen(app.store.keys().project("arch").log())
            .await
            .unwrap();
        n
    };
    let entries = log_len().await;
    assert!(entries > 0);
    let admin = |path: &str| {
        app.send(
            app.http
                .get(app.url(&format!("/admin/api/arch/{path}")))
                .bearer_auth(tests::ADMIN_TOKEN),
        )
    };

    // The object server down: the archive fails and the log keeps every entry; the list of
    // archives and the log's download are refused for now (503), never answered short.
    s3.kill();
    let r = archive_now(&app, "arch").await;
    assert!(r.status >= 500, "{} {}", r.status, r.body);
    assert_eq!(log_len().await, entries, "nothing trimmed");
    for path in ["archives", "log"] {
        let r = admin(path).await;
        assert_eq!(r.status, 503, "{path}: {}", r.body);
        assert!(r.body.contains("retry shortly"), "{path}: {}", r.body);
    }

    // Back: the archive is an object in the bucket, under `_archives/`, and nothing of it is
    // on this machine's disk.
    s3.restart();
    let r = archive_now(&app, "arch").await;
    assert_eq!(r.status, 200, "{}", r.body);
    let name = serde_json::from_str::<serde_json::Value>(&r.body).unwrap()["file"]
        .as_str()
        .expect("a file")
        .to_string();
    assert_eq!(log_len().await, 0, "trimmed after it was stored");
    let in_bucket = files_under(&s3.root.join(tests::s3::BUCKET).join("logs/_archives/arch"));
    assert_eq!(
        in_bucket.len(),
        1,
        "{:?}",
        in_bucket.iter().map(|f| &f.0).collect::<Vec<_>>()
    );
    assert!(
        in_bucket[0].0.ends_with(&format!("/{name}")),
        "{}",
        in_bucket[0].0
    );
    assert!(
        files_under(&app.dir.join("archive")).is_empty(),
        "no archive on the local disk"
    );
    let listed = admin("archives").await;
    assert_eq!(listed.status, 200, "{}", listed.body);
    assert!(listed.body.contains(&name), "{}", listed.body);
    let got = app
        .http
        .get(app.url(&format!("/admin/api/arch/archives/{name}")))
        .bearer_auth(tests::ADMIN_TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(got.status(), 200);
    assert_eq!(
        got.bytes().await.unwrap().to_vec(),
        in_bucket[0].1,
        "downloaded whole"
    );
    let log = admin("log").await;
    assert_eq!(log.status, 200, "{}", log.body);
    assert_eq!(
        log.body.lines().count() as u64,
        entries,
        "the log read back from the bucket"
    );
    let r = admin("archives/arch-1-2.ndjson.gz").await;
    assert_eq!(r.status, 404, "{}", r.body);

    // Its entries, read as the tests' own reader reads the bucket.
    let archived = app.archived("arch").await;
    assert_eq!(archived.len(), 1);
    assert_eq!(archived[0].1.len() as u64, entries);

    // A destroyed project's archives go from the bucket with its segments.
    let r = app
        .send(
            app.http
                .delete(app.url("/admin/api/arch?confirm=arch"))
                .bearer_auth(tests::ADMIN_TOKEN),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    offloader(&app).sweep_destroyed().await.unwrap();
    assert!(
        files_under(&s3.root.join(tests::s3::BUCKET).join("logs/_archives/arch")).is_empty(),
        "the archives went with the project"
    );
    drop(app);
    let _ = std::fs::remove_dir_all(dir);
}

/// The public `tracker-stats.json` shows the count of a project's log archives: many
/// requests make one listing of the bucket (a paid call, and a slow one while the store is
/// down), and a store that stops leaves the page answering with the last count.
#[tokio::test]
async fn the_public_stats_do_not_list_the_bucket_for_every_request() {
    let dir = std::env::temp_dir().join(tests::random_name("tracker-s3-"));
    let mut s3 = S3::start(&dir);
    let proxy = tests::s3_proxy::S3Proxy::start(s3.port).await;
    let url = proxy.storage_url("stats");
    let app = TestApp::start_with(|c| c.storage = Some(url.clone())).await;
    project(&app, "seen", 300, |_| {}).await;
    assert_eq!(complete_all(&app, "seen").await, 300);
    let r = archive_now(&app, "seen").await;
    assert_eq!(r.status, 200, "{}", r.body);
    proxy.clear();
    let files = |body: &str| -> u64 {
        serde_json::from_str::<serde_json::Value>(body).unwrap()["offload"]["log_files"]
            .as_u64()
            .unwrap()
    };
    for _ in 0..20 {
        let r = app.get("/seen/tracker-stats.json").await;
        assert_eq!(r.status, 200, "{}", r.body);
        assert_eq!(files(&r.body), 1, "{}", r.body);
    }
    let listings = proxy
        .seen()
        .iter()
        .filter(|c| c.contains("list-type=2"))
        .count();
    assert!(listings <= 1, "{listings} listings: {:?}", proxy.seen());
    s3.kill();
    let r = app.get("/seen/tracker-stats.json").await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(files(&r.body), 1, "the last count: {}", r.body);
    drop(app);
    let _ = std::fs::remove_dir_all(dir);
}
