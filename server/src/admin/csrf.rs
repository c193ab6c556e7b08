//! The guard of every state-changing `/admin` request: a same-origin `Origin` (when the
//! browser sends one) and the session's CSRF token in `X-CSRF-Token`. Logging in and the setup,
//! made before there is a session, need a same-origin `Origin` instead. Scripts authenticate
//! with `Authorization: Bearer` (the install's admin token or an account's API token) and send
//! no cookie, so they need neither: a cross-site page cannot set that header (no CORS is
//! offered), and a request carrying it is judged by the token alone, never by the session.

use super::auth::{session_error, CSRF};
use crate::web::bearer;
use crate::web::{constant_time_eq, ApiError};
use axum::{
    extract::Request,
    http::{header, HeaderMap, Method},
    middleware::Next,
    response::{IntoResponse, Response},
};
use tower_sessions::Session;

/// The header carrying the CSRF token.
pub use app::model::admin::CSRF_HEADER;

/// Refuses unsafe requests that are cross-origin or lack the session's CSRF token.
pub async fn guard(req: Request, next: Next) -> Response {
    let safe = matches!(*req.method(), Method::GET | Method::HEAD | Method::OPTIONS);
    if safe || bearer(req.headers()).is_some() {
        return next.run(req).await;
    }
    if !same_origin(req.headers()) {
        return ApiError::forbidden("Cross-origin request refused.").into_response();
    }
    let Some(session) = req.extensions().get::<Session>().cloned() else {
        return ApiError::forbidden("No session.").into_response();
    };
    let expected = match session.get::<String>(CSRF).await {
        Ok(t) => t.unwrap_or_default(),
        Err(e) => return session_error(e).into_response(),
    };
    let sent = req
        .headers()
        .get(CSRF_HEADER)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    if expected.is_empty() || !constant_time_eq(sent.as_bytes(), expected.as_bytes()) {
        return ApiError::forbidden("Missing or wrong CSRF token: reload the page.")
            .into_response();
    }
    next.run(req).await
}

/// Refuses unsafe requests without a same-origin `Origin` (browsers send it with every POST):
/// the guard of logging in and the setup, which a visitor makes before having a session.
pub async fn same_origin_guard(req: Request, next: Next) -> Response {
    let safe = matches!(*req.method(), Method::GET | Method::HEAD | Method::OPTIONS);
    let from_here = req.headers().contains_key(header::ORIGIN) && same_origin(req.headers());
    if !(safe || from_here) {
        return ApiError::forbidden("Cross-origin request refused (or no Origin sent).")
            .into_response();
    }
    next.run(req).await
}

/// Whether the request's `Origin` (if any) names the host it was sent to, and the browser
/// does not flag it cross-site.
fn same_origin(headers: &HeaderMap) -> bool {
    let text = |name| headers.get(name).and_then(|v| v.to_str().ok());
    if text("sec-fetch-site") == Some("cross-site") {
        return false;
    }
    let Some(origin) = text(header::ORIGIN.as_str()) else {
        return true;
    };
    let host = text(header::HOST.as_str()).unwrap_or_default();
    let origin_host = origin.split_once("://").map(|(_, h)| h).unwrap_or("");
    let forwarded = text("x-forwarded-host");
    !origin_host.is_empty()
        && (origin_host.eq_ignore_ascii_case(host)
            || forwarded.is_some_and(|f| origin_host.eq_ignore_ascii_case(f)))
}
