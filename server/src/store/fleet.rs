//! Warrior HQ's instances: the warriors that registered (`/api/register.json`) and report what
//! they run (`/api/update.json`), each forgotten [`FLEET_TTL_MS`] after its last update.
//!
//! An id is a number handed out by [`Store::register_warrior`]; an update must name one that
//! was. Records live in one hash, their last update in a sorted set; the stale ones are removed
//! whenever the fleet is read, and before a new instance is refused for a full fleet, so memory
//! stays within [`MAX_WARRIORS`] instances.

use super::{Store, StoreResult};
use app::model::FleetStats;
use fred::prelude::*;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// How long an instance is remembered after its last update: 15 minutes, as warrior-hq.
pub const FLEET_TTL_MS: u64 = 15 * 60 * 1000;

/// The most instances remembered at once; an update of a new one beyond it is refused.
pub const MAX_WARRIORS: u64 = 100_000;

/// What a warrior instance last said of itself.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct WarriorRecord {
    /// Its id.
    pub id: u64,
    /// The downloader name it runs as.
    #[serde(default)]
    pub downloader: String,
    /// The project it runs: a slug, `auto`, or empty.
    #[serde(default)]
    pub selected_project: String,
    /// Where it is, as it said (latitude, longitude), if it did.
    #[serde(default)]
    pub lat_lng: Option<(f64, f64)>,
    /// Its warrior version.
    #[serde(default)]
    pub version: String,
    /// The address it called from (shown to admins only).
    #[serde(default)]
    pub ip: String,
    /// Its last update (ms since the epoch).
    pub seen: u64,
}

/// Why an update was not recorded.
#[derive(Debug, PartialEq, Eq)]
pub enum FleetRefusal {
    /// The id was never handed out.
    UnknownId,
    /// [`MAX_WARRIORS`] instances are remembered already.
    Full,
}

impl Store {
    /// A new warrior id.
    pub async fn register_warrior(&self) -> StoreResult<u64> {
        Ok(self.pool.next().incr(self.keys.hq_seq()).await?)
    }

    /// Records `record` (its id, what it runs, when), unless its id was never handed out or
    /// the fleet is full: two pipelined round trips. Silent instances are forgotten here only
    /// when the fleet is full (and by every [`Store::fleet`] read), which keeps the update cheap
    /// and the memory within [`MAX_WARRIORS`] records.
    pub async fn update_warrior(
        &self,
        record: &WarriorRecord,
        now_ms: u64,
    ) -> StoreResult<Result<(), FleetRefusal>> {
        let client = self.pool.next();
        let id = record.id.to_string();
        let pipe = client.pipeline();
        let _: () = pipe.get(self.keys.hq_seq()).await?;
        let _: () = pipe.zscore(self.keys.hq_seen(), &id).await?;
        let _: () = pipe.zcard(self.keys.hq_seen()).await?;
        let (issued, known, count): (Option<u64>, Option<f64>, u64) = pipe.all().await?;
        if record.id == 0 || record.id > issued.unwrap_or(0) {
            return Ok(Err(FleetRefusal::UnknownId));
        }
        if known.is_none() && count >= MAX_WARRIORS {
            self.forget_silent_warriors(now_ms).await?;
            let count: u64 = client.zcard(self.keys.hq_seen()).await?;
            if count >= MAX_WARRIORS {
                return Ok(Err(FleetRefusal::Full));
            }
        }
        let json = serde_json::to_string(record).unwrap_or_default();
        let pipe = client.pipeline();
        let _: () = pipe
            .hset(self.keys.hq_warriors(), (id.as_str(), json))
            .await?;
        let _: () = pipe
            .zadd(
                self.keys.hq_seen(),
                None,
                None,
                false,
                false,
                (now_ms as f64, id.as_str()),
            )
            .await?;
        let _: Vec<Value> = pipe.all().await?;
        Ok(Ok(()))
    }

    /// The instances heard from in the last [`FLEET_TTL_MS`].
    pub async fn fleet(&self, now_ms: u64) -> StoreResult<Vec<WarriorRecord>> {
        self.forget_silent_warriors(now_ms).await?;
        let all: std::collections::HashMap<String, String> =
            self.pool.next().hgetall(self.keys.hq_warriors()).await?;
        let mut fleet: Vec<WarriorRecord> = all
            .values()
            .filter_map(|json| serde_json::from_str(json).ok())
            .collect();
        fleet.sort_by_key(|w| w.id);
        Ok(fleet)
    }

    /// The instances of the last [`FLEET_TTL_MS`] counted per selected project and per whole
    /// degree of position (`GET /api/stats.json`, the home page's map).
    pub async fn fleet_stats(&self, now_ms: u64) -> StoreResult<FleetStats> {
        let fleet = self.fleet(now_ms).await?;
        let mut stats = FleetStats {
            warriors: fleet.len() as u64,
            ..Default::default()
        };
        let mut places: BTreeMap<(i32, i32), u64> = BTreeMap::new();
        for w in &fleet {
            *stats
                .projects
                .entry(w.selected_project.clone())
                .or_default() += 1;
            if let Some((lat, lng)) = w.lat_lng {
                *places
                    .entry((lat.round() as i32, lng.round() as i32))
                    .or_default() += 1;
            }
        }
        stats.positions = places.into_iter().map(|((a, b), n)| (a, b, n)).collect();
        Ok(stats)
    }

    /// Removes the instances whose last update is older than [`FLEET_TTL_MS`]. Two processes
    /// doing it at once remove the same ones: harmless.
    async fn forget_silent_warriors(&self, now_ms: u64) -> StoreResult<()> {
        let client = self.pool.next();
        let cut = now_ms.saturating_sub(FLEET_TTL_MS) as f64;
        let stale: Vec<String> = client
            .zrangebyscore(self.keys.hq_seen(), "-inf", format!("({cut}"), false, None)
            .await?;
        if stale.is_empty() {
            return Ok(());
        }
        let _: () = client.hdel(self.keys.hq_warriors(), stale.clone()).await?;
        let _: () = client.zrem(self.keys.hq_seen(), stale).await?;
        Ok(())
    }
}
