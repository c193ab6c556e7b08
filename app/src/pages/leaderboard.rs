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
    let board = RwSignal::new(initial);
    // The operator's states as the server gave them; the derived ones follow the live counts.
    let state = move || {
        board.with(|b| match b.state.as_str() {
            "paused" | "aborted" => b.state.clone(),
            _ => {
                let c = &b.counts;
                crate::model::lifecycle::derive("active", c.todo, c.out, c.done + c.failed)
                    .to_string()
            }
        })
    };
    let charts = RwSignal::new(charts);
    // `None` until the browser's websocket first opens (or fails).
    let online = RwSignal::new(None::<bool>);
    #[cfg(feature = "hydrate")]
    crate::live::watch(board, charts, online);

    view! {
        <Title text=format!("{title} · Tracker")/>
        <div class="board-head">
            <h1>{title}</h1>
            <span class=move || format!("badge state-{}", state()) aria-label="State">{state}</span>
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
