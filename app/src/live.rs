//! The browser's live connection: a websocket per open leaderboard that resumes from the last
//! sequence number it applied (`?since=SEQ`) after any drop, with exponential backoff.

use crate::model::{ChartData, Leaderboard, LiveMessage};
use leptos::prelude::*;
use send_wrapper::SendWrapper;
use std::{
    cell::{Cell, RefCell},
    rc::Rc,
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc,
    },
    time::Duration,
};
use wasm_bindgen::{closure::Closure, JsCast};
use web_sys::{MessageEvent, WebSocket};

const FIRST_BACKOFF_MS: u32 = 250;
const MAX_BACKOFF_MS: u32 = 10_000;
/// How often the page's clock moves on without events (rates decay, ages grow).
const TICK: Duration = Duration::from_secs(10);
/// Ticks between re-reads of the downloaders' window sums (the tracker statistics come over the
/// socket: the server reads them once for all viewers).
const REFRESH_TICKS: u32 = 6;

/// Keeps `board` and `charts` current from `/SLUG/ws`; `online` tells whether the socket is open
/// (`None` before the first attempt ended).
pub fn watch(
    board: RwSignal<Leaderboard>,
    charts: RwSignal<ChartData>,
    online: RwSignal<Option<bool>>,
) {
    let live = Rc::new(Live {
        board,
        charts,
        online,
        backoff_ms: Cell::new(FIRST_BACKOFF_MS),
        stopped: Arc::default(),
        socket: RefCell::new(None),
    });
    let stopped = live.stopped.clone();
    let ticks = Cell::new(0u32);
    let ticker = set_interval_with_handle(
        move || {
            let now = js_sys::Date::now() as u64;
            board.update(|b| b.now = b.now.max(now));
            // Window sums only grow with events; re-read them now and then so that old
            // completions leave the window, with the tracker statistics.
            ticks.set(ticks.get() + 1);
            if ticks.get().is_multiple_of(REFRESH_TICKS) {
                let (slug, window) = board.with_untracked(|b| (b.slug.clone(), b.window));
                leptos::task::spawn_local(async move {
                    if let Ok(sums) = crate::data::downloader_window(slug, window).await {
                        board.update(|b| b.set_window_sums(window, sums));
                    }
                });
            }
        },
        TICK,
    )
    .ok();
    let closer = SendWrapper::new(live.clone());
    on_cleanup(move || {
        stopped.store(true, Ordering::Relaxed);
        if let Some(t) = ticker {
            t.clear();
        }
        if let Some(ws) = closer.socket.borrow_mut().take() {
            let _ = ws.close();
        }
    });
    open(live);
}

struct Live {
    board: RwSignal<Leaderboard>,
    charts: RwSignal<ChartData>,
    online: RwSignal<Option<bool>>,
    backoff_ms: Cell<u32>,
    /// Set when the page goes away: no more reconnects.
    stopped: Arc<AtomicBool>,
    socket: RefCell<Option<WebSocket>>,
}

impl Live {
    fn stopped(&self) -> bool {
        self.stopped.load(Ordering::Relaxed)
    }

    /// Applies one websocket frame: a snapshot, or events (several per frame) oldest first.
    fn receive(&self, text: &str) {
        match serde_json::from_str::<LiveMessage>(text) {
            Ok(LiveMessage::Snapshot { board }) => self.board.update(|b| b.adopt(board)),
            Ok(LiveMessage::Events { events, tracker }) => {
                let mut fresh = Vec::with_capacity(events.len());
                self.board.update(|b| {
                    for e in events {
                        if b.apply(&e) {
                            fresh.push(e);
                        }
                    }
                    if let Some(t) = tracker {
                        b.tracker = t;
                    }
                });
                if !fresh.is_empty() {
                    self.charts
                        .update(|c| fresh.iter().for_each(|e| c.apply(e)));
                }
            }
            Err(e) => leptos::logging::warn!("bad live message: {e}"),
        }
    }
}

/// `ws[s]://HOST/SLUG/ws?since=SEQ`: only the events after what the page shows.
fn url(slug: &str, since: u64) -> Option<String> {
    let loc = window().location();
    let scheme = if loc.protocol().ok()? == "https:" {
        "wss"
    } else {
        "ws"
    };
    Some(format!(
        "{scheme}://{}/{slug}/ws?since={since}",
        loc.host().ok()?
    ))
}

fn open(live: Rc<Live>) {
    if live.stopped() {
        return;
    }
    let (slug, since) = live.board.with_untracked(|b| (b.slug.clone(), b.seq));
    let Some(ws) = url(&slug, since).and_then(|u| WebSocket::new(&u).ok()) else {
        retry(live);
        return;
    };

    let on_message = {
        let live = live.clone();
        Closure::<dyn FnMut(MessageEvent)>::new(move |ev: MessageEvent| {
            if let Some(text) = ev.data().as_string() {
                // Live once the server answered (a proxy may accept a socket and drop it).
                live.online.set(Some(true));
                live.backoff_ms.set(FIRST_BACKOFF_MS);
                live.receive(&text);
            }
        })
    };
    let on_close = {
        let live = live.clone();
        Closure::<dyn FnMut()>::new(move || {
            if live.stopped() {
                return;
            }
            live.online.set(Some(false));
            retry(live.clone());
        })
    };
    ws.set_onmessage(Some(on_message.as_ref().unchecked_ref()));
    ws.set_onclose(Some(on_close.as_ref().unchecked_ref()));
    // Each socket owns its handlers for its whole life (a few per reconnect).
    on_message.forget();
    on_close.forget();
    *live.socket.borrow_mut() = Some(ws);
}

fn retry(live: Rc<Live>) {
    if live.stopped() {
        return;
    }
    let wait = live.backoff_ms.get();
    live.backoff_ms.set((wait * 2).min(MAX_BACKOFF_MS));
    set_timeout(move || open(live), Duration::from_millis(wait.into()));
}
