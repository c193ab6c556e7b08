//! The leaderboard snapshot: one atomic read of a project's counts, downloaders and recent
//! completions; for the pages, completed with per-minute counts, per-downloader window sums and
//! the tracker's statistics.

use super::{
    scripts::{lua_count, lua_list, Count, Refusal},
    stats::tracker_stats,
    StoreError, StoreResult,
};
use crate::keys::{Counter, HISTORY_LEN};
use app::model::{
    Counts, DoneEvent, DownloaderRow, Leaderboard, MinuteCount, ProjectSummary, Rate, TrackerStats,
    RECENT_LEN, TOP_DOWNLOADERS,
};
use fred::prelude::*;
use serde::Deserialize;
use std::collections::{BTreeMap, HashMap};

/// The size of every queue part, by name (`personal` for all personal queues together).
pub type QueueSizes = Vec<(String, u64)>;

/// The leaderboard page's default: the recent completions it shows.
pub const PAGE_RECENT: usize = RECENT_LEN;

/// The top downloaders a snapshot carries, as the script's argument.
pub const PAGE_DOWNLOADERS: i64 = TOP_DOWNLOADERS as i64;

/// Minutes of per-minute counts the pages get (the longest rate window).
const PAGE_MINUTES: u64 = 1440;

impl super::Figures<'_> {
    /// Every project with its counts, state, banner and recent rate, by slug.
    pub async fn list_projects(self, now_ms: u64) -> StoreResult<Vec<ProjectSummary>> {
        let mut slugs: Vec<String> = self.pool.next().smembers(self.keys.projects()).await?;
        slugs.sort();
        let mut out = Vec::with_capacity(slugs.len());
        for slug in slugs {
            let Some((b, _)) = self.snapshot(&slug, 0, 0).await? else {
                continue;
            };
            let minutes = self.minute_counts(&slug, now_ms).await?;
            let (contributors_30d, _) = self.unique_contributors(&slug, now_ms).await?;
            let now_min = now_ms / 60_000;
            let mut hourly = vec![0; 24];
            for c in &minutes {
                let age = now_min.saturating_sub(c.0) / 60;
                if let Some(slot) = 23usize.checked_sub(age as usize) {
                    hourly[slot] += c.1;
                }
            }
            let warriors = self.fleet().warriors_at_work(&slug, now_ms).await?;
            out.push(ProjectSummary {
                warriors,
                slug,
                title: b.title,
                counts: b.counts,
                state: b.state,
                banner: b.banner,
                items_per_s: Rate::over(&minutes, now_ms, 5).items_per_s,
                hourly,
                contributors_30d,
            });
        }
        Ok(out)
    }

    /// The leaderboard page's data as of `now_ms`: the snapshot with the top downloaders, the last
    /// day's per-minute counts, each downloader's items and bytes of the last `window` minutes,
    /// and the tracker statistics of the last hour.
    pub async fn board_page(
        self,
        slug: &str,
        now_ms: u64,
        window: u64,
    ) -> StoreResult<Option<Leaderboard>> {
        let Some((mut board, queues)) = self.snapshot(slug, PAGE_DOWNLOADERS, PAGE_RECENT).await?
        else {
            return Ok(None);
        };
        let raw = self.minutes(slug, now_ms, PAGE_MINUTES).await?;
        board.minutes = counts_of(&raw);
        board.tracker = self
            .figures_of(slug, &raw[raw.len().saturating_sub(60)..], now_ms)
            .await?;
        let sums = self.downloader_window(slug, now_ms, window).await?;
        set_window_sums(&mut board.downloaders, &sums);
        board.months = self.project_months(slug, now_ms).await?;
        board.queues = queues;
        board.window = window;
        board.now = now_ms;
        Ok(Some(board))
    }

    /// The names of the `n` downloaders with the most items, most first.
    pub async fn top_downloader_names(self, slug: &str, n: i64) -> StoreResult<Vec<String>> {
        self.fold_for_read(slug).await;
        let key = self.keys.project(slug).dl_items();
        Ok(self.pool.next().zrevrange(key, 0, n - 1, false).await?)
    }

    /// The tracker statistics of `slug` over the hour up to `now_ms`.
    pub async fn tracker_figures(self, slug: &str, now_ms: u64) -> StoreResult<TrackerStats> {
        self.fold_for_read(slug).await;
        let last_hour = self.minutes(slug, now_ms, 60).await?;
        self.figures_of(slug, &last_hour, now_ms).await
    }

    /// [`crate::store::figures::Figures::tracker_figures`] with the queue sizes under the old tracker's names
    /// ([`TrackerStats::queues`]), for the live feeds (one more script call).
    pub async fn live_figures(self, slug: &str, now_ms: u64) -> StoreResult<TrackerStats> {
        let mut figures = self.tracker_figures(slug, now_ms).await?;
        if let Some((board, parts)) = self.snapshot(slug, 0, 0).await? {
            figures.queues = legacy_queues(&board.counts, &parts);
        }
        Ok(figures)
    }

    /// The tracker statistics from `last_hour`'s per-minute counters, the backfeed filter and
    /// the unique contributors.
    async fn figures_of(
        self,
        slug: &str,
        last_hour: &[super::stats::Minute],
        now_ms: u64,
    ) -> StoreResult<TrackerStats> {
        let bloom = self.queue().bloom_fill(slug).await?;
        let (unique_dl, _) = self.unique_contributors(slug, now_ms).await?;
        let mut stats = tracker_stats(last_hour, bloom, unique_dl);
        stats.warriors = self.fleet().warriors_at_work(slug, now_ms).await?;
        Ok(stats)
    }

    /// Items and bytes per downloader over the `minutes` minutes up to `now_ms` (the current
    /// minute and the `minutes - 1` before it), summed from the per-minute and per-hour aggregates
    /// the fold keeps (`fold.lua`): whole hours from the hour buckets, the minutes at either end from the
    /// minute buckets, so at most 23 + 2 x 59 reads for a day, whatever the number of reports.
    pub async fn downloader_window(
        self,
        slug: &str,
        now_ms: u64,
        minutes: u64,
    ) -> StoreResult<HashMap<String, (u64, u64)>> {
        self.fold_for_read(slug).await;
        let k = self.keys.project(slug);
        let client = self.pool.next();
        let reads = window_buckets(now_ms / 60_000, minutes.max(1))
            .into_iter()
            .map(|bucket| {
                let key = match bucket {
                    Bucket::Minute(m) => k.dl_minute(m),
                    Bucket::Hour(h) => k.dl_hour(h),
                };
                client.hgetall::<HashMap<String, u64>, _>(key)
            });
        let mut sums: HashMap<String, (u64, u64)> = HashMap::new();
        for fields in futures::future::try_join_all(reads).await? {
            for (field, n) in fields {
                let Some((who, what)) = field.rsplit_once(' ') else {
                    continue;
                };
                let slot = sums.entry(who.to_string()).or_default();
                match what {
                    "i" => slot.0 += n,
                    "b" => slot.1 += n,
                    _ => {}
                }
            }
        }
        Ok(sums)
    }

    /// Every downloader of `slug` with its items, bytes, last completion and version, in
    /// ZREVRANGE order (most items first, ties by name descending) as the snapshot ranks them. Four plain reads sent together, not one script: at tens of
    /// thousands of downloaders a script would hold Redis for the whole walk. The reads may
    /// straddle a completion; a row is then one report behind, which the next read fixes.
    pub async fn all_downloaders(self, slug: &str) -> StoreResult<Vec<DownloaderRow>> {
        self.fold_for_read(slug).await;
        let k = self.keys.project(slug);
        let client = self.pool.next();
        type Scores = Vec<(String, f64)>;
        let (items, bytes, seen, versions) = tokio::try_join!(
            client.zrange::<Scores, _, _, _>(k.dl_items(), 0, -1, None, false, None, true),
            client.zrange::<Scores, _, _, _>(k.dl_bytes(), 0, -1, None, false, None, true),
            client.hgetall::<HashMap<String, u64>, _>(k.dl_seen()),
            client.hgetall::<HashMap<String, String>, _>(k.dl_version()),
        )?;
        let bytes: HashMap<String, f64> = bytes.into_iter().collect();
        let mut versions = versions;
        let rows: Vec<DownloaderRow> = items
            .into_iter()
            .rev()
            .map(|(name, n)| DownloaderRow {
                items: n.max(0.0) as u64,
                bytes: bytes.get(&name).copied().unwrap_or(0.0).max(0.0) as u64,
                last_seen: seen.get(&name).copied().unwrap_or(0),
                version: versions.remove(&name).unwrap_or_default(),
                name,
                ..DownloaderRow::default()
            })
            .collect();
        Ok(rows)
    }

    /// Non-empty per-minute item and byte counts of the last day up to `now_ms`.
    async fn minute_counts(self, slug: &str, now_ms: u64) -> StoreResult<Vec<MinuteCount>> {
        Ok(counts_of(&self.minutes(slug, now_ms, PAGE_MINUTES).await?))
    }

    /// The leaderboard of `slug` with the top `downloaders` (all when negative) and `recent`
    /// completions, read atomically; `None` when there is no such project.
    pub async fn leaderboard(
        self,
        slug: &str,
        downloaders: i64,
        recent: usize,
    ) -> StoreResult<Option<Leaderboard>> {
        Ok(self
            .snapshot(slug, downloaders, recent)
            .await?
            .map(|(b, _)| b))
    }

    /// [`crate::store::figures::Figures::leaderboard`] with the size of every queue part.
    pub async fn snapshot(
        self,
        slug: &str,
        downloaders: i64,
        recent: usize,
    ) -> StoreResult<Option<(Leaderboard, QueueSizes)>> {
        self.fold_for_read(slug).await;
        let k = self.keys.project(slug);
        let keys = k.snapshot_keys();
        let args = vec![
            Value::from(k.prefix()),
            Value::from(downloaders),
            Value::from(recent.min(HISTORY_LEN) as i64),
        ];
        match self
            .scripts
            .call::<Snapshot>(self.pool.next(), &self.scripts.snapshot, keys, args)
            .await?
        {
            Ok(snapshot) => Ok(Some(snapshot.into_board(slug))),
            Err(Refusal::NoProject) => Ok(None),
            Err(refusal) => Err(StoreError::Refused(refusal)),
        }
    }
}

/// Gives each of `rows` its items and bytes of a rate window from `sums` (by name; rows not
/// in it keep theirs, zero when fresh from a read).
pub fn set_window_sums(rows: &mut [DownloaderRow], sums: &HashMap<String, (u64, u64)>) {
    for row in rows {
        if let Some(&(items, bytes)) = sums.get(&row.name) {
            row.window_items = items;
            row.window_bytes = bytes;
        }
    }
}

/// The item (`i`) and byte (`b`) counters of active minutes.
fn counts_of(minutes: &[super::stats::Minute]) -> Vec<MinuteCount> {
    minutes
        .iter()
        .filter_map(|m| {
            let (i, b) = (m.get(Counter::DoneItems), m.get(Counter::DoneBytes));
            (i > 0 || b > 0).then_some(MinuteCount(m.t / 60, i, b))
        })
        .collect()
}

/// A project's snapshot, as `snapshot.lua` answers it.
#[derive(Deserialize)]
struct Snapshot {
    title: String,
    #[serde(deserialize_with = "lua_count")]
    seq: u64,
    todo: u64,
    out: u64,
    #[serde(deserialize_with = "lua_count")]
    done_items: u64,
    #[serde(deserialize_with = "lua_count")]
    done_bytes: u64,
    failed: u64,
    state: String,
    banner: String,
    downloader_count: u64,
    domain_bytes: BTreeMap<String, Count>,
    #[serde(deserialize_with = "lua_list")]
    downloaders: Vec<Row>,
    #[serde(deserialize_with = "lua_list")]
    recent: Vec<String>,
    #[serde(deserialize_with = "lua_list")]
    queues: Vec<QueueSize>,
}

/// One downloader of a snapshot.
#[derive(Deserialize)]
struct Row {
    name: String,
    #[serde(deserialize_with = "lua_count")]
    items: u64,
    #[serde(deserialize_with = "lua_count")]
    bytes: u64,
    #[serde(deserialize_with = "lua_count")]
    seen: u64,
    version: String,
}

/// The size of one queue part.
#[derive(Deserialize)]
struct QueueSize {
    part: String,
    size: u64,
}

impl Snapshot {
    fn into_board(self, slug: &str) -> (Leaderboard, QueueSizes) {
        let board = Leaderboard {
            slug: slug.to_string(),
            title: self.title,
            seq: self.seq,
            counts: Counts {
                todo: self.todo,
                out: self.out,
                done: self.done_items,
                failed: self.failed,
            },
            total_bytes: self.done_bytes,
            domain_bytes: self
                .domain_bytes
                .into_iter()
                .map(|(domain, Count(n))| (domain, n))
                .collect(),
            downloaders: self
                .downloaders
                .into_iter()
                .map(|r| DownloaderRow {
                    name: r.name,
                    items: r.items,
                    bytes: r.bytes,
                    last_seen: r.seen,
                    version: r.version,
                    ..DownloaderRow::default()
                })
                .collect(),
            recent: self
                .recent
                .iter()
                .filter_map(|e| serde_json::from_str::<DoneEvent>(e).ok())
                .collect(),
            state: app::model::lifecycle::derive(
                &self.state,
                self.todo,
                self.out,
                self.done_items.saturating_add(self.failed),
            )
            .to_string(),
            banner: self.banner,
            downloader_count: self.downloader_count,
            ..Leaderboard::default()
        };
        let queues = self.queues.into_iter().map(|q| (q.part, q.size)).collect();
        (board, queues)
    }
}

/// One aggregate bucket of the rate windows.
#[derive(Debug, PartialEq, Eq)]
enum Bucket {
    /// Minute since the epoch.
    Minute(u64),
    /// Hour since the epoch.
    Hour(u64),
}

/// The buckets that cover exactly the `minutes` minutes ending with minute `end` (inclusive):
/// the whole hours inside, and the minutes before and after them.
fn window_buckets(end: u64, minutes: u64) -> Vec<Bucket> {
    let start = (end + 1).saturating_sub(minutes);
    let (first_hour, after_hours) = (start.div_ceil(60), (end + 1) / 60);
    if first_hour >= after_hours {
        return (start..=end).map(Bucket::Minute).collect();
    }
    (start..first_hour * 60)
        .map(Bucket::Minute)
        .chain((first_hour..after_hours).map(Bucket::Hour))
        .chain((after_hours * 60..=end).map(Bucket::Minute))
        .collect()
}

#[cfg(test)]
mod window_tests {
    use super::*;

    /// The minutes a list of buckets covers.
    fn covered(buckets: &[Bucket]) -> Vec<u64> {
        let mut minutes: Vec<u64> = buckets
            .iter()
            .flat_map(|b| match *b {
                Bucket::Minute(m) => m..m + 1,
                Bucket::Hour(h) => h * 60..h * 60 + 60,
            })
            .collect();
        minutes.sort_unstable();
        minutes
    }

    #[test]
    fn window_buckets_cover_exactly_the_window_with_few_reads() {
        for end in [1_000_000u64, 1_000_019, 1_000_059, 1_000_080] {
            for minutes in [1u64, 5, 59, 60, 61, 90, 119, 120, 1440] {
                let b = window_buckets(end, minutes);
                let want: Vec<u64> = (end + 1 - minutes..=end).collect();
                assert_eq!(covered(&b), want, "end {end}, {minutes} minutes");
                assert!(b.len() <= 23 + 2 * 59 + 2, "{} reads", b.len());
            }
        }
        assert_eq!(window_buckets(119, 60), [Bucket::Hour(1)]);
    }
}

/// The queue sizes as the old tracker named its queues: the parts of a queue (patterns,
/// backfeed shards) added up under the queue's name, personal queues and the items waiting on
/// disk under `todo`; `claims`, `done` and `unretrievable` (failed) from `counts`.
pub fn legacy_queues(
    counts: &app::model::Counts,
    parts: &[(String, u64)],
) -> std::collections::BTreeMap<String, u64> {
    use crate::keys::{BACKFEED, REDO, SECONDARY, TODO};
    let mut queues = std::collections::BTreeMap::new();
    for q in [TODO, SECONDARY, REDO, BACKFEED] {
        queues.insert(q.to_string(), 0u64);
    }
    let mut in_redis = 0;
    for (part, n) in parts {
        let queue = part.split('#').next().unwrap_or_default();
        let name = match queue {
            q if q == BACKFEED || q.starts_with(&format!("{BACKFEED}:")) => BACKFEED,
            q if q == SECONDARY => SECONDARY,
            q if q == REDO => REDO,
            _ => TODO,
        };
        *queues.entry(name.to_string()).or_default() += n;
        in_redis += n;
    }
    *queues.entry(TODO.to_string()).or_default() += counts.todo.saturating_sub(in_redis);
    queues.insert("claims".into(), counts.out);
    queues.insert("done".into(), counts.done);
    queues.insert("unretrievable".into(), counts.failed);
    queues
}

#[cfg(test)]
mod legacy_tests {
    #[test]
    fn queue_parts_add_up_under_the_old_names() {
        let counts = app::model::Counts {
            todo: 100,
            out: 7,
            done: 9,
            failed: 2,
        };
        let parts: Vec<(String, u64)> = [
            ("todo", 10),
            ("todo#img", 5),
            ("todo:backfeed", 3),
            ("todo:backfeed:periodic2026330", 4),
            ("todo:backfeed:onetime#img", 1),
            ("todo:secondary", 6),
            ("todo:redo", 2),
            ("todo:d:alice", 1),
        ]
        .iter()
        .map(|(p, n)| (p.to_string(), *n))
        .collect();
        let q = super::legacy_queues(&counts, &parts);
        assert_eq!(
            q["todo"],
            10 + 5 + 1 + (100 - 32),
            "with personal queues and the disk"
        );
        assert_eq!(q["todo:backfeed"], 8);
        assert_eq!(q["todo:secondary"], 6);
        assert_eq!(q["todo:redo"], 2);
        assert_eq!((q["claims"], q["done"], q["unretrievable"]), (7, 9, 2));
        assert_eq!(q.len(), 7);
    }
}
