//! The completion log of a project as NDJSON, streamed page by page for any time range.

use super::auth::Caller;
use crate::openapi::ProjectPath;
use crate::store::offload::offloader::archive::Archives;
use crate::{
    state::AppState,
    web::{known_project, ApiResult},
};
use axum::{
    body::Body,
    extract::{Path, Query, State},
    http::{header, HeaderValue},
    response::{IntoResponse, Response},
};
use serde::Deserialize;

/// Query of `GET /admin/api/SLUG/log`.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct LogRange {
    /// From this time (ms, inclusive; default: the start).
    #[serde(default)]
    pub from: Option<u64>,
    /// To this time (ms, inclusive; default: now).
    #[serde(default)]
    pub to: Option<u64>,
}

/// `GET /admin/api/SLUG/log?from=MS&to=MS`: one JSON object per completion report, oldest first:
///
/// ```text
/// {"log_id":"1700000000000-0","t":1700000000000,"d":"alice","ip":"…","ua":"…","v":"…",
///  "items":["…"],"claimed":{…},"bytes":{"data":123},"id":"…"}
/// ```
#[utoipa::path(
    get,
    path = "/{slug}/log",
    tag = "admin",
    params(ProjectPath, LogRange)
)]
pub async fn download_log(
    State(state): State<AppState>,
    caller: Caller,
    Path(slug): Path<String>,
    Query(range): Query<LogRange>,
) -> ApiResult<Response> {
    caller.may_view(&slug)?;
    known_project(&state, &slug).await?;
    let start = range.from.map_or("-".to_string(), |f| format!("{f}-0"));
    let end = range
        .to
        .map_or("+".to_string(), |t| format!("{t}-{}", u64::MAX));
    caller
        .record(
            &state,
            "log.download",
            &slug,
            0,
            format!("from={:?} to={:?}", range.from, range.to),
        )
        .await?;
    let (from_ms, to_ms) = (range.from.unwrap_or(0), range.to.unwrap_or(u64::MAX));
    let archives = Archives::of(&state.store, &state.config.archive_dir, &slug).await?;
    let files = {
        let slug = slug.clone();
        archives
            .blocking(move |a| archives_between(a, &slug, from_ms, to_ms))
            .await
            .map_err(super::archive::unreadable)?
    };
    // The entries archived first (they are older than any left in Redis), each archive
    // read off the async threads, filtered to the range.
    let archived = futures::StreamExt::then(futures::stream::iter(files), move |name: String| {
        let archives = archives.clone();
        async move {
            archives
                .blocking(move |a| archived_lines(a, &name, from_ms, to_ms))
                .await
        }
    });
    let pages = futures::stream::unfold(
        (state.store.clone(), slug, Some(start), end),
        |(store, slug, start, end)| async move {
            let start = start?;
            let page =
                crate::store::offload::offloader::archive::page_text(&store, &slug, &start, &end)
                    .await;
            let (text, next) = match page {
                Ok(p) => (p.text, p.next),
                Err(e) => {
                    return Some((
                        Err(std::io::Error::other(e.to_string())),
                        (store, slug, None, end),
                    ))
                }
            };
            if text.is_empty() {
                return None;
            }
            Some((Ok(text), (store, slug, next, end)))
        },
    );
    let mut resp = Body::from_stream(futures::StreamExt::chain(archived, pages)).into_response();
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/x-ndjson"),
    );
    h.insert(
        header::CONTENT_DISPOSITION,
        HeaderValue::from_static("attachment; filename=\"completions.ndjson\""),
    );
    Ok(resp)
}

/// The archive files of `slug` in `archives` (`SLUG-FIRSTMS-LASTMS[-N].ndjson.gz`) holding
/// entries from `from` to `to` (ms), oldest first.
pub fn archives_between(
    archives: &Archives,
    slug: &str,
    from: u64,
    to: u64,
) -> std::io::Result<Vec<String>> {
    let mut files: Vec<(u64, u64, String)> = archives
        .files()?
        .into_iter()
        .filter_map(|f| {
            let rest = f
                .name
                .strip_prefix(slug)?
                .strip_prefix('-')?
                .strip_suffix(".ndjson.gz")?;
            let mut parts = rest.split('-');
            let first: u64 = parts.next()?.parse().ok()?;
            let last: u64 = parts.next()?.parse().ok()?;
            Some((first, last, f.name))
        })
        .filter(|(first, last, _)| *first <= to && *last >= from)
        .collect();
    files.sort();
    Ok(files.into_iter().map(|(_, _, n)| n).collect())
}

/// The lines of archive `name` whose entry's time `t` is from `from` to `to` (ms).
fn archived_lines(archives: &Archives, name: &str, from: u64, to: u64) -> std::io::Result<String> {
    use std::io::BufRead;
    let reader = std::io::BufReader::new(flate2::read::GzDecoder::new(archives.open(name)?));
    let mut out = String::new();
    for line in reader.lines() {
        let line = line?;
        let t = serde_json::from_str::<serde_json::Value>(&line)
            .ok()
            .and_then(|v| v["t"].as_u64());
        if t.is_some_and(|t| t >= from && t <= to) {
            out.push_str(&line);
            out.push('\n');
        }
    }
    Ok(out)
}
