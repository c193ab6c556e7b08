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
        let tag = self.store.keys().segment_tag();
        let gone = tokio::task::spawn_blocking(move || {
            remove_orphans(&dir, &registered, &tag, ORPHAN_AGE)
        })
        .await
        .map_err(|e| StoreError::Disk(e.to_string()))?;
        Ok(gone)
    }

    /// Deletes the files (segments, log archives) of the projects marked destroyed, and then
    /// their marks, and what purges of this namespace left half-way: how many of each. Only
    /// what a destroy named goes. A failed read deletes nothing, and a
    /// directory no mark names (a Redis emptied or swapped, another install's) is left alone.
    pub async fn sweep_destroyed(&self) -> StoreResult<u64> {
        // A purge that stopped half-way (the process died) left its directory: this
        // namespace's, a minute old.
        let tag = self.store.keys().segment_tag();
        let dirs = [self.dir.clone(), self.archive_dir.clone()];
        let leftovers = tokio::task::spawn_blocking(move || {
            dirs.iter()
                .map(|d| remove_purge_leftovers(d, &tag, ORPHAN_AGE))
                .sum::<u64>()
        })
        .await
        .map_err(|e| StoreError::Disk(e.to_string()))?;
        let marked = self.store.destroyed_projects().await?;
        if marked.is_empty() {
            return Ok(leftovers);
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
            let tag = self.store.keys().segment_tag();
            purge_project_files(&self.dir, &self.archive_dir, slug, &tag).await?;
            self.store.forget_destroyed(slug).await?;
            tracing::info!(slug, "deleted the files of a destroyed project");
            gone += 1;
        }
        Ok(gone + leftovers)
    }
}

/// Deletes the `.purge-TAG-*` directories in `dir` (purges of namespace `tag` that did not
/// finish) at least `age` old: how many.
pub fn remove_purge_leftovers(dir: &Path, tag: &str, age: Duration) -> u64 {
    let Ok(read) = std::fs::read_dir(dir) else {
        return 0;
    };
    let prefix = format!(".purge-{tag}-");
    let mut gone = 0;
    for entry in read.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.starts_with(&prefix) || !old_enough(&entry.path(), age) {
            continue;
        }
        if std::fs::remove_dir_all(entry.path()).is_ok() {
            tracing::info!(dir = %entry.path().display(), "deleted what a purge left");
            gone += 1;
        }
    }
    gone
}

/// Deletes the files of destroyed project `slug` that namespace `tag` wrote: its segments (and
/// segments written before files carried a tag) and its log archives. Each is moved into a
/// `.purge-TAG-…` directory first, then that is deleted; another namespace's segments in the
/// same directory stay, and so does the directory then. Waits for an archive being written in
/// this process.
pub async fn purge_project_files(
    offload_dir: &Path,
    archive_dir: &Path,
    slug: &str,
    tag: &str,
) -> StoreResult<()> {
    let plain = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-';
    if slug.is_empty() || !slug.bytes().all(plain) {
        return Err(StoreError::Disk(format!("not a slug: {slug:?}")));
    }
    let _one = super::archive::ARCHIVING.lock().await;
    let (offload_dir, archive_dir) = (offload_dir.to_path_buf(), archive_dir.to_path_buf());
    let (slug, tag) = (slug.to_string(), tag.to_string());
    tokio::task::spawn_blocking(move || {
        let disk =
            |path: &Path, e: std::io::Error| StoreError::Disk(format!("{}: {e}", path.display()));
        for (parent, segments) in [(&offload_dir, true), (&archive_dir, false)] {
            let from = parent.join(&slug);
            let Ok(read) = std::fs::read_dir(&from) else {
                continue;
            };
            let doomed = parent.join(format!(
                ".purge-{tag}-{slug}-{:016x}",
                rand::random::<u64>()
            ));
            std::fs::create_dir(&doomed).map_err(|e| disk(&doomed, e))?;
            for entry in read.flatten() {
                let name = entry.file_name().to_string_lossy().into_owned();
                // A log archive directory is this namespace's; in the segments', another
                // namespace's files stay.
                if segments && !purged_segment(&name, &tag) {
                    continue;
                }
                match std::fs::rename(entry.path(), doomed.join(&name)) {
                    Ok(()) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(e) => return Err(disk(&entry.path(), e)),
                }
            }
            std::fs::remove_dir_all(&doomed).map_err(|e| disk(&doomed, e))?;
            // Gone when empty; another namespace's files keep it.
            let _ = std::fs::remove_dir(&from);
        }
        Ok(())
    })
    .await
    .map_err(|e| StoreError::Disk(e.to_string()))?
}

/// The segment id a file name in a project's segment directory names (`ID.seg`, or the partial
/// file `.partial-ID.seg`).
fn segment_id(name: &str) -> &str {
    let name = name.strip_prefix(".partial-").unwrap_or(name);
    name.strip_suffix(".seg").unwrap_or(name)
}

/// Whether segment file `name` is one namespace `tag` wrote, or one written before files
/// carried a tag (`KIND-MS-RANDOM`): those a destroy of the project deletes.
fn purged_segment(name: &str, tag: &str) -> bool {
    let id = segment_id(name);
    id.ends_with(&format!("-{tag}")) || id.split('-').count() == 3
}

fn old_enough(path: &Path, age: Duration) -> bool {
    std::fs::metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.elapsed().ok())
        .is_some_and(|e| e >= age)
}

/// Deletes the segment files of namespace `tag` in `dir` that are not the segments
/// `registered` (partial files too), of at least `age`: how many. Files of another namespace
/// sharing the directory are not this registry's to judge, nor are files written before files
/// carried a tag: they stay.
pub fn remove_orphans(
    dir: &Path,
    registered: &std::collections::HashSet<String>,
    tag: &str,
    age: Duration,
) -> u64 {
    let Ok(read) = std::fs::read_dir(dir) else {
        return 0;
    };
    let mine = format!("-{tag}");
    let mut gone = 0;
    for entry in read.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let id = segment_id(&name);
        if !id.ends_with(&mine) || registered.contains(id) || !old_enough(&entry.path(), age) {
            continue;
        }
        if std::fs::remove_file(entry.path()).is_ok() {
            tracing::info!(file = %entry.path().display(), "deleted an unregistered segment file");
            gone += 1;
        }
    }
    gone
}
