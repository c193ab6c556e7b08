//! The backfeed de-duplication filter: a scalable Bloom filter of 512-bit blocks in Redis.
//!
//! Layer `i` holds `capacity x 2^i` records at a false-positive rate of `P x (1-r) x r^i`
//! (`r = 1/2`), so the rates of all layers sum to at most `P` = 1e-6 however many layers the
//! filter grows. A record touches one 64-byte block per layer, so a batch of thousands of
//! records reads one `HMGET` per layer; the block's bits cost some extra memory over a classic
//! filter, which the sizing ([`crate::blocked_bloom`]) accounts for exactly. The bits are tested and set here, and
//! `backfeed.lua` only applies blocks that are unchanged since they were read (see
//! [`crate::store::queue::Queue::backfeed`]).

use super::figures::stats::BloomFill;
use super::{
    scripts::{lua_list, Refusal},
    StoreError, StoreResult,
};
use fred::prelude::*;

use crate::blocked_bloom::{bit_set, cached_layer_params, spot};
pub use crate::blocked_bloom::{estimated_fp, geometry, hash_key, spot_in, BloomLayer};

/// One record of a backfeed batch.
#[derive(Clone, Debug)]
pub struct BackfeedRecord {
    /// What the filter sees: the dedupe key's hash ([`hash_key`]).
    pub hash: u64,
    /// `""` or `"#pattern"`, the queue part of the item.
    pub part: String,
    /// What gets queued.
    pub item: String,
}

/// A block's bytes as Redis answered them (empty when absent); missing bytes read as zeros
/// in [`bit_set`].
fn value_bytes(v: &Value) -> &[u8] {
    match v {
        Value::Bytes(b) => b,
        Value::String(s) => s.as_bytes(),
        _ => &[],
    }
}

/// A block to write to: as read, padded with zeros to 64 bytes.
fn block_bytes(v: &Value) -> Vec<u8> {
    let mut out = value_bytes(v).to_vec();
    out.resize(64, 0);
    out
}

/// One call's decisions: what the backfeed script is sent.
#[derive(Default)]
struct Decided {
    /// Records whose bits were all set when read: duplicates for good.
    dups: u64,
    /// Touched blocks of the newest layer: (number, value read, value to write).
    blocks: Vec<(u64, Vec<u8>, Vec<u8>)>,
    /// Per record sent: (index into the chunk, block position 1.., new to the filter).
    records: Vec<(usize, usize, bool)>,
}

/// Decides `chunk` against the filter's `layers` and their blocks as read (`read[l][r]`, the
/// block of record `r` in layer `l`).
fn decide(chunk: &[BackfeedRecord], layers: &[BloomLayer], read: &[Vec<Value>]) -> Decided {
    let mut d = Decided::default();
    let newest = layers.len() - 1;
    let mut slot: std::collections::HashMap<u64, usize> = std::collections::HashMap::new();
    'records: for (r, rec) in chunk.iter().enumerate() {
        for (l, layer) in layers.iter().enumerate().take(newest) {
            let (_, mut bits) = spot(rec.hash, l, layer.blocks, layer.k);
            let block = value_bytes(&read[l][r]);
            if bits.all(|off| bit_set(block, off)) {
                d.dups += 1;
                continue 'records;
            }
        }
        let layer = &layers[newest];
        let (number, bits) = spot(rec.hash, newest, layer.blocks, layer.k);
        let bits: Vec<usize> = bits.collect();
        let b = *slot.entry(number).or_insert_with(|| {
            let old = block_bytes(&read[newest][r]);
            d.blocks.push((number, old.clone(), old));
            d.blocks.len() - 1
        });
        let (_, old, new) = &mut d.blocks[b];
        if bits.iter().all(|&off| bit_set(old, off)) {
            d.dups += 1;
            continue;
        }
        let fresh = !bits.iter().all(|&off| bit_set(new, off));
        for off in bits {
            new[off >> 3] |= 0x80 >> (off & 7);
        }
        d.records.push((r, b + 1, fresh));
    }
    d
}

/// Calls in a row that decided nothing (another call changed every block, or the layers, in
/// between) after which a backfeed gives up.
const MAX_STALLS: u32 = 64;

/// Counts a call that decided nothing. From the second in a row on, waits a little (longer each
/// time, with jitter) so that concurrent backfeeds of the same blocks stop colliding; the first
/// is usually just a layer being added.
async fn stall(stalls: &mut u32) -> StoreResult<()> {
    *stalls += 1;
    if *stalls > MAX_STALLS {
        return Err(unexpected(
            "the filter kept changing under this backfeed".into(),
        ));
    }
    if *stalls > 1 {
        let micros = 200 * u64::from((*stalls).min(25)) + rand::random_range(0..500u64);
        tokio::time::sleep(std::time::Duration::from_micros(micros)).await;
    }
    Ok(())
}

/// How full a filter of `layers` is.
pub fn fill(layers: &[BloomLayer]) -> BloomFill {
    BloomFill {
        count: layers.iter().map(|l| l.count).sum(),
        capacity: layers.iter().map(|l| l.capacity).sum(),
        layers: layers.len() as u64,
    }
}

impl super::Queue<'_> {
    /// Queues the records the filter has not seen into `queue` (`todo:backfeed[:shard]`);
    /// (added, duplicates), or `None` when there is no such project.
    ///
    /// The filter's bit work is done here, not in Lua: the blocks are read with plain `HMGET`s,
    /// the records decided, and the script applies each block only if it is unchanged (see
    /// `backfeed.lua`); records of a changed block are decided again. A chunk holds no more
    /// records than the newest layer has room for, so a layer never goes over its capacity.
    pub async fn backfeed(
        self,
        slug: &str,
        queue: &str,
        skip_filter: bool,
        capacity: u64,
        records: &[BackfeedRecord],
        now_ms: u64,
    ) -> StoreResult<Option<(u64, u64)>> {
        let k = self.keys.project(slug);
        let keys = k.backfeed_keys();
        let params = cached_layer_params(capacity);
        let client = self.pool.next();
        let (mut added, mut dups) = (0, 0);
        let mut pending: Vec<BackfeedRecord> = records.to_vec();
        let mut stalls = 0;
        // The layers as last read; kept current after each call, read again only when the
        // script says they changed (another call may have filled or added one).
        let mut known: Option<Vec<BloomLayer>> = None;
        while !pending.is_empty() {
            let layers = match known.take() {
                Some(layers) => layers,
                None if skip_filter => Vec::new(),
                None => self.bloom_layers(slug).await?,
            };
            let room = match layers.last() {
                Some(l) if l.count < l.capacity => (l.capacity - l.count) as usize,
                _ => 0,
            };
            let take = if skip_filter {
                pending.len().min(5000)
            } else {
                pending.len().min(5000).min(room)
            };
            // Items on disk are known: duplicates, left out (against the segments of one gen,
            // which the script checks is still the current one).
            let (gen, on_disk) = {
                let items: Vec<String> = pending[..take].iter().map(|r| r.item.clone()).collect();
                self.offload().find_on_disk(slug, &items).await?
            };
            if !on_disk.is_empty() {
                let before = pending.len();
                pending.retain(|r| !on_disk.contains_key(&r.item));
                dups += (before - pending.len()) as u64;
                known = Some(layers);
                continue;
            }
            let chunk = &pending[..take];
            let decided = if skip_filter || chunk.is_empty() {
                Decided {
                    records: (0..chunk.len()).map(|r| (r, 0, true)).collect(),
                    ..Decided::default()
                }
            } else {
                let reads = layers.iter().enumerate().map(|(l, layer)| {
                    let fields: Vec<String> = chunk
                        .iter()
                        .map(|rec| spot(rec.hash, l, layer.blocks, layer.k).0.to_string())
                        .collect();
                    client.hmget::<Vec<Value>, _, _>(k.bloom_layer(l), fields)
                });
                let read = futures::future::try_join_all(reads).await?;
                decide(chunk, &layers, &read)
            };
            let mut args = Vec::with_capacity(9 + 3 * decided.blocks.len() + 4 * chunk.len());
            args.push(Value::from(now_ms as i64));
            args.push(Value::from(k.prefix()));
            args.push(Value::from(queue));
            args.push(Value::from(if skip_filter { "1" } else { "0" }));
            args.push(Value::from(&*params));
            args.push(Value::from(layers.len() as i64));
            args.push(Value::from(decided.dups as i64));
            args.push(Value::from(decided.blocks.len() as i64));
            args.push(Value::from(gen.to_string()));
            for (number, old, new) in decided.blocks {
                args.push(Value::from(number as i64));
                args.push(if old.iter().all(|&b| b == 0) {
                    Value::from("")
                } else {
                    Value::Bytes(old.into())
                });
                args.push(Value::Bytes(new.into()));
            }
            for &(r, b, fresh) in &decided.records {
                let rec = &chunk[r];
                args.push(Value::from(b as i64));
                args.push(Value::from(if fresh { "1" } else { "0" }));
                args.push(Value::from(rec.part.as_str()));
                args.push(Value::from(rec.item.as_str()));
            }
            let reply = match self
                .scripts
                .call::<Backfed>(client, &self.scripts.backfeed, keys.clone(), args)
                .await?
            {
                Ok(reply) => reply,
                Err(Refusal::NoProject) => return Ok(None),
                Err(Refusal::FilterChanged) => {
                    stall(&mut stalls).await?;
                    continue;
                }
                Err(refusal) => return Err(StoreError::Refused(refusal)),
            };
            added += reply.added;
            dups += reply.duplicates;
            // Records of blocks that changed meanwhile: decided again, ahead of the rest.
            let mut again = Vec::new();
            // What the newest layer now counts more: the new records of the blocks applied.
            let mut counted = decided.records.iter().filter(|r| r.2).count() as u64;
            for &sent in &reply.again {
                match decided.records.get(sent.wrapping_sub(1)) {
                    Some(&(r, _, fresh)) => {
                        counted -= u64::from(fresh);
                        again.push(chunk[r].clone());
                    }
                    None => return Err(unexpected(format!("record {sent} was not sent"))),
                }
            }
            if !skip_filter {
                let mut layers = layers;
                if let Some(newest) = layers.last_mut() {
                    newest.count += counted;
                }
                known = Some(layers);
            }
            if again.len() < take {
                stalls = 0;
            } else {
                stall(&mut stalls).await?;
            }
            pending.drain(..take);
            pending.splice(0..0, again);
        }
        Ok(Some((added, dups)))
    }

    /// The filter's layers.
    /// How full project `slug`'s filter is ([`fill`] of its layers).
    pub async fn bloom_fill(self, slug: &str) -> StoreResult<BloomFill> {
        Ok(fill(&self.bloom_layers(slug).await?))
    }

    pub async fn bloom_layers(self, slug: &str) -> StoreResult<Vec<BloomLayer>> {
        let meta: std::collections::HashMap<String, u64> = self
            .pool
            .next()
            .hgetall(self.keys.project(slug).bloom())
            .await?;
        let n = meta.get("layers").copied().unwrap_or(0);
        Ok((0..n)
            .map(|i| BloomLayer {
                count: meta.get(&format!("n:{i}")).copied().unwrap_or(0),
                capacity: meta.get(&format!("cap:{i}")).copied().unwrap_or(1),
                blocks: meta.get(&format!("blocks:{i}")).copied().unwrap_or(1),
                k: meta.get(&format!("k:{i}")).copied().unwrap_or(1) as u32,
            })
            .collect())
    }
}

/// What `backfeed.lua` answers when it ran.
#[derive(serde::Deserialize)]
struct Backfed {
    added: u64,
    duplicates: u64,
    /// Record numbers (1-based, in the order sent) to decide again.
    #[serde(deserialize_with = "lua_list")]
    again: Vec<usize>,
}

fn unexpected(detail: String) -> StoreError {
    StoreError::Reply {
        script: "backfeed",
        detail,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(key: &str) -> BackfeedRecord {
        BackfeedRecord {
            hash: hash_key(key.as_bytes()),
            part: String::new(),
            item: key.into(),
        }
    }

    fn layer(blocks: u64) -> BloomLayer {
        BloomLayer {
            count: 0,
            capacity: 1000,
            blocks,
            k: 20,
        }
    }

    #[test]
    fn a_repeat_within_a_chunk_shares_its_block_and_is_not_new() {
        let chunk = [record("a"), record("b"), record("a")];
        let read = vec![vec![Value::Null; 3]];
        let d = decide(&chunk, &[layer(1)], &read);
        assert_eq!(d.dups, 0);
        assert_eq!(d.blocks.len(), 1, "one block in a one-block layer");
        assert_eq!(d.records, vec![(0, 1, true), (1, 1, true), (2, 1, false)]);
        let (_, old, new) = &d.blocks[0];
        assert!(old.iter().all(|&b| b == 0));
        let ones: u32 = new.iter().map(|b| b.count_ones()).sum();
        assert!((21..=40).contains(&ones), "two records' bits: {ones}");
    }

    #[test]
    fn bits_already_set_in_any_layer_make_a_duplicate_for_good() {
        let chunk = [record("a")];
        let first = decide(&chunk, &[layer(1)], &[vec![Value::Null]]);
        let written = Value::Bytes(first.blocks[0].2.clone().into());
        // Seen in an older layer: nothing is sent for the newest.
        let older = decide(
            &chunk,
            &[layer(1), layer(8)],
            &[vec![written.clone()], vec![Value::Null]],
        );
        assert_eq!(
            (older.dups, older.records.len(), older.blocks.len()),
            (1, 0, 0)
        );
        // Seen in the newest layer as read.
        let newest = decide(&chunk, &[layer(1)], &[vec![written]]);
        assert_eq!((newest.dups, newest.records.len()), (1, 0));
    }
}
