//! Types shared by the server and the browser: leaderboard snapshots and live events.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Item counts of a project at one instant.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    /// Items waiting in any queue.
    pub todo: u64,
    /// Items claimed and not yet done.
    pub out: u64,
    /// Items done.
    pub done: u64,
    /// Items that failed (claimed too often).
    #[serde(default)]
    pub failed: u64,
}

/// One completion (a done call), as published by the done script.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DoneEvent {
    /// Per-project sequence number, increasing by one per event.
    pub seq: u64,
    /// Completion time, milliseconds since the epoch.
    pub time: u64,
    /// Who did it.
    pub downloader: String,
    /// The items newly done by this call.
    pub items: Vec<String>,
    /// Bytes reported, all domains together.
    pub bytes: u64,
    /// Bytes reported per domain.
    #[serde(default)]
    pub domain_bytes: BTreeMap<String, u64>,
    /// Script version of the client.
    #[serde(default)]
    pub version: String,
    /// User agent of the client.
    #[serde(default)]
    pub user_agent: String,
    /// The project's counts right after this completion.
    pub counts: Counts,
}

impl DoneEvent {
    /// Whether the client was a Warrior VM (as opposed to a standalone script).
    pub fn is_warrior(&self) -> bool {
        self.user_agent.contains(" Warrior")
    }
}

/// One row of the downloaders table.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DownloaderRow {
    /// Downloader name.
    pub name: String,
    /// Items done.
    pub items: u64,
    /// Bytes done.
    pub bytes: u64,
}

/// Everything the leaderboard page shows, consistent as of event `seq`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Leaderboard {
    /// Project slug.
    pub slug: String,
    /// Project title.
    pub title: String,
    /// Sequence number of the last event included.
    pub seq: u64,
    /// Item counts.
    pub counts: Counts,
    /// Bytes done, all domains.
    pub total_bytes: u64,
    /// Bytes done per domain.
    pub domain_bytes: BTreeMap<String, u64>,
    /// Downloaders by items done, most first.
    pub downloaders: Vec<DownloaderRow>,
    /// Most recent completions, newest first.
    pub recent: Vec<DoneEvent>,
}

/// How many recent completions the leaderboard shows.
pub const RECENT_LEN: usize = 18;

impl Leaderboard {
    /// Folds one live event in; events at or before `self.seq` are already included and ignored.
    /// Returns whether the event was applied.
    pub fn apply(&mut self, ev: &DoneEvent) -> bool {
        if ev.seq <= self.seq {
            return false;
        }
        self.seq = ev.seq;
        self.counts = ev.counts;
        self.total_bytes += ev.bytes;
        for (domain, bytes) in &ev.domain_bytes {
            *self.domain_bytes.entry(domain.clone()).or_default() += bytes;
        }
        let n = ev.items.len() as u64;
        match self
            .downloaders
            .iter()
            .position(|d| d.name == ev.downloader)
        {
            Some(i) => {
                self.downloaders[i].items += n;
                self.downloaders[i].bytes += ev.bytes;
                // Keep the order: bubble the row up past those it overtook.
                let mut i = i;
                while i > 0 && self.downloaders[i - 1].items < self.downloaders[i].items {
                    self.downloaders.swap(i - 1, i);
                    i -= 1;
                }
            }
            None => {
                let row = DownloaderRow {
                    name: ev.downloader.clone(),
                    items: n,
                    bytes: ev.bytes,
                };
                let at = self.downloaders.partition_point(|d| d.items >= n);
                self.downloaders.insert(at, row);
            }
        }
        self.recent.insert(0, ev.clone());
        self.recent.truncate(RECENT_LEN);
        true
    }
}

/// A project as listed on the front page.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProjectSummary {
    /// Project slug.
    pub slug: String,
    /// Project title.
    pub title: String,
    /// Item counts.
    pub counts: Counts,
}

/// A message on the leaderboard websocket (`GET /SLUG/ws`).
///
/// ```text
/// {"type":"snapshot","board":{...Leaderboard...}}
/// {"type":"events","events":[{...DoneEvent...}, ...]}
/// ```
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum LiveMessage {
    /// The whole state; replaces what the viewer had.
    Snapshot {
        /// The state.
        board: Leaderboard,
    },
    /// Events after the viewer's last sequence number.
    Events {
        /// The events, oldest first.
        events: Vec<DoneEvent>,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(seq: u64, who: &str, n: usize) -> DoneEvent {
        DoneEvent {
            seq,
            time: 0,
            downloader: who.into(),
            items: (0..n).map(|i| format!("i{seq}-{i}")).collect(),
            bytes: 10,
            domain_bytes: [("data".to_string(), 10)].into(),
            version: String::new(),
            user_agent: String::new(),
            counts: Counts {
                todo: 1,
                out: 2,
                done: seq,
                failed: 0,
            },
        }
    }

    fn board() -> Leaderboard {
        Leaderboard {
            slug: "p".into(),
            title: "P".into(),
            seq: 0,
            counts: Counts::default(),
            total_bytes: 0,
            domain_bytes: BTreeMap::new(),
            downloaders: vec![],
            recent: vec![],
        }
    }

    #[test]
    fn apply_skips_events_already_included() {
        let mut b = board();
        assert!(b.apply(&ev(1, "a", 1)));
        assert!(!b.apply(&ev(1, "a", 1)));
        assert_eq!(b.downloaders[0].items, 1);
        assert_eq!(b.total_bytes, 10);
    }

    #[test]
    fn apply_keeps_downloaders_sorted_and_recent_capped() {
        let mut b = board();
        b.apply(&ev(1, "a", 2));
        b.apply(&ev(2, "b", 1));
        b.apply(&ev(3, "b", 2));
        assert_eq!(b.downloaders[0].name, "b");
        assert_eq!(b.downloaders[1].name, "a");
        for s in 4..40 {
            b.apply(&ev(s, "c", 1));
        }
        assert_eq!(b.recent.len(), RECENT_LEN);
        assert_eq!(b.recent[0].seq, 39);
        assert_eq!(b.counts.done, 39);
    }
}
