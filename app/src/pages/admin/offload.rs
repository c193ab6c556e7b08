//! The "On disk" card of a project page: what the offloader moved out of Redis (done items,
//! waiting items of long queues, the completion log) and how it fares.

use super::{api, bulk::Bulk, loaded::Loaded};
use crate::{
    format::{bytes, thousands},
    model::admin::OffloadState,
};
use leptos::prelude::*;

/// The card, refreshed with the page's other numbers.
#[component]
pub fn OnDisk(slug: String, bulk: Bulk) -> impl IntoView {
    let path = format!("/admin/api/{slug}/offload");
    let state = LocalResource::new(move || {
        bulk.version.track();
        api::get::<OffloadState>(path.clone())
    });
    view! {
        <section class="card" aria-label="On disk">
            <h2>"On disk"</h2>
            <Loaded reply=state show={|o: OffloadState| {
                let policy = match o.done_policy.as_str() {
                    "offload" => "offload: done items go to segment files, still looked up exactly",
                    "discard" => "discard: only a filter of done items' names is kept",
                    _ => "keep: done items stay in Redis",
                };
                let rows: Vec<(&str, String)> = vec![
                    ("Done items", policy.to_string()),
                    ("Done items on disk", thousands(o.done_on_disk)),
                    ("Done items discarded", thousands(o.discarded)),
                    ("Items waiting on disk", thousands(o.todo_on_disk)),
                    ("Segment files", format!("{} ({})", thousands(o.segments), bytes(o.bytes))),
                    ("Log archive files", format!("{} ({})", thousands(o.log_files), bytes(o.log_bytes))),
                    ("Log entries in Redis", format!(
                        "{} (they leave Redis once archived; at most {} while archiving fails)",
                        thousands(o.log_entries), thousands(o.log_budget),
                    )),
                    ("Log entries lost", thousands(o.log_lost)),
                    ("Last run", o.last_run.map_or("never".into(), |t| format!("{} ago", api::age(t)))),
                    ("Lease", if o.leased { "held by a tracker process".into() } else { "free".into() }),
                ];
                view! {
                    <table><tbody>
                        {rows.into_iter().map(|(k, v)| view! {
                            <tr><th scope="row">{k}</th><td>{v}</td></tr>
                        }).collect_view()}
                    </tbody></table>
                    {o.failing.then(|| view! {
                        <p class="error" role="alert">
                            "Archiving is failing: the completion log stays in Redis ("
                            {thousands(o.log_entries)} " entries) until the archive directory can \
                             be written again; past " {thousands(o.log_budget)}
                            " entries its oldest are dropped and counted as lost."
                        </p>
                    })}
                    {(!o.error.is_empty()).then(|| view! {
                        <p class="error" role="alert">
                            "Last failure" {o.error_t.map(|t| format!(" ({} ago)", api::age(t)))} ": " {o.error.clone()}
                        </p>
                    })}
                }
            }}/>
        </section>
    }
}
