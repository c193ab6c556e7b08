//! The Leptos UI: the shell, the routes, the pages, their data (`data`), and the types shared
//! by the server and the browser.

pub mod csp;
pub mod data;
pub mod format;
#[cfg(feature = "hydrate")]
mod live;
pub mod model;
mod pages;

#[cfg(feature = "ssr")]
pub mod backend;

use leptos::prelude::*;
use leptos_meta::{provide_meta_context, MetaTags, Stylesheet, Title};
use leptos_router::{
    components::{Route, Router, Routes},
    path,
};

/// The name of the admin panel's Wasm bundle (`/pkg/admin.js`, `/pkg/admin.wasm`), built from
/// `frontend` with its `admin` feature by `scripts/build-site.sh`.
pub const ADMIN_BUNDLE: &str = "admin";

/// The HTML document around the public pages, rendered on the server, with the page's data
/// ([`data::PageData`], provided in context by the server's handler) for the browser to
/// hydrate from.
pub fn shell(options: LeptosOptions) -> impl IntoView {
    #[cfg(feature = "ssr")]
    let script = data::page_data_script(&data::page_data());
    #[cfg(not(feature = "ssr"))]
    let script = String::new();
    document(options, Some(script), App)
}

/// The HTML document around the admin panel, hydrated by the panel's own Wasm, so that
/// volunteers never download the panel and admins never download the leaderboard.
pub fn admin_shell(options: LeptosOptions) -> impl IntoView {
    let mut options = options;
    options.output_name = ADMIN_BUNDLE.into();
    document(options, None, AdminApp)
}

/// `<html>` around `app`, hydrated by the Wasm bundle of `options`, with the page's data
/// (`data_script`) when it has some.
fn document<V: IntoView + 'static>(
    options: LeptosOptions,
    data_script: Option<String>,
    app: fn() -> V,
) -> impl IntoView {
    #[cfg(feature = "ssr")]
    csp::send_page_policy();
    let data = data_script.map(|script| {
        view! { <script id=data::PAGE_DATA_ID type="application/json" inner_html=script></script> }
    });
    view! {
        <!DOCTYPE html>
        <html lang="en">
            <head>
                <meta charset="utf-8"/>
                <meta name="viewport" content="width=device-width, initial-scale=1"/>
                <meta name="color-scheme" content="light dark"/>
                <link rel="icon" href="/favicon.svg" type="image/svg+xml"/>
                {data}
                <HydrationScripts options/>
                <MetaTags/>
            </head>
            <body>
                {app()}
            </body>
        </html>
    }
}

/// The top bar of every page. In the panel its link leaves for the public app, so the panel's
/// router must not handle it: `external` makes it a full page load.
#[component]
fn TopBar(#[prop(optional)] external: bool) -> impl IntoView {
    view! {
        <header class="top">
            <a class="brand" href="/" rel=external.then_some("external")>"Tracker"</a>
        </header>
    }
}

/// The public app: the project list (`/`) and the leaderboards (`/SLUG/`). It has no client-side
/// router: its two pages link to each other with plain links, and a router is some 20 KB of the
/// Wasm every volunteer loads. The server reads a page's data first and renders the page whole
/// from it, so it is usable before the Wasm loads; the browser hydrates it from the same data
/// ([`data`]). Which page it is follows from the data: the server read the project list for
/// `/`, a board for `/SLUG/`, and nothing for an unknown path or project.
#[component]
pub fn App() -> impl IntoView {
    provide_meta_context();
    let page = match data::page_data() {
        data::PageData { error: Some(e), .. } => view! { <p class="error">{e}</p> }.into_any(),
        data::PageData {
            projects: Some(projects),
            contributors,
            fleet,
            ..
        } => {
            let contributors = contributors.unwrap_or_default();
            view! { <pages::HomePage projects contributors fleet=fleet.unwrap_or_default()/> }
                .into_any()
        }
        data::PageData {
            board: Some((board, charts)),
            ..
        } => view! { <pages::LeaderboardPage initial=board charts/> }.into_any(),
        _ => view! { <pages::NotFound/> }.into_any(),
    };
    view! {
        <Stylesheet id="leptos" href="/pkg/tracker.css"/>
        <Title text="Tracker"/>
        <TopBar/>
        <main>{page}</main>
    }
}

/// The admin panel, an app of its own with its own Wasm bundle ([`ADMIN_BUNDLE`]). Its pages
/// load their data from the admin JSON API after hydration; the server renders the frame.
#[component]
pub fn AdminApp() -> impl IntoView {
    use pages::admin;
    provide_meta_context();
    view! {
        <Stylesheet id="leptos" href="/pkg/tracker.css"/>
        <Title text="Admin · Tracker"/>
        <Router>
            <TopBar external=true/>
            <main>
                <Routes fallback=pages::NotFound>
                    <Route path=path!("/admin") view=admin::AdminPage/>
                    <Route path=path!("/admin/setup") view=admin::SetupPage/>
                    <Route path=path!("/admin/audit") view=admin::AuditPage/>
                    <Route path=path!("/admin/users") view=admin::UsersPage/>
                    <Route path=path!("/admin/blocks") view=admin::BlocksPage/>
                    <Route path=path!("/admin/warrior") view=admin::WarriorPage/>
                    <Route path=path!("/admin/fleet") view=admin::FleetPage/>
                    <Route path=path!("/admin/tokens") view=admin::TokensPage/>
                    <Route path=path!("/admin/pipelines") view=admin::PipelinesPage/>
                    <Route path=path!("/admin/p/:slug") view=admin::ProjectAdminPage/>
                    <Route path=path!("/admin/p/:slug/:section") view=admin::ProjectAdminPage/>
                </Routes>
            </main>
        </Router>
    }
}
