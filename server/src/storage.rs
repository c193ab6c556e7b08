//! Where offloaded segments live: a local directory (`file://`, the default, under the data
//! directory) or an object store (`s3://BUCKET/PREFIX`, and what speaks S3's API: MinIO, Ceph's
//! RADOS gateway, Garage, R2, B2), chosen by `TRACKER_STORAGE`.
//!
//! Objects are written once and never changed: a segment is uploaded whole (from a file
//! written beside the process, [`crate::segment::write`]) under its key `SLUG/ID.seg`, and only
//! then registered in Redis, so a reader never sees half of one. Reads are ranged (one `GET`
//! of a byte range per block a lookup needs, through the segments' block cache), listings are
//! paged by the library, and a listing that fails part-way fails whole: nothing is deleted on
//! what a partial listing left out.
//!
//! The local directory is read and written as before (files, `pread`), not through the object
//! store library's local backend: that one opens the file again for every range, and `file://`
//! must stay as fast as it was. An object store is reached through the `object_store` crate,
//! configured by the `AWS_*` variables it reads (`AWS_ENDPOINT`, `AWS_REGION`,
//! `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_ALLOW_HTTP` for a server on plain HTTP,
//! `AWS_SKIP_SIGNATURE` for one without keys).
//!
//! The calls here block: they are made from blocking threads (`spawn_blocking`), and an object
//! store's calls run on the runtime the storage was opened on.

use crate::segment::{self, Segment, Source};

mod copy;
mod read;

use copy::sha256;
pub use copy::Copied;
use futures::TryStreamExt;
use object_store::{
    path::Path as Key, ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload,
};
use read::ObjectSource;
pub use read::{SourceReader, READ_CHUNK};
use std::{
    io,
    path::{Path, PathBuf},
    sync::Arc,
    time::Duration,
};

/// The longest one call to an object store may take before it fails (and the caller retries
/// later, as after any failed read or write of a segment).
pub const OBJECT_CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// Where segments live (see the module's doc).
#[derive(Clone)]
pub enum Storage {
    /// A local directory (`file://PATH`).
    Local(PathBuf),
    /// An object store (`s3://BUCKET/PREFIX`).
    Objects(Objects),
}

/// An object store, the prefix its keys live under, and the runtime its calls run on.
#[derive(Clone)]
pub struct Objects {
    store: Arc<dyn ObjectStore>,
    prefix: String,
    url: String,
    runtime: tokio::runtime::Handle,
}

/// An object's key (relative to the storage's root) and size.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Listed {
    /// `SLUG/ID.seg`.
    pub key: String,
    /// Bytes.
    pub size: u64,
    /// When it was written (ms since the epoch, the store's clock).
    pub modified_ms: u64,
}

fn other(e: impl std::fmt::Display) -> io::Error {
    io::Error::other(e.to_string())
}

fn from_object(e: object_store::Error) -> io::Error {
    match e {
        object_store::Error::NotFound { .. } => io::Error::new(io::ErrorKind::NotFound, e),
        object_store::Error::AlreadyExists { .. } => {
            io::Error::new(io::ErrorKind::AlreadyExists, e)
        }
        e => other(e),
    }
}

impl Storage {
    /// The storage `url` names (`file:///abs/dir`, `file://rel/dir`, `s3://BUCKET[/PREFIX]`,
    /// settings of the object store library after a `?`: `aws_endpoint=URL&aws_allow_http=true`),
    /// or `default_dir` when there is none; an object store's calls run on `runtime`.
    pub fn open(
        url: Option<&str>,
        default_dir: &Path,
        runtime: tokio::runtime::Handle,
    ) -> Result<Storage, String> {
        let Some(url) = url.map(str::trim).filter(|u| !u.is_empty()) else {
            return Ok(Storage::Local(default_dir.to_path_buf()));
        };
        if let Some(path) = url.strip_prefix("file://") {
            if path.is_empty() {
                return Err(format!("{url}: a file:// storage names a directory"));
            }
            return Ok(Storage::Local(PathBuf::from(path)));
        }
        let Some(rest) = url.strip_prefix("s3://") else {
            return Err(format!(
                "{url}: the storage is file://DIR or s3://BUCKET/PREFIX"
            ));
        };
        let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
        let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
        if bucket.is_empty() {
            return Err(format!("{url}: no bucket"));
        }
        // (Its client's options are set key by key: a whole `ClientOptions` would drop what
        // the environment set, `AWS_ALLOW_HTTP` among it.)
        let timeout =
            object_store::aws::AmazonS3ConfigKey::Client(object_store::ClientConfigKey::Timeout);
        let mut builder = object_store::aws::AmazonS3Builder::from_env()
            .with_config(timeout, format!("{}s", OBJECT_CALL_TIMEOUT.as_secs()));
        // Settings in the URL's query (`?aws_endpoint=...&aws_allow_http=true`) are the
        // library's own keys, and win over the environment's.
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            let key: object_store::aws::AmazonS3ConfigKey =
                key.parse().map_err(|e| format!("{url}: {e}"))?;
            let value = urlencoding::decode(value).map_err(|e| format!("{url}: {e}"))?;
            builder = builder.with_config(key, value.into_owned());
        }
        let store = builder
            .with_bucket_name(bucket)
            .with_retry(object_store::RetryConfig {
                max_retries: 3,
                retry_timeout: OBJECT_CALL_TIMEOUT,
                ..Default::default()
            })
            .build()
            .map_err(|e| format!("{url}: {e}"))?;
        remove_dead_spools(&std::env::temp_dir());
        Ok(Storage::Objects(Objects {
            store: Arc::new(store),
            prefix: prefix.trim_matches('/').to_string(),
            // Named without its query, which may hold keys.
            url: format!("s3://{rest}"),
            runtime,
        }))
    }

    /// How logs and `/metrics` name it: the directory, or the URL.
    pub fn describe(&self) -> String {
        match self {
            Storage::Local(dir) => format!("file://{}", dir.display()),
            Storage::Objects(o) => o.url.clone(),
        }
    }

    /// Where the log archives live beside this storage: `archive_dir` beside a local
    /// directory; in an object store, the keys under [`ARCHIVES`] (no slug starts with `_`, so
    /// no project's segments are ever listed with them).
    pub fn archives(&self, archive_dir: &Path) -> Storage {
        match self {
            Storage::Local(_) => Storage::Local(archive_dir.to_path_buf()),
            Storage::Objects(o) => {
                let under = |p: &str| {
                    if p.is_empty() {
                        ARCHIVES.to_string()
                    } else {
                        format!("{p}/{ARCHIVES}")
                    }
                };
                let rest = o.url.strip_prefix("s3://").unwrap_or(&o.url);
                let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
                Storage::Objects(Objects {
                    store: o.store.clone(),
                    prefix: under(&o.prefix),
                    url: format!("s3://{bucket}/{}", under(prefix.trim_matches('/'))),
                    runtime: o.runtime.clone(),
                })
            }
        }
    }

    /// The local directory, if it is one.
    pub fn local_dir(&self) -> Option<&Path> {
        match self {
            Storage::Local(dir) => Some(dir),
            Storage::Objects(_) => None,
        }
    }

    /// The key of segment `id` of `slug`.
    pub fn segment_key(slug: &str, id: &str) -> String {
        format!("{slug}/{id}.seg")
    }

    /// Opens segment `id` of `slug`.
    pub fn open_segment(&self, slug: &str, id: &str) -> io::Result<Segment> {
        let key = Self::segment_key(slug, id);
        match self {
            Storage::Local(dir) => Segment::open(&dir.join(&key)),
            Storage::Objects(_) => Segment::open_source(self.open_source(&key)?, Path::new(&key)),
        }
    }

    /// Writes `records` as segment `id` of `slug` ([`crate::segment::write`]: sorted here; only
    /// the filter without `keep_names`): in a local directory where it stays, else beside the
    /// process in the system's temporary directory, then stored whole. Its size.
    pub fn write_segment(
        &self,
        slug: &str,
        id: &str,
        records: &mut [(String, String)],
        keep_names: bool,
    ) -> io::Result<u64> {
        let key = Self::segment_key(slug, id);
        match self {
            Storage::Local(dir) => segment::write(&dir.join(&key), records, keep_names),
            Storage::Objects(_) => {
                let spool = spool_dir().join(&key);
                let written = segment::write(&spool, records, keep_names)
                    .and_then(|_| self.put_file(&key, &spool));
                let _ = std::fs::remove_file(&spool);
                written
            }
        }
    }

    /// Opens `key` for ranged reads.
    pub fn open_source(&self, key: &str) -> io::Result<Box<dyn Source>> {
        match self {
            Storage::Local(dir) => Ok(Box::new(std::fs::File::open(dir.join(key))?)),
            Storage::Objects(o) => {
                let key = o.key(key);
                let meta = o.block("head", o.store.head(&key))?;
                Ok(Box::new(ObjectSource {
                    objects: o.clone(),
                    key,
                    size: meta.size,
                }))
            }
        }
    }

    /// Stores the file at `local` under `key`, once: an object that exists already is an error
    /// ([`io::ErrorKind::AlreadyExists`]), as a second segment of one id never is, unless it
    /// holds the same bytes (this upload, whose answer was lost and which was sent again). For a local
    /// directory `local` is renamed into place (it was written beside it). Its size.
    pub fn put_file(&self, key: &str, local: &Path) -> io::Result<u64> {
        match self {
            Storage::Local(dir) => {
                let to = dir.join(key);
                if to.exists() {
                    return Err(io::Error::new(io::ErrorKind::AlreadyExists, key));
                }
                std::fs::rename(local, &to)?;
                if let Some(parent) = to.parent() {
                    std::fs::File::open(parent)?.sync_all()?;
                }
                Ok(std::fs::metadata(&to)?.len())
            }
            Storage::Objects(o) => {
                let bytes = bytes::Bytes::from(std::fs::read(local)?);
                let size = bytes.len() as u64;
                match o.put_new(key, bytes.clone()) {
                    // An upload that was stored but whose answer was lost is retried (by the
                    // library) and then finds itself there: the same bytes are this upload,
                    // not another writer's object.
                    Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                        if sha256(&self.get_bytes(key)?) != sha256(&bytes) {
                            return Err(e);
                        }
                    }
                    written => written?,
                }
                let _ = std::fs::remove_file(local);
                Ok(size)
            }
        }
    }

    /// Stores `bytes` under `key`, replacing what was there (for copies made again).
    pub fn put_bytes(&self, key: &str, bytes: Vec<u8>) -> io::Result<()> {
        match self {
            Storage::Local(dir) => {
                let to = dir.join(key);
                if let Some(parent) = to.parent() {
                    std::fs::create_dir_all(parent)?;
                }
                let tmp = to.with_extension("copying");
                std::fs::write(&tmp, &bytes)?;
                std::fs::File::open(&tmp)?.sync_all()?;
                std::fs::rename(&tmp, &to)
            }
            Storage::Objects(o) => {
                let key = o.key(key);
                o.block("put", o.store.put(&key, PutPayload::from(bytes)))
                    .map(drop)
            }
        }
    }

    /// The whole of `key`.
    pub fn get_bytes(&self, key: &str) -> io::Result<Vec<u8>> {
        match self {
            Storage::Local(dir) => std::fs::read(dir.join(key)),
            Storage::Objects(o) => {
                let key = o.key(key);
                let got = o.block("get", async { o.store.get(&key).await?.bytes().await })?;
                Ok(got.to_vec())
            }
        }
    }

    /// Every object under `prefix` (`SLUG/`, or "" for all), with its size; a listing that
    /// fails part-way is an error, never a shorter list. Hidden local files (a purge's or a
    /// write's temporary ones) are not objects.
    pub fn list(&self, prefix: &str) -> io::Result<Vec<Listed>> {
        match self {
            Storage::Local(dir) => {
                let mut out = Vec::new();
                list_dir(dir, dir, prefix, &mut out)?;
                out.sort_by(|a, b| a.key.cmp(&b.key));
                Ok(out)
            }
            Storage::Objects(o) => {
                let root = o.key(prefix.trim_end_matches('/'));
                let under = (!o.prefix.is_empty() || !prefix.is_empty()).then_some(&root);
                let all: Vec<object_store::ObjectMeta> =
                    o.block("list", o.store.list(under).try_collect())?;
                let strip = if o.prefix.is_empty() {
                    String::new()
                } else {
                    format!("{}/", o.prefix)
                };
                let mut out: Vec<Listed> = all
                    .into_iter()
                    .filter_map(|m| {
                        let key = m.location.as_ref().strip_prefix(&strip)?.to_string();
                        key.starts_with(prefix).then(|| Listed {
                            key,
                            size: m.size,
                            modified_ms: m.last_modified.timestamp_millis().max(0) as u64,
                        })
                    })
                    .collect();
                out.sort_by(|a, b| a.key.cmp(&b.key));
                Ok(out)
            }
        }
    }

    /// Deletes `key`; one that is gone already is not an error.
    pub fn delete(&self, key: &str) -> io::Result<()> {
        match self {
            Storage::Local(dir) => match std::fs::remove_file(dir.join(key)) {
                Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
                _ => Ok(()),
            },
            Storage::Objects(o) => {
                let key = o.key(key);
                match o.block("delete", o.store.delete(&key)) {
                    Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
                    _ => Ok(()),
                }
            }
        }
    }
}

/// This process's spool directory: what it uploads to an object store is written here first,
/// in the system's temporary directory.
pub fn spool_dir() -> PathBuf {
    std::env::temp_dir().join(format!("{SPOOL}{}", std::process::id()))
}

const SPOOL: &str = "tracker-spool-";

/// Deletes the spool directories in `temp` of processes that are gone (killed while they
/// wrote a segment or an archive): how many. A live process's stays.
pub fn remove_dead_spools(temp: &Path) -> u64 {
    let Ok(read) = std::fs::read_dir(temp) else {
        return 0;
    };
    let mut gone = 0;
    for entry in read.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(pid) = name.strip_prefix(SPOOL).and_then(|p| p.parse::<i32>().ok()) else {
            continue;
        };
        // Signal 0: nothing is sent; it fails with ESRCH when no such process exists.
        // SAFETY: kill(2) with signal 0 only checks that the process exists.
        let alive = unsafe { libc::kill(pid, 0) } == 0
            || std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH);
        if !alive && std::fs::remove_dir_all(entry.path()).is_ok() {
            tracing::info!(dir = %entry.path().display(), "deleted the spool of a process gone");
            gone += 1;
        }
    }
    gone
}

/// The folder of an object store's root that holds the log archives ([`Storage::archives`]).
pub const ARCHIVES: &str = "_archives";

/// Adds the files under `at` (below `root`) whose key starts with `prefix` to `out`.
fn list_dir(root: &Path, at: &Path, prefix: &str, out: &mut Vec<Listed>) -> io::Result<()> {
    let read = match std::fs::read_dir(at) {
        Ok(r) => r,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    for entry in read {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') {
            continue;
        }
        let path = entry.path();
        let key = path
            .strip_prefix(root)
            .map_err(other)?
            .to_string_lossy()
            .into_owned();
        let meta = entry.metadata()?;
        if meta.is_dir() {
            let dir_key = format!("{key}/");
            if dir_key.starts_with(prefix) || prefix.starts_with(&dir_key) {
                list_dir(root, &path, prefix, out)?;
            }
        } else if key.starts_with(prefix) && !name.ends_with(".tmp") {
            let modified_ms = meta
                .modified()
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map_or(0, |d| d.as_millis() as u64);
            out.push(Listed {
                key,
                size: meta.len(),
                modified_ms,
            });
        }
    }
    Ok(())
}

impl Objects {
    fn key(&self, key: &str) -> Key {
        if self.prefix.is_empty() {
            Key::from(key)
        } else {
            Key::from(format!("{}/{key}", self.prefix))
        }
    }

    /// Runs `call` (operation `op`, as `/metrics` names it) on the storage's runtime, from a
    /// blocking thread.
    fn block<T>(
        &self,
        op: &'static str,
        call: impl std::future::Future<Output = object_store::Result<T>>,
    ) -> io::Result<T> {
        let started = std::time::Instant::now();
        let result = self.runtime.block_on(call);
        crate::storage_metrics::STORAGE_CALLS.record(op, started.elapsed(), result.is_err());
        result.map_err(from_object)
    }

    /// Writes `bytes` under `key` if nothing is there (`If-None-Match: *`).
    fn put_new(&self, key: &str, bytes: bytes::Bytes) -> io::Result<()> {
        let key = self.key(key);
        let opts = PutOptions {
            mode: PutMode::Create,
            ..Default::default()
        };
        self.block(
            "put_new",
            self.store.put_opts(&key, PutPayload::from(bytes), opts),
        )
        .map(drop)
    }
}

#[cfg(test)]
mod tests;
