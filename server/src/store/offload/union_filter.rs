//! One Bloom filter over the names of every segment of a project that keeps its names, so that
//! a lookup of a name that is on no segment (an item being added, a done of an item in Redis)
//! costs one filter probe instead of one per segment. A thousand segments made every lookup a
//! thousand probes, each a cache miss: adding items to a project with 10,000,000 on disk ran
//! at 8,000 a second.
//!
//! The filter only grows: a segment that leaves the registry (a queue segment brought back)
//! keeps its bits, which costs false positives, never a missed name. Segments that keep no
//! names (discard segments) and segments past [`MAX_BYTES`] stay outside it and are asked one by
//! one, as before.

use super::OpenSegment;
use crate::blocked_bloom::{hash_key as bloom_hash, Filter};
use std::{collections::HashSet, sync::RwLock};

/// The filter's false-positive rate: a false positive asks every segment's own filter.
const FP: f64 = 0.01;
/// The most bytes the filter takes, per project and process (about 33,000,000 names at
/// [`FP`], 2 bytes a name); the segments past it are asked one by one.
pub const MAX_BYTES: u64 = 64 << 20;
/// The fewest names it is sized for.
const MIN_CAPACITY: u64 = 1 << 20;

/// The filter and the segments whose names it holds.
pub struct UnionFilter {
    filter: Filter,
    capacity: u64,
    count: u64,
    ids: HashSet<String>,
}

impl Default for UnionFilter {
    fn default() -> Self {
        UnionFilter::sized(MIN_CAPACITY)
    }
}

/// Every name's hash of segment `s`.
fn hashes(s: &OpenSegment) -> std::io::Result<Vec<u64>> {
    let mut out = Vec::with_capacity(s.file.records() as usize);
    s.file.for_each(|name, _| {
        out.push(bloom_hash(name.as_bytes()));
        Ok(())
    })?;
    Ok(out)
}

impl UnionFilter {
    fn sized(capacity: u64) -> Self {
        UnionFilter {
            filter: Filter::empty(capacity, FP),
            capacity,
            count: 0,
            ids: HashSet::new(),
        }
    }

    /// Whether segment `id`'s names are in the filter.
    pub fn holds(&self, id: &str) -> bool {
        self.ids.contains(id)
    }

    /// Whether a name of hash `hash` may be on one of the segments the filter holds.
    pub fn may_hold(&self, hash: u64) -> bool {
        self.filter.may_hold(hash)
    }

    /// Adds a segment's names, unless they are in already or would pass its capacity.
    fn insert(&mut self, s: &OpenSegment, hashes: &[u64]) {
        if self.ids.contains(&s.id) || self.count + hashes.len() as u64 > self.capacity {
            return;
        }
        for h in hashes {
            self.filter.insert(*h);
        }
        self.count += hashes.len() as u64;
        self.ids.insert(s.id.clone());
    }
}

/// Brings `union` up to date with `segments`: the names of those that keep names and are not in
/// it yet are added. When they pass its capacity, the filter is made again, twice as big as
/// all of `segments` need (at most [`MAX_BYTES`]), from all of them. The files are read outside
/// the lock, so lookups go on meanwhile with the filter as it was. Reads the files: call off
/// the async threads.
pub fn cover(union: &RwLock<UnionFilter>, segments: &[OpenSegment]) -> std::io::Result<()> {
    let kept: Vec<&OpenSegment> = segments.iter().filter(|s| s.file.keeps_names()).collect();
    let (new, rebuild) = {
        let u = union.read().unwrap_or_else(|e| e.into_inner());
        let new: Vec<&OpenSegment> = kept.iter().copied().filter(|s| !u.holds(&s.id)).collect();
        let adding: u64 = new.iter().map(|s| s.file.records()).sum();
        let mut rebuild = None;
        if !new.is_empty() && u.count + adding > u.capacity {
            let all: u64 = kept.iter().map(|s| s.file.records()).sum();
            let mut capacity = (2 * all).max(MIN_CAPACITY);
            while capacity > MIN_CAPACITY && Filter::bytes_for(capacity, FP) > MAX_BYTES {
                capacity /= 2;
            }
            if capacity > u.capacity {
                rebuild = Some(capacity);
            }
        }
        (new, rebuild)
    };
    if let Some(capacity) = rebuild {
        let mut bigger = UnionFilter::sized(capacity);
        for s in &kept {
            bigger.insert(s, &hashes(s)?);
        }
        let mut u = union.write().unwrap_or_else(|e| e.into_inner());
        if bigger.capacity > u.capacity {
            *u = bigger;
        }
        return Ok(());
    }
    for s in new {
        let h = hashes(s)?;
        union
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .insert(s, &h);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{segment, store::offload::SegmentEntry};
    use std::sync::Arc;

    fn segments(names: &[Vec<String>], keep: bool) -> Vec<OpenSegment> {
        let d = std::env::temp_dir().join(format!(
            "union-test-{}-{}",
            std::process::id(),
            rand::random::<u64>()
        ));
        std::fs::create_dir_all(&d).unwrap();
        names
            .iter()
            .enumerate()
            .map(|(i, names)| {
                let path = d.join(format!("s{i}.seg"));
                let mut records: Vec<(String, String)> =
                    names.iter().map(|n| (n.clone(), "1".into())).collect();
                segment::write(&path, &mut records, keep).unwrap();
                OpenSegment {
                    id: format!("s{i}"),
                    entry: SegmentEntry::default(),
                    file: Arc::new(segment::Segment::open(&path).unwrap()),
                }
            })
            .collect()
    }

    fn names(from: usize, n: usize) -> Vec<String> {
        (from..from + n).map(|i| format!("item-{i:09}")).collect()
    }

    #[test]
    fn the_filter_passes_every_name_of_its_segments_and_few_others() {
        let segs = segments(&[names(0, 3_000), names(3_000, 3_000)], true);
        let union = RwLock::new(UnionFilter::default());
        cover(&union, &segs[..1]).unwrap();
        let u = union.read().unwrap();
        assert!(u.holds("s0") && !u.holds("s1"));
        drop(u);
        cover(&union, &segs).unwrap();
        let u = union.read().unwrap();
        assert!(u.holds("s0") && u.holds("s1"));
        assert!((0..6_000).all(|i| u.may_hold(bloom_hash(format!("item-{i:09}").as_bytes()))));
        let passed = (6_000..106_000)
            .filter(|i| u.may_hold(bloom_hash(format!("item-{i:09}").as_bytes())))
            .count();
        // Sized for a million names and holding 6,000: far under its 1 %.
        assert!(passed < 100, "{passed} of 100,000 new names passed");
        // About 2 bytes per name at its rate (what docs/big-projects.md says).
        let per_name = Filter::bytes_for(10_000_000, FP) as f64 / 1e7;
        assert!((1.9..2.1).contains(&per_name), "{per_name} bytes a name");
    }

    #[test]
    fn past_its_capacity_the_filter_is_made_again_bigger_from_every_segment() {
        let segs = segments(&[names(0, 10), names(10, 10)], true);
        let mut small = UnionFilter::sized(15);
        small.insert(&segs[0], &hashes(&segs[0]).unwrap());
        let union = RwLock::new(small);
        cover(&union, &segs).unwrap();
        let u = union.read().unwrap();
        assert_eq!(u.capacity, MIN_CAPACITY);
        assert!(u.holds("s0") && u.holds("s1"));
        assert!((0..20).all(|i| u.may_hold(bloom_hash(format!("item-{i:09}").as_bytes()))));
    }

    #[test]
    fn a_segment_without_names_stays_outside() {
        let segs = segments(&[names(0, 10)], false);
        let union = RwLock::new(UnionFilter::default());
        cover(&union, &segs).unwrap();
        assert!(!union.read().unwrap().holds("s0"));
    }
}
