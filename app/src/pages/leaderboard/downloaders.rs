//! The downloaders table: sortable, the top 20 or every downloader a page at a time, a search
//! box, and a pinned name (kept in `localStorage`) whose row stays highlighted.

use crate::{
    format::{ago, bytes, rate, thousands},
    model::{DownloaderRow, Leaderboard},
};
use leptos::prelude::*;

const TOP: usize = 20;
const PAGE: usize = 100;
/// The `localStorage` key of the pinned name (one name for every project).
#[cfg(feature = "hydrate")]
const PIN_KEY: &str = "tracker.pinned";

#[derive(Clone, Copy, PartialEq, Eq)]
enum Col {
    Rank,
    Items,
    Name,
    Bytes,
    ItemsRate,
    BytesRate,
    Seen,
    Version,
}

/// Orders two rows (with their ranks) by `col`, the natural direction first.
fn compare(
    col: Col,
    a: &(usize, &DownloaderRow),
    b: &(usize, &DownloaderRow),
) -> std::cmp::Ordering {
    let (x, y) = (a.1, b.1);
    match col {
        Col::Rank | Col::Items => a.0.cmp(&b.0),
        Col::Name => x.name.to_lowercase().cmp(&y.name.to_lowercase()),
        Col::Bytes => y.bytes.cmp(&x.bytes),
        Col::ItemsRate => y.window_items.cmp(&x.window_items),
        Col::BytesRate => y.window_bytes.cmp(&x.window_bytes),
        Col::Seen => y.last_seen.cmp(&x.last_seen),
        Col::Version => y.version.cmp(&x.version),
    }
    .then(a.0.cmp(&b.0))
}

#[cfg(feature = "hydrate")]
fn storage() -> Option<web_sys::Storage> {
    window().local_storage().ok().flatten()
}

/// The downloaders section.
#[component]
pub fn Downloaders(board: RwSignal<Leaderboard>) -> AnyView {
    let sort = RwSignal::new((Col::Rank, false));
    let show_all = RwSignal::new(false);
    let page = RwSignal::new(0usize);
    let query = RwSignal::new(String::new());
    let pinned = RwSignal::new(None::<String>);
    #[cfg(feature = "hydrate")]
    Effect::new(move |_| {
        if let Some(name) = storage().and_then(|s| s.get_item(PIN_KEY).ok().flatten()) {
            pinned.set(Some(name));
        }
    });

    // The rows that match the search, in the chosen order: (total, this page's rows).
    let view_rows = Memo::new(move |_| {
        let q = query.get().to_lowercase();
        let (col, reverse) = sort.get();
        let per_page = if show_all.get() { PAGE } else { TOP };
        board.with(|b| {
            let mut rows: Vec<(usize, &DownloaderRow)> = b
                .downloaders
                .iter()
                .enumerate()
                .filter(|(_, d)| q.is_empty() || d.name.to_lowercase().contains(&q))
                .collect();
            if col != Col::Rank || reverse {
                rows.sort_by(|a, b| {
                    let o = compare(col, a, b);
                    if reverse {
                        o.reverse()
                    } else {
                        o
                    }
                });
            }
            let start = if show_all.get() {
                page.get() * per_page
            } else {
                0
            };
            let shown: Vec<(usize, DownloaderRow)> = rows
                .iter()
                .skip(start)
                .take(per_page)
                .map(|(r, d)| (*r, (*d).clone()))
                .collect();
            (rows.len(), shown)
        })
    });
    let pages = move || view_rows.with(|(n, _)| n.div_ceil(PAGE).max(1));

    let pin = move |_| {
        let q = query.get_untracked();
        let name = board.with_untracked(|b| {
            b.downloaders
                .iter()
                .find(|d| d.name == q)
                .or_else(|| {
                    let q = q.to_lowercase();
                    b.downloaders
                        .iter()
                        .find(|d| d.name.to_lowercase().contains(&q))
                })
                .map(|d| d.name.clone())
        });
        if let Some(name) = name.filter(|_| !q.is_empty()) {
            #[cfg(feature = "hydrate")]
            if let Some(s) = storage() {
                let _ = s.set_item(PIN_KEY, &name);
            }
            pinned.set(Some(name));
            query.set(String::new());
        }
    };
    let unpin = move |_| {
        #[cfg(feature = "hydrate")]
        if let Some(s) = storage() {
            let _ = s.remove_item(PIN_KEY);
        }
        pinned.set(None);
    };
    let pinned_summary = move || {
        let name = pinned.get()?;
        board.with(|b| {
            let (rank, d) = b
                .downloaders
                .iter()
                .enumerate()
                .find(|(_, d)| d.name == name)?;
            Some(format!(
                "{name}: #{} · {} items · {}",
                rank + 1,
                thousands(d.items),
                bytes(d.bytes)
            ))
        })
    };

    let header = move |label: &'static str, col: Col, num: bool| {
        let aria = move || match sort.get() {
            (c, false) if c == col => "descending",
            (c, true) if c == col => "ascending",
            _ => "none",
        };
        view! {
            <th class:num=num aria-sort=aria>
                <button
                    type="button"
                    class="sort"
                    on:click=move |_| {
                        sort.update(|s| *s = if s.0 == col { (col, !s.1) } else { (col, false) });
                        page.set(0);
                    }
                >
                    {label}
                </button>
            </th>
        }
    };

    view! {
        <section class="card downloaders">
            <div class="table-head">
                <h2>"Downloaders"</h2>
                <form class="find" on:submit=move |ev| {
                    ev.prevent_default();
                    pin(());
                }>
                    <input
                        type="search"
                        placeholder="Find your name"
                        aria-label="Find downloader"
                        prop:value=query
                        on:input=move |ev| {
                            query.set(event_target_value(&ev));
                            page.set(0);
                        }
                    />
                    <button type="submit">"Pin"</button>
                </form>
            </div>
            {move || {
                pinned_summary()
                    .map(|s| {
                        view! {
                            <p class="pinned-line">
                                <span>{s}</span>
                                <button type="button" class="link" on:click=unpin>"Unpin"</button>
                            </p>
                        }
                    })
            }}
            <div class="scroll">
                <table aria-label="Downloaders">
                    <thead>
                        <tr>
                            {header("#", Col::Rank, true)}
                            {header("Name", Col::Name, false)}
                            {header("Items", Col::Items, true)}
                            {header("Bytes", Col::Bytes, true)}
                            <th class="num">"Share"</th>
                            {header("Items/s", Col::ItemsRate, true)}
                            {header("Bytes/s", Col::BytesRate, true)}
                            {header("Last seen", Col::Seen, false)}
                            {header("Version", Col::Version, false)}
                        </tr>
                    </thead>
                    <tbody>
                        {move || {
                            let (done, secs, now) = board
                                .with(|b| (b.counts.done.max(1), (b.window.max(1) * 60) as f64, b.now));
                            let mine = pinned.get();
                            view_rows
                                .get()
                                .1
                                .into_iter()
                                .map(|(rank, d)| {
                                    let is_pinned = mine.as_deref() == Some(d.name.as_str());
                                    view! {
                                        <tr class:pinned=is_pinned>
                                            <td class="num">{rank + 1}</td>
                                            <td class="name">{d.name}</td>
                                            <td class="num">{thousands(d.items)}</td>
                                            <td class="num">{bytes(d.bytes)}</td>
                                            <td class="num">
                                                {format!("{:.1}%", 100.0 * d.items as f64 / done as f64)}
                                            </td>
                                            <td class="num">{rate(d.window_items as f64 / secs)}</td>
                                            <td class="num">
                                                {format!("{}/s", bytes((d.window_bytes as f64 / secs) as u64))}
                                            </td>
                                            <td>{ago(d.last_seen, now)}</td>
                                            <td class="muted">{d.version}</td>
                                        </tr>
                                    }
                                })
                                .collect_view()
                        }}
                    </tbody>
                </table>
            </div>
            <div class="pager">
                <span class="muted">
                    {move || {
                        let n = view_rows.with(|(n, _)| *n);
                        let shown = view_rows.with(|(_, r)| r.len());
                        format!("{} of {} downloaders", thousands(shown as u64), thousands(n as u64))
                    }}
                </span>
                <Show when=move || show_all.get()>
                    <button
                        type="button"
                        disabled=move || page.get() == 0
                        on:click=move |_| page.update(|p| *p = p.saturating_sub(1))
                    >
                        "Previous"
                    </button>
                    <span>{move || format!("page {} of {}", page.get() + 1, pages())}</span>
                    <button
                        type="button"
                        disabled=move || page.get() + 1 >= pages()
                        on:click=move |_| page.update(|p| *p += 1)
                    >
                        "Next"
                    </button>
                </Show>
                <button
                    type="button"
                    on:click=move |_| {
                        show_all.update(|s| *s = !*s);
                        page.set(0);
                    }
                >
                    {move || if show_all.get() { "Show top 20" } else { "Show all" }}
                </button>
            </div>
        </section>
    }
    .into_any()
}
