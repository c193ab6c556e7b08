//! The Warrior VM (ArchiveTeam/warrior4-vm at ecf2197d0d54e52e05070edca1940095def367c9) checks
//! its network before it starts the Warrior: `GET /downloads/network_check/hello.html` on
//! Warrior HQ's host must answer 200 with exactly the page of
//! `appliance/skeleton/usr/share/warrior4-network-check/target.json` (compared byte for byte by
//! `crates/warrior4-network-check/src/check.rs`).

use tests::TestApp;

#[tokio::test]
async fn the_network_check_page_is_exactly_hello() {
    let app = TestApp::start().await;
    let r = app.get("/downloads/network_check/hello.html").await;
    assert_eq!(r.status, 200);
    assert_eq!(r.body, "<html><head></head><body>Hello.</body></html>\n");
    // A client that asks for gzip gets the same bytes (no encoding it did not undo).
    let r = app
        .send(
            app.http
                .get(app.url("/downloads/network_check/hello.html"))
                .header("accept-encoding", "gzip"),
        )
        .await;
    assert!(r.headers.get("content-encoding").is_none());
    assert_eq!(r.body, "<html><head></head><body>Hello.</body></html>\n");
}
