//! Claims in the panel: grouped by downloader, released by filter (with a dry run), and the
//! failed items (list, requeue, drop).

use super::{
    auth::Caller,
    items::{parse_regex, Affected},
};
use crate::openapi::ProjectPath;
use crate::{
    state::AppState,
    store::{now_ms, ClaimFilter, ClaimGroup},
    web::{known_project, ApiError, ApiResult},
};
use app::model::admin::FailedList;
pub use app::model::admin::{Release, ResolveFailed};
use axum::{
    extract::{Path, State},
    Json,
};

/// `GET /admin/api/SLUG/claims`: claims grouped by downloader.
#[utoipa::path(
    get,
    path = "/{slug}/claims",
    tag = "admin",
    params(ProjectPath),
    responses((status = 200, body = [ClaimGroup])),
)]
pub async fn list_claims(
    State(state): State<AppState>,
    caller: Caller,
    Path(slug): Path<String>,
) -> ApiResult<Json<Vec<ClaimGroup>>> {
    caller.may_view(&slug)?;
    known_project(&state, &slug).await?;
    Ok(Json(state.store.queue().claim_groups(&slug).await?))
}

/// `POST /admin/api/SLUG/release`: gives matching claims back to `todo`.
#[utoipa::path(
    post,
    path = "/{slug}/release",
    tag = "admin",
    params(ProjectPath),
    responses((status = 200, body = Affected)),
)]
pub async fn release_claims(
    State(state): State<AppState>,
    caller: Caller,
    Path(slug): Path<String>,
    Json(req): Json<Release>,
) -> ApiResult<Json<Affected>> {
    caller.may_change(&slug)?;
    known_project(&state, &slug).await?;
    let now = now_ms();
    let older = req
        .older_than_s
        .map(|s| now.saturating_sub(s.saturating_mul(1000)));
    let before_ms = match (req.before_ms, older) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    let filter = ClaimFilter {
        before_ms,
        downloader: req.downloader.clone().filter(|d| !d.is_empty()),
        item: req.item.clone().filter(|i| !i.is_empty()),
        regex: parse_regex(req.regex.as_deref().unwrap_or_default())?,
    };
    if filter.before_ms.is_none()
        && filter.downloader.is_none()
        && filter.item.is_none()
        && filter.regex.is_none()
    {
        return Err(ApiError::bad_request(
            "Say which claims: before_ms, older_than_s, downloader, item or regex.",
        ));
    }
    let count = state
        .store
        .queue()
        .release_matching(&slug, &filter, &caller.name, now, req.dry_run)
        .await?;
    if !req.dry_run {
        let detail = format!(
            "before_ms={:?} downloader={:?} item={:?} regex={:?}",
            filter.before_ms, filter.downloader, filter.item, req.regex
        );
        caller
            .record(&state, "claims.release", &slug, count, detail)
            .await?;
    }
    Ok(Json(Affected {
        count,
        dry_run: req.dry_run,
    }))
}

/// `GET /admin/api/SLUG/failed`: failed items (up to 1000) and their number.
#[utoipa::path(
    get,
    path = "/{slug}/failed",
    tag = "admin",
    params(ProjectPath),
    responses((status = 200, body = FailedList)),
)]
pub async fn list_failed(
    State(state): State<AppState>,
    caller: Caller,
    Path(slug): Path<String>,
) -> ApiResult<Json<FailedList>> {
    caller.may_view(&slug)?;
    known_project(&state, &slug).await?;
    let (items, total) = state.store.queue().failed_items(&slug, 1000).await?;
    Ok(Json(FailedList { items, total }))
}

/// `POST /admin/api/SLUG/failed`: requeues or drops failed items.
#[utoipa::path(
    post,
    path = "/{slug}/failed",
    tag = "admin",
    params(ProjectPath),
    responses((status = 200, body = Affected)),
)]
pub async fn resolve_failed(
    State(state): State<AppState>,
    caller: Caller,
    Path(slug): Path<String>,
    Json(req): Json<ResolveFailed>,
) -> ApiResult<Json<Affected>> {
    caller.may_change(&slug)?;
    known_project(&state, &slug).await?;
    let requeue = match req.action.as_str() {
        "requeue" => true,
        "drop" => false,
        _ => return Err(ApiError::bad_request("action is requeue or drop.")),
    };
    let count = state
        .store
        .queue()
        .resolve_failed(
            &slug,
            req.items.as_deref(),
            requeue,
            &caller.name,
            now_ms(),
            req.dry_run,
        )
        .await?;
    if !req.dry_run {
        caller
            .record(&state, &format!("failed.{}", req.action), &slug, count, "")
            .await?;
    }
    Ok(Json(Affected {
        count,
        dry_run: req.dry_run,
    }))
}
