//! The pages: the project list, one project's leaderboard, and the admin panel.

pub mod admin;
mod home;
mod leaderboard;

pub use home::HomePage;
pub use leaderboard::LeaderboardPage;

use leptos::prelude::*;

/// The page for an unknown path, in either app (its link is a full page load, as the panel's
/// router does not know `/`).
#[component]
pub fn NotFound() -> impl IntoView {
    #[cfg(feature = "ssr")]
    if let Some(resp) = use_context::<leptos_axum::ResponseOptions>() {
        resp.set_status(http::StatusCode::NOT_FOUND);
    }
    view! {
        <section class="card">
            <h1>"Not found"</h1>
            <p>"There is nothing here. " <a href="/" rel="external">"See all projects"</a> "."</p>
        </section>
    }
}
