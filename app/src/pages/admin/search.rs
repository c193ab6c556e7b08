//! The items section of a project page (`/admin/p/SLUG/items`): the items of a project found by state, name, claimant and claim age
//! (the admin API's search, a page at a time, "More results" for the next), each linked to its
//! timeline; and, for an account that may change the project, bulk actions on every item the
//! search finds (release, requeue, drop, move), each counted by a dry run and confirmed first.
//! The search's terms live in the URL, so a view can be shared or bookmarked.

use super::{
    api::{self, encode},
    bulk::{BodyKind, Bulk, ConfirmBox},
    sections::{queue_select, section_url},
};
use crate::{
    format::thousands,
    model::admin::{FoundItem, FoundPage, SearchAct, SearchParams, QUEUES},
};
use leptos::{prelude::*, task::spawn_local};
use leptos_router::hooks::{use_navigate, use_query_map};

/// The search's terms, as the URL and the admin API name them.
const TERMS: [&str; 5] = ["state", "match", "regex", "claimant", "older_than"];

/// The states a search may ask for (empty: every state).
const STATES: [(&str, &str); 11] = [
    ("", "every state"),
    ("queued", "queued (every queue)"),
    ("todo", "todo"),
    ("todo:backfeed", "todo:backfeed"),
    ("todo:secondary", "todo:secondary"),
    ("todo:redo", "todo:redo"),
    ("todo:d", "personal queues"),
    ("claimed", "claimed"),
    ("done", "done"),
    ("failed", "failed"),
    ("disk", "on disk (offloaded)"),
];

/// The value of term `name` in `terms` (empty when not given).
fn term(terms: &[(String, String)], name: &str) -> String {
    terms
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.clone())
        .unwrap_or_default()
}

/// The search form, its results and the bulk actions on them.
#[component]
pub fn Search(slug: String, bulk: Bulk, may_change: bool) -> impl IntoView {
    let query = use_query_map();
    // The search the URL holds: its non-empty terms.
    let terms = Memo::new(move |_| {
        query.with(|q| {
            TERMS
                .iter()
                .filter_map(|k| Some((k.to_string(), q.get(k).filter(|v| !v.is_empty())?)))
                .collect::<Vec<_>>()
        })
    });
    let fields = TERMS.map(|k| RwSignal::new(term(&terms.get_untracked(), k)));
    let found = RwSignal::new(Vec::<FoundItem>::new());
    let cursor = RwSignal::new(None::<String>);
    let scanned = RwSignal::new(0u64);
    let error = RwSignal::new(String::new());
    let api_path = StoredValue::new(format!("/admin/api/{slug}/search"));
    let page_path = StoredValue::new(section_url(&slug, "items"));
    let slug = StoredValue::new(slug);

    // A page of results: the first (`after` None) replaces the list, the next ones extend it.
    let load = move |after: Option<String>| {
        let mut path = format!("{}?limit=100", api_path.get_value());
        for (k, v) in terms.get_untracked() {
            path.push_str(&format!("&{k}={}", encode(&v)));
        }
        if let Some(c) = &after {
            path.push_str(&format!("&cursor={}", encode(c)));
        }
        spawn_local(async move {
            match api::get::<FoundPage>(path).await {
                Ok(page) => {
                    let first = after.is_none();
                    found.update(|f| {
                        if first {
                            f.clear();
                        }
                        f.extend(page.items);
                    });
                    scanned.update(|s| *s = if first { 0 } else { *s } + page.scanned);
                    cursor.set(page.cursor);
                    error.set(String::new());
                }
                Err(e) => error.set(e),
            }
        });
    };
    Effect::new(move |_| {
        terms.track();
        bulk.version.track();
        load(None);
    });

    let navigate = use_navigate();
    let submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let q: Vec<String> = TERMS
            .iter()
            .zip(fields)
            .map(|(k, f)| (k, f.get_untracked().trim().to_string()))
            .filter(|(_, v)| !v.is_empty())
            .map(|(k, v)| format!("{k}={}", encode(&v)))
            .collect();
        navigate(
            &format!("{}?{}", page_path.get_value(), q.join("&")),
            Default::default(),
        );
    };
    let [state, glob, regex, claimant, older_than] = fields;
    let to = RwSignal::new("todo".to_string());

    // A bulk action on everything the search shown finds, counted first.
    let act = move |action: &'static str, verb: &'static str| {
        let t = terms.get_untracked();
        let body = api::json(&SearchAct {
            search: SearchParams {
                state: term(&t, "state"),
                glob: term(&t, "match"),
                regex: term(&t, "regex"),
                claimant: term(&t, "claimant"),
                older_than: term(&t, "older_than"),
                ..Default::default()
            },
            action: action.into(),
            to: if action == "move" {
                to.get_untracked()
            } else {
                String::new()
            },
            dry_run: false,
        });
        let dest = to.get_untracked();
        bulk.preview(
            format!("/admin/api/{}/search/act", slug.get_value()),
            BodyKind::Json(body),
            move |n| {
                let dest = if action == "move" {
                    format!(" to {dest}")
                } else {
                    String::new()
                };
                format!("{verb} the {} items this search finds{dest}?", thousands(n))
            },
        );
    };
    let actions = move || {
        let shown = term(&terms.get(), "state");
        let queued = shown == "queued"
            || QUEUES
                .iter()
                .any(|q| shown == *q || shown.starts_with(&format!("{q}#")));
        match shown.as_str() {
            "claimed" => view! {
                <button on:click=move |_| act("release", "Release")>"Release all found"</button>
            }
            .into_any(),
            "failed" => view! {
                <button on:click=move |_| act("requeue", "Requeue")>"Requeue all found"</button>
                <button class="danger" on:click=move |_| act("drop", "Drop")>"Drop all found"</button>
            }
            .into_any(),
            _ if queued => view! {
                {queue_select(to, "Move to")}
                <button on:click=move |_| act("move", "Move")>"Move all found"</button>
            }
            .into_any(),
            _ => view! {
                <p class="muted">"Search claimed, failed or queued items to act on them all."</p>
            }
            .into_any(),
        }
    };

    view! {
        <form class="card filters" on:submit=submit aria-label="Search">
            <label>"State"
                <select prop:value=move || state.get() on:change=move |ev| state.set(event_target_value(&ev))>
                    {STATES.iter().map(|(v, label)| view! { <option value=*v>{*label}</option> }).collect_view()}
                </select>
            </label>
            <label>"Name (glob)" <input bind:value=glob placeholder="e.g. user-*"/></label>
            <label>"or regex" <input bind:value=regex placeholder="e.g. ^user-[0-9]+$"/></label>
            <label>"Claimant" <input bind:value=claimant/></label>
            <label>"Claimed longer ago than" <input bind:value=older_than placeholder="e.g. 2h, 1d 6h"/></label>
            <button type="submit">"Search"</button>
        </form>
        <p class="error" role="alert">{move || error.get()}</p>
        {may_change.then(|| view! {
            <section class="card" aria-label="Act on the results">
                <h2>"Act on every item found"</h2>
                <div class="row">{actions}</div>
                <ConfirmBox bulk/>
            </section>
        })}
        <section class="card" aria-label="Results">
            <h2>"Results"</h2>
            <p class="muted" role="status" aria-label="Found">{move || {
                let more = if cursor.get().is_some() { ", more to come" } else { "" };
                format!("{} items shown ({} looked at{more})", thousands(found.get().len() as u64), thousands(scanned.get()))
            }}</p>
            <div class="scroll-box">
            <table aria-label="Items found">
                <thead><tr><th>"Item"</th><th>"State"</th><th>"Claimant"</th><th>"Claimed"</th></tr></thead>
                <tbody>{move || found.get().into_iter().map(|f| {
                    // The timeline above the results, the search kept.
                    let mut href = format!("{}?", page_path.get_value());
                    for (k, v) in terms.get_untracked() {
                        href.push_str(&format!("{k}={}&", encode(&v)));
                    }
                    href.push_str(&format!("item={}", encode(&f.item)));
                    view! {
                        <tr>
                            <td><a href=href>{f.item}</a></td>
                            <td>{f.state}</td>
                            <td>{f.claimant.unwrap_or_default()}</td>
                            <td>{f.claimed_at.map(api::when).unwrap_or_default()}</td>
                        </tr>
                    }
                }).collect_view()}</tbody>
            </table>
            </div>
            <Show when=move || cursor.get().is_some()>
                <button on:click=move |_| load(cursor.get_untracked())>"More results"</button>
            </Show>
        </section>
    }
}
