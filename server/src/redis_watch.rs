//! Whether Redis answers now, watched by one task of pings on a connection of its own: while it
//! does not, warrior calls are answered 503 at once instead of queueing, `/healthz` and the pages
//! say the tracker is reconnecting, and the live viewers are told; when it answers again the
//! viewers are sent a fresh snapshot.

use crate::{store::Store, web::ApiError, AppState};
use axum::{
    extract::{Request, State},
    http::{header, HeaderValue, StatusCode},
    middleware::Next,
    response::{Html, IntoResponse, Response},
};
use std::{
    sync::{Arc, Weak},
    time::{Duration, Instant},
};
use tokio::sync::watch;

/// How often Redis is pinged.
pub const PROBE_INTERVAL: Duration = Duration::from_millis(250);
/// How long a ping may take before it counts as a failure.
pub const PROBE_TIMEOUT: Duration = Duration::from_millis(400);
/// Failed pings in a row before Redis counts as unreachable: one slow ping under load is not an
/// outage, two (about half a second) are.
pub const FAILURES_TO_DOWN: u32 = 2;

/// Redis's reachability as last probed; cheap to clone. Starts reachable (the process has just
/// connected).
#[derive(Clone)]
pub struct RedisWatch(Arc<watch::Sender<bool>>);

impl Default for RedisWatch {
    fn default() -> Self {
        Self(Arc::new(watch::Sender::new(true)))
    }
}

impl RedisWatch {
    /// Whether the last probes reached Redis.
    pub fn is_up(&self) -> bool {
        *self.0.borrow()
    }

    /// A receiver of every change of [`RedisWatch::is_up`].
    pub fn subscribe(&self) -> watch::Receiver<bool> {
        self.0.subscribe()
    }

    /// Records a probe's verdict (the probe task, and tests of what follows from it).
    pub fn set(&self, up: bool) {
        self.0
            .send_if_modified(|now| std::mem::replace(now, up) != up);
    }

    /// Starts probing `store`'s Redis; the task ends when every clone of this watch is dropped.
    pub fn start_probing(&self, store: &Store) {
        let watch = Arc::downgrade(&self.0);
        let store = store.clone();
        tokio::spawn(probe(watch, store));
    }
}

async fn probe(watch: Weak<watch::Sender<bool>>, store: Store) {
    use fred::interfaces::ClientLike as _;
    // Made again while Redis cannot be reached at all (a first connection fails outright).
    let mut client = None;
    let mut tick = tokio::time::interval(PROBE_INTERVAL);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let (mut failures, mut down_since) = (0u32, None::<Instant>);
    loop {
        tick.tick().await;
        let Some(watch) = watch.upgrade() else { break };
        let answered = tokio::time::timeout(PROBE_TIMEOUT, async {
            if client.is_none() {
                client = store.probe_client().await.ok();
            }
            match &client {
                Some(c) => c.ping::<String>(None).await.is_ok(),
                None => false,
            }
        })
        .await
        .unwrap_or(false);
        if answered {
            failures = 0;
            if let Some(since) = down_since.take() {
                tracing::warn!(
                    after_s = since.elapsed().as_secs_f64(),
                    "redis answers again"
                );
                RedisWatch(watch).set(true);
            }
        } else {
            failures += 1;
            if failures == FAILURES_TO_DOWN {
                tracing::warn!("redis does not answer: warrior calls get 503 until it does");
                down_since = Some(Instant::now());
                RedisWatch(watch).set(false);
            }
        }
    }
    if let Some(c) = client {
        let _ = c.quit().await;
    }
}

/// Warrior calls while Redis does not answer: 503 with `Retry-After` at once, before the body
/// is read or anything queues.
pub async fn refuse_calls_while_down(
    State(state): State<AppState>,
    req: Request,
    next: Next,
) -> Response {
    if state.redis.is_up() {
        return next.run(req).await;
    }
    ApiError::Internal(crate::store::StoreError::Unavailable(
        "redis does not answer".into(),
    ))
    .into_response()
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
    let retry = crate::web::UNAVAILABLE_RETRY_AFTER;
    let page = format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta http-equiv=\"refresh\" content=\"{retry}\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <link rel=\"stylesheet\" href=\"/pkg/tracker.css\">\
         <title>Reconnecting · Tracker</title></head><body><main>\
         <h1>Reconnecting…</h1><p role=\"status\">{}</p>\
         <p>This page reloads itself.</p></main></body></html>",
        crate::web::RECONNECTING
    );
    let mut resp = (StatusCode::SERVICE_UNAVAILABLE, Html(page)).into_response();
    let headers = resp.headers_mut();
    headers.insert(header::RETRY_AFTER, HeaderValue::from(retry));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_changes_are_sent() {
        let w = RedisWatch::default();
        let mut rx = w.subscribe();
        w.set(true);
        assert!(!rx.has_changed().unwrap(), "no change, no message");
        w.set(false);
        assert!(rx.has_changed().unwrap() && !*rx.borrow_and_update());
        assert!(!w.is_up());
    }
}
