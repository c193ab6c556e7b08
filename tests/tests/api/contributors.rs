//! Unique contributors per month: per project (counted by the done script) and across all
//! projects (written by the process every few seconds), on the front page and the board data.

use app::model::{month_name, months_back, Leaderboard, MONTHS_SHOWN};
use server::store::now_ms;
use std::time::Duration;
use tests::{rendered, wait_for, TestApp};

/// For each of `names` in turn: claims an item of `slug` and reports it done; the items.
async fn done_by(app: &TestApp, slug: &str, names: &[&str]) -> Vec<String> {
    let mut items = Vec::new();
    for name in names {
        let item = app.claim(slug, name).await;
        let r = app.done(slug, name, &item, 10).await;
        assert_eq!(r.status, 200, "{}", r.body);
        items.push(item);
    }
    items
}

#[tokio::test]
async fn contributors_are_counted_per_month_per_project_and_across_projects() {
    let app = TestApp::start().await;
    let items: Vec<String> = (0..10).map(|i| format!("i{i}")).collect();
    let items: Vec<&str> = items.iter().map(String::as_str).collect();
    app.project("p1", &items).await;
    app.project("p2", &items).await;
    let done = done_by(&app, "p1", &["alice", "bob", "carol", "alice"]).await;
    done_by(&app, "p2", &["alice", "dave"]).await;
    // A done that counts nothing names nobody: an unknown item, and a duplicate.
    assert_eq!(app.done("p2", "mallory", "nope", 1).await.status, 404);
    let r = app.done("p1", "erin", &done[0], 1).await;
    assert_eq!(r.status, 200, "{}", r.body);
    // An item claimed but reported by nobody yet: no contributor either.
    app.claim("p2", "frank").await;

    let month = month_name(now_ms());
    for (slug, want) in [("p1", 3), ("p2", 2)] {
        let board: Leaderboard =
            serde_json::from_str(&app.get(&format!("/board/{slug}/page.json")).await.body).unwrap();
        assert_eq!(board.months.len(), MONTHS_SHOWN);
        assert_eq!(board.months[0].month, month);
        assert_eq!(board.months[0].contributors, want, "{slug}");
        assert!(board.months[1..].iter().all(|m| m.contributors == 0));
        assert_eq!(board.tracker.unique_downloaders_30d, want, "{slug}");
    }

    // All projects together: alice, bob, carol and dave, once the process has written them
    // (every few seconds) and the page's one-second cache has passed.
    let html = wait_for(
        "the monthly contributors on the front page",
        Duration::from_secs(15),
        || async {
            let html = rendered(&app.get("/").await.body);
            html.contains("4 contributors this month").then_some(html)
        },
    )
    .await;
    assert!(html.contains("3 contributors, last 30 days"), "p1's card");
    assert!(html.contains("2 contributors, last 30 days"), "p2's card");
    let months = months_back(now_ms(), MONTHS_SHOWN);
    let store_view = app.store.figures().contributors(now_ms()).await.unwrap();
    let counted: Vec<(String, u64)> = store_view
        .months
        .iter()
        .map(|m| (m.month.clone(), m.contributors))
        .collect();
    let mut expected: Vec<(String, u64)> = months.iter().map(|m| (m.clone(), 0)).collect();
    expected[0].1 = 4;
    assert_eq!(counted, expected);
    assert!(html.contains("Contributors, all projects"), "{html}");

    // More dones: one new name, one known; the figure follows within the flush interval.
    done_by(&app, "p2", &["bob", "gina"]).await;
    wait_for("the new contributor", Duration::from_secs(15), || async {
        let c = app.store.figures().contributors(now_ms()).await.unwrap();
        (c.months[0].contributors == 5).then_some(())
    })
    .await;
}
