//! `/admin`: the admin panel. Its data comes from the admin JSON API after hydration; the
//! server renders the frame. Read-only accounts get no action buttons (and the API refuses
//! their changes anyway).

mod api;
mod audit;
mod blocks;
mod bulk;
mod claims;
mod dictionary;
mod fleet;
mod frame;
mod item;
mod listing;
mod loaded;
mod logs;
mod offload;
mod pipelines;
mod project;
mod queues;
mod search;
mod sections;
mod settings;
mod targets;
mod tokens;
mod users;
mod warrior;

pub use audit::AuditPage;
pub use blocks::BlocksPage;
pub use fleet::FleetPage;
pub use pipelines::PipelinesPage;
pub use project::ProjectAdminPage;
pub use tokens::TokensPage;
pub use users::UsersPage;
pub use warrior::WarriorPage;

use crate::{
    format::thousands,
    model::admin::{AdminSession, Overview},
};
use api::Body;
use frame::{Credentials, Frame, Purpose};
use leptos::{prelude::*, task::spawn_local};
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;
use loaded::Loaded;

/// The session (user, role, CSRF token), loaded in the browser.
fn session() -> LocalResource<Result<AdminSession, String>> {
    LocalResource::new(|| api::get("/admin/api/session".into()))
}

/// The overview of every project the account may see, loaded in the browser.
fn overview() -> LocalResource<Result<Overview, String>> {
    LocalResource::new(|| api::get("/admin/api/overview".into()))
}

/// `/admin`: the login form, or the overview of every project.
#[component]
pub fn AdminPage() -> impl IntoView {
    view! {
        <Frame title="Projects".into() current="/admin" content=|s| view! { <Overview session=s/> }/>
    }
}

/// Every project the account may see, with its numbers; global admins create projects here.
#[component]
fn Overview(session: AdminSession) -> impl IntoView {
    let global = session.is_global();
    let csrf = session.csrf;
    view! {
        <Loaded reply=overview() show={|o| view! { <ProjectTable overview=o/> }}/>
        {global.then(|| view! { <CreateProject csrf/> })}
    }
}

/// The form creating a project (global admins).
#[component]
fn CreateProject(csrf: String) -> impl IntoView {
    let (slug, title, domains, error) = (
        RwSignal::new(String::new()),
        RwSignal::new(String::new()),
        RwSignal::new("data".to_string()),
        RwSignal::new(String::new()),
    );
    let submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let csrf = csrf.clone();
        let slug = slug.get_untracked().trim().to_string();
        let domains: Vec<String> = domains
            .get_untracked()
            .split(',')
            .map(|d| d.trim().to_string())
            .filter(|d| !d.is_empty())
            .collect();
        let body = api::json(&crate::model::admin::CreateProject {
            slug: slug.clone(),
            title: title.get_untracked(),
            domains,
        });
        spawn_local(async move {
            match api::send("POST", "/admin/api/projects", &csrf, Body::Json(body)).await {
                Ok(_) => api::go(&format!("/admin/p/{slug}")),
                Err(e) => error.set(e),
            }
        });
    };
    view! {
        <form class="card admin-form" on:submit=submit aria-label="New project">
            <h2>"New project"</h2>
            <label>"Slug (a-z, 0-9, -)" <input name="slug" bind:value=slug required pattern="[a-z0-9-]{1,64}"/></label>
            <label>"Title" <input name="title" bind:value=title/></label>
            <label>"Byte domains (comma-separated)" <input name="domains" bind:value=domains/></label>
            <button type="submit">"Create project"</button>
            <p class="error" role="alert">{error}</p>
        </form>
    }
}

#[component]
fn ProjectTable(overview: Overview) -> impl IntoView {
    let footer = format!(
        "Redis memory {} · tracker {}",
        overview.redis_memory, overview.version
    );
    view! {
        <table class="card" aria-label="Projects">
            <thead><tr>
                <th>"Project"</th><th>"State"</th><th>"Waiting"</th><th>"Claimed"</th>
                <th>"Done"</th><th>"Failed"</th><th>"Items/min"</th>
            </tr></thead>
            <tbody>
                {overview.projects.into_iter().map(|p| view! {
                    <tr>
                        <td><a href=format!("/admin/p/{}", p.slug)>{p.title.clone()}</a></td>
                        <td>{p.state.clone()}</td>
                        <td>{thousands(p.waiting())}</td>
                        <td>{thousands(p.claimed)}</td>
                        <td>{thousands(p.done)}</td>
                        <td>{thousands(p.failed)}</td>
                        <td>{format!("{:.1}", p.items_per_minute)}</td>
                    </tr>
                }).collect_view()}
            </tbody>
        </table>
        <p class="muted">{footer}</p>
    }
}

/// `/admin/setup?token=...`: creates the first global admin with the link printed at start.
#[component]
pub fn SetupPage() -> impl IntoView {
    let session = session();
    let token = use_query_map().with_untracked(|q| q.get("token").unwrap_or_default());
    // The form appears once the session (its CSRF token) is loaded in the browser: a form the
    // server rendered could be typed into before hydration, which then resets its fields.
    view! {
        <Title text="Set up · Tracker"/>
        <h1>"Create the first admin"</h1>
        <Loaded reply=session show={move |s: AdminSession| view! { <Credentials csrf=s.csrf purpose=Purpose::SetUp(token.clone())/> }}/>
    }
}
