//! `/SLUG/`: one project's counts, downloaders and recent completions, updated live.

use crate::{
    format::{bytes, thousands},
    get_leaderboard,
    model::Leaderboard,
    pages::NotFound,
};
use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_params_map;

/// The leaderboard page: rendered on the server, then kept current by the websocket.
#[component]
pub fn LeaderboardPage() -> impl IntoView {
    let params = use_params_map();
    let slug = move || params.read().get("slug").unwrap_or_default();
    let board = Resource::new(slug, get_leaderboard);
    view! {
        <Suspense fallback=|| view! { <p>"Loading…"</p> }>
            {move || Suspend::new(async move {
                match board.await {
                    Ok(Some(b)) => view! { <Board initial=b/> }.into_any(),
                    Ok(None) => view! { <NotFound/> }.into_any(),
                    Err(e) => view! { <p class="error">{e.to_string()}</p> }.into_any(),
                }
            })}
        </Suspense>
    }
}

/// The live part of the page, over one project's state.
#[component]
fn Board(initial: Leaderboard) -> impl IntoView {
    let title = initial.title.clone();
    let board = RwSignal::new(initial);
    // Until the browser's websocket says otherwise, the server-rendered state is current.
    let online = RwSignal::new(true);
    #[cfg(feature = "hydrate")]
    crate::live::watch(board, online);

    let count = move |f: fn(&Leaderboard) -> u64| move || thousands(board.with(f));
    view! {
        <Title text=format!("{title} · Tracker")/>
        <div class="board-head">
            <h1>{title}</h1>
            <span class="status" class:offline=move || !online.get() role="status">
                {move || if online.get() { "live" } else { "offline, reconnecting…" }}
            </span>
        </div>
        <section class="counts" aria-label="Counts">
            <div class="count">
                <span class="label" id="label-done">"done"</span>
                <strong aria-labelledby="label-done">{count(|b| b.counts.done)}</strong>
            </div>
            <div class="count">
                <span class="label" id="label-out">"claimed"</span>
                <strong aria-labelledby="label-out">{count(|b| b.counts.out)}</strong>
            </div>
            <div class="count">
                <span class="label" id="label-todo">"to do"</span>
                <strong aria-labelledby="label-todo">{count(|b| b.counts.todo)}</strong>
            </div>
            <div class="count">
                <span class="label" id="label-bytes">"downloaded"</span>
                <strong aria-labelledby="label-bytes">
                    {move || bytes(board.with(|b| b.total_bytes))}
                </strong>
            </div>
        </section>
        <div class="columns">
            <section class="card">
                <h2>"Downloaders"</h2>
                <table aria-label="Downloaders">
                    <thead>
                        <tr>
                            <th class="num">"#"</th>
                            <th>"Name"</th>
                            <th class="num">"Items"</th>
                            <th class="num">"Bytes"</th>
                        </tr>
                    </thead>
                    <tbody>
                        <For
                            each=move || {
                                board.with(|b| b.downloaders.iter().cloned().enumerate().collect::<Vec<_>>())
                            }
                            key=|(rank, d)| (*rank, d.name.clone(), d.items, d.bytes)
                            children=|(rank, d)| {
                                view! {
                                    <tr>
                                        <td class="num">{rank + 1}</td>
                                        <td>{d.name}</td>
                                        <td class="num">{thousands(d.items)}</td>
                                        <td class="num">{bytes(d.bytes)}</td>
                                    </tr>
                                }
                            }
                        />
                    </tbody>
                </table>
            </section>
            <section class="card">
                <h2>"Recent completions"</h2>
                <ol class="log" aria-label="Recent completions">
                    <For
                        each=move || board.with(|b| b.recent.clone())
                        key=|e| e.seq
                        children=|e| {
                            let warrior = e.is_warrior();
                            let title = format!("version {}", e.version);
                            view! {
                                <li title=title>
                                    <span class="who">{e.downloader}</span>
                                    {warrior.then(|| view! { <span class="tag">"warrior"</span> })}
                                    <span class="item">{e.items.join(", ")}</span>
                                    <span class="size">{bytes(e.bytes)}</span>
                                </li>
                            }
                        }
                    />
                </ol>
            </section>
        </div>
    }
}
