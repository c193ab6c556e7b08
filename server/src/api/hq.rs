//! Warrior HQ for the Warrior VM and its Docker image (PROTOCOL.md, "Warrior HQ"): a warrior
//! registers once (`POST /api/register.json`), then reports what it runs every few minutes
//! (`POST /api/update.json`) and gets the project list back; `GET /api/stats.json` counts the
//! fleet. Instances are forgotten 15 minutes after their last update ([`crate::store::FLEET_TTL_MS`]).

use super::warrior::parse;
use crate::{
    state::AppState,
    store::{now_ms, valid_slug, FleetRefusal, WarriorRecord},
    web::{client_ip, ApiError, ApiResult},
};
use app::model::FleetStats;
use axum::{
    body::Bytes,
    extract::{ConnectInfo, State},
    http::{header, HeaderMap, HeaderValue},
    response::{IntoResponse, Response},
    Json,
};
use serde::Deserialize;
use std::net::SocketAddr;

/// The body of both calls: `{"warrior": {...}}`.
#[derive(Deserialize)]
struct Envelope<T> {
    warrior: T,
}

/// What `/api/update.json` reads of a warrior (other fields are ignored).
#[derive(Deserialize)]
struct Update {
    warrior_id: serde_json::Value,
    #[serde(default)]
    downloader: Option<String>,
    #[serde(default)]
    selected_project: Option<String>,
    #[serde(default)]
    lat_lng: Option<serde_json::Value>,
    #[serde(default)]
    version: Option<serde_json::Value>,
}

/// The longest version string kept.
const MAX_VERSION: usize = 64;

/// `POST /api/register.json` `{"warrior": {"version": "..."}}` → `{"warrior_id": "N"}`.
#[utoipa::path(
    post,
    path = "/api/register.json",
    tag = "warrior-hq",
    request_body(content = serde_json::Value, content_type = "application/json", description = "`{\"warrior\": {\"version\": \"...\"}}`"),
    responses((status = 200, description = "`{\"warrior_id\": \"N\"}`", content_type = "application/json")),
)]
pub async fn register_warrior(
    State(state): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<Json<serde_json::Value>> {
    let _: Envelope<serde_json::Value> = parse(&body)?;
    let ip = client_ip(peer, &headers, state.config.trust_proxy);
    let net = format!("register {}", crate::web::network(&ip));
    throttle(&state, &net, HQ_REGISTERS_PER_S, HQ_REGISTERS_BURST)?;
    let id = state.store.fleet().register_warrior().await?;
    Ok(Json(serde_json::json!({ "warrior_id": id.to_string() })))
}

/// `POST /api/update.json` `{"warrior": {"warrior_id", "downloader", "selected_project",
/// "lat_lng", ...}}`: records the instance and answers the project list (`/projects.json`; with a
/// pipeline's bearer token, `auto_project` chosen for that pipeline).
#[utoipa::path(
    post,
    path = "/api/update.json",
    tag = "warrior-hq",
    request_body(content = serde_json::Value, content_type = "application/json", description = "`{\"warrior\": {\"warrior_id\", \"downloader\", \"selected_project\", \"lat_lng\", \"version\"}}` (other fields are ignored)"),
    responses((status = 200, description = "The Warrior's new project list and settings, as warrior-hq answered", content_type = "application/json")),
)]
pub async fn update_warrior(
    State(state): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    pipeline: super::pipeline::CallerPipeline,
    body: Bytes,
) -> ApiResult<Response> {
    let Envelope { warrior } = parse::<Envelope<Update>>(&body)?;
    let now = now_ms();
    let ip = client_ip(peer, &headers, state.config.trust_proxy);
    let user_agent = headers
        .get(header::USER_AGENT)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
        .unwrap_or_default();
    // One network (an IPv6 /64) may flood HQ only so fast.
    let net = crate::web::network(&ip);
    throttle(&state, &net, HQ_UPDATES_PER_S, HQ_UPDATES_BURST)?;
    // Ours, or derived for this network and user agent (an empty, unknown or foreign id).
    let id = state
        .store
        .fleet()
        .hq_id_for(warrior_id(&warrior.warrior_id), &net, &user_agent)
        .await?;
    let record = WarriorRecord {
        id,
        downloader: downloader(warrior.downloader, state.config.limits.downloader)?,
        selected_project: selected_project(warrior.selected_project)?,
        lat_lng: warrior.lat_lng.as_ref().map(lat_lng).transpose()?.flatten(),
        version: match warrior.version {
            Some(serde_json::Value::String(v)) if v.len() <= MAX_VERSION => v,
            Some(serde_json::Value::String(_)) => {
                return Err(ApiError::bad_request(format!(
                    "version is at most {MAX_VERSION} bytes."
                )))
            }
            _ => String::new(),
        },
        ip,
        seen: now,
    };
    // An instance that cannot be recorded (Redis full, the fleet or its network holding as
    // many as it may) is not counted, but the warrior still gets its list: without it, it
    // would run nothing.
    match state.store.fleet().update_warrior(&record, &net, now).await {
        Ok(Ok(())) | Err(crate::store::StoreError::Full) => {}
        Ok(Err(refusal)) => note_unrecorded(refusal),
        Err(e) => return Err(e.into()),
    }
    let base = state.config.base_url(&headers);
    let list = crate::project_list::body_cached(&state.store, &base, pipeline.0.as_deref()).await?;
    let mut resp = list.into_response();
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    Ok(resp)
}

/// Logs, at most once a minute, that an update was answered but its instance not recorded.
fn note_unrecorded(refusal: FleetRefusal) {
    static LAST: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    if crate::web::once_a_minute(&LAST) {
        tracing::warn!(
            ?refusal,
            "Warrior HQ: an update answered with the project list but not recorded (fleet or network full)"
        );
    }
}

/// `warrior_id`: the number `/api/register.json` gave, as a string (as it was given) or a
/// number; `None` for anything else (absent, null, empty as the Docker warrior sends it, or not
/// a number): such a warrior is served under a derived id.
fn warrior_id(v: &serde_json::Value) -> Option<u64> {
    match v {
        serde_json::Value::String(s) if s.len() <= 20 => s.trim().parse().ok(),
        serde_json::Value::Number(n) => n.as_u64(),
        _ => None,
    }
}

/// 429 with `Retry-After` when `who` is past its allowance of HQ calls.
fn throttle(state: &AppState, who: &str, per_s: u64, burst: u64) -> ApiResult<()> {
    state
        .hq_throttle
        .check(who, per_s, burst, std::time::Instant::now())
        .map_err(|wait| ApiError::RateLimited(wait.as_secs().max(1)))
}

/// Updates one network may send Warrior HQ a second (a warrior sends one every 10 minutes:
/// 20 a second is 12,000 warriors behind one address), and at once; 429 with `Retry-After`
/// beyond.
pub const HQ_UPDATES_PER_S: u64 = 20;
/// See [`HQ_UPDATES_PER_S`].
pub const HQ_UPDATES_BURST: u64 = 600;
/// Registrations one network may make a second, and at once.
pub const HQ_REGISTERS_PER_S: u64 = 1;
/// See [`HQ_REGISTERS_PER_S`].
pub const HQ_REGISTERS_BURST: u64 = 20;

/// The downloader name: at most `max` bytes, no control characters (empty: not set yet).
fn downloader(name: Option<String>, max: usize) -> ApiResult<String> {
    let name = name.unwrap_or_default();
    if name.len() > max || name.chars().any(char::is_control) {
        return Err(ApiError::bad_request(format!(
            "downloader is at most {max} bytes, without control characters."
        )));
    }
    Ok(name)
}

/// The selected project: a project's slug, `auto`, or empty.
fn selected_project(slug: Option<String>) -> ApiResult<String> {
    let slug = slug.unwrap_or_default();
    if slug.is_empty() || slug == "auto" || valid_slug(&slug) {
        Ok(slug)
    } else {
        Err(ApiError::bad_request(
            "selected_project is a project's name, \"auto\" or empty.",
        ))
    }
}

/// `lat_lng`: `[latitude, longitude]` as numbers or numeric strings, in range; `null` or an
/// empty list for none.
fn lat_lng(v: &serde_json::Value) -> ApiResult<Option<(f64, f64)>> {
    let number = |v: &serde_json::Value| match v {
        serde_json::Value::Number(n) => n.as_f64(),
        serde_json::Value::String(s) if s.len() <= 32 => s.trim().parse().ok(),
        _ => None,
    };
    match v {
        serde_json::Value::Null => Ok(None),
        serde_json::Value::Array(a) if a.is_empty() => Ok(None),
        serde_json::Value::Array(a) if a.len() == 2 => match (number(&a[0]), number(&a[1])) {
            (Some(lat), Some(lng))
                if (-90.0..=90.0).contains(&lat) && (-180.0..=180.0).contains(&lng) =>
            {
                Ok(Some((lat, lng)))
            }
            _ => Err(ApiError::bad_request(
                "lat_lng is [latitude, longitude] in degrees.",
            )),
        },
        _ => Err(ApiError::bad_request(
            "lat_lng is [latitude, longitude] in degrees.",
        )),
    }
}

/// `GET /api/stats.json`: how many warriors, per selected project and per whole degree.
#[utoipa::path(
    get,
    path = "/api/stats.json",
    tag = "warrior-hq",
    responses((status = 200, body = FleetStats)),
)]
pub async fn get_fleet_stats(State(state): State<AppState>) -> ApiResult<Json<FleetStats>> {
    Ok(Json(state.store.fleet().fleet_stats(now_ms()).await?))
}

/// `GET /stats.json`, as ArchiveTeam's warrior-hq served it: `{"projects": [[selected, n]...]
/// (most first; `null` for none yet), "coords": [[lat, lng]...]}`, one position per warrior that
/// said where it is, at its whole degree (warrior-hq added up to half a degree of noise; the
/// whole degree says no more).
#[utoipa::path(get, path = "/stats.json", tag = "warrior-hq")]
pub async fn get_hq_stats(State(state): State<AppState>) -> ApiResult<Response> {
    let stats = state.store.fleet().fleet_stats(now_ms()).await?;
    let mut projects: Vec<(Option<String>, u64)> = stats
        .projects
        .into_iter()
        .map(|(p, n)| ((!p.is_empty()).then_some(p), n))
        .collect();
    projects.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let coords: Vec<(f64, f64)> = stats
        .positions
        .iter()
        .take(MAX_POSITIONS)
        .flat_map(|&(lat, lng, n)| {
            std::iter::repeat_n(
                (lat as f64, lng as f64),
                n.min(MAX_POSITIONS as u64) as usize,
            )
        })
        .take(MAX_POSITIONS)
        .collect();
    Ok(Json(serde_json::json!({ "projects": projects, "coords": coords })).into_response())
}

/// `GET /positions.json`, as warrior-hq served it: `[[lat, lng]...]` in whole degrees, one per
/// distinct position.
#[utoipa::path(get, path = "/positions.json", tag = "warrior-hq")]
pub async fn get_hq_positions(State(state): State<AppState>) -> ApiResult<Response> {
    let stats = state.store.fleet().fleet_stats(now_ms()).await?;
    let positions: Vec<(i32, i32)> = stats
        .positions
        .iter()
        .take(MAX_POSITIONS)
        .map(|&(lat, lng, _)| (lat, lng))
        .collect();
    Ok(Json(positions).into_response())
}

/// The most positions `/stats.json` and `/positions.json` list.
pub const MAX_POSITIONS: usize = 10_000;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warrior_fields_are_checked() {
        assert_eq!(warrior_id(&serde_json::json!("42")), Some(42));
        assert_eq!(warrior_id(&serde_json::json!(7)), Some(7));
        for none in [
            serde_json::json!("x"),
            serde_json::json!(""),
            serde_json::json!(-1),
            serde_json::json!(null),
        ] {
            assert_eq!(warrior_id(&none), None, "{none}");
        }
        assert_eq!(
            lat_lng(&serde_json::json!(["51.5", -0.1])).unwrap(),
            Some((51.5, -0.1))
        );
        assert_eq!(lat_lng(&serde_json::json!([])).unwrap(), None);
        for bad in [
            serde_json::json!([91, 0]),
            serde_json::json!([1]),
            serde_json::json!("x"),
        ] {
            assert!(lat_lng(&bad).is_err(), "{bad}");
        }
        assert!(selected_project(Some("auto".into())).is_ok());
        assert!(selected_project(Some("Bad Slug".into())).is_err());
        assert!(downloader(Some("a\nb".into()), 64).is_err());
        assert!(downloader(Some("x".repeat(65)), 64).is_err());
    }
}
