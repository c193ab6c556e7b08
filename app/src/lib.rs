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
    path, Lazy, SsrMode,
};

/// The HTML document around the app, rendered on the server.
pub fn shell(options: LeptosOptions) -> impl IntoView {
    view! {
        <!DOCTYPE html>
        <html lang="en">
            <head>
                <meta charset="utf-8"/>
                <meta name="viewport" content="width=device-width, initial-scale=1"/>
                <meta name="color-scheme" content="light dark"/>
                <link rel="icon" href="/favicon.svg" type="image/svg+xml"/>
                <HydrationScripts options/>
                <MetaTags/>
            </head>
            <body>
                <App/>
            </body>
        </html>
    }
}

/// The app: routes to the pages.
#[component]
pub fn App() -> impl IntoView {
    provide_meta_context();
    view! {
        <Stylesheet id="leptos" href="/pkg/tracker.css"/>
        <Title text="Tracker"/>
        <Router>
            <header class="top">
                <a class="brand" href="/">"Tracker"</a>
            </header>
            <main>
                <Routes fallback=pages::NotFound>
                    // Async: the whole page is in the first response, usable before the Wasm loads.
                    <Route path=path!("/") view=pages::HomePage ssr=SsrMode::Async/>
                    <Route path=path!("/:slug/") view=pages::LeaderboardPage ssr=SsrMode::Async/>
                    // The panel: split out of the main Wasm (`cargo leptos build --split`),
                    // loaded only when an admin opens it.
                    <Route path=path!("/admin") view={Lazy::<panel::Overview>::new()}/>
                    <Route path=path!("/admin/setup") view={Lazy::<panel::Setup>::new()}/>
                    <Route path=path!("/admin/audit") view={Lazy::<panel::Audit>::new()}/>
                    <Route path=path!("/admin/users") view={Lazy::<panel::Users>::new()}/>
                    <Route path=path!("/admin/blocks") view={Lazy::<panel::Blocks>::new()}/>
                    <Route path=path!("/admin/warrior") view={Lazy::<panel::Warrior>::new()}/>
                    <Route path=path!("/admin/tokens") view={Lazy::<panel::Tokens>::new()}/>
                    <Route path=path!("/admin/p/:slug") view={Lazy::<panel::Project>::new()}/>
                </Routes>
            </main>
        </Router>
    }
}

/// The admin panel's routes, each a lazily loaded view: in the browser its code is a separate
/// Wasm chunk fetched when an admin page is opened, so volunteers never download it.
mod panel {
    use crate::pages::admin;
    use leptos::prelude::*;
    use leptos_router::{lazy_route, LazyRoute};

    /// Declares `$route`, showing the component `$page`.
    macro_rules! lazy_page {
        ($route:ident, $page:ident) => {
            #[doc = concat!("The route of [`admin::", stringify!($page), "`].")]
            pub struct $route;

            #[lazy_route]
            impl LazyRoute for $route {
                fn data() -> Self {
                    Self
                }

                fn view(_this: Self) -> AnyView {
                    admin::$page().into_any()
                }
            }
        };
    }

    lazy_page!(Overview, AdminPage);
    lazy_page!(Setup, SetupPage);
    lazy_page!(Audit, AuditPage);
    lazy_page!(Users, UsersPage);
    lazy_page!(Blocks, BlocksPage);
    lazy_page!(Warrior, WarriorPage);
    lazy_page!(Tokens, TokensPage);
    lazy_page!(Project, ProjectAdminPage);
}
