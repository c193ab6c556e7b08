//! `/admin/audit`: every admin action (who, when, what, how many items), filterable.

use super::api::{self, encode, n};
use super::frame::Frame;
use crate::format::thousands;
use leptos::prelude::*;
use leptos_router::hooks::use_query_map;
use serde_json::Value;

/// The audit log page (`?project=SLUG` starts filtered).
#[component]
pub fn AuditPage() -> impl IntoView {
    view! {
        <Frame title="Audit log".into() current="/admin/audit" content=|_| view! { <Audit/> }/>
    }
}

#[component]
fn Audit() -> impl IntoView {
    let start = use_query_map().with_untracked(|q| q.get("project").unwrap_or_default());
    let (who, action, project) = (
        RwSignal::new(String::new()),
        RwSignal::new(String::new()),
        RwSignal::new(start.clone()),
    );
    let filter = RwSignal::new(if start.is_empty() {
        String::new()
    } else {
        format!("&project={}", encode(&start))
    });
    let entries =
        LocalResource::new(move || api::get(format!("/admin/api/audit?limit=500{}", filter.get())));
    let apply = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let q = |k: &str, v: String| {
            if v.trim().is_empty() {
                String::new()
            } else {
                format!("&{k}={}", encode(v.trim()))
            }
        };
        filter.set(format!(
            "{}{}{}",
            q("who", who.get_untracked()),
            q("action", action.get_untracked()),
            q("project", project.get_untracked())
        ));
    };
    view! {
        <form class="card filters" on:submit=apply aria-label="Filter">
            <label>"Who" <input bind:value=who/></label>
            <label>"Action" <input bind:value=action placeholder="e.g. items or claims.release"/></label>
            <label>"Project" <input bind:value=project/></label>
            <button type="submit">"Filter"</button>
        </form>
        <Suspense fallback=|| view! { <p>"Loading…"</p> }>
            {move || Suspend::new(async move {
                match entries.await {
                    Ok(list) => view! { <AuditTable list/> }.into_any(),
                    Err(e) => view! { <p class="error">{e}</p> }.into_any(),
                }
            })}
        </Suspense>
    }
}

#[component]
fn AuditTable(list: Value) -> impl IntoView {
    let rows = list.as_array().cloned().unwrap_or_default();
    let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
    view! {
        <table class="card" aria-label="Audit log">
            <thead><tr><th>"When"</th><th>"Who"</th><th>"Action"</th><th>"Project"</th><th>"Items"</th><th>"Detail"</th></tr></thead>
            <tbody>
                {rows.into_iter().map(|e| view! {
                    <tr>
                        <td title=api::when(n(&e["t"]))>{api::age(n(&e["t"])) + " ago"}</td>
                        <td>{text(&e["who"])}</td>
                        <td>{text(&e["action"])}</td>
                        <td>{text(&e["project"])}</td>
                        <td>{thousands(n(&e["count"]))}</td>
                        <td>{text(&e["detail"])}</td>
                    </tr>
                }).collect_view()}
            </tbody>
        </table>
    }
}
