//! `/admin/blocks[?project=SLUG]`: the global block lists or a project's: IPs and downloader
//! names with reason, who and when; automatic blocks with their expiry; add and unblock.

use super::{
    api::{self, Body},
    bulk::{Bulk, ConfirmBox},
    frame::Frame,
    loaded::Loaded,
};
use crate::model::admin::{AdminSession, BlockChange, BlockRow};
use leptos::prelude::*;
use leptos_router::hooks::use_query_map;

/// The blocks page.
#[component]
pub fn BlocksPage() -> impl IntoView {
    let project = use_query_map().with_untracked(|q| q.get("project").unwrap_or_default());
    let content = move |s: AdminSession| view! { <Blocks session=s project=project.clone()/> };
    view! { <Frame title="Blocks".into() current="/admin/blocks" content/> }
}

/// When a block lifts, as text.
fn expiry(expires: u64, active: bool) -> String {
    match (expires, active) {
        (0, _) => "never".into(),
        (_, false) => format!("expired {}", api::when(expires)),
        _ => api::when(expires),
    }
}

#[component]
fn Blocks(session: AdminSession, project: String) -> impl IntoView {
    let bulk = Bulk::new(session.csrf.clone());
    let scope = RwSignal::new(project);
    let may_change = move || {
        let p = scope.get();
        if p.is_empty() {
            session.is_global()
        } else {
            session.may_change(&p)
        }
    };
    let overview = super::overview();
    let blocks = LocalResource::new(move || {
        bulk.version.track();
        let p = scope.get();
        let q = if p.is_empty() {
            String::new()
        } else {
            format!("?project={}", api::encode(&p))
        };
        api::get::<Vec<BlockRow>>(format!("/admin/api/blocks{q}"))
    });
    // The lists of the scope's project, or the global ones (no project).
    let project = move || Some(scope.get_untracked()).filter(|p| !p.is_empty());
    let unblock = move |kind: String, value: String| {
        let b = api::json(&BlockChange {
            kind,
            value,
            project: project(),
            ..BlockChange::default()
        });
        bulk.run(
            "POST",
            "/admin/api/unblock".into(),
            Body::Json(b),
            "Unblocked.",
        );
    };
    let (kind, value, reason, hours) = (
        RwSignal::new("ip".to_string()),
        RwSignal::new(String::new()),
        RwSignal::new(String::new()),
        RwSignal::new(String::new()),
    );
    let add = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let h = hours.get_untracked();
        let hours_given = match h.trim() {
            "" => None,
            h => match h.parse::<u64>() {
                Ok(h) => Some(h),
                Err(_) => return bulk.message.set("Hours must be a whole number.".into()),
            },
        };
        let b = api::json(&BlockChange {
            kind: kind.get_untracked(),
            value: value.get_untracked().trim().to_string(),
            project: project(),
            reason: reason.get_untracked(),
            hours: hours_given,
        });
        bulk.run(
            "POST",
            "/admin/api/blocks".into(),
            Body::Json(b),
            "Blocked.",
        );
        value.set(String::new());
        reason.set(String::new());
        hours.set(String::new());
    };
    let may_change_add = may_change.clone();
    view! {
        <label class="inline">"Block lists of "
            <select prop:value=move || scope.get() on:change=move |ev| scope.set(event_target_value(&ev)) aria-label="Scope">
                <option value="">"every project (global)"</option>
                <Suspense>
                    {move || Suspend::new(async move {
                        let projects = overview.await.map(|o| o.projects).unwrap_or_default();
                        projects.into_iter().map(|p| {
                            let slug = p.slug;
                            let (value, label) = (slug.clone(), format!("project {slug}"));
                            view! { <option value=value selected=move || scope.get() == slug>{label}</option> }
                        }).collect_view()
                    })}
                </Suspense>
            </select>
        </label>
        <ConfirmBox bulk/>
        <section class="card" aria-label="Blocked">
            <Loaded reply=blocks show={move |rows: Vec<BlockRow>| {
                if rows.is_empty() {
                    return view! { <p class="muted">"Nothing is blocked here."</p> }.into_any();
                }
                let can = may_change();
                view! {
                    <table aria-label="Blocks">
                        <thead><tr><th>"Kind"</th><th>"Value"</th><th>"Reason"</th><th>"By"</th><th>"When"</th><th>"Expires"</th><th></th></tr></thead>
                        <tbody>
                            {rows.into_iter().map(|r| {
                                let (k, v) = (r.kind.clone(), r.value.clone());
                                let value = r.value;
                                let by = if r.entry.is_automatic() { "automatic".to_string() } else { r.entry.by };
                                view! {
                                    <tr class:inactive=!r.active>
                                        <td>{if r.kind == "ip" { "IP" } else { "name" }}</td>
                                        <td class="mono">{value.clone()}</td>
                                        <td>{r.entry.reason}</td>
                                        <td>{by}</td>
                                        <td>{api::when(r.entry.t)}</td>
                                        <td>{expiry(r.entry.expires, r.active)}</td>
                                        <td>{can.then(|| view! {
                                            <button on:click=move |_| unblock(k.clone(), v.clone()) aria-label=format!("Unblock {value}")>"Unblock"</button>
                                        })}</td>
                                    </tr>
                                }
                            }).collect_view()}
                        </tbody>
                    </table>
                }.into_any()
            }}/>
        </section>
        <Show when=may_change_add>
            <form class="card admin-form" on:submit=add aria-label="Add block">
                <h2>"Block"</h2>
                <label>"Kind"
                    <select prop:value=move || kind.get() on:change=move |ev| kind.set(event_target_value(&ev))>
                        <option value="ip">"IP address"</option>
                        <option value="dl">"downloader name"</option>
                    </select>
                </label>
                <label>"IP address or name" <input bind:value=value required/></label>
                <label>"Reason" <input bind:value=reason/></label>
                <label>"Hours (empty: for good)" <input inputmode="numeric" bind:value=hours/></label>
                <button type="submit">"Block"</button>
            </form>
        </Show>
    }
}
