//! `/admin/blocks[?project=SLUG]`: the global block lists or a project's: IPs and downloader
//! names with reason, who and when; automatic blocks with their expiry; add and unblock.

use super::{
    api::{self, n, Body},
    bulk::{Bulk, ConfirmBox},
    frame::Frame,
};
use leptos::prelude::*;
use leptos_router::hooks::use_query_map;
use serde_json::{json, Value};

/// The blocks page.
#[component]
pub fn BlocksPage() -> impl IntoView {
    let project = use_query_map().with_untracked(|q| q.get("project").unwrap_or_default());
    let content = move |s: Value| view! { <Blocks session=s project=project.clone()/> };
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
fn Blocks(session: Value, project: String) -> impl IntoView {
    let bulk = Bulk::new(session["csrf"].as_str().unwrap_or_default().to_string());
    let scope = RwSignal::new(project);
    let may_change = move || {
        let p = scope.get();
        if p.is_empty() {
            api::is_global(&session)
        } else {
            api::may_change(&session, &p)
        }
    };
    let overview = LocalResource::new(|| api::get("/admin/api/overview".into()));
    let blocks = LocalResource::new(move || {
        bulk.version.track();
        let p = scope.get();
        let q = if p.is_empty() {
            String::new()
        } else {
            format!("?project={}", api::encode(&p))
        };
        api::get(format!("/admin/api/blocks{q}"))
    });
    let body = move |kind: &str, value: &str| {
        let mut b = json!({"kind": kind, "value": value});
        let p = scope.get_untracked();
        if !p.is_empty() {
            b["project"] = p.into();
        }
        b
    };
    let unblock = move |kind: String, value: String| {
        let b = body(&kind, &value);
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
        let mut b = body(&kind.get_untracked(), value.get_untracked().trim());
        b["reason"] = reason.get_untracked().into();
        let h = hours.get_untracked();
        if !h.trim().is_empty() {
            match h.trim().parse::<u64>() {
                Ok(h) => b["hours"] = h.into(),
                Err(_) => return bulk.message.set("Hours must be a whole number.".into()),
            }
        }
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
                        let projects = overview.await.ok().and_then(|o| o["projects"].as_array().cloned()).unwrap_or_default();
                        projects.into_iter().map(|p| {
                            let slug = p["slug"].as_str().unwrap_or_default().to_string();
                            let (value, label) = (slug.clone(), format!("project {slug}"));
                            view! { <option value=value selected=move || scope.get() == slug>{label}</option> }
                        }).collect_view()
                    })}
                </Suspense>
            </select>
        </label>
        <ConfirmBox bulk/>
        <section class="card" aria-label="Blocked">
            <Suspense fallback=|| view! { <p>"Loading…"</p> }>
                {move || {
                    let may_change = may_change.clone();
                    Suspend::new(async move {
                    let rows = match blocks.await {
                        Ok(v) => v.as_array().cloned().unwrap_or_default(),
                        Err(e) => return view! { <p class="error">{e}</p> }.into_any(),
                    };
                    if rows.is_empty() {
                        return view! { <p class="muted">"Nothing is blocked here."</p> }.into_any();
                    }
                    let can = may_change();
                    view! {
                        <table aria-label="Blocks">
                            <thead><tr><th>"Kind"</th><th>"Value"</th><th>"Reason"</th><th>"By"</th><th>"When"</th><th>"Expires"</th><th></th></tr></thead>
                            <tbody>
                                {rows.into_iter().map(|r| {
                                    let kind = r["kind"].as_str().unwrap_or_default().to_string();
                                    let value = r["value"].as_str().unwrap_or_default().to_string();
                                    let by = r["by"].as_str().unwrap_or_default().to_string();
                                    let auto = by == "auto";
                                    let active = r["active"].as_bool().unwrap_or(true);
                                    let (k, v) = (kind.clone(), value.clone());
                                    view! {
                                        <tr class:inactive=!active>
                                            <td>{if kind == "ip" { "IP" } else { "name" }}</td>
                                            <td class="mono">{value.clone()}</td>
                                            <td>{r["reason"].as_str().unwrap_or_default().to_string()}</td>
                                            <td>{if auto { "automatic".to_string() } else { by }}</td>
                                            <td>{api::when(n(&r["t"]))}</td>
                                            <td>{expiry(n(&r["expires"]), active)}</td>
                                            <td>{can.then(|| view! {
                                                <button on:click=move |_| unblock(k.clone(), v.clone()) aria-label=format!("Unblock {value}")>"Unblock"</button>
                                            })}</td>
                                        </tr>
                                    }
                                }).collect_view()}
                            </tbody>
                        </table>
                    }.into_any()
                })}}
            </Suspense>
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
