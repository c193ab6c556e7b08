//! Types shared by the server and the browser: leaderboard snapshots and live events, the
//! fleet's public counts, and the admin API's replies ([`admin`]).

pub mod admin;
mod charts;
mod contributors;
mod downloaders;
mod fleet;
pub mod lifecycle;
mod live;
mod rates;

pub use charts::{downsample, increases, push_point, since, ChartData, Series};
pub use contributors::{month_name, month_of, months_back, Contributors, MonthCount, MONTHS_SHOWN};
pub use downloaders::{DownloaderPage, DownloaderRow, RankedRow, SortBy};
pub use fleet::{FleetStats, MAX_PLACES, MAX_SELECTED, OTHER_SELECTED};
pub use live::LiveMessage;
pub use rates::{Eta, MinuteCount, Rate, WINDOWS};

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

impl Counts {
    /// All zero: no counts known (see [`DoneEvent::counts`]).
    pub fn is_zero(&self) -> bool {
        *self == Self::default()
    }
}

/// One completion (a done report that counted items), as published when the completion log
/// is folded (the server's `fold.lua`, within a fraction of a second of the done).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DoneEvent {
    /// Per-project sequence number, increasing by one per event.
    pub seq: u64,
    /// Completion time, milliseconds since the epoch.
    pub time: u64,
    /// Who did it.
    pub downloader: String,
    /// The items newly done by this call; left out of a brief event (see `n`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub items: Vec<String>,
    /// How many items a brief event did. The live feed sends item names, user agent and counts
    /// only where a viewer shows them: names and agent for the last [`RECENT_LEN`] events of a
    /// message (the recent-completions log), counts for its last event. 0 in a full event.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub n: u64,
    /// Bytes reported, all domains together.
    pub bytes: u64,
    /// Bytes reported per domain.
    #[serde(default)]
    pub domain_bytes: BTreeMap<String, u64>,
    /// Script version of the client.
    #[serde(default)]
    pub version: String,
    /// User agent of the client (left out of a brief event).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub user_agent: String,
    /// The project's counts when this completion was folded (all zero, and left out, in a live
    /// message's events but its last: a real completion has at least itself done).
    #[serde(default, skip_serializing_if = "Counts::is_zero")]
    pub counts: Counts,
    /// The downloader's items done in all, this completion included (0: not known).
    #[serde(default)]
    pub dl_items: u64,
    /// The downloader's bytes done in all, this completion included.
    #[serde(default)]
    pub dl_bytes: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl DoneEvent {
    /// Whether the client was a Warrior VM (as opposed to a standalone script).
    pub fn is_warrior(&self) -> bool {
        self.user_agent.contains(" Warrior")
    }

    /// The same event without the counts.
    pub fn without_counts(&self) -> Self {
        Self {
            counts: Counts::default(),
            ..self.clone()
        }
    }

    /// The brief form of this event: its item count instead of its item names, and no user
    /// agent nor counts.
    pub fn brief(&self) -> Self {
        Self {
            items: Vec::new(),
            n: self.item_count(),
            user_agent: String::new(),
            ..self.without_counts()
        }
    }

    /// How many items this completion did, whether brief or full.
    pub fn item_count(&self) -> u64 {
        if self.items.is_empty() {
            self.n
        } else {
            self.items.len() as u64
        }
    }
}

/// The tracker's own statistics over the last hour (see `/SLUG/tracker-stats.json`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TrackerStats {
    /// Minutes covered.
    pub window_minutes: u64,
    /// Item requests that were served an item, of all item requests (`None`: no requests).
    pub item_request_serve_rate: Option<f64>,
    /// Claims that were reclaims of expired claims, of all claims.
    pub reclaim_rate: Option<f64>,
    /// Served items that were reclaims, of all served items.
    pub reclaim_serve_rate: Option<f64>,
    /// Mean time from claim to done, seconds.
    pub mean_round_trip_s: Option<f64>,
    /// New backfeed items per minute.
    pub backfeed_per_minute: f64,
    /// Backfeed duplicates per minute.
    pub backfeed_duplicates_per_minute: f64,
    /// Records held by the backfeed filter over its capacity, all layers.
    pub bloom_fill: f64,
    /// Layers of the backfeed filter.
    pub bloom_layers: u64,
    /// Distinct downloaders with completions in the last 30 days.
    pub unique_downloaders_30d: u64,
    /// Downloaders calling the project's warrior API now (heard from within the fleet silence).
    #[serde(default)]
    pub warriors: u64,
    /// Items failed, of items finished (done or failed).
    #[serde(default)]
    pub item_fail_rate: Option<f64>,
    /// Backfed records already known, of all records backfed.
    #[serde(default)]
    pub item_filter_rate: Option<f64>,
    /// Items per queue under the old tracker's names (`todo` with the items waiting on disk,
    /// `todo:secondary`, `todo:redo`, `todo:backfeed` with its shards, `claims`, `done`,
    /// `unretrievable`), for the compatibility feed's `stats.queues`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub queues: BTreeMap<String, u64>,
}

/// Everything the leaderboard page shows, consistent as of event `seq`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
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
    /// The top downloaders by items done, most first (at most [`TOP_DOWNLOADERS`]; the rest
    /// are paged from `/SLUG/downloaders.json`).
    pub downloaders: Vec<DownloaderRow>,
    /// How many downloaders have done anything, in all.
    #[serde(default)]
    pub downloader_count: u64,
    /// Most recent completions, newest first.
    pub recent: Vec<DoneEvent>,
    /// The lifecycle state ([`lifecycle::derive`]): `active`, `draining`, `finished`, `paused` or
    /// `aborted`.
    #[serde(default)]
    pub state: String,
    /// The project's banner message (may be empty).
    #[serde(default)]
    pub banner: String,
    /// Size of every queue part (`personal`: all personal queues together).
    #[serde(default)]
    pub queues: Vec<(String, u64)>,
    /// Items and bytes done per minute over the last day, minutes without any left out.
    #[serde(default)]
    pub minutes: Vec<MinuteCount>,
    /// The rate window of the downloaders' `window_items` / `window_bytes`, minutes.
    #[serde(default)]
    pub window: u64,
    /// Server time of the snapshot, milliseconds since the epoch.
    #[serde(default)]
    pub now: u64,
    /// The tracker's statistics.
    #[serde(default)]
    pub tracker: TrackerStats,
    /// Unique contributors of this project per month, this month first.
    #[serde(default)]
    pub months: Vec<MonthCount>,
}

/// How many recent completions the leaderboard shows.
pub const RECENT_LEN: usize = 18;

/// How many downloaders a snapshot carries (the top ones by items). However many thousand
/// downloaders a project has, its page data and websocket snapshots stay this small.
pub const TOP_DOWNLOADERS: usize = 100;

impl Leaderboard {
    /// Folds one live event in; events at or before `self.seq` are already included and ignored.
    /// Returns whether the event was applied.
    pub fn apply(&mut self, ev: &DoneEvent) -> bool {
        if ev.seq <= self.seq {
            return false;
        }
        self.seq = ev.seq;
        if !ev.counts.is_zero() {
            self.counts = ev.counts;
        }
        self.total_bytes += ev.bytes;
        for (domain, bytes) in &ev.domain_bytes {
            *self.domain_bytes.entry(domain.clone()).or_default() += bytes;
        }
        let n = ev.item_count();
        rates::add_minute(&mut self.minutes, ev.time, n, ev.bytes);
        self.now = self.now.max(ev.time);
        // The event's totals when it has them (a downloader beyond the top rows gets its real
        // count when it climbs in); older events only carry the increase.
        let known = ev.dl_items >= n && ev.dl_items > 0;
        if known && ev.dl_items == n {
            self.downloader_count += 1;
        }
        match self
            .downloaders
            .iter()
            .position(|d| d.name == ev.downloader)
        {
            Some(i) => {
                let row = &mut self.downloaders[i];
                if known {
                    row.items = ev.dl_items;
                    row.bytes = ev.dl_bytes;
                } else {
                    row.items += n;
                    row.bytes += ev.bytes;
                }
                row.window_items += n;
                row.window_bytes += ev.bytes;
                row.last_seen = ev.time;
                row.version.clone_from(&ev.version);
                // Keep the order: bubble the row up past those it overtook.
                let mut i = i;
                while i > 0 && self.downloaders[i - 1].items < self.downloaders[i].items {
                    self.downloaders.swap(i - 1, i);
                    i -= 1;
                }
            }
            None => {
                let (items, bytes) = if known {
                    (ev.dl_items, ev.dl_bytes)
                } else {
                    (n, ev.bytes)
                };
                let row = DownloaderRow {
                    name: ev.downloader.clone(),
                    items,
                    bytes,
                    last_seen: ev.time,
                    version: ev.version.clone(),
                    window_items: n,
                    window_bytes: ev.bytes,
                };
                let at = self.downloaders.partition_point(|d| d.items >= items);
                // Beyond the top rows it is not shown: the page asks the server for those.
                if at < TOP_DOWNLOADERS {
                    self.downloaders.insert(at, row);
                    self.downloaders.truncate(TOP_DOWNLOADERS);
                }
                if !known {
                    self.downloader_count =
                        self.downloader_count.max(self.downloaders.len() as u64);
                }
            }
        }
        self.recent.insert(0, ev.clone());
        self.recent.truncate(RECENT_LEN);
        true
    }

    /// Takes `fresh` (a websocket snapshot) as the new state, keeping what only the page data
    /// carries (per-minute counts, window sums, tracker statistics) when `fresh` lacks it.
    pub fn adopt(&mut self, mut fresh: Leaderboard) {
        if fresh.now == 0 {
            let old = std::mem::take(self);
            for row in &mut fresh.downloaders {
                if let Some(o) = old.downloaders.iter().find(|o| o.name == row.name) {
                    row.window_items = o.window_items;
                    row.window_bytes = o.window_bytes;
                }
            }
            fresh.minutes = old.minutes;
            fresh.tracker = old.tracker;
            fresh.months = old.months;
            fresh.window = old.window;
            fresh.now = old.now;
            if fresh.queues.is_empty() {
                fresh.queues = old.queues;
            }
        }
        *self = fresh;
    }

    /// Sets every downloader's sums of the `window` minutes from `(name, items, bytes)`; rows
    /// not listed had none. Ignored when the page has switched to another window meanwhile.
    pub fn set_window_sums(&mut self, window: u64, sums: Vec<(String, u64, u64)>) {
        if window != self.window {
            return;
        }
        let sums: std::collections::HashMap<String, (u64, u64)> =
            sums.into_iter().map(|(d, i, b)| (d, (i, b))).collect();
        for row in &mut self.downloaders {
            let (items, bytes) = sums.get(&row.name).copied().unwrap_or_default();
            row.window_items = items;
            row.window_bytes = bytes;
        }
    }

    /// Items and bytes per second over the last `minutes` minutes, as of [`Leaderboard::now`].
    pub fn rate(&self, minutes: u64) -> Rate {
        Rate::over(&self.minutes, self.now, minutes)
    }
}

/// A project as listed on the front page.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ProjectSummary {
    /// Project slug.
    pub slug: String,
    /// Project title.
    pub title: String,
    /// Item counts.
    pub counts: Counts,
    /// The lifecycle state ([`lifecycle::derive`]): `active`, `draining`, `finished`, `paused` or
    /// `aborted`.
    #[serde(default)]
    pub state: String,
    /// The project's banner message (may be empty).
    #[serde(default)]
    pub banner: String,
    /// Items per second over the last 5 minutes.
    #[serde(default)]
    pub items_per_s: f64,
    /// Items done per hour over the last 24 hours, oldest first.
    #[serde(default)]
    pub hourly: Vec<u64>,
    /// Distinct downloaders with completions in the last 30 days.
    #[serde(default)]
    pub contributors_30d: u64,
    /// Downloaders calling its warrior API now (see [`TrackerStats::warriors`]).
    #[serde(default)]
    pub warriors: u64,
}

#[cfg(test)]
mod tests;
