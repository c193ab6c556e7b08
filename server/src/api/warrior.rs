//! The warrior API (PROTOCOL.md): what seesaw-kit clients call.

use super::{ApiError, ApiResult};
use crate::{
    store::{now_ms, Claim, DoneOutcome, DoneReport, ProjectInfo, StoreError},
    AppState,
};
use axum::{
    body::Bytes,
    extract::{ConnectInfo, Path, State},
    http::{header, HeaderMap},
    response::{IntoResponse, Response},
    Json,
};
use serde::Deserialize;
use std::{collections::BTreeMap, net::SocketAddr};

/// The longest item name accepted, in bytes.
pub const MAX_ITEM_LEN: usize = 4096;

/// Body of `POST /SLUG/request`.
///
/// ```text
/// {"downloader": "alice", "api_version": "2", "version": "20240101.01"}
/// ```
#[derive(Debug, Deserialize)]
pub struct RequestBody {
    downloader: String,
    #[serde(default)]
    api_version: Option<serde_json::Value>,
    #[serde(default)]
    version: Option<String>,
}

/// Body of `POST /SLUG/done`.
///
/// ```text
/// {"downloader":"alice","version":"20240101.01","item":"a\u0000b","bytes":{"data":1234},"id":{...}}
/// ```
#[derive(Debug, Deserialize)]
pub struct DoneBody {
    downloader: String,
    item: String,
    #[serde(default)]
    bytes: BTreeMap<String, serde_json::Value>,
    #[serde(default)]
    version: Option<String>,
}

/// `\A[-_a-zA-Z0-9]{3,30}\z`
pub fn valid_downloader(name: &str) -> bool {
    (3..=30).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

fn parse<'a, T: Deserialize<'a>>(body: &'a [u8]) -> ApiResult<T> {
    serde_json::from_slice(body).map_err(|e| ApiError::BadRequest(format!("Invalid JSON: {e}")))
}

fn user_agent(headers: &HeaderMap) -> String {
    headers
        .get(header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .chars()
        .take(256)
        .collect()
}

async fn project(state: &AppState, slug: &str) -> ApiResult<ProjectInfo> {
    if !crate::store::valid_slug(slug) {
        return Err(ApiError::NotFound("No such project.".into()));
    }
    state
        .store
        .project(slug)
        .await?
        .ok_or_else(|| ApiError::NotFound("No such project.".into()))
}

/// `POST /SLUG/request`: claims one item.
#[tracing::instrument(skip(state, headers, body), fields(ip = %addr.ip()))]
pub async fn claim_items(
    State(state): State<AppState>,
    Path(slug): Path<String>,
    ConnectInfo(addr): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<Response> {
    let req: RequestBody = parse(&body)?;
    if !valid_downloader(&req.downloader) {
        return Err(ApiError::BadRequest("Invalid downloader name.".into()));
    }
    let project = project(&state, &slug).await?;
    if project.state != "active" {
        return Err(ApiError::NotFound("Project is not active.".into()));
    }
    let who = Claim {
        downloader: req.downloader,
        ip: addr.ip().to_string(),
        user_agent: user_agent(&headers),
        version: req.version.unwrap_or_default(),
    };
    let items = match state.store.claim(&slug, &who, 1, now_ms()).await {
        Err(StoreError::NoProject) => return Err(ApiError::NotFound("No such project.".into())),
        other => other?,
    };
    let Some(item) = items.into_iter().next() else {
        return Err(ApiError::NotFound("No item available.".into()));
    };
    let v2 = match &req.api_version {
        Some(serde_json::Value::String(s)) => s == "2",
        Some(serde_json::Value::Number(n)) => n.as_u64() == Some(2),
        _ => false,
    };
    Ok(if v2 {
        Json(serde_json::json!({ "item_name": item })).into_response()
    } else {
        item.into_response()
    })
}

/// `POST /SLUG/done`: records completed items; `OK`.
#[tracing::instrument(skip(state, headers, body), fields(ip = %addr.ip()))]
pub async fn report_done(
    State(state): State<AppState>,
    Path(slug): Path<String>,
    ConnectInfo(addr): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<Response> {
    let req: DoneBody = parse(&body)?;
    if !valid_downloader(&req.downloader) {
        return Err(ApiError::BadRequest("Invalid downloader name.".into()));
    }
    let items: Vec<String> = req.item.split('\0').map(String::from).collect();
    if items.iter().any(|i| i.is_empty() || i.len() > MAX_ITEM_LEN) {
        return Err(ApiError::BadRequest(format!(
            "Items must be 1 to {MAX_ITEM_LEN} bytes."
        )));
    }
    let mut bytes = Vec::with_capacity(req.bytes.len());
    for (domain, value) in req.bytes {
        if domain.is_empty() || domain.len() > 64 || domain.contains(['\0', '"', '\\']) {
            return Err(ApiError::BadRequest("Invalid domain name in bytes.".into()));
        }
        let Some(n) = value.as_u64() else {
            return Err(ApiError::BadRequest(format!(
                "bytes.{domain} must be a non-negative integer."
            )));
        };
        bytes.push((domain, n));
    }
    project(&state, &slug).await?;
    let report = DoneReport {
        downloader: req.downloader,
        version: req.version.unwrap_or_default(),
        user_agent: user_agent(&headers),
        bytes,
        items,
    };
    match state.store.done(&slug, &report, now_ms()).await? {
        DoneOutcome::Recorded { .. } => Ok("OK\n".into_response()),
        DoneOutcome::UnknownItem(item) => Err(ApiError::NotFound(format!("Unknown item: {item}"))),
    }
}
