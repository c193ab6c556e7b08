//! The Warrior HQ project list: edited in the panel (validated, HTML sanitised, previewed, the
//! last 20 versions kept) and served publicly as `GET /projects.json` (PROTOCOL.md "Warrior HQ").

use super::auth::Caller;
use crate::{
    state::AppState,
    store::now_ms,
    web::{ApiError, ApiResult},
};
use app::model::admin::{RestoredList, SavedList, WarriorList, WarriorVersion};
use axum::{
    extract::{Query, State},
    http::{header, HeaderMap, HeaderValue},
    response::{IntoResponse, Response},
    Json,
};
use serde::Deserialize;
use serde_json::Value;

use crate::project_list::EMPTY_LIST;
pub use app::model::admin::{Restore, SaveList};

/// The document with its HTML fields sanitised, or why it cannot be served to Warriors.
pub fn validate_list(raw: &str) -> Result<Value, String> {
    let mut doc: Value = serde_json::from_str(raw).map_err(|e| format!("not JSON: {e}"))?;
    let obj = doc.as_object_mut().ok_or("the list is a JSON object")?;
    if !obj
        .get("warrior")
        .and_then(|w| w.get("seesaw_version"))
        .is_some_and(Value::is_string)
    {
        return Err("warrior.seesaw_version (a string) is required".into());
    }
    for field in ["broadcast_message", "tracker_banner_html"] {
        sanitise_field(obj, field)?;
    }
    let projects = obj
        .get_mut("projects")
        .and_then(Value::as_array_mut)
        .ok_or("projects (an array) is required")?;
    for (i, p) in projects.iter_mut().enumerate() {
        let p = p
            .as_object_mut()
            .ok_or(format!("projects[{i}] is an object"))?;
        for field in ["name", "repository"] {
            if p.get(field)
                .and_then(Value::as_str)
                .is_none_or(str::is_empty)
            {
                return Err(format!("projects[{i}].{field} (a string) is required"));
            }
        }
        if let Some(d) = p.get("deadline") {
            if !d.as_str().is_some_and(valid_deadline) {
                return Err(format!(
                    "projects[{i}].deadline must be like 2013-04-30T23:59:59Z"
                ));
            }
        }
        if let Some(ll) = p.get("lat_lng") {
            let ok = ll
                .as_array()
                .is_some_and(|a| a.len() == 2 && a.iter().all(Value::is_number));
            if !ok {
                return Err(format!("projects[{i}].lat_lng is [lat, lng]"));
            }
        }
        for field in ["description", "marker_html"] {
            sanitise_field(p, field).map_err(|e| format!("projects[{i}].{e}"))?;
        }
    }
    Ok(doc)
}

fn sanitise_field(obj: &mut serde_json::Map<String, Value>, field: &str) -> Result<(), String> {
    match obj.get_mut(field) {
        None | Some(Value::Null) => Ok(()),
        Some(Value::String(s)) => {
            *s = ammonia::clean(s);
            Ok(())
        }
        Some(_) => Err(format!("{field} is a string of HTML")),
    }
}

pub use crate::ops::listing::valid_deadline;

/// `GET /admin/api/warrior/projects`: the list and its versions (who, when).
#[utoipa::path(
    get,
    path = "/warrior/projects",
    tag = "admin",
    responses((status = 200, body = WarriorList)),
)]
pub async fn show_list(
    State(state): State<AppState>,
    _caller: Caller,
) -> ApiResult<Json<WarriorList>> {
    let current = state.store.fleet().warrior_projects().await?;
    let versions = state
        .store
        .fleet()
        .warrior_projects_versions()
        .await?
        .into_iter()
        .map(|v| WarriorVersion { t: v.t, who: v.who })
        .collect();
    Ok(Json(WarriorList {
        json: current.unwrap_or_else(|| EMPTY_LIST.to_string()),
        versions,
    }))
}

/// `PUT /admin/api/warrior/projects` (global admins): validates, sanitises and saves.
#[utoipa::path(
    put,
    path = "/warrior/projects",
    tag = "admin",
    responses((status = 200, body = SavedList)),
)]
pub async fn save_list(
    State(state): State<AppState>,
    caller: Caller,
    Json(req): Json<SaveList>,
) -> ApiResult<Json<SavedList>> {
    caller.must_be_global()?;
    let doc = validate_list(&req.json).map_err(ApiError::bad_request)?;
    if !req.dry_run {
        let text = doc.to_string();
        state
            .store
            .fleet()
            .save_warrior_projects(&text, &caller.name, now_ms())
            .await?;
        let n = doc["projects"].as_array().map_or(0, Vec::len) as u64;
        caller
            .record(&state, "warrior_projects.save", "", n, "")
            .await?;
    }
    Ok(Json(SavedList {
        json: doc,
        dry_run: req.dry_run,
    }))
}

/// `POST /admin/api/warrior/restore` (global admins): saves an earlier version again.
#[utoipa::path(
    post,
    path = "/warrior/restore",
    tag = "admin",
    responses((status = 200, body = RestoredList)),
)]
pub async fn restore_list(
    State(state): State<AppState>,
    caller: Caller,
    Json(req): Json<Restore>,
) -> ApiResult<Json<RestoredList>> {
    caller.must_be_global()?;
    let versions = state.store.fleet().warrior_projects_versions().await?;
    let v = versions
        .get(req.index)
        .ok_or_else(|| ApiError::not_found("No such version."))?;
    state
        .store
        .fleet()
        .save_warrior_projects(&v.json, &caller.name, now_ms())
        .await?;
    caller
        .record(
            &state,
            "warrior_projects.restore",
            "",
            1,
            format!("version {}", req.index),
        )
        .await?;
    Ok(Json(RestoredList {
        json: v.json.clone(),
    }))
}

/// Query of `GET /projects.json`.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct Jsonp {
    /// JSONP callback name.
    #[serde(default)]
    pub callback: Option<String>,
}

/// `GET /projects.json[?callback=cb]`: the Warrior HQ list ([`crate::project_list`]; with a pipeline's
/// bearer token, `auto_project` chosen for it), CORS `*`, JSON or JSONP (never as a script of
/// the tracker's own pages: [`crate::fetch_meta::script_of_own_page`]).
#[utoipa::path(get, path = "/projects.json", tag = "warrior-hq", params(Jsonp))]
pub async fn get_projects_json(
    State(state): State<AppState>,
    headers: HeaderMap,
    pipeline: crate::api::pipeline::CallerPipeline,
    Query(q): Query<Jsonp>,
) -> ApiResult<Response> {
    let base = state.config.base_url(&headers);
    let body = crate::project_list::body(&state.store, &base, pipeline.0.as_deref()).await?;
    let (body, kind) = match q.callback.filter(|c| !c.is_empty()) {
        Some(cb) => {
            let ok = cb.len() <= 64
                && cb
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_$.".contains(c))
                && !cb.starts_with(|c: char| c.is_ascii_digit());
            if !ok {
                return Err(ApiError::bad_request("callback is a JavaScript name."));
            }
            if crate::fetch_meta::script_of_own_page(&headers) {
                return Err(ApiError::forbidden(
                    "JSONP is for other sites' pages, not a script of this tracker's own.",
                ));
            }
            (format!("{cb}({body});"), "application/javascript")
        }
        None => (body, "application/json"),
    };
    let mut resp = body.into_response();
    let h = resp.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(kind));
    h.insert(
        header::ACCESS_CONTROL_ALLOW_ORIGIN,
        HeaderValue::from_static("*"),
    );
    h.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("max-age=60"),
    );
    // A browser keeps one JSONP answer per fetch-metadata site, so one fetched by another
    // site's page is never reused for a script of the tracker's own.
    if kind == "application/javascript" {
        h.append(header::VARY, HeaderValue::from_static("Sec-Fetch-Site"));
    }
    Ok(resp)
}
