//! The Lua scripts survive a flushed script cache (reload on NOSCRIPT).

use fred::prelude::*;
use tests::TestApp;

#[tokio::test]
async fn every_script_reloads_after_script_flush() {
    let app = TestApp::start().await;
    app.project("p1", &["a", "b"]).await;
    let _: () = app.store.client().script_flush(false).await.unwrap();
    // add_items, claim, done, snapshot: each once, each after the flush.
    let _: () = app.store.client().script_flush(false).await.unwrap();
    assert_eq!(
        app.store
            .add_items("p1", "todo", &["c".to_string()])
            .await
            .unwrap(),
        1
    );
    let _: () = app.store.client().script_flush(false).await.unwrap();
    let item = app.claim("p1", "alice").await;
    let _: () = app.store.client().script_flush(false).await.unwrap();
    assert_eq!(app.done("p1", "alice", &item, 1).await.status, 200);
    let _: () = app.store.client().script_flush(false).await.unwrap();
    let board = app.store.leaderboard("p1", -1, 5).await.unwrap().unwrap();
    assert_eq!(board.counts.done, 1);
    assert_eq!(
        app.store.scripts().all().len(),
        4,
        "every script is exercised above"
    );
}
