//! The offloader's moves, each a segment at a time: done items out, a queue's tail out and
//! back, the completion log out.

use super::super::super::projects::meta::Settings;
use super::super::{SegmentEntry, StoreError, StoreResult};
use super::{io, new_id, now_ms, Offloader, StopAfter, COMMIT_WINDOW, REFILL_CHUNK};
use crate::storage::Storage;
use fred::prelude::*;

impl Offloader {
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
            .srandmember(
                k.done(),
                Some(s.segment_items.min(super::MAX_SEGMENT_ITEMS) as usize),
            )
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
                s.segment_items.min(super::MAX_SEGMENT_ITEMS) as i64 - 1,
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
        // Redis's clock before the file exists, in its name: the commit is refused past this
        // plus the window, and the sweep deletes only files started a minute before its own
        // reading of that clock, so it never deletes one that gets registered (whatever the
        // clocks of this machine or of a shared filesystem say).
        let started = self.store.offload().redis_now_ms().await?;
        let id = new_id(kind, started, &self.store.projects().files_tag(slug).await?);
        let deadline = started + COMMIT_WINDOW.as_millis() as u64;
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
        let (storage, moved) = (self.storage.clone(), records);
        let (slug2, id2) = (slug.to_string(), id.clone());
        let (bytes, records) = tokio::task::spawn_blocking(move || {
            let mut records = moved;
            storage
                .write_segment(&slug2, &id2, &mut records, keep_names)
                .map(|b| (b, records))
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
        let n = match self
            .store
            .offload()
            .commit_segment(slug, &self.token, &id, &entry, &records, deadline)
            .await
        {
            Ok(n) => n,
            Err(StoreError::Refused(_)) => {
                // Refused before any write: the items stay in Redis, the file goes (or, if
                // this delete fails, the sweep takes it once it is past the commit window).
                let (storage, key) = (self.storage.clone(), Storage::segment_key(slug, &id));
                let _ = tokio::task::spawn_blocking(move || storage.delete(&key)).await;
                return Ok(0);
            }
            Err(e) => {
                // The outcome is unknown (a timeout, a dropped connection: the script may
                // have run). The registry says; unreadable, the file stays, and the sweep
                // deletes it only once it is unregistered past the commit window.
                return match self.store.offload().segment_entries(slug).await {
                    Ok(entries) if entries.iter().any(|(i, _)| *i == id) => {
                        tracing::info!(
                            slug,
                            id,
                            "a commit that timed out had registered its segment"
                        );
                        Ok(entry.count)
                    }
                    _ => Err(e),
                };
            }
        };
        if stop == StopAfter::Registered {
            return Ok(n);
        }
        // Open it now, so this process's lookups see it at once.
        self.store.offload().on_disk(slug).await?;
        tracing::debug!(slug, id, kind, n, "segment written");
        Ok(n)
    }

    /// Brings queue segment `id` back into its part, in chunks; items brought back.
    pub async fn refill(&self, slug: &str, id: &str, entry: &SegmentEntry) -> StoreResult<u64> {
        let (storage, slug2, id2) = (self.storage.clone(), slug.to_string(), id.to_string());
        let records =
            tokio::task::spawn_blocking(move || storage.open_segment(&slug2, &id2)?.all())
                .await
                .map_err(|e| StoreError::Disk(e.to_string()))?
                .map_err(io)?;
        let mut from = self
            .store
            .offload()
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
                .offload()
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
        // Unregistered now, noted in `segs:gone` with Redis's time by the same script: the file
        // stays a minute more, so a Redis that loses its last second of writes (`everysec`) and
        // registers it again finds it. The sweep deletes it then.
        Ok(back)
    }

    pub(super) async fn archive_log(&self, slug: &str, end: &str) -> StoreResult<u64> {
        let archives = super::archive::Archives::of(&self.store, &self.archive_dir, slug).await?;
        match super::archive::write_archive(&self.store, &archives, slug, end, &self.token).await {
            Ok(Some(w)) => {
                tracing::info!(slug, file = %w.name, count = w.count, "archived the completion log");
                Ok(w.count)
            }
            Ok(None) => Ok(0),
            Err(super::archive::ArchiveError::Store(e)) => Err(e),
            Err(super::archive::ArchiveError::Io(e)) => Err(io(e)),
            Err(super::archive::ArchiveError::Leased) => Ok(0),
        }
    }
}
