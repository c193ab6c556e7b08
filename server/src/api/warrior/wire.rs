//! The warrior calls' bodies as the clients send them (parsed from the raw body, whatever its
//! content type), and what a claim answers, as the OpenAPI document describes them.

use crate::web::{ApiError, ApiResult};
use serde::Deserialize;

/// Body of `POST /SLUG/request`.
///
/// ```text
/// {"downloader": "alice", "api_version": "2", "version": "20240101.01"}
/// ```
#[derive(Debug, Deserialize, utoipa::ToSchema)]
pub struct RequestBody {
    pub(super) downloader: String,
    #[serde(default)]
    pub(super) api_version: Option<serde_json::Value>,
    #[serde(default)]
    pub(super) version: Option<String>,
}

/// Body of `POST /SLUG/done` (and `done+request`).
///
/// ```text
/// {"downloader":"alice","version":"20240101.01","item":"a\u0000b","bytes":{"data":1234},"id":{...}}
/// ```
#[derive(Debug, Deserialize, utoipa::ToSchema)]
pub struct DoneBody {
    pub(super) downloader: String,
    pub(super) item: String,
    #[serde(default)]
    pub(super) bytes: serde_json::Map<String, serde_json::Value>,
    #[serde(default)]
    pub(super) version: Option<String>,
    #[serde(default)]
    pub(super) id: Option<serde_json::Value>,
    #[serde(default)]
    pub(super) api_version: Option<serde_json::Value>,
}

/// Body of `POST /SLUG/release`: `{"item": "x", "downloader": "alice"}`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
pub struct ReleaseBody {
    pub(super) item: String,
    #[serde(default)]
    pub(super) downloader: String,
}

/// What a claim answers, in PROTOCOL.md's order of checks (the OpenAPI document's responses of
/// `request`, `multi=N//request` and `done+request`).
#[derive(utoipa::IntoResponses)]
pub enum ClaimAnswers {
    /// The claim: `{"item_name": "..."}` (NUL-joined for `multi=N`, with the project's extra
    /// fields) for `api_version` 2, else the bare name as text.
    #[response(status = 200, content_type = "application/json")]
    Claimed,
    /// Invalid JSON or downloader name (a plain-text reason).
    #[response(status = 400)]
    Invalid,
    /// The address or the downloader is blocked.
    #[response(status = 403)]
    Blocked,
    /// No item to give, the downloader's claims at their limit, or the project not active.
    #[response(status = 404)]
    Nothing,
    /// Rate limited (`Retry-After` in seconds).
    #[response(status = 429)]
    Limited,
    /// The script's `version` is below the project's minimum.
    #[response(status = 455)]
    OldVersion,
}

/// Parses a JSON body; 400 with the reason otherwise.
pub fn parse<'a, T: Deserialize<'a>>(body: &'a [u8]) -> ApiResult<T> {
    serde_json::from_slice(body).map_err(|e| ApiError::bad_request(format!("Invalid JSON: {e}")))
}

pub(super) fn is_v2(v: &Option<serde_json::Value>) -> bool {
    match v {
        Some(serde_json::Value::String(s)) => s == "2",
        Some(serde_json::Value::Number(n)) => n.as_u64() == Some(2),
        _ => false,
    }
}
