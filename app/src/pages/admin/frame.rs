//! The frame of every panel page: the session (loaded in the browser), the navigation between
//! pages, who is logged in, and the login form for visitors.

use super::api::{self, Body};
use leptos::{prelude::*, task::spawn_local};
use leptos_meta::Title;
use serde_json::{json, Value};

/// Who sees a page in the navigation.
#[derive(Clone, Copy, PartialEq)]
enum Who {
    Everyone,
    /// Accounts that change things (not read-only).
    Actors,
    Global,
}

/// The panel's pages in the navigation: (path, label, who sees it).
const PAGES: [(&str, &str, Who); 6] = [
    ("/admin", "Projects", Who::Everyone),
    ("/admin/blocks", "Blocks", Who::Everyone),
    ("/admin/warrior", "Warrior list", Who::Everyone),
    ("/admin/users", "Accounts", Who::Global),
    ("/admin/audit", "Audit log", Who::Everyone),
    ("/admin/tokens", "API tokens", Who::Actors),
];

/// A panel page titled `title`: navigation and `content(session)` for a logged-in account,
/// the login form otherwise. `current` is the navigation entry to mark.
#[component]
pub fn Frame<F, V>(title: String, current: &'static str, content: F) -> impl IntoView
where
    F: Fn(Value) -> V + Send + Sync + Clone + 'static,
    V: IntoView + 'static,
{
    let session = LocalResource::new(|| api::get("/admin/api/session".into()));
    let heading = title.clone();
    view! {
        <Title text=format!("{title} · Admin · Tracker")/>
        <Suspense fallback=|| view! { <p>"Loading…"</p> }>
            {move || {
                let (content, heading) = (content.clone(), heading.clone());
                Suspend::new(async move {
                    match session.await {
                        Ok(s) if s["user"].is_string() => view! {
                            <Nav session=s.clone() current/>
                            <h1>{heading}</h1>
                            {content(s).into_any()}
                        }.into_any(),
                        Ok(s) => view! {
                            <h1>"Admin"</h1>
                            <Login csrf=s["csrf"].as_str().unwrap_or_default().to_string()/>
                        }.into_any(),
                        Err(e) => view! { <p class="error">{e}</p> }.into_any(),
                    }
                })
            }}
        </Suspense>
    }
}

/// Links to the panel's pages, who is logged in, and the logout button.
#[component]
fn Nav(session: Value, current: &'static str) -> impl IntoView {
    let csrf = session["csrf"].as_str().unwrap_or_default().to_string();
    let global = api::is_global(&session);
    let actor = global || session["role"].as_str() == Some("project");
    let shown = move |who: Who| match who {
        Who::Everyone => true,
        Who::Actors => actor,
        Who::Global => global,
    };
    let log_out = move |_| {
        let csrf = csrf.clone();
        spawn_local(async move {
            let _ = api::call("POST", "/admin/api/logout", &csrf, Body::Empty).await;
            api::go("/admin");
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
        <nav class="admin-nav" aria-label="Admin">
            <ul>
                {PAGES.iter().filter(|p| shown(p.2)).map(|(href, label, _)| {
                    let here = *href == current;
                    view! { <li><a href=*href aria-current=here.then_some("page")>{*label}</a></li> }
                }).collect_view()}
            </ul>
            <span class="muted who">"Logged in as " {who} " " <button on:click=log_out>"Log out"</button></span>
        </nav>
    }
}

/// The login form.
#[component]
pub fn Login(csrf: String) -> impl IntoView {
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
