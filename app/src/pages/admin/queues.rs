//! The "Add and move" section of a project page: adding items (typed in, or a file streamed
//! from disk), moving items between queues and clearing a queue, each counted by a dry run
//! before it runs.

use super::{
    api,
    bulk::{BodyKind, Bulk},
    sections::queue_select,
};
use crate::{
    format::thousands,
    model::admin::{ClearQueue, MoveItems},
};
use leptos::{html, prelude::*};

/// Adding items: typed in, or a file streamed from disk (plain, .gz or .zst).
#[component]
pub fn AddItems(slug: String, bulk: Bulk) -> impl IntoView {
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
pub fn MoveOrClear(slug: String, bulk: Bulk) -> impl IntoView {
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
