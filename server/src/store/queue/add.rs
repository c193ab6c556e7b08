//! Adding items to queues: each item the project knows in any state, in Redis or on disk, is
//! skipped; a bulk add past a queue's high-water mark waits for the offloader to spill.

use super::{projects::meta::Settings, StoreError, StoreResult};
use crate::keys::PERSONAL;
use fred::prelude::*;

/// How many items one `add_items` call carries.
const ADD_BATCH: usize = 1000;

impl super::Queue<'_> {
    /// Adds items to `queue` (a queue of [`crate::keys::QUEUES`] or `todo:d:<downloader>`), each
    /// in the part its pattern limit says; returns how many were new.
    pub async fn add_items(self, slug: &str, queue: &str, items: &[String]) -> StoreResult<u64> {
        self.add_or_count_items(slug, queue, items, false).await
    }

    /// How many of `items` [`crate::store::queue::Queue::add_items`] would add (none known yet, each counted once
    /// per call); changes nothing.
    pub async fn count_new_items(
        self,
        slug: &str,
        queue: &str,
        items: &[String],
    ) -> StoreResult<u64> {
        self.add_or_count_items(slug, queue, items, true).await
    }

    async fn add_or_count_items(
        self,
        slug: &str,
        queue: &str,
        items: &[String],
        count_only: bool,
    ) -> StoreResult<u64> {
        let k = self.keys.project(slug);
        let keys = k.add_items_keys();
        // The settings, read once: the pattern limits, the order, the high-water mark.
        let (settings, patterns) = self.projects().cached_settings(slug).await?.unzip();
        let patterns = patterns.unwrap_or_default();
        let personal = queue.starts_with(PERSONAL);
        // A bulk add into a queue with a high-water mark waits for the offloader as it goes.
        let spilling = settings
            .as_deref()
            .filter(|s| s.queue_high > 0 && !count_only && !personal);
        let call = Chunk {
            keys: &keys,
            prefix: k.prefix().to_string(),
            queue,
            mode: if count_only { "count" } else { "add" },
            patterns: &patterns,
            personal,
        };
        // A FIFO project's order is the order of its `add_items` calls: one at a time. Others
        // draw each item's place at random, so two calls are in flight: the second chunk's
        // arguments (and disk lookups) are made while Redis runs the first. Each call checks
        // its items against all that came before.
        let fifo = settings.as_ref().is_none_or(|s| s.fifo);
        let at_once = if fifo { 1 } else { 2 };
        let mut added = 0;
        for group in items.chunks(at_once * ADD_BATCH) {
            let (a, b) = group.split_at(group.len().min(ADD_BATCH));
            let (x, y) = futures::future::try_join(
                self.add_chunk(slug, &call, a),
                self.add_chunk(slug, &call, b),
            )
            .await?;
            added += x + y;
            if let Some(s) = spilling.filter(|_| added > 0) {
                self.wait_for_spill(s, slug, queue).await?;
            }
        }
        Ok(added)
    }

    /// One `add_items` call for `chunk` (none when it is empty). Items on disk are known: left
    /// out, against the segments of one gen, which the script checks is still the current one
    /// (else the segments moved: again).
    async fn add_chunk(self, slug: &str, call: &Chunk<'_>, chunk: &[String]) -> StoreResult<u64> {
        if chunk.is_empty() {
            return Ok(0);
        }
        let mut tries = 0;
        loop {
            tries += 1;
            let (gen, on_disk) = self.offload().find_on_disk(slug, chunk).await?;
            let mut args = Vec::with_capacity(4 + 2 * chunk.len());
            args.push(Value::from(call.prefix.as_str()));
            args.push(Value::from(call.queue));
            args.push(Value::from(call.mode));
            args.push(Value::from(gen.to_string()));
            for item in chunk.iter().filter(|i| !on_disk.contains_key(*i)) {
                let part = if call.personal {
                    String::new()
                } else {
                    call.patterns.part_of(item)
                };
                args.push(Value::from(part));
                args.push(Value::from(item.as_str()));
            }
            let n: i64 = self
                .scripts
                .run(
                    self.pool.next(),
                    &self.scripts.add_items,
                    call.keys.to_vec(),
                    args,
                )
                .await?;
            if n >= 0 {
                return Ok(n as u64);
            }
            if tries >= 20 {
                return Err(StoreError::Unavailable(
                    "the segments on disk kept changing while items were added".into(),
                ));
            }
        }
    }

    /// While a bulk add runs past a queue's high-water mark (plus four segments) and an
    /// offloader is at work on the project (its lease is held), waits for it to spill the tail
    /// to disk, so that Redis holds about the mark, not the whole load. Gives up waiting after
    /// 30 s without progress (the load then goes on into Redis).
    async fn wait_for_spill(self, s: &Settings, slug: &str, queue: &str) -> StoreResult<()> {
        let k = self.keys.project(slug);
        let limit = s.queue_high + 4 * s.segment_items;
        let client = self.pool.next();
        let (mut last, mut since) = (u64::MAX, std::time::Instant::now());
        let mut poked = since;
        loop {
            let size: u64 = client.zcard(k.queue(queue)).await?;
            if size <= limit {
                return Ok(());
            }
            let offloading: bool = client.exists(k.offload_lease()).await?;
            if !offloading {
                return Ok(());
            }
            // The offloader may be resting between rounds: woken, at each step and every
            // quarter of a second.
            if size < last || poked.elapsed() > std::time::Duration::from_millis(250) {
                let _: i64 = client.incr(self.keys.offload_wake()).await?;
                poked = std::time::Instant::now();
            }
            if size < last {
                (last, since) = (size, std::time::Instant::now());
            } else if since.elapsed() > std::time::Duration::from_secs(30) {
                tracing::warn!(slug, queue, size, "the offloader does not spill; adding on");
                return Ok(());
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    }
}

/// What every `add_items` call of one add shares.
struct Chunk<'a> {
    keys: &'a [String],
    prefix: String,
    queue: &'a str,
    mode: &'static str,
    patterns: &'a super::projects::meta::Patterns,
    personal: bool,
}
