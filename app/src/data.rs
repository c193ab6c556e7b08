//! The public pages' data. On the server it is read from the backend; in the browser it is a
//! GET of the JSON the server answers with the same types (`/board/...`, server
//! `api/pages.rs`). Plain GETs rather than server functions keep the server-function client out
//! of the Wasm every volunteer loads. Both sides have the same functions:
//!
//! - `projects()`: every project's summary, for the front page;
//! - `leaderboard(slug, window)`: one project's page data with downloader sums over the last
//!   `window` minutes, `None` when there is no such project (the page then answers 404);
//! - `charts(slug)`: one project's charts, `None` when there is no such project;
//! - `downloader_window(slug, window)`: items and bytes per top downloader over the last
//!   `window` minutes (at most a day);
//! - `tracker_figures(slug)`: one project's tracker statistics of the last hour.

#[cfg(feature = "ssr")]
pub use server_side::*;

#[cfg(not(feature = "ssr"))]
pub use browser_side::*;

#[cfg(feature = "ssr")]
mod server_side {
    use crate::{
        backend::SharedBackend,
        model::{ChartData, Leaderboard, ProjectSummary, TrackerStats},
    };
    use leptos::prelude::use_context;

    fn backend() -> Result<SharedBackend, String> {
        use_context::<SharedBackend>().ok_or_else(|| "The page has no backend.".to_string())
    }

    pub async fn projects() -> Result<Vec<ProjectSummary>, String> {
        backend()?.projects().await
    }

    pub async fn leaderboard(slug: String, window: u64) -> Result<Option<Leaderboard>, String> {
        let board = backend()?.leaderboard(&slug, window).await?;
        if board.is_none() {
            if let Some(resp) = use_context::<leptos_axum::ResponseOptions>() {
                resp.set_status(http::StatusCode::NOT_FOUND);
            }
        }
        Ok(board)
    }

    pub async fn charts(slug: String) -> Result<Option<ChartData>, String> {
        backend()?.charts(&slug).await
    }

    pub async fn downloader_window(
        slug: String,
        window: u64,
    ) -> Result<Vec<(String, u64, u64)>, String> {
        backend()?.downloader_window(&slug, window).await
    }

    pub async fn tracker_figures(slug: String) -> Result<TrackerStats, String> {
        backend()?.tracker_figures(&slug).await
    }
}

#[cfg(not(feature = "ssr"))]
mod browser_side {
    use crate::model::{ChartData, Leaderboard, ProjectSummary, TrackerStats};

    pub async fn projects() -> Result<Vec<ProjectSummary>, String> {
        found(get("/board/projects.json".into()).await?)
    }

    pub async fn leaderboard(slug: String, window: u64) -> Result<Option<Leaderboard>, String> {
        get(format!("/board/{}/page.json?window={window}", esc(&slug))).await
    }

    pub async fn charts(slug: String) -> Result<Option<ChartData>, String> {
        get(format!("/board/{}/charts.json", esc(&slug))).await
    }

    pub async fn downloader_window(
        slug: String,
        window: u64,
    ) -> Result<Vec<(String, u64, u64)>, String> {
        found(get(format!("/board/{}/window.json?window={window}", esc(&slug))).await?)
    }

    pub async fn tracker_figures(slug: String) -> Result<TrackerStats, String> {
        found(get(format!("/board/{}/figures.json", esc(&slug))).await?)
    }

    /// A GET's JSON: the value, `None` for 404, or the reason.
    #[cfg(feature = "hydrate")]
    async fn get<T: serde::de::DeserializeOwned>(url: String) -> Result<Option<T>, String> {
        // The browser's fetch is not `Send`; resources want `Send` futures, and the browser
        // has one thread.
        send_wrapper::SendWrapper::new(async move {
            let resp = gloo_net::http::Request::get(&url)
                .send()
                .await
                .map_err(|e| e.to_string())?;
            match resp.status() {
                200 => resp.json::<T>().await.map(Some).map_err(|e| e.to_string()),
                404 => Ok(None),
                status => Err(format!("The tracker answered {status}.")),
            }
        })
        .await
    }

    /// Neither the server nor the browser: nothing to fetch with.
    #[cfg(not(feature = "hydrate"))]
    async fn get<T>(_url: String) -> Result<Option<T>, String> {
        Err("No way to fetch page data in this build.".into())
    }

    /// Data that must exist: a 404 (the project is gone) is an error.
    fn found<T>(got: Option<T>) -> Result<T, String> {
        got.ok_or_else(|| "No such project.".to_string())
    }

    /// `slug` as a path segment.
    fn esc(slug: &str) -> String {
        #[cfg(feature = "hydrate")]
        return String::from(js_sys::encode_uri_component(slug));
        #[cfg(not(feature = "hydrate"))]
        return slug.to_string();
    }
}
