//! The completion log's archive files: the log's entries after the last archived, written to a
//! gzip NDJSON file (fsynced and renamed) and only then trimmed from Redis; the last entry a
//! directory's files hold; their count and bytes. The offloader archives old entries
//! ([`super::Offloader`]); the panel's "Archive" button and log download read and write the same
//! files ([`crate::admin`]).

use super::super::{Store, StoreError};

mod archives;

use app::model::admin::OffloadState;
pub use archives::{
    archive_dir_of, project_dir, project_prefix, valid_archive_name, ArchiveObject, Archives,
};
use std::{io::Write, path::Path};

/// One archive run at a time in this process.
pub static ARCHIVING: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Entries read per Redis call.
const PAGE: u64 = 1000;

/// One page of the log as NDJSON.
pub struct Page {
    /// One JSON object a line.
    pub text: String,
    /// The exclusive start of the next page (none after the last).
    pub next: Option<String>,
    /// The stream id of the first entry.
    pub first: Option<String>,
    /// The stream id of the last entry.
    pub last: Option<String>,
    /// How many entries.
    pub count: u64,
}

/// The page of up to [`PAGE`] entries from stream id `start` to `end`.
pub async fn page_text(
    store: &Store,
    slug: &str,
    start: &str,
    end: &str,
) -> Result<Page, StoreError> {
    let entries = store.fleet().log_page(slug, start, end, PAGE).await?;
    let next = (entries.len() as u64 == PAGE)
        .then(|| entries.last().map(|(id, _)| format!("({id}")))
        .flatten();
    let count = entries.len() as u64;
    let first = entries.first().map(|(id, _)| id.clone());
    let last = entries.last().map(|(id, _)| id.clone());
    let mut text = String::new();
    for (id, fields) in entries {
        let mut obj = serde_json::Map::new();
        obj.insert("log_id".into(), id.into());
        for (k, v) in fields {
            let value = match k.as_str() {
                "t" => v.parse::<u64>().map(Into::into).unwrap_or(v.into()),
                "items" | "claimed" | "bytes" => serde_json::from_str(&v).unwrap_or(v.into()),
                _ => v.into(),
            };
            obj.insert(k, value);
        }
        text.push_str(&serde_json::Value::Object(obj).to_string());
        text.push('\n');
    }
    Ok(Page {
        text,
        next,
        first,
        last,
        count,
    })
}

/// Why an archive could not be written.
#[derive(Debug)]
pub enum ArchiveError {
    /// The file.
    Io(std::io::Error),
    /// Reading or trimming the log.
    Store(StoreError),
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
#[derive(Debug)]
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
/// (inclusive; at most the last entry folded) to a new archive in `archives` (written,
/// fsynced and stored whole) and only then trims them from Redis; `None` when there are none.
/// Holds the offload lease of `slug` with `token` ([`ArchiveError::Leased`] when another holds
/// it); one at a time in this process: the panel's archive and the offloader's ([`super`])
/// share it.
pub async fn write_archive(
    store: &Store,
    archives: &Archives,
    slug: &str,
    end: &str,
    token: &str,
) -> Result<Option<Written>, ArchiveError> {
    let _one = ARCHIVING.lock().await;
    if !store
        .offload()
        .offload_lease(slug, token, super::LEASE_MS)
        .await
        .map_err(ArchiveError::Store)?
    {
        return Err(ArchiveError::Leased);
    }
    // After the last archive: the trim after it may have failed, so it is done again first.
    let through = on_archives(archives, |a| a.last_archived()).await?;
    if let Some(id) = &through {
        store
            .fleet()
            .trim_log_through(slug, id)
            .await
            .map_err(ArchiveError::Store)?;
    }
    // Through the last entry at `end` as of now (entries written meanwhile wait for the
    // next archive), and never past the last entry folded (the fold reads the entries after
    // it from Redis); its id goes into the file's header.
    let folded = store
        .figures()
        .fold_through(slug)
        .await
        .map_err(ArchiveError::Store)?;
    let end = match folded.as_deref() {
        Some(f) if end == "+" || stream_id_after(end, f) => f,
        _ => end,
    };
    let Some(upto) = store
        .fleet()
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
    let (tmp, file) = on_archives(archives, |a| a.spool()).await?;
    let (tx, mut rx) = tokio::sync::mpsc::channel::<String>(4);
    let comment = format!("{THROUGH}{upto}");
    let writer = tokio::task::spawn_blocking(move || -> std::io::Result<()> {
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
    // Still the lease's holder (a long write can outlast it): else another process may be
    // archiving the same entries, and this file would repeat them.
    let held = store
        .offload()
        .offload_lease(slug, token, super::LEASE_MS)
        .await;
    if !matches!(held, Ok(true)) {
        let _ = tokio::fs::remove_file(&tmp).await;
        return Err(held.map_or_else(ArchiveError::Store, |_| ArchiveError::Leased));
    }
    let stored = {
        let (tmp, first, last) = (tmp.clone(), first.clone(), last.clone());
        on_archives(archives, move |a| a.store(&tmp, &first, &last)).await
    };
    let _ = tokio::fs::remove_file(&tmp).await;
    let (name, bytes) = stored?;
    archives.forget_totals();
    let trimmed = store
        .fleet()
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

/// Runs `call` on `archives` on a blocking thread ([`Archives::blocking`]).
async fn on_archives<T: Send + 'static>(
    archives: &Archives,
    call: impl FnOnce(&Archives) -> std::io::Result<T> + Send + 'static,
) -> Result<T, ArchiveError> {
    archives.blocking(call).await.map_err(ArchiveError::Io)
}

/// The panel's archive of the log of `slug` through stream id `end`: under the lease of this
/// process's offloader when it runs one, else under a lease of its own for this archive only,
/// given up after (or, if giving it up fails, lapsing in [`super::LEASE_MS`]).
pub async fn archive_now(
    store: &Store,
    archive_dir: &Path,
    slug: &str,
    end: &str,
) -> Result<Option<Written>, ArchiveError> {
    let archives = Archives::of(store, archive_dir, slug)
        .await
        .map_err(ArchiveError::Store)?;
    let (token, borrowed) = match store.offload().offload_token() {
        Some(t) => (t, true),
        None => (super::super::super::people::tokens::random_token(16), false),
    };
    let written = write_archive(store, &archives, slug, end, &token).await;
    if !borrowed {
        if let Err(e) = store.offload().release_offload_lease(slug, &token).await {
            tracing::warn!(slug, error = %e, "giving up an archive's lease; it lapses by itself");
        }
    }
    written
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

/// What of `slug` is on disk: segments and log archives ([`OffloadState`]).
pub async fn offload_state(
    store: &Store,
    archive_dir: &Path,
    slug: &str,
) -> Result<OffloadState, StoreError> {
    let mut out = store.offload().offload_summary(slug).await?;
    let archives = Archives::of(store, archive_dir, slug).await?;
    (out.log_files, out.log_bytes) = match archives.cached_totals() {
        Some((totals, true)) => totals,
        cached => {
            // A listing: off the async workers, and waited for a short while only; a listing
            // that fails, or is slow, shows the last one (or none) and refreshes nothing.
            let last = cached.map_or((0, 0), |(t, _)| t);
            let listing = tokio::task::spawn_blocking(move || archives.totals());

            match tokio::time::timeout(archives::TOTALS_WAIT, listing).await {
                Ok(Ok(Ok(totals))) => totals,
                _ => last,
            }
        }
    };
    Ok(out)
}
