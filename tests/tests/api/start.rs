//! The start-up path shared by `tracker serve` and the harness (`server::start`): its tasks run
//! and do what they say.

use fred::prelude::*;
use server::Config;
use tests::TestApp;

#[tokio::test]
async fn start_up_compresses_the_bundles_it_serves() {
    let site = std::env::temp_dir().join(tests::random_name("site-"));
    let pkg = site.join("pkg");
    std::fs::create_dir_all(&pkg).unwrap();
    std::fs::write(
        pkg.join("tracker.js"),
        "export function start() {}\n".repeat(200),
    )
    .unwrap();
    std::fs::write(pkg.join("tracker.wasm"), vec![7u8; 50_000]).unwrap();
    let mut app = TestApp::start_with_site(site.to_str().unwrap()).await;
    let report = app.startup.take().unwrap().await.unwrap();
    let mut written: Vec<String> = report
        .compressed
        .expect("compressed")
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    written.sort();
    assert_eq!(
        written,
        [
            "tracker.js.br",
            "tracker.js.gz",
            "tracker.wasm.br",
            "tracker.wasm.gz"
        ]
    );
    let r = app
        .send(
            app.http
                .get(app.url("/pkg/tracker.wasm"))
                .header("accept-encoding", "br"),
        )
        .await;
    assert_eq!(r.status, 200);
    assert_eq!(
        r.headers["content-encoding"], "br",
        "the copy start-up wrote"
    );
    let _ = std::fs::remove_dir_all(&site);
}

#[tokio::test]
async fn start_up_scores_the_queues_of_projects_from_before_random_order() {
    let app = TestApp::start().await;
    app.project("old", &["a", "b", "c"]).await;
    let meta = app.store.keys().project("old").meta();
    let _: () = app.store.client().hdel(&meta, "shuffled").await.unwrap();
    // A second process on the same Redis and namespace, started as `tracker serve` starts.
    let mut config = Config::new(&app.redis_url, &app.namespace);
    config.listen = "127.0.0.1:0".parse().unwrap();
    let mut second = server::start(config).await.expect("start");
    let report = second.startup.take().unwrap().await.unwrap();
    assert_eq!(report.scored.expect("scored"), [("old".to_string(), 3)]);
    let mark: Option<String> = app.store.client().hget(&meta, "shuffled").await.unwrap();
    assert_eq!(mark.as_deref(), Some("1"));
    assert!(second.setup_link.is_some(), "still no account");
    app.assert_invariant("old").await;
}

#[tokio::test]
async fn no_setup_link_once_an_account_exists() {
    let app = TestApp::start().await;
    assert!(app.setup_link.is_some());
    let run = app.cli(
        &["admin", "create-user", "root", "--global"],
        b"correct horse battery\n",
    );
    assert!(run.ok, "{}", run.err);
    let mut config = Config::new(&app.redis_url, &app.namespace);
    config.listen = "127.0.0.1:0".parse().unwrap();
    let second = server::start(config).await.expect("start");
    assert_eq!(second.setup_link, None);
}
