//! What a browser's fetch metadata (`Sec-Fetch-*`) says of a request.

use axum::http::HeaderMap;

/// Whether a request is a script load by one of this tracker's own pages (the browser's fetch
/// metadata: `Sec-Fetch-Site: same-origin`, `Sec-Fetch-Dest: script`). JSONP is for other sites'
/// pages; on its own origin it would be a script the pages' CSP (`script-src 'self'`) runs with a
/// callback of the caller's choosing, so it is refused there.
pub fn script_of_own_page(headers: &HeaderMap) -> bool {
    let is = |name: &str, value: &str| {
        headers
            .get(name)
            .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(value.as_bytes()))
    };
    is("sec-fetch-site", "same-origin") && is("sec-fetch-dest", "script")
}
