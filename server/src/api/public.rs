//! Public JSON: health and the old leaderboard's `stats.json`.

use crate::openapi::ProjectPath;
use crate::web::{ApiError, ApiResult};
use crate::{
    hub::LegacyRates,
    keys::Counter,
    state::AppState,
    store::{stats, tracker_stats},
};
use axum::{
    extract::{Path, State},
    http::StatusCode,
    response::{IntoResponse, Response},
    Json,
};
use serde_json::json;

/// `GET /healthz`: 200 with the Redis round trip, and `redis_problems` when the last check of
/// how Redis is set found it evicting keys or too old (it still answers, so the tracker stays
/// up); 503 with `Retry-After` while Redis does not answer (as the process's probe last found,
/// or this ping within a second).
#[utoipa::path(get, path = "/healthz", tag = "public")]
pub async fn check_health(State(state): State<AppState>) -> Response {
    if !state.redis.is_up() {
        return unhealthy("reconnecting: redis does not answer".into());
    }
    match tokio::time::timeout(std::time::Duration::from_secs(1), state.store.ping()).await {
        Ok(Ok(rtt)) => {
            let mut health = json!({ "status": "ok", "redis_rtt_ms": rtt * 1000.0 });
            let problems = state.redis.problems();
            if !problems.is_empty() {
                health["redis_problems"] = problems.into();
            }
            Json(health).into_response()
        }
        Ok(Err(e)) => unhealthy(e.to_string()),
        Err(_) => unhealthy("redis did not answer in 1 s".into()),
    }
}

fn unhealthy(reason: String) -> Response {
    (
        StatusCode::SERVICE_UNAVAILABLE,
        [(
            axum::http::header::RETRY_AFTER,
            crate::web::UNAVAILABLE_RETRY_AFTER.to_string(),
        )],
        Json(json!({ "status": "unavailable", "error": reason })),
    )
        .into_response()
}

/// `GET /SLUG/stats.json`, as PROTOCOL.md describes.
///
/// ```text
/// {"domain_bytes": {d: n}, "downloader_bytes": {dl: n}, "downloader_count": {dl: n},
///  "downloaders": [dl...], "total_items_done": n, "total_items": n, "total_items_out": n,
///  "total_items_todo": n, "total_bytes": n, "counts": {"todo": n, "out": n, "done": n,
///  "rcr": f, "rcsr": f, "irsr": f, "ifir": f, "ifar": f}}
/// ```
/// The rates are fractions over the last hour, as the production tracker's dashboard and
/// exporters read them: `rcr` reclaims per item handed out, `rcsr` reclaimed items per item
/// served, `irsr` claims served per claim, `ifir` backfed records filtered as known per record
/// backfed, `ifar` items failed per item finished (done or failed); 0 without activity.
#[utoipa::path(get, path = "/{slug}/stats.json", tag = "public", params(ProjectPath))]
pub async fn get_stats(
    State(state): State<AppState>,
    Path(slug): Path<String>,
) -> ApiResult<Response> {
    if !crate::store::valid_slug(&slug) {
        return Err(ApiError::no_project());
    }
    let Some(b) = state.store.figures().leaderboard(&slug, 0, 0).await? else {
        return Err(ApiError::no_project());
    };
    let downloaders = state.store.figures().all_downloaders(&slug).await?;
    let bytes: serde_json::Map<_, _> = downloaders
        .iter()
        .map(|d| (d.name.clone(), json!(d.bytes)))
        .collect();
    let count: serde_json::Map<_, _> = downloaders
        .iter()
        .map(|d| (d.name.clone(), json!(d.items)))
        .collect();
    let names: Vec<&str> = downloaders.iter().map(|d| d.name.as_str()).collect();
    let minutes = state
        .store
        .figures()
        .minutes(&slug, crate::store::now_ms(), 60)
        .await?;
    let rates = LegacyRates::from(&tracker_stats(&minutes, Default::default(), 0));
    Ok(Json(json!({
        "domain_bytes": b.domain_bytes,
        "downloader_bytes": bytes,
        "downloader_count": count,
        "downloaders": names,
        "total_items_done": b.counts.done,
        "total_items": b.counts.done + b.counts.todo + b.counts.out,
        "total_items_out": b.counts.out,
        "total_items_todo": b.counts.todo,
        "total_bytes": b.total_bytes,
        "counts": {
            "todo": b.counts.todo, "out": b.counts.out, "done": b.counts.done,
            "rcr": rates.rcr, "rcsr": rates.rcsr, "irsr": rates.irsr,
            "ifir": rates.ifir, "ifar": rates.ifar,
        },
    }))
    .into_response())
}

/// `GET /SLUG/charts.json`: cumulative series, one point per minute at most.
///
/// ```text
/// {"items_done_chart": [[epoch_s, n]...], "bytes_done_chart": [[epoch_s, n]...],
///  "downloader_chart": {dl: [[epoch_s, bytes]...]}}
/// ```
#[utoipa::path(get, path = "/{slug}/charts.json", tag = "public", params(ProjectPath))]
pub async fn get_charts(
    State(state): State<AppState>,
    Path(slug): Path<String>,
) -> ApiResult<Response> {
    crate::web::known_project(&state, &slug).await?;
    let charts = state.store.figures().charts(&slug, 20).await?;
    Ok(Json(json!({
        "items_done_chart": charts.items,
        "bytes_done_chart": charts.bytes,
        "downloader_chart": charts.downloaders,
    }))
    .into_response())
}

/// `GET /SLUG/update-status.json`: `{"downloader_version": {dl: v}, "current_version": v,
/// "current_version_update_message": m}`, as the old tracker answered (its dashboard shows the
/// message, then the names of the downloaders below the version).
#[utoipa::path(
    get,
    path = "/{slug}/update-status.json",
    tag = "public",
    params(ProjectPath)
)]
pub async fn get_update_status(
    State(state): State<AppState>,
    Path(slug): Path<String>,
) -> ApiResult<Response> {
    let settings = crate::web::known_project(&state, &slug).await?;
    let versions = state.store.figures().downloader_versions(&slug).await?;
    let message = (!settings.min_version.is_empty())
        .then(|| format!("Please update to version {}", settings.min_version));
    Ok(Json(json!({
        "downloader_version": versions,
        "current_version": settings.min_version,
        "current_version_update_message": message,
    }))
    .into_response())
}

/// Query of `GET /SLUG/tracker-stats.json`.
#[derive(Debug, serde::Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct WindowQuery {
    /// Minutes to cover (default 60, at most 7 days).
    minutes: Option<u64>,
}

/// `GET /SLUG/tracker-stats.json?minutes=60`: the statistics tracker admins read, over a window.
///
/// ```text
/// {"window_minutes": 60, "requests": n, "item_request_serve_rate": 0.97, "reclaim_rate": 0.01,
///  "reclaim_serve_rate": 0.02, "mean_round_trip_s": 31.5, "items_per_minute": [...],
///  "backfeed_added": n, "backfeed_duplicates": n, "bloom": {"layers": n, "fill": 0.4,
///  "false_positive_rate": 1e-9}, "unique_downloaders_30d": n, "unique_ips_30d": n,
///  "offload": {"done_policy": "offload", "done_on_disk": n, "discarded": n, "todo_on_disk": n,
///  "segments": n, "bytes": n, "log_files": n, "log_bytes": n, "last_run": ms, "error": "",
///  "error_t": ms, "leased": true}}
/// ```
/// The offloader's state as the public sees it: a failure is said, not described (its text
/// may name paths; the panel shows it).
fn public_offload(mut o: app::model::admin::OffloadState) -> app::model::admin::OffloadState {
    if !o.error.is_empty() {
        o.error = "failing (see the admin panel)".into();
    }
    o
}

#[utoipa::path(
    get,
    path = "/{slug}/tracker-stats.json",
    tag = "public",
    params(ProjectPath, WindowQuery)
)]
pub async fn get_tracker_stats(
    State(state): State<AppState>,
    Path(slug): Path<String>,
    axum::extract::Query(q): axum::extract::Query<WindowQuery>,
) -> ApiResult<Response> {
    crate::web::known_project(&state, &slug).await?;
    let window = q.minutes.unwrap_or(60).clamp(1, 7 * 1440);
    let now = crate::store::now_ms();
    let minutes = state.store.figures().minutes(&slug, now, window).await?;
    let layers = state.store.queue().bloom_layers(&slug).await?;
    let records: u64 = layers.iter().map(|l| l.count).sum();
    let (dl, ip) = state
        .store
        .figures()
        .unique_contributors(&slug, now)
        .await?;
    let stats = tracker_stats(&minutes, crate::store::queue::bloom::fill(&layers), dl);
    let sum = |c: Counter| stats::sum(&minutes, c);
    let series = |c: Counter| {
        minutes
            .iter()
            .map(|m| json!([m.t, m.get(c)]))
            .collect::<Vec<_>>()
    };
    Ok(Json(json!({
        "window_minutes": window,
        "requests": sum(Counter::Requests),
        "item_request_serve_rate": stats.item_request_serve_rate,
        "reclaim_rate": stats.reclaim_rate,
        "reclaim_serve_rate": stats.reclaim_serve_rate,
        "mean_round_trip_s": stats.mean_round_trip_s,
        "items_claimed": sum(Counter::Claimed),
        "items_done": sum(Counter::DoneItems),
        "bytes_done": sum(Counter::DoneBytes),
        "items_failed": sum(Counter::Failed),
        "items_per_minute": series(Counter::DoneItems),
        "bytes_per_minute": series(Counter::DoneBytes),
        "requests_per_minute": series(Counter::Requests),
        "backfeed_added": sum(Counter::Backfed),
        "backfeed_duplicates": sum(Counter::BackfeedDuplicates),
        "offload": public_offload(crate::store::offload::offloader::archive::offload_state(&state.store, &state.config.archive_dir, &slug).await?),
        "bloom": {
            "layers": stats.bloom_layers,
            "records": records,
            "fill": stats.bloom_fill,
            "false_positive_rate": crate::store::estimated_fp(&layers),
        },
        "unique_downloaders_30d": dl,
        "unique_ips_30d": ip,
    }))
    .into_response())
}
