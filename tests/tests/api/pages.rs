//! The data behind the public pages: the leaderboard page's rates, queue sizes, downloader
//! details and tracker statistics; the front page's summaries; the charts.

use app::model::Rate;
use server::store::now_ms;
use tests::TestApp;

#[tokio::test]
async fn board_page_carries_rates_queues_and_downloader_details() {
    let app = TestApp::start().await;
    app.project("p1", &["a", "b", "c", "d"]).await;
    for who in ["alice", "alice", "bob"] {
        let item = app.claim("p1", who).await;
        assert_eq!(app.done("p1", who, &item, 1000).await.status, 200);
    }
    let now = now_ms();
    let b = app
        .store
        .figures()
        .board_page("p1", now, 5)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(b.now, now);
    assert_eq!(b.window, 5);
    assert_eq!(b.state, "active");
    assert_eq!(b.counts.todo, 1);
    assert!(
        b.queues.contains(&("todo".to_string(), 1)),
        "{:?}",
        b.queues
    );

    let alice = &b.downloaders[0];
    assert_eq!((alice.name.as_str(), alice.items), ("alice", 2));
    assert_eq!((alice.window_items, alice.window_bytes), (2, 2000));
    assert_eq!(alice.version, "20240101.01");
    assert!(alice.last_seen > 0 && alice.last_seen <= now);

    let done_in_minutes: u64 = b.minutes.iter().map(|m| m.1).sum();
    assert_eq!(done_in_minutes, 3);
    assert!(b.rate(5).items_per_s > 0.0);
    assert_eq!(b.tracker.unique_downloaders_30d, 2);
    assert_eq!(b.tracker.item_request_serve_rate, Some(1.0));

    // An hour later the 5-minute window is empty: no rate, no ETA.
    let later = app
        .store
        .figures()
        .board_page("p1", now + 3_600_000, 5)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(later.downloaders[0].window_items, 0);
    assert_eq!(later.rate(5), Rate::default());
    assert_eq!(later.rate(5).eta(1), None);
}

#[tokio::test]
async fn board_page_tracker_figures_match_tracker_stats_json() {
    let app = TestApp::start().await;
    app.project("p1", &["a", "b"]).await;
    let item = app.claim("p1", "alice").await;
    app.done("p1", "alice", &item, 10).await;
    let json: serde_json::Value =
        serde_json::from_str(&app.get("/p1/tracker-stats.json").await.body).unwrap();
    let b = app
        .store
        .figures()
        .board_page("p1", now_ms(), 5)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        json["item_request_serve_rate"].as_f64(),
        b.tracker.item_request_serve_rate
    );
    assert_eq!(json["bloom"]["fill"].as_f64(), Some(b.tracker.bloom_fill));
    assert_eq!(
        json["unique_downloaders_30d"].as_u64(),
        Some(b.tracker.unique_downloaders_30d)
    );
    // What the live page re-reads every minute is the page data's figures.
    let live = app
        .store
        .figures()
        .tracker_figures("p1", now_ms())
        .await
        .unwrap();
    assert_eq!(live, b.tracker);
    assert_eq!(live.unique_downloaders_30d, 1);
}

#[tokio::test]
async fn front_page_lists_active_projects_first_with_banner_and_rate() {
    let app = TestApp::start().await;
    app.project("a-paused", &[]).await;
    // Two items: with one left it stays active (with none, it would be finished).
    app.project("b-active", &["x", "y"]).await;
    app.settings("a-paused", |s| {
        s.state = "paused".into();
        s.banner = "Back on Monday".into();
    })
    .await;
    let item = app.claim("b-active", "alice").await;
    app.done("b-active", "alice", &item, 10).await;

    let list = app.store.figures().list_projects(now_ms()).await.unwrap();
    let active = list.iter().find(|p| p.slug == "b-active").unwrap();
    assert!(active.items_per_s > 0.0);
    assert_eq!(active.hourly.len(), 24);
    assert_eq!(active.hourly[23], 1);
    let paused = list.iter().find(|p| p.slug == "a-paused").unwrap();
    assert_eq!(
        (paused.state.as_str(), paused.banner.as_str()),
        ("paused", "Back on Monday")
    );

    let html = tests::rendered(&app.get("/").await.body);
    let at = |slug: &str| {
        html.find(&format!("href=\"/{slug}/\""))
            .unwrap_or_else(|| panic!("no link to {slug} in the rendered page"))
    };
    assert!(at("b-active") < at("a-paused"), "active first");
    assert!(html.contains("Back on Monday"));
}

#[tokio::test]
async fn leaderboard_page_renders_every_section() {
    let app = TestApp::start().await;
    app.project("p1", &["a", "b"]).await;
    let item = app.claim("p1", "alice").await;
    app.done("p1", "alice", &item, 4096).await;
    let r = app.get("/p1/").await;
    assert_eq!(r.status, 200);
    let html = tests::rendered(&r.body);
    for needle in [
        "Rates",
        "time left",
        "Downloaders",
        "Recent completions",
        "Items done",
        "Bytes by downloader",
        "Tracker, last hour",
        "20240101.01",
        "100.0%",
    ] {
        assert!(
            html.contains(needle),
            "{needle} missing from the rendered page"
        );
    }
}

/// The JSON of a page's `<script id="page-data">`, which the browser hydrates from.
fn page_data(html: &str) -> app::data::PageData {
    let open = r#"<script id="page-data" type="application/json">"#;
    let start = html.find(open).expect("page data") + open.len();
    let end = start + html[start..].find("</script>").expect("end of page data");
    serde_json::from_str(&html[start..end]).expect("page data is JSON")
}

#[tokio::test]
async fn pages_carry_the_data_they_were_rendered_from_and_no_text_escapes_it() {
    let app = TestApp::start().await;
    app.project("p1", &["a", "b"]).await;
    let title = "</script><script>alert(1)</script>";
    app.settings("p1", |s| s.title = title.into()).await;
    let item = app.claim("p1", "alice").await;
    app.done("p1", "alice", &item, 4096).await;

    let r = app.get("/p1/").await;
    assert_eq!(r.status, 200);
    assert!(
        !r.body.contains("<script>alert(1)"),
        "the title left its element"
    );
    let data = page_data(&r.body);
    let (board, charts) = data.board.expect("the board");
    assert_eq!((board.title.as_str(), board.counts.done), (title, 1));
    assert_eq!(board.downloaders[0].name, "alice");
    assert_eq!(charts.items.last().map(|p| p.1), Some(1));
    assert_eq!((data.projects, data.error), (None, None));

    let home = page_data(&app.get("/").await.body);
    let projects = home.projects.expect("the project list");
    assert_eq!(projects.len(), 1);
    assert_eq!(projects[0].title, title);

    // An unknown project: 404, and no data to hydrate but the absence of a board.
    let missing = app.get("/nope/").await;
    assert_eq!(missing.status, 404);
    assert!(missing.body.contains("Not found"));
    assert_eq!(page_data(&missing.body), app::data::PageData::default());

    // `/admin/` is the panel's address with a slash too many, not a project called admin.
    let no_follow = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    for (from, to) in [
        ("/admin/", "/admin"),
        ("/admin/users/", "/admin/users"),
        ("/admin/p/p1/?tab=queues", "/admin/p/p1?tab=queues"),
    ] {
        let r = no_follow.get(app.url(from)).send().await.unwrap();
        assert_eq!(r.status(), 308, "{from}");
        assert_eq!(r.headers()["location"], to, "{from}");
    }
    // Not a page: still not found.
    let r = no_follow
        .get(app.url("/admin/api/nope/"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
}

/// Decodes `body` as `encoding` says (`br`, `gzip`, or none).
fn decode(encoding: Option<&str>, body: &[u8]) -> Vec<u8> {
    use std::io::Read;
    let mut out = Vec::new();
    match encoding {
        Some("br") => brotli::BrotliDecompress(&mut &body[..], &mut out).unwrap(),
        Some("gzip") => {
            flate2::read::GzDecoder::new(body)
                .read_to_end(&mut out)
                .unwrap();
        }
        None => out = body.to_vec(),
        Some(other) => panic!("unexpected encoding {other}"),
    }
    out
}

#[tokio::test]
async fn bundles_pages_and_json_go_out_compressed_and_the_warrior_api_does_not() {
    let site = std::env::temp_dir().join(format!("site-{}", tests::random_name("")));
    let pkg = site.join("pkg");
    std::fs::create_dir_all(&pkg).unwrap();
    let wasm: Vec<u8> = (0..40_000u32)
        .flat_map(|i| (i % 97).to_le_bytes())
        .collect();
    std::fs::write(pkg.join("tracker.wasm"), &wasm).unwrap();
    std::fs::write(
        pkg.join("tracker.js"),
        "export function start() {}\n".repeat(100),
    )
    .unwrap();
    assert_eq!(server::precompress::refresh(&pkg).unwrap().len(), 4);
    let app = TestApp::start_with_site(site.to_str().unwrap()).await;
    app.project("p1", &["a", "b"]).await;

    let get = |path: &str, accept: &str| {
        let req = app.http.get(app.url(path));
        let req = if accept.is_empty() {
            req
        } else {
            req.header("accept-encoding", accept)
        };
        async move {
            let r = req.send().await.unwrap();
            let status = r.status().as_u16();
            let enc = r
                .headers()
                .get("content-encoding")
                .map(|v| v.to_str().unwrap().to_string());
            // Whatever form went out, a shared cache must key it on the encoding accepted.
            if status == 200 {
                assert_eq!(r.headers()["vary"], "accept-encoding", "{}", r.url());
            }
            (status, enc, r.bytes().await.unwrap().to_vec())
        }
    };

    // The bundles: the smallest copy the browser accepts, made ahead of time.
    for (accept, want) in [
        ("gzip, deflate, br", Some("br")),
        ("gzip", Some("gzip")),
        ("", None),
    ] {
        let (status, enc, body) = get("/pkg/tracker.wasm", accept).await;
        assert_eq!((status, enc.as_deref()), (200, want), "{accept:?}");
        assert_eq!(decode(enc.as_deref(), &body), wasm, "{accept:?}");
        if want.is_some() {
            assert!(body.len() < wasm.len() / 4, "{accept:?}: {} B", body.len());
        }
    }

    // Pages and the public JSON: gzip on the fly.
    for path in ["/", "/p1/", "/p1/stats.json", "/projects.json"] {
        let (status, enc, body) = get(path, "gzip").await;
        assert_eq!((status, enc.as_deref()), (200, Some("gzip")), "{path}");
        let plain = decode(Some("gzip"), &body);
        let (_, none, identity) = get(path, "").await;
        assert_eq!(none, None, "{path}");
        if path.ends_with(".json") {
            let a: serde_json::Value = serde_json::from_slice(&plain).unwrap();
            let b: serde_json::Value = serde_json::from_slice(&identity).unwrap();
            // The same document either way (nothing changes between the two reads here).
            assert!(
                a.is_object() && !a.as_object().unwrap().is_empty(),
                "{path}: {a}"
            );
            assert_eq!(a, b, "{path}");
        } else {
            assert!(
                String::from_utf8(plain).unwrap().contains("Project p1"),
                "{path}"
            );
        }
    }

    // The warrior API answers as the old tracker did, whatever the client accepts.
    let r = app
        .http
        .post(app.url("/p1/request"))
        .header("accept-encoding", "gzip, deflate")
        .body(r#"{"downloader":"alice","api_version":"2"}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert!(r.headers().get("content-encoding").is_none());
    let v: serde_json::Value = r.json().await.unwrap();
    assert!(v["item_name"].is_string(), "{v}");
    std::fs::remove_dir_all(&site).unwrap();
}
