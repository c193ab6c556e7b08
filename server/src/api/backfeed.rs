//! `POST /backfeed/legacy/KEY`: items discovered by workers, de-duplicated by the project's
//! Bloom filter. Bodies are decompressed and split on blocking threads, a few at once, within
//! the caps of [`crate::limits::Limits`] ([`body`]).

use crate::web::{constant_time_eq, ApiError, ApiResult};
use crate::{state::AppState, store::now_ms};
use axum::{
    body::Bytes,
    extract::{Extension, Path, Query, State},
    http::{header, HeaderMap, StatusCode},
    response::{IntoResponse, Response},
    Json,
};
use body::{Caps, Encoding, Format};
use serde::Deserialize;
use std::sync::Arc;
use tokio::sync::Semaphore;

mod body;

/// Query of a backfeed call.
///
/// ```text
/// POST /backfeed/legacy/SLUG-SECRET?delimiter=%00[&itemseparator=%1F][&shard=NAME][&skipbloom=1]
/// body: records joined by the delimiter, with a trailing delimiter
/// ```
///
/// `shard` is one of the project's `backfeed_shards`, or any name of [`valid_shard_name`],
/// made on first use, up to [`MAX_SHARDS`].
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct BackfeedQuery {
    delimiter: Option<String>,
    itemseparator: Option<String>,
    shard: Option<String>,
    skipbloom: Option<String>,
}

/// Turns at decompressing and splitting bodies, [`crate::limits::Limits::backfeed_decodes`]
/// at once: each may hold a decompressed body of up to the cap, so their number bounds that
/// memory. Shared by the route (an extension), built from the limits it is served with.
#[derive(Clone)]
pub struct DecodeSlots(Arc<Semaphore>);

impl DecodeSlots {
    /// `n` turns at once (at least one).
    pub fn new(n: usize) -> Self {
        Self(Arc::new(Semaphore::new(n.max(1))))
    }
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

/// The most backfeed shard queues a project makes from the names calls send (declared ones
/// in `backfeed_shards` are always accepted).
pub const MAX_SHARDS: usize = 256;
/// The longest shard name.
pub const MAX_SHARD_NAME: usize = 64;

/// Whether `name` may name a shard a call makes: `[A-Za-z0-9_.:-]{1,64}`.
pub fn valid_shard_name(name: &str) -> bool {
    (1..=MAX_SHARD_NAME).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_.:-".contains(&b))
}

/// `POST /backfeed/legacy/KEY`: `{"status_code": 200, "added": N, "duplicates": M}`, with
/// `"rejected": R, "rejected_reason": "..."` (the first's) when records were rejected one by one
/// (not UTF-8, an item too long): the rest are queued. Every check of the call (key, query,
/// shard, size, record count) passes before anything is queued.
#[tracing::instrument(skip_all)]
#[utoipa::path(
    post,
    path = "/backfeed/legacy/{key}",
    tag = "warrior",
    params(("key" = String, Path, description = "The backfeed key: `SLUG-KEY`, or `SLUG` with an `?key=` query"), BackfeedQuery),
    request_body(content = String, content_type = "application/octet-stream", description = "Items separated by NUL or newlines; gzip or zstd (with the project's dictionary) when `Content-Encoding` says so"),
    responses(
        (status = 200, description = "How many records were new", content_type = "text/plain"),
        (status = 403, description = "Unknown key"),
    ),
)]
pub async fn add_backfeed(
    State(state): State<AppState>,
    Extension(slots): Extension<DecodeSlots>,
    Path(key): Path<String>,
    Query(query): Query<BackfeedQuery>,
    headers: HeaderMap,
    body: Bytes,
) -> ApiResult<Response> {
    let forbidden = || ApiError::forbidden("Unknown backfeed key.");
    let (slug, secret) = key.rsplit_once('-').ok_or_else(forbidden)?;
    // A sink: answered as taken, dropped unread (a project this tracker does not host).
    let sinks = &state.config.limits.backfeed_sinks;
    if sinks
        .iter()
        .any(|s| !s.is_empty() && (*s == key || s == slug))
    {
        return Ok(Json(serde_json::json!({
            "status_code": 200, "added": 0, "duplicates": 0, "sink": true
        }))
        .into_response());
    }
    let settings = match crate::store::valid_slug(slug) {
        true => state
            .store
            .projects()
            .project(slug)
            .await?
            .ok_or_else(forbidden)?,
        false => return Err(forbidden()),
    };
    // Any of the project's keys (one per grab script that feeds it: `backfeed_key=k1,k2`).
    // Every key is compared (in constant time), so the time taken tells nothing of which.
    let fed_by = settings
        .backfeed_key
        .split(',')
        .filter(|k| !k.is_empty())
        .fold(None, |hit, k| {
            match constant_time_eq(secret.as_bytes(), k.as_bytes()) {
                true => Some(k),
                false => hit,
            }
        })
        .ok_or_else(forbidden)?;
    let delimiter = one_char(query.delimiter.as_deref(), '\0', "delimiter")?;
    let separator = query
        .itemseparator
        .as_deref()
        .map(|s| one_char(Some(s), '\x1f', "itemseparator"))
        .transpose()?;
    let patterns = state.store.projects().patterns(slug).await?;
    // Shards are made when first named (urls-grab names a new one every day:
    // `periodic<YEAR><DAY>`), if the project's shard pattern admits the name, up to a cap of
    // shard queues per project.
    let queue = match query.shard.as_deref() {
        None | Some("") => "todo:backfeed".to_string(),
        Some(shard) if settings.backfeed_shards.iter().any(|s| s == shard) => {
            format!("todo:backfeed:{shard}")
        }
        Some(shard) if !valid_shard_name(shard) => {
            return Err(ApiError::bad_request(format!(
                "A shard name is 1 to {MAX_SHARD_NAME} of A-Z, a-z, 0-9, '_', '.', ':' and '-'."
            )))
        }
        Some(shard) if !patterns.shard_allowed(shard) => {
            return Err(ApiError::bad_request(format!(
                "This project makes backfeed shards only of names matching {:?} (or those in \
                 backfeed_shards).",
                settings.shard_pattern
            )))
        }
        Some(shard) => {
            let queue = format!("todo:backfeed:{shard}");
            let mut shards = state.store.projects().backfeed_shards(slug).await?;
            let full = |shards: &[String]| {
                !shards.iter().any(|s| s == shard) && shards.len() >= MAX_SHARDS
            };
            if full(&shards) {
                // Yesterday's shards that were drained make room for today's.
                let retired = state
                    .store
                    .projects()
                    .retire_empty_shards(slug, &settings.backfeed_shards)
                    .await?;
                if !retired.is_empty() {
                    tracing::info!(%slug, retired = retired.len(), "retired empty backfeed shards");
                    shards.retain(|s| !retired.contains(&format!("todo:backfeed:{s}")));
                }
            }
            if full(&shards) {
                return Err(ApiError::bad_request(format!(
                    "This project has {MAX_SHARDS} backfeed shards holding items already; \
                     empty ones are retired when a new one is needed. Drain or clear one \
                     (tracker queue clear), or name the shard in backfeed_shards."
                )));
            }
            queue
        }
    };
    let skip = query
        .skipbloom
        .as_deref()
        .is_some_and(|v| v != "0" && !v.is_empty());
    let encoding = Encoding::from_header(
        headers
            .get(header::CONTENT_ENCODING)
            .and_then(|v| v.to_str().ok()),
    )?;
    let limits = &state.config.limits;
    let (caps, format) = (
        Caps::from(limits),
        Format {
            delimiter,
            separator,
            max_records: limits.backfeed_records,
            max_item: limits.item,
        },
    );
    let turn = slots.0.clone().acquire_owned().await.ok();
    // Decompressing and hashing megabytes is CPU work: off the async workers. The turn goes
    // with it, so a call that times out meanwhile still holds it until the work ends.
    let (records, rejected) = tokio::task::spawn_blocking(move || {
        let _turn = turn;
        body::records(encoding, body, caps, format, &patterns)
    })
    .await
    .map_err(|e| {
        tracing::error!(error = %e, "backfeed decoding failed");
        ApiError::Client(StatusCode::INTERNAL_SERVER_ERROR, "Internal error.".into())
    })??;
    let outcome = state
        .store
        .queue()
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
    // Which key fed how many (a statistic: its failure does not fail the queued records).
    let id = crate::store::fed::key_id(fed_by);
    if let Err(e) = state
        .store
        .queue()
        .count_fed(slug, &id, added + duplicates, added, now_ms())
        .await
    {
        tracing::warn!(%slug, error = %e, "could not count what a backfeed key fed");
    }
    let mut answer =
        serde_json::json!({ "status_code": 200, "added": added, "duplicates": duplicates });
    if rejected.count > 0 {
        answer["rejected"] = rejected.count.into();
        answer["rejected_reason"] = rejected.first.unwrap_or_default().into();
    }
    Ok(Json(answer).into_response())
}
