//! `/SLUG/`: one project's counts, rates, downloaders, recent completions, charts and tracker
//! statistics; rendered on the server, then kept current by the websocket.

mod charts;
mod downloaders;
mod figures;
mod recent;

use crate::model::{ChartData, Leaderboard};
use leptos::prelude::*;
use leptos_meta::Title;

/// The leaderboard page of one project, from its first data (`initial`, `charts`), kept live.
#[component]
pub fn LeaderboardPage(initial: Leaderboard, charts: ChartData) -> AnyView {
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
