//! `/admin/p/SLUG`: one project's queues, adding items (textarea or a streamed file), moving
//! and clearing, with the other sections (claims, failed items, one item's timeline, settings,
//! targets, logs) beside them. Every bulk action is previewed (dry run) before it runs.

use super::{
    api,
    bulk::{BodyKind, Bulk, ConfirmBox},
    frame::Frame,
    loaded::Loaded,
};
use crate::{
    format::thousands,
    model::admin::{AdminSession, ClearQueue, MoveItems, Queues},
};
use leptos::{html, prelude::*};
use leptos_router::hooks::use_params_map;

/// The queues items can be added to and moved between.
pub const QUEUES: [&str; 4] = ["todo", "todo:backfeed", "todo:secondary", "todo:redo"];

/// The project page of the panel.
#[component]
pub fn ProjectAdminPage() -> impl IntoView {
    let slug = use_params_map().with_untracked(|p| p.get("slug").unwrap_or_default());
    let content = {
        let slug = slug.clone();
        move |s: AdminSession| view! { <Project slug=slug.clone() session=s/> }
    };
    view! { <Frame title=slug current="" content/> }
}

/// A `<select>` of the queues bound to `value`.
pub fn queue_select(value: RwSignal<String>, label: &'static str) -> impl IntoView {
    view! {
        <label>{label}
            <select prop:value=move || value.get() on:change=move |ev| value.set(event_target_value(&ev))>
                {QUEUES.iter().map(|q| view! { <option value=*q>{*q}</option> }).collect_view()}
            </select>
        </label>
    }
}

#[component]
fn Project(slug: String, session: AdminSession) -> impl IntoView {
    let may_change = session.may_change(&slug);
    let global = session.is_global();
    let bulk = Bulk::new(session.csrf);
    let queues_path = format!("/admin/api/{slug}/queues");
    let queues = LocalResource::new(move || {
        bulk.version.track();
        api::get::<Queues>(queues_path.clone())
    });
    view! {
        <p class="muted">
            <a href=format!("/{slug}/") rel="external">"Leaderboard"</a> " · "
            <a href=format!("/admin/p/{slug}/search")>"Find items"</a> " · "
            <a href=format!("/admin/blocks?project={slug}")>"Blocks of this project"</a> " · "
            <a href=format!("/admin/audit?project={slug}")>"Audit log of this project"</a>
        </p>
        <section class="card" aria-label="Queues">
            <h2>"Queues"</h2>
            <Loaded reply=queues show={|q: Queues| {
                let mut rows: Vec<(String, u64)> = q.queues.into_iter().collect();
                rows.extend([("claimed".into(), q.claimed), ("done".into(), q.done), ("failed".into(), q.failed)]);
                view! {
                    <table><tbody>
                        {rows.into_iter().map(|(name, size)| view! {
                            <tr><th scope="row">{name}</th><td>{thousands(size)}</td></tr>
                        }).collect_view()}
                    </tbody></table>
                }
            }}/>
        </section>
        <super::offload::OnDisk slug=slug.clone() bulk/>
        <ConfirmBox bulk/>
        {may_change.then(|| view! { <AddItems slug=slug.clone() bulk/> <MoveOrClear slug=slug.clone() bulk/> }.into_any())}
        <super::claims::Claims slug=slug.clone() bulk may_change/>
        <super::claims::Failed slug=slug.clone() bulk may_change/>
        <super::item::ItemLookup slug=slug.clone()/>
        <super::settings::SettingsEditor slug=slug.clone() csrf=bulk.csrf may_change global/>
        <super::listing::ListingEditor slug=slug.clone() csrf=bulk.csrf may_change/>
        <super::targets::Targets slug=slug.clone() bulk may_change/>
        <super::dictionary::Dictionary slug=slug.clone() bulk may_change/>
        <super::logs::Logs slug=slug.clone() bulk may_change/>
        {global.then(|| view! { <super::targets::Destroy slug=slug.clone() bulk/> })}
    }
    .into_any()
}

/// Adding items: typed in, or a file streamed from disk (plain, .gz or .zst).
#[component]
fn AddItems(slug: String, bulk: Bulk) -> impl IntoView {
    let items = RwSignal::new(String::new());
    let queue = RwSignal::new("todo".to_string());
    let file_input: NodeRef<html::Input> = NodeRef::new();
    let path = StoredValue::new(format!("/admin/api/{slug}/items"));
    let describe = move |c: u64| {
        format!(
            "Add {} items to {}? Items the project already knows are skipped.",
            thousands(c),
            queue.get_untracked()
        )
    };
    let preview_text = move |_| {
        let path = format!(
            "{}?queue={}",
            path.get_value(),
            api::encode(&queue.get_untracked())
        );
        bulk.preview(path, BodyKind::Text(items.get_untracked()), describe)
    };
    let preview_file = move |_| {
        #[cfg(feature = "hydrate")]
        {
            let Some(file) = api::chosen_file(file_input) else {
                return bulk.message.set("Choose a file first.".into());
            };
            let path = format!(
                "{}?queue={}",
                path.get_value(),
                api::encode(&queue.get_untracked())
            );
            bulk.preview(path, BodyKind::File(file), move |c| {
                format!(
                    "Add the file's {} new items to {}?",
                    thousands(c),
                    queue.get_untracked()
                )
            })
        }
        #[cfg(not(feature = "hydrate"))]
        let _ = (file_input, path, describe);
    };
    view! {
        <section class="card" aria-label="Add items">
            <h2>"Add items"</h2>
            {queue_select(queue, "Queue")}
            <p class="muted">"Items the project already knows (waiting, claimed, done or failed) are always skipped: an item is in one state only. The preview counts the new ones."</p>
            <div class="grid2">
                <div>
                    <label>"Items, one a line" <textarea rows="6" bind:value=items></textarea></label>
                    <button on:click=preview_text>"Preview"</button>
                </div>
                <div>
                    <label>"Items file (one a line; plain, .gz or .zst; streamed)"
                        <input type="file" node_ref=file_input accept=".txt,.gz,.zst,text/plain"/>
                    </label>
                    <button on:click=preview_file>"Check file"</button>
                </div>
            </div>
        </section>
    }
}

/// Moving items between queues (all, or those matching a regex), and clearing a queue.
#[component]
fn MoveOrClear(slug: String, bulk: Bulk) -> impl IntoView {
    let (from, to, regex) = (
        RwSignal::new("todo".to_string()),
        RwSignal::new("todo:redo".to_string()),
        RwSignal::new(String::new()),
    );
    let move_path = format!("/admin/api/{slug}/move");
    let preview_move = move |_| {
        let body = api::json(&MoveItems {
            from: from.get_untracked(),
            to: to.get_untracked(),
            regex: regex.get_untracked(),
            dry_run: false,
        });
        bulk.preview(move_path.clone(), BodyKind::Json(body), |c| {
            format!("Move {} items?", thousands(c))
        })
    };
    let clear_path = format!("/admin/api/{slug}/clear");
    let preview_clear = move |_| {
        let body = api::json(&ClearQueue {
            queue: from.get_untracked(),
            dry_run: false,
        });
        bulk.preview(clear_path.clone(), BodyKind::Json(body), |c| {
            format!("Drop all {} items of the queue?", thousands(c))
        })
    };
    view! {
        <section class="card" aria-label="Move or clear">
            <h2>"Move or clear a queue"</h2>
            <div class="row">
                {queue_select(from, "From")}
                {queue_select(to, "To")}
            </div>
            <label>"Only items matching (regular expression; empty: all)" <input bind:value=regex/></label>
            <div class="actions">
                <button on:click=preview_move>"Preview move"</button>
                <button on:click=preview_clear>"Preview clearing From"</button>
            </div>
        </section>
    }
}
