//! Public JSON: health and the old leaderboard's `stats.json`.

use super::{ApiError, ApiResult};
use crate::AppState;
use axum::{
    extract::{Path, State},
    http::StatusCode,
    response::{IntoResponse, Response},
    Json,
};
use serde_json::json;

/// `GET /healthz`: 200 with the Redis round trip, 503 when Redis does not answer.
pub async fn check_health(State(state): State<AppState>) -> Response {
    match tokio::time::timeout(std::time::Duration::from_secs(2), state.store.ping()).await {
        Ok(Ok(rtt)) => {
            Json(json!({ "status": "ok", "redis_rtt_ms": rtt * 1000.0 })).into_response()
        }
        Ok(Err(e)) => unhealthy(e.to_string()),
        Err(_) => unhealthy("redis did not answer in 2 s".into()),
    }
}

fn unhealthy(reason: String) -> Response {
    (
        StatusCode::SERVICE_UNAVAILABLE,
        Json(json!({ "status": "unavailable", "error": reason })),
    )
        .into_response()
}

/// `GET /SLUG/stats.json`, as PROTOCOL.md describes.
///
/// ```text
/// {"domain_bytes": {d: n}, "downloader_bytes": {dl: n}, "downloader_count": {dl: n},
///  "downloaders": [dl...], "total_items_done": n, "total_items": n, "total_items_out": n,
///  "total_bytes": n, "counts": {"todo": n, "out": n, "done": n}}
/// ```
pub async fn get_stats(
    State(state): State<AppState>,
    Path(slug): Path<String>,
) -> ApiResult<Response> {
    if !crate::store::valid_slug(&slug) {
        return Err(ApiError::NotFound("No such project.".into()));
    }
    let Some(b) = state.store.leaderboard(&slug, -1, 0).await? else {
        return Err(ApiError::NotFound("No such project.".into()));
    };
    let bytes: serde_json::Map<_, _> = b
        .downloaders
        .iter()
        .map(|d| (d.name.clone(), json!(d.bytes)))
        .collect();
    let count: serde_json::Map<_, _> = b
        .downloaders
        .iter()
        .map(|d| (d.name.clone(), json!(d.items)))
        .collect();
    let names: Vec<&str> = b.downloaders.iter().map(|d| d.name.as_str()).collect();
    Ok(Json(json!({
        "domain_bytes": b.domain_bytes,
        "downloader_bytes": bytes,
        "downloader_count": count,
        "downloaders": names,
        "total_items_done": b.counts.done,
        "total_items": b.counts.done + b.counts.todo + b.counts.out,
        "total_items_out": b.counts.out,
        "total_bytes": b.total_bytes,
        "counts": b.counts,
    }))
    .into_response())
}
