//! Statistics read for the pages and the old leaderboard's JSON: charts, versions, per-minute
//! counters, unique contributors.

use super::StoreResult;
use crate::keys::Counter;
use app::model::TrackerStats;
use fred::prelude::*;
use std::collections::{BTreeMap, HashMap};

/// The most minutes of a day [`crate::store::figures::Figures::minutes`] reads field by field; more, it reads the day's
/// hash whole.
const FIELDS_READ_MAX_MINUTES: usize = 120;

/// `[[epoch seconds, value], ...]`
pub type Series = Vec<(u64, u64)>;

/// The old leaderboard's `charts.json`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Charts {
    /// Cumulative items done, one point per minute with completions.
    pub items: Series,
    /// Cumulative bytes done.
    pub bytes: Series,
    /// Cumulative bytes of the top downloaders.
    pub downloaders: BTreeMap<String, Series>,
}

/// Counters of one minute (see the done and claim scripts).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Minute {
    /// Epoch seconds of the minute.
    pub t: u64,
    /// Counter code ([`Counter::code`]) -> value.
    pub counters: BTreeMap<String, u64>,
}

impl Minute {
    /// The value of counter `c` in this minute (0 when not counted).
    pub fn get(&self, c: Counter) -> u64 {
        self.counters.get(c.code()).copied().unwrap_or(0)
    }
}

/// The sum of counter `c` over `minutes`.
pub fn sum(minutes: &[Minute], c: Counter) -> u64 {
    minutes.iter().map(|m| m.get(c)).sum()
}

/// `a / b`, or `None` when `b` is zero.
pub fn ratio(a: u64, b: u64) -> Option<f64> {
    (b != 0).then(|| a as f64 / b as f64)
}

/// How full a project's backfeed filter is: its records and capacity over all its layers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BloomFill {
    /// Records added.
    pub count: u64,
    /// Records its layers hold at their target false positive rate.
    pub capacity: u64,
    /// Its layers.
    pub layers: u64,
}

/// The tracker statistics of `minutes` (the same figures as `/SLUG/tracker-stats.json`).
pub fn tracker_stats(minutes: &[Minute], bloom: BloomFill, unique_dl: u64) -> TrackerStats {
    let s = |c: Counter| sum(minutes, c);
    let BloomFill {
        count,
        capacity,
        layers,
    } = bloom;
    let n = minutes.len().max(1) as f64;
    TrackerStats {
        window_minutes: minutes.len() as u64,
        item_request_serve_rate: ratio(s(Counter::Served), s(Counter::Requests)),
        reclaim_rate: ratio(s(Counter::Reclaimed), s(Counter::Claimed)),
        reclaim_serve_rate: ratio(s(Counter::ServedReclaimed), s(Counter::Served)),
        mean_round_trip_s: ratio(s(Counter::RoundTripMs), s(Counter::RoundTrips) * 1000),
        backfeed_per_minute: s(Counter::Backfed) as f64 / n,
        backfeed_duplicates_per_minute: s(Counter::BackfeedDuplicates) as f64 / n,
        bloom_fill: ratio(count, capacity).unwrap_or(0.0),
        bloom_layers: layers,
        unique_downloaders_30d: unique_dl,
        // From the fleet, not the counters: the caller's.
        warriors: 0,
        item_fail_rate: ratio(
            s(Counter::Failed),
            s(Counter::DoneItems) + s(Counter::Failed),
        ),
        item_filter_rate: ratio(
            s(Counter::BackfeedDuplicates),
            s(Counter::Backfed) + s(Counter::BackfeedDuplicates),
        ),
        // From the states, not the counters: the caller's.
        queues: Default::default(),
    }
}

/// A downloader's chart: its stored points, oldest first, then `now` (the minute of its last
/// report, with its total); one point per minute, the latest value kept (lists written before
/// `dlc_last` existed may repeat their last minute), as the page folds live points in.
fn downloader_series(
    points: impl Iterator<Item = (u64, u64)>,
    now: Option<(u64, u64)>,
) -> Vec<(u64, u64)> {
    let mut series = Vec::new();
    for (t, v) in points.chain(now) {
        app::model::push_point(&mut series, t, v);
    }
    series
}

fn point(entry: &str) -> Option<(u64, Vec<u64>)> {
    let mut it = entry.split(' ').map(|v| v.parse::<u64>().ok());
    let minute = it.next()??;
    Some((minute * 60, it.collect::<Option<Vec<u64>>>()?))
}

impl super::Figures<'_> {
    /// Cumulative charts, with the `top` downloaders by bytes.
    pub async fn charts(self, slug: &str, top: i64) -> StoreResult<Charts> {
        self.fold_for_read(slug).await;
        let k = self.keys.project(slug);
        let client = self.pool.next();
        let raw: Vec<String> = client.lrange(k.chart(), 0, -1).await?;
        // done.lua writes a minute's point when the minute starts: its figures are the totals
        // now while it is `chart_minute`'s.
        let live: Vec<Option<u64>> = client
            .hmget(k.stats(), vec!["chart_minute", "done_items", "done_bytes"])
            .await?;
        let mut charts = Charts::default();
        for (t, v) in raw.iter().filter_map(|e| point(e)) {
            if let [items, bytes] = v[..] {
                charts.items.push((t, items));
                charts.bytes.push((t, bytes));
            }
        }
        if let ([Some(minute), Some(items), Some(bytes)], Some(last_items), Some(last_bytes)) =
            (&live[..], charts.items.last_mut(), charts.bytes.last_mut())
        {
            if last_items.0 == minute * 60 {
                (last_items.1, last_bytes.1) = (*items, *bytes);
            }
        }
        let top: Vec<(String, f64)> = client.zrevrange(k.dl_bytes(), 0, top - 1, true).await?;
        if top.is_empty() {
            return Ok(charts);
        }
        let names: Vec<&str> = top.iter().map(|(name, _)| name.as_str()).collect();
        let last: Vec<Option<u64>> = client.hmget(k.dl_chart_last(), names).await?;
        for ((name, total), last) in top.into_iter().zip(last) {
            let raw: Vec<String> = client.lrange(k.dl_chart(&name), 0, -1).await?;
            let points = raw
                .iter()
                .filter_map(|e| point(e))
                .filter_map(|(t, v)| Some((t, *v.first()?)));
            let now = last.map(|minute| (minute * 60, total as u64));
            charts
                .downloaders
                .insert(name, downloader_series(points, now));
        }
        Ok(charts)
    }

    /// The last script version of every downloader.
    pub async fn downloader_versions(self, slug: &str) -> StoreResult<HashMap<String, String>> {
        self.fold_for_read(slug).await;
        Ok(self
            .pool
            .next()
            .hgetall(self.keys.project(slug).dl_version())
            .await?)
    }

    /// Per-minute counters of the last `minutes` minutes up to `now_ms`, oldest first; minutes
    /// without activity are included with no counters. The done counters come from the fold:
    /// what this process recorded is folded first.
    pub async fn minutes(self, slug: &str, now_ms: u64, minutes: u64) -> StoreResult<Vec<Minute>> {
        self.fold_for_read(slug).await;
        let k = self.keys.project(slug);
        let last = now_ms / 60_000;
        let first = last + 1 - minutes.max(1);
        let mut by_minute: BTreeMap<u64, BTreeMap<String, u64>> =
            (first..=last).map(|m| (m, BTreeMap::new())).collect();
        // A few minutes of a day: the fields of those minutes only (a day's hash holds up to
        // 1,440 minutes of every counter, and the pages read the last hour); many: the whole day.
        for day in (first / 1440)..=(last / 1440) {
            let span = first.max(day * 1440)..=last.min(day * 1440 + 1439);
            if span.clone().count() > FIELDS_READ_MAX_MINUTES {
                let fields: HashMap<String, u64> =
                    self.pool.next().hgetall(k.minute_stats(day)).await?;
                for (field, v) in fields {
                    let Some((m, counter)) = field.split_once(':') else {
                        continue;
                    };
                    let Ok(m) = m.parse::<u64>() else { continue };
                    if let Some(slot) = by_minute.get_mut(&(day * 1440 + m)) {
                        slot.insert(counter.to_string(), v);
                    }
                }
                continue;
            }
            let wanted: Vec<(u64, &str)> = span
                .flat_map(|m| Counter::ALL.iter().map(move |c| (m, c.code())))
                .collect();
            let fields: Vec<String> = wanted
                .iter()
                .map(|(m, code)| format!("{}:{code}", m % 1440))
                .collect();
            let values: Vec<Option<u64>> =
                self.pool.next().hmget(k.minute_stats(day), fields).await?;
            for ((m, code), v) in wanted.into_iter().zip(values) {
                if let (Some(v), Some(slot)) = (v, by_minute.get_mut(&m)) {
                    slot.insert(code.to_string(), v);
                }
            }
        }
        Ok(by_minute
            .into_iter()
            .map(|(m, counters)| Minute {
                t: m * 60,
                counters,
            })
            .collect())
    }

    /// Unique downloaders and IPs that completed items in the 30 days up to `now_ms`.
    pub async fn unique_contributors(self, slug: &str, now_ms: u64) -> StoreResult<(u64, u64)> {
        self.fold_for_read(slug).await;
        let k = self.keys.project(slug);
        let today = now_ms / 86_400_000;
        let days = (today.saturating_sub(29)..=today).collect::<Vec<_>>();
        let client = self.pool.next();
        let dl: u64 = client
            .pfcount(days.iter().map(|d| k.uniques("dl", *d)).collect::<Vec<_>>())
            .await?;
        let ip: u64 = client
            .pfcount(days.iter().map(|d| k.uniques("ip", *d)).collect::<Vec<_>>())
            .await?;
        Ok((dl, ip))
    }
}

#[cfg(test)]
mod tests {
    use super::downloader_series;

    #[test]
    fn a_downloader_series_ends_at_its_last_report_one_point_a_minute() {
        // Stored: minutes 1 and 2 (an older list repeats minute 2), then its last report's
        // minute 5 with the current total.
        let stored = [(60, 10), (120, 15), (120, 20)];
        assert_eq!(
            downloader_series(stored.into_iter(), Some((300, 35))),
            [(60, 10), (120, 20), (300, 35)]
        );
        // An older list whose last point is the current minute: the current total wins.
        assert_eq!(
            downloader_series([(60, 10), (300, 30)].into_iter(), Some((300, 35))),
            [(60, 10), (300, 35)]
        );
        assert_eq!(downloader_series([].into_iter(), None), []);
        // A minute behind the stored points (clocks disagreeing) is not drawn backwards.
        assert_eq!(
            downloader_series([(300, 30)].into_iter(), Some((240, 35))),
            [(300, 30)]
        );
    }
}
