//! A destroyed project's files: each carries its project's own tag (namespace and
//! incarnation), so a purge that runs late, in any process, deletes the destroyed project's
//! files and never those of a project made again under the slug.

use super::{archive_now, complete_all, offloader, project, settle};
use server::store::{offload::offloader::purge_project_files, Settings};
use std::path::{Path, PathBuf};
use tests::TestApp;

fn offload(s: &mut Settings) {
    s.done_policy = "offload".into();
    s.offload_keep = 0;
    s.segment_items = 1000;
}

/// Every file under `dir`, as paths relative to it, sorted.
fn tree(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            if e.file_type().unwrap().is_dir() {
                todo.push(e.path());
            } else {
                out.push(e.path().strip_prefix(dir).unwrap().to_path_buf());
            }
        }
    }
    out.sort();
    out
}

/// Project `p` with 2,000 items done, 2,000 offloaded in two segments, its log archived;
/// `legacy`: made as before projects had an incarnation (its files carry the namespace's tag
/// alone).
async fn made_and_offloaded(app: &TestApp, legacy: bool) {
    use fred::prelude::*;
    project(app, "p", 2000, offload).await;
    if legacy {
        let meta = app.store.keys().project("p").meta();
        let _: i64 = app.store.client().hdel(meta, "incarnation").await.unwrap();
        let tag = app.store.projects().files_tag("p").await.unwrap();
        assert_eq!(tag, app.store.keys().segment_tag());
    }
    assert_eq!(complete_all(app, "p").await, 2000);
    settle(&offloader(app), "p").await;
    let r = archive_now(app, "p").await;
    assert_eq!(r.status, 200, "{}", r.body);
}

/// One process reads a destroy's mark and is slow to purge; another purges, clears the mark,
/// and the slug is made again and offloads. The late purge then runs: the new project keeps
/// every file and item. The first round destroys a project made before projects had an
/// incarnation, the second one made after.
#[tokio::test]
async fn a_late_purge_never_deletes_the_files_of_a_project_made_again() {
    let app = TestApp::start_local().await;
    made_and_offloaded(&app, true).await;
    made_again_after_a_late_purge(&app).await;
    made_and_offloaded(&app, false).await;
    made_again_after_a_late_purge(&app).await;
}

async fn made_again_after_a_late_purge(app: &TestApp) {
    let (segs, logs) = (app.dir.join("offload"), app.dir.join("archive"));
    let old_tag = app.store.projects().files_tag("p").await.unwrap();
    assert_eq!(tree(&segs.join("p")).len(), 2);
    assert!(!tree(&logs.join("p")).is_empty());
    // Destroyed; the marks read by a process whose purge is slow.
    let (_, mark) = app.store.queue().destroy_project("p").await.unwrap();
    assert_eq!(mark.tag, old_tag);
    let read_late = app.store.queue().destroyed_projects().await.unwrap();
    assert_eq!(read_late, vec![("p".to_string(), mark.clone())]);
    // Another process purges and clears the mark; the slug is made again and offloads.
    assert_eq!(offloader(app).sweep_destroyed().await.unwrap(), 1);
    assert_eq!(app.store.queue().destroyed_mark("p").await.unwrap(), None);
    assert!(tree(&segs.join("p")).is_empty() && tree(&logs.join("p")).is_empty());
    made_and_offloaded(app, false).await;
    let new_tag = app.store.projects().files_tag("p").await.unwrap();
    assert_ne!(new_tag, old_tag);
    let (seg_files, log_files) = (tree(&segs.join("p")), tree(&logs.join("p")));
    assert_eq!(seg_files.len(), 2, "{seg_files:?}");
    assert!(!log_files.is_empty());
    assert!(app.archive_dir("p").await.ends_with(format!("p/{new_tag}")));

    // The slow purge of the old project runs only now, with the mark it read.
    purge_project_files(Some(&segs), &logs, "p", &mark.tag)
        .await
        .unwrap();
    assert_eq!(
        tree(&segs.join("p")),
        seg_files,
        "the new project's segments stay"
    );
    assert_eq!(
        tree(&logs.join("p")),
        log_files,
        "the new project's archives stay"
    );
    app.assert_invariant("p").await;
    let check = app.cli(&["check", "p"], b"");
    assert!(check.ok, "{}{}", check.out, check.err);

    // Clearing the mark it read late leaves the mark of a later destroy, whose purge then
    // deletes the new project's files.
    let (_, again) = app.store.queue().destroy_project("p").await.unwrap();
    app.store
        .queue()
        .forget_destroyed("p", &mark)
        .await
        .unwrap();
    assert_eq!(
        app.store.queue().destroyed_mark("p").await.unwrap(),
        Some(again)
    );
    assert_eq!(offloader(app).sweep_destroyed().await.unwrap(), 1);
    assert!(tree(&segs.join("p")).is_empty() && tree(&logs.join("p")).is_empty());
}
