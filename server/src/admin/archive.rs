//! Archiving the completion log: its oldest entries, up to a chosen time, go to a gzip NDJSON
//! file in the archive directory and are then trimmed from Redis.
//!
//! Design: an archive starts right after the last entry archived before it (each file's gzip
//! header names its last entry id, `through=ID`), so the files of a project are contiguous
//! and never overlap, even when the trim after a file failed: the next archive trims through
//! that id first. The file is written to a temporary name, flushed to disk and renamed before
//! anything is trimmed; the trim removes entries up to the last id written (`XTRIM MINID`),
//! so entries added meanwhile stay. One archive of a project runs at a time across processes:
//! it holds the project's offload lease (the panel's archive borrows this process's
//! offloader's, and is refused while another process holds it). Files are
//! `ARCHIVE_DIR/SLUG/SLUG-FIRSTMS-LASTMS.ndjson.gz` (mode 0600, in 0700 directories), one line
//! per entry as `GET /admin/api/SLUG/log` gives it.

use super::{auth::Caller, items::Affected, logs::page_text};
use crate::{
    web::{known_project, ApiError, ApiResult},
    AppState,
};
use app::model::admin::{ArchiveFile, Archived, OffloadState};
use axum::{
    body::Body,
    extract::{Path, State},
    http::{header, HeaderValue, StatusCode},
    response::{IntoResponse, Response},
    Json,
};
use serde::Deserialize;
use std::{io::Write, path::PathBuf};

/// One archive run at a time in this process.
pub(crate) static ARCHIVING: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Body of `POST /admin/api/SLUG/log/archive`.
#[derive(Debug, Deserialize)]
pub struct ArchiveLog {
    /// Archive the entries up to this time (ms, inclusive).
    pub to: u64,
    /// Only count.
    #[serde(default)]
    pub dry_run: bool,
}

fn write_failed(e: std::io::Error) -> ApiError {
    tracing::error!(error = %e, "writing a log archive");
    ApiError::Client(
        StatusCode::INTERNAL_SERVER_ERROR,
        "The archive could not be written (see the server log).".into(),
    )
}

pub(crate) fn project_dir(state: &AppState, slug: &str) -> PathBuf {
    state.config.archive_dir.join(slug)
}

/// `POST /admin/api/SLUG/log/archive`: writes the log entries up to `to` to a gzip NDJSON file
/// and trims them from Redis (dry run: counts them).
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
            let page = store.log_page(&slug, &start, &end, 1000).await?;
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
    // This process's offloader's lease, or a lease of its own for this archive only.
    let (token, borrowed) = match store.offload_token() {
        Some(t) => (t, true),
        None => (super::random_token(16), false),
    };
    let written = write_archive(store, project_dir(&state, &slug), &slug, &end, &token).await;
    if !borrowed {
        let _ = store.release_offload_lease(&slug, &token).await;
    }
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

/// Why an archive could not be written.
#[derive(Debug)]
pub enum ArchiveError {
    /// The file.
    Io(std::io::Error),
    /// Reading or trimming the log.
    Store(crate::store::StoreError),
    /// Another process holds the project's offload lease (and archives).
    Leased,
}

impl std::fmt::Display for ArchiveError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ArchiveError::Io(e) => write!(f, "writing the archive: {e}"),
            ArchiveError::Store(e) => write!(f, "reading the log: {e}"),
            ArchiveError::Leased => write!(f, "another process holds the offload lease"),
        }
    }
}

/// An archive written.
pub struct Written {
    /// Its file name.
    pub name: String,
    /// Entries in it.
    pub count: u64,
    /// Entries trimmed from Redis after it was written.
    pub trimmed: u64,
    /// Its size.
    pub bytes: u64,
}

/// Writes the log entries of `slug` after the last one archived through stream id `end`
/// (inclusive) to a new file in `dir` (written, fsynced and renamed) and only then trims them
/// from Redis; `None` when there are none. Holds the offload lease of `slug` with `token`
/// ([`ArchiveError::Leased`] when another holds it); one at a time in this process: the panel's
/// archive and the offloader's ([`crate::offloader`]) share it.
pub async fn write_archive(
    store: &crate::store::Store,
    dir: PathBuf,
    slug: &str,
    end: &str,
    token: &str,
) -> Result<Option<Written>, ArchiveError> {
    let _one = ARCHIVING.lock().await;
    if !store
        .offload_lease(slug, token, crate::offloader::LEASE_MS)
        .await
        .map_err(ArchiveError::Store)?
    {
        return Err(ArchiveError::Leased);
    }
    private_dir(&dir).await.map_err(ArchiveError::Io)?;
    // After the last archive: the trim after it may have failed, so it is done again first.
    let through = {
        let (dir, slug) = (dir.clone(), slug.to_string());
        tokio::task::spawn_blocking(move || last_archived(&dir, &slug))
            .await
            .map_err(std::io::Error::other)
            .map_err(ArchiveError::Io)?
    };
    if let Some(id) = &through {
        store
            .trim_log_through(slug, id)
            .await
            .map_err(ArchiveError::Store)?;
    }
    // Through the last entry at `end` as of now (entries written meanwhile wait for the
    // next archive); its id goes into the file's header.
    let Some(upto) = store
        .log_last_id(slug, end)
        .await
        .map_err(ArchiveError::Store)?
    else {
        return Ok(None);
    };
    if through
        .as_deref()
        .is_some_and(|t| !stream_id_after(&upto, t))
    {
        return Ok(None);
    }
    let tmp = dir.join(format!(".partial-{}", super::random_token(12)));
    let (tx, mut rx) = tokio::sync::mpsc::channel::<String>(4);
    let (tmp_path, comment) = (tmp.clone(), format!("{THROUGH}{upto}"));
    let writer = tokio::task::spawn_blocking(move || -> std::io::Result<()> {
        let file = private_file(&tmp_path)?;
        let mut gz = flate2::GzBuilder::new()
            .comment(comment.into_bytes())
            .write(
                std::io::BufWriter::new(file),
                flate2::Compression::default(),
            );
        while let Some(text) = rx.blocking_recv() {
            gz.write_all(text.as_bytes())?;
        }
        let file = gz.finish()?.into_inner().map_err(|e| e.into_error())?;
        file.sync_all()
    });
    let (mut first, mut last, mut count) = (None::<String>, None::<String>, 0u64);
    let mut start = Some(through.map_or_else(|| "-".to_string(), |id| format!("({id}")));
    let mut failure = None;
    while let Some(from) = start.take() {
        let page = match page_text(store, slug, &from, &upto).await {
            Ok(p) => p,
            Err(e) => {
                failure = Some(e);
                break;
            }
        };
        if page.count == 0 {
            break;
        }
        first = first.or(page.first);
        last = page.last;
        count += page.count;
        if tx.send(page.text).await.is_err() {
            break;
        }
        start = page.next;
    }
    drop(tx);
    let written = writer.await.map_err(std::io::Error::other).and_then(|r| r);
    let (first, last) = match (written, failure, first, last) {
        (Ok(()), None, Some(first), Some(last)) => (first, last),
        (written, failure, ..) => {
            let _ = tokio::fs::remove_file(&tmp).await;
            written.map_err(ArchiveError::Io)?;
            if let Some(e) = failure {
                return Err(ArchiveError::Store(e));
            }
            return Ok(None);
        }
    };
    let ms = |id: &str| id.split('-').next().unwrap_or_default().to_string();
    let mut name = format!("{slug}-{}-{}.ndjson.gz", ms(&first), ms(&last));
    let mut n = 1;
    while tokio::fs::try_exists(dir.join(&name))
        .await
        .unwrap_or(false)
    {
        n += 1;
        name = format!("{slug}-{}-{}-{n}.ndjson.gz", ms(&first), ms(&last));
    }
    tokio::fs::rename(&tmp, dir.join(&name))
        .await
        .map_err(ArchiveError::Io)?;
    if let Ok(d) = std::fs::File::open(&dir) {
        let _ = d.sync_all();
    }
    let bytes = tokio::fs::metadata(dir.join(&name))
        .await
        .map(|m| m.len())
        .unwrap_or(0);
    let trimmed = store
        .trim_log_through(slug, &last)
        .await
        .map_err(ArchiveError::Store)?;
    Ok(Some(Written {
        name,
        count,
        trimmed,
        bytes,
    }))
}

/// The gzip comment of an archive file: this, then the id of its last entry.
const THROUGH: &str = "through=";

/// Whether stream id `a` (`ms-seq`) comes after `b`.
fn stream_id_after(a: &str, b: &str) -> bool {
    let parse = |id: &str| -> (u64, u64) {
        let (ms, seq) = id.split_once('-').unwrap_or((id, "0"));
        (ms.parse().unwrap_or(0), seq.parse().unwrap_or(0))
    };
    parse(a) > parse(b)
}

/// The id of the last entry archived in `dir` (the newest file's header), if any file says.
/// Files written before headers named it say nothing (then archiving starts at the oldest
/// entry in Redis, as it did).
pub fn last_archived(dir: &std::path::Path, slug: &str) -> Option<String> {
    let prefix = format!("{slug}-");
    let last_ms = |name: &str| -> Option<u64> {
        let rest = name.strip_prefix(&prefix)?.strip_suffix(".ndjson.gz")?;
        rest.split('-').nth(1)?.parse().ok()
    };
    let names: Vec<(u64, String)> = std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            (valid_archive_name(&name)).then_some(())?;
            Some((last_ms(&name)?, name))
        })
        .collect();
    let newest = names.iter().map(|(ms, _)| *ms).max()?;
    names
        .iter()
        .filter(|(ms, _)| *ms == newest)
        .filter_map(|(_, name)| {
            let file = std::fs::File::open(dir.join(name)).ok()?;
            let gz = flate2::read::GzDecoder::new(std::io::BufReader::new(file));
            let comment = gz.header()?.comment()?;
            let id = std::str::from_utf8(comment).ok()?.strip_prefix(THROUGH)?;
            Some(id.to_string())
        })
        .max_by(|a, b| {
            if stream_id_after(a, b) {
                std::cmp::Ordering::Greater
            } else {
                std::cmp::Ordering::Less
            }
        })
}

/// Creates `dir` (and its parents) if missing, readable by this user only (0700): archives
/// hold addresses and user agents.
async fn private_dir(dir: &std::path::Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    let dir = dir.to_path_buf();
    tokio::task::spawn_blocking(move || {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&dir)
    })
    .await
    .map_err(std::io::Error::other)?
}

/// A new file at `path`, readable by this user only (0600).
fn private_file(path: &std::path::Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::File::options()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
}

/// The count and bytes of the log archive files of `slug`.
pub fn archive_totals(state: &AppState, slug: &str) -> (u64, u64) {
    let Ok(read) = std::fs::read_dir(project_dir(state, slug)) else {
        return (0, 0);
    };
    read.flatten()
        .filter(|e| valid_archive_name(&e.file_name().to_string_lossy()))
        .fold((0, 0), |(n, b), e| {
            (n + 1, b + e.metadata().map(|m| m.len()).unwrap_or(0))
        })
}

/// What of `slug` is on disk: segments and log archives ([`OffloadState`]).
pub async fn offload_state(state: &AppState, slug: &str) -> ApiResult<OffloadState> {
    let mut out = state.store.offload_summary(slug).await?;
    // A directory listing: off the async workers.
    let (st, sl) = (state.clone(), slug.to_string());
    (out.log_files, out.log_bytes) = tokio::task::spawn_blocking(move || archive_totals(&st, &sl))
        .await
        .unwrap_or((0, 0));
    Ok(out)
}

/// `GET /admin/api/SLUG/offload`: what of the project is on disk, and the offloader's state.
pub async fn show_offload(
    State(state): State<AppState>,
    caller: Caller,
    Path(slug): Path<String>,
) -> ApiResult<Json<OffloadState>> {
    caller.may_view(&slug)?;
    known_project(&state, &slug).await?;
    Ok(Json(offload_state(&state, &slug).await?))
}

/// `GET /admin/api/SLUG/archives`: the archive files of a project, newest first.
pub async fn list_archives(
    State(state): State<AppState>,
    caller: Caller,
    Path(slug): Path<String>,
) -> ApiResult<Json<Vec<ArchiveFile>>> {
    caller.may_view(&slug)?;
    known_project(&state, &slug).await?;
    let mut out = Vec::new();
    let Ok(mut dir) = tokio::fs::read_dir(project_dir(&state, &slug)).await else {
        return Ok(Json(out));
    };
    while let Ok(Some(entry)) = dir.next_entry().await {
        let name = entry.file_name().to_string_lossy().to_string();
        if !valid_archive_name(&name) {
            continue;
        }
        let bytes = entry.metadata().await.map(|m| m.len()).unwrap_or(0);
        out.push(ArchiveFile { name, bytes });
    }
    out.sort_by(|a, b| b.name.cmp(&a.name));
    Ok(Json(out))
}

/// Whether `name` can be an archive's file name (and nothing else: no path).
fn valid_archive_name(name: &str) -> bool {
    name.ends_with(".ndjson.gz")
        && !name.starts_with('.')
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"-.".contains(&b))
}

/// `GET /admin/api/SLUG/archives/NAME`: one archive file, streamed.
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
    let file = tokio::fs::File::open(project_dir(&state, &slug).join(&name))
        .await
        .map_err(|_| ApiError::not_found("No such archive."))?;
    let mut resp = Body::from_stream(tokio_util::io::ReaderStream::new(file)).into_response();
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
