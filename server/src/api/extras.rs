//! The smaller warrior calls: upload targets, upload reports, server time, and the public
//! rescue form (posts limited per IP, [`crate::limits::Limits::rescue_per_minute`]).

use super::warrior::parse;
use crate::limits::valid_downloader;
use crate::openapi::ProjectPath;
use crate::web::{client_ip, known_project, ApiError, ApiResult};
use crate::{state::AppState, store::now_ms};
use axum::{
    body::Bytes,
    extract::{ConnectInfo, FromRequest, Path, Request, State},
    http::{header, HeaderMap, HeaderValue, StatusCode},
    response::{Html, IntoResponse, Response},
    Form, Json,
};
use rand::seq::IndexedRandom;
use serde::Deserialize;
use std::net::SocketAddr;

/// Body of `POST /SLUG/upload`: `{"downloader": "alice", "item_name": "x", "version": "..."}`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
pub struct UploadBody {
    downloader: String,
}

/// `POST /SLUG/upload`: `{"upload_target": "rsync://host/module/alice/"}` from the active
/// targets (`:downloader` replaced), or `{}` when there is none.
#[utoipa::path(
    post,
    path = "/{slug}/upload",
    tag = "warrior",
    params(ProjectPath),
    request_body(content = UploadBody, content_type = "application/json", description = "`item_name` (a whole NUL-joined batch for multi-item claims) and `version` are read but not needed"),
    responses(
        (status = 200, description = "`{\"upload_target\": \"rsync://host/module/alice/\"}`, or `{}` when the project has no active target", content_type = "application/json"),
    ),
)]
pub async fn get_upload_target(
    State(state): State<AppState>,
    Path(slug): Path<String>,
    body: Bytes,
) -> ApiResult<Response> {
    let req: UploadBody = parse(&body)?;
    if !valid_downloader(&req.downloader) {
        return Err(ApiError::bad_request("Invalid downloader name."));
    }
    known_project(&state, &slug).await?;
    let active: Vec<String> = state
        .store
        .projects()
        .upload_targets(&slug)
        .await?
        .into_iter()
        .filter(|(_, a)| *a)
        .map(|(t, _)| t)
        .collect();
    let Some(target) = active.choose(&mut rand::rng()) else {
        return Ok(Json(serde_json::json!({})).into_response());
    };
    let mut target = target.replace(":downloader", &req.downloader);
    if !target.ends_with('/') {
        target.push('/');
    }
    Ok(Json(serde_json::json!({ "upload_target": target })).into_response())
}

/// Body of `POST /SLUG/uploaded`: `{"uploader", "item", "server"}`; `user` is taken for `item`,
/// as the old tracker did (`data["item"] || data["user"]`).
#[derive(Debug, Deserialize, utoipa::ToSchema)]
pub struct UploadedBody {
    uploader: String,
    #[serde(default)]
    item: Option<String>,
    #[serde(default)]
    user: Option<String>,
    #[serde(default)]
    server: String,
}

/// `POST /SLUG/uploaded`: records who uploaded what where; `OK`.
#[utoipa::path(
    post,
    path = "/{slug}/uploaded",
    tag = "warrior",
    params(ProjectPath),
    request_body(content = UploadedBody, content_type = "application/json"),
    responses((status = 200, description = "`OK`", body = String, content_type = "text/plain")),
)]
pub async fn report_uploaded(
    State(state): State<AppState>,
    Path(slug): Path<String>,
    body: Bytes,
) -> ApiResult<Response> {
    let req: UploadedBody = parse(&body)?;
    let Some(item) = req.item.clone().or(req.user.clone()) else {
        return Err(ApiError::bad_request("item (or user) is required."));
    };
    if !valid_downloader(&req.uploader) {
        return Err(ApiError::bad_request("Invalid uploader name."));
    }
    if item.len() > crate::limits::MAX_ITEM_LEN * 100 || req.server.len() > 1024 {
        return Err(ApiError::bad_request("Item or server too long."));
    }
    known_project(&state, &slug).await?;
    let record = serde_json::json!({ "uploader": req.uploader, "item": item, "server": req.server, "t": now_ms() });
    state.store.projects().record_upload(&slug, &record).await?;
    Ok("OK\n".into_response())
}

/// `GET /now`: server time in seconds with milliseconds, `1700000000.123`, with no line end.
///
/// urls- and youtube-grab check the clock against it by matching the whole raw answer
/// (`wget-at --save-headers`) with one expression (ArchiveTeam/urls-grab `pipeline.py`
/// `CheckIP`, at 343d732b): the status line, then exactly `Server: openresty`, `Date`,
/// `Content-Type: text/plain`, `Connection: keep-alive`, `Content-Length`, `Cache-Control:
/// no-store`, in that order, and nothing else ([`ExactHeaders`] keeps the security headers
/// off it; the server writes header names in title case).
#[utoipa::path(get, path = "/now", tag = "warrior")]
pub async fn get_now() -> Response {
    let ms = now_ms();
    let body = format!("{}.{:03}", ms / 1000, ms % 1000);
    let date = httpdate::fmt_http_date(std::time::SystemTime::now());
    let len = body.len();
    let mut resp = Response::new(axum::body::Body::from(body));
    let h = resp.headers_mut();
    h.insert(header::SERVER, HeaderValue::from_static("openresty"));
    if let Ok(date) = HeaderValue::from_str(&date) {
        h.insert(header::DATE, date);
    }
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain"));
    h.insert(header::CONNECTION, HeaderValue::from_static("keep-alive"));
    h.insert(header::CONTENT_LENGTH, HeaderValue::from(len));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    resp.extensions_mut().insert(ExactHeaders);
    resp
}

/// Marks an answer whose headers a client matches exactly: nothing is added to them.
#[derive(Clone, Copy, Debug)]
pub struct ExactHeaders;

/// `GET /downloads/network_check/hello.html`: the page the Warrior VM (warrior4) fetches from
/// Warrior HQ's host to check its network, compared byte for byte (ArchiveTeam/warrior4-vm
/// `appliance/skeleton/usr/share/warrior4-network-check/target.json`, at ecf2197d).
#[utoipa::path(get, path = "/downloads/network_check/hello.html", tag = "warrior-hq")]
pub async fn get_network_check() -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/html"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        NETWORK_CHECK_PAGE,
    )
        .into_response()
}

/// The network check's page, exactly.
pub const NETWORK_CHECK_PAGE: &str = "<html><head></head><body>Hello.</body></html>\n";

fn rescue_page(title: &str, message: &str) -> Html<String> {
    let esc = |s: &str| {
        s.replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
            .replace('"', "&quot;")
    };
    Html(format!(
        r#"<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Rescue items · {t}</title><link rel="stylesheet" href="/pkg/tracker.css"></head><body><main>
<h1>Rescue items for {t}</h1><p>{m}</p><form method="post" class="card"><label for="items">Items, one per line</label><br>
<textarea id="items" name="items" rows="12" cols="80"></textarea><br><button type="submit">Queue them</button></form></main></body></html>"#,
        t = esc(title),
        m = esc(message)
    ))
}

/// `GET /SLUG/rescue-me`: the public form.
#[utoipa::path(get, path = "/{slug}/rescue-me", tag = "warrior", params(ProjectPath))]
pub async fn show_rescue_form(
    State(state): State<AppState>,
    Path(slug): Path<String>,
) -> ApiResult<Response> {
    let settings = known_project(&state, &slug).await?;
    if settings.item_pattern.is_empty() {
        return Err(ApiError::not_found("This project takes no suggestions."));
    }
    Ok(rescue_page(&settings.title, "Suggest items this project should save.").into_response())
}

/// Form of `POST /SLUG/rescue-me`.
#[derive(Debug, Deserialize)]
pub struct RescueForm {
    items: String,
}

/// `POST /SLUG/rescue-me`: queues the items matching the project's item pattern. Each post is
/// counted against its IP's limit (an IPv6 /64's) before its body is read: 429 with
/// `Retry-After` past it; 413 past the most items of one post.
#[tracing::instrument(skip_all, fields(slug = %slug))]
#[utoipa::path(
    post,
    path = "/{slug}/rescue-me",
    tag = "warrior",
    params(ProjectPath),
    request_body(content = String, content_type = "application/x-www-form-urlencoded", description = "Form field `items`: items, one a line, matching the project's item pattern"),
)]
pub async fn rescue_items(
    State(state): State<AppState>,
    Path(slug): Path<String>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    req: Request,
) -> ApiResult<Response> {
    let limits = &state.config.limits;
    if limits.rescue_per_minute > 0 {
        let net = crate::web::network(&client_ip(peer, &headers, state.config.trust_proxy));
        if let Some(wait) = state
            .store
            .projects()
            .rescue_attempt(&net, limits.rescue_per_minute, now_ms())
            .await?
        {
            tracing::debug!(%net, wait, "rescue-me post throttled");
            return Err(ApiError::RateLimited(wait));
        }
    }
    let settings = known_project(&state, &slug).await?;
    let pattern = regex::Regex::new(&settings.item_pattern)
        .ok()
        .filter(|_| !settings.item_pattern.is_empty())
        .ok_or_else(|| ApiError::not_found("This project takes no suggestions."))?;
    let form = match Form::<RescueForm>::from_request(req, &state).await {
        Ok(Form(form)) => form,
        Err(rejection) => return Ok(rejection.into_response()),
    };
    let lines: Vec<&str> = form
        .items
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    if lines.len() > limits.rescue_items {
        return Err(ApiError::Client(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("At most {} items at once.", limits.rescue_items),
        ));
    }
    let valid: Vec<String> = lines
        .iter()
        .filter(|l| l.len() <= limits.item && pattern.is_match(l))
        .map(|l| l.to_string())
        .collect();
    let added = state
        .store
        .queue()
        .add_items(&slug, crate::keys::TODO, &valid)
        .await?;
    let message = format!(
        "{added} new items queued; {} already known; {} did not match this project's items.",
        valid.len() as u64 - added,
        lines.len() - valid.len()
    );
    Ok(rescue_page(&settings.title, &message).into_response())
}

/// Query of `GET /dictionary`.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct DictionaryQuery {
    /// The project's slug.
    #[serde(default)]
    project: String,
    /// A dictionary's id (megawarc asks for the one a WARC's name carries); none: the current.
    #[serde(default)]
    id: Option<String>,
}

/// `GET /dictionary?project=SLUG[&id=ID]`: `{"id", "url", "sha256"}` of the zstd dictionary the
/// project serves now, as urls-, reddit-, telegram- and imgur-grab fetch it every 30 minutes
/// (they download `url`, check its SHA-256, decompress it when it is zstd-framed, and name their
/// WARCs after `id`), or of dictionary `ID` while it is kept, as megawarc asks for the one a
/// WARC was compressed with (it compares the answer's `id`, a string, with the name's); 404
/// when there is none.
#[utoipa::path(get, path = "/dictionary", tag = "warrior", params(DictionaryQuery))]
pub async fn get_dictionary(
    State(state): State<AppState>,
    headers: axum::http::HeaderMap,
    axum::extract::Query(q): axum::extract::Query<DictionaryQuery>,
) -> ApiResult<Response> {
    known_project(&state, &q.project).await?;
    let found = match q.id.as_deref() {
        None => state.store.projects().dictionary(&q.project).await?,
        Some(id) => {
            let id = id
                .parse::<u64>()
                .ok()
                .filter(|_| id.len() <= 20 && id.bytes().all(|b| b.is_ascii_digit()))
                .ok_or_else(|| ApiError::bad_request("id is a dictionary's decimal id."))?;
            let found = state
                .store
                .projects()
                .dictionary_by_id(&q.project, id)
                .await?;
            if found.is_none() {
                return Err(ApiError::not_found(format!(
                    "No dictionary {id} in this project (or no longer kept: the last {} are).",
                    crate::store::dictionary::KEPT
                )));
            }
            found
        }
    };
    let Some(d) = found else {
        return Err(ApiError::not_found("This project has no dictionary."));
    };
    let base = state.config.base_url(&headers);
    // The id as a string: megawarc compares it with the one in a file name.
    Ok(Json(serde_json::json!({
        "id": d.id.to_string(),
        "url": format!("{base}/dictionary/{}/{}", q.project, d.id),
        "sha256": d.sha256,
    }))
    .into_response())
}

/// `GET /dictionary/SLUG/ID`: the bytes of a dictionary, current or one of the last kept
/// (uploads in flight may name an older one); cached for a year, as an id never changes.
#[utoipa::path(
    get,
    path = "/dictionary/{slug}/{id}",
    tag = "warrior",
    params(ProjectPath, ("id" = String, Path, description = "The dictionary's id")),
)]
pub async fn download_dictionary(
    State(state): State<AppState>,
    Path((slug, id)): Path<(String, u64)>,
) -> ApiResult<Response> {
    known_project(&state, &slug).await?;
    let Some(bytes) = state.store.projects().dictionary_bytes(&slug, id).await? else {
        return Err(ApiError::not_found(
            "No such dictionary (or no longer kept).",
        ));
    };
    Ok((
        [
            (header::CONTENT_TYPE, "application/octet-stream"),
            (header::CACHE_CONTROL, "public, max-age=31536000, immutable"),
        ],
        bytes,
    )
        .into_response())
}
