//! The security headers of every answer: pages, the panel, JSON, the warrior API, files.

use tests::{Reply, TestApp};

/// Panics unless `r` carries the security headers; its Content-Security-Policy.
fn assert_secured(what: &str, r: &Reply) -> String {
    let header = |name: &str| {
        r.headers
            .get(name)
            .unwrap_or_else(|| panic!("{what}: no {name}"))
            .to_str()
            .unwrap()
            .to_string()
    };
    assert_eq!(header("x-content-type-options"), "nosniff", "{what}");
    assert_eq!(header("x-frame-options"), "DENY", "{what}");
    assert_eq!(header("referrer-policy"), "same-origin", "{what}");
    let csp = header("content-security-policy");
    for part in [
        "default-src 'self'",
        "frame-ancestors 'none'",
        "base-uri 'self'",
        "form-action 'self'",
        "connect-src 'self'",
        "img-src 'self' data:",
        "object-src 'none'",
    ] {
        assert!(csp.contains(part), "{what}: {part} missing from {csp}");
    }
    let scripts = csp
        .split(';')
        .map(str::trim)
        .find(|d| d.starts_with("script-src "))
        .unwrap_or_else(|| panic!("{what}: no script-src in {csp}"));
    assert!(
        scripts.starts_with("script-src 'self'"),
        "{what}: {scripts}"
    );
    assert!(scripts.contains("'wasm-unsafe-eval'"), "{what}: {scripts}");
    for loose in [
        "'unsafe-inline'",
        "'unsafe-eval'",
        "*",
        "http:",
        "https:",
        "data:",
    ] {
        assert!(
            !scripts.split(' ').any(|s| s == loose),
            "{what}: {loose} in {scripts}"
        );
    }
    csp
}

/// The nonces of the inline scripts of `html`, panicking on one without a nonce (scripts with
/// `src` and `type="application/json"` data are not inline code).
fn inline_script_nonces(what: &str, html: &str) -> Vec<String> {
    html.split("<script")
        .skip(1)
        .filter_map(|rest| {
            let tag = &rest[..rest.find('>').unwrap()];
            if tag.contains(" src=") || tag.contains(r#"type="application/json""#) {
                return None;
            }
            let nonce = tag
                .split("nonce=\"")
                .nth(1)
                .unwrap_or_else(|| panic!("{what}: inline script without a nonce: <script{tag}>"));
            Some(nonce[..nonce.find('"').unwrap()].to_string())
        })
        .collect()
}

#[tokio::test]
async fn every_answer_carries_the_security_headers() {
    let app = TestApp::start().await;
    app.project("p1", &["a"]).await;
    let mut nonces = Vec::new();
    for path in [
        "/",
        "/p1/",
        "/admin",
        "/admin/users",
        "/admin/no-such/page/x",
    ] {
        let r = app.get(path).await;
        assert!(r.status == 200 || r.status == 404, "{path}: {}", r.status);
        let csp = assert_secured(path, &r);
        let found = inline_script_nonces(path, &r.body);
        assert!(!found.is_empty(), "{path}: the hydration script is inline");
        for nonce in found {
            assert!(
                csp.contains(&format!("'nonce-{nonce}'")),
                "{path}: nonce {nonce} not allowed by {csp}"
            );
            nonces.push(nonce);
        }
        assert!(
            !r.body.contains(" style="),
            "{path}: an inline style, which style-src 'self' refuses"
        );
    }
    nonces.dedup();
    assert!(nonces.len() >= 5, "a new nonce for every page: {nonces:?}");

    for path in [
        "/admin/api/session",
        "/p1/stats.json",
        "/board/projects.json",
    ] {
        let csp = assert_secured(path, &app.get(path).await);
        assert!(!csp.contains("nonce-"), "{path}: {csp}");
    }
    // The admin API's answers (a token's secret, backfeed keys, the CSRF token) are never
    // stored, whatever the call and its outcome.
    for path in [
        "/admin/api/session",
        "/admin/api/projects",
        "/admin/api/p1/settings",
    ] {
        let r = app.get(path).await;
        assert_eq!(
            r.headers.get("cache-control").map(|v| v.to_str().unwrap()),
            Some("no-store"),
            "{path} ({})",
            r.status
        );
    }
    // But `/now`, whose headers the grab scripts' clock check matches whole (field suite,
    // `grab_scripts.rs`): plain text no browser renders, with exactly those headers.
    let now = app.get("/now").await;
    assert_eq!(now.status, 200);
    assert!(now.headers.get("content-security-policy").is_none());
    let r = app
        .post("/p1/request", r#"{"downloader":"alice","api_version":"2"}"#)
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_secured("the warrior API", &r);
}
