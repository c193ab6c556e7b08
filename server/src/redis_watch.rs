//! Whether Redis answers now, watched by one task of pings on a connection of its own: while it
//! does not, warrior calls are answered 503 at once instead of queueing, `/healthz` and the pages
//! say the tracker is reconnecting, and the live viewers are told; when it answers again the
//! viewers are sent a fresh snapshot.
//!
//! Also how Redis is set, read again every `TRACKER_REDIS_CHECK` seconds
//! ([`RedisWatch::start_checking`]): a server switched to evicting keys, or a failover onto one
//! set so, is logged as an error at each check and shown by `/healthz` until it is set right
//! (`tracker serve` refuses to start on such a server).

use crate::store::Store;
use prometheus_client::{
    metrics::{
        gauge::Gauge,
        histogram::{exponential_buckets, Histogram},
    },
    registry::Registry,
};
use std::{
    sync::{Arc, Weak},
    time::{Duration, Instant},
};
use tokio::sync::watch;

/// How often Redis is pinged.
pub const PROBE_INTERVAL: Duration = Duration::from_millis(250);
/// How long a ping may take before it counts as a failure.
pub const PROBE_TIMEOUT: Duration = Duration::from_millis(400);
/// Failed pings in a row before Redis counts as unreachable: one slow ping under load is not an
/// outage, two (about half a second) are.
pub const FAILURES_TO_DOWN: u32 = 2;

/// Redis's reachability as last probed, the probes' round trips, and the problems of how it is
/// set as last checked; cheap to clone. Starts reachable (the process has just connected) and
/// with no problem (the start refused any).
#[derive(Clone)]
pub struct RedisWatch(
    Arc<watch::Sender<bool>>,
    Histogram,
    Arc<std::sync::Mutex<Vec<String>>>,
    Gauge,
);

impl Default for RedisWatch {
    fn default() -> Self {
        // 50 µs to about 1.6 s.
        let pings = Histogram::new(exponential_buckets(0.00005, 2.0, 16));
        Self(
            Arc::new(watch::Sender::new(true)),
            pings,
            Arc::default(),
            Gauge::default(),
        )
    }
}

impl RedisWatch {
    /// Whether the last probes reached Redis.
    pub fn is_up(&self) -> bool {
        *self.0.borrow()
    }

    /// A receiver of every change of [`RedisWatch::is_up`].
    pub fn subscribe(&self) -> watch::Receiver<bool> {
        self.0.subscribe()
    }

    /// Records a probe's verdict (the probe task, and tests of what follows from it).
    pub fn set(&self, up: bool) {
        send(&self.0, up);
    }

    /// Starts probing `store`'s Redis; the task ends when every clone of this watch is dropped.
    pub fn start_probing(&self, store: &Store) {
        let watch = Arc::downgrade(&self.0);
        let store = store.clone();
        tokio::spawn(probe(watch, self.1.clone(), store));
    }

    /// Why the tracker must not run on its Redis as last checked (empty when it is set right):
    /// see [`crate::store::redis_info::RedisSetup::problems`].
    pub fn problems(&self) -> Vec<String> {
        self.2.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Reads how `store`'s Redis is set every `every` (the first time after `every`: the start
    /// has just checked it), logging each problem as an error; the task ends when every clone
    /// of this watch is dropped. A check that cannot read Redis keeps the last finding.
    pub fn start_checking(&self, store: &Store, every: Duration) {
        let (problems, store, gauge) = (Arc::downgrade(&self.2), store.clone(), self.3.clone());
        tokio::spawn(async move {
            let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                let Some(problems) = problems.upgrade() else {
                    break;
                };
                let Ok(setup) = store.redis_setup().await else {
                    continue;
                };
                let found = setup.problems();
                for problem in &found {
                    tracing::error!("{problem}");
                }
                gauge.set(found.len() as i64);
                *problems.lock().unwrap_or_else(|e| e.into_inner()) = found;
            }
        });
    }

    /// Adds the probes' round trips to `registry` (`redis_ping_seconds`, this process's).
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "redis_ping_seconds",
            "Round trip of this process's PING to Redis every 250 ms, on a connection of its own (answered ones)",
            self.1.clone(),
        );
        registry.register(
            "redis_problems",
            "Problems of how Redis is set, as this process last checked (a primary evicting keys when full, or older than 7; /healthz lists them); 0 when it is set right",
            self.3.clone(),
        );
    }
}

/// Sends `up` to the watchers if it is a change.
fn send(tx: &watch::Sender<bool>, up: bool) {
    tx.send_if_modified(|now| std::mem::replace(now, up) != up);
}

async fn probe(watch: Weak<watch::Sender<bool>>, pings: Histogram, store: Store) {
    use fred::interfaces::ClientLike as _;
    // Made again while Redis cannot be reached at all (a first connection fails outright).
    let mut client = None;
    let mut tick = tokio::time::interval(PROBE_INTERVAL);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let (mut failures, mut down_since) = (0u32, None::<Instant>);
    loop {
        tick.tick().await;
        let Some(watch) = watch.upgrade() else { break };
        let answered = tokio::time::timeout(PROBE_TIMEOUT, async {
            if client.is_none() {
                client = store.probe_client().await.ok();
            }
            let Some(c) = &client else { return false };
            let sent = Instant::now();
            let answered = c.ping::<String>(None).await.is_ok();
            if answered {
                pings.observe(sent.elapsed().as_secs_f64());
            }
            answered
        })
        .await
        .unwrap_or(false);
        if answered {
            failures = 0;
            if let Some(since) = down_since.take() {
                tracing::warn!(
                    after_s = since.elapsed().as_secs_f64(),
                    "redis answers again"
                );
                send(&watch, true);
            }
        } else {
            failures += 1;
            if failures == FAILURES_TO_DOWN {
                tracing::warn!("redis does not answer: warrior calls get 503 until it does");
                down_since = Some(Instant::now());
                send(&watch, false);
            }
        }
    }
    if let Some(c) = client {
        let _ = c.quit().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_changes_are_sent() {
        let w = RedisWatch::default();
        let mut rx = w.subscribe();
        w.set(true);
        assert!(!rx.has_changed().unwrap(), "no change, no message");
        w.set(false);
        assert!(rx.has_changed().unwrap() && !*rx.borrow_and_update());
        assert!(!w.is_up());
    }
}
