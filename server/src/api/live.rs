//! `GET /SLUG/ws[?since=SEQ]`: the leaderboard's websocket. First a snapshot, or with `since`
//! the events after SEQ from the capped history (a snapshot if they are gone); then event
//! frames; a fresh snapshot whenever this watcher fell behind or the hub lost events, never a
//! silent gap.

use super::ApiResult;
use crate::{hub::RESYNC, store::PAGE_RECENT, AppState};
use app::model::LiveMessage;
use axum::{
    extract::{
        ws::{Message, WebSocket, WebSocketUpgrade},
        Path, Query, State,
    },
    response::Response,
};
use tokio::sync::broadcast::error::RecvError;

/// Query of the websocket: the last sequence number the viewer has.
#[derive(Debug, serde::Deserialize)]
pub struct Resume {
    since: Option<u64>,
}

/// Upgrades to the live websocket of project `slug`.
pub async fn watch_project(
    ws: WebSocketUpgrade,
    State(state): State<AppState>,
    Path(slug): Path<String>,
    Query(resume): Query<Resume>,
) -> ApiResult<Response> {
    super::known_project(&state, &slug).await?;
    Ok(ws.on_upgrade(move |socket| stream_events(socket, state, slug, resume.since)))
}

/// The events after `since`, or a snapshot when the history no longer reaches back that far.
async fn catch_up(state: &AppState, slug: &str, since: u64) -> Option<Message> {
    match state.store.events_since(slug, since).await.ok()? {
        Some(events) => {
            let text = serde_json::to_string(&LiveMessage::Events { events }).ok()?;
            Some(Message::Text(text.into()))
        }
        None => snapshot(state, slug).await,
    }
}

async fn snapshot(state: &AppState, slug: &str) -> Option<Message> {
    let board = state
        .store
        .leaderboard(slug, -1, PAGE_RECENT)
        .await
        .ok()??;
    let text = serde_json::to_string(&LiveMessage::Snapshot { board }).ok()?;
    Some(Message::Text(text.into()))
}

async fn stream_events(mut socket: WebSocket, state: AppState, slug: String, since: Option<u64>) {
    // Subscribe before the snapshot: an event in between is both in the snapshot and sent,
    // and the viewer skips it by its sequence number.
    let mut frames = state.hub.watch(&slug);
    let first = match since {
        Some(seq) => catch_up(&state, &slug, seq).await,
        None => snapshot(&state, &slug).await,
    };
    let Some(first) = first else { return };
    if socket.send(first).await.is_err() {
        return;
    }
    loop {
        tokio::select! {
            frame = frames.recv() => {
                let msg = match frame {
                    Ok(f) if f.as_str() != RESYNC => Some(Message::Text(f)),
                    Ok(_) | Err(RecvError::Lagged(_)) => snapshot(&state, &slug).await,
                    Err(RecvError::Closed) => None,
                };
                let Some(msg) = msg else { break };
                if socket.send(msg).await.is_err() {
                    break;
                }
            }
            incoming = socket.recv() => match incoming {
                None | Some(Err(_)) | Some(Ok(Message::Close(_))) => break,
                Some(Ok(_)) => {}
            },
        }
    }
}
