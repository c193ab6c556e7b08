//! Completion rates from per-minute counts: items/s and bytes/s over a window, the spread of the
//! per-minute rates, and the time left to empty the queues.

use serde::{Deserialize, Serialize};

/// The rate windows the pages offer, in minutes: 5 min, 1 h, 24 h.
pub const WINDOWS: [u64; 3] = [5, 60, 1440];

/// Minutes of per-minute counts a leaderboard keeps (the longest window).
const KEEP_MINUTES: u64 = 1440;

/// Items and bytes done in one minute: `[minute since the epoch, items, bytes]`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MinuteCount(pub u64, pub u64, pub u64);

/// Adds a completion at `time_ms` to sparse per-minute counts (sorted by minute), dropping
/// minutes older than a day before the newest.
pub fn add_minute(minutes: &mut Vec<MinuteCount>, time_ms: u64, items: u64, bytes: u64) {
    let m = time_ms / 60_000;
    let at = minutes.partition_point(|c| c.0 < m);
    match minutes.get_mut(at) {
        Some(c) if c.0 == m => {
            c.1 += items;
            c.2 += bytes;
        }
        _ => minutes.insert(at, MinuteCount(m, items, bytes)),
    }
    let newest = minutes.last().map_or(m, |c| c.0);
    let keep_from = newest.saturating_sub(KEEP_MINUTES);
    let stale = minutes.partition_point(|c| c.0 < keep_from);
    minutes.drain(..stale);
}

/// A completion rate over a window.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Rate {
    /// Items per second.
    pub items_per_s: f64,
    /// Bytes per second.
    pub bytes_per_s: f64,
    /// 10th percentile of the window's per-minute item rates (items/s).
    pub low: f64,
    /// 90th percentile of the window's per-minute item rates (items/s).
    pub high: f64,
}

impl Rate {
    /// The rate over the `window` minutes up to `now_ms`. The current minute counts for the
    /// part of it that has passed; the spread uses whole minutes only, idle ones included.
    pub fn over(minutes: &[MinuteCount], now_ms: u64, window: u64) -> Rate {
        let window = window.max(1);
        let now_min = now_ms / 60_000;
        let first = (now_min + 1).saturating_sub(window);
        let in_window = minutes.iter().filter(|c| c.0 >= first && c.0 <= now_min);
        let (items, bytes) = in_window.fold((0, 0), |(i, b), c| (i + c.1, b + c.2));
        let secs = ((window - 1) * 60 + (now_ms % 60_000) / 1000).max(1) as f64;
        let mut per_minute: Vec<f64> = (first..now_min)
            .map(|m| {
                minutes
                    .binary_search_by_key(&m, |c| c.0)
                    .map_or(0.0, |i| minutes[i].1 as f64 / 60.0)
            })
            .collect();
        per_minute.sort_by(f64::total_cmp);
        Rate {
            items_per_s: items as f64 / secs,
            bytes_per_s: bytes as f64 / secs,
            low: percentile(&per_minute, 0.1),
            high: percentile(&per_minute, 0.9),
        }
    }

    /// The time to finish `remaining` items at this rate; `None` when the rate is zero.
    pub fn eta(&self, remaining: u64) -> Option<Eta> {
        if self.items_per_s <= 0.0 {
            return None;
        }
        let r = remaining as f64;
        let secs = |rate: f64| (rate > 0.0).then(|| (r / rate).round() as u64);
        Some(Eta {
            secs: (r / self.items_per_s).round() as u64,
            fastest: secs(self.high.max(self.items_per_s)).unwrap_or(0),
            slowest: secs(self.low.min(self.items_per_s)),
        })
    }
}

/// Time left to empty the queues, in seconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Eta {
    /// At the window's mean rate.
    pub secs: u64,
    /// At the 90th-percentile rate.
    pub fastest: u64,
    /// At the 10th-percentile rate; `None` when that rate is zero.
    pub slowest: Option<u64>,
}

/// The `q` quantile of sorted `values` (nearest rank); 0 for none.
fn percentile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

#[cfg(test)]
mod tests {
    use super::*;

    const T0: u64 = 1_000 * 60_000;

    #[test]
    fn add_minute_merges_orders_and_drops_old_minutes() {
        let mut m = vec![];
        add_minute(&mut m, T0 + 1_000, 2, 20);
        add_minute(&mut m, T0 + 2_000, 1, 10);
        add_minute(&mut m, T0 - 60_000, 5, 50);
        assert_eq!(m, vec![MinuteCount(999, 5, 50), MinuteCount(1000, 3, 30)]);
        add_minute(&mut m, T0 + 1440 * 60_000, 1, 1);
        assert_eq!(m.len(), 2, "minutes over a day old are dropped: {m:?}");
        assert_eq!(m[0].0, 1000);
    }

    #[test]
    fn rate_counts_the_elapsed_part_of_the_current_minute() {
        // 60 items in each of the 4 whole minutes before, 30 so far in the current one.
        let m: Vec<_> = (996..=1000)
            .map(|i| MinuteCount(i, if i == 1000 { 30 } else { 60 }, 600))
            .collect();
        let r = Rate::over(&m, T0 + 30_000, 5);
        assert!((r.items_per_s - 270.0 / 270.0).abs() < 1e-9, "{r:?}");
        assert_eq!((r.low, r.high), (1.0, 1.0));
        assert!((r.bytes_per_s - 3000.0 / 270.0).abs() < 1e-9);
    }

    #[test]
    fn spread_includes_idle_minutes_and_eta_has_a_range() {
        let m = vec![MinuteCount(990, 600, 0), MinuteCount(999, 60, 0)];
        let r = Rate::over(&m, T0, 60);
        assert_eq!(r.low, 0.0, "{r:?}");
        let eta = r.eta(1000).expect("positive rate");
        assert!(eta.fastest <= eta.secs);
        assert_eq!(
            eta.slowest, None,
            "the slow end is unbounded when idle minutes dominate"
        );
        assert_eq!(Rate::over(&[], T0, 5).eta(10), None);
    }
}
