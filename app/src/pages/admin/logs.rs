//! The completion log section of a project page: download a time range as NDJSON (a plain
//! link: the browser streams it to disk), archive the oldest entries to a gzip file on the
//! server (trimmed from Redis), and the archive files to download.

use super::{
    api,
    bulk::{BodyKind, Bulk},
    loaded::Loaded,
};
use crate::{
    format::thousands,
    model::admin::{ArchiveFile, ArchiveLog},
};
use leptos::prelude::*;

/// The log download form, the archive form and the archive list.
#[component]
pub fn Logs(slug: String, bulk: Bulk, may_change: bool) -> impl IntoView {
    let (from, to, archive_to) = (
        RwSignal::new(String::new()),
        RwSignal::new(String::new()),
        RwSignal::new(String::new()),
    );
    let log_path = format!("/admin/api/{slug}/log");
    let href = move || {
        let mut q = Vec::new();
        if let Some(ms) = api::local_time_ms(&from.get()) {
            q.push(format!("from={ms}"));
        }
        if let Some(ms) = api::local_time_ms(&to.get()) {
            q.push(format!("to={ms}"));
        }
        if q.is_empty() {
            log_path.clone()
        } else {
            format!("{log_path}?{}", q.join("&"))
        }
    };
    let archive_path = StoredValue::new(format!("/admin/api/{slug}/log/archive"));
    let archive = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let Some(ms) = api::local_time_ms(&archive_to.get_untracked()) else {
            return bulk
                .message
                .set("Archive up to: choose a date and time.".into());
        };
        bulk.preview(
            archive_path.get_value(),
            BodyKind::Json(api::json(&ArchiveLog {
                to: ms,
                dry_run: false,
            })),
            |c| {
                format!(
                    "Archive {} log entries to a gzip file and remove them from Redis?",
                    thousands(c)
                )
            },
        )
    };
    let list_path = format!("/admin/api/{slug}/archives");
    let archives = LocalResource::new(move || {
        bulk.version.track();
        api::get::<Vec<ArchiveFile>>(list_path.clone())
    });
    let slug = StoredValue::new(slug);
    view! {
        <section class="card" aria-label="Completion log">
            <h2>"Completion log"</h2>
            <div class="row">
                <label>"From" <input type="datetime-local" bind:value=from/></label>
                <label>"To" <input type="datetime-local" bind:value=to/></label>
                <a class="button" href=href download="completions.ndjson">"Download NDJSON"</a>
            </div>
            <p class="muted">"Empty fields: from the oldest entry, up to now. One JSON object per completion report."</p>
            {may_change.then(|| view! {
                <form class="row" on:submit=archive aria-label="Archive the log">
                    <label>"Archive entries up to" <input type="datetime-local" bind:value=archive_to/></label>
                    <button type="submit">"Preview archive"</button>
                </form>
                <p class="muted">"Archiving writes the oldest entries, up to that time, to a gzip NDJSON file on the server and removes them from Redis."</p>
            })}
            <Loaded reply=archives show={move |files: Vec<ArchiveFile>| {
                if files.is_empty() {
                    return view! { <p class="muted">"No archives."</p> }.into_any();
                }
                view! {
                    <table aria-label="Archives">
                        <thead><tr><th>"Archive"</th><th>"Size"</th></tr></thead>
                        <tbody>
                            {files.into_iter().map(|f| {
                                let href = format!("/admin/api/{}/archives/{}", slug.get_value(), f.name);
                                view! {
                                    <tr>
                                        <td><a href=href download=f.name.clone()>{f.name.clone()}</a></td>
                                        <td>{format!("{} bytes", thousands(f.bytes))}</td>
                                    </tr>
                                }
                            }).collect_view()}
                        </tbody>
                    </table>
                }.into_any()
            }}/>
        </section>
    }
}
