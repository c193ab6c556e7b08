//! Public pages and JSON.

use tests::TestApp;

#[tokio::test]
async fn healthz_reports_the_redis_round_trip() {
    let app = TestApp::start().await;
    let r = app.get("/healthz").await;
    assert_eq!(r.status, 200);
    let v: serde_json::Value = serde_json::from_str(&r.body).unwrap();
    assert!(v["redis_rtt_ms"].as_f64().unwrap() >= 0.0);
}

#[tokio::test]
async fn leaderboard_page_is_rendered_with_counts_and_recent_items() {
    let app = TestApp::start().await;
    app.project("p1", &["alpha-item", "beta-item"]).await;
    let item = app.claim("p1", "alice").await;
    app.done("p1", "alice", &item, 2048).await;

    let r = app.get("/p1/").await;
    assert_eq!(r.status, 200);
    // What the server rendered, not the page data embedded for hydration.
    let html = tests::rendered(&r.body);
    assert!(html.contains("Project p1"), "title");
    assert!(html.contains(&item), "recent completion");
    assert!(html.contains("alice"), "downloader row");
    assert!(html.contains("2.00 KiB"), "bytes formatted");

    let home = app.get("/").await;
    assert_eq!(home.status, 200);
    assert!(tests::rendered(&home.body).contains(r#"href="/p1/""#));
}

#[tokio::test]
async fn unknown_project_page_is_404() {
    let app = TestApp::start().await;
    assert_eq!(app.get("/nope/").await.status, 404);
    assert_eq!(app.get("/nope/stats.json").await.status, 404);
}

#[tokio::test]
async fn slug_without_slash_redirects_and_other_segments_are_files() {
    let app = TestApp::start().await;
    app.project("p1", &[]).await;
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let r = client.get(app.url("/p1")).send().await.unwrap();
    assert_eq!(r.status().as_u16(), 308);
    assert_eq!(r.headers()["location"], "/p1/");
    let r = client
        .get(app.url("/no-such-file.svg"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 404);
}

#[tokio::test]
async fn healthz_is_503_when_redis_is_down() {
    let mut app = TestApp::start_private().await;
    app.kill_redis();
    let r = app.get("/healthz").await;
    assert_eq!(r.status, 503, "{}", r.body);
    assert!(r.body.contains("unavailable"));
}

#[tokio::test]
async fn pages_say_why_with_a_503_when_redis_is_down() {
    let mut app = TestApp::start_private().await;
    app.project("p1", &["a"]).await;
    app.kill_redis();
    // Rendered with the reason (before the probe notices), or the probe's own notice (after).
    for path in ["/", "/p1/"] {
        let r = app.get(path).await;
        assert_eq!(r.status, 503, "{path}: {}", r.body);
        assert!(
            tests::rendered(&r.body).contains("The tracker is reconnecting to its database"),
            "{path}: {}",
            r.body
        );
    }
}

#[tokio::test]
async fn project_list_reads_counts_without_downloader_rows() {
    let app = TestApp::start().await;
    app.project("p1", &["a", "b"]).await;
    app.done("p1", "alice", &app.claim("p1", "alice").await, 1)
        .await;
    let counts_only = app
        .store
        .figures()
        .leaderboard("p1", 0, 0)
        .await
        .unwrap()
        .unwrap();
    assert!(
        counts_only.downloaders.is_empty(),
        "0 means no rows, not all of them"
    );
    assert_eq!(counts_only.counts.done, 1);
    assert_eq!(
        app.store
            .figures()
            .leaderboard("p1", -1, 0)
            .await
            .unwrap()
            .unwrap()
            .downloaders
            .len(),
        1
    );
}

fn sorted_keys(v: &serde_json::Value) -> Vec<String> {
    let mut keys: Vec<String> = v.as_object().expect("an object").keys().cloned().collect();
    keys.sort();
    keys
}

#[tokio::test]
async fn stats_json_has_the_old_shape_and_totals() {
    let app = TestApp::start().await;
    app.project("p1", &["a", "b", "c"]).await;
    app.claim_all("p1").await;
    app.store
        .queue()
        .add_items("p1", "todo", &["d".into()])
        .await
        .unwrap();
    app.done("p1", "alice", "a", 100).await;
    app.done("p1", "alice", "b", 50).await;
    app.done("p1", "bob", "c", 7).await;
    app.claim("p1", "carol").await;
    let r = app.get("/p1/stats.json").await;
    assert_eq!(r.status, 200);
    let v: serde_json::Value = serde_json::from_str(&r.body).unwrap();
    assert_eq!(
        sorted_keys(&v),
        [
            "counts",
            "domain_bytes",
            "downloader_bytes",
            "downloader_count",
            "downloaders",
            "total_bytes",
            "total_items",
            "total_items_done",
            "total_items_out",
            "total_items_todo"
        ]
    );
    assert_eq!(v["domain_bytes"], serde_json::json!({"data": 157}));
    assert_eq!(
        v["downloader_bytes"],
        serde_json::json!({"alice": 150, "bob": 7})
    );
    assert_eq!(
        v["downloader_count"],
        serde_json::json!({"alice": 2, "bob": 1})
    );
    assert_eq!(v["downloaders"], serde_json::json!(["alice", "bob"]));
    assert_eq!(v["total_items_done"], 3);
    assert_eq!(v["total_items_out"], 1);
    assert_eq!(v["total_items"], 4);
    assert_eq!(v["total_bytes"], 157);
    let c = &v["counts"];
    assert_eq!(
        serde_json::json!({"todo": c["todo"], "out": c["out"], "done": c["done"]}),
        serde_json::json!({"todo": 0, "out": 1, "done": 3})
    );
    assert_eq!(v["total_items_todo"], 0);
}

#[tokio::test]
async fn charts_json_has_cumulative_minute_points() {
    let app = TestApp::start().await;
    app.project("p1", &["a", "b", "c"]).await;
    app.claim_all("p1").await;
    let empty: serde_json::Value =
        serde_json::from_str(&app.get("/p1/charts.json").await.body).unwrap();
    assert_eq!(
        sorted_keys(&empty),
        ["bytes_done_chart", "downloader_chart", "items_done_chart"]
    );
    app.done("p1", "alice", "a", 10).await;
    app.done("p1", "bob", "b", 5).await;
    app.done("p1", "alice", "c", 1).await;
    // Public reads are cached for a second: the next answer made after the dones shows them.
    let v: serde_json::Value = tests::wait_for(
        "charts.json to show the dones",
        std::time::Duration::from_secs(5),
        || async {
            let r = app.get("/p1/charts.json").await;
            let v: serde_json::Value = serde_json::from_str(&r.body).ok()?;
            let last = v["items_done_chart"]
                .as_array()?
                .last()?
                .as_array()?
                .get(1)?
                .as_u64();
            (r.status == 200 && last == Some(3)).then_some(v)
        },
    )
    .await;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let points = |series: &serde_json::Value| -> Vec<(u64, u64)> {
        series
            .as_array()
            .expect("a list of points")
            .iter()
            .map(|p| {
                let p = p.as_array().expect("[epoch_s, n]");
                assert_eq!(p.len(), 2);
                (p[0].as_u64().unwrap(), p[1].as_u64().unwrap())
            })
            .collect()
    };
    for (name, last) in [("items_done_chart", 3), ("bytes_done_chart", 16)] {
        let pts = points(&v[name]);
        assert!(!pts.is_empty(), "{name}");
        assert!(
            pts.windows(2).all(|w| w[0].0 < w[1].0 && w[0].1 <= w[1].1),
            "{name}: {pts:?}"
        );
        let (t, n) = *pts.last().unwrap();
        assert_eq!(n, last, "{name} is cumulative");
        assert!(t.abs_diff(now) < 120, "{name}: epoch seconds, got {t}");
    }
    assert_eq!(sorted_keys(&v["downloader_chart"]), ["alice", "bob"]);
    assert_eq!(
        points(&v["downloader_chart"]["alice"]).last().unwrap().1,
        11
    );
    assert_eq!(points(&v["downloader_chart"]["bob"]).last().unwrap().1, 5);
}

/// A downloader's chart has a point per minute it was active, its total at the end of that
/// minute, and ends with its current total at the minute of its last report.
#[tokio::test]
async fn downloader_charts_keep_a_point_per_active_minute() {
    let app = TestApp::start().await;
    let items: Vec<String> = (0..5).map(|i| format!("i{i}")).collect();
    let refs: Vec<&str> = items.iter().map(String::as_str).collect();
    app.project("p1", &refs).await;
    app.claim_all("p1").await;
    let report = |item: &str, bytes: u64| server::store::DoneReport {
        downloader: "alice".into(),
        version: "1".into(),
        user_agent: String::new(),
        ip: "127.0.0.1".into(),
        id: "null".into(),
        bytes: vec![("data".into(), bytes)],
        items: vec![item.into()],
        ..Default::default()
    };
    // Minutes 1000, 1000, 1002, 1003 (as the tracker's clock gives them), then 1003 again.
    let minute = |m: u64, s: u64| m * 60_000 + s * 1000;
    for (item, bytes, at) in [
        ("i0", 1, minute(1000, 1)),
        ("i1", 2, minute(1000, 50)),
        ("i2", 4, minute(1002, 0)),
        ("i3", 8, minute(1003, 10)),
        ("i4", 16, minute(1003, 20)),
    ] {
        let out = app
            .store
            .queue()
            .done_batch("p1", &[report(item, bytes)], at)
            .await
            .unwrap();
        assert!(matches!(
            out[0],
            server::store::DoneOutcome::Recorded { counted: 1, .. }
        ));
    }
    let v: serde_json::Value =
        serde_json::from_str(&app.get("/p1/charts.json").await.body).unwrap();
    assert_eq!(
        v["downloader_chart"]["alice"],
        serde_json::json!([[60_000, 3], [60_120, 7], [60_180, 31]])
    );
}

/// The pages' JSON (`/board/...`: what a live page re-reads, and the project list, a page and
/// its charts for tools) parses as the pages' own types.
#[tokio::test]
async fn page_data_json_has_the_pages_types_and_404s_unknown_projects() {
    let app = TestApp::start().await;
    app.project("p1", &["alpha-item", "beta-item"]).await;
    let item = app.claim("p1", "alice").await;
    app.done("p1", "alice", &item, 2048).await;
    let json = |path: &'static str| {
        let app = &app;
        async move {
            let r = app.get(path).await;
            assert_eq!(r.status, 200, "{path}: {}", r.body);
            r.body
        }
    };

    let projects: Vec<app::model::ProjectSummary> =
        serde_json::from_str(&json("/board/projects.json").await).unwrap();
    assert_eq!(projects.len(), 1);
    assert_eq!(projects[0].counts.done, 1);

    let board: app::model::Leaderboard =
        serde_json::from_str(&json("/board/p1/page.json?window=60").await).unwrap();
    assert_eq!((board.counts.done, board.window), (1, 60));
    assert_eq!(board.downloaders[0].name, "alice");
    assert_eq!(board.recent[0].items, [item]);

    let charts: app::model::ChartData =
        serde_json::from_str(&json("/board/p1/charts.json").await).unwrap();
    assert_eq!(charts.items.last().map(|p| p.1), Some(1));

    let window: Vec<(String, u64, u64)> =
        serde_json::from_str(&json("/board/p1/window.json?window=5").await).unwrap();
    assert_eq!(window, [("alice".to_string(), 1, 2048)]);

    let figures: app::model::TrackerStats =
        serde_json::from_str(&json("/board/p1/figures.json").await).unwrap();
    assert_eq!(figures.unique_downloaders_30d, 1);

    for path in [
        "/board/nope/page.json",
        "/board/nope/charts.json",
        "/board/nope/window.json",
        "/board/nope/figures.json",
    ] {
        assert_eq!(app.get(path).await.status, 404, "{path}");
    }
    let bad = app.get("/board/p1/page.json?window=soon").await;
    assert_eq!(bad.status, 400, "{}", bad.body);
}

/// Commands Redis has processed so far (each call of this counts one more).
async fn redis_commands(app: &TestApp) -> u64 {
    use fred::prelude::*;
    let info: String = app
        .store
        .client()
        .custom(fred::cmd!("INFO"), vec!["stats"])
        .await
        .unwrap();
    info.lines()
        .find_map(|l| l.strip_prefix("total_commands_processed:"))
        .and_then(|n| n.trim().parse().ok())
        .expect("total_commands_processed")
}

#[tokio::test]
async fn public_reads_are_computed_once_for_all_concurrent_callers_and_stay_fresh() {
    let app = TestApp::start().await;
    app.project("p1", &["a", "b"]).await;
    // What one computation of each address costs Redis (distinct queries: distinct addresses).
    let paths = [
        "/p1/stats.json",
        "/p1/charts.json",
        "/p1/downloaders.json",
        "/board/p1/page.json",
        "/",
    ];
    let before = redis_commands(&app).await;
    for path in paths {
        let sep = if path.contains('?') { '&' } else { '?' };
        assert_eq!(
            app.get(&format!("{path}{sep}one=1")).await.status,
            200,
            "{path}"
        );
    }
    let one = redis_commands(&app).await - before - 1;
    // The same addresses asked 50 times each, all at once.
    let before = redis_commands(&app).await;
    let calls = paths.iter().flat_map(|path| {
        let sep = if path.contains('?') { '&' } else { '?' };
        (0..50).map(move |_| format!("{path}{sep}flood=1"))
    });
    let app = &app;
    let replies = futures::future::join_all(calls.map(|p| async move { app.get(&p).await })).await;
    assert!(replies.iter().all(|r| r.status == 200));
    let flood = redis_commands(app).await - before - 1;
    assert!(
        flood <= one + 4,
        "250 concurrent reads cost Redis {flood} commands; one read of each address costs {one}"
    );
    // A completion shows within a second or so.
    let item = app.claim("p1", "alice").await;
    assert_eq!(app.get("/p1/stats.json").await.status, 200);
    app.done("p1", "alice", &item, 5).await;
    tests::wait_for(
        "stats.json to show the done",
        std::time::Duration::from_secs(5),
        || async {
            let v: serde_json::Value =
                serde_json::from_str(&app.get("/p1/stats.json").await.body).ok()?;
            (v["total_items_done"] == 1).then_some(())
        },
    )
    .await;
}

#[tokio::test]
async fn no_caller_empties_or_bypasses_the_read_cache_without_changing_anything() {
    // Issue 52: a HEAD of the panel's session, a random query or any bearer token made each
    // read a fresh computation (168 Redis calls for 10 reads instead of 2).
    let app = TestApp::start().await;
    app.project("p1", &["a", "b"]).await;
    assert_eq!(app.get("/p1/stats.json").await.status, 200);
    let before = redis_commands(&app).await;
    for i in 0..10 {
        let head = app.send(app.http.head(app.url("/admin/api/session"))).await;
        assert_eq!(head.status, 200);
        let options = app
            .send(
                app.http
                    .request(reqwest::Method::OPTIONS, app.url("/admin/api/p1/settings")),
            )
            .await;
        assert_ne!(options.status, 500);
        let r = app
            .send(
                app.http
                    .get(app.url(&format!("/p1/stats.json?nocache={i}&x{i}=1")))
                    .header("authorization", format!("Bearer random-{i}")),
            )
            .await;
        assert_eq!(r.status, 200, "{}", r.body);
    }
    let spent = redis_commands(&app).await - before - 1;
    // The cached answer lives a second: a slow machine may compute it once or twice more.
    assert!(spent <= 40, "10 reads cost Redis {spent} commands");
    // A known field still makes its own answer, and the answer is right for it.
    let page: serde_json::Value =
        serde_json::from_str(&app.get("/p1/downloaders.json?limit=1&junk=2").await.body).unwrap();
    assert!(page.is_object(), "{page}");
}
