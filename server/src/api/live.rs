//! `GET /SLUG/ws[?since=SEQ]`: the leaderboard's websocket. First a snapshot, or with `since`
//! the events after SEQ from the capped history (a snapshot if they are gone); then the hub's
//! shared frames, each event once; a fresh snapshot whenever this watcher fell behind or the
//! hub lost events, never a silent gap.

use crate::openapi::ProjectPath;
use crate::web::ApiResult;
use crate::{
    hub::{events_frame, history, Signal},
    state::AppState,
    websocket::{Incoming, Socket, Upgrade, CLOSE_GOING_AWAY},
};
use axum::{
    body::Bytes,
    extract::{Path, Query, State},
    response::Response,
};
use axum::{extract::ConnectInfo, http::HeaderMap};
use std::{net::SocketAddr, time::Instant};
use tokio::sync::broadcast::error::RecvError;

/// Query of the websocket: the last sequence number the viewer has.
#[derive(Debug, serde::Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct Resume {
    since: Option<u64>,
}

/// Upgrades to the live websocket of project `slug`; every frame is written from the hub's one
/// copy ([`crate::websocket`]).
#[utoipa::path(get, path = "/{slug}/ws", tag = "live", params(ProjectPath, Resume))]
pub async fn watch_project(
    ws: Upgrade,
    State(state): State<AppState>,
    Path(slug): Path<String>,
    Query(resume): Query<Resume>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    crate::web::known_project(&state, &slug).await?;
    let ip = crate::web::client_ip(peer, &headers, state.config.trust_proxy);
    let slot = state.viewers.admit(&ip, &state.config.limits)?;
    Ok(ws.on_upgrade(move |socket| async move {
        stream_events(socket, state, slug, resume.since).await;
        drop(slot);
    }))
}

/// The first message and the sequence number it brings the viewer to: the events after
/// `since`, or a snapshot when the history no longer reaches back that far.
async fn first_message(
    state: &AppState,
    slug: &str,
    since: Option<u64>,
    subscribed: Instant,
) -> Option<(u64, Bytes)> {
    if let Some(since) = since {
        match history::events_after(&state.store, slug, since).await {
            Ok(Some(events)) => {
                let seq = events.last().map_or(since, |e| e.seq);
                return Some((seq, events_frame(&events)));
            }
            Ok(None) => {}
            Err(e) => {
                tracing::error!(error = %e, slug, "reading the event history");
                return None;
            }
        }
    }
    state.hub.snapshot(&state.store, slug, subscribed).await
}

/// What a watcher does with a signal.
enum Next {
    /// Send this message; the viewer then has every event up to the sequence number.
    Send(u64, Bytes),
    /// Nothing new for this viewer.
    Skip,
    /// Close: the hub stopped, or a snapshot could not be read (the viewer reconnects).
    Stop,
}

impl From<Option<(u64, Bytes)>> for Next {
    fn from(snapshot: Option<(u64, Bytes)>) -> Self {
        snapshot.map_or(Next::Stop, |(seq, text)| Next::Send(seq, text))
    }
}

/// What to send for `signal` to a viewer that has every event up to `sent`.
async fn next_message(
    state: &AppState,
    slug: &str,
    sent: u64,
    signal: Result<Signal, RecvError>,
) -> Next {
    let frame = match signal {
        Ok(Signal::Frame(f)) => f,
        // Without Redis there is no snapshot to read: close, and the viewer shows it is
        // reconnecting (its reconnects are refused until Redis answers).
        Ok(Signal::Resync) if !state.redis.is_up() => return Next::Stop,
        Ok(Signal::Resync) | Err(RecvError::Lagged(_)) => {
            return state
                .hub
                .snapshot(&state.store, slug, Instant::now())
                .await
                .into()
        }
        Err(RecvError::Closed) => return Next::Stop,
    };
    if frame.is_figures_only() {
        return Next::Send(sent, frame.ws());
    }
    if frame.first() > sent + 1 {
        // Events between what the viewer has and this frame were lost.
        return state
            .hub
            .snapshot(&state.store, slug, Instant::now())
            .await
            .into();
    }
    if frame.first() > sent {
        return Next::Send(frame.last(), frame.ws());
    }
    // Partly sent already (in the catch-up or snapshot): only the rest, serialised for this
    // viewer alone; this happens at most once per connection.
    match frame.after(sent) {
        Some(rest) => Next::Send(frame.last(), events_frame(rest)),
        None => Next::Skip,
    }
}

async fn stream_events(mut socket: Socket, state: AppState, slug: String, since: Option<u64>) {
    // Subscribe before reading: an event in between is both read and in a frame, and is sent
    // once, by its sequence number.
    if let Err(e) = state.hub.ensure_subscribed(&state.store, &slug).await {
        tracing::warn!(error = %e, slug, "subscribing to the project's events");
    }
    let mut frames = state.hub.watch(&slug);
    let subscribed = Instant::now();
    let Some((mut sent, first)) = first_message(&state, &slug, since, subscribed).await else {
        return;
    };
    if !sent_in_time(&mut socket, &first).await {
        return;
    }
    let every = state.config.limits.viewer_ping();
    let mut ping = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
    loop {
        tokio::select! {
            signal = frames.recv() => {
                let (seq, frame) = match next_message(&state, &slug, sent, signal).await {
                    Next::Send(seq, frame) => (seq, frame),
                    Next::Skip => continue,
                    Next::Stop => break,
                };
                sent = seq;
                if !sent_in_time(&mut socket, &frame).await {
                    return;
                }
            }
            _ = ping.tick() => {
                // Two pings unanswered: the viewer is gone without saying so.
                if socket.heard().elapsed() > every * 2 + every / 2 || socket.ping().await.is_err() {
                    tracing::debug!(slug, "dropped a viewer that stopped answering pings");
                    return;
                }
            }
            () = state.closing.cancelled() => return socket.close(CLOSE_GOING_AWAY).await,
            incoming = socket.recv() => match incoming {
                Incoming::Ping(payload) => {
                    if socket.pong(&payload).await.is_err() {
                        return;
                    }
                }
                Incoming::Close(code) => return socket.close(code).await,
                Incoming::Violation(code) => return socket.close(code).await,
                Incoming::Gone => return,
            },
        }
    }
    // The hub stopped or a snapshot could not be read: the viewer reconnects.
    socket.close(CLOSE_GOING_AWAY).await;
}

/// How long one frame may take to reach a viewer; one that reads slower is dropped.
const SEND_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// Writes `frame` to the viewer; false when it failed or took longer than [`SEND_TIMEOUT`].
async fn sent_in_time(socket: &mut Socket, frame: &Bytes) -> bool {
    matches!(
        tokio::time::timeout(SEND_TIMEOUT, socket.send(frame)).await,
        Ok(Ok(()))
    )
}
