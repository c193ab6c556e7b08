//! The project's segments as `tracker check` reads them: streamed, and looked up in each other's
//! indexes. A name is asked only of the segments that may hold it (the process's filter over
//! all of them, [`OnDisk::asking`], and while streaming one of those before it): with a thousand
//! segments, asking each of them made the check of 10,000,000 items on disk quadratic.

use super::super::{offload::OnDisk, StoreError, StoreResult};
use crate::{
    blocked_bloom::{hash_key, Filter},
    segment::Segment,
};
use std::{
    collections::{HashMap, HashSet},
    sync::Arc,
};

/// Runs `f` on a blocking thread (segment reads).
pub(super) async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> std::io::Result<T> + Send + 'static,
) -> StoreResult<T> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| StoreError::Disk(e.to_string()))?
        .map_err(|e| StoreError::Disk(e.to_string()))
}

/// One registered segment as the check reads it: queue segments without the records already
/// back in Redis (their first `restored`).
pub(super) struct DiskSegment {
    /// `disk KIND ID`, as the problems name it.
    pub(super) place: String,
    pub(super) kind: String,
    pub(super) file: Arc<Segment>,
    /// What the entry says it holds (a discard segment is counted, not read).
    pub(super) count: u64,
    /// The names of the records back in Redis (a queue segment's first `restored`).
    pub(super) restored: HashSet<String>,
}

impl DiskSegment {
    pub(super) fn holds(&self, name: &str) -> std::io::Result<bool> {
        Ok(self.kind != "discard"
            && !self.restored.contains(name)
            && self.file.get(name)?.is_some())
    }
}

/// The false-positive rate of the check's filters: a false positive asks every segment.
const FILTER_FP: f64 = 0.01;
/// The most names [`DiskIndex::held_twice`]'s filter is sized for (about 100 MB at
/// [`FILTER_FP`]); past it, its rate rises, and so does the check's time, never its answer.
const FILTER_NAMES: u64 = 50_000_000;

/// An empty filter for the names of `segments` (discard segments hold none to read).
fn filter_for(segments: &[DiskSegment]) -> Filter {
    let names: u64 = segments
        .iter()
        .filter(|s| s.kind != "discard")
        .map(|s| s.file.records())
        .sum();
    Filter::empty(names.clamp(1, FILTER_NAMES), FILTER_FP)
}

/// The project's segments, to look names up in.
pub(super) struct DiskIndex {
    /// In the order of `disk`'s segments.
    pub(super) segments: Vec<DiskSegment>,
    disk: Arc<OnDisk>,
}

impl DiskIndex {
    pub(super) async fn open(
        disk: &Arc<OnDisk>,
        restored: &HashMap<String, u64>,
    ) -> StoreResult<Self> {
        let mut segments = Vec::new();
        for seg in &disk.segments {
            let skip = if seg.entry.kind == "queue" {
                restored.get(&seg.id).copied().unwrap_or(0)
            } else {
                0
            };
            let file = seg.file.clone();
            let restored = blocking(move || {
                let mut names = HashSet::new();
                if skip > 0 {
                    let mut left = skip;
                    file.for_each(|name, _| {
                        if left > 0 {
                            left -= 1;
                            names.insert(name);
                        }
                        Ok(())
                    })?;
                }
                Ok(names)
            })
            .await?;
            segments.push(DiskSegment {
                place: format!("disk {} {}", seg.entry.kind, seg.id),
                kind: seg.entry.kind.clone(),
                file: seg.file.clone(),
                count: seg.entry.count,
                restored,
            });
        }
        Ok(Self {
            segments,
            disk: disk.clone(),
        })
    }

    /// Done items on disk (discarded ones included), waiting items on disk, and both.
    pub(super) fn counts(&self) -> (i64, i64, i64) {
        let (mut done, mut todo) = (0i64, 0i64);
        for s in &self.segments {
            match s.kind.as_str() {
                "discard" => done += s.count as i64,
                "queue" => todo += s.file.records().saturating_sub(s.restored.len() as u64) as i64,
                _ => done += s.file.records() as i64,
            }
        }
        (done, todo, done + todo)
    }

    /// The places on disk that hold `name`.
    pub(super) fn places(&self, name: &str) -> std::io::Result<Vec<String>> {
        let mut out = Vec::new();
        for s in &self.segments {
            if s.holds(name)? {
                out.push(s.place.clone());
            }
        }
        Ok(out)
    }

    /// Which of `names` some segment holds.
    pub(super) fn held_anywhere(&self, names: &[String]) -> std::io::Result<Vec<String>> {
        let mut out = Vec::new();
        let asking = self.disk.asking();
        for name in names {
            for &at in asking.segments_for(hash_key(name.as_bytes())) {
                let s = &self.segments[at];
                if s.holds(name)? {
                    out.push(name.clone());
                    break;
                }
            }
        }
        Ok(out)
    }

    /// Names held by two segments: each segment's records, streamed, against the segments
    /// before it (through a filter of their names, filled as the segments are read).
    pub(super) fn held_twice(&self) -> std::io::Result<Vec<String>> {
        let mut out = Vec::new();
        let mut before = filter_for(&self.segments);
        for (i, s) in self.segments.iter().enumerate() {
            if s.kind == "discard" {
                continue;
            }
            let mut hashes = Vec::with_capacity(s.file.records() as usize);
            s.file.for_each(|name, _| {
                let hash = hash_key(name.as_bytes());
                hashes.push(hash);
                if !s.restored.contains(&name) && before.may_hold(hash) {
                    for earlier in &self.segments[..i] {
                        if earlier.holds(&name)? {
                            out.push(name);
                            break;
                        }
                    }
                }
                Ok(())
            })?;
            for hash in hashes {
                before.insert(hash);
            }
        }
        Ok(out)
    }
}
