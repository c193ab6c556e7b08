//! Big projects: done items offloaded to disk or discarded, long queues spilled and brought
//! back in order, the completion log archived continuously, one offloader at a time, and a kill
//! at each step of an offload leaving every item in exactly one place (`tracker check`).

use server::store::{
    offload::offloader::{Offloader, Orphans, StopAfter},
    ClaimOutcome, ClaimRequest, DoneOutcome, DoneReport, Refusal, SegmentEntry, StoreError,
};
use std::time::Duration;
use tests::{wait_for, TestApp, ADMIN_TOKEN};

mod destroyed;
mod faults;
mod injected;
mod injected_objects;
mod queues;
mod rollback;
mod storage;

fn offloader(app: &TestApp) -> Offloader {
    Offloader::new(app.store.clone(), app.dir.join("archive"))
}

fn names(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}-{i:05}")).collect()
}

/// A project `slug` with `n` items `SLUG-00000...`, its settings changed by `f`.
async fn project(
    app: &TestApp,
    slug: &str,
    n: usize,
    f: impl FnOnce(&mut server::store::Settings),
) {
    app.project(slug, &[]).await;
    app.settings(slug, f).await;
    let added = app
        .store
        .queue()
        .add_items(slug, "todo", &names(slug, n))
        .await
        .unwrap();
    assert_eq!(added, n as u64);
}

/// Claims up to `n` items through the store; none when nothing is waiting in Redis.
async fn claim(app: &TestApp, slug: &str, n: usize) -> Vec<String> {
    let req = ClaimRequest {
        downloader: "alice".into(),
        ip: "10.0.0.1".into(),
        n,
        name_ok: true,
        ..Default::default()
    };
    match app
        .store
        .queue()
        .claim(slug, &req, server::store::now_ms())
        .await
        .unwrap()
    {
        ClaimOutcome::Items(items, _) => items,
        ClaimOutcome::Refused(Refusal::NothingToGive) => vec![],
        other => panic!("unexpected {other:?}"),
    }
}

fn report(items: Vec<String>) -> DoneReport {
    DoneReport {
        downloader: "alice".into(),
        version: "20240101.01".into(),
        ip: "10.0.0.1".into(),
        id: "null".into(),
        bytes: vec![("data".into(), 10)],
        items,
        ..Default::default()
    }
}

/// Claims and completes every item of `slug`, 100 per report.
async fn complete_all(app: &TestApp, slug: &str) -> usize {
    let mut n = 0;
    loop {
        let items = claim(app, slug, 100).await;
        if items.is_empty() {
            return n;
        }
        n += items.len();
        let out = app
            .store
            .queue()
            .done(slug, &report(items), server::store::now_ms())
            .await
            .unwrap();
        assert!(matches!(out, DoneOutcome::Recorded { .. }), "{out:?}");
    }
}

/// The panel's "Archive" of the log of `slug` up to now.
async fn archive_now(app: &TestApp, slug: &str) -> tests::Reply {
    app.send(
        app.http
            .post(app.url(&format!("/admin/api/{slug}/log/archive")))
            .bearer_auth(tests::ADMIN_TOKEN)
            .json(&serde_json::json!({ "to": server::store::now_ms() })),
    )
    .await
}

async fn scard(app: &TestApp, key: String) -> u64 {
    use fred::prelude::*;
    app.store.client().scard(key).await.unwrap()
}

async fn hlen(app: &TestApp, key: String) -> u64 {
    use fred::prelude::*;
    app.store.client().hlen(key).await.unwrap()
}

/// The sweep's judgement with no wait: unregistered files of this namespace are orphans at
/// once.
async fn sweep_now(
    app: &TestApp,
    slug: &str,
    registered: std::collections::HashSet<String>,
) -> Orphans {
    Orphans {
        registered,
        left: Default::default(),
        tag: app.store.projects().files_tag(slug).await.unwrap(),
        now: app.store.offload().redis_now_ms().await.unwrap(),
        age: 0,
    }
}

/// Ticks `o` on `slug` until it finds nothing to do.
async fn settle(o: &Offloader, slug: &str) {
    for _ in 0..200 {
        match o.tick(slug, false).await.unwrap() {
            Some(did) if did != Default::default() => continue,
            _ => return,
        }
    }
    panic!("the offloader of {slug} never settled");
}

#[tokio::test]
async fn offload_moves_done_items_and_their_timelines_to_disk_and_still_answers_for_them() {
    let app = TestApp::start().await;
    project(&app, "big", 3000, |s| {
        s.done_policy = "offload".into();
        s.offload_keep = 1000;
        s.segment_items = 1000;
    })
    .await;
    assert_eq!(complete_all(&app, "big").await, 3000);
    let k = app.store.keys().project("big");
    assert_eq!(hlen(&app, k.timeline()).await, 3000);
    settle(&offloader(&app), "big").await;

    // Redis keeps `offload_keep` done items (and their timelines); the rest are on disk.
    assert_eq!(scard(&app, k.done()).await, 1000);
    assert_eq!(hlen(&app, k.timeline()).await, 1000);
    let state = app.store.offload().offload_summary("big").await.unwrap();
    assert_eq!((state.done_on_disk, state.segments), (2000, 2));
    assert!(state.bytes > 0);
    // The same progress in `/metrics`.
    let req = app.http.get(app.url("/metrics"));
    let m = app.send(req.bearer_auth(tests::ADMIN_TOKEN)).await;
    assert_eq!(m.status, 200, "{}", m.body);
    assert!(
        m.body
            .contains("tracker_offload_segments{project=\"big\"} 2\n"),
        "{}",
        m.body
    );
    assert!(
        m.body
            .contains("tracker_offload_last_run_timestamp_seconds{project=\"big\"} 1"),
        "{}",
        m.body
    );
    assert_eq!(app.counts("big").await.done, 3000);
    app.assert_invariant("big").await;
    let check = app.cli(&["check", "big"], b"");
    assert!(check.ok, "tracker check: {} {}", check.out, check.err);

    // An offloaded item: its status and timeline, exactly.
    let redis_done: Vec<String> = {
        use fred::prelude::*;
        app.store.client().smembers(k.done()).await.unwrap()
    };
    let offloaded = names("big", 3000)
        .into_iter()
        .find(|i| !redis_done.contains(i))
        .unwrap();
    let r = app.get(&format!("/big/items/{offloaded}.json")).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let v: serde_json::Value = serde_json::from_str(&r.body).unwrap();
    assert_eq!(v["status"], "done", "{v}");
    let r = app
        .send(
            app.http
                .get(app.url(&format!("/admin/api/big/item?name={offloaded}")))
                .bearer_auth(ADMIN_TOKEN),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let v: serde_json::Value = serde_json::from_str(&r.body).unwrap();
    assert_eq!(v["state"], "done", "{v}");
    assert!(v["detail"].as_str().unwrap().contains("on disk"), "{v}");
    let events: Vec<&str> = v["timeline"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["e"].as_str().unwrap())
        .collect();
    assert_eq!(events, ["claimed", "done"], "{v}");

    // Items already offloaded are known: adding them again adds nothing.
    let again = app
        .store
        .queue()
        .add_items("big", "todo", &names("big", 3000))
        .await
        .unwrap();
    assert_eq!(again, 0);
    let cli = app.cli(
        &["items", "add", "big", "-"],
        format!("{offloaded}\nnew-one\n").as_bytes(),
    );
    assert!(cli.out.contains("1 new items"), "{} {}", cli.out, cli.err);

    // Nor does the backfeed, whose filter never saw it (it was added by other means).
    app.settings("big", |s| s.backfeed_key = "s3cret".into())
        .await;
    let r = app
        .post(
            "/backfeed/legacy/big-s3cret?delimiter=%0A",
            format!("{offloaded}\nbackfed-new\n"),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        app.counts("big").await.todo,
        2,
        "only the new one (and new-one)"
    );

    // A late repeat of a done report for an offloaded item is a duplicate, not an error.
    let r = app.done("big", "alice", &offloaded, 5).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(app.counts("big").await.done, 3000);
    app.assert_invariant("big").await;
}

#[tokio::test]
async fn discard_keeps_only_a_filter_of_the_done_items_names() {
    let app = TestApp::start().await;
    project(&app, "gone", 2500, |s| {
        s.done_policy = "discard".into();
        s.offload_keep = 500;
        s.segment_items = 1000;
    })
    .await;
    complete_all(&app, "gone").await;
    settle(&offloader(&app), "gone").await;
    let k = app.store.keys().project("gone");
    assert_eq!(scard(&app, k.done()).await, 500);
    assert_eq!(hlen(&app, k.timeline()).await, 500);
    let state = app.store.offload().offload_summary("gone").await.unwrap();
    assert_eq!((state.discarded, state.done_on_disk), (2000, 0));
    app.assert_invariant("gone").await;
    // The names are gone, the filter still knows them: none is queued again.
    assert_eq!(
        app.store
            .queue()
            .add_items("gone", "todo", &names("gone", 2500))
            .await
            .unwrap(),
        0
    );
    let redis_done: Vec<String> = {
        use fred::prelude::*;
        app.store.client().smembers(k.done()).await.unwrap()
    };
    let discarded = names("gone", 2500)
        .into_iter()
        .find(|i| !redis_done.contains(i))
        .unwrap();
    let status = app
        .store
        .queue()
        .item_status("gone", &discarded)
        .await
        .unwrap();
    assert_eq!(status.state.as_deref(), Some("done"));
    assert!(status.detail.contains("discarded"), "{}", status.detail);
    assert_eq!(status.timeline, "[]");
    // New names still go in.
    assert_eq!(
        app.store
            .queue()
            .add_items("gone", "todo", &names("fresh", 100))
            .await
            .unwrap(),
        100
    );
    app.assert_invariant("gone").await;
}

#[tokio::test]
async fn keep_leaves_every_done_item_in_redis() {
    let app = TestApp::start().await;
    project(&app, "small", 2500, |s| {
        s.offload_keep = 500;
        s.segment_items = 1000;
    })
    .await;
    complete_all(&app, "small").await;
    let o = offloader(&app);
    assert_eq!(
        o.tick("small", false).await.unwrap(),
        Some(Default::default())
    );
    let k = app.store.keys().project("small");
    assert_eq!(scard(&app, k.done()).await, 2500);
    assert_eq!(
        app.store
            .offload()
            .offload_summary("small")
            .await
            .unwrap()
            .segments,
        0
    );
}

/// A kill at each instant of an offload (before the file, after the file, after the
/// registration) leaves each item in Redis or in a registered segment, never both; the file a
/// killed offload left unregistered is swept away; the next offloader finishes the work.
#[tokio::test]
async fn an_offload_killed_at_each_step_loses_and_duplicates_nothing() {
    let app = TestApp::start().await;
    project(&app, "crash", 3000, |s| {
        s.done_policy = "offload".into();
        s.offload_keep = 1000;
        s.segment_items = 1000;
        s.queue_high = 2000;
        s.fifo = true;
    })
    .await;
    // 2000 done; 1000 left waiting, in a queue whose mark spills.
    let items = claim(&app, "crash", 2000).await;
    app.store
        .queue()
        .done("crash", &report(items), server::store::now_ms())
        .await
        .unwrap();
    app.store
        .queue()
        .add_items("crash", "todo", &names("more", 2000))
        .await
        .unwrap();
    let settings = app
        .store
        .projects()
        .project("crash")
        .await
        .unwrap()
        .unwrap();
    for stop in [StopAfter::Read, StopAfter::Written, StopAfter::Registered] {
        let killed = offloader(&app);
        assert!(killed.lease("crash").await.unwrap());
        killed.offload_done("crash", &settings, stop).await.unwrap();
        killed
            .spill("crash", &settings, "todo", stop)
            .await
            .unwrap();
        app.assert_invariant("crash").await;
        let files = app.segment_objects("crash").await.len();
        let registered = app.store.offload().segment_entries("crash").await.unwrap();
        match stop {
            StopAfter::Read => assert_eq!((files, registered.len()), (0, 0)),
            // Written, not registered: orphans, which the sweep removes.
            StopAfter::Written => {
                assert_eq!((files, registered.len()), (2, 0));
                let ids = registered.iter().map(|(id, _)| id.clone()).collect();
                let (orphans, storage) = (
                    sweep_now(&app, "crash", ids).await,
                    app.store.storage().clone(),
                );
                let gone =
                    tokio::task::spawn_blocking(move || orphans.remove_in(&storage, "crash"));
                assert_eq!(gone.await.unwrap(), 2);
            }
            _ => assert_eq!((files, registered.len()), (2, 2)),
        }
        // The killed process's lease runs out (its time cut to 200 ms here, as if the 30 s
        // had passed, for it is never released); until then no other offloader works.
        let next = offloader(&app);
        assert!(!next.lease("crash").await.unwrap());
        {
            use fred::prelude::*;
            let lease = app.store.keys().project("crash").offload_lease();
            let cut: bool = app.store.client().pexpire(lease, 200, None).await.unwrap();
            assert!(cut, "the killed process's lease was there");
        }
        wait_for("the lease to expire", Duration::from_secs(10), || async {
            next.lease("crash").await.unwrap().then_some(())
        })
        .await;
        assert!(
            !killed.lease("crash").await.unwrap(),
            "the killed one lost it"
        );
        next.release("crash").await.unwrap();
    }
    let o = offloader(&app);
    settle(&o, "crash").await;
    app.assert_invariant("crash").await;
    let counts = app.counts("crash").await;
    assert_eq!((counts.done, counts.todo), (2000, 3000));
    let check = app.cli(&["check", "crash"], b"");
    assert!(check.ok, "tracker check: {} {}", check.out, check.err);
}

#[tokio::test]
async fn only_the_lease_holder_may_change_what_is_on_disk() {
    let app = TestApp::start().await;
    project(&app, "lease", 10, |_| {}).await;
    let (a, b) = (offloader(&app), offloader(&app));
    assert!(a.lease("lease").await.unwrap());
    assert!(a.lease("lease").await.unwrap(), "renewed by its holder");
    assert!(!b.lease("lease").await.unwrap());
    let entry = SegmentEntry {
        kind: "done".into(),
        count: 1,
        ..Default::default()
    };
    let refused = app
        .store
        .offload()
        .commit_segment(
            "lease",
            "not-the-token",
            "done-x",
            &entry,
            &[("lease-00001".into(), String::new())],
            u64::MAX,
        )
        .await;
    assert!(
        matches!(refused, Err(StoreError::Refused(Refusal::Lease))),
        "{refused:?}"
    );
    // Nothing changed: no segment registered, the item where it was.
    assert!(app
        .store
        .offload()
        .segment_entries("lease")
        .await
        .unwrap()
        .is_empty());
    let status = app
        .store
        .queue()
        .item_status("lease", "lease-00001")
        .await
        .unwrap();
    assert_eq!(status.state.as_deref(), Some("todo"), "{status:?}");
    app.assert_invariant("lease").await;
}

/// `tracker check` looks names up on disk through one filter of all the segments' names: an
/// item put back into Redis behind the tracker's back, and a segment registered twice, are
/// still found in two places.
#[tokio::test]
async fn check_finds_items_in_redis_and_on_disk_and_on_two_segments() {
    use fred::prelude::*;
    let app = TestApp::start().await;
    project(&app, "dup", 3000, |s| {
        s.done_policy = "offload".into();
        s.offload_keep = 1000;
        s.segment_items = 1000;
    })
    .await;
    assert_eq!(complete_all(&app, "dup").await, 3000);
    settle(&offloader(&app), "dup").await;
    let check = app.cli(&["check", "dup"], b"");
    assert!(check.ok, "tracker check: {} {}", check.out, check.err);

    let k = app.store.keys().project("dup");
    let redis_done: Vec<String> = app.store.client().smembers(k.done()).await.unwrap();
    let offloaded = names("dup", 3000)
        .into_iter()
        .find(|i| !redis_done.contains(i))
        .expect("an item on disk");
    let _: u64 = app.store.client().sadd(k.done(), &offloaded).await.unwrap();
    let check = app.cli(&["check", "dup"], b"");
    assert!(
        !check.ok && check.out.contains(&format!("{offloaded:?} is in 2 places")),
        "tracker check: {} {}",
        check.out,
        check.err
    );
    let _: u64 = app.store.client().srem(k.done(), &offloaded).await.unwrap();

    // One done segment registered again under another id, its file copied.
    let segs: std::collections::HashMap<String, String> =
        app.store.client().hgetall(k.segs()).await.unwrap();
    let (id, entry) = segs
        .iter()
        .find(|(_, e)| e.contains("\"done\""))
        .expect("a done segment");
    let (storage, from) = (app.store.storage().clone(), format!("dup/{id}.seg"));
    let to = format!("dup/{id}x.seg");
    tokio::task::spawn_blocking(move || storage.put_bytes(&to, storage.get_bytes(&from)?))
        .await
        .unwrap()
        .unwrap();
    let _: u64 = app
        .store
        .client()
        .hset(k.segs(), (format!("{id}x"), entry.as_str()))
        .await
        .unwrap();
    let check = app.cli(&["check", "dup"], b"");
    let twice = format!("disk done {id}x");
    assert!(
        !check.ok
            && check
                .out
                .lines()
                .any(|l| l.contains("is in 2 places") && l.contains(&twice)),
        "tracker check: {} {}",
        check.out,
        check.err
    );
}

/// A registry entry this version cannot read (damaged, or written by a newer version) does not
/// make its file an orphan: the sweep keeps every file the registry names.
#[tokio::test]
async fn a_segment_whose_registry_entry_does_not_parse_is_kept_by_the_sweep() {
    use fred::prelude::*;
    let app = TestApp::start_local().await;
    project(&app, "reg", 2000, |s| {
        s.done_policy = "offload".into();
        s.offload_keep = 0;
        s.segment_items = 1000;
    })
    .await;
    assert_eq!(complete_all(&app, "reg").await, 2000);
    let o = offloader(&app);
    settle(&o, "reg").await;
    let k = app.store.keys().project("reg");
    let ids: Vec<String> = app.store.client().hkeys(k.segs()).await.unwrap();
    assert!(!ids.is_empty(), "segments written");
    let _: () = app
        .store
        .client()
        .hset(k.segs(), (ids[0].as_str(), "{not an entry"))
        .await
        .unwrap();
    // Old enough to be swept if it were an orphan.
    let dir = app.dir.join("offload").join("reg");
    let old = std::time::SystemTime::now() - Duration::from_secs(24 * 3600);
    for entry in std::fs::read_dir(&dir).unwrap() {
        std::fs::File::options()
            .write(true)
            .open(entry.unwrap().path())
            .unwrap()
            .set_modified(old)
            .unwrap();
    }
    assert_eq!(o.sweep("reg").await.unwrap(), 0, "nothing swept");
    for id in &ids {
        assert!(dir.join(format!("{id}.seg")).exists(), "{id} kept");
    }
}

/// Two installs (namespaces) sharing one offload directory, each with a project `p`: each
/// sweeps and purges only the segment files it wrote, whatever its registry lacks; a purge left
/// half-way is finished by the next sweep of destroyed projects.
#[tokio::test]
async fn installs_sharing_an_offload_directory_keep_each_others_files() {
    let a = TestApp::start_local().await;
    let shared = a.dir.join("offload");
    let b = TestApp::start_with(|c| {
        c.offload_dir = shared.clone();
        c.storage = None;
    })
    .await;
    assert_ne!(a.store.keys().segment_tag(), b.store.keys().segment_tag());
    let offload = |s: &mut server::store::Settings| {
        s.done_policy = "offload".into();
        s.offload_keep = 0;
        s.segment_items = 1000;
    };
    for app in [&a, &b] {
        project(app, "p", 2000, offload).await;
        assert_eq!(complete_all(app, "p").await, 2000);
        settle(&offloader(app), "p").await;
    }
    let dir = shared.join("p");
    let files = || -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(&dir)
            .map(|d| {
                d.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        names.sort();
        names
    };
    let (tag_a, tag_b) = (
        a.store.projects().files_tag("p").await.unwrap(),
        b.store.projects().files_tag("p").await.unwrap(),
    );
    assert!(tag_a.starts_with(&a.store.keys().segment_tag()));
    let of = |tag: &str| -> Vec<String> {
        let tag = format!("-{tag}.seg");
        files().into_iter().filter(|f| f.ends_with(&tag)).collect()
    };
    let (of_a, of_b) = (of(&tag_a), of(&tag_b));
    assert!(!of_a.is_empty() && !of_b.is_empty());
    assert_eq!(of_a.len() + of_b.len(), files().len());
    // Judged with no wait (every file old enough to be an orphan), neither install's sweep
    // takes the other's files, which its registry does not name.
    for app in [&a, &b] {
        let ids = app
            .store
            .offload()
            .segment_ids("p")
            .await
            .unwrap()
            .into_iter()
            .collect();
        assert_eq!(sweep_now(app, "p", ids).await.remove(&dir), 0);
    }
    assert_eq!(offloader(&a).sweep("p").await.unwrap(), 0);
    assert_eq!(files().len(), of_a.len() + of_b.len());
    let old = std::time::SystemTime::now() - Duration::from_secs(24 * 3600);

    // B destroys its p: A's files stay, and A still answers for its items on disk.
    let r = b
        .send(
            b.http
                .delete(b.url("/admin/api/p?confirm=p"))
                .header("authorization", format!("Bearer {ADMIN_TOKEN}")),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(files(), of_a, "only B's files went");
    a.assert_invariant("p").await;
    let check = a.cli(&["check", "p"], b"");
    assert!(check.ok, "{}{}", check.out, check.err);

    // A purge that died half-way leaves a `.purge-TAG-…` directory, which the next sweep of
    // destroyed projects deletes (A's only).
    let left_a = shared.join(format!(".purge-{}-p-1", a.store.keys().segment_tag()));
    let left_b = shared.join(format!(".purge-{}-p-1", b.store.keys().segment_tag()));
    for d in [&left_a, &left_b] {
        std::fs::create_dir_all(d).unwrap();
        std::fs::write(d.join("x.seg"), b"x").unwrap();
        std::fs::File::open(d).unwrap().set_modified(old).unwrap();
    }
    assert_eq!(offloader(&a).sweep_destroyed().await.unwrap(), 1);
    assert!(!left_a.exists() && left_b.exists());
}
