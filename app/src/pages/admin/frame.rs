//! The frame of every panel page: the session (loaded in the browser), the navigation between
//! pages, who is logged in, and the login form for visitors.

use super::{
    api::{self, Body},
    loaded::Loaded,
};
use crate::model::admin::{AdminSession, Credentials, Setup};
use leptos::{prelude::*, task::spawn_local};
use leptos_meta::Title;

/// Who sees a page in the navigation.
#[derive(Clone, Copy, PartialEq)]
enum Who {
    Everyone,
    Global,
}

/// The panel's pages in the navigation: (path, label, who sees it).
const PAGES: [(&str, &str, Who); 8] = [
    ("/admin", "Projects", Who::Everyone),
    ("/admin/fleet", "Fleet", Who::Everyone),
    ("/admin/blocks", "Blocks", Who::Everyone),
    ("/admin/warrior", "Warrior list", Who::Everyone),
    ("/admin/users", "Accounts", Who::Global),
    ("/admin/pipelines", "Pipelines", Who::Global),
    ("/admin/audit", "Audit log", Who::Everyone),
    ("/admin/tokens", "Your account", Who::Everyone),
];

/// A panel page titled `title`: navigation and `content(session)` for a logged-in account,
/// the login form otherwise. `current` is the navigation entry to mark.
#[component]
pub fn Frame<F, V>(title: String, current: &'static str, content: F) -> impl IntoView
where
    F: Fn(AdminSession) -> V + Send + Sync + Clone + 'static,
    V: IntoView + 'static,
{
    let session = super::session();
    let heading = title.clone();
    let show = move |s: AdminSession| {
        if s.logged_in() {
            view! {
                <Nav session=s.clone() current/>
                <h1>{heading.clone()}</h1>
                {content(s).into_any()}
            }
            .into_any()
        } else {
            view! { <h1>"Admin"</h1> <Credentials csrf=s.csrf purpose=Purpose::LogIn/> }.into_any()
        }
    };
    view! {
        <Title text=format!("{title} · Admin · Tracker")/>
        <Loaded reply=session show/>
    }
}

/// Links to the panel's pages, who is logged in, and the logout button.
#[component]
fn Nav(session: AdminSession, current: &'static str) -> impl IntoView {
    let csrf = session.csrf.clone();
    let global = session.is_global();
    let shown = move |who: Who| match who {
        Who::Everyone => true,
        Who::Global => global,
    };
    let log_out = move |_| {
        let csrf = csrf.clone();
        spawn_local(async move {
            let _ = api::send("POST", "/admin/api/logout", &csrf, Body::Empty).await;
            api::go("/admin");
        });
    };
    let who = format!(
        "{} ({})",
        session.user.as_deref().unwrap_or_default(),
        session.role_label()
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

/// What a name-and-password form is for.
#[derive(Clone)]
pub enum Purpose {
    /// Logging in.
    LogIn,
    /// Creating the first admin, with the setup link's token.
    SetUp(String),
}

/// A name-and-password form: the login form, or the first admin's (sent with the setup token).
#[component]
pub fn Credentials(csrf: String, purpose: Purpose) -> impl IntoView {
    let (name, password, error) = (
        RwSignal::new(String::new()),
        RwSignal::new(String::new()),
        RwSignal::new(String::new()),
    );
    let setting_up = matches!(purpose, Purpose::SetUp(_));
    let submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        let (csrf, purpose) = (csrf.clone(), purpose.clone());
        spawn_local(async move {
            let (username, password) = (name.get_untracked(), password.get_untracked());
            let (path, body) = match &purpose {
                Purpose::LogIn => (
                    "/admin/api/login",
                    api::json(&Credentials { username, password }),
                ),
                Purpose::SetUp(token) => (
                    "/admin/api/setup",
                    api::json(&Setup {
                        token: token.clone(),
                        username,
                        password,
                    }),
                ),
            };
            match api::send("POST", path, &csrf, Body::Json(body)).await {
                Ok(()) if setting_up => api::go("/admin"),
                Ok(()) => api::reload(),
                Err(e) => error.set(e),
            }
        });
    };
    let (label, autocomplete, button) = if setting_up {
        ("Create the first admin", "new-password", "Create account")
    } else {
        ("Log in", "current-password", "Log in")
    };
    view! {
        <form class="card admin-form" on:submit=submit aria-label=label>
            <label>"Name" <input name="username" autocomplete="username" bind:value=name required/></label>
            <label>"Password" <input type="password" name="password" autocomplete=autocomplete minlength=setting_up.then_some("10") bind:value=password required/></label>
            <button type="submit">{button}</button>
            <p class="error" role="alert">{error}</p>
        </form>
    }
}
