//! `/admin`: the admin panel. Its data comes from the admin JSON API after hydration; the
//! server renders the frame. Read-only accounts get no action buttons.

mod api;
mod audit;
mod project;
mod settings;
mod users;

pub use audit::AuditPage;
pub use project::ProjectAdminPage;
pub use users::UsersPage;

use crate::format::thousands;
use api::{n, Body};
use leptos::{prelude::*, task::spawn_local};
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;
use serde_json::{json, Value};

/// The session (user, role, CSRF token), loaded in the browser.
fn session() -> LocalResource<Result<Value, String>> {
    LocalResource::new(|| api::get("/admin/api/session".into()))
}

/// `/admin`: the login form, or the overview of every project.
#[component]
pub fn AdminPage() -> impl IntoView {
    let session = session();
    view! {
        <Title text="Admin · Tracker"/>
        <h1>"Admin"</h1>
        <Suspense fallback=|| view! { <p>"Loading…"</p> }>
            {move || Suspend::new(async move {
                match session.await {
                    Ok(s) if s["user"].is_string() => view! { <Overview session=s/> }.into_any(),
                    Ok(s) => view! { <Login csrf=s["csrf"].as_str().unwrap_or_default().to_string()/> }.into_any(),
                    Err(e) => view! { <p class="error">{e}</p> }.into_any(),
                }
            })}
        </Suspense>
    }
}

/// The login form.
#[component]
fn Login(csrf: String) -> impl IntoView {
    let (name, password, error) = (
        RwSignal::new(String::new()),
        RwSignal::new(String::new()),
        RwSignal::new(String::new()),
    );
    let submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let csrf = csrf.clone();
        spawn_local(async move {
            let body =
                json!({"username": name.get_untracked(), "password": password.get_untracked()});
            match api::call("POST", "/admin/api/login", &csrf, Body::Json(body)).await {
                Ok(_) => api::reload(),
                Err(e) => error.set(e),
            }
        });
    };
    view! {
        <form class="card admin-form" on:submit=submit aria-label="Log in">
            <label>"Name" <input name="username" autocomplete="username" bind:value=name required/></label>
            <label>"Password" <input type="password" name="password" autocomplete="current-password" bind:value=password required/></label>
            <button type="submit">"Log in"</button>
            <p class="error" role="alert">{error}</p>
        </form>
    }
}

/// Every project the account may see, with its numbers.
#[component]
fn Overview(session: Value) -> impl IntoView {
    let overview = LocalResource::new(|| api::get("/admin/api/overview".into()));
    let csrf = session["csrf"].as_str().unwrap_or_default().to_string();
    let log_out = move |_| {
        let csrf = csrf.clone();
        spawn_local(async move {
            let _ = api::call("POST", "/admin/api/logout", &csrf, Body::Empty).await;
            api::reload();
        });
    };
    let who = format!(
        "{} ({})",
        session["user"].as_str().unwrap_or_default(),
        session["role"]
            .as_str()
            .unwrap_or_default()
            .replace('_', "-")
    );
    view! {
        <p class="muted">"Logged in as " {who} " " <button on:click=log_out>"Log out"</button></p>
        <p><a href="/admin/audit">"Audit log"</a> " · " <a href="/admin/users">"Accounts"</a></p>
        <Suspense fallback=|| view! { <p>"Loading…"</p> }>
            {move || Suspend::new(async move {
                match overview.await {
                    Ok(o) => view! { <ProjectTable overview=o/> }.into_any(),
                    Err(e) => view! { <p class="error">{e}</p> }.into_any(),
                }
            })}
        </Suspense>
    }
}

#[component]
fn ProjectTable(overview: Value) -> impl IntoView {
    let rows = overview["projects"].as_array().cloned().unwrap_or_default();
    let footer = format!(
        "Redis memory {} · tracker {}",
        overview["redis_memory"].as_str().unwrap_or("?"),
        overview["version"].as_str().unwrap_or("?")
    );
    view! {
        <table class="card" aria-label="Projects">
            <thead><tr>
                <th>"Project"</th><th>"State"</th><th>"Waiting"</th><th>"Claimed"</th>
                <th>"Done"</th><th>"Failed"</th><th>"Items/min"</th>
            </tr></thead>
            <tbody>
                {rows.into_iter().map(|p| {
                    let slug = p["slug"].as_str().unwrap_or_default().to_string();
                    let waiting: u64 = p["queues"].as_object().map(|q| q.values().map(n).sum()).unwrap_or(0);
                    view! {
                        <tr>
                            <td><a href=format!("/admin/p/{slug}")>{p["title"].as_str().unwrap_or_default().to_string()}</a></td>
                            <td>{p["state"].as_str().unwrap_or_default().to_string()}</td>
                            <td>{thousands(waiting)}</td>
                            <td>{thousands(n(&p["claimed"]))}</td>
                            <td>{thousands(n(&p["done"]))}</td>
                            <td>{thousands(n(&p["failed"]))}</td>
                            <td>{format!("{:.1}", p["items_per_minute"].as_f64().unwrap_or(0.0))}</td>
                        </tr>
                    }
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
    let token = move || use_query_map().with_untracked(|q| q.get("token").unwrap_or_default());
    let token = token();
    let (name, password, error) = (
        RwSignal::new(String::new()),
        RwSignal::new(String::new()),
        RwSignal::new(String::new()),
    );
    let submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let token = token.clone();
        spawn_local(async move {
            let csrf = match session.await {
                Ok(s) => s["csrf"].as_str().unwrap_or_default().to_string(),
                Err(e) => return error.set(e),
            };
            let body = json!({"token": token, "username": name.get_untracked(), "password": password.get_untracked()});
            match api::call("POST", "/admin/api/setup", &csrf, Body::Json(body)).await {
                Ok(_) => api::go("/admin"),
                Err(e) => error.set(e),
            }
        });
    };
    view! {
        <Title text="Set up · Tracker"/>
        <h1>"Create the first admin"</h1>
        <form class="card admin-form" on:submit=submit aria-label="Create the first admin">
            <label>"Name" <input name="username" autocomplete="username" bind:value=name required/></label>
            <label>"Password" <input type="password" name="password" autocomplete="new-password" minlength="10" bind:value=password required/></label>
            <button type="submit">"Create account"</button>
            <p class="error" role="alert">{error}</p>
        </form>
    }
}
