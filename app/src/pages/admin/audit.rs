//! `/admin/audit`: every admin action (who, when, what, how many items), filterable.

use super::{
    api::{self, encode},
    frame::Frame,
    loaded::Loaded,
};
use crate::{format::thousands, model::admin::AuditEntry};
use leptos::prelude::*;
use leptos_router::hooks::use_query_map;

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
    let entries = LocalResource::new(move || {
        api::get::<Vec<AuditEntry>>(format!("/admin/api/audit?limit=500{}", filter.get()))
    });
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
        <Loaded reply=entries show={|list| view! { <AuditTable list/> }}/>
    }
}

#[component]
fn AuditTable(list: Vec<AuditEntry>) -> impl IntoView {
    view! {
        <table class="card" aria-label="Audit log">
            <thead><tr><th>"When"</th><th>"Who"</th><th>"Action"</th><th>"Project"</th><th>"Items"</th><th>"Detail"</th></tr></thead>
            <tbody>
                {list.into_iter().map(|e| view! {
                    <tr>
                        <td title=api::when(e.t)>{api::age(e.t) + " ago"}</td>
                        <td>{e.who}</td>
                        <td>{e.action}</td>
                        <td>{e.project}</td>
                        <td>{thousands(e.count)}</td>
                        <td>{e.detail}</td>
                    </tr>
                }).collect_view()}
            </tbody>
        </table>
    }
}
