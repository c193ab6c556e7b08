//! Deleting what no registry names: segment files a stopped offloader left unregistered (or
//! brought back), and the files of destroyed projects.

use super::{Offloader, ORPHAN_AGE};
use crate::store::{StoreError, StoreResult};
use std::{path::Path, time::Duration};

impl Offloader {
    /// Deletes the segment files of `slug` that are not registered, once a minute old.
    pub async fn sweep(&self, slug: &str) -> StoreResult<u64> {
        let registered: std::collections::HashSet<String> = self
            .store
            .segment_entries(slug)
            .await?
            .into_iter()
            .map(|(id, _)| id)
            .collect();
        let dir = self.dir.join(slug);
        let gone =
            tokio::task::spawn_blocking(move || remove_orphans(&dir, &registered, ORPHAN_AGE))
                .await
                .map_err(|e| StoreError::Disk(e.to_string()))?;
        Ok(gone)
    }

    /// Deletes the segment directories of projects that no longer exist.
    pub(super) async fn sweep_gone_projects(&self, slugs: &[String]) {
        let Ok(read) = std::fs::read_dir(&self.dir) else {
            return;
        };
        for entry in read.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if !slugs.contains(&name)
                && entry.path().is_dir()
                && old_enough(&entry.path(), ORPHAN_AGE)
            {
                tracing::info!(slug = name, "deleting the segments of a destroyed project");
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
    }
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
