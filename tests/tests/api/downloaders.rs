//! `GET /SLUG/downloaders.json` and the capped snapshot: a project with 50,000 downloaders keeps
//! its page data and websocket snapshots small, and every downloader is still found, ranked
//! and paged on the server.

use app::model::{DownloaderPage, LiveMessage, TOP_DOWNLOADERS};
use fred::prelude::*;
use tests::TestApp;

const MANY: u64 = 50_000;

/// Gives project `slug` `MANY` downloaders `dl00000`..: `dl{i}` has `i + 1` items, `10 (i + 1)`
/// bytes. Written straight into the per-downloader sets (what done reports build), so the test
/// takes seconds, not minutes; the counters no longer add up, so these tests skip `tracker check`.
async fn crowd(app: &TestApp, slug: &str) {
    let k = app.store.keys().project(slug);
    let client = app.store.client();
    for chunk in (0..MANY).collect::<Vec<_>>().chunks(5_000) {
        let items: Vec<(f64, String)> = chunk
            .iter()
            .map(|i| ((i + 1) as f64, format!("dl{i:05}")))
            .collect();
        let bytes: Vec<(f64, String)> = chunk
            .iter()
            .map(|i| (10.0 * (i + 1) as f64, format!("dl{i:05}")))
            .collect();
        let _: () = client
            .zadd(k.dl_items(), None, None, false, false, items)
            .await
            .unwrap();
        let _: () = client
            .zadd(k.dl_bytes(), None, None, false, false, bytes)
            .await
            .unwrap();
    }
}

fn page(body: &str) -> DownloaderPage {
    serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"))
}

#[tokio::test]
async fn fifty_thousand_downloaders_stay_out_of_the_snapshot_and_are_paged_by_the_server() {
    let app = TestApp::start().await;
    app.project("big", &["x1", "x2"]).await;
    crowd(&app, "big").await;

    // The page data and the websocket snapshot carry the top rows and the count only.
    let board = app
        .store
        .figures()
        .board_page("big", server::store::now_ms(), 5)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(board.downloaders.len(), TOP_DOWNLOADERS);
    assert_eq!(board.downloader_count, MANY);
    assert_eq!(board.downloaders[0].name, "dl49999");
    assert_eq!(board.downloaders[0].bytes, 10 * MANY);
    let (_, snapshot) = app
        .hub
        .snapshot(&app.store, "big", std::time::Instant::now())
        .await
        .unwrap();
    assert!(
        snapshot.len() < 40_000,
        "snapshot is {} bytes",
        snapshot.len()
    );
    let LiveMessage::Snapshot { board } =
        serde_json::from_str(server::websocket::text_payload(&snapshot).unwrap()).unwrap()
    else {
        panic!("not a snapshot")
    };
    assert_eq!(board.downloader_count, MANY);

    // Every rank is reachable a page at a time.
    let p = page(
        &app.get("/big/downloaders.json?offset=49900&limit=500")
            .await
            .body,
    );
    assert_eq!((p.total, p.count, p.rows.len()), (MANY, MANY, 100));
    assert_eq!(
        (p.rows[0].rank, p.rows[0].row.name.as_str()),
        (49_901, "dl00099")
    );
    assert_eq!(p.rows[99].row.name, "dl00000");

    // A search finds a name far down, with its true rank.
    let p = page(&app.get("/big/downloaders.json?q=DL0001").await.body);
    assert_eq!(p.total, 10, "dl00010..dl00019");
    assert_eq!(p.count, MANY);
    assert_eq!((p.rows[0].rank, p.rows[0].row.items), (49_981, 20));

    // The pinned name's row, and sorting all of them by name.
    let p = page(&app.get("/big/downloaders.json?name=dl00007").await.body);
    assert_eq!((p.total, p.rows[0].rank), (1, 49_993));
    let p = page(
        &app.get("/big/downloaders.json?sort=name&limit=2")
            .await
            .body,
    );
    assert_eq!(p.rows[0].row.name, "dl00000");
    let p = page(
        &app.get("/big/downloaders.json?sort=name&dir=reverse&limit=1")
            .await
            .body,
    );
    assert_eq!(p.rows[0].row.name, "dl49999");

    // stats.json still lists every downloader, as the old tracker did.
    let stats: serde_json::Value =
        serde_json::from_str(&app.get("/big/stats.json").await.body).unwrap();
    assert_eq!(
        stats["downloaders"].as_array().unwrap().len(),
        MANY as usize
    );
    assert_eq!(stats["downloader_count"]["dl00007"], 8);
}

#[tokio::test]
async fn a_completion_carries_the_downloaders_totals_so_a_climber_enters_the_top_rows() {
    let app = TestApp::start().await;
    app.project("big", &["x1", "x2"]).await;
    crowd(&app, "big").await;
    let mut board = app
        .store
        .figures()
        .board_page("big", server::store::now_ms(), 5)
        .await
        .unwrap()
        .unwrap();
    let cutoff = board.downloaders.last().unwrap().items;
    // dl00000 (1 item, far below the top rows) and a newcomer complete one item each.
    for who in ["dl00000", "newcomer"] {
        let item = app.claim("big", who).await;
        assert_eq!(app.done("big", who, &item, 5).await.status, 200);
    }
    let events = server::hub::history::events_after(&app.store, "big", board.seq)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(events.len(), 2);
    assert_eq!((events[0].dl_items, events[0].dl_bytes), (2, 15));
    assert_eq!((events[1].dl_items, events[1].dl_bytes), (1, 5));
    for e in &events {
        assert!(board.apply(e));
    }
    assert_eq!(board.downloader_count, MANY + 1, "the newcomer is counted");
    assert_eq!(board.downloaders.len(), TOP_DOWNLOADERS);
    assert!(board.downloaders.iter().all(|d| d.items >= cutoff));
    assert!(
        !board.downloaders.iter().any(|d| d.name == "dl00000"),
        "two items do not make the top rows"
    );

    // A downloader that climbs into the top rows shows with its real total.
    let k = app.store.keys().project("big");
    let _: () = app
        .store
        .client()
        .zincrby(k.dl_items(), (MANY + 10) as f64, "dl00000")
        .await
        .unwrap();
    app.store
        .queue()
        .add_items("big", "todo", &["x3".to_string()])
        .await
        .unwrap();
    let item = app.claim("big", "dl00000").await;
    app.done("big", "dl00000", &item, 5).await;
    let events = server::hub::history::events_after(&app.store, "big", board.seq)
        .await
        .unwrap()
        .unwrap();
    assert!(board.apply(&events[0]));
    assert_eq!(board.downloaders[0].name, "dl00000");
    assert_eq!(board.downloaders[0].items, MANY + 13);

    // The page's minute re-read of window sums covers its top rows only, not everyone active.
    app.store
        .queue()
        .add_items("big", "todo", &["x4".to_string()])
        .await
        .unwrap();
    let item = app.claim("big", "dl49999").await;
    app.done("big", "dl49999", &item, 5).await;
    let mut sums = app::backend::Backend::downloader_window(&app.store, "big", 5)
        .await
        .unwrap();
    sums.sort();
    assert_eq!(
        sums,
        vec![
            ("dl00000".to_string(), 2, 10),
            ("dl49999".to_string(), 1, 5)
        ],
        "newcomer is active but not a top row"
    );
    // (`tracker check` would count the injected totals as a broken invariant: not run here.)
}

#[tokio::test]
async fn bad_page_queries_get_a_400_with_the_reason() {
    let app = TestApp::start().await;
    app.project("p1", &[]).await;
    for (query, reason) in [
        ("limit=100000", "limit must be"),
        ("offset=-3", "offset must be"),
        ("sort=size", "sort must be"),
        ("dir=sideways", "dir must be"),
        ("window=0", "window must be"),
    ] {
        let r = app.get(&format!("/p1/downloaders.json?{query}")).await;
        assert_eq!(r.status, 400, "{query}");
        assert!(r.body.starts_with(reason), "{query}: {}", r.body);
    }
    assert_eq!(app.get("/nope/downloaders.json").await.status, 404);
    let p = page(&app.get("/p1/downloaders.json").await.body);
    assert_eq!((p.total, p.count, p.rows.len()), (0, 0, 0));
}
