//! The log of recent completions, newest first, growing live.

use crate::{format::bytes, model::Leaderboard};
use leptos::prelude::*;

/// The last completions: who, what, how big; the version as a tooltip, Warriors marked.
#[component]
pub fn Recent(board: RwSignal<Leaderboard>) -> AnyView {
    view! {
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
                                {warrior
                                    .then(|| {
                                        view! {
                                            <span class="tag" title="Warrior">
                                                "W"
                                            </span>
                                        }
                                    })}
                                <span class="item">{e.items.join(", ")}</span>
                                <span class="size">{bytes(e.bytes)}</span>
                            </li>
                        }
                    }
                />
            </ol>
        </section>
    }
    .into_any()
}
