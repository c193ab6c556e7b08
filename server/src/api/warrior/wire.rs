//! The warrior calls' bodies as the clients send them (parsed from the raw body, whatever its
//! content type), and what a claim answers, as the OpenAPI document describes them.

use crate::web::{ApiError, ApiResult};
use serde::Deserialize;

/// Body of `POST /SLUG/request`.
///
/// ```text
/// {"downloader": "alice", "api_version": "2", "version": "20240101.01"}   seesaw 0.10.3
/// {"downloader": "alice", "version": "20240101.01"}                       today's seesaw
/// ```
#[derive(Debug, Deserialize, utoipa::ToSchema)]
pub struct RequestBody {
    /// The downloader's name: 3 to 30 of `[-_a-zA-Z0-9]`.
    #[schema(
        pattern = "^[-_a-zA-Z0-9]{3,30}$",
        min_length = 3,
        max_length = 30,
        example = "alice"
    )]
    pub(super) downloader: String,
    #[serde(default)]
    pub(super) api_version: Option<serde_json::Value>,
    #[serde(default)]
    /// The grab script's version: at most `TRACKER_MAX_VERSION` bytes (64 by default).
    #[schema(max_length = 64, example = "20240101.01")]
    pub(super) version: Option<String>,
}

/// Body of `POST /SLUG/done` (and `done+request`).
///
/// ```text
/// {"downloader":"alice","version":"20240101.01","item":"a\u0000b","bytes":{"data":1234},"id":{...}}
/// ```
#[derive(Debug, Deserialize, utoipa::ToSchema)]
pub struct DoneBody {
    /// The downloader's name: 3 to 30 of `[-_a-zA-Z0-9]`.
    #[schema(
        pattern = "^[-_a-zA-Z0-9]{3,30}$",
        min_length = 3,
        max_length = 30,
        example = "alice"
    )]
    pub(super) downloader: String,
    /// The item, or several joined by single NULs (at most `TRACKER_MAX_MULTI`, 1,000 by
    /// default), each 1 to `TRACKER_MAX_ITEM` bytes (4,096 by default).
    #[schema(min_length = 1, example = "item-42")]
    pub(super) item: String,
    /// Bytes per domain of the project: at most `TRACKER_MAX_DOMAINS` (16 by default), each an
    /// integer from 0 to 2^50.
    #[serde(default)]
    #[schema(example = json!({"data": 1234}))]
    pub(super) bytes: serde_json::Map<String, serde_json::Value>,
    #[serde(default)]
    /// The grab script's version: at most `TRACKER_MAX_VERSION` bytes (64 by default).
    #[schema(max_length = 64, example = "20240101.01")]
    pub(super) version: Option<String>,
    #[serde(default)]
    pub(super) id: Option<serde_json::Value>,
    #[serde(default)]
    pub(super) api_version: Option<serde_json::Value>,
}

/// Body of `POST /SLUG/release`: one item, `{"item": "x", "downloader": "alice"}`, or the
/// items today's seesaw gives back when a grab script's `item_filter` rejects them,
/// `{"downloader": "alice", "version": "20240101.01", "items": ["a", "b"]}`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
pub struct ReleaseBody {
    #[serde(default)]
    pub(super) item: Option<String>,
    #[serde(default)]
    pub(super) items: Option<Vec<String>>,
    #[serde(default)]
    pub(super) downloader: String,
    #[serde(default)]
    #[allow(dead_code)]
    pub(super) version: Option<String>,
}

/// What a claim answers, in PROTOCOL.md's order of checks (the OpenAPI document's responses of
/// `request`, `multi=N//request` and `done+request`).
#[derive(utoipa::IntoResponses)]
pub enum ClaimAnswers {
    /// The claim: `{"item_name": "a\u0000b", "items": ["a", "b"], "queues": ["todo",
    /// "todo:secondary"]}` (`item_name` NUL-joined for `multi=N`; with the project's extra
    /// fields); the bare name as text only for a request whose `api_version` is given and is
    /// not 2.
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

/// Whether a claim is answered as the bare item name (`text/plain`), as universal-tracker's
/// first API did: only when the request names an `api_version` and it is not 2. seesaw 0.10.3
/// sends `"2"`; today's seesaw sends none and parses the answer as JSON (its
/// `tests/tracker_test.py`), so no `api_version` means JSON.
pub(super) fn wants_text(v: &Option<serde_json::Value>) -> bool {
    match v {
        None | Some(serde_json::Value::Null) => false,
        Some(serde_json::Value::String(s)) => s != "2",
        Some(serde_json::Value::Number(n)) => n.as_u64() != Some(2),
        Some(_) => true,
    }
}
