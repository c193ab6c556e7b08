//! The Leptos UI: the shell, the routes, the pages, their data (`data`), and the types shared
//! by the server and the browser.

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
/// `frontend` with its `admin` feature by `scripts/build-admin-wasm.sh`.
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
/// Wasm every volunteer loads. The server renders each page whole from the data it read first
/// ([`data`]), so it is usable before the Wasm loads; the browser hydrates the page of its own
/// address from the same data.
#[component]
pub fn App() -> impl IntoView {
    provide_meta_context();
    let data::PageData {
        projects,
        board,
        error,
    } = data::page_data();
    let failed = |e: String| view! { <p class="error">{e}</p> }.into_any();
    let page = match (public_page(&request_path()), error) {
        (PublicPage::Missing, _) => view! { <pages::NotFound/> }.into_any(),
        (_, Some(e)) => failed(e),
        (PublicPage::Home, None) => {
            let projects = projects.unwrap_or_default();
            view! { <pages::HomePage projects/> }.into_any()
        }
        (PublicPage::Board(_), None) => match board {
            Some((board, charts)) => {
                view! { <pages::LeaderboardPage initial=board charts/> }.into_any()
            }
            None => view! { <pages::NotFound/> }.into_any(),
        },
    };
    view! {
        <Stylesheet id="leptos" href="/pkg/tracker.css"/>
        <Title text="Tracker"/>
        <TopBar/>
        <main>{page}</main>
    }
}

/// What a path of the public app shows.
#[derive(Debug, PartialEq)]
pub(crate) enum PublicPage {
    Home,
    /// A project's leaderboard, by slug (the page answers 404 for an unknown project).
    Board(String),
    Missing,
}

/// `/` is the project list, `/SEGMENT/` a leaderboard, anything else not found.
pub(crate) fn public_page(path: &str) -> PublicPage {
    if path == "/" {
        return PublicPage::Home;
    }
    match path.strip_prefix('/').and_then(|p| p.strip_suffix('/')) {
        Some(slug) if !slug.is_empty() && !slug.contains('/') => PublicPage::Board(slug.into()),
        _ => PublicPage::Missing,
    }
}

/// The path of the page being rendered: the request's on the server, the address bar's in the
/// browser.
fn request_path() -> String {
    #[cfg(feature = "ssr")]
    return use_context::<http::request::Parts>()
        .map(|parts| parts.uri.path().to_string())
        .unwrap_or_default();
    #[cfg(all(feature = "hydrate", not(feature = "ssr")))]
    return web_sys::window()
        .and_then(|w| w.location().pathname().ok())
        .unwrap_or_default();
    #[cfg(not(any(feature = "ssr", feature = "hydrate")))]
    return String::new();
}

#[cfg(test)]
mod tests {
    use super::{public_page, PublicPage};

    #[test]
    fn paths_choose_the_public_page() {
        assert_eq!(public_page("/"), PublicPage::Home);
        assert_eq!(
            public_page("/warrior/"),
            PublicPage::Board("warrior".into())
        );
        for missing in ["", "//", "/warrior", "/a/b/", "/admin/x"] {
            assert_eq!(public_page(missing), PublicPage::Missing, "{missing}");
        }
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
                    <Route path=path!("/admin/tokens") view=admin::TokensPage/>
                    <Route path=path!("/admin/p/:slug") view=admin::ProjectAdminPage/>
                </Routes>
            </main>
        </Router>
    }
}
