//! `/admin/api/SLUG/claims`, `/release`, `/failed`: claims by downloader, releasing by filter,
//! failed items requeued or dropped.

use fred::prelude::*;
use server::store::Role;
use tests::panel::{account, json, Panel};
use tests::TestApp;

#[tokio::test]
async fn claims_of_one_downloader_are_released_after_a_dry_run() {
    let app = TestApp::start().await;
    app.project("p1", &["i1", "i2", "i3", "i4", "i5"]).await;
    account(&app, "root", Role::Global, &[]).await;
    for who in ["alice", "alice", "alice", "bob"] {
        app.claim("p1", who).await;
    }
    let mut p = Panel::logged_in(&app, "root").await;
    let groups = json(&p.get("/admin/api/p1/claims").await);
    assert_eq!(groups[0]["downloader"], "alice");
    assert_eq!(groups[0]["count"], 3);
    assert_eq!(groups[0]["ips"], serde_json::json!(["127.0.0.1"]));
    assert_eq!(groups[1]["count"], 1);

    let release = |dry| serde_json::json!({"downloader": "alice", "dry_run": dry});
    assert_eq!(
        json(&p.post("/admin/api/p1/release", release(true)).await)["count"],
        3
    );
    assert_eq!(app.counts("p1").await.out, 4);
    assert_eq!(
        json(&p.post("/admin/api/p1/release", release(false)).await)["count"],
        3
    );
    let counts = app.counts("p1").await;
    assert_eq!((counts.out, counts.todo), (1, 4));
    app.assert_invariant("p1").await;

    let r = p.post("/admin/api/p1/release", serde_json::json!({})).await;
    assert_eq!(r.status, 400, "a filter is required: {}", r.body);
    let r = p
        .post(
            "/admin/api/p1/release",
            serde_json::json!({"older_than_s": 0, "regex": "^i"}),
        )
        .await;
    assert_eq!(json(&r)["count"], 1);
    app.assert_invariant("p1").await;
    // Every claim was released (alice's three by name, bob's by the regex): all five are
    // served again.
    let mut served = app.claim_n("p1", "carol", 10).await;
    served.sort();
    assert_eq!(
        served,
        ["i1", "i2", "i3", "i4", "i5"],
        "released items are served again"
    );
}

#[tokio::test]
async fn failed_items_are_requeued_or_dropped() {
    let app = TestApp::start().await;
    app.project("p1", &[]).await;
    account(&app, "root", Role::Global, &[]).await;
    let failed = app.store.keys().project("p1").failed();
    for item in ["f1", "f2", "f3"] {
        let _: () = app
            .store
            .client()
            .hset(&failed, (item, r#"{"reason":"max attempts","t":1}"#))
            .await
            .unwrap();
    }
    // Put there behind the tracker's back: the count of known items is set from the states.
    app.store.upkeep().recount("p1").await.unwrap();
    let mut p = Panel::logged_in(&app, "root").await;
    let list = json(&p.get("/admin/api/p1/failed").await);
    assert_eq!(list["total"], 3);
    assert_eq!(list["items"][0]["reason"], "max attempts");
    let requeue =
        serde_json::json!({"action": "requeue", "items": ["f1", "nope"], "dry_run": true});
    assert_eq!(
        json(&p.post("/admin/api/p1/failed", requeue.clone()).await)["count"],
        1
    );
    let mut requeue = requeue;
    requeue["dry_run"] = false.into();
    assert_eq!(
        json(&p.post("/admin/api/p1/failed", requeue).await)["count"],
        1
    );
    assert_eq!(
        json(
            &p.post(
                "/admin/api/p1/failed",
                serde_json::json!({"action": "drop"})
            )
            .await
        )["count"],
        2
    );
    let counts = app.counts("p1").await;
    assert_eq!((counts.todo, counts.failed), (1, 0));
    app.assert_invariant("p1").await;
}
