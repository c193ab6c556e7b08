//! Items on disk: each project's registry of segment files (in Redis), the segments this
//! process has open, lookups by name, and the scripts that move items between Redis and disk.
//! What moves when is [`crate::store::offload::offloader`]'s business; the file format is [`crate::segment`].
//!
//! Every script that changes the registry gives it a `gen` it never had (`next_gen` in
//! `_lib.lua`: above the last and at least Redis's clock in microseconds, so not even a rollback
//! that lost a commit makes one come round again); a process reopens the segments when the
//! number it reads differs from the one it holds. Adding items checks them
//! against the segments of one gen and the script refuses the call when the gen moved on, so
//! an item that moved between Redis and disk meanwhile is never added twice.

use super::redis_core::{Store, StoreError, StoreResult};
use crate::segment::Segment;
use fred::prelude::*;
use serde::{Deserialize, Serialize};
use std::{
    collections::HashMap,
    path::{Path, PathBuf},
    sync::{Arc, Mutex, RwLock},
};

pub mod offloader;
mod on_disk;
mod union_filter;

super::redis_core::handle!(
    Offload,
    offload,
    "The store's offload slice: a view of the store whose methods are its operations."
);

pub use on_disk::{Asking, DiskHit, OnDisk, OpenSegment};

/// A segment's registry entry (`ns:{SLUG}:segs`, JSON).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SegmentEntry {
    /// `done` (done items and their timelines), `discard` (only a filter of done items' names)
    /// or `queue` (waiting items of one queue part, with their scores).
    pub kind: String,
    /// The queue part (kind `queue`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub part: String,
    /// Items in it.
    pub count: u64,
    /// The file's size.
    pub bytes: u64,
    /// When it was written (ms).
    pub t: u64,
    /// The lowest and highest queue score (kind `queue`).
    #[serde(default)]
    pub min: f64,
    /// See `min`.
    #[serde(default)]
    pub max: f64,
}

/// The offload directory and the segments this process has open, per project.
#[derive(Default)]
pub struct DiskCache {
    token: RwLock<Option<String>>,
    /// Each address's allowance of dones that look items up on disk.
    pub(super) lookups: crate::throttle::Throttle,
    projects: Mutex<HashMap<String, Arc<OnDisk>>>,
}

/// The path of segment `id` of `slug` under `dir`.
pub fn segment_path(dir: &Path, slug: &str, id: &str) -> PathBuf {
    dir.join(slug).join(format!("{id}.seg"))
}

fn disk_err(e: impl std::fmt::Display) -> StoreError {
    StoreError::Disk(e.to_string())
}

/// `offload_commit`'s answer.
#[derive(Deserialize)]
struct Moved {
    moved: u64,
}

/// `refill`'s answer.
#[derive(Deserialize)]
struct Restored {
    restored: u64,
}

impl Offload<'_> {
    /// Sets the offload lease token of this process's offloader, which the panel's log archive
    /// uses too (one archive per project at a time, across processes).
    pub fn set_offload_token(self, token: &str) {
        *self
            .slice::<DiskCache>()
            .token
            .write()
            .unwrap_or_else(|e| e.into_inner()) = Some(token.to_string());
    }

    /// The offload lease token of this process's offloader, if it runs one.
    pub fn offload_token(self) -> Option<String> {
        self.slice::<DiskCache>()
            .token
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Where segment files live, shared with the blocking threads that read them.
    pub fn storage_shared(self) -> Arc<crate::storage::Storage> {
        self.storage.clone()
    }

    /// The wake-up counter of the offloaders ([`crate::keys::Keys::offload_wake`]).
    pub async fn offload_wakes(self) -> StoreResult<u64> {
        let n: Option<u64> = self.pool.next().get(self.keys.offload_wake()).await?;
        Ok(n.unwrap_or(0))
    }

    /// The segment registry of `slug`: id -> entry.
    pub async fn segment_entries(self, slug: &str) -> StoreResult<Vec<(String, SegmentEntry)>> {
        let k = self.keys.project(slug);
        let raw: HashMap<String, String> = self.pool.next().hgetall(k.segs()).await?;
        let mut out: Vec<(String, SegmentEntry)> = raw
            .into_iter()
            .filter_map(|(id, e)| match serde_json::from_str(&e) {
                Ok(e) => Some((id, e)),
                Err(why) => {
                    // Its file stays (the sweep keeps every registered id); its items are not
                    // looked up until the entry is mended.
                    tracing::error!(slug, id, error = %why, "a segment registry entry does not parse");
                    None
                }
            })
            .collect();
        out.sort_by(|a, b| a.1.t.cmp(&b.1.t).then(a.0.cmp(&b.0)));
        Ok(out)
    }

    /// The ids of every segment the registry of `slug` names.
    pub async fn segment_ids(self, slug: &str) -> StoreResult<Vec<String>> {
        Ok(self
            .pool
            .next()
            .hkeys(self.keys.project(slug).segs())
            .await?)
    }

    /// The segments of `slug` that left the registry when brought back, with when (ms,
    /// Redis's clock).
    pub async fn segments_gone(self, slug: &str) -> StoreResult<HashMap<String, u64>> {
        let k = self.keys.project(slug);
        Ok(self.pool.next().hgetall(k.segs_gone()).await?)
    }

    /// Forgets the notes of segments `ids` having left the registry (their files are gone).
    pub async fn forget_gone(self, slug: &str, ids: Vec<String>) -> StoreResult<()> {
        if ids.is_empty() {
            return Ok(());
        }
        let k = self.keys.project(slug);
        let _: i64 = self.pool.next().hdel(k.segs_gone(), ids).await?;
        Ok(())
    }

    /// The records of each queue segment already back in Redis.
    pub async fn restored_counts(self, slug: &str) -> StoreResult<HashMap<String, u64>> {
        let k = self.keys.project(slug);
        Ok(self.pool.next().hgetall(k.segs_restored()).await?)
    }

    /// The segments of `slug` as registered now, opened (reusing those already open).
    pub async fn on_disk(self, slug: &str) -> StoreResult<Arc<OnDisk>> {
        let k = self.keys.project(slug);
        let gen: Option<u64> = self.pool.next().hget(k.offload(), "gen").await?;
        let gen = gen.unwrap_or(0);
        let cached = self
            .slice::<DiskCache>()
            .projects
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(slug)
            .cloned();
        if let Some(c) = &cached {
            if c.gen == gen {
                return Ok(c.clone());
            }
        }
        let entries = self.segment_entries(slug).await?;
        if entries.is_empty() {
            let none = Arc::new(OnDisk {
                gen,
                segments: Vec::new(),
                union: Arc::default(),
            });
            self.remember_disk(slug, none.clone());
            return Ok(none);
        }
        let storage = self.storage_shared();
        let union = cached.as_ref().map(|c| c.union.clone()).unwrap_or_default();
        let open: HashMap<String, Arc<Segment>> = cached
            .map(|c| {
                c.segments
                    .iter()
                    .map(|s| (s.id.clone(), s.file.clone()))
                    .collect()
            })
            .unwrap_or_default();
        let slug_owned = slug.to_string();
        let shared = union.clone();
        let segments = tokio::task::spawn_blocking(move || {
            let segments = entries
                .into_iter()
                .map(|(id, entry)| {
                    let file = match open.get(&id) {
                        Some(f) => f.clone(),
                        None => Arc::new(
                            storage
                                .open_segment(&slug_owned, &id)
                                .map_err(|e| format!("segment {id}: {e}"))?,
                        ),
                    };
                    Ok(OpenSegment { id, entry, file })
                })
                .collect::<Result<Vec<_>, String>>()?;
            union_filter::cover(&shared, &segments)
                .map_err(|e| format!("reading segments: {e}"))?;
            Ok::<_, String>(segments)
        })
        .await
        .map_err(disk_err)?
        .map_err(disk_err)?;
        let now = Arc::new(OnDisk {
            gen,
            segments,
            union,
        });
        self.remember_disk(slug, now.clone());
        Ok(now)
    }

    fn remember_disk(self, slug: &str, disk: Arc<OnDisk>) {
        let cache = self.slice::<DiskCache>();
        let mut all = cache.projects.lock().unwrap_or_else(|e| e.into_inner());
        if all.len() > 10_000 {
            all.clear();
        }
        all.insert(slug.to_string(), disk);
    }

    /// Where each of `items` is on disk, as of the segments' `gen` returned with it.
    pub async fn find_on_disk(
        self,
        slug: &str,
        items: &[String],
    ) -> StoreResult<(u64, HashMap<String, DiskHit>)> {
        let disk = self.on_disk(slug).await?;
        if disk.segments.is_empty() || items.is_empty() {
            return Ok((disk.gen, HashMap::new()));
        }
        let (gen, items) = (disk.gen, items.to_vec());
        let found = tokio::task::spawn_blocking(move || disk.find(&items))
            .await
            .map_err(disk_err)?
            .map_err(disk_err)?;
        Ok((gen, found))
    }

    /// Takes or renews the offload lease of `slug` for `token`, for `ttl_ms`: whether this
    /// token holds it now.
    pub async fn offload_lease(self, slug: &str, token: &str, ttl_ms: u64) -> StoreResult<bool> {
        let k = self.keys.project(slug);
        let client = self.pool.next();
        let got: Option<String> = client
            .set(
                k.offload_lease(),
                token,
                Some(Expiration::PX(ttl_ms as i64)),
                Some(SetOptions::NX),
                false,
            )
            .await?;
        if got.is_some() {
            return Ok(true);
        }
        let holder: Option<String> = client.get(k.offload_lease()).await?;
        if holder.as_deref() != Some(token) {
            return Ok(false);
        }
        // Ours: renewed. (Expiring between the read and here only shortens it; the scripts
        // check the token again before they change anything.)
        let _: bool = client
            .pexpire(k.offload_lease(), ttl_ms as i64, None)
            .await?;
        Ok(true)
    }

    /// Gives the lease of `slug` up if `token` holds it.
    pub async fn release_offload_lease(self, slug: &str, token: &str) -> StoreResult<()> {
        // One script: between a read and a delete the lease could lapse and another process
        // take it, which the delete would then end while it works.
        let _: i64 = self
            .scripts
            .run(
                self.pool.next(),
                &self.scripts.delete_if,
                vec![self.keys.project(slug).offload_lease()],
                vec![Value::from(token)],
            )
            .await?;
        Ok(())
    }

    /// Redis's clock, in ms (`TIME`).
    pub async fn redis_now_ms(self) -> StoreResult<u64> {
        let t: Vec<String> = self
            .pool
            .next()
            .custom(fred::cmd!("TIME"), Vec::<String>::new())
            .await?;
        let num = |i: usize| t.get(i).and_then(|v| v.parse::<u64>().ok());
        match (num(0), num(1)) {
            (Some(s), Some(us)) => Ok(s * 1000 + us / 1000),
            _ => Err(StoreError::Reply {
                script: "TIME",
                detail: format!("{t:?}"),
            }),
        }
    }

    /// Registers segment `id` (its file written, fsynced and renamed) and removes its items
    /// from Redis in one step (`offload_commit.lua`): `items` are done items (kinds `done`,
    /// `discard`) or queue items with the scores they were read with (kind `queue`). Refused
    /// (stale) once Redis's clock passes `deadline_ms`.
    #[allow(clippy::too_many_arguments)]
    pub async fn commit_segment(
        self,
        slug: &str,
        token: &str,
        id: &str,
        entry: &SegmentEntry,
        items: &[(String, String)],
        deadline_ms: u64,
    ) -> StoreResult<u64> {
        let k = self.keys.project(slug);
        let part = if entry.kind == "queue" {
            k.queue(&entry.part)
        } else {
            k.done()
        };
        let keys = k.offload_commit_keys(part);
        let mut args = vec![
            Value::from(token),
            Value::from(id),
            Value::from(serde_json::to_string(entry).map_err(disk_err)?),
            Value::from(entry.kind.as_str()),
            Value::from(deadline_ms.min(i64::MAX as u64) as i64),
        ];
        for (item, score) in items {
            args.push(Value::from(item.as_str()));
            if entry.kind == "queue" {
                args.push(Value::from(score.as_str()));
            }
        }
        let reply: Moved = self
            .scripts
            .call(self.pool.next(), &self.scripts.offload_commit, keys, args)
            .await?
            .map_err(StoreError::Refused)?;
        Ok(reply.moved)
    }

    /// Brings `items` (item, score), the records `from..` of queue segment `id` of `total`
    /// records, back into `part` (`refill.lua`): the segment's new restored count.
    #[allow(clippy::too_many_arguments)]
    pub async fn refill_chunk(
        self,
        slug: &str,
        token: &str,
        id: &str,
        part: &str,
        from: u64,
        total: u64,
        items: &[(String, String)],
    ) -> StoreResult<u64> {
        let k = self.keys.project(slug);
        let keys = k.refill_keys(part);
        let mut args = vec![
            Value::from(token),
            Value::from(id),
            Value::from(from as i64),
            Value::from(total as i64),
        ];
        for (item, score) in items {
            args.push(Value::from(item.as_str()));
            args.push(Value::from(score.as_str()));
        }
        let reply: Restored = self
            .scripts
            .call(self.pool.next(), &self.scripts.refill, keys, args)
            .await?
            .map_err(StoreError::Refused)?;
        Ok(reply.restored)
    }

    /// The offloader's recorded state of `slug` (`ns:{SLUG}:offload`).
    pub async fn offload_state(self, slug: &str) -> StoreResult<HashMap<String, String>> {
        let k = self.keys.project(slug);
        Ok(self.pool.next().hgetall(k.offload()).await?)
    }

    /// What of `slug` is on disk, and the offloader's recorded state (log archives not
    /// counted: they are files of [`crate::admin::archive`]).
    pub async fn offload_summary(self, slug: &str) -> StoreResult<app::model::admin::OffloadState> {
        let k = self.keys.project(slug);
        let entries = self.segment_entries(slug).await?;
        let restored = self.restored_counts(slug).await?;
        let state = self.offload_state(slug).await?;
        let leased: bool = self.pool.next().exists(k.offload_lease()).await?;
        let policy = self
            .projects()
            .project(slug)
            .await?
            .map(|s| s.done_policy.clone())
            .unwrap_or_default();
        let field = |name: &str| state.get(name).and_then(|v| v.parse::<u64>().ok());
        let pipe = self.pool.next().pipeline();
        let _: () = pipe.xlen(k.log()).await?;
        let _: () = pipe.hget(k.stats(), "log_lost").await?;
        let (log_entries, log_lost): (u64, Option<u64>) = pipe.all().await?;
        let mut out = app::model::admin::OffloadState {
            done_policy: policy,
            segments: entries.len() as u64,
            last_run: field("run"),
            error: state.get("error").cloned().unwrap_or_default(),
            error_t: field("error_t"),
            // A failure since the last round that had none.
            failing: field("error_t").unwrap_or(0) > field("ok_t").unwrap_or(0),
            leased,
            log_entries,
            log_lost: log_lost.unwrap_or(0),
            ..Default::default()
        };
        for (id, e) in &entries {
            out.bytes += e.bytes;
            match e.kind.as_str() {
                "discard" => out.discarded += e.count,
                "queue" => {
                    out.todo_on_disk += e
                        .count
                        .saturating_sub(restored.get(id).copied().unwrap_or(0))
                }
                _ => out.done_on_disk += e.count,
            }
        }
        Ok(out)
    }

    /// Drops the oldest folded entries of the completion log of `slug` past `budget` entries,
    /// at most `step` (`log_shed.lua`); how many went, counted as lost.
    pub async fn shed_log(self, slug: &str, budget: u64, step: u64) -> StoreResult<u64> {
        let k = self.keys.project(slug);
        self.scripts
            .run(
                self.pool.next(),
                &self.scripts.log_shed,
                vec![k.log(), k.stats()],
                vec![
                    Value::from(k.prefix()),
                    Value::from(budget as i64),
                    Value::from(step as i64),
                ],
            )
            .await
    }

    /// Records fields of the offloader's state of `slug`.
    pub async fn note_offload(self, slug: &str, fields: Vec<(&str, String)>) -> StoreResult<()> {
        if fields.is_empty() {
            return Ok(());
        }
        let key = self.keys.project(slug).offload();
        let mut hset = vec!["HSET".to_string(), key];
        for (field, value) in fields {
            hset.push(field.to_string());
            hset.push(value);
        }
        self.projects().write_in_project(slug, vec![hset]).await?;
        Ok(())
    }
}
