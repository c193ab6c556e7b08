//! Items given back and looked up: `POST /SLUG/release` and `GET /SLUG/items/ITEM.json`.

use super::{parse, Caller, ReleaseBody};
use crate::api::pipeline::CallerPipeline;
use crate::openapi::ProjectPath;
use crate::web::{is_admin, known_project, within_deadline, ApiError, ApiResult};
use crate::{
    limits::valid_downloader,
    state::AppState,
    store::{now_ms, ReleaseRefusal, Releaser},
};
use axum::{
    body::Bytes,
    extract::{Path, Query, State},
    http::HeaderMap,
    response::{IntoResponse, Response},
    Json,
};
use serde::Deserialize;

/// `POST /SLUG/release`: the claimant (or an admin) gives items back; a pipeline's claim,
/// only that pipeline. One item (`item`): `Released OK.`, 404 when it is not claimed, 403 when
/// the caller may not. A list (`items`, today's seesaw): exactly `{"items": [...]}`, the items
/// released; those the caller may not release, or not claimed, are left as they are and left
/// out of the answer.
#[utoipa::path(
    post,
    path = "/{slug}/release",
    tag = "warrior",
    params(ProjectPath),
    request_body(content = ReleaseBody, content_type = "application/json"),
    responses(
        (status = 200, description = "`Released OK.` (one item), or `{\"items\": [...]}` (a list): the items released", body = String),
        (status = 400, description = "Neither `item` nor `items`, both, an item out of bounds, or more items than a claim holds"),
        (status = 403, description = "One item: the caller is not its claimant (or calls from another address, or another pipeline)"),
        (status = 404, description = "One item: it is not claimed"),
    ),
)]
pub async fn release_item(
    State(state): State<AppState>,
    Path(slug): Path<String>,
    caller: Caller,
    pipeline: CallerPipeline,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<Response> {
    let req: ReleaseBody = parse(&body)?;
    let limits = &state.config.limits;
    let (items, list) = match (req.item, req.items) {
        (Some(item), None) => (vec![item], false),
        (None, Some(items)) => (items, true),
        (Some(_), Some(_)) => {
            return Err(ApiError::bad_request(
                "Send either item (one) or items (a list), not both.",
            ))
        }
        (None, None) => {
            return Err(ApiError::bad_request(
                "Missing item (one) or items (a list).",
            ))
        }
    };
    if items.len() > limits.multi {
        return Err(ApiError::bad_request(format!(
            "At most {} items in one release.",
            limits.multi
        )));
    }
    if let Some(bad) = items.iter().find(|i| i.is_empty() || i.len() > limits.item) {
        return Err(ApiError::bad_request(format!(
            "Each item must be 1 to {} bytes (one is {}).",
            limits.item,
            bad.len()
        )));
    }
    known_project(&state, &slug).await?;
    let admin = is_admin(&headers, state.config.admin_token.as_deref());
    if !admin && !valid_downloader(&req.downloader) {
        return Err(ApiError::bad_request("Invalid downloader name."));
    }
    if valid_downloader(&req.downloader) {
        state.fleet.saw(
            &slug,
            &req.downloader,
            &caller.ip,
            &caller.user_agent,
            req.version.as_deref().unwrap_or_default(),
            0,
        );
    }
    let releaser = Releaser {
        who: &req.downloader,
        ip: &caller.ip,
        admin,
        pipeline: pipeline.name(),
    };
    let release = state
        .store
        .queue()
        .release_items_as(&slug, &items, &releaser, now_ms());
    let answer = within_deadline(&state, async { Ok(release.await?) }).await?;
    if list {
        // seesaw takes exactly this object: any other key is "invalid release response".
        return Ok(Json(serde_json::json!({ "items": answer.released })).into_response());
    }
    if !answer.released.is_empty() {
        return Ok("Released OK.\n".into_response());
    }
    match answer.refused.first().map(|r| r.err) {
        Some(ReleaseRefusal::NotClaimant) => Err(ApiError::forbidden(
            "Only the claimant, from the IP it claimed from, or an admin may release it.",
        )),
        Some(ReleaseRefusal::OtherPipeline) => Err(ApiError::forbidden(
            "The item is claimed by another pipeline; only it, or an admin, may release it.",
        )),
        Some(ReleaseRefusal::NotClaimed) | None => {
            Err(ApiError::not_found("The item is not claimed."))
        }
    }
}

/// Query of `GET /SLUG/items/ITEM.json`.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ItemQuery {
    #[serde(default)]
    history: Option<String>,
}

/// `GET /SLUG/items/ITEM.json`: `{"status": ..., "downloader": ...}`; with `?history=1` and the
/// admin token, also the item's last transitions.
#[utoipa::path(
    get,
    path = "/{slug}/items/{*item}",
    tag = "warrior",
    params(ProjectPath, ("item" = String, Path, description = "The item name (the rest of the path)"), ItemQuery),
    responses(
        (status = 200, description = "`{\"status\": \"todo\"|\"out\"|\"done\"|\"failed\"|null, \"downloader\": ...}` (`downloader` only when out); the item name may end in `.json`", content_type = "application/json"),
    ),
)]
pub async fn get_item(
    State(state): State<AppState>,
    Path((slug, item)): Path<(String, String)>,
    Query(query): Query<ItemQuery>,
    headers: HeaderMap,
) -> ApiResult<Response> {
    known_project(&state, &slug).await?;
    let item = item
        .strip_suffix(".json")
        .ok_or_else(|| ApiError::not_found("Expected ITEM.json."))?;
    let status = state.store.queue().item_status(&slug, item).await?;
    let mut body = serde_json::json!({ "status": status.state });
    if let Some(d) = status.downloader {
        body["downloader"] = d.into();
    }
    if query.history.as_deref().is_some_and(|h| h != "0") {
        if !is_admin(&headers, state.config.admin_token.as_deref()) {
            return Err(ApiError::forbidden("The item history is for admins."));
        }
        body["history"] = serde_json::from_str(&status.timeline).unwrap_or_default();
    }
    Ok(Json(body).into_response())
}
