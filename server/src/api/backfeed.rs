//! `POST /backfeed/legacy/KEY`: items discovered by workers, de-duplicated by the project's
//! Bloom filter.

use super::{constant_time_eq, ApiError, ApiResult};
use crate::{
    store::{bloom_hash, now_ms, valid_part_name, BackfeedRecord},
    AppState,
};
use axum::{
    body::Bytes,
    extract::{Path, Query, State},
    http::{header, HeaderMap},
    response::{IntoResponse, Response},
    Json,
};
use serde::Deserialize;
use std::io::Read;

/// The largest body after decompression.
const MAX_DECODED: u64 = 64 * 1024 * 1024;

/// Query of a backfeed call.
///
/// ```text
/// POST /backfeed/legacy/SLUG-SECRET?delimiter=%00[&itemseparator=%1F][&shard=NAME][&skipbloom=1]
/// body: records joined by the delimiter, with a trailing delimiter
/// ```
#[derive(Debug, Deserialize)]
pub struct BackfeedQuery {
    delimiter: Option<String>,
    itemseparator: Option<String>,
    shard: Option<String>,
    skipbloom: Option<String>,
}

fn decode(headers: &HeaderMap, body: Bytes) -> ApiResult<Vec<u8>> {
    let encoding = headers
        .get(header::CONTENT_ENCODING)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("identity");
    let mut out = Vec::new();
    let result = match encoding.trim() {
        "" | "identity" => return Ok(body.to_vec()),
        "gzip" | "x-gzip" => flate2::read::GzDecoder::new(&body[..])
            .take(MAX_DECODED)
            .read_to_end(&mut out),
        "zstd" => match ruzstd::decoding::StreamingDecoder::new(&body[..]) {
            Ok(d) => d.take(MAX_DECODED).read_to_end(&mut out),
            Err(e) => return Err(ApiError::bad_request(format!("Invalid zstd body: {e}"))),
        },
        other => {
            return Err(ApiError::Client(
                axum::http::StatusCode::UNSUPPORTED_MEDIA_TYPE,
                format!("Unsupported Content-Encoding {other}."),
            ))
        }
    };
    result.map_err(|e| ApiError::bad_request(format!("Invalid {encoding} body: {e}")))?;
    if out.len() as u64 >= MAX_DECODED {
        return Err(ApiError::Client(
            axum::http::StatusCode::PAYLOAD_TOO_LARGE,
            "Body too large.".into(),
        ));
    }
    Ok(out)
}

fn one_char(value: Option<&str>, default: char, what: &str) -> ApiResult<char> {
    match value {
        None => Ok(default),
        Some(v) => {
            let mut chars = v.chars();
            match (chars.next(), chars.next()) {
                (Some(c), None) => Ok(c),
                _ => Err(ApiError::bad_request(format!(
                    "{what} must be one character."
                ))),
            }
        }
    }
}

/// `POST /backfeed/legacy/KEY`: `{"status_code": 200, "added": N, "duplicates": M}`.
pub async fn add_backfeed(
    State(state): State<AppState>,
    Path(key): Path<String>,
    Query(query): Query<BackfeedQuery>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<Response> {
    let forbidden = || ApiError::forbidden("Unknown backfeed key.");
    let (slug, secret) = key.rsplit_once('-').ok_or_else(forbidden)?;
    let settings = match crate::store::valid_slug(slug) {
        true => state.store.project(slug).await?.ok_or_else(forbidden)?,
        false => return Err(forbidden()),
    };
    if settings.backfeed_key.is_empty()
        || !constant_time_eq(secret.as_bytes(), settings.backfeed_key.as_bytes())
    {
        return Err(forbidden());
    }
    let delimiter = one_char(query.delimiter.as_deref(), '\0', "delimiter")?;
    let separator = query
        .itemseparator
        .as_deref()
        .map(|s| one_char(Some(s), '\x1f', "itemseparator"))
        .transpose()?;
    let queue = match query.shard.as_deref() {
        None | Some("") => "todo:backfeed".to_string(),
        Some(shard) if valid_part_name(shard) => format!("todo:backfeed:{shard}"),
        Some(_) => return Err(ApiError::bad_request("shard must be [a-z0-9_-]{1,32}.")),
    };
    let skip = query
        .skipbloom
        .as_deref()
        .is_some_and(|v| v != "0" && !v.is_empty());
    let raw = decode(&headers, body)?;
    let text =
        String::from_utf8(raw).map_err(|_| ApiError::bad_request("Records must be UTF-8."))?;
    let patterns = state.store.patterns(slug).await?;
    let mut records = Vec::new();
    for record in text.split(delimiter).filter(|r| !r.is_empty()) {
        let (key, item) = match separator.and_then(|sep| record.split_once(sep)) {
            Some((key, rest)) => (key, rest),
            None => (record, record),
        };
        if item.is_empty() || item.len() > super::warrior::MAX_ITEM_LEN {
            return Err(ApiError::bad_request(format!(
                "Items must be 1 to {} bytes.",
                super::warrior::MAX_ITEM_LEN
            )));
        }
        records.push(BackfeedRecord {
            hash: bloom_hash(key.as_bytes()),
            part: patterns.part_of(item),
            item: item.to_string(),
        });
    }
    let outcome = state
        .store
        .backfeed(
            slug,
            &queue,
            skip,
            settings.bloom_capacity,
            &records,
            now_ms(),
        )
        .await?;
    let (added, duplicates) = outcome.ok_or_else(forbidden)?;
    Ok(
        Json(serde_json::json!({ "status_code": 200, "added": added, "duplicates": duplicates }))
            .into_response(),
    )
}
