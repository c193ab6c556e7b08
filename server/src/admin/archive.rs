//! Archiving the completion log: its oldest entries, up to a chosen time, go to a gzip NDJSON
//! file in the archive directory (or object store) and are then trimmed from Redis.
//!
//! Design: an archive starts right after the last entry archived before it (each file's gzip
//! header names its last entry id, `through=ID`), so the files of a project are contiguous
//! and never overlap, even when the trim after a file failed: the next archive trims through
//! that id first. The file is written to a temporary name, flushed to disk and renamed before
//! anything is trimmed; the trim removes entries up to the last id written (`XTRIM MINID`),
//! so entries added meanwhile stay. One archive of a project runs at a time across processes:
//! it holds the project's offload lease (the panel's archive borrows this process's
//! offloader's, and is refused while another process holds it). Files are
//! `ARCHIVE_DIR/SLUG/TAG/SLUG-FIRSTMS-LASTMS.ndjson.gz` (mode 0600, in 0700 directories), or
//! objects under `_archives/` of the object store that keeps the segments
//! ([`crate::storage::Storage::archives`]), one line per entry as `GET /admin/api/SLUG/log`
//! gives it.

use super::{auth::Caller, items::Affected};
use crate::openapi::ProjectPath;
use crate::store::offload::offloader::archive::{
    archive_now, offload_state, valid_archive_name, ArchiveError, Archives, Written,
};
use crate::{
    state::AppState,
    web::{known_project, ApiError, ApiResult},
};
pub use app::model::admin::ArchiveLog;
use app::model::admin::{ArchiveFile, Archived, OffloadState};
use axum::{
    body::Body,
    extract::{Path, State},
    http::{header, HeaderValue, StatusCode},
    response::{IntoResponse, Response},
    Json,
};

fn write_failed(e: std::io::Error) -> ApiError {
    tracing::error!(error = %e, "writing a log archive");
    ApiError::Client(
        StatusCode::INTERNAL_SERVER_ERROR,
        "The archive could not be written (see the server log).".into(),
    )
}

/// `POST /admin/api/SLUG/log/archive`: writes the log entries up to `to` to a gzip NDJSON file
/// and trims them from Redis (dry run: counts them).
#[utoipa::path(
    post,
    path = "/{slug}/log/archive",
    tag = "admin",
    params(ProjectPath),
    responses((status = 200, body = Archived)),
)]
pub async fn archive_log(
    State(state): State<AppState>,
    caller: Caller,
    Path(slug): Path<String>,
    Json(req): Json<ArchiveLog>,
) -> ApiResult<Json<Archived>> {
    caller.may_change(&slug)?;
    known_project(&state, &slug).await?;
    let store = &state.store;
    let end = format!("{}-{}", req.to, u64::MAX);
    if req.dry_run {
        let mut count = 0;
        let mut start = "-".to_string();
        loop {
            let page = store.fleet().log_page(&slug, &start, &end, 1000).await?;
            count += page.len() as u64;
            match page.last() {
                Some((id, _)) if page.len() == 1000 => start = format!("({id}"),
                _ => break,
            }
        }
        return Ok(Json(Archived {
            affected: Affected {
                count,
                dry_run: true,
            },
            file: None,
        }));
    }
    let written = archive_now(store, &state.config.archive_dir, &slug, &end).await;
    let written = written.map_err(|e| match e {
        ArchiveError::Io(e) => write_failed(e),
        ArchiveError::Store(e) => ApiError::from(e),
        ArchiveError::Leased => ApiError::Client(
            StatusCode::CONFLICT,
            "Another tracker process holds this project's offload lease and archives its log; try again in 30 s.".into(),
        ),
    })?;
    let Some(Written {
        name,
        count,
        trimmed,
        ..
    }) = written
    else {
        return Ok(Json(Archived {
            affected: Affected {
                count: 0,
                dry_run: false,
            },
            file: None,
        }));
    };
    tracing::info!(slug, file = %name, count, trimmed, "archived the completion log");
    caller
        .record(&state, "log.archive", &slug, count, name.clone())
        .await?;
    Ok(Json(Archived {
        affected: Affected {
            count,
            dry_run: false,
        },
        file: Some(name),
    }))
}

/// `GET /admin/api/SLUG/offload`: what of the project is on disk, and the offloader's state.
#[utoipa::path(
    get,
    path = "/{slug}/offload",
    tag = "admin",
    params(ProjectPath),
    responses((status = 200, body = OffloadState)),
)]
pub async fn show_offload(
    State(state): State<AppState>,
    caller: Caller,
    Path(slug): Path<String>,
) -> ApiResult<Json<OffloadState>> {
    caller.may_view(&slug)?;
    known_project(&state, &slug).await?;
    Ok(Json({
        let mut o = offload_state(&state.store, &state.config.archive_dir, &slug).await?;
        o.log_budget = state.config.limits.log_budget;
        o
    }))
}

/// `GET /admin/api/SLUG/archives`: the archive files of a project, newest first.
#[utoipa::path(
    get,
    path = "/{slug}/archives",
    tag = "admin",
    params(ProjectPath),
    responses((status = 200, body = [ArchiveFile])),
)]
pub async fn list_archives(
    State(state): State<AppState>,
    caller: Caller,
    Path(slug): Path<String>,
) -> ApiResult<Json<Vec<ArchiveFile>>> {
    caller.may_view(&slug)?;
    known_project(&state, &slug).await?;
    let archives = Archives::of(&state.store, &state.config.archive_dir, &slug).await?;
    let listed = archives.blocking(|a| a.files()).await.map_err(unreadable)?;
    let mut out: Vec<ArchiveFile> = listed
        .into_iter()
        .map(|f| ArchiveFile {
            name: f.name,
            bytes: f.bytes,
        })
        .collect();
    out.sort_by(|a, b| b.name.cmp(&a.name));
    Ok(Json(out))
}

/// The answer when the archives cannot be read now (an object store down): 503, to retry.
pub(super) fn unreadable(e: std::io::Error) -> ApiError {
    tracing::warn!(error = %e, "log archives unreadable: answered 503");
    ApiError::Unavailable(
        crate::web::UNAVAILABLE_RETRY_AFTER,
        "The log archives cannot be read now; retry shortly.".into(),
    )
}

/// `GET /admin/api/SLUG/archives/NAME`: one archive file, streamed.
#[utoipa::path(
    get,
    path = "/{slug}/archives/{name}",
    tag = "admin",
    params(ProjectPath, ("name" = String, Path, description = "The archive file's name")),
)]
pub async fn download_archive(
    State(state): State<AppState>,
    caller: Caller,
    Path((slug, name)): Path<(String, String)>,
) -> ApiResult<Response> {
    caller.may_view(&slug)?;
    known_project(&state, &slug).await?;
    if !valid_archive_name(&name) {
        return Err(ApiError::not_found("No such archive."));
    }
    let archives = Archives::of(&state.store, &state.config.archive_dir, &slug).await?;
    let wanted = name.clone();
    let opened = archives.blocking(move |a| a.open(&wanted)).await;
    let reader = match opened {
        Ok(r) => r,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(ApiError::not_found("No such archive."))
        }
        Err(e) => return Err(unreadable(e)),
    };
    let mut resp = Body::from_stream(reader.chunks()).into_response();
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/gzip"),
    );
    if let Ok(v) = HeaderValue::from_str(&format!("attachment; filename=\"{name}\"")) {
        h.insert(header::CONTENT_DISPOSITION, v);
    }
    Ok(resp)
}
