//! Deleting what no registry names: segment files a stopped offloader left unregistered (or
//! brought back), and the files of projects a destroy marked.

use super::super::{StoreError, StoreResult};
use super::{Offloader, ORPHAN_AGE};
use crate::storage::Storage;
use std::sync::Arc;
use std::{
    collections::{HashMap, HashSet},
    path::{Path, PathBuf},
    time::Duration,
};

impl Offloader {
    /// Deletes the segment files of `slug` that are not registered, a minute after they were
    /// started or left the registry, on Redis's clock.
    pub async fn sweep(&self, slug: &str) -> StoreResult<u64> {
        // Every id the registry names, whether its entry parses or not: a file whose entry this
        // version cannot read (damaged, or of a newer version) is not an orphan, and stays.
        let registered: HashSet<String> = self
            .store
            .offload()
            .segment_ids(slug)
            .await?
            .into_iter()
            .collect();
        let left = self.store.offload().segments_gone(slug).await?;
        let now = self.store.offload().redis_now_ms().await?;
        let age = ORPHAN_AGE.as_millis() as u64;
        let tag = self.store.projects().files_tag(slug).await?;
        let orphans = Orphans {
            registered,
            left: left.clone(),
            tag,
            now,
            age,
        };
        let (storage, slug2) = (self.storage.clone(), slug.to_string());
        let gone = tokio::task::spawn_blocking(move || orphans.remove_in(&storage, &slug2))
            .await
            .map_err(|e| StoreError::Disk(e.to_string()))?;
        // Notes of segments that left the registry more than a minute ago are done with.
        let done: Vec<String> = left
            .into_iter()
            .filter(|(_, t)| t.saturating_add(age) < now)
            .map(|(id, _)| id)
            .collect();
        self.store.offload().forget_gone(slug, done).await?;
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
        let dirs: Vec<PathBuf> = self
            .storage
            .local_dir()
            .map(Path::to_path_buf)
            .into_iter()
            .chain([self.archive_dir.clone()])
            .collect();
        let leftovers = tokio::task::spawn_blocking(move || {
            dirs.iter()
                .map(|d| remove_purge_leftovers(d, &tag, ORPHAN_AGE))
                .sum::<u64>()
        })
        .await
        .map_err(|e| StoreError::Disk(e.to_string()))?;
        let marked = self.store.queue().destroyed_projects().await?;
        if marked.is_empty() {
            return Ok(leftovers);
        }
        let live = self.store.projects().project_slugs().await?;
        let mut gone = 0;
        for (slug, mark) in marked.iter().filter(|(s, _)| !live.contains(s)) {
            // Another process may have deleted them and cleared the mark since the marks were
            // read: skipped then. The slug may be made again while the purge runs (or after
            // another process's purge, while this one still runs): the files the mark names
            // carry the destroyed project's own tag, which the new project's never do.
            if self.store.queue().destroyed_mark(slug).await?.as_ref() != Some(mark) {
                continue;
            }
            purge_files(&self.storage, &self.archive_dir, slug, &mark.tag).await?;
            self.store.queue().forget_destroyed(slug, mark).await?;
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

/// Deletes the files of destroyed project `slug` that carry `tag` (its [`crate::store::projects::Projects::files_tag`]):
/// its segments (and segments written before files carried a tag) and its log archives. Each
/// is moved into a `.purge-TAG-…` directory first, then that is deleted; another namespace's
/// segments in the same directory stay, so do those of a project made again under the slug
/// (another tag), and so does the directory then. Waits for an archive being written in this
/// process.
pub async fn purge_project_files(
    offload_dir: Option<&Path>,
    archive_dir: &Path,
    slug: &str,
    tag: &str,
) -> StoreResult<()> {
    let plain = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-';
    if slug.is_empty() || !slug.bytes().all(plain) {
        return Err(StoreError::Disk(format!("not a slug: {slug:?}")));
    }
    let _one = super::archive::ARCHIVING.lock().await;
    let (offload_dir, archive_dir) = (
        offload_dir.map(Path::to_path_buf),
        archive_dir.to_path_buf(),
    );
    let (slug, tag) = (slug.to_string(), tag.to_string());
    tokio::task::spawn_blocking(move || {
        let disk =
            |path: &Path, e: std::io::Error| StoreError::Disk(format!("{}: {e}", path.display()));
        // A project with an incarnation has its archives in a directory of its own, moved
        // away whole; one made before (the namespace's tag alone) in the slug's.
        let own_archives = tag.contains('-');
        let archives = super::archive::project_dir(&archive_dir, &slug, &tag);
        if own_archives && archives.exists() {
            let doomed = archive_dir.join(format!(
                ".purge-{tag}-{slug}-{:016x}",
                rand::random::<u64>()
            ));
            match std::fs::rename(&archives, &doomed) {
                Ok(()) => std::fs::remove_dir_all(&doomed).map_err(|e| disk(&doomed, e))?,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(disk(&archives, e)),
            }
            let _ = std::fs::remove_dir(archive_dir.join(&slug));
        }
        let mut places: Vec<(&PathBuf, bool)> = offload_dir.iter().map(|d| (d, true)).collect();
        if !own_archives {
            places.push((&archive_dir, false));
        }
        for (parent, segments) in places {
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
                // In the segments' directory, another namespace's or incarnation's files stay;
                // in the slug's archive directory, the directories of later incarnations.
                let keep = if segments {
                    !purged_segment(&name, &tag)
                } else {
                    entry.file_type().is_ok_and(|t| t.is_dir())
                };
                if keep {
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

/// Deletes the files of destroyed project `slug` that carry `tag`: its segments where
/// `storage` keeps them and its log archives (under `archive_dir`, or in the object store)
/// ([`purge_project_files`], [`purge_objects`], [`super::archive::Archives::delete_objects`]).
pub async fn purge_files(
    storage: &Arc<Storage>,
    archive_dir: &Path,
    slug: &str,
    tag: &str,
) -> StoreResult<()> {
    purge_project_files(storage.local_dir(), archive_dir, slug, tag).await?;
    if storage.local_dir().is_none() {
        purge_objects(storage, slug, tag).await?;
        let archives = super::archive::Archives::new(storage, archive_dir, slug, tag);
        let _one = super::archive::ARCHIVING.lock().await;
        tokio::task::spawn_blocking(move || archives.delete_objects())
            .await
            .map_err(|e| StoreError::Disk(e.to_string()))?
            .map_err(|e| StoreError::Disk(format!("deleting the log archives of {slug}: {e}")))?;
    }
    Ok(())
}

/// Deletes the segments of destroyed project `slug` that carry `tag` from an object store (its
/// keys `SLUG/ID.seg`; another namespace's or incarnation's stay). A listing that fails
/// deletes nothing and is an error, for the next sweep to try again.
pub async fn purge_objects(storage: &Arc<Storage>, slug: &str, tag: &str) -> StoreResult<()> {
    let (storage, dir, tag) = (storage.clone(), format!("{slug}/"), tag.to_string());
    tokio::task::spawn_blocking(move || {
        for object in storage.list(&dir)? {
            let name = object.key.rsplit('/').next().unwrap_or_default();
            if purged_segment(name, &tag) {
                storage.delete(&object.key)?;
            }
        }
        Ok::<_, std::io::Error>(())
    })
    .await
    .map_err(|e| StoreError::Disk(e.to_string()))?
    .map_err(|e| StoreError::Disk(format!("deleting the segments of {slug}: {e}")))
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

/// What the sweep of one project's segment directory judges files by.
pub struct Orphans {
    /// Every id the registry names.
    pub registered: HashSet<String>,
    /// Segments that left the registry (brought back), with when (ms, Redis's clock).
    pub left: HashMap<String, u64>,
    /// This namespace's tag: files of another, or written before names carried a tag, stay.
    pub tag: String,
    /// Redis's clock now (ms).
    pub now: u64,
    /// How long (ms) after it was started, or left the registry, an unregistered file stays.
    pub age: u64,
}

impl Orphans {
    /// Whether the file named `name` (a segment, or a partial one) is an orphan to delete.
    pub fn is_orphan(&self, name: &str) -> bool {
        let id = segment_id(name);
        let Some(started) = id
            .strip_suffix(&format!("-{}", self.tag))
            .and_then(|rest| rest.split('-').nth(1))
            .and_then(|ms| ms.parse::<u64>().ok())
        else {
            return false;
        };
        // A segment that was registered and left is judged by when it left (its commit is long
        // done); any other, by when it was started (its commit may still be on its way).
        let last_needed = self.left.get(id).copied().unwrap_or(started);
        !self.registered.contains(id) && last_needed.saturating_add(self.age) <= self.now
    }

    /// Deletes the orphans among the segments of `slug` in `storage`: how many. A listing that
    /// fails deletes nothing.
    pub fn remove_in(&self, storage: &Storage, slug: &str) -> u64 {
        let listed = match storage {
            Storage::Local(dir) => return self.remove(&dir.join(slug)),
            Storage::Objects(_) => storage.list(&format!("{slug}/")),
        };
        let Ok(listed) = listed else {
            return 0;
        };
        let mut gone = 0;
        for object in listed {
            let name = object.key.rsplit('/').next().unwrap_or_default();
            if self.is_orphan(name) && storage.delete(&object.key).is_ok() {
                tracing::info!(key = %object.key, "deleted an unregistered segment");
                gone += 1;
            }
        }
        gone
    }

    /// Deletes the orphans in `dir`: how many.
    pub fn remove(&self, dir: &Path) -> u64 {
        let Ok(read) = std::fs::read_dir(dir) else {
            return 0;
        };
        let mut gone = 0;
        for entry in read.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if !self.is_orphan(&name) {
                continue;
            }
            if std::fs::remove_file(entry.path()).is_ok() {
                tracing::info!(file = %entry.path().display(), "deleted an unregistered segment file");
                gone += 1;
            }
        }
        gone
    }
}

#[cfg(test)]
mod tests {
    use super::Orphans;

    fn judge(registered: &[&str], left: &[(&str, u64)], now: u64) -> Orphans {
        Orphans {
            registered: registered.iter().map(|s| s.to_string()).collect(),
            left: left.iter().map(|(s, t)| (s.to_string(), *t)).collect(),
            tag: "n0000abcd".into(),
            now,
            age: 60_000,
        }
    }

    #[test]
    fn a_file_is_judged_by_redis_time_in_its_name_not_by_any_file_clock() {
        let id = "done-1000000-00000000000000ff-n0000abcd";
        let seg = format!("{id}.seg");
        let partial = format!(".partial-{id}.seg");
        // Started at 1,000,000 on Redis's clock: an orphan from 1,060,000 on.
        assert!(!judge(&[], &[], 1_059_999).is_orphan(&seg));
        assert!(judge(&[], &[], 1_060_000).is_orphan(&seg));
        assert!(judge(&[], &[], 1_060_000).is_orphan(&partial));
        assert!(!judge(&[id], &[], 9_999_999).is_orphan(&seg), "registered");
        // Brought back at 2,000,000: it stays a minute after that.
        let left = [(id, 2_000_000)];
        assert!(!judge(&[], &left, 2_059_999).is_orphan(&seg));
        assert!(judge(&[], &left, 2_060_000).is_orphan(&seg));
    }

    #[test]
    fn files_of_another_namespace_or_without_a_tag_or_not_segments_stay() {
        let now = u64::MAX / 2;
        for name in [
            "done-1000000-00000000000000ff-n9999ffff.seg",
            "done-1000000-00000000000000ff.seg",
            "queue-1000000-00000000000000ff.seg",
            "README",
            ".partial-x.seg",
            "done-soon-00000000000000ff-n0000abcd.seg",
        ] {
            assert!(!judge(&[], &[], now).is_orphan(name), "{name}");
        }
    }
}
