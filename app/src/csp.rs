//! The Content-Security-Policy of every answer: the tracker's own scripts, Wasm, styles and
//! connections, nothing inline but the pages' hydration scripts, which carry the nonce Leptos
//! gives each rendered page.

/// The policy of every answer that is not a rendered page (the server's response-header layer
/// sets it). `wasm-unsafe-eval` lets the page compile its own Wasm, nothing else; `connect-src
/// 'self'` covers the live websocket in current browsers. The page-data `<script
/// type="application/json">` is data, which CSP does not govern.
pub const POLICY: &str = "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; \
    style-src 'self'; img-src 'self' data:; connect-src 'self'; object-src 'none'; \
    frame-ancestors 'none'; base-uri 'self'; form-action 'self'";

/// [`POLICY`] also allowing the inline scripts that carry `nonce`: Leptos's hydration script
/// (it imports the bundle and starts its Wasm) and any script it streams.
pub fn with_nonce(nonce: &str) -> String {
    POLICY.replacen(
        "script-src 'self'",
        &format!("script-src 'self' 'nonce-{nonce}'"),
        1,
    )
}

/// Sends the page being rendered with [`with_nonce`] of the nonce Leptos made for it (the
/// server's layer leaves a policy set here alone).
#[cfg(feature = "ssr")]
pub fn send_page_policy() {
    use leptos::prelude::use_context;
    let (Some(nonce), Some(response)) = (
        leptos::nonce::use_nonce(),
        use_context::<leptos_axum::ResponseOptions>(),
    ) else {
        return;
    };
    if let Ok(value) = http::HeaderValue::from_str(&with_nonce(&nonce)) {
        response.insert_header(http::header::CONTENT_SECURITY_POLICY, value);
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_nonce_joins_script_src_only() {
        let p = super::with_nonce("abc");
        assert!(
            p.contains("script-src 'self' 'nonce-abc' 'wasm-unsafe-eval';"),
            "{p}"
        );
        assert_eq!(p.matches("nonce-").count(), 1);
    }
}
