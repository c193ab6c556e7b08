//! `GET /admin/api/SLUG/search` and `tracker items search`: items by state, name (glob or
//! regular expression), claimant and claim age, paged by a cursor; bad searches are 400s.

use server::store::{now_ms, DoneReport};
use std::collections::BTreeSet;
use tests::{TestApp, ADMIN_TOKEN};

/// One page of a search of project `slug` (`query`: the URL's query), as the admin reads it.
async fn page_of(app: &TestApp, slug: &str, query: &str) -> serde_json::Value {
    let r = app
        .send(
            app.http
                .get(app.url(&format!("/admin/api/{slug}/search?{query}")))
                .bearer_auth(ADMIN_TOKEN),
        )
        .await;
    assert_eq!(r.status, 200, "{query}: {}", r.body);
    serde_json::from_str(&r.body).unwrap()
}

/// Every item a search finds, page by page (`limit` a page), and how many pages it took.
async fn all_pages(app: &TestApp, query: &str, limit: usize) -> (Vec<serde_json::Value>, usize) {
    let (mut found, mut cursor, mut pages) = (Vec::new(), String::new(), 0);
    loop {
        let page = page_of(app, "s1", &format!("{query}&limit={limit}&cursor={cursor}")).await;
        let items = page["items"].as_array().unwrap().clone();
        assert!(
            items.len() <= limit + 10,
            "a page keeps near its limit: {}",
            items.len()
        );
        found.extend(items);
        pages += 1;
        match page["cursor"].as_str() {
            Some(c) => cursor = c.to_string(),
            None => return (found, pages),
        }
        assert!(pages < 1000, "{query}: the cursor moves on");
    }
}

fn names(found: &[serde_json::Value]) -> BTreeSet<String> {
    found
        .iter()
        .map(|f| f["item"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn items_are_found_by_state_name_claimant_and_age_page_by_page() {
    let app = TestApp::start().await;
    let items: Vec<String> = (0..300)
        .map(|i| format!("a{i}"))
        .chain((0..100).map(|i| format!("b{i}")))
        .collect();
    app.project("s1", &items.iter().map(String::as_str).collect::<Vec<_>>())
        .await;
    let now = now_ms();
    let ann = app.claim_items("s1", "ann", 5, now).await;
    let bob = app.claim_items("s1", "bob", 3, now).await;
    let report = DoneReport {
        downloader: "bob".into(),
        bytes: vec![("data".into(), 1)],
        items: bob[..2].to_vec(),
        ..Default::default()
    };
    app.store.queue().done("s1", &report, now).await.unwrap();
    let held: BTreeSet<String> = ann.iter().chain(&bob).cloned().collect();

    // A glob over the queues, in pages of 30: every waiting b, once.
    let (found, pages) = all_pages(&app, "state=queued&match=b*", 30).await;
    let want: BTreeSet<String> = (0..100)
        .map(|i| format!("b{i}"))
        .filter(|b| !held.contains(b))
        .collect();
    assert_eq!(names(&found), want);
    assert_eq!(found.len(), want.len(), "none twice");
    assert!(pages >= 2, "paged: {pages}");
    assert!(found.iter().all(|f| f["state"] == "todo"));
    // A regular expression over every state.
    let (found, _) = all_pages(&app, "regex=%5Ea1%5Cd%24", 100).await;
    assert_eq!(
        names(&found),
        (10..20).map(|i| format!("a{i}")).collect::<BTreeSet<_>>()
    );
    // Claimed items by claimant, with their claim; and by age.
    let (found, _) = all_pages(&app, "state=claimed&claimant=ann", 100).await;
    assert_eq!(names(&found), ann.iter().cloned().collect::<BTreeSet<_>>());
    assert!(found
        .iter()
        .all(|f| f["claimant"] == "ann" && f["claimed_at"].as_u64() == Some(now)));
    let (found, _) = all_pages(&app, "claimant=bob", 100).await;
    assert_eq!(names(&found), [bob[2].clone()].into_iter().collect());
    let (found, _) = all_pages(&app, "older_than=1h", 100).await;
    assert!(found.is_empty(), "claimed just now: {found:?}");
    let (found, _) = all_pages(&app, "state=claimed&older_than=0s", 100).await;
    assert_eq!(found.len(), 6);
    let (found, _) = all_pages(&app, "state=done", 100).await;
    assert_eq!(names(&found), bob[..2].iter().cloned().collect());
    // Everything, once.
    let (found, _) = all_pages(&app, "", 1000).await;
    assert_eq!(found.len(), 400);

    // Bad searches: a reason, nothing else.
    for (query, reason) in [
        ("limit=0", "limit"),
        ("limit=1001", "limit"),
        ("regex=(", "regex"),
        ("match=a*&regex=a", "not both"),
        ("state=nowhere", "state"),
        ("older_than=soon", "older_than"),
        ("cursor=x", "cursor"),
        ("state=done&claimant=ann", "claimed items only"),
    ] {
        let r = app
            .send(
                app.http
                    .get(app.url(&format!("/admin/api/s1/search?{query}")))
                    .bearer_auth(ADMIN_TOKEN),
            )
            .await;
        assert_eq!(r.status, 400, "{query}: {}", r.body);
        assert!(r.body.contains(reason), "{query}: {}", r.body);
    }
    let r = app
        .send(
            app.http
                .get(app.url("/admin/api/nope/search"))
                .bearer_auth(ADMIN_TOKEN),
        )
        .await;
    assert_eq!(r.status, 404, "{}", r.body);
    let r = app.get("/admin/api/s1/search").await;
    assert_eq!(r.status, 401, "{}", r.body);

    // The CLI: one item a line, its name first.
    let run = app.cli(
        &[
            "items", "search", "s1", "--state", "queued", "--match", "b1?", "--limit", "1000",
        ],
        b"",
    );
    assert!(run.ok, "{} {}", run.out, run.err);
    let lines: BTreeSet<&str> = run.out.lines().collect();
    let want: BTreeSet<String> = (10..20)
        .map(|i| format!("b{i}"))
        .filter(|b| !held.contains(b))
        .map(|b| format!("{b}\ttodo"))
        .collect();
    assert_eq!(lines, want.iter().map(String::as_str).collect());
    assert!(run.err.contains("last page"), "{}", run.err);
    // A claimed item's line: name, state, claimant, claim time.
    let run = app.cli(&["items", "search", "s1", "--claimant", "ann"], b"");
    assert!(run.ok, "{} {}", run.out, run.err);
    let lines: BTreeSet<String> = run.out.lines().map(String::from).collect();
    let want: BTreeSet<String> = ann
        .iter()
        .map(|a| format!("{a}\tclaimed\tann\t{now}"))
        .collect();
    assert_eq!(lines, want);
    let run = app.cli(&["items", "search", "s1", "--limit", "0"], b"");
    assert!(
        !run.ok && run.err.contains("limit"),
        "{} {}",
        run.out,
        run.err
    );
}

#[tokio::test]
async fn a_page_of_a_big_project_stops_at_its_scan_budget() {
    let app = TestApp::start().await;
    app.project("big", &[]).await;
    let n = 300_000;
    let file = app.dir.join("big-items");
    std::fs::write(
        &file,
        (0..n).map(|i| format!("item-{i}\n")).collect::<String>(),
    )
    .unwrap();
    let add = app.cli(&["items", "add", "big", file.to_str().unwrap()], b"");
    assert!(add.ok, "{}", add.err);
    // Nothing matches: a page that scanned everything would have read 300,000 names in one
    // call; it stops at its budget with a cursor instead, and the pages go on from there.
    let mut cursor = String::new();
    let (mut scanned, mut pages) = (0u64, 0);
    loop {
        let page = page_of(&app, "big", &format!("regex=nomatch&cursor={cursor}")).await;
        assert!(page["items"].as_array().unwrap().is_empty());
        let seen = page["scanned"].as_u64().unwrap();
        assert!(seen < n, "one page read {seen} names");
        scanned += seen;
        pages += 1;
        match page["cursor"].as_str() {
            Some(c) => cursor = c.to_string(),
            None => break,
        }
    }
    assert!(pages > 1, "{pages} pages");
    assert!(scanned >= n, "every name seen: {scanned}");
}

#[tokio::test]
async fn a_searchs_results_are_released_moved_and_requeued_after_a_dry_run() {
    use server::store::Role;
    use tests::panel::{account, json, last_audit, Panel};
    let app = TestApp::start().await;
    let items: Vec<String> = (0..20)
        .map(|i| format!("a{i}"))
        .chain((0..10).map(|i| format!("b{i}")))
        .collect();
    app.project("p", &items.iter().map(String::as_str).collect::<Vec<_>>())
        .await;
    account(&app, "root", Role::Global, &[]).await;
    let mut p = Panel::logged_in(&app, "root").await;
    let now = now_ms();
    let ann = app.claim_items("p", "ann", 4, now).await;
    app.claim_items("p", "bob", 3, now).await;

    // Release ann's claims: the dry run counts them and changes nothing.
    let body = serde_json::json!({"state": "claimed", "claimant": "ann", "action": "release", "dry_run": true});
    let dry = p.post("/admin/api/p/search/act", body).await;
    assert_eq!(dry.status, 200, "{}", dry.body);
    assert_eq!(json(&dry)["count"], 4);
    assert_eq!(app.counts("p").await.out, 7);
    let body = serde_json::json!({"state": "claimed", "claimant": "ann", "action": "release"});
    let real = p.post("/admin/api/p/search/act", body).await;
    assert_eq!(json(&real)["count"], 4, "{}", real.body);
    assert_eq!(app.counts("p").await.out, 3, "bob's claims stay");
    let back = page_of(&app, "p", "state=todo&limit=1000").await;
    let waiting = names(back["items"].as_array().unwrap());
    assert!(
        ann.iter().all(|i| waiting.contains(i)),
        "ann's items wait again"
    );
    let audit = last_audit(&mut p, "items.search_act").await;
    assert_eq!(audit["count"], 4);
    assert!(
        audit["detail"]
            .as_str()
            .unwrap()
            .contains("claimant=\"ann\""),
        "{audit}"
    );

    // Move the waiting b's to todo:secondary: as many as a search finds.
    let queued_b = page_of(&app, "p", "state=todo&match=b*&limit=1000").await["items"]
        .as_array()
        .unwrap()
        .len();
    assert!(queued_b > 0);
    let body = serde_json::json!({"state": "todo", "match": "b*", "action": "move", "to": "todo:secondary", "dry_run": true});
    assert_eq!(
        json(&p.post("/admin/api/p/search/act", body).await)["count"],
        queued_b
    );
    let body = serde_json::json!({"state": "todo", "match": "b*", "action": "move", "to": "todo:secondary"});
    assert_eq!(
        json(&p.post("/admin/api/p/search/act", body).await)["count"],
        queued_b
    );
    let moved = page_of(&app, "p", "state=todo:secondary&limit=1000").await;
    assert_eq!(moved["items"].as_array().unwrap().len(), queued_b);
    let left = page_of(&app, "p", "state=todo&match=b*").await;
    assert!(left["items"].as_array().unwrap().is_empty(), "{left}");

    // Failed items requeued by a search.
    app.settings("p", |s| s.max_attempts = 1).await;
    let held: Vec<String> = page_of(&app, "p", "state=claimed").await["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["item"].as_str().unwrap().to_string())
        .collect();
    let body = serde_json::json!({"state": "claimed", "action": "release"});
    assert_eq!(
        json(&p.post("/admin/api/p/search/act", body).await)["count"],
        held.len()
    );
    // Released items were claimed once: the next claims of them fail (max_attempts 1).
    app.claim_items("p", "cy", 30, now_ms()).await;
    let failed = page_of(&app, "p", "state=failed&limit=1000").await;
    let n_failed = failed["items"].as_array().unwrap().len();
    assert!(n_failed >= held.len(), "{failed}");
    let body = serde_json::json!({"state": "failed", "action": "requeue"});
    assert_eq!(
        json(&p.post("/admin/api/p/search/act", body).await)["count"],
        n_failed
    );
    assert_eq!(app.counts("p").await.failed, 0);
    app.assert_invariant("p").await;

    // Refused, with a reason, changing nothing.
    for (body, why) in [
        (
            serde_json::json!({"state": "failed", "action": "release"}),
            "release takes",
        ),
        (
            serde_json::json!({"state": "claimed", "action": "burn"}),
            "action is",
        ),
        (
            serde_json::json!({"state": "todo", "action": "move", "to": "nope"}),
            "to is one of",
        ),
        (
            serde_json::json!({"state": "todo", "action": "move", "to": "todo:redo", "regex": "("}),
            "regex",
        ),
    ] {
        let r = p.post("/admin/api/p/search/act", body.clone()).await;
        assert_eq!(r.status, 400, "{body}: {}", r.body);
        assert!(r.body.contains(why), "{body}: {}", r.body);
    }
}
