//! `GET`/`PUT /admin/api/SLUG/dictionary`: the zstd dictionary a project's grab scripts
//! compress their WARCs with (`GET /dictionary?project=SLUG`), uploaded from the panel as
//! `tracker dictionary set` does from a file.

use super::auth::Caller;
use crate::openapi::ProjectPath;
use crate::{
    state::AppState,
    store::dictionary::{dictionary_problem, DictionaryInfo},
    web::{known_project, ApiError, ApiResult},
};
use axum::{
    body::Bytes,
    extract::{Path, State},
    http::StatusCode,
    Json,
};

/// `GET /admin/api/SLUG/dictionary`: the dictionary served now, or `null`.
#[utoipa::path(
    get,
    path = "/{slug}/dictionary",
    tag = "admin",
    params(ProjectPath),
    responses((status = 200, body = Option<DictionaryInfo>)),
)]
pub async fn show_dictionary(
    State(state): State<AppState>,
    caller: Caller,
    Path(slug): Path<String>,
) -> ApiResult<Json<Option<DictionaryInfo>>> {
    caller.may_view(&slug)?;
    known_project(&state, &slug).await?;
    Ok(Json(state.store.projects().dictionary(&slug).await?))
}

/// `PUT /admin/api/SLUG/dictionary` with the dictionary as the body (raw, or in a zstd frame
/// that records its size; at most [`crate::store::dictionary::MAX_BYTES`]): served from now
/// on under a new id; the ones before stay downloadable by id. 400 with the reason when the
/// bytes do not load as a zstd dictionary; audited (`dictionary.set`).
#[utoipa::path(
    put,
    path = "/{slug}/dictionary",
    tag = "admin",
    params(ProjectPath),
    request_body(content = Vec<u8>, content_type = "application/octet-stream", description = "The dictionary: raw, or .zst with its size"),
    responses((status = 200, body = DictionaryInfo)),
)]
pub async fn set_dictionary(
    State(state): State<AppState>,
    caller: Caller,
    Path(slug): Path<String>,
    body: Bytes,
) -> ApiResult<Json<DictionaryInfo>> {
    caller.may_change(&slug)?;
    known_project(&state, &slug).await?;
    // Loading a dictionary (and decompressing a framed one) is CPU work: off the async workers.
    let checked = body.clone();
    let problem = tokio::task::spawn_blocking(move || dictionary_problem(&checked))
        .await
        .map_err(|e| {
            tracing::error!(error = %e, "dictionary check failed");
            ApiError::Client(StatusCode::INTERNAL_SERVER_ERROR, "Internal error.".into())
        })?;
    if let Some(why) = problem {
        return Err(ApiError::bad_request(format!(
            "Not a zstd dictionary the grab scripts can use: {why}."
        )));
    }
    let info = state.store.projects().set_dictionary(&slug, &body).await?;
    caller
        .record(
            &state,
            "dictionary.set",
            &slug,
            info.bytes,
            format!("id {} sha256 {}", info.id, info.sha256),
        )
        .await?;
    Ok(Json(info))
}
