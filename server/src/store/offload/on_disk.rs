//! A project's segments as this process has them open, and where a name is among them: asked
//! only of the segments that may hold it ([`OnDisk::asking`], through the shared filter of
//! [`super::union_filter`]).

use super::union_filter::UnionFilter;
use super::SegmentEntry;
use crate::segment::Segment;
use std::{
    collections::HashMap,
    sync::{Arc, RwLock},
};

/// Where a name was found on disk.
#[derive(Clone, Debug, PartialEq)]
pub enum DiskHit {
    /// Done, in segment `id`, with its stored timeline.
    Done {
        /// The segment.
        id: String,
        /// Timeline lines as Redis held them.
        timeline: String,
    },
    /// Passed the filter of a discard segment: done, or (at the filter's rate) a new name.
    Discarded,
    /// Waiting in queue part `part` with score `score`.
    Queued {
        /// The queue part.
        part: String,
        /// Its queue score.
        score: f64,
    },
}

/// One registered segment, open.
pub struct OpenSegment {
    /// Its id (the file is `DIR/SLUG/ID.seg`).
    pub id: String,
    /// Its registry entry.
    pub entry: SegmentEntry,
    /// The file.
    pub file: Arc<Segment>,
}

/// A project's segments as of one registry `gen`.
#[derive(Default)]
pub struct OnDisk {
    /// The registry version these are.
    pub gen: u64,
    /// The segments, oldest first.
    pub segments: Vec<OpenSegment>,
    /// One filter over the names of the project's segments, shared by its successive gens.
    pub(super) union: Arc<RwLock<UnionFilter>>,
}

impl OnDisk {
    /// Which of [`Self::segments`] may hold a name, by the shared filter: a name it rules out
    /// is asked only of the segments it does not hold. Holds the filter's read lock.
    pub fn asking(&self) -> Asking<'_> {
        let union = self.union.read().unwrap_or_else(|e| e.into_inner());
        let outside = (0..self.segments.len())
            .filter(|&i| !union.holds(&self.segments[i].id))
            .collect();
        Asking {
            union,
            outside,
            all: (0..self.segments.len()).collect(),
        }
    }

    /// Where each of `items` is on disk (absent: not on disk). Reads files: call off the
    /// async threads ([`crate::store::offload::Offload::find_on_disk`]).
    pub fn find(&self, items: &[String]) -> std::io::Result<HashMap<String, DiskHit>> {
        let mut found = HashMap::new();
        let asking = self.asking();
        for item in items {
            let hash = crate::blocked_bloom::hash_key(item.as_bytes());
            for &at in asking.segments_for(hash) {
                let s = &self.segments[at];
                if !s.file.may_hold(hash) {
                    continue;
                }
                let hit = match s.entry.kind.as_str() {
                    "discard" => Some(DiskHit::Discarded),
                    "queue" => s.file.get(item)?.map(|score| DiskHit::Queued {
                        part: s.entry.part.clone(),
                        score: score.parse().unwrap_or(0.0),
                    }),
                    _ => s.file.get(item)?.map(|timeline| DiskHit::Done {
                        id: s.id.clone(),
                        timeline,
                    }),
                };
                if let Some(hit) = hit {
                    found.insert(item.clone(), hit);
                    break;
                }
            }
        }
        Ok(found)
    }
}

/// [`OnDisk::asking`]'s answer.
pub struct Asking<'a> {
    union: std::sync::RwLockReadGuard<'a, UnionFilter>,
    outside: Vec<usize>,
    all: Vec<usize>,
}

impl Asking<'_> {
    /// The indexes of the segments that may hold a name of hash `hash`, oldest first.
    pub fn segments_for(&self, hash: u64) -> &[usize] {
        if self.union.may_hold(hash) {
            &self.all
        } else {
            &self.outside
        }
    }
}
