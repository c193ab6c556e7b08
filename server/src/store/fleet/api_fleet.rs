//! The downloaders seen on the warrior API: what each process gathered over its last couple of
//! seconds ([`crate::fleet`]) written in one script call per flush (`fleet_flush.lua`), and read
//! back for the admin Fleet page and the pages' counts of warriors at work.
//!
//! A downloader here is a downloader name calling one project from one address; its id is
//! `SLUG:HEX` (HEX: 16 hex digits of the SHA-256 of name and address), the same in every
//! process. One is forgotten once silent for longer than the fleet silence
//! ([`crate::store::fleet::Fleet::set_fleet_silence`], `TRACKER_FLEET_SILENCE`), and at most [`MAX_FLEET_CLIENTS`]
//! are remembered: a new one beyond that is left out until others are forgotten.

use super::{StoreError, StoreResult};
use app::model::admin::FleetClient;
use fred::prelude::*;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// The most API downloaders remembered at once.
pub const MAX_FLEET_CLIENTS: u64 = 100_000;

/// Records written per script call: a flush of more is split.
const FLUSH_CHUNK: usize = 2000;

/// The window of the items/s counters (`fleet_flush.lua`'s `WINDOW_MS`).
const RATE_WINDOW_MS: u64 = 10_000;

/// The items/s of a downloader is over this many windows (the current one included).
const RATE_WINDOWS: u64 = 6;

/// What a process saw of one downloader since its last flush.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SeenClient {
    /// The project it called.
    pub slug: String,
    /// The downloader name it sent.
    pub downloader: String,
    /// The address it called from.
    pub ip: String,
    /// Its last user agent (already cut to the stored length).
    pub user_agent: String,
    /// The script version of its last call that sent one.
    pub version: String,
    /// Its last call (ms).
    pub seen: u64,
    /// Items it reported done.
    pub done: u64,
}

impl SeenClient {
    /// Its id, `SLUG:HEX`.
    pub fn id(&self) -> String {
        let mut h = Sha256::new();
        h.update(self.downloader.as_bytes());
        h.update([0]);
        h.update(self.ip.as_bytes());
        let digest = h.finalize();
        let hex: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
        format!("{}:{hex}", self.slug)
    }
}

/// A downloader's record as stored (its id, last call and counters are kept beside it).
#[derive(Debug, Default, Serialize, Deserialize)]
struct Record {
    #[serde(rename = "p")]
    project: String,
    #[serde(rename = "d")]
    downloader: String,
    ip: String,
    #[serde(rename = "ua", default)]
    user_agent: String,
    #[serde(rename = "v", default)]
    version: String,
}

/// What a flush did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
pub struct FleetFlush {
    /// Records stored.
    pub stored: u64,
    /// New downloaders left out: the fleet was full.
    pub dropped: u64,
    /// Silent downloaders forgotten.
    pub forgotten: u64,
}

/// The seesaw version a user agent names: `ArchiveTeam Warrior/0.10.3 Warrior 4` → `0.10.3`;
/// empty when it names none.
pub fn seesaw_version(user_agent: &str) -> &str {
    let Some(at) = user_agent.find("Warrior/") else {
        return "";
    };
    let rest = &user_agent[at + "Warrior/".len()..];
    let end = rest
        .find(|c: char| c.is_whitespace() || c == '(' || c == ';' || c == ')')
        .unwrap_or(rest.len());
    &rest[..end.min(32)]
}

/// How long an API downloader may be silent before it is forgotten (ms): this slice's state.
struct FleetSilence(std::sync::atomic::AtomicU64);

impl Default for FleetSilence {
    fn default() -> Self {
        Self(crate::config::DEFAULT_FLEET_SILENCE_MS.into())
    }
}

impl super::Fleet<'_> {
    /// Sets how long a downloader may be silent before it is forgotten.
    pub fn set_fleet_silence(self, silence: std::time::Duration) {
        let ms = (silence.as_millis() as u64).max(1);
        self.slice::<FleetSilence>()
            .0
            .store(ms, std::sync::atomic::Ordering::Relaxed);
    }

    /// How long a downloader may be silent before it is forgotten (ms).
    pub fn fleet_silence_ms(self) -> u64 {
        self.slice::<FleetSilence>()
            .0
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Writes what a process saw (`clients`; may be empty: the silent ones are still forgotten)
    /// as of `now_ms`, in one script call per [`FLUSH_CHUNK`] records.
    pub async fn flush_fleet(self, clients: &[SeenClient], now_ms: u64) -> StoreResult<FleetFlush> {
        let mut total = FleetFlush::default();
        let chunks: Vec<&[SeenClient]> = if clients.is_empty() {
            vec![&[]]
        } else {
            clients.chunks(FLUSH_CHUNK).collect()
        };
        for chunk in chunks {
            let records: Vec<serde_json::Value> = chunk
                .iter()
                .map(|c| {
                    let record = Record {
                        project: c.slug.clone(),
                        downloader: c.downloader.clone(),
                        ip: c.ip.clone(),
                        user_agent: c.user_agent.clone(),
                        version: c.version.clone(),
                    };
                    let json = serde_json::to_string(&record).unwrap_or_default();
                    serde_json::json!([c.id(), c.slug, json, c.seen, c.done])
                })
                .collect();
            let keys = vec![self.keys.fleet_clients(), self.keys.fleet_seen()];
            let args: Vec<Value> = vec![
                self.keys.fleet_prefix().into(),
                (now_ms as i64).into(),
                (self.fleet_silence_ms() as i64).into(),
                (MAX_FLEET_CLIENTS as i64).into(),
                serde_json::to_string(&records).unwrap_or_default().into(),
            ];
            let done = self
                .scripts
                .call::<FleetFlush>(self.pool.next(), &self.scripts.fleet_flush, keys, args)
                .await?
                .map_err(StoreError::Refused)?;
            total.stored += done.stored;
            total.dropped += done.dropped;
            total.forgotten += done.forgotten;
        }
        Ok(total)
    }

    /// Downloaders calling `slug`'s warrior API now: heard from within the fleet silence.
    pub async fn warriors_at_work(self, slug: &str, now_ms: u64) -> StoreResult<u64> {
        // Scores are whole milliseconds: after `cut` is from `cut + 1` on.
        let cut = now_ms.saturating_sub(self.fleet_silence_ms());
        Ok(self
            .pool
            .next()
            .zcount(
                self.keys.fleet_project(slug),
                (cut + 1) as f64,
                f64::INFINITY,
            )
            .await?)
    }

    /// Every downloader heard from within the fleet silence, with the claims its name holds in
    /// its project and its items per second over the last minute; by id.
    pub async fn api_fleet(self, now_ms: u64) -> StoreResult<Vec<FleetClient>> {
        let client = self.pool.next();
        let cut = now_ms.saturating_sub(self.fleet_silence_ms());
        let live: Vec<(String, f64)> = client
            .zrangebyscore(
                self.keys.fleet_seen(),
                format!("({cut}"),
                "+inf",
                true,
                None,
            )
            .await?;
        if live.is_empty() {
            return Ok(vec![]);
        }
        let mut rows = Vec::with_capacity(live.len());
        for part in live.chunks(1000) {
            let ids: Vec<&str> = part.iter().map(|(id, _)| id.as_str()).collect();
            let records: Vec<Option<String>> = client.hmget(self.keys.fleet_clients(), ids).await?;
            for ((id, seen), record) in part.iter().zip(records) {
                let Some(r) = record.and_then(|r| serde_json::from_str::<Record>(&r).ok()) else {
                    continue;
                };
                rows.push(FleetClient {
                    id: id.clone(),
                    seesaw: seesaw_version(&r.user_agent).to_string(),
                    project: r.project,
                    downloader: r.downloader,
                    ip: r.ip,
                    user_agent: r.user_agent,
                    version: r.version,
                    seen: *seen as u64,
                    in_flight: 0,
                    items_per_s: 0.0,
                });
            }
        }
        // Items per second: the counters of the last windows, over the time they cover.
        let now_window = now_ms / RATE_WINDOW_MS;
        let first = now_window.saturating_sub(RATE_WINDOWS - 1);
        let span_s = (now_ms - first * RATE_WINDOW_MS).max(1) as f64 / 1000.0;
        let reads = (first..=now_window)
            .map(|w| client.hgetall::<HashMap<String, u64>, _>(self.keys.fleet_done(w)));
        let mut done: HashMap<String, u64> = HashMap::new();
        for counts in futures::future::try_join_all(reads).await? {
            for (id, n) in counts {
                *done.entry(id).or_default() += n;
            }
        }
        // Claims held: each project's `dl:claims` of the names seen in it.
        let mut names: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
        for r in &rows {
            names.entry(&r.project).or_default().insert(&r.downloader);
        }
        let mut held: HashMap<(String, String), u64> = HashMap::new();
        for (slug, set) in names {
            let list: Vec<&str> = set.into_iter().collect();
            for part in list.chunks(1000) {
                let counts: Vec<Option<u64>> = client
                    .hmget(self.keys.project(slug).dl_claims(), part.to_vec())
                    .await?;
                for (name, n) in part.iter().zip(counts) {
                    held.insert((slug.to_string(), name.to_string()), n.unwrap_or(0));
                }
            }
        }
        for r in &mut rows {
            r.items_per_s = done.get(&r.id).copied().unwrap_or(0) as f64 / span_s;
            r.in_flight = held
                .get(&(r.project.clone(), r.downloader.clone()))
                .copied()
                .unwrap_or(0);
        }
        Ok(rows)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_seesaw_version_comes_from_the_user_agent() {
        assert_eq!(
            seesaw_version("ArchiveTeam Warrior/0.10.3 Warrior 4"),
            "0.10.3"
        );
        assert_eq!(
            seesaw_version("ArchiveTeam Warrior/0.8.5 (Standalone ; pipeline 9)"),
            "0.8.5"
        );
        assert_eq!(seesaw_version("ArchiveTeam Warrior/0.10.3"), "0.10.3");
        assert_eq!(seesaw_version("curl/8.0"), "");
        assert_eq!(seesaw_version(""), "");
    }

    #[test]
    fn ids_name_the_project_and_differ_per_name_and_address() {
        let a = SeenClient {
            slug: "p1".into(),
            downloader: "alice".into(),
            ip: "192.0.2.1".into(),
            ..Default::default()
        };
        let id = a.id();
        assert!(id.starts_with("p1:") && id.len() == 3 + 16, "{id}");
        let other_ip = SeenClient {
            ip: "192.0.2.2".into(),
            ..a.clone()
        };
        assert_ne!(other_ip.id(), id);
        // Name and address are kept apart: "ab" + "c" is not "a" + "bc".
        let (x, y) = (
            SeenClient {
                downloader: "ab".into(),
                ip: "c".into(),
                ..a.clone()
            },
            SeenClient {
                downloader: "a".into(),
                ip: "bc".into(),
                ..a.clone()
            },
        );
        assert_ne!(x.id(), y.id());
        assert_eq!(a.id(), id, "the same every time");
    }
}
