//! `/admin/fleet`: the fleet. Totals per project and per version, then every downloader seen
//! on the warrior API and every Warrior HQ instance, with their addresses (shown nowhere
//! else), searched and sorted by the server (`GET /admin/api/fleet`), a page at a time.

use super::{
    api::{self, encode},
    frame::Frame,
    loaded::Loaded,
};
use crate::{
    format::{rate, thousands},
    model::admin::{FleetClient, FleetSort, FleetView, FleetWarrior},
};
use leptos::prelude::*;

/// Rows of each list a page shows.
const PAGE: usize = 100;

/// The Fleet page.
#[component]
pub fn FleetPage() -> impl IntoView {
    view! {
        <Frame title="Fleet".into() current="/admin/fleet" content=|_| view! { <Fleet/> }/>
    }
}

/// What the lists show: the search, the order, and the page.
#[derive(Clone, Debug, Default, PartialEq)]
struct Shown {
    q: String,
    sort: FleetSort,
    reverse: bool,
    offset: usize,
}

impl Shown {
    fn url(&self) -> String {
        format!(
            "/admin/api/fleet?q={}&sort={}&dir={}&offset={}&limit={PAGE}",
            encode(&self.q),
            self.sort.as_str(),
            if self.reverse { "reverse" } else { "" },
            self.offset
        )
    }
}

#[component]
fn Fleet() -> impl IntoView {
    let shown = RwSignal::new(Shown::default());
    let search = RwSignal::new(String::new());
    let fleet = LocalResource::new(move || api::get::<FleetView>(shown.get().url()));
    let apply = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        shown.update(|s| {
            s.q = search.get_untracked().trim().to_string();
            s.offset = 0;
        });
    };
    view! {
        <form class="card filters" on:submit=apply aria-label="Search the fleet">
            <label>"Search" <input type="search" bind:value=search placeholder="name, project, address, version"/></label>
            <button type="submit">"Search"</button>
            <button type="button" on:click=move |_| fleet.refetch()>"Refresh"</button>
        </form>
        <Loaded reply=fleet show=move |view: FleetView| view! { <FleetTables view shown/> }/>
    }
}

/// A column heading that sorts by `sort` (again: the other way).
#[component]
fn SortBy(label: &'static str, sort: FleetSort, shown: RwSignal<Shown>) -> impl IntoView {
    let current = move || shown.with(|s| s.sort == sort);
    let arrow = move || match shown.with(|s| (s.sort == sort, s.reverse)) {
        (true, false) => " ▾",
        (true, true) => " ▴",
        _ => "",
    };
    view! {
        <th aria-sort=move || if current() { "descending" } else { "none" }>
            <button class="link" type="button" on:click=move |_| shown.update(|s| {
                s.reverse = s.sort == sort && !s.reverse;
                s.sort = sort;
                s.offset = 0;
            })>{label}{arrow}</button>
        </th>
    }
}

#[component]
fn FleetTables(view: FleetView, shown: RwSignal<Shown>) -> impl IntoView {
    let now = view.now;
    let summary = format!(
        "{} downloaders on the warrior API (silent for {} they are forgotten), {} Warrior HQ instances.",
        thousands(view.downloaders_total()),
        silence(view.silence_s),
        thousands(view.warriors_total()),
    );
    let pages = Pager {
        matched: view.downloaders_matched.max(view.warriors_matched) as usize,
        shown,
    };
    view! {
        <p class="muted">{summary}</p>
        <div class="grid2">
            <section class="card" aria-label="Per project">
                <h2>"Per project"</h2>
                <table aria-label="Per project">
                    <thead><tr><th>"Project"</th><th class="num">"Downloaders"</th><th class="num">"Names"</th>
                        <th class="num">"HQ warriors"</th><th class="num">"In flight"</th><th class="num">"Items/s"</th></tr></thead>
                    <tbody>
                        {view.projects.into_iter().map(|p| view! {
                            <tr>
                                <td>{if p.project.is_empty() { "(none yet)".to_string() } else { p.project }}</td>
                                <td class="num">{thousands(p.downloaders)}</td>
                                <td class="num">{thousands(p.names)}</td>
                                <td class="num">{thousands(p.warriors)}</td>
                                <td class="num">{thousands(p.in_flight)}</td>
                                <td class="num">{rate(p.items_per_s)}</td>
                            </tr>
                        }).collect_view()}
                    </tbody>
                </table>
            </section>
            <section class="card" aria-label="Per version">
                <h2>"Per version"</h2>
                <table aria-label="Per version">
                    <thead><tr><th>"Version"</th><th class="num">"Downloaders (seesaw)"</th><th class="num">"HQ warriors"</th></tr></thead>
                    <tbody>
                        {view.versions.into_iter().map(|v| view! {
                            <tr>
                                <td class="mono">{if v.version.is_empty() { "(unknown)".to_string() } else { v.version }}</td>
                                <td class="num">{thousands(v.downloaders)}</td>
                                <td class="num">{thousands(v.warriors)}</td>
                            </tr>
                        }).collect_view()}
                    </tbody>
                </table>
            </section>
        </div>
        <section class="card wide" aria-label="API downloaders">
            <h2>{format!("API downloaders ({} matching)", thousands(view.downloaders_matched))}</h2>
            <table aria-label="API downloaders">
                <thead><tr>
                    <SortBy label="Downloader" sort=FleetSort::Downloader shown/>
                    <SortBy label="Project" sort=FleetSort::Project shown/>
                    <SortBy label="Seesaw" sort=FleetSort::Version shown/>
                    <th>"Script"</th>
                    <SortBy label="Last seen" sort=FleetSort::Seen shown/>
                    <SortBy label="In flight" sort=FleetSort::InFlight shown/>
                    <SortBy label="Items/s" sort=FleetSort::Rate shown/>
                    <SortBy label="IP" sort=FleetSort::Ip shown/>
                    <th>"User agent"</th>
                </tr></thead>
                <tbody>
                    {view.downloaders.into_iter().map(|c| client_row(c, now)).collect_view()}
                </tbody>
            </table>
        </section>
        <section class="card wide" aria-label="Warrior HQ instances">
            <h2>{format!("Warrior HQ instances ({} matching)", thousands(view.warriors_matched))}</h2>
            <table aria-label="Warrior HQ instances">
                <thead><tr>
                    <th>"Id"</th>
                    <SortBy label="Downloader" sort=FleetSort::Downloader shown/>
                    <SortBy label="Selected project" sort=FleetSort::Project shown/>
                    <SortBy label="Version" sort=FleetSort::Version shown/>
                    <SortBy label="Last update" sort=FleetSort::Seen shown/>
                    <th>"Position"</th>
                    <SortBy label="IP" sort=FleetSort::Ip shown/>
                </tr></thead>
                <tbody>
                    {view.warriors.into_iter().map(|w| warrior_row(w, now)).collect_view()}
                </tbody>
            </table>
        </section>
        {pages.view()}
    }
}

fn client_row(c: FleetClient, now: u64) -> impl IntoView {
    view! {
        <tr>
            <td>{c.downloader}</td>
            <td>{c.project}</td>
            <td class="mono">{c.seesaw}</td>
            <td class="mono">{c.version}</td>
            <td title=api::when(c.seen)>{ago(now, c.seen)}</td>
            <td class="num">{thousands(c.in_flight)}</td>
            <td class="num">{rate(c.items_per_s)}</td>
            <td class="mono">{c.ip}</td>
            <td class="muted ua">{c.user_agent}</td>
        </tr>
    }
}

fn warrior_row(w: FleetWarrior, now: u64) -> impl IntoView {
    let position = w
        .lat_lng
        .map(|(lat, lng)| format!("{lat:.1}, {lng:.1}"))
        .unwrap_or_default();
    view! {
        <tr>
            <td class="mono">{w.id}</td>
            <td>{w.downloader}</td>
            <td>{w.project}</td>
            <td class="mono">{w.version}</td>
            <td title=api::when(w.seen)>{ago(now, w.seen)}</td>
            <td>{position}</td>
            <td class="mono">{w.ip}</td>
        </tr>
    }
}

/// Moves between pages of the lists.
struct Pager {
    matched: usize,
    shown: RwSignal<Shown>,
}

impl Pager {
    fn view(self) -> impl IntoView {
        let shown = self.shown;
        let matched = self.matched;
        let at = shown.with_untracked(|s| s.offset);
        let label = format!(
            "Rows {}–{} of {}",
            if matched == 0 { 0 } else { at + 1 },
            (at + PAGE).min(matched),
            thousands(matched as u64)
        );
        view! {
            <nav class="pager" aria-label="Pages">
                <button type="button" disabled={at == 0}
                    on:click=move |_| shown.update(|s| s.offset = s.offset.saturating_sub(PAGE))>"Previous"</button>
                <span class="muted">{label}</span>
                <button type="button" disabled={at + PAGE >= matched}
                    on:click=move |_| shown.update(|s| s.offset += PAGE)>"Next"</button>
            </nav>
        }
    }
}

/// How long ago `then` was, as of `now` (both ms): `12 s ago`, `3 min ago`.
fn ago(now: u64, then: u64) -> String {
    let s = now.saturating_sub(then) / 1000;
    match s {
        0..=59 => format!("{s} s ago"),
        60..=3599 => format!("{} min ago", s / 60),
        _ => format!("{} h ago", s / 3600),
    }
}

/// A silence in words: `15 min`, `90 s`.
fn silence(secs: u64) -> String {
    if secs >= 60 && secs.is_multiple_of(60) {
        format!("{} min", secs / 60)
    } else {
        format!("{secs} s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_url_carries_search_order_and_page() {
        let s = Shown {
            q: "a b".into(),
            sort: FleetSort::InFlight,
            reverse: true,
            offset: 200,
        };
        assert_eq!(
            s.url(),
            "/admin/api/fleet?q=a%20b&sort=in_flight&dir=reverse&offset=200&limit=100"
        );
        assert_eq!(ago(61_000, 1_000), "1 min ago");
        assert_eq!(silence(900), "15 min");
        assert_eq!(silence(5), "5 s");
    }
}
