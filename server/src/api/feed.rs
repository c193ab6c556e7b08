//! The compatibility feed for third-party tools: the old broadcaster's per-completion JSON
//! (PROTOCOL.md, "Live event") as server-sent events at `GET /SLUG/live`, and the last 20 at
//! `GET /SLUG/recent.json`.

use crate::openapi::ProjectPath;
use crate::web::{ApiError, ApiResult};
use crate::{
    hub::{history, Frame, LegacyEvent, Signal},
    state::AppState,
};
use axum::{
    body::{Body, Bytes},
    extract::{ConnectInfo, Path, State},
    http::{header, HeaderMap, HeaderValue},
    response::{IntoResponse, Response},
    Json,
};
use futures::Stream;
use std::{convert::Infallible, net::SocketAddr, sync::Arc, time::Duration};
use tokio::sync::broadcast::{self, error::RecvError};

/// How many completions `recent.json` lists.
pub const RECENT_JSON_LEN: usize = 20;

/// How often an idle feed sends a comment, so proxies and clients keep the connection.
pub const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// `GET /SLUG/recent.json`: the last [`RECENT_JSON_LEN`] completions, newest first, each as
/// the old broadcaster's event (see [`LegacyEvent`]).
#[utoipa::path(get, path = "/{slug}/recent.json", tag = "public", params(ProjectPath))]
pub async fn get_recent(
    State(state): State<AppState>,
    Path(slug): Path<String>,
) -> ApiResult<Response> {
    crate::web::known_project(&state, &slug).await?;
    let events = history::recent(&state.store, &slug, RECENT_JSON_LEN).await?;
    let figures = state.hub.latest_figures(&slug);
    let legacy: Vec<LegacyEvent> = events
        .iter()
        .map(|e| LegacyEvent::new(e, figures.as_deref()))
        .collect();
    Ok(Json(legacy).into_response())
}

/// `GET /SLUG/live`: server-sent events, one per completion, `id` = its sequence number.
/// A client that reconnects with `Last-Event-ID` first gets the completions it missed from the
/// capped history (when they are gone, a comment says so and the feed goes on live).
///
/// ```text
/// retry: 3000
///
/// id: 42
/// data: {"downloader":...,"counts":{...}}
///
/// : keep-alive
/// ```
#[utoipa::path(get, path = "/{slug}/live", tag = "live", params(ProjectPath))]
pub async fn stream_live_events(
    State(state): State<AppState>,
    Path(slug): Path<String>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let last_id = match headers.get("last-event-id") {
        None => None,
        Some(v) => Some(
            v.to_str()
                .ok()
                .and_then(|s| s.trim().parse::<u64>().ok())
                .ok_or_else(|| ApiError::bad_request("Last-Event-ID must be a sequence number."))?,
        ),
    };
    crate::web::known_project(&state, &slug).await?;
    let slot = state.viewers.admit(
        &crate::web::client_ip(peer, &headers, state.config.trust_proxy),
        &state.config.limits,
    )?;
    // Subscribe before reading the history; events in both are sent once, by sequence number.
    state.hub.ensure_subscribed(&state.store, &slug).await?;
    let frames = state.hub.watch(&slug);
    let mut first = String::from("retry: 3000\n\n");
    let mut sent = None;
    if let Some(since) = last_id {
        match history::events_after(&state.store, &slug, since).await? {
            Some(events) => {
                first.push_str(&state.hub.sse_chunk(&slug, &events));
                sent = Some(events.last().map_or(since, |e| e.seq));
            }
            None => first.push_str(": the completions after that id are gone; going on live\n\n"),
        }
    }
    let feed = Feed {
        _slot: slot,
        state,
        slug,
        frames,
        sent,
        first: Some(first.into()),
        keep_alive: tokio::time::interval_at(tokio::time::Instant::now() + KEEP_ALIVE, KEEP_ALIVE),
    };
    let mut resp = Body::from_stream(feed.into_stream()).into_response();
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert("x-accel-buffering", HeaderValue::from_static("no"));
    Ok(resp)
}

/// One client's feed.
struct Feed {
    /// Its place among the viewers, given back when the feed ends.
    _slot: crate::viewers::Slot,
    state: AppState,
    slug: String,
    frames: broadcast::Receiver<Signal>,
    /// The last sequence number sent, once known.
    sent: Option<u64>,
    first: Option<Bytes>,
    keep_alive: tokio::time::Interval,
}

impl Feed {
    fn into_stream(self) -> impl Stream<Item = Result<Bytes, Infallible>> + Send {
        futures::stream::unfold(self, |mut feed| async move {
            let chunk = feed.next_chunk().await?;
            Some((Ok(chunk), feed))
        })
    }

    /// The next bytes to send; `None` ends the feed.
    async fn next_chunk(&mut self) -> Option<Bytes> {
        if let Some(first) = self.first.take() {
            return Some(first);
        }
        loop {
            let signal = tokio::select! {
                signal = self.frames.recv() => signal,
                _ = self.keep_alive.tick() => return Some(Bytes::from_static(b": keep-alive\n\n")),
                // The server stops: the feed ends (the client reconnects with Last-Event-ID).
                () = self.state.closing.cancelled() => return None,
            };
            let chunk = match signal {
                Ok(Signal::Frame(frame)) => self.frame_chunk(&frame).await,
                // Without Redis there is no history to catch up from: end the feed; the client
                // reconnects with Last-Event-ID, refused until Redis answers.
                Ok(Signal::Resync) if !self.state.redis.is_up() => return None,
                Ok(Signal::Resync) | Err(RecvError::Lagged(_)) => self.catch_up(None).await,
                Err(RecvError::Closed) => return None,
            };
            if let Some(chunk) = chunk {
                return Some(chunk);
            }
        }
    }

    /// What of `frame` this client has not had yet.
    async fn frame_chunk(&mut self, frame: &Arc<Frame>) -> Option<Bytes> {
        if frame.is_figures_only() {
            // The old broadcaster had no statistics to send.
            return None;
        }
        let Some(sent) = self.sent else {
            self.sent = Some(frame.last());
            return Some(frame.sse());
        };
        if frame.first() > sent + 1 {
            return self.catch_up(Some(frame)).await;
        }
        let rest = frame.after(sent)?;
        self.sent = Some(frame.last());
        if frame.first() > sent {
            Some(frame.sse())
        } else {
            Some(self.state.hub.sse_chunk(&self.slug, rest).into())
        }
    }

    /// After missed frames: the missed completions from the history, or (when gone) a comment
    /// and then `frame`, the first one after the gap.
    async fn catch_up(&mut self, frame: Option<&Arc<Frame>>) -> Option<Bytes> {
        let sent = self.sent?;
        match history::events_after(&self.state.store, &self.slug, sent).await {
            Ok(Some(events)) if !events.is_empty() => {
                self.sent = events.last().map(|e| e.seq);
                Some(self.state.hub.sse_chunk(&self.slug, &events).into())
            }
            Ok(Some(_)) => None,
            Ok(None) | Err(_) => {
                let mut chunk = String::from(": some completions were missed\n\n");
                // Whatever comes next is the first after the gap.
                self.sent = frame.map(|f| f.last());
                if let Some(frame) = frame {
                    chunk.push_str(&String::from_utf8_lossy(&frame.sse()));
                }
                Some(chunk.into())
            }
        }
    }
}
