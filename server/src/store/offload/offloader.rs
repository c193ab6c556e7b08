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
//!   archive directory ([`archive::write_archive`]);
//! - **orphans**: segment files that are not registered (a process stopped between writing one
//!   and registering it, a commit refused or too late, a segment brought back) are deleted once
//!   a minute old, and only after the registry was read; the files of a destroyed project once
//!   its destroy marked it ([`Offloader::sweep_destroyed`]). Nothing is deleted because a read
//!   failed.
//!
//! Crash safety: a segment is written, fsynced and renamed ([`crate::segment::write`]) before
//! the script that registers it removes its items from Redis ([`crate::store::offload::Offload::commit_segment`]), so a
//! kill at any instant leaves each item in Redis or in a registered segment, never both.
//! [`step`] runs one step at a time and can stop after any of them ([`StopAfter`]), which is
//! how the tests kill it at each instant.

use super::super::projects::meta::Settings;
use super::{SegmentEntry, Store, StoreError, StoreResult};
use fred::prelude::*;
use std::{
    path::PathBuf,
    time::{Duration, SystemTime, UNIX_EPOCH},
};

pub mod archive;
mod moves;
mod sweep;

pub use sweep::{purge_files, purge_objects, purge_project_files, remove_purge_leftovers, Orphans};

/// How long a lease lasts unless renewed.
pub const LEASE_MS: u64 = 30_000;
/// Records sent per refill call.
const REFILL_CHUNK: usize = 5_000;
/// Completion log entries archived per round at most (the round reads them twice).
const LOG_STEP: u64 = 10_000;
/// A log entry older than this goes to disk.
const LOG_AGE_MS: u64 = 24 * 3600 * 1000;
/// The most items of one segment (`segment_items`): each segment goes to disk and comes back in
/// one script call, which holds Redis for as long as it takes. A setting saved above it by an
/// earlier version is read as this.
pub const MAX_SEGMENT_ITEMS: u64 = 100_000;
/// Log entries dropped per round at most, past the budget.
const SHED_STEP: u64 = 10_000;
/// How long a project with nothing to do is left alone (its lease lasts longer).
const IDLE_PAUSE: Duration = Duration::from_secs(5);
/// How often a resting offloader reads the wake-up counter (one `GET`).
const WAKE_POLL: Duration = Duration::from_millis(50);
/// Unregistered files younger than this are left alone (another process may be about to
/// register one, or a Redis that lost its last second may name one again).
pub const ORPHAN_AGE: Duration = Duration::from_secs(60);
/// A segment must be registered within this of Redis's clock before its file was written,
/// else the commit is refused: shorter than [`ORPHAN_AGE`], so the sweep never deletes a file
/// whose commit is still on its way (a stalled Redis, a slow connection).
pub const COMMIT_WINDOW: Duration = Duration::from_secs(40);

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
    /// Log entries dropped unarchived, past the log's budget.
    pub lost: u64,
}

impl Did {
    fn any(&self) -> bool {
        self.done + self.spilled + self.refilled + self.logged > 0
    }
}

/// The offloader of one process.
pub struct Offloader {
    store: Store,
    /// Where its segments go: the store's ([`crate::storage`]).
    storage: std::sync::Arc<crate::storage::Storage>,
    archive_dir: PathBuf,
    token: String,
    log_budget: u64,
}

/// A new segment id: its kind, when it was started (`ms`, Redis's clock), a random number and
/// the namespace's tag ([`crate::keys::Keys::segment_tag`]).
fn new_id(kind: &str, ms: u64, tag: &str) -> String {
    format!("{kind}-{ms}-{:016x}-{tag}", rand::random::<u64>())
}

fn io(e: std::io::Error) -> StoreError {
    StoreError::Disk(e.to_string())
}

impl Offloader {
    /// An offloader writing segments where the store keeps them and log archives under
    /// `archive_dir`, with a lease token of its own.
    pub fn new(store: Store, archive_dir: PathBuf) -> Self {
        let storage = store.offload().storage_shared();
        let token = format!("{:032x}", rand::random::<u128>());
        store.offload().set_offload_token(&token);
        Self {
            store,
            storage,
            archive_dir,
            token,
            log_budget: crate::limits::LOG_BUDGET,
        }
    }

    /// The same, keeping at most `entries` of a project's completion log in Redis while it
    /// cannot be archived (see [`crate::limits::LOG_BUDGET`]).
    pub fn with_log_budget(mut self, entries: u64) -> Self {
        self.log_budget = entries;
        self
    }

    /// Takes or renews the lease of `slug`: whether this offloader holds it now.
    pub async fn lease(&self, slug: &str) -> StoreResult<bool> {
        self.store
            .offload()
            .offload_lease(slug, &self.token, LEASE_MS)
            .await
    }

    /// Gives the lease of `slug` up, if held (as a process does when it stops).
    pub async fn release(&self, slug: &str) -> StoreResult<()> {
        self.store
            .offload()
            .release_offload_lease(slug, &self.token)
            .await
    }

    /// Runs every second until `closing`, giving its leases up at the end.
    pub fn spawn(self, closing: tokio_util::sync::CancellationToken) {
        tokio::spawn(async move {
            let mut last_sweep = std::time::Instant::now() - Duration::from_secs(3600);
            let mut held: Vec<String> = Vec::new();
            let mut wakes = self.store.offload().offload_wakes().await.unwrap_or(0);
            let mut idle: std::collections::HashMap<String, std::time::Instant> =
                Default::default();
            loop {
                let mut busy = false;
                // Unreadable (a stall, a failover): nothing is done this round, and nothing
                // is deleted for want of a list.
                let slugs = match self.store.projects().project_slugs().await {
                    Ok(slugs) => slugs,
                    Err(e) => {
                        tracing::warn!(error = %e, "reading the projects; offloading tried again in a second");
                        tokio::select! {
                            () = closing.cancelled() => break,
                            () = tokio::time::sleep(Duration::from_secs(1)) => {}
                        }
                        continue;
                    }
                };
                let sweep = last_sweep.elapsed() > Duration::from_secs(30);
                for slug in &slugs {
                    // A project found with nothing to do is looked at again in 5 s.
                    if !sweep && idle.get(slug).is_some_and(|t| t.elapsed() < IDLE_PAUSE) {
                        continue;
                    }
                    match self.tick(slug, sweep).await {
                        Ok(Some(did)) => {
                            busy |= did.any();
                            if did.any() {
                                idle.remove(slug);
                            } else {
                                idle.insert(slug.clone(), std::time::Instant::now());
                            }
                            if !held.contains(slug) {
                                held.push(slug.clone());
                            }
                        }
                        Ok(None) => held.retain(|s| s != slug),
                        Err(e) => {
                            tracing::warn!(slug, error = %e, "offloading; tried again in a second");
                            let _ = self
                                .store
                                .offload()
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
                    if let Err(e) = self.sweep_destroyed().await {
                        tracing::warn!(error = %e, "deleting the files of destroyed projects; tried again later");
                    }
                }
                if busy {
                    tokio::select! {
                        () = closing.cancelled() => break,
                        () = tokio::time::sleep(Duration::from_millis(10)) => {}
                    }
                    continue;
                }
                // Resting for a second, unless a bulk add waiting for a spill wakes it: then
                // every project is looked at again at once.
                let rest = std::time::Instant::now();
                let mut closed = false;
                while rest.elapsed() < Duration::from_secs(1) {
                    tokio::select! {
                        () = closing.cancelled() => closed = true,
                        () = tokio::time::sleep(WAKE_POLL) => {}
                    }
                    if closed {
                        break;
                    }
                    match self.store.offload().offload_wakes().await {
                        Ok(n) if n != wakes => {
                            wakes = n;
                            idle.clear();
                            break;
                        }
                        _ => {}
                    }
                }
                if closed {
                    break;
                }
            }
            for slug in held {
                let _ = self
                    .store
                    .offload()
                    .release_offload_lease(&slug, &self.token)
                    .await;
            }
        });
    }

    /// One round for `slug`: `None` when another process holds the lease (or the project is
    /// gone); else what was done (one segment of each kind at most; nothing when nothing is
    /// due).
    pub async fn tick(&self, slug: &str, sweep: bool) -> StoreResult<Option<Did>> {
        // The lease first: the other processes do no more than this per project.
        if !self
            .store
            .offload()
            .offload_lease(slug, &self.token, LEASE_MS)
            .await?
        {
            return Ok(None);
        }
        let Some(settings) = self.store.projects().project(slug).await? else {
            return Ok(None);
        };
        // Each step on its own: one failing (a slow disk, a timeout) does not hold the
        // others back; the first failure is recorded and logged.
        let mut failure = None;
        let mut note = |e: StoreError| {
            failure.get_or_insert(e);
        };
        let work = self.work(slug, &settings).await.unwrap_or_else(|e| {
            note(e);
            Work::default()
        });
        let mut did = Did::default();
        if sweep {
            did.orphans = self.sweep(slug).await.unwrap_or_else(|e| {
                note(e);
                0
            });
        }
        if work.done {
            match self.offload_done(slug, &settings, StopAfter::Never).await {
                Ok(n) => did.done = n,
                Err(e) => note(e),
            }
        }
        for part in &work.spill {
            match self.spill(slug, &settings, part, StopAfter::Never).await {
                Ok(n) => did.spilled += n,
                Err(e) => note(e),
            }
        }
        for (id, entry) in &work.refill {
            match self.refill(slug, id, entry).await {
                Ok(n) => did.refilled += n,
                Err(e) => note(e),
            }
        }
        let mut archive_failed = false;
        match self.log_work(slug, &settings).await {
            Ok(Some(end)) => match self.archive_log(slug, &end).await {
                Ok(n) => did.logged = n,
                Err(e) => {
                    archive_failed = true;
                    note(e)
                }
            },
            Ok(None) => {}
            Err(e) => note(e),
        }
        // Archiving failing, past its budget the log's oldest entries go, counted as lost.
        let shed = match archive_failed {
            true => {
                self.store
                    .offload()
                    .shed_log(slug, self.log_budget, SHED_STEP)
                    .await
            }
            false => Ok(0),
        };
        match shed {
            Ok(0) => {}
            Ok(n) => {
                did.lost = n;
                tracing::error!(
                    slug,
                    lost = n,
                    budget = self.log_budget,
                    "the completion log cannot be archived and passed its budget in Redis: its oldest entries were dropped (counted in tracker_log_entries_lost_total)"
                );
            }
            Err(e) => note(e),
        }
        let now = now_ms().to_string();
        let mut fields = vec![("run", now.clone())];
        match &failure {
            None => fields.push(("ok_t", now)),
            Some(e) => {
                fields.push(("error", e.to_string()));
                fields.push(("error_t", now));
            }
        }
        self.store.offload().note_offload(slug, fields).await?;
        if let Some(e) = failure {
            return Err(e);
        }
        Ok(Some(did))
    }

    async fn work(&self, slug: &str, s: &Settings) -> StoreResult<Work> {
        let k = self.store.keys().project(slug);
        let client = self.store.client();
        let mut work = Work::default();
        if s.done_policy != "keep" {
            let n: u64 = client.scard(k.done()).await?;
            work.done = n >= s.offload_keep + s.segment_items.min(MAX_SEGMENT_ITEMS);
        }
        let entries = self.store.offload().segment_entries(slug).await?;
        let meta_queues: Option<String> = client.hget(k.meta(), "queues").await?;
        for part in super::super::helpers::queue_parts(meta_queues.as_deref()) {
            let size: u64 = client.zcard(k.queue(&part)).await?;
            if s.queue_high > 0 && size > s.queue_high + s.segment_items.min(MAX_SEGMENT_ITEMS) / 2
            {
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
        Ok(work)
    }

    /// The id through which the completion log of `slug` goes to disk now, if any: past
    /// `log_keep` plus a tenth, down to `log_keep`, at most [`LOG_STEP`] entries a round; or
    /// every entry older than a day, once the oldest is 25 hours old.
    async fn log_work(&self, slug: &str, s: &Settings) -> StoreResult<Option<String>> {
        let k = self.store.keys().project(slug);
        let len: u64 = self.store.client().xlen(k.log()).await?;
        let keep = s.log_keep;
        if len > keep + (keep / 10).max(1_000) {
            return self
                .store
                .fleet()
                .log_entry_at(slug, (len - keep).min(LOG_STEP) - 1)
                .await;
        }
        if len == 0 {
            return Ok(None);
        }
        let oldest = self.store.fleet().log_page(slug, "-", "+", 1).await?;
        let t = oldest
            .first()
            .and_then(|(id, _)| id.split('-').next()?.parse::<u64>().ok());
        let cut = now_ms().saturating_sub(LOG_AGE_MS);
        Ok(t.is_some_and(|t| t + 3_600_000 < cut)
            .then(|| format!("{cut}-{}", u64::MAX)))
    }
}

/// What a project needs now.
#[derive(Default)]
struct Work {
    done: bool,
    spill: Vec<String>,
    refill: Vec<(String, SegmentEntry)>,
}
