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
    app.store.done("s1", &report, now).await.unwrap();
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
