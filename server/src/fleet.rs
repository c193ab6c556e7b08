//! The fleet of the warrior API, gathered in the process: every request, done and release of a
//! known project marks its caller (downloader name, address, user agent, script version) as
//! seen, in memory, without a Redis call. Every [`FLUSH_EVERY`] what was gathered is written in
//! one script call ([`crate::store::fleet::Fleet::flush_fleet`]), which also forgets the downloaders
//! silent for longer than the fleet silence. So thousands of calls a second cost Redis one
//! call every two seconds per process.
//!
//! Memory: at most [`crate::store::MAX_FLEET_CLIENTS`] callers are gathered between two flushes
//! (a new caller beyond is left out of that flush, and counted in the log); each holds a few
//! strings at their limits (name, address, a cut user agent, version).

use crate::store::{now_ms, SeenClient, Store, MAX_FLEET_CLIENTS};
use std::{
    collections::HashMap,
    hash::{BuildHasher, RandomState},
    sync::Mutex,
    time::Duration,
};

/// How often what was gathered is written to Redis.
pub const FLUSH_EVERY: Duration = Duration::from_secs(2);

/// The callers seen since the last flush.
pub struct ApiFleet {
    /// Keyed by a hash of (project, name, address) with this process's random keys, so a key is
    /// made without allocating and no caller can choose collisions.
    seen: Mutex<Gathered>,
    hasher: RandomState,
    cap: usize,
    /// Per address: the callers it brought in this window, and when the window began (ms).
    addresses: Mutex<HashMap<String, (u32, u64)>>,
    /// The keys of the callers gathered in this window, so one seen again is not new.
    known: Mutex<std::collections::HashSet<u64>>,
}

#[derive(Default)]
struct Gathered {
    clients: HashMap<u64, SeenClient>,
    /// New callers left out since the last flush: the map was full, or their address had
    /// brought its share of new callers already.
    left_out: u64,
}

/// New callers (project, name) one address may bring into the fleet per [`ADDRESS_WINDOW`]:
/// one address rotating names cannot fill the fleet's cap.
pub const MAX_NEW_PER_ADDRESS: u32 = 1_000;
/// See [`MAX_NEW_PER_ADDRESS`].
pub const ADDRESS_WINDOW: Duration = Duration::from_secs(15 * 60);
/// Addresses counted before the expired ones are swept out.
const ADDRESSES_SWEPT_AT: usize = 50_000;

impl Default for ApiFleet {
    fn default() -> Self {
        Self::with_cap(MAX_FLEET_CLIENTS as usize)
    }
}

impl ApiFleet {
    /// A fleet gathering at most `cap` callers between flushes.
    pub fn with_cap(cap: usize) -> Self {
        Self {
            seen: Mutex::default(),
            hasher: RandomState::new(),
            cap,
            addresses: Mutex::default(),
            known: Mutex::default(),
        }
    }

    /// Whether `ip` may bring in the new caller `key` now (else it is left out).
    fn admit(&self, key: u64, ip: &str, now: u64) -> bool {
        let window = ADDRESS_WINDOW.as_millis() as u64;
        let mut known = self.known.lock().unwrap_or_else(|e| e.into_inner());
        if known.contains(&key) {
            return true;
        }
        let mut addresses = self.addresses.lock().unwrap_or_else(|e| e.into_inner());
        if addresses.len() >= ADDRESSES_SWEPT_AT {
            addresses.retain(|_, (_, since)| now < *since + window);
            if addresses.len() >= ADDRESSES_SWEPT_AT {
                addresses.clear();
                known.clear();
            }
        }
        let (n, since) = addresses.entry(ip.to_string()).or_insert((0, now));
        if now >= *since + window {
            (*n, *since) = (0, now);
        }
        if *n >= MAX_NEW_PER_ADDRESS {
            return false;
        }
        *n += 1;
        if known.len() >= self.cap * 4 {
            known.clear();
        }
        known.insert(key);
        true
    }

    /// Marks a call of `downloader` from `ip` to project `slug` as seen now, with its user agent
    /// (already cut) and script version (empty: keeps the last one sent), and `done` items it
    /// reported done.
    pub fn saw(
        &self,
        slug: &str,
        downloader: &str,
        ip: &str,
        user_agent: &str,
        version: &str,
        done: u64,
    ) {
        let key = self.hasher.hash_one((slug, downloader, ip));
        let now = now_ms();
        let mut g = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        let full = g.clients.len() >= self.cap;
        match g.clients.get_mut(&key) {
            Some(c) => {
                c.seen = now;
                c.done += done;
                if c.user_agent != user_agent {
                    user_agent.clone_into(&mut c.user_agent);
                }
                if !version.is_empty() && c.version != version {
                    version.clone_into(&mut c.version);
                }
            }
            None if full || !self.admit(key, ip, now) => g.left_out += 1,
            None => {
                g.clients.insert(
                    key,
                    SeenClient {
                        slug: slug.to_string(),
                        downloader: downloader.to_string(),
                        ip: ip.to_string(),
                        user_agent: user_agent.to_string(),
                        version: version.to_string(),
                        seen: now,
                        done,
                    },
                );
            }
        }
    }

    /// Takes what was gathered: the callers, and how many new ones were left out.
    pub fn take(&self) -> (Vec<SeenClient>, u64) {
        let mut g = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        let taken = std::mem::take(&mut *g);
        (taken.clients.into_values().collect(), taken.left_out)
    }

    /// Writes what was gathered every [`FLUSH_EVERY`] (and forgets the silent downloaders,
    /// even when nothing was gathered) until `closing`. While Redis does not answer
    /// (`redis_up` false), or a flush fails, what was gathered is dropped: the callers are seen
    /// again at their next call.
    pub fn start_flushing(
        self: &std::sync::Arc<Self>,
        store: Store,
        redis_up: impl Fn() -> bool + Send + 'static,
        closing: tokio_util::sync::CancellationToken,
    ) {
        let fleet = self.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(FLUSH_EVERY);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    _ = closing.cancelled() => return,
                    _ = tick.tick() => {}
                }
                let (clients, left_out) = fleet.take();
                if left_out > 0 {
                    warn_once_a_minute(&format!(
                        "{left_out} new downloaders of the warrior API not tracked: {} gathered since the last flush already",
                        fleet.cap
                    ));
                }
                if !redis_up() {
                    continue;
                }
                match store.fleet().flush_fleet(&clients, now_ms()).await {
                    Ok(done) if done.dropped > 0 => warn_once_a_minute(&format!(
                        "{} new downloaders of the warrior API not tracked: the fleet holds {} already",
                        done.dropped,
                        crate::store::MAX_FLEET_CLIENTS
                    )),
                    Ok(_) => {}
                    Err(e) => warn_once_a_minute(&format!("writing the fleet: {e}")),
                }
            }
        });
    }
}

/// Logs `what` at most once a minute.
fn warn_once_a_minute(what: &str) {
    use std::sync::atomic::{AtomicU64, Ordering};
    static LAST: AtomicU64 = AtomicU64::new(0);
    let now = now_ms() / 1000;
    let seen = LAST.load(Ordering::Relaxed);
    if now >= seen + 60
        && LAST
            .compare_exchange(seen, now, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
    {
        tracing::warn!("{what}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_of_one_caller_fold_into_one_record() {
        let fleet = ApiFleet::with_cap(2);
        fleet.saw("p1", "alice", "192.0.2.1", "ua/1", "20240101.01", 0);
        fleet.saw("p1", "alice", "192.0.2.1", "ua/2", "", 3);
        fleet.saw("p1", "alice", "192.0.2.1", "ua/2", "20240101.02", 2);
        fleet.saw("p2", "alice", "192.0.2.1", "ua/2", "", 0);
        let (mut seen, left_out) = fleet.take();
        seen.sort_by(|a, b| a.slug.cmp(&b.slug));
        assert_eq!((seen.len(), left_out), (2, 0));
        let a = &seen[0];
        assert_eq!(
            (a.user_agent.as_str(), a.version.as_str(), a.done),
            ("ua/2", "20240101.02", 5)
        );
        assert!(a.seen > 0);
        // Full: a third caller is left out, and counted.
        fleet.saw("p1", "a", "x", "", "", 0);
        fleet.saw("p1", "b", "x", "", "", 0);
        fleet.saw("p1", "c", "x", "", "", 0);
        fleet.saw("p1", "a", "x", "", "", 1);
        let (seen, left_out) = fleet.take();
        assert_eq!((seen.len(), left_out), (2, 1));
        assert_eq!(fleet.take(), (vec![], 0), "taken: empty again");
    }

    #[test]
    fn one_address_brings_at_most_its_share_of_new_callers() {
        let fleet = ApiFleet::with_cap(10_000);
        let n = MAX_NEW_PER_ADDRESS as usize + 10;
        for i in 0..n {
            fleet.saw("p1", &format!("name{i}"), "192.0.2.66", "", "", 0);
        }
        fleet.saw("p1", "honest", "192.0.2.1", "", "", 0);
        let (seen, left_out) = fleet.take();
        assert_eq!(seen.len(), MAX_NEW_PER_ADDRESS as usize + 1);
        assert_eq!(left_out, 10);
        // Those let in are still seen at their next calls, after a flush.
        fleet.saw("p1", "name0", "192.0.2.66", "", "", 1);
        let (seen, left_out) = fleet.take();
        assert_eq!((seen.len(), left_out), (1, 0));
    }
}
