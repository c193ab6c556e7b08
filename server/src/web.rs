//! The HTTP plumbing every front door shares (warrior API, public JSON, admin API, websocket):
//! the error type and its answers, the Redis deadline, project lookup, the client's address and
//! user agent, secrets compared in constant time, and the middleware that answers before a
//! handler does (per-address read limits, Redis out of reach).

use crate::state::AppState;
use axum::{
    extract::{Request, State},
    http::{header, HeaderMap, HeaderValue, StatusCode},
    middleware::Next,
    response::{Html, IntoResponse, Response},
};
use std::{net::SocketAddr, time::Instant};

/// An API failure. Client mistakes carry a short reason; internal errors are logged and
/// answered with a generic body.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// A 4xx with its reason.
    #[error("{1}")]
    Client(StatusCode, String),
    /// 429 with `Retry-After` seconds.
    #[error("Rate limited; retry in {0} s.")]
    RateLimited(u64),
    /// 503 with `Retry-After` seconds and the reason: a declared overload.
    #[error("{1}")]
    Unavailable(u64, String),
    /// 500: something broke on our side (logged, not shown); 503 with `Retry-After` when it is
    /// Redis refusing writes past its memory cap ([`crate::store::StoreError::Full`]) or
    /// Redis out of reach for a moment ([`crate::store::StoreError::Unavailable`]).
    #[error(transparent)]
    Internal(#[from] crate::store::StoreError),
}

/// `Retry-After` seconds of a write refused because Redis is full.
pub const FULL_RETRY_AFTER: u64 = 5;

/// `Retry-After` seconds while Redis cannot be reached.
pub const UNAVAILABLE_RETRY_AFTER: u64 = 2;

impl From<crate::viewers::Full> for ApiError {
    fn from(full: crate::viewers::Full) -> Self {
        ApiError::Unavailable(crate::viewers::RETRY_AFTER_S, full.0)
    }
}

/// The reason given to every caller while Redis cannot be reached.
pub use crate::store::RECONNECTING;

/// Whether `last` (seconds, shared by one kind of warning) is a minute old, and if so moves it
/// to now: under load every request would log the same warning.
pub(crate) fn once_a_minute(last: &std::sync::atomic::AtomicU64) -> bool {
    use std::sync::atomic::Ordering;
    let now = crate::store::now_ms() / 1000;
    let seen = last.load(Ordering::Relaxed);
    now >= seen + 60
        && last
            .compare_exchange(seen, now, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
}

/// Logs that Redis is full at most once a minute.
fn warn_full() {
    static LAST: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    if once_a_minute(&LAST) {
        tracing::warn!(
            "redis is full (maxmemory): writes answered 503 until memory frees; raise TRACKER_REDIS_MAXMEMORY (or maxmemory) or archive logs"
        );
    }
}

/// Logs at most once a minute that calls were answered 503 because Redis was unavailable.
fn warn_unavailable(detail: &str) {
    static LAST: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    if once_a_minute(&LAST) {
        tracing::warn!(
            error = detail,
            "redis unavailable: calls answered 503 until it is back"
        );
    }
}

impl ApiError {
    /// 400 with `reason`.
    pub fn bad_request(reason: impl Into<String>) -> Self {
        Self::Client(StatusCode::BAD_REQUEST, reason.into())
    }
    /// 404 with `reason`.
    pub fn not_found(reason: impl Into<String>) -> Self {
        Self::Client(StatusCode::NOT_FOUND, reason.into())
    }
    /// 403 with `reason`.
    pub fn forbidden(reason: impl Into<String>) -> Self {
        Self::Client(StatusCode::FORBIDDEN, reason.into())
    }
    /// 404: no such project.
    pub fn no_project() -> Self {
        Self::not_found("No such project.")
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let (status, reason, retry) = match &self {
            ApiError::Client(status, _) => (*status, self.to_string(), None),
            ApiError::RateLimited(secs) => {
                (StatusCode::TOO_MANY_REQUESTS, self.to_string(), Some(*secs))
            }
            ApiError::Unavailable(secs, _) => (
                StatusCode::SERVICE_UNAVAILABLE,
                self.to_string(),
                Some(*secs),
            ),
            ApiError::Internal(crate::store::StoreError::Full) => {
                warn_full();
                let reason = "The tracker's storage is full; retry later.".to_string();
                (
                    StatusCode::SERVICE_UNAVAILABLE,
                    reason,
                    Some(FULL_RETRY_AFTER),
                )
            }
            ApiError::Internal(crate::store::StoreError::Unavailable(detail)) => {
                warn_unavailable(detail);
                (
                    StatusCode::SERVICE_UNAVAILABLE,
                    RECONNECTING.to_string(),
                    Some(UNAVAILABLE_RETRY_AFTER),
                )
            }
            ApiError::Internal(crate::store::StoreError::Disk(detail)) => {
                // Segments that cannot be read now (an object store down, a disk failing):
                // the item is not said to be unknown, and the caller may retry.
                tracing::warn!(error = %detail, "offloaded items unreadable: answered 503");
                (
                    StatusCode::SERVICE_UNAVAILABLE,
                    "The tracker cannot read its offloaded items now; retry shortly.".to_string(),
                    Some(UNAVAILABLE_RETRY_AFTER),
                )
            }
            ApiError::Internal(e) => {
                tracing::error!(error = %e, "internal error");
                return (StatusCode::INTERNAL_SERVER_ERROR, "Internal error.\n").into_response();
            }
        };
        let mut resp = (status, format!("{reason}\n")).into_response();
        resp.headers_mut()
            .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        if let Some(secs) = retry {
            resp.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        resp
    }
}

/// Result of a handler.
pub type ApiResult<T> = Result<T, ApiError>;

/// Runs a warrior call's Redis work (its body already read) under the Redis deadline
/// (`TRACKER_REDIS_DEADLINE`): when it runs out, 503 with `Retry-After`, and the work is
/// dropped; a claim that runs later anyway is handed back ([`crate::batcher`]).
pub async fn within_deadline<T>(
    state: &AppState,
    work: impl std::future::Future<Output = ApiResult<T>>,
) -> ApiResult<T> {
    let deadline = state.config.limits.redis_deadline();
    tokio::time::timeout(deadline, work)
        .await
        .unwrap_or_else(|_| {
            Err(ApiError::Internal(crate::store::StoreError::Unavailable(
                format!("no answer from redis within {} ms", deadline.as_millis()),
            )))
        })
}

/// 404 unless `slug` names a project.
pub async fn known_project(
    state: &AppState,
    slug: &str,
) -> ApiResult<std::sync::Arc<crate::store::Settings>> {
    if !crate::store::valid_slug(slug) {
        return Err(ApiError::no_project());
    }
    state
        .store
        .projects()
        .project(slug)
        .await?
        .ok_or_else(ApiError::no_project)
}

/// The client's IP: the peer, or with `trust_proxy` the last `X-Forwarded-For` hop.
pub fn client_ip(peer: SocketAddr, headers: &HeaderMap, trust_proxy: bool) -> String {
    if trust_proxy {
        let forwarded = headers.get("x-forwarded-for").and_then(|v| v.to_str().ok());
        if let Some(ip) = forwarded.and_then(|v| v.rsplit(',').next()).map(str::trim) {
            if ip.parse::<std::net::IpAddr>().is_ok() {
                return ip.to_string();
            }
        }
    }
    peer.ip().to_string()
}

/// The client's IP of a request: [`client_ip`] of the peer that [`crate::start`] records in its
/// extensions, and of its headers.
pub fn request_ip(
    extensions: &axum::http::Extensions,
    headers: &HeaderMap,
    trust_proxy: bool,
) -> String {
    let peer = extensions
        .get::<axum::extract::ConnectInfo<SocketAddr>>()
        .map(|c| c.0)
        .unwrap_or_else(|| SocketAddr::from(([0, 0, 0, 0], 0)));
    client_ip(peer, headers, trust_proxy)
}

/// The `User-Agent`, at most 256 characters.
pub fn user_agent(headers: &HeaderMap) -> String {
    headers
        .get(header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .chars()
        .take(256)
        .collect()
}

/// The secret of an `Authorization: Bearer SECRET` header, if the request has one.
pub fn bearer(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(header::AUTHORIZATION)?
        .to_str()
        .ok()?
        .strip_prefix("Bearer ")
        .map(str::trim)
        .filter(|s| !s.is_empty())
}

/// What attempts from `ip` are counted under (logins, Warrior HQ registrations, rescues): the address, or for IPv6 its /64 (one
/// host's usual share, of which it may use any address).
pub fn network(ip: &str) -> String {
    match ip.parse::<std::net::IpAddr>() {
        Ok(std::net::IpAddr::V6(v6)) => match v6.to_ipv4_mapped() {
            Some(v4) => v4.to_string(),
            None => {
                let s = v6.segments();
                format!("{:x}:{:x}:{:x}:{:x}::/64", s[0], s[1], s[2], s[3])
            }
        },
        _ => ip.to_string(),
    }
}

/// Whether the request carries the admin API token (`Authorization: Bearer TOKEN`).
pub fn is_admin(headers: &HeaderMap, token: Option<&str>) -> bool {
    let Some(token) = token.filter(|t| !t.is_empty()) else {
        return false;
    };
    bearer(headers).is_some_and(|s| constant_time_eq(s.as_bytes(), token.as_bytes()))
}

/// Compares secrets without leaking where they differ.
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Middleware of the public pages and JSON: 429 with `Retry-After` for an address past its
/// allowance ([`crate::limits::Limits::public_reads`]).
pub async fn limit_reads(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let ip = request_ip(req.extensions(), req.headers(), state.config.trust_proxy);
    let limits = &state.config.limits;
    // Per network: an IPv6 address counts with its /64, which one host holds whole.
    match state.read_throttle.check(
        &network(&ip),
        limits.public_reads,
        limits.public_reads_burst,
        Instant::now(),
    ) {
        Ok(()) => next.run(req).await,
        Err(wait) => ApiError::RateLimited(wait.as_secs().max(1)).into_response(),
    }
}

/// Public pages while Redis does not answer: a 503 page saying the tracker is reconnecting,
/// which reloads itself a few seconds later.
pub async fn explain_pages_while_down(
    State(state): State<AppState>,
    req: Request,
    next: Next,
) -> Response {
    if state.redis.is_up() {
        return next.run(req).await;
    }
    let retry = UNAVAILABLE_RETRY_AFTER;
    let page = format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta http-equiv=\"refresh\" content=\"{retry}\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <link rel=\"stylesheet\" href=\"/pkg/tracker.css\">\
         <title>Reconnecting · Tracker</title></head><body><main>\
         <h1>Reconnecting…</h1><p role=\"status\">{}</p>\
         <p>This page reloads itself.</p></main></body></html>",
        RECONNECTING
    );
    let mut resp = (StatusCode::SERVICE_UNAVAILABLE, Html(page)).into_response();
    let headers = resp.headers_mut();
    headers.insert(header::RETRY_AFTER, HeaderValue::from(retry));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    resp
}
