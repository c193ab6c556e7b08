//! `/admin/warrior`: the Warrior HQ project list (`projects.json`): edited as JSON, checked
//! and sanitised by the server, previewed as the list Warriors show, the last 20 versions kept
//! to restore. Only global admins save; everyone else reads.

use super::{
    api::{self, Body},
    bulk::{BodyKind, Bulk, ConfirmBox},
    frame::Frame,
    loaded::Loaded,
};
use crate::model::admin::{
    AdminSession, AuditEntry, Restore, SaveList, SavedList, WarriorList, WarriorPreview,
    FLEET_ACTIONS,
};
use leptos::{prelude::*, task::spawn_local};
use serde_json::Value;

/// The Warrior list page.
#[component]
pub fn WarriorPage() -> impl IntoView {
    view! {
        <Frame title="Warrior project list".into() current="/admin/warrior" content=|s| view! { <Warrior session=s/> }/>
    }
}

const PATH: &str = "/admin/api/warrior/projects";

#[component]
fn Warrior(session: AdminSession) -> impl IntoView {
    let global = session.is_global();
    let bulk = Bulk::new(session.csrf);
    let loaded = LocalResource::new(move || {
        bulk.version.track();
        api::get::<WarriorList>(PATH.into())
    });
    let changes = LocalResource::new(move || {
        bulk.version.track();
        api::get::<Vec<AuditEntry>>(format!(
            "/admin/api/audit?limit=50&action={}",
            FLEET_ACTIONS.join(",")
        ))
    });
    let text = RwSignal::new(String::new());
    let preview: RwSignal<Option<WarriorPreview>> = RwSignal::new(None);
    Effect::new(move || {
        if let Some(Ok(list)) = loaded.get() {
            // The editor shows the document as free JSON, indented.
            let raw = list.json.as_str();
            let pretty = serde_json::from_str::<Value>(raw)
                .ok()
                .and_then(|d| serde_json::to_string_pretty(&d).ok())
                .unwrap_or_else(|| raw.to_string());
            text.set(pretty);
            preview.set(serde_json::from_str(raw).ok());
        }
    });
    let put = move |dry_run: bool| {
        let body = api::json(&SaveList {
            json: text.get_untracked(),
            dry_run,
        });
        spawn_local(async move {
            let csrf = bulk.csrf.get_value();
            match api::call::<SavedList>("PUT", PATH, &csrf, Body::Json(body)).await {
                Ok(saved) if dry_run => {
                    preview.set(serde_json::from_value(saved.json).ok());
                    bulk.message
                        .set("Valid. The preview shows it as sanitised.".into());
                }
                Ok(_) => {
                    bulk.message.set("Saved.".into());
                    bulk.version.update(|v| *v += 1);
                }
                Err(e) => {
                    preview.set(None);
                    bulk.message.set(e);
                }
            }
        });
    };
    let restore = move |index: usize, label: String| {
        bulk.ask(
            format!("Restore the version saved {label}? The current list becomes a version too."),
            "POST",
            "/admin/api/warrior/restore".into(),
            BodyKind::Json(api::json(&Restore { index })),
        )
    };
    view! {
        <p class="muted">"Served to Warriors as " <a href="/projects.json" rel="external">"/projects.json"</a>
            ". Required: warrior.seesaw_version, and for each project a name and a repository; deadlines look like 2013-04-30T23:59:59Z; HTML fields are sanitised."</p>
        <ConfirmBox bulk/>
        <super::listing::AutoPin csrf=bulk.csrf global/>
        <p class="muted">"The projects of this tracker are listed from their settings (Warrior listing, on each project's page); what is saved here gives the list-level fields and entries for projects on other trackers."</p>
        <div class="grid2">
            <section class="card" aria-label="Edit the list">
                <label>"projects.json" <textarea rows="24" bind:value=text readonly=!global spellcheck="false"></textarea></label>
                {global.then(|| view! {
                    <div class="actions">
                        <button on:click=move |_| put(true)>"Preview"</button>
                        <button on:click=move |_| put(false)>"Save list"</button>
                    </div>
                })}
            </section>
            <section class="card" aria-label="Preview">
                <h2>"Preview"</h2>
                {move || match preview.get() {
                    None => view! { <p class="muted">"Nothing to show: press Preview to check the list."</p> }.into_any(),
                    Some(doc) => view! { <ListPreview doc/> }.into_any(),
                }}
            </section>
        </div>
        <section class="card" aria-label="Versions">
            <h2>"Versions (newest first; the first is the current list)"</h2>
            <Loaded reply=loaded show={move |list: WarriorList| {
                if list.versions.is_empty() {
                    return view! { <p class="muted">"Never saved."</p> }.into_any();
                }
                view! {
                    <table aria-label="Versions">
                        <thead><tr><th>"Saved"</th><th>"By"</th><th></th></tr></thead>
                        <tbody>
                            {list.versions.into_iter().enumerate().map(|(i, v)| {
                                let label = api::when(v.t);
                                let l2 = label.clone();
                                view! {
                                    <tr>
                                        <td>{label.clone()}</td>
                                        <td>{v.who}</td>
                                        <td>{if i == 0 {
                                            view! { <span class="muted">"current"</span> }.into_any()
                                        } else if global {
                                            view! { <button on:click=move |_| restore(i, l2.clone()) aria-label=format!("Restore version {i}")>"Restore"</button> }.into_any()
                                        } else {
                                            ().into_any()
                                        }}</td>
                                    </tr>
                                }
                            }).collect_view()}
                        </tbody>
                    </table>
                }.into_any()
            }}/>
        </section>
        <section class="card" aria-label="Fleet changes">
            <h2>"Changes to what the fleet runs (newest first)"</h2>
            <Loaded reply=changes show={move |list: Vec<AuditEntry>| {
                if list.is_empty() {
                    return view! { <p class="muted">"No changes yet."</p> }.into_any();
                }
                view! {
                    <table aria-label="Fleet changes">
                        <thead><tr><th>"When"</th><th>"Who"</th><th>"What"</th><th>"Project"</th><th>"Detail"</th></tr></thead>
                        <tbody>
                            {list.into_iter().map(|e| view! {
                                <tr>
                                    <td>{api::when(e.t)}</td>
                                    <td>{e.who}</td>
                                    <td class="mono">{e.action}</td>
                                    <td>{e.project}</td>
                                    <td class="mono">{e.detail}</td>
                                </tr>
                            }).collect_view()}
                        </tbody>
                    </table>
                }.into_any()
            }}/>
        </section>
    }
}

/// The list as a Warrior shows it: each project's title, description (sanitised HTML) and
/// deadline.
#[component]
fn ListPreview(doc: WarriorPreview) -> impl IntoView {
    let message = doc.broadcast_message;
    let projects = doc.projects;
    view! {
        {(!message.is_empty()).then(|| view! { <div class="banner" inner_html=message></div> })}
        <p class="muted">{format!("seesaw {} · {} projects", doc.warrior.seesaw_version, projects.len())}</p>
        <ul class="warrior-list" aria-label="Project list preview">
            {projects.into_iter().map(|p| view! {
                <li>
                    <strong>{p.heading().to_string()}</strong> " " <span class="muted mono">{p.name}</span>
                    <div inner_html=p.description></div>
                    {p.deadline.map(|d| view! { <small class="muted">"Deadline " {d}</small> })}
                    <small class="muted mono">{p.repository}</small>
                </li>
            }).collect_view()}
        </ul>
    }
}
