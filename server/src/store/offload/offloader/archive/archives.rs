//! Where a project's log archives are and how they are named: files in the archive directory
//! (private: 0700 directories, 0600 files), or objects beside the segments in an object store
//! ([`crate::storage::Storage::archives`]); listed, read, stored and deleted through the one
//! [`Archives`] type.

use super::{stream_id_after, THROUGH};
use crate::storage::{SourceReader, Storage};
use crate::store::redis_core::{Store, StoreResult};
use std::path::{Path, PathBuf};

/// The archive directory under `archive_dir` of project `slug` whose files carry `tag`
/// ([`crate::store::projects::Projects::files_tag`]): `SLUG/TAG`, so that the archives of a project made again under the
/// slug, or of another install's project of the slug, never meet; `SLUG` for a project made
/// before projects had an incarnation.
pub fn project_dir(archive_dir: &Path, slug: &str, tag: &str) -> PathBuf {
    archive_dir.join(project_prefix(slug, tag))
}

/// The key prefix of the archives of project `slug` whose files carry `tag`, as
/// [`project_dir`]: `SLUG/TAG/`, or `SLUG/`.
pub fn project_prefix(slug: &str, tag: &str) -> String {
    if tag.contains('-') {
        format!("{slug}/{tag}/")
    } else {
        format!("{slug}/")
    }
}

/// The log archives of one project, where they live: files in the archive directory, or
/// objects in the object store that keeps the segments ([`Storage::archives`]). Its calls
/// block (made from blocking threads).
#[derive(Clone)]
pub struct Archives {
    storage: Storage,
    prefix: String,
    slug: String,
}

/// How long the count and bytes of a project's archives are shown as listed: the public
/// `tracker-stats.json` and the panel's "On disk" card show them, and a listing of an object
/// store is a paid call that may take its full timeout while the store is down.
pub const TOTALS_FOR: std::time::Duration = std::time::Duration::from_secs(30);

/// The longest a page waits for a listing of the archives before it shows the last one (or
/// none); the listing goes on and fills [`TOTALS`] for the next.
pub const TOTALS_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// The count and bytes of the archives of each place ([`Archives::describe`]) last listed, and
/// when. Bounded by the projects this process has shown.
static TOTALS: std::sync::Mutex<std::collections::BTreeMap<String, Listed>> =
    std::sync::Mutex::new(std::collections::BTreeMap::new());

/// When a place's archives were listed, and their count and bytes then.
type Listed = (std::time::Instant, (u64, u64));

/// One archive file: its name and size.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArchiveObject {
    /// `SLUG-FIRSTMS-LASTMS[-N].ndjson.gz`.
    pub name: String,
    /// Bytes.
    pub bytes: u64,
}

impl Archives {
    /// The archives of `slug` whose files carry `tag`, beside `storage` (`archive_dir` when it
    /// is a local directory).
    pub fn new(storage: &Storage, archive_dir: &Path, slug: &str, tag: &str) -> Archives {
        Archives {
            storage: storage.archives(archive_dir),
            prefix: project_prefix(slug, tag),
            slug: slug.to_string(),
        }
    }

    /// The archives of project `slug` of `store`, beside its storage ([`Archives::new`]).
    pub async fn of(store: &Store, archive_dir: &Path, slug: &str) -> StoreResult<Archives> {
        let tag = store.projects().files_tag(slug).await?;
        Ok(Archives::new(store.storage(), archive_dir, slug, &tag))
    }

    /// Runs `call` on them on a blocking thread (their calls block).
    pub async fn blocking<T: Send + 'static>(
        &self,
        call: impl FnOnce(&Archives) -> std::io::Result<T> + Send + 'static,
    ) -> std::io::Result<T> {
        let archives = self.clone();
        tokio::task::spawn_blocking(move || call(&archives))
            .await
            .map_err(std::io::Error::other)
            .and_then(|r| r)
    }

    /// Their local directory, when they are files.
    pub fn local_dir(&self) -> Option<PathBuf> {
        self.storage.local_dir().map(|d| d.join(&self.prefix))
    }

    /// Where they are, for logs and errors.
    pub fn describe(&self) -> String {
        format!("{}/{}", self.storage.describe(), self.prefix)
    }

    fn key(&self, name: &str) -> String {
        format!("{}{name}", self.prefix)
    }

    /// The archive files, oldest name first (a later incarnation's, under the slug's own
    /// folder, are not among them). A listing that fails is an error, never a shorter list.
    pub fn files(&self) -> std::io::Result<Vec<ArchiveObject>> {
        Ok(self
            .storage
            .list(&self.prefix)?
            .into_iter()
            .filter_map(|o| {
                let name = o.key.strip_prefix(&self.prefix)?;
                valid_archive_name(name).then(|| ArchiveObject {
                    name: name.to_string(),
                    bytes: o.size,
                })
            })
            .collect())
    }

    /// Archive `name`, read a chunk at a time.
    pub fn open(&self, name: &str) -> std::io::Result<SourceReader> {
        SourceReader::new(self.storage.open_source(&self.key(name))?)
    }

    /// The id of the last entry archived (the newest file's header), if any file says.
    /// Files written before headers named it say nothing (then archiving starts at the oldest
    /// entry in Redis, as it did). A listing or a read that fails is an error: guessing would
    /// archive entries twice.
    pub fn last_archived(&self) -> std::io::Result<Option<String>> {
        let prefix = format!("{}-", self.slug);
        let last_ms = |name: &str| -> Option<u64> {
            let rest = name.strip_prefix(&prefix)?.strip_suffix(".ndjson.gz")?;
            rest.split('-').nth(1)?.parse().ok()
        };
        let names: Vec<(u64, String)> = self
            .files()?
            .into_iter()
            .filter_map(|f| Some((last_ms(&f.name)?, f.name)))
            .collect();
        let Some(newest) = names.iter().map(|(ms, _)| *ms).max() else {
            return Ok(None);
        };
        let mut best: Option<String> = None;
        for (_, name) in names.iter().filter(|(ms, _)| *ms == newest) {
            let mut reader = self.open(name)?;
            // The header is in the first bytes: the first chunk holds it.
            let head = reader.next_chunk()?;
            let gz = flate2::read::GzDecoder::new(&head[..]);
            let id = gz
                .header()
                .and_then(|h| h.comment())
                .and_then(|c| std::str::from_utf8(c).ok())
                .and_then(|c| c.strip_prefix(THROUGH))
                .map(str::to_string);
            if let Some(id) = id {
                if best.as_deref().is_none_or(|b| stream_id_after(&id, b)) {
                    best = Some(id);
                }
            }
        }
        Ok(best)
    }

    /// Their count and bytes, listed now; kept for [`TOTALS_FOR`] ([`Archives::cached_totals`]).
    pub fn totals(&self) -> std::io::Result<(u64, u64)> {
        let totals = self
            .files()?
            .iter()
            .fold((0, 0), |(n, b), f| (n + 1, b + f.bytes));
        TOTALS
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(self.describe(), (std::time::Instant::now(), totals));
        Ok(totals)
    }

    /// Their count and bytes as last listed, and whether that was within [`TOTALS_FOR`].
    pub fn cached_totals(&self) -> Option<((u64, u64), bool)> {
        let cache = TOTALS.lock().unwrap_or_else(|e| e.into_inner());
        let (at, totals) = cache.get(&self.describe())?;
        Some((*totals, at.elapsed() < TOTALS_FOR))
    }

    /// Forgets their count and bytes (an archive was stored or deleted).
    pub fn forget_totals(&self) {
        TOTALS
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&self.describe());
    }

    /// Stores the finished archive at `spool` under a name of its first and last entries'
    /// times (`-2`, `-3`... when taken): the name and size.
    pub(super) fn store(
        &self,
        spool: &Path,
        first: &str,
        last: &str,
    ) -> std::io::Result<(String, u64)> {
        let ms = |id: &str| id.split('-').next().unwrap_or_default().to_string();
        let base = format!("{}-{}-{}", self.slug, ms(first), ms(last));
        for n in 1.. {
            let name = if n == 1 {
                format!("{base}.ndjson.gz")
            } else {
                format!("{base}-{n}.ndjson.gz")
            };
            match self.storage.put_file(&self.key(&name), spool) {
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
                Ok(bytes) => return Ok((name, bytes)),
            }
        }
        unreachable!("a name is found")
    }

    /// A new private file to write an archive to before it is stored: beside the archives in
    /// their directory, else in the system's temporary directory.
    pub(super) fn spool(&self) -> std::io::Result<(PathBuf, std::fs::File)> {
        let dir = match self.local_dir() {
            Some(dir) => dir,
            None => crate::storage::spool_dir(),
        };
        private_dir_sync(&dir)?;
        let path = dir.join(format!(
            ".partial-{}",
            crate::store::people::tokens::random_token(12)
        ));
        let file = private_file(&path)?;
        Ok((path, file))
    }

    /// Deletes them (a destroyed project's), where they are objects: a listing that fails
    /// deletes nothing and is an error.
    pub fn delete_objects(&self) -> std::io::Result<u64> {
        if self.storage.local_dir().is_some() {
            return Ok(0);
        }
        let files = self.files()?;
        self.forget_totals();
        for f in &files {
            self.storage.delete(&self.key(&f.name))?;
        }
        Ok(files.len() as u64)
    }
}

/// The archives of project `slug` under `archive_dir` or beside `store`'s object store
/// ([`Archives::of`]).
pub async fn archive_dir_of(
    store: &Store,
    archive_dir: &Path,
    slug: &str,
) -> StoreResult<Archives> {
    Archives::of(store, archive_dir, slug).await
}

/// Creates `dir` (and its parents) if missing, readable by this user only (0700): archives
/// hold addresses and user agents.
fn private_dir_sync(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
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

/// Whether `name` can be an archive's file name (and nothing else: no path).
pub fn valid_archive_name(name: &str) -> bool {
    name.ends_with(".ndjson.gz")
        && !name.starts_with('.')
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"-.".contains(&b))
}
