//! Chart data shared by the server and the browser: cumulative series, downsampled by time, and
//! the per-interval rates derived from them.

use super::DoneEvent;
use serde::{Deserialize, Serialize};

/// `[(epoch seconds, cumulative value)]`, oldest first.
pub type Series = Vec<(u64, u64)>;

/// The leaderboard charts (the data of `/SLUG/charts.json`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ChartData {
    /// Cumulative items done.
    pub items: Series,
    /// Cumulative bytes done.
    pub bytes: Series,
    /// Cumulative bytes of the top downloaders, biggest first.
    pub downloaders: Vec<(String, Series)>,
}

/// Keeps the last point of every `bucket_s`-second bucket (exact for cumulative series).
pub fn downsample(series: &[(u64, u64)], bucket_s: u64) -> Series {
    let bucket_s = bucket_s.max(1);
    let mut out: Series = Vec::with_capacity(series.len().min(2048));
    for &(t, v) in series {
        match out.last_mut() {
            Some(last) if last.0 / bucket_s == t / bucket_s => *last = (t, v),
            _ => out.push((t, v)),
        }
    }
    out
}

/// Sets the point of the minute of `t` to `v`, appending when it is a later minute.
pub fn push_point(series: &mut Series, t: u64, v: u64) {
    match series.last_mut() {
        Some(last) if last.0 / 60 == t / 60 => *last = (last.0.max(t), v),
        Some(last) if last.0 > t => {}
        _ => series.push((t, v)),
    }
}

impl ChartData {
    /// Folds in a live completion (the caller skips events already included).
    pub fn apply(&mut self, ev: &DoneEvent) {
        let t = ev.time / 1000;
        let last = |s: &Series| s.last().map_or(0, |p| p.1);
        let items = last(&self.items) + ev.item_count();
        let bytes = last(&self.bytes) + ev.bytes;
        push_point(&mut self.items, t, items);
        push_point(&mut self.bytes, t, bytes);
        if let Some((_, s)) = self
            .downloaders
            .iter_mut()
            .find(|(n, _)| *n == ev.downloader)
        {
            let v = last(s) + ev.bytes;
            push_point(s, t, v);
        }
    }
}

/// The points of `series` from `from_s` on, led by the last point before it (the baseline).
pub fn since(series: &[(u64, u64)], from_s: u64) -> &[(u64, u64)] {
    let at = series.partition_point(|p| p.0 < from_s);
    &series[at.saturating_sub(1)..]
}

/// The increase of a cumulative series (starting from 0) in each `bucket_s`-second bucket from
/// `from_s` to `to_s`, idle buckets included: `[(bucket start, increase)]`.
pub fn increases(series: &[(u64, u64)], bucket_s: u64, from_s: u64, to_s: u64) -> Vec<(u64, u64)> {
    let bucket_s = bucket_s.max(1);
    let first = from_s / bucket_s;
    let last = to_s / bucket_s;
    let mut out: Vec<(u64, u64)> = (first..=last).map(|b| (b * bucket_s, 0)).collect();
    let mut prev = 0;
    for &(t, v) in series {
        let b = t / bucket_s;
        if b >= first && b <= last {
            out[(b - first) as usize].1 += v.saturating_sub(prev);
        }
        prev = v;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn downsample_keeps_the_last_point_per_bucket() {
        let s = vec![(0, 1), (30, 2), (60, 3), (3599, 4), (3600, 5)];
        assert_eq!(downsample(&s, 3600), vec![(3599, 4), (3600, 5)]);
        assert_eq!(
            downsample(&s, 60),
            vec![(30, 2), (60, 3), (3599, 4), (3600, 5)]
        );
    }

    #[test]
    fn increases_spread_a_cumulative_series_over_buckets() {
        let s = vec![(0, 10), (60, 15), (200, 15), (250, 20)];
        assert_eq!(
            increases(&s, 120, 0, 300),
            vec![(0, 15), (120, 0), (240, 5)]
        );
        assert_eq!(since(&s, 100), &s[1..]);
    }
}
