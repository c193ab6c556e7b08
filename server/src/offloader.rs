//! The offloader: keeps each project's Redis memory to the work in flight. Once a second, per
//! project, under a lease in Redis (one process at a time, whatever the number of processes):
//!
//! - **done items** (settings `done_policy` `offload` or `discard`): past `offload_keep` done
//!   items in Redis, `segment_items` of them at a time go to a segment file, with their
//!   timelines (`offload`), or only into the file's filter (`discard`);
//! - **long queues** (`queue_high`): a queue part past its high-water mark sends its last items
//!   (highest scores, served last) to a segment, and gets them back, lowest scores first, when
//!   its Redis part runs low or when they would be served before items in Redis: claims are
//!   only ever served from Redis;
//! - **the completion log**: entries past `log_keep` in Redis, or older than a day, go to the
//!   archive directory ([`crate::admin::archive::write_archive`]);
//! - **orphans**: segment files that are not registered (a process stopped between writing one
//!   and registering it, or after bringing one back) are deleted once they are a minute old.
//!
//! Crash safety: a segment is written, fsynced and renamed ([`crate::segment::write`]) before
//! the script that registers it removes its items from Redis ([`Store::commit_segment`]), so a
//! kill at any instant leaves each item in Redis or in a registered segment, never both.
//! [`step`] runs one step at a time and can stop after any of them ([`StopAfter`]), which is
//! how the tests kill it at each instant.

use crate::{
    segment,
    store::{offload::segment_path, SegmentEntry, Settings, Store, StoreError, StoreResult},
};
use fred::prelude::*;
use std::{
    path::{Path, PathBuf},
    time::{Duration, SystemTime, UNIX_EPOCH},
};

/// How long a lease lasts unless renewed.
pub const LEASE_MS: u64 = 30_000;
/// Records sent per refill call.
const REFILL_CHUNK: usize = 5_000;
/// A log entry older than this goes to disk.
const LOG_AGE_MS: u64 = 24 * 3600 * 1000;
/// Unregistered files younger than this are left alone (another process may be about to
/// register one).
const ORPHAN_AGE: Duration = Duration::from_secs(60);

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// Where a step stops early: the instants the crash tests kill it at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopAfter {
    /// Run to the end.
    Never,
    /// After reading the items, before writing the file.
    Read,
    /// After the file is written and renamed, before it is registered.
    Written,
    /// After it is registered, before this process opens it.
    Registered,
}

/// What one step did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Did {
    /// Done items moved to a segment.
    pub done: u64,
    /// Queue items moved to a segment.
    pub spilled: u64,
    /// Queue items brought back.
    pub refilled: u64,
    /// Log entries archived.
    pub logged: u64,
    /// Orphan files deleted.
    pub orphans: u64,
}

impl Did {
    fn any(&self) -> bool {
        self.done + self.spilled + self.refilled + self.logged > 0
    }
}

/// The offloader of one process.
pub struct Offloader {
    store: Store,
    dir: PathBuf,
    archive_dir: PathBuf,
    token: String,
}

fn new_id(kind: &str) -> String {
    format!("{kind}-{}-{:016x}", now_ms(), rand::random::<u64>())
}

fn io(e: std::io::Error) -> StoreError {
    StoreError::Disk(e.to_string())
}

impl Offloader {
    /// An offloader writing segments under `dir` and log archives under `archive_dir`, with a
    /// lease token of its own.
    pub fn new(store: Store, dir: PathBuf, archive_dir: PathBuf) -> Self {
        store.set_offload_dir(dir.clone());
        Self {
            store,
            dir,
            archive_dir,
            token: format!("{:032x}", rand::random::<u128>()),
        }
    }

    /// Takes or renews the lease of `slug`: whether this offloader holds it now.
    pub async fn lease(&self, slug: &str) -> StoreResult<bool> {
        self.store.offload_lease(slug, &self.token, LEASE_MS).await
    }

    /// Gives the lease of `slug` up, if held (as a process does when it stops).
    pub async fn release(&self, slug: &str) -> StoreResult<()> {
        self.store.release_offload_lease(slug, &self.token).await
    }

    /// Runs every second until `closing`, giving its leases up at the end.
    pub fn spawn(self, closing: tokio_util::sync::CancellationToken) {
        tokio::spawn(async move {
            let mut last_sweep = std::time::Instant::now() - Duration::from_secs(3600);
            let mut held: Vec<String> = Vec::new();
            loop {
                let mut busy = false;
                let slugs = self.store.project_slugs().await.unwrap_or_default();
                let sweep = last_sweep.elapsed() > Duration::from_secs(30);
                for slug in &slugs {
                    match self.tick(slug, sweep).await {
                        Ok(Some(did)) => {
                            busy |= did.any();
                            if !held.contains(slug) {
                                held.push(slug.clone());
                            }
                        }
                        Ok(None) => held.retain(|s| s != slug),
                        Err(e) => {
                            tracing::warn!(slug, error = %e, "offloading; tried again in a second");
                            let _ = self
                                .store
                                .note_offload(
                                    slug,
                                    vec![
                                        ("error", e.to_string()),
                                        ("error_t", now_ms().to_string()),
                                    ],
                                )
                                .await;
                        }
                    }
                }
                if sweep {
                    last_sweep = std::time::Instant::now();
                    self.sweep_gone_projects(&slugs).await;
                }
                let pause = if busy {
                    Duration::from_millis(10)
                } else {
                    Duration::from_secs(1)
                };
                tokio::select! {
                    () = closing.cancelled() => break,
                    () = tokio::time::sleep(pause) => {}
                }
            }
            for slug in held {
                let _ = self.store.release_offload_lease(&slug, &self.token).await;
            }
        });
    }

    /// One round for `slug`: `None` when there is nothing to do or another process holds the
    /// lease; else what was done (one segment of each kind at most).
    pub async fn tick(&self, slug: &str, sweep: bool) -> StoreResult<Option<Did>> {
        let Some(settings) = self.store.project(slug).await? else {
            return Ok(None);
        };
        let work = self.work(slug, &settings).await?;
        if !work.any() && !sweep {
            return Ok(None);
        }
        if !self
            .store
            .offload_lease(slug, &self.token, LEASE_MS)
            .await?
        {
            return Ok(None);
        }
        let mut did = Did::default();
        if sweep {
            did.orphans = self.sweep(slug).await?;
        }
        if work.done {
            did.done = self.offload_done(slug, &settings, StopAfter::Never).await?;
        }
        for part in &work.spill {
            did.spilled += self.spill(slug, &settings, part, StopAfter::Never).await?;
        }
        for (id, entry) in &work.refill {
            did.refilled += self.refill(slug, id, entry).await?;
        }
        if let Some(end) = &work.log_through {
            did.logged = self.archive_log(slug, end).await?;
        }
        self.store
            .note_offload(slug, vec![("run", now_ms().to_string())])
            .await?;
        Ok(Some(did))
    }

    async fn work(&self, slug: &str, s: &Settings) -> StoreResult<Work> {
        let k = self.store.keys().project(slug);
        let client = self.store.client();
        let mut work = Work::default();
        if s.done_policy != "keep" {
            let n: u64 = client.scard(k.done()).await?;
            work.done = n >= s.offload_keep + s.segment_items;
        }
        let entries = self.store.segment_entries(slug).await?;
        let meta_queues: Option<String> = client.hget(k.meta(), "queues").await?;
        for part in crate::store::queue_parts(meta_queues.as_deref()) {
            let size: u64 = client.zcard(k.queue(&part)).await?;
            if s.queue_high > 0 && size > s.queue_high + s.segment_items / 2 {
                work.spill.push(part.clone());
                continue;
            }
            // The part's lowest segment comes back when the part runs low, or when its items
            // would be served before those at the low mark.
            let lowest = entries
                .iter()
                .filter(|(_, e)| e.kind == "queue" && e.part == part)
                .min_by(|a, b| a.1.min.total_cmp(&b.1.min));
            if let Some((id, e)) = lowest {
                let low = s.queue_high / 2;
                let due = s.queue_high == 0 || size < low || {
                    let at: Vec<(String, f64)> = client
                        .zrange(
                            k.queue(&part),
                            low as i64,
                            low as i64,
                            None,
                            false,
                            None,
                            true,
                        )
                        .await?;
                    at.first().is_none_or(|(_, score)| *score > e.min)
                };
                if due {
                    work.refill.push((id.clone(), e.clone()));
                }
            }
        }
        let len: u64 = client.xlen(k.log()).await?;
        let keep = s.log_keep;
        if len > keep + (keep / 10).max(1_000) {
            work.log_through = self.store.log_entry_at(slug, len - keep - 1).await?;
        } else if len > 0 {
            // By age: everything older than a day, once the oldest is an hour past that.
            let oldest = self.store.log_page(slug, "-", "+", 1).await?;
            let t = oldest
                .first()
                .and_then(|(id, _)| id.split('-').next()?.parse::<u64>().ok());
            let cut = now_ms().saturating_sub(LOG_AGE_MS);
            if t.is_some_and(|t| t + 3_600_000 < cut) {
                work.log_through = Some(format!("{cut}-{}", u64::MAX));
            }
        }
        Ok(work)
    }

    /// Moves `segment_items` done items of `slug` (chosen at random) to a segment: with their
    /// timelines (`offload`), or only into its filter (`discard`). Items moved.
    pub async fn offload_done(
        &self,
        slug: &str,
        s: &Settings,
        stop: StopAfter,
    ) -> StoreResult<u64> {
        let k = self.store.keys().project(slug);
        let client = self.store.client();
        let items: Vec<String> = client
            .srandmember(k.done(), Some(s.segment_items as usize))
            .await?;
        if items.is_empty() {
            return Ok(0);
        }
        let discard = s.done_policy == "discard";
        let mut records: Vec<(String, String)> = Vec::with_capacity(items.len());
        for chunk in items.chunks(1000) {
            let lines: Vec<Option<String>> = if discard {
                vec![None; chunk.len()]
            } else {
                client.hmget(k.timeline(), chunk.to_vec()).await?
            };
            records.extend(
                chunk
                    .iter()
                    .cloned()
                    .zip(lines.into_iter().map(Option::unwrap_or_default)),
            );
        }
        if stop == StopAfter::Read {
            return Ok(0);
        }
        let kind = if discard { "discard" } else { "done" };
        self.write_and_commit(slug, kind, "", records, stop).await
    }

    /// Moves the last `segment_items` items (highest scores) of queue part `part` to a segment.
    pub async fn spill(
        &self,
        slug: &str,
        s: &Settings,
        part: &str,
        stop: StopAfter,
    ) -> StoreResult<u64> {
        let k = self.store.keys().project(slug);
        let tail: Vec<(String, f64)> = self
            .store
            .client()
            .zrange(
                k.queue(part),
                0,
                s.segment_items as i64 - 1,
                None,
                true,
                None,
                true,
            )
            .await?;
        if tail.is_empty() || stop == StopAfter::Read {
            return Ok(0);
        }
        let records = tail
            .into_iter()
            .map(|(i, score)| (i, score.to_string()))
            .collect();
        self.write_and_commit(slug, "queue", part, records, stop)
            .await
    }

    async fn write_and_commit(
        &self,
        slug: &str,
        kind: &str,
        part: &str,
        records: Vec<(String, String)>,
        stop: StopAfter,
    ) -> StoreResult<u64> {
        let id = new_id(kind);
        let path = segment_path(&self.dir, slug, &id);
        let keep_names = kind != "discard";
        let (min, max) = if kind == "queue" {
            records
                .iter()
                .fold((f64::MAX, f64::MIN), |(lo, hi), (_, s)| {
                    let s: f64 = s.parse().unwrap_or(0.0);
                    (lo.min(s), hi.max(s))
                })
        } else {
            (0.0, 0.0)
        };
        let (path2, moved) = (path.clone(), records);
        let (bytes, records) = tokio::task::spawn_blocking(move || {
            let mut records = moved;
            segment::write(&path2, &mut records, keep_names).map(|b| (b, records))
        })
        .await
        .map_err(|e| StoreError::Disk(e.to_string()))?
        .map_err(io)?;
        if stop == StopAfter::Written {
            return Ok(0);
        }
        let entry = SegmentEntry {
            kind: kind.into(),
            part: part.into(),
            count: records.len() as u64,
            bytes,
            t: now_ms(),
            min,
            max,
        };
        match self
            .store
            .commit_segment(slug, &self.token, &id, &entry, &records)
            .await
        {
            Ok(n) => {
                if stop == StopAfter::Registered {
                    return Ok(n);
                }
                // Open it now, so this process's lookups see it at once.
                self.store.on_disk(slug).await?;
                tracing::debug!(slug, id, kind, n, "segment written");
                Ok(n)
            }
            Err(e) => {
                // Not registered: the file goes, the items stay in Redis.
                let _ = std::fs::remove_file(&path);
                match e {
                    StoreError::Refused(_) => Ok(0),
                    e => Err(e),
                }
            }
        }
    }

    /// Brings queue segment `id` back into its part, in chunks; items brought back.
    pub async fn refill(&self, slug: &str, id: &str, entry: &SegmentEntry) -> StoreResult<u64> {
        let path = segment_path(&self.dir, slug, id);
        let records = tokio::task::spawn_blocking(move || segment::Segment::open(&path)?.all())
            .await
            .map_err(|e| StoreError::Disk(e.to_string()))?
            .map_err(io)?;
        let mut from = self
            .store
            .restored_counts(slug)
            .await?
            .get(id)
            .copied()
            .unwrap_or(0);
        let total = records.len() as u64;
        let mut back = 0;
        while from < total {
            let chunk = &records[from as usize..(from as usize + REFILL_CHUNK).min(records.len())];
            match self
                .store
                .refill_chunk(slug, &self.token, id, &entry.part, from, total, chunk)
                .await
            {
                Ok(now) => {
                    back += now - from;
                    from = now;
                }
                Err(StoreError::Refused(_)) => return Ok(back),
                Err(e) => return Err(e),
            }
        }
        let _ = std::fs::remove_file(segment_path(&self.dir, slug, id));
        Ok(back)
    }

    async fn archive_log(&self, slug: &str, end: &str) -> StoreResult<u64> {
        let dir = self.archive_dir.join(slug);
        match crate::admin::archive::write_archive(&self.store, dir, slug, end).await {
            Ok(Some(w)) => {
                tracing::info!(slug, file = %w.name, count = w.count, "archived the completion log");
                Ok(w.count)
            }
            Ok(None) => Ok(0),
            Err(crate::admin::archive::ArchiveError::Store(e)) => Err(e),
            Err(crate::admin::archive::ArchiveError::Io(e)) => Err(io(e)),
        }
    }

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
    async fn sweep_gone_projects(&self, slugs: &[String]) {
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

/// What a project needs now.
#[derive(Default)]
struct Work {
    done: bool,
    spill: Vec<String>,
    refill: Vec<(String, SegmentEntry)>,
    log_through: Option<String>,
}

impl Work {
    fn any(&self) -> bool {
        self.done || !self.spill.is_empty() || !self.refill.is_empty() || self.log_through.is_some()
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
