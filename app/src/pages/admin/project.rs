//! `/admin/p/SLUG[/SECTION]`: one project in sections, each with its own URL so a view can be
//! shared: the overview (queue sizes, what is on disk), items (search, bulk actions on what it
//! finds, one item's timeline), adding and moving items, claims and failed items, settings
//! grouped by concern, the lifecycle and Warrior listing, backfeed and uploads, the completion
//! log, and the danger zone. Every bulk action is previewed (dry run) before it runs.

use super::{
    api,
    bulk::{Bulk, ConfirmBox},
    frame::Frame,
    loaded::Loaded,
    sections::section_url,
};
use crate::{
    format::thousands,
    model::admin::{AdminSession, Queues},
};
use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_params_map;

/// Who sees a section in a project's navigation.
#[derive(Clone, Copy, PartialEq)]
enum Who {
    Everyone,
    /// Accounts that may change the project.
    Changers,
    Global,
}

/// The sections of a project page: (path segment, label, who sees it). The overview is the
/// project's own URL; the others are `/admin/p/SLUG/SEGMENT`.
const SECTIONS: [(&str, &str, Who); 9] = [
    ("", "Overview", Who::Everyone),
    ("items", "Items", Who::Everyone),
    ("queues", "Add and move", Who::Changers),
    ("claims", "Claims and failures", Who::Everyone),
    ("settings", "Settings", Who::Everyone),
    ("listing", "Warrior listing", Who::Everyone),
    ("uploads", "Backfeed and uploads", Who::Everyone),
    ("log", "Log", Who::Everyone),
    ("danger", "Danger zone", Who::Global),
];

/// The section a path segment names: `search` (the items page's old address) is `items`.
fn section_of(segment: &str) -> &str {
    match segment {
        "search" => "items",
        s => s,
    }
}

/// The project page of the panel, at its overview or at one section.
#[component]
pub fn ProjectAdminPage() -> impl IntoView {
    let slug = use_params_map().with_untracked(|p| p.get("slug").unwrap_or_default());
    let content = {
        let slug = slug.clone();
        move |s: AdminSession| view! { <Project slug=slug.clone() session=s/> }
    };
    view! { <Frame title=slug current="" content/> }
}

#[component]
fn Project(slug: String, session: AdminSession) -> impl IntoView {
    let params = use_params_map();
    // Followed as the URL changes: the links between sections stay on this page.
    let section = Memo::new(move |_| {
        params.with(|p| section_of(&p.get("section").unwrap_or_default()).to_string())
    });
    let may_change = session.may_change(&slug);
    let global = session.is_global();
    let shown = move |who: Who| match who {
        Who::Everyone => true,
        Who::Changers => may_change,
        Who::Global => global,
    };
    let bulk = Bulk::new(session.csrf);
    let nav_slug = slug.clone();
    let slug = StoredValue::new(slug);
    let body = move || {
        let slug = slug.get_value();
        let here = section.get();
        let known = SECTIONS.iter().find(|s| s.0 == here);
        if known.is_none_or(|s| !shown(s.2)) {
            let why = if known.is_some() {
                "Your account may not use this section."
            } else {
                "There is no such section: choose one above."
            };
            return view! { <p class="muted" role="alert">{why}</p> }.into_any();
        }
        match here.as_str() {
            "" => view! { <Overview slug=slug.clone() bulk/> }.into_any(),
            "items" => view! {
                <super::item::ItemLookup slug=slug.clone()/>
                <super::search::Search slug=slug.clone() bulk may_change/>
            }
            .into_any(),
            "queues" => view! {
                <ConfirmBox bulk/>
                <super::queues::AddItems slug=slug.clone() bulk/>
                <super::queues::MoveOrClear slug=slug.clone() bulk/>
            }
            .into_any(),
            "claims" => view! {
                <ConfirmBox bulk/>
                <super::claims::Claims slug=slug.clone() bulk may_change/>
                <super::claims::Failed slug=slug.clone() bulk may_change/>
            }
            .into_any(),
            "settings" => view! {
                <super::settings::SettingsEditor slug=slug.clone() csrf=bulk.csrf may_change global/>
            }
            .into_any(),
            "listing" => view! {
                <super::listing::ListingEditor slug=slug.clone() csrf=bulk.csrf may_change global/>
            }
            .into_any(),
            "uploads" => view! {
                <ConfirmBox bulk/>
                <super::targets::Targets slug=slug.clone() bulk may_change/>
                <super::dictionary::Dictionary slug=slug.clone() bulk may_change/>
            }
            .into_any(),
            "log" => view! {
                <ConfirmBox bulk/>
                <super::logs::Logs slug=slug.clone() bulk may_change/>
            }
            .into_any(),
            _ => view! {
                <ConfirmBox bulk/>
                <super::targets::Destroy slug=slug.clone() bulk/>
            }
            .into_any(),
        }
    };
    let title = StoredValue::new(nav_slug.clone());
    let tab_title = move || {
        let here = section.get();
        let label = SECTIONS.iter().find(|s| s.0 == here).map_or("", |s| s.1);
        format!("{}: {label} · Admin · Tracker", title.get_value())
    };
    view! {
        <Title text=tab_title/>
        <nav class="section-nav" aria-label="Project sections">
            <ul>
                {SECTIONS.iter().filter(|s| shown(s.2)).map(|(segment, label, _)| {
                    let href = section_url(&nav_slug, segment);
                    let here = move || (section.get() == *segment).then_some("page");
                    view! { <li><a href=href aria-current=here>{*label}</a></li> }
                }).collect_view()}
            </ul>
        </nav>
        {body}
    }
    .into_any()
}

/// The overview: where the project's pages are, its queue sizes and what is on disk.
#[component]
fn Overview(slug: String, bulk: Bulk) -> impl IntoView {
    let queues_path = format!("/admin/api/{slug}/queues");
    let queues = LocalResource::new(move || {
        bulk.version.track();
        api::get::<Queues>(queues_path.clone())
    });
    let on_disk = slug.clone();
    view! {
        <p class="muted">
            <a href=format!("/{slug}/") rel="external">"Leaderboard"</a> " · "
            <a href=format!("/admin/blocks?project={slug}")>"Blocks of this project"</a> " · "
            <a href=format!("/admin/audit?project={slug}")>"Audit log of this project"</a>
        </p>
        <div class="grid2">
        <section class="card" aria-label="Queues">
            <h2>"Queues"</h2>
            <Loaded reply=queues show={move |q: Queues| {
                let mut rows: Vec<(String, u64)> = q.queues.into_iter().collect();
                rows.extend([("claimed".into(), q.claimed), ("done".into(), q.done), ("failed".into(), q.failed)]);
                view! {
                    <table><tbody>
                        {rows.into_iter().map(|(name, size)| {
                            // Each links to its items (`personal`: every personal queue, `todo:d`).
                            let state = if name == "personal" { "todo:d" } else { name.as_str() };
                            let href = format!("{}?state={}", section_url(&slug, "items"), api::encode(state));
                            view! { <tr><th scope="row"><a href=href>{name}</a></th><td>{thousands(size)}</td></tr> }
                        }).collect_view()}
                    </tbody></table>
                }
            }}/>
        </section>
        <super::offload::OnDisk slug=on_disk bulk/>
        </div>
    }
}
