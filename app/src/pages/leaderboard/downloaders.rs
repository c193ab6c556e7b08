//! The downloaders table: the top 20 live from the page's state; sorting, searching and
//! "show all" ask the server for one page at a time (`/SLUG/downloaders.json`), so 50,000
//! downloaders cost the browser one page of rows. A pinned name (kept in `localStorage`) keeps
//! its rank line and its row stays highlighted.

use crate::{
    format::{ago, bytes, encode, fixed, lower, rate, thousands},
    model::{DownloaderPage, Leaderboard, RankedRow, SortBy},
};
use leptos::prelude::*;

const TOP: usize = 20;
const PAGE: usize = 100;
/// How often a page asked of the server is read again while shown, milliseconds.
#[cfg(feature = "hydrate")]
const REFRESH_MS: u64 = 5_000;
/// The `localStorage` key of the pinned name (one name for every project).
#[cfg(feature = "hydrate")]
const PIN_KEY: &str = "tracker.pinned";

/// What the table shows: the live top rows, or a page asked of the server.
#[derive(Clone, PartialEq)]
struct Ask {
    query: String,
    sort: (SortBy, bool),
    offset: usize,
    limit: usize,
    window: u64,
}

impl Ask {
    /// Whether the page's own top rows answer it (no search, rank order, first page).
    fn is_live_top(&self) -> bool {
        self.query.is_empty()
            && self.sort == (SortBy::Rank, false)
            && self.offset == 0
            && self.limit == TOP
    }

    /// The query string of `downloaders.json` for this page.
    #[cfg_attr(not(feature = "hydrate"), allow(dead_code))]
    fn url(&self, slug: &str) -> String {
        format!(
            "/{slug}/downloaders.json?offset={}&limit={}&q={}&sort={}&dir={}&window={}",
            self.offset,
            self.limit,
            encode(&self.query),
            self.sort.0.key(),
            if self.sort.1 { "reverse" } else { "natural" },
            self.window
        )
    }
}

/// `GET url` as a [`DownloaderPage`].
#[cfg(feature = "hydrate")]
async fn fetch_page(url: String) -> Option<DownloaderPage> {
    let resp = gloo_net::http::Request::get(&url).send().await.ok()?;
    if !resp.ok() {
        return None;
    }
    resp.json().await.ok()
}

#[cfg(feature = "hydrate")]
fn storage() -> Option<web_sys::Storage> {
    window().local_storage().ok().flatten()
}

/// What a volunteer typed into the search box of the server-rendered page before the Wasm
/// loaded: read before hydration resets the box to the (empty) query, to be applied after.
#[cfg(feature = "hydrate")]
fn typed_before_hydration() -> String {
    use wasm_bindgen::JsCast;
    document()
        .query_selector("input.find-name")
        .ok()
        .flatten()
        .and_then(|e| e.dyn_into::<web_sys::HtmlInputElement>().ok())
        .map(|input| input.value())
        .unwrap_or_default()
}

/// The downloaders section.
#[component]
pub fn Downloaders(board: RwSignal<Leaderboard>) -> AnyView {
    let sort = RwSignal::new((SortBy::Rank, false));
    let show_all = RwSignal::new(false);
    let page = RwSignal::new(0usize);
    let query = RwSignal::new(String::new());
    let pinned = RwSignal::new(None::<String>);
    // The server's answer for a page the top rows cannot give, with what it answers.
    let served = RwSignal::new(None::<(Ask, DownloaderPage)>);
    // The pinned downloader's row, when it is not among the top rows.
    let pinned_row = RwSignal::new(None::<RankedRow>);

    let ask = Memo::new(move |_| {
        let per_page = if show_all.get() { PAGE } else { TOP };
        Ask {
            query: query.get().trim().to_string(),
            sort: sort.get(),
            offset: if show_all.get() { page.get() * PAGE } else { 0 },
            limit: per_page,
            window: board.with(|b| b.window.max(1)),
        }
    });

    #[cfg(feature = "hydrate")]
    {
        // After hydration: the search typed before it (read now, applied after: the first render
        // must match the server's), and the browser's pin, which the server rendered without.
        let typed = typed_before_hydration();
        if !typed.is_empty() {
            Effect::new(move |_| query.set(typed.clone()));
        }
        Effect::new(move |_| {
            if let Some(name) = storage().and_then(|s| s.get_item(PIN_KEY).ok().flatten()) {
                pinned.set(Some(name));
            }
        });
        let slug = StoredValue::new(board.with_untracked(|b| b.slug.clone()));
        // Reads the page `a` of the server, keeping it only if it is still the one shown.
        let load = move |a: Ask| {
            if a.is_live_top() {
                return;
            }
            leptos::task::spawn_local(async move {
                if let Some(p) = fetch_page(a.url(&slug.get_value())).await {
                    if ask.get_untracked() == a {
                        served.set(Some((a, p)));
                    }
                }
            });
        };
        let load_pinned = move || {
            let Some(name) = pinned.get_untracked() else {
                return pinned_row.set(None);
            };
            if board.with_untracked(|b| b.downloaders.iter().any(|d| d.name == name)) {
                return pinned_row.set(None);
            }
            let url = format!(
                "/{}/downloaders.json?name={}&window={}",
                slug.get_value(),
                encode(&name),
                board.with_untracked(|b| b.window.max(1))
            );
            leptos::task::spawn_local(async move {
                if let Some(p) = fetch_page(url).await {
                    if pinned.get_untracked().as_deref() == Some(name.as_str()) {
                        pinned_row.set(p.rows.into_iter().next());
                    }
                }
            });
        };
        Effect::new(move |_| load(ask.get()));
        Effect::new(move |_| {
            pinned.track();
            load_pinned();
        });
        let ticker = set_interval_with_handle(
            move || {
                load(ask.get_untracked());
                load_pinned();
            },
            std::time::Duration::from_millis(REFRESH_MS),
        )
        .ok();
        on_cleanup(move || {
            if let Some(t) = ticker {
                t.clear();
            }
        });
    }

    // (rows matching, downloaders in all, this page's rows): the live top rows when they
    // answer the page, else the server's last answer (kept while the next one loads).
    let view_rows = Memo::new(move |_| {
        let a = ask.get();
        if a.is_live_top() {
            return board.with(|b| {
                let rows: Vec<RankedRow> = b
                    .downloaders
                    .iter()
                    .take(TOP)
                    .enumerate()
                    .map(|(i, d)| RankedRow {
                        rank: i as u64 + 1,
                        row: d.clone(),
                    })
                    .collect();
                let all = b.downloader_count.max(b.downloaders.len() as u64);
                (all, all, rows)
            });
        }
        served.with(|s| match s {
            Some((_, p)) => (p.total, p.count, p.rows.clone()),
            None => (0, 0, vec![]),
        })
    });
    let pages = move || view_rows.with(|(n, _, _)| (*n as usize).div_ceil(PAGE).max(1));

    let pin = move |_| {
        let q = query.get_untracked().trim().to_string();
        if q.is_empty() {
            return;
        }
        let name = view_rows.with_untracked(|(_, _, rows)| {
            rows.iter()
                .find(|r| r.row.name == q)
                .or_else(|| {
                    let q = lower(&q);
                    rows.iter().find(|r| lower(&r.row.name).contains(&q))
                })
                .map(|r| r.row.name.clone())
        });
        if let Some(name) = name {
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
        let live = board.with(|b| {
            b.downloaders
                .iter()
                .enumerate()
                .find(|(_, d)| d.name == name)
                .map(|(i, d)| (i as u64 + 1, d.items, d.bytes))
        });
        let (rank, items, size) = live.or_else(|| {
            pinned_row.with(|r| {
                r.as_ref()
                    .filter(|r| r.row.name == name)
                    .map(|r| (r.rank, r.row.items, r.row.bytes))
            })
        })?;
        Some(format!(
            "{name}: #{} · {} items · {}",
            thousands(rank),
            thousands(items),
            bytes(size)
        ))
    };

    let header = move |label: &'static str, col: SortBy, num: bool| {
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
                        class="find-name"
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
                            {header("#", SortBy::Rank, true)}
                            {header("Name", SortBy::Name, false)}
                            {header("Items", SortBy::Rank, true)}
                            {header("Bytes", SortBy::Bytes, true)}
                            <th class="num">"Share"</th>
                            {header("Items/s", SortBy::ItemsRate, true)}
                            {header("Bytes/s", SortBy::BytesRate, true)}
                            {header("Last seen", SortBy::Seen, false)}
                            {header("Version", SortBy::Version, false)}
                        </tr>
                    </thead>
                    <tbody>
                        {move || {
                            let (done, secs, now) = board
                                .with(|b| (b.counts.done.max(1), (b.window.max(1) * 60) as f64, b.now));
                            let mine = pinned.get();
                            view_rows
                                .get()
                                .2
                                .into_iter()
                                .map(|RankedRow { rank, row: d }| {
                                    let is_pinned = mine.as_deref() == Some(d.name.as_str());
                                    view! {
                                        <tr class:pinned=is_pinned>
                                            <td class="num">{thousands(rank)}</td>
                                            <td class="name">{d.name}</td>
                                            <td class="num">{thousands(d.items)}</td>
                                            <td class="num">{bytes(d.bytes)}</td>
                                            <td class="num">
                                                {format!("{}%", fixed(100.0 * d.items as f64 / done as f64, 1))}
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
                        view_rows.with(|(n, all, rows)| {
                            if n == all {
                                format!("{} of {} downloaders", thousands(rows.len() as u64), thousands(*all))
                            } else {
                                format!(
                                    "{} of {} matching, {} downloaders in all",
                                    thousands(rows.len() as u64),
                                    thousands(*n),
                                    thousands(*all)
                                )
                            }
                        })
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
                        disabled=move || { page.get() + 1 >= pages() }
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
