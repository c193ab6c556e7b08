//! Deleting what no registry names: segment files a stopped offloader left unregistered (or
//! brought back), and the files of projects a destroy marked.

use super::{Offloader, ORPHAN_AGE};
use crate::store::{StoreError, StoreResult};
use std::{path::Path, time::Duration};

impl Offloader {
    /// Deletes the segment files of `slug` that are not registered, once a minute old.
    pub async fn sweep(&self, slug: &str) -> StoreResult<u64> {
        // Every id the registry names, whether its entry parses or not: a file whose entry this
        // version cannot read (damaged, or of a newer version) is not an orphan, and stays.
        let registered: std::collections::HashSet<String> =
            self.store.segment_ids(slug).await?.into_iter().collect();
        let dir = self.dir.join(slug);
        let gone =
            tokio::task::spawn_blocking(move || remove_orphans(&dir, &registered, ORPHAN_AGE))
                .await
                .map_err(|e| StoreError::Disk(e.to_string()))?;
        Ok(gone)
    }

    /// Deletes the files (segments, log archives) of the projects marked destroyed, and then
    /// their marks: only what a destroy named goes. A failed read deletes nothing, and a
    /// directory no mark names (a Redis emptied or swapped, another install's) is left alone.
    pub async fn sweep_destroyed(&self) -> StoreResult<u64> {
        let marked = self.store.destroyed_projects().await?;
        if marked.is_empty() {
            return Ok(0);
        }
        let live = self.store.project_slugs().await?;
        let mut gone = 0;
        for slug in marked.iter().filter(|s| !live.contains(s)) {
            // Read again right before: another process may have deleted them, cleared the mark
            // and the slug been made again since the marks were read (the purge is slow; the
            // new project's files must stay). The directories are renamed away at once, then
            // deleted: a project made again after that writes to a directory of its own.
            if !self.store.is_destroyed(slug).await?
                || self.store.project_slugs().await?.contains(slug)
            {
                continue;
            }
            purge_project_files(&self.dir, &self.archive_dir, slug).await?;
            self.store.forget_destroyed(slug).await?;
            tracing::info!(slug, "deleted the files of a destroyed project");
            gone += 1;
        }
        Ok(gone)
    }
}

/// Deletes the segment and log archive directories of destroyed project `slug` (none there:
/// nothing to do). Waits for an archive being written in this process.
pub async fn purge_project_files(
    offload_dir: &Path,
    archive_dir: &Path,
    slug: &str,
) -> StoreResult<()> {
    let plain = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-';
    if slug.is_empty() || !slug.bytes().all(plain) {
        return Err(StoreError::Disk(format!("not a slug: {slug:?}")));
    }
    let _one = super::archive::ARCHIVING.lock().await;
    let dirs = [
        (offload_dir.to_path_buf(), slug.to_string()),
        (archive_dir.to_path_buf(), slug.to_string()),
    ];
    tokio::task::spawn_blocking(move || {
        for (parent, slug) in dirs {
            // Renamed first (one atomic step), then deleted at leisure.
            let doomed = parent.join(format!(".purge-{slug}-{:016x}", rand::random::<u64>()));
            match std::fs::rename(parent.join(&slug), &doomed) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(StoreError::Disk(format!("{}: {e}", doomed.display()))),
            }
            match std::fs::remove_dir_all(&doomed) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(StoreError::Disk(format!("{}: {e}", doomed.display()))),
            }
        }
        Ok(())
    })
    .await
    .map_err(|e| StoreError::Disk(e.to_string()))?
}

fn old_enough(path: &Path, age: Duration) -> bool {
    std::fs::metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.elapsed().ok())
        .is_some_and(|e| e >= age)
}

/// Deletes the files in `dir` that are not the segments `registered` (partial files too), of
/// at least `age`: how many.
pub fn remove_orphans(
    dir: &Path,
    registered: &std::collections::HashSet<String>,
    age: Duration,
) -> u64 {
    let Ok(read) = std::fs::read_dir(dir) else {
        return 0;
    };
    let mut gone = 0;
    for entry in read.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let id = name.strip_suffix(".seg").unwrap_or(&name);
        if registered.contains(id) || !old_enough(&entry.path(), age) {
            continue;
        }
        if std::fs::remove_file(entry.path()).is_ok() {
            tracing::info!(file = %entry.path().display(), "deleted an unregistered segment file");
            gone += 1;
        }
    }
    gone
}
