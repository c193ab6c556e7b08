//! The leaderboard's figures: item counts, bytes, rates over a chosen window with the time to
//! empty the queues, and the tracker's own statistics.

use crate::{
    format::{bytes, duration, fixed, percent, rate, seconds, thousands},
    model::{Leaderboard, WINDOWS},
};
use leptos::prelude::*;

/// One figure: a label over a number, the number labelled by it.
#[component]
fn Figure(
    id: &'static str,
    label: &'static str,
    value: Signal<String>,
    #[prop(optional, into)] hint: Signal<String>,
) -> AnyView {
    view! {
        <div class="count" title=hint>
            <span class="label" id=id>{label}</span>
            <strong aria-labelledby=id>{value}</strong>
        </div>
    }
    .into_any()
}

/// Counts of items by state, bytes by domain, and bytes per item.
#[component]
pub fn Counts(board: RwSignal<Leaderboard>) -> AnyView {
    let count = move |f: fn(&Leaderboard) -> u64| Signal::derive(move || thousands(board.with(f)));
    let per_queue = Signal::derive(move || {
        board.with(|b| {
            b.queues
                .iter()
                .filter(|(_, n)| *n > 0)
                .map(|(q, n)| format!("{q}: {}", thousands(*n)))
                .collect::<Vec<_>>()
                .join("\n")
        })
    });
    let per_domain = Signal::derive(move || {
        board.with(|b| {
            b.domain_bytes
                .iter()
                .map(|(d, n)| format!("{d}: {}", bytes(*n)))
                .collect::<Vec<_>>()
                .join("\n")
        })
    });
    let per_item = Signal::derive(move || {
        board.with(|b| match b.counts.done {
            0 => "—".to_string(),
            n => fixed(b.total_bytes as f64 / n as f64 / 1_048_576.0, 2),
        })
    });
    view! {
        <section class="counts" aria-label="Counts">
            <Figure id="label-done" label="done" value=count(|b| b.counts.done)/>
            <Figure id="label-out" label="claimed" value=count(|b| b.counts.out)/>
            <Figure id="label-todo" label="to do" value=count(|b| b.counts.todo) hint=per_queue/>
            <Figure id="label-failed" label="failed" value=count(|b| b.counts.failed)/>
            <Figure
                id="label-bytes"
                label="downloaded"
                value=Signal::derive(move || bytes(board.with(|b| b.total_bytes)))
                hint=per_domain
            />
            <Figure id="label-per-item" label="MiB per item" value=per_item/>
            <Figure
                id="label-warriors"
                label="warriors now"
                value=Signal::derive(move || thousands(board.with(|b| b.tracker.warriors)))
                hint="Downloaders calling the tracker for this project now"
            />
        </section>
    }
    .into_any()
}

fn window_name(w: u64) -> &'static str {
    match w {
        5 => "5 min",
        60 => "1 h",
        _ => "24 h",
    }
}

/// Switches the rate window; the downloaders' sums follow once the server answered.
fn choose_window(board: RwSignal<Leaderboard>, w: u64) {
    board.update(|b| b.window = w);
    #[cfg(feature = "hydrate")]
    leptos::task::spawn_local(async move {
        let slug = board.with_untracked(|b| b.slug.clone());
        if let Ok(sums) = crate::data::downloader_window(slug, w).await {
            board.update(|b| b.set_window_sums(w, sums));
        }
    });
}

/// Items/s and bytes/s over the chosen window, and the time left at that pace.
#[component]
pub fn Rates(board: RwSignal<Leaderboard>) -> AnyView {
    let current = move || board.with(|b| b.rate(b.window.max(1)));
    let items = Signal::derive(move || format!("{}/s", rate(current().items_per_s)));
    let bytes_s = Signal::derive(move || format!("{}/s", bytes(current().bytes_per_s as u64)));
    let spread = Signal::derive(move || {
        let r = current();
        format!(
            "10th–90th percentile of per-minute rates: {}–{} items/s",
            rate(r.low),
            rate(r.high)
        )
    });
    let remaining = move || board.with(|b| b.counts.todo + b.counts.out);
    let eta = Signal::derive(move || match current().eta(remaining()) {
        None => "—".to_string(),
        Some(e) => duration(e.secs),
    });
    let eta_range = Signal::derive(move || match current().eta(remaining()) {
        None => "no completions in this window".to_string(),
        Some(e) => format!(
            "between {} and {}",
            duration(e.fastest),
            e.slowest.map_or("never".to_string(), duration)
        ),
    });
    view! {
        <section class="card rates" aria-label="Rates">
            <div class="rates-head">
                <h2>"Rates"</h2>
                <div class="segmented" role="group" aria-label="Rate window">
                    {WINDOWS
                        .iter()
                        .map(|&w| {
                            view! {
                                <button
                                    type="button"
                                    aria-pressed=move || {
                                        board.with(|b| b.window == w).to_string()
                                    }
                                    on:click=move |_| choose_window(board, w)
                                >
                                    {window_name(w)}
                                </button>
                            }
                        })
                        .collect_view()}
                </div>
            </div>
            <div class="counts">
                <Figure id="label-items-s" label="items/s" value=items hint=spread/>
                <Figure id="label-bytes-s" label="bytes/s" value=bytes_s/>
                <div class="count" title=eta_range>
                    <span class="label" id="label-eta">"time left"</span>
                    <strong aria-labelledby="label-eta">{eta}</strong>
                    <small class="muted">{eta_range}</small>
                </div>
            </div>
        </section>
    }
    .into_any()
}

/// The tracker's statistics of the last hour.
#[component]
pub fn TrackerFigures(board: RwSignal<Leaderboard>) -> AnyView {
    // With the page data, then as the live channel brings them (every few seconds while items
    // complete) and the minute re-read.
    let t =
        move |f: fn(&crate::model::TrackerStats) -> String| move || board.with(|b| f(&b.tracker));
    view! {
        <section class="card" aria-label="Tracker statistics">
            <h2>"Tracker, last hour"</h2>
            <dl class="stats">
                <dt>"Item requests served"</dt>
                <dd>{t(|s| percent(s.item_request_serve_rate))}</dd>
                <dt>"Reclaim rate"</dt>
                <dd>{t(|s| percent(s.reclaim_rate))}</dd>
                <dt>"Served items that were reclaims"</dt>
                <dd>{t(|s| percent(s.reclaim_serve_rate))}</dd>
                <dt>"Mean round trip"</dt>
                <dd>{t(|s| s.mean_round_trip_s.map_or("—".into(), seconds))}</dd>
                <dt>"Backfeed"</dt>
                <dd>
                    {t(|s| {
                        format!(
                            "{}/min new, {}/min duplicates",
                            rate(s.backfeed_per_minute),
                            rate(s.backfeed_duplicates_per_minute),
                        )
                    })}
                </dd>
                <dt>"Backfeed filter fill"</dt>
                <dd>{t(|s| {
                    let unit = if s.bloom_layers == 1 { "layer" } else { "layers" };
                    format!("{} ({} {unit})", percent(Some(s.bloom_fill)), s.bloom_layers)
                })}</dd>
                <dt>"Contributors, 30 days"</dt>
                <dd>{t(|s| thousands(s.unique_downloaders_30d))}</dd>
                <dt>"Contributors by month"</dt>
                <dd>{move || board.with(|b| {
                    let shown: Vec<String> = b.months.iter().take(3)
                        .map(|m| format!("{} {}", m.month, thousands(m.contributors)))
                        .collect();
                    if shown.is_empty() { "—".to_string() } else { shown.join(" · ") }
                })}</dd>
            </dl>
        </section>
    }
    .into_any()
}
