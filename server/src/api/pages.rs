//! The public pages' data as JSON, in the shapes of `app::model`. A live leaderboard re-reads
//! its downloaders' window sums and its tracker statistics from here (`app::data`); the pages'
//! first data comes with the page itself. The project list, a page and its charts are here too,
//! for tools.

use crate::openapi::ProjectPath;
use crate::state::AppState;
use crate::web::{ApiError, ApiResult};
use app::backend::Backend;
use axum::{
    extract::{Path, Query, State},
    http::StatusCode,
    response::{IntoResponse, Response},
    Json,
};
use serde::Deserialize;

/// `?window=MINUTES` (default 5; the backend keeps it within 1 to 1440).
#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct Window {
    #[serde(default = "default_window")]
    window: u64,
}

fn default_window() -> u64 {
    5
}

/// A read that failed on our side: 503 with the backend's reason (already logged).
fn unavailable(reason: String) -> Response {
    (StatusCode::SERVICE_UNAVAILABLE, format!("{reason}\n")).into_response()
}

fn answer<T: serde::Serialize>(read: Result<Option<T>, String>) -> ApiResult<Response> {
    match read {
        Ok(Some(v)) => Ok(Json(v).into_response()),
        Ok(None) => Err(ApiError::no_project()),
        Err(reason) => Ok(unavailable(reason)),
    }
}

/// `GET /board/projects.json`: every project's summary (`Vec<ProjectSummary>`).
#[utoipa::path(get, path = "/board/projects.json", tag = "leaderboard")]
pub async fn get_projects(State(state): State<AppState>) -> ApiResult<Response> {
    answer(Backend::projects(&state.store).await.map(Some))
}

/// `GET /board/SLUG/page.json?window=M`: the leaderboard page's data (`Leaderboard`).
#[utoipa::path(
    get,
    path = "/board/{slug}/page.json",
    tag = "leaderboard",
    params(ProjectPath, Window)
)]
pub async fn get_page(
    State(state): State<AppState>,
    Path(slug): Path<String>,
    Query(w): Query<Window>,
) -> ApiResult<Response> {
    answer(Backend::leaderboard(&state.store, &slug, w.window).await)
}

/// `GET /board/SLUG/charts.json`: the page's charts (`ChartData`).
#[utoipa::path(
    get,
    path = "/board/{slug}/charts.json",
    tag = "leaderboard",
    params(ProjectPath)
)]
pub async fn get_charts(
    State(state): State<AppState>,
    Path(slug): Path<String>,
) -> ApiResult<Response> {
    answer(Backend::charts(&state.store, &slug).await)
}

/// `GET /board/SLUG/window.json?window=M`: items and bytes of the top downloaders over the
/// last M minutes (`[[name, items, bytes], ...]`).
#[utoipa::path(
    get,
    path = "/board/{slug}/window.json",
    tag = "leaderboard",
    params(ProjectPath, Window)
)]
pub async fn get_window(
    State(state): State<AppState>,
    Path(slug): Path<String>,
    Query(w): Query<Window>,
) -> ApiResult<Response> {
    crate::web::known_project(&state, &slug).await?;
    answer(
        Backend::downloader_window(&state.store, &slug, w.window)
            .await
            .map(Some),
    )
}

/// `GET /board/SLUG/figures.json`: the tracker statistics of the last hour (`TrackerStats`).
#[utoipa::path(
    get,
    path = "/board/{slug}/figures.json",
    tag = "leaderboard",
    params(ProjectPath)
)]
pub async fn get_figures(
    State(state): State<AppState>,
    Path(slug): Path<String>,
) -> ApiResult<Response> {
    crate::web::known_project(&state, &slug).await?;
    answer(
        Backend::tracker_figures(&state.store, &slug)
            .await
            .map(Some),
    )
}
