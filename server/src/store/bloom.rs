//! The backfeed de-duplication filter: a scalable Bloom filter of 512-bit blocks in Redis.
//!
//! Layer `i` holds `capacity x 2^i` records at a false-positive rate of `P x (1-r) x r^i`
//! (`r = 1/2`), so the rates of all layers sum to at most `P` = 1e-6 however many layers the
//! filter grows. A record touches one block per layer (one `GETRANGE` to test), which is what
//! makes batches of thousands of records cheap; the block's bits cost some extra memory over a
//! classic filter, which the sizing below accounts for exactly.

use super::{Store, StoreResult};
use fred::prelude::*;

/// The filter's target false-positive rate over all its layers.
pub const TARGET_FP: f64 = 1e-6;
const BLOCK_BITS: f64 = 512.0;
const GROWTH: f64 = 2.0;
const TIGHTENING: f64 = 0.5;
const MAX_LAYERS: usize = 16;
/// A Redis string holds at most 512 MiB: 2^23 blocks.
const MAX_BLOCKS: u64 = 1 << 23;

/// One record of a backfeed batch.
#[derive(Clone, Debug)]
pub struct BackfeedRecord {
    /// What the filter sees: 52 bits of the dedupe key's hash.
    pub hash: u64,
    /// `""` or `"#pattern"`, the queue part of the item.
    pub part: String,
    /// What gets queued.
    pub item: String,
}

/// One layer as stored.
#[derive(Clone, Debug, PartialEq)]
pub struct BloomLayer {
    /// Records added.
    pub count: u64,
    /// Records it holds at its target rate.
    pub capacity: u64,
    /// 512-bit blocks.
    pub blocks: u64,
    /// Bits set per record.
    pub k: u32,
}

/// 52 bits of the xxh3 hash of a dedupe key (a Lua number holds 53 bits exactly).
pub fn hash_key(key: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(key) & ((1 << 52) - 1)
}

/// False-positive rate of a blocked filter with `bits` per record and `k` bits per record, at
/// `fill` (records / capacity): the load of a block is Poisson.
fn blocked_fp(bits: f64, k: u32, fill: f64) -> f64 {
    let lambda = BLOCK_BITS / bits * fill;
    let mut p_j = (-lambda).exp();
    let mut fp = 0.0;
    for j in 0..200u32 {
        if j > 0 {
            p_j *= lambda / j as f64;
        }
        let set = 1.0 - (1.0 - 1.0 / BLOCK_BITS).powf((k * j) as f64);
        fp += p_j * set.powi(k as i32);
    }
    fp
}

/// (bits per record, k) reaching `target`.
fn sizing(target: f64) -> (f64, u32) {
    let mut bits = 16.0;
    loop {
        if let Some(k) = (1..=48).find(|&k| blocked_fp(bits, k, 1.0) <= target) {
            return (bits, k);
        }
        bits += 1.0;
    }
}

/// The parameters of every layer for a filter of `capacity`: "capacity blocks k;..." as the
/// backfeed script reads them.
pub fn layer_params(capacity: u64) -> String {
    let mut out = Vec::with_capacity(MAX_LAYERS);
    for i in 0..MAX_LAYERS {
        let target = TARGET_FP * (1.0 - TIGHTENING) * TIGHTENING.powi(i as i32);
        let (bits, k) = sizing(target);
        let wanted = (capacity.max(1) as f64 * GROWTH.powi(i as i32)) as u64;
        let blocks = ((wanted as f64 * bits / BLOCK_BITS).ceil() as u64).clamp(1, MAX_BLOCKS);
        // A layer at Redis's size limit holds fewer records, so it hands over sooner.
        let cap = wanted
            .min((blocks as f64 * BLOCK_BITS / bits) as u64)
            .max(1);
        out.push(format!("{cap} {blocks} {k}"));
    }
    out.join(";")
}

/// The filter's current false-positive rate from its layers' fill.
pub fn estimated_fp(layers: &[BloomLayer]) -> f64 {
    let pass = layers.iter().fold(1.0, |acc, l| {
        let bits = l.blocks as f64 * BLOCK_BITS / l.capacity.max(1) as f64;
        acc * (1.0 - blocked_fp(bits, l.k, l.count as f64 / l.capacity.max(1) as f64))
    });
    1.0 - pass
}

impl Store {
    /// Queues the records the filter has not seen into `queue` (`todo:backfeed[:shard]`);
    /// (added, duplicates), or `None` when there is no such project.
    pub async fn backfeed(
        &self,
        slug: &str,
        queue: &str,
        skip_filter: bool,
        capacity: u64,
        records: &[BackfeedRecord],
        now_ms: u64,
    ) -> StoreResult<Option<(u64, u64)>> {
        let k = self.keys.project(slug);
        let keys = vec![k.meta(), k.out(), k.done(), k.failed(), k.bloom(), k.qseq()];
        let params = layer_params(capacity);
        let (mut added, mut dups) = (0, 0);
        for chunk in records.chunks(5000) {
            let mut args = Vec::with_capacity(5 + 3 * chunk.len());
            args.push(Value::from(now_ms as i64));
            args.push(Value::from(k.prefix()));
            args.push(Value::from(queue));
            args.push(Value::from(if skip_filter { "1" } else { "0" }));
            args.push(Value::from(params.as_str()));
            for r in chunk {
                args.push(Value::from(r.hash as i64));
                args.push(Value::from(r.part.as_str()));
                args.push(Value::from(r.item.as_str()));
            }
            let reply: Value = self
                .scripts
                .run(self.pool.next(), &self.scripts.backfeed, keys.clone(), args)
                .await?;
            match reply {
                Value::Integer(-1) => return Ok(None),
                Value::Array(a) if a.len() == 2 => {
                    added += a[0].as_u64().unwrap_or(0);
                    dups += a[1].as_u64().unwrap_or(0);
                }
                other => {
                    return Err(super::StoreError::Reply {
                        script: "backfeed",
                        detail: format!("{other:?}"),
                    })
                }
            }
        }
        Ok(Some((added, dups)))
    }

    /// The filter's layers.
    pub async fn bloom_layers(&self, slug: &str) -> StoreResult<Vec<BloomLayer>> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_layer_meets_its_share_of_the_target() {
        let params = layer_params(1_000_000);
        let mut total = 0.0;
        for (i, layer) in params.split(';').enumerate() {
            let v: Vec<f64> = layer.split(' ').map(|x| x.parse().unwrap()).collect();
            let bits = v[1] * BLOCK_BITS / v[0];
            let fp = blocked_fp(bits, v[2] as u32, 1.0);
            assert!(
                fp <= TARGET_FP * 0.5f64.powi(i as i32 + 1) * 1.0001,
                "layer {i}: {fp}"
            );
            total += fp;
        }
        assert!(total <= TARGET_FP);
    }

    #[test]
    fn an_empty_filter_has_no_false_positives_and_a_full_one_its_target() {
        let layer = |count| BloomLayer {
            count,
            capacity: 1000,
            blocks: 1000 * 40 / 512,
            k: 20,
        };
        assert!(estimated_fp(&[layer(0)]) < 1e-12);
        assert!(estimated_fp(&[layer(1000)]) > estimated_fp(&[layer(500)]));
    }
}
