//! Pipeline tokens (global admins): listed, issued (the secret shown once, stored as its
//! SHA-256) and revoked, through [`crate::ops::pipelines`].

use super::auth::Caller;
use crate::{
    ops::pipelines::{self, NewPipeline},
    state::AppState,
    store::{CreatedPipeline, Pipeline},
    web::ApiResult,
};
pub use app::model::admin::PipelineRequest;
use axum::{
    extract::{Path, State},
    http::StatusCode,
    Json,
};

/// `GET /admin/api/pipelines`: every pipeline, by name (never their secrets).
#[utoipa::path(
    get,
    path = "/pipelines",
    tag = "admin",
    responses((status = 200, body = [Pipeline])),
)]
pub async fn list_pipelines(
    State(state): State<AppState>,
    caller: Caller,
) -> ApiResult<Json<Vec<Pipeline>>> {
    caller.must_be_global()?;
    Ok(Json(state.store.people().pipelines().await?))
}

/// `POST /admin/api/pipelines`: issues a pipeline token; the answer is the only place its
/// secret appears.
#[utoipa::path(
    post,
    path = "/pipelines",
    tag = "admin",
    responses((status = 201, body = CreatedPipeline)),
)]
pub async fn create_pipeline(
    State(state): State<AppState>,
    caller: Caller,
    Json(req): Json<PipelineRequest>,
) -> ApiResult<(StatusCode, Json<CreatedPipeline>)> {
    caller.must_be_global()?;
    let new = NewPipeline {
        name: req.name,
        tags: req.tags,
        match_only: req.match_only,
    };
    let created = pipelines::create(&state.store, &caller.actor(), new).await?;
    Ok((StatusCode::CREATED, Json(created)))
}

/// `DELETE /admin/api/pipelines/NAME`: revokes a pipeline token.
#[utoipa::path(
    delete,
    path = "/pipelines/{name}",
    tag = "admin",
    params(("name" = String, Path, description = "The pipeline's name")),
)]
pub async fn revoke_pipeline(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
) -> ApiResult<StatusCode> {
    caller.must_be_global()?;
    pipelines::revoke(&state.store, &caller.actor(), &name).await?;
    Ok(StatusCode::NO_CONTENT)
}
