//! `/SLUG/`: one project's counts, rates, downloaders, recent completions, charts and tracker
//! statistics; rendered on the server, then kept current by the websocket.

mod charts;
mod downloaders;
mod figures;
mod recent;

use crate::{
    data,
    model::{ChartData, Leaderboard, WINDOWS},
    pages::NotFound,
};
use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_params_map;

/// The rate window the page opens with, minutes.
const DEFAULT_WINDOW: u64 = WINDOWS[0];

/// The leaderboard page.
#[component]
pub fn LeaderboardPage() -> impl IntoView {
    let params = use_params_map();
    let slug = move || params.read().get("slug").unwrap_or_default();
    let board = Resource::new(slug, |s| data::leaderboard(s, DEFAULT_WINDOW));
    let charts = Resource::new(slug, data::charts);
    view! {
        <Suspense fallback=|| view! { <p>"Loading…"</p> }>
            {move || Suspend::new(async move {
                match (board.await, charts.await) {
                    (Ok(Some(b)), Ok(c)) => {
                        view! { <Board initial=b charts=c.unwrap_or_default()/> }.into_any()
                    }
                    (Ok(None), _) => view! { <NotFound/> }.into_any(),
                    (Err(e), _) | (_, Err(e)) => {
                        view! { <p class="error">{e}</p> }.into_any()
                    }
                }
            })}
        </Suspense>
    }
}

/// The live part of the page, over one project's state.
#[component]
fn Board(initial: Leaderboard, charts: ChartData) -> AnyView {
    let title = initial.title.clone();
    let banner = initial.banner.clone();
    let state = initial.state.clone();
    let board = RwSignal::new(initial);
    let charts = RwSignal::new(charts);
    // `None` until the browser's websocket first opens (or fails).
    let online = RwSignal::new(None::<bool>);
    #[cfg(feature = "hydrate")]
    crate::live::watch(board, charts, online);

    view! {
        <Title text=format!("{title} · Tracker")/>
        <div class="board-head">
            <h1>{title}</h1>
            <span class="badge">{state}</span>
            <span
                class="status"
                class:offline=move || online.get() == Some(false)
                class:pending=move || online.get().is_none()
                role="status"
            >
                {move || match online.get() {
                    None => "connecting…",
                    Some(true) => "live",
                    Some(false) => "offline, reconnecting…",
                }}
            </span>
        </div>
        {(!banner.is_empty()).then(|| view! { <p class="banner" role="note">{banner}</p> })}
        <figures::Counts board/>
        <figures::Rates board/>
        <downloaders::Downloaders board/>
        <div class="columns">
            <recent::Recent board/>
            <figures::TrackerFigures board/>
        </div>
        <charts::Charts board charts/>
    }
    .into_any()
}
