//! The browser's live connection: a websocket per open leaderboard, reconnecting with backoff.

use crate::model::{Leaderboard, LiveMessage};
use leptos::prelude::*;
use send_wrapper::SendWrapper;
use std::{
    cell::Cell,
    rc::Rc,
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc,
    },
    time::Duration,
};
use wasm_bindgen::{closure::Closure, JsCast};
use web_sys::{MessageEvent, WebSocket};

const MAX_BACKOFF_MS: u32 = 30_000;

/// Keeps `board` current from `/SLUG/ws`; `online` tells whether the socket is open.
pub fn watch(board: RwSignal<Leaderboard>, online: RwSignal<bool>) {
    let live = Rc::new(Live {
        board,
        online,
        backoff_ms: Cell::new(500),
        stopped: Arc::default(),
    });
    let stopped = live.stopped.clone();
    on_cleanup(move || stopped.store(true, Ordering::Relaxed));
    open(live);
}

struct Live {
    board: RwSignal<Leaderboard>,
    online: RwSignal<bool>,
    backoff_ms: Cell<u32>,
    /// Set when the page goes away: no more reconnects.
    stopped: Arc<AtomicBool>,
}

impl Live {
    fn stopped(&self) -> bool {
        self.stopped.load(Ordering::Relaxed)
    }
}

fn url(slug: &str) -> Option<String> {
    let loc = window().location();
    let scheme = if loc.protocol().ok()? == "https:" {
        "wss"
    } else {
        "ws"
    };
    Some(format!("{scheme}://{}/{slug}/ws", loc.host().ok()?))
}

fn open(live: Rc<Live>) {
    if live.stopped() {
        return;
    }
    let slug = live.board.with_untracked(|b| b.slug.clone());
    let Some(ws) = url(&slug).and_then(|u| WebSocket::new(&u).ok()) else {
        retry(live);
        return;
    };

    let on_message = {
        let live = live.clone();
        Closure::<dyn FnMut(MessageEvent)>::new(move |ev: MessageEvent| {
            let Some(text) = ev.data().as_string() else {
                return;
            };
            match serde_json::from_str::<LiveMessage>(&text) {
                Ok(LiveMessage::Snapshot { board }) => live.board.set(board),
                Ok(LiveMessage::Events { events }) => live.board.update(|b| {
                    for e in &events {
                        b.apply(e);
                    }
                }),
                Err(e) => leptos::logging::warn!("bad live message: {e}"),
            }
        })
    };
    let on_open = {
        let live = live.clone();
        Closure::<dyn FnMut()>::new(move || {
            live.online.set(true);
            live.backoff_ms.set(500);
        })
    };
    let on_close = {
        let live = live.clone();
        Closure::<dyn FnMut()>::new(move || {
            if !live.stopped() {
                live.online.set(false);
            }
            retry(live.clone());
        })
    };
    ws.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
    ws.set_onopen(Some(on_open.as_ref().unchecked_ref()));
    ws.set_onclose(Some(on_close.as_ref().unchecked_ref()));
    // The socket owns its handlers for its whole life; they are dropped with the page.
    on_message.forget();
    on_open.forget();
    on_close.forget();

    let closer = SendWrapper::new(ws);
    let stopped = live.stopped.clone();
    on_cleanup(move || {
        stopped.store(true, Ordering::Relaxed);
        let _ = closer.close();
    });
}

fn retry(live: Rc<Live>) {
    if live.stopped() {
        return;
    }
    let wait = live.backoff_ms.get();
    live.backoff_ms.set((wait * 2).min(MAX_BACKOFF_MS));
    set_timeout(move || open(live), Duration::from_millis(wait.into()));
}
