//! Warrior HQ's instances: the warriors that registered (`/api/register.json`) and report what
//! they run (`/api/update.json`), each forgotten [`FLEET_TTL_MS`] after its last update.
//!
//! An id is a number below 2^53 (JSON-safe), as a string on the wire. [`crate::store::fleet::Fleet::register_warrior`]
//! hands out unguessable ones: 25 random bits and 26 bits of a keyed SHA-256 of them (the key,
//! `ns:hq:secret`, made once for the install), so any process checks an id without storing it.
//! A warrior that sends no id, an empty one (the Docker warrior's default: seesaw registers only
//! when the id is missing, so it never does), or one this tracker never made (from another HQ)
//! is served under an id derived from its network (an IPv4 address, an IPv6 /64) and user agent
//! with the same key ([`crate::store::fleet::Fleet::hq_id_for`]): the same each update, so it is counted once, and
//! sent from another network or user agent it is not accepted as is, so it cannot be taken
//! over. Ids handed out by earlier versions (sequential, `ns:hq:seq`) are still accepted.
//! Records live in one hash, their last update in a sorted set; the stale ones are removed
//! whenever the fleet is read, and before a new instance is refused for a full fleet, so memory
//! stays within [`MAX_WARRIORS`] instances.

use super::StoreResult;
use app::model::FleetStats;
use fred::prelude::*;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// How long an instance is remembered after its last update: 15 minutes, as warrior-hq.
pub const FLEET_TTL_MS: u64 = 15 * 60 * 1000;

/// The most instances remembered at once; an update of a new one beyond it is refused.
pub const MAX_WARRIORS: u64 = 100_000;

/// The most instances one network (an IPv4 address, an IPv6 /64) holds at once: a campus or a
/// carrier's NAT runs many warriors, but one network may not fill [`MAX_WARRIORS`] by sending
/// a new user agent with each update (each is an instance of its own, see [`crate::store::fleet::Fleet::hq_id_for`]).
pub const MAX_WARRIORS_PER_NETWORK: u64 = 1_000;

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
    /// [`MAX_WARRIORS`] instances are remembered already.
    Full,
    /// The network holds [`MAX_WARRIORS_PER_NETWORK`] instances already.
    NetworkFull,
}

/// Bit set in every id made by this version (ids of earlier versions are below it).
const NEW_STYLE: u64 = 1 << 52;
/// Bit set in a derived id (an instance that sent none of ours).
const DERIVED: u64 = 1 << 51;
/// Bits of the keyed hash in a registered id.
const MAC_BITS: u32 = 26;
/// Bits of randomness in a registered id.
const RANDOM_BITS: u32 = 25;

/// The first `bits` bits of SHA-256(`key` | `what`).
fn keyed(key: &str, what: &str, bits: u32) -> u64 {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    h.update(key.as_bytes());
    h.update([0u8]);
    h.update(what.as_bytes());
    let d = h.finalize();
    let mut first = [0u8; 8];
    first.copy_from_slice(&d[..8]);
    u64::from_be_bytes(first) >> (64 - bits)
}

/// A registered id made with `key` from `random` (its low [`RANDOM_BITS`] bits).
fn registered_id(key: &str, random: u64) -> u64 {
    let r = random & ((1 << RANDOM_BITS) - 1);
    NEW_STYLE | (r << MAC_BITS) | keyed(key, &format!("reg:{r}"), MAC_BITS)
}

/// The id derived with `key` for an instance on network `net` with user agent `ua`.
fn derived_id(key: &str, net: &str, ua: &str) -> u64 {
    NEW_STYLE | DERIVED | keyed(key, &format!("derived:{net}\n{ua}"), 51)
}

/// The install's Warrior HQ key, once read: this slice's state.
#[derive(Default)]
struct HqKey(std::sync::OnceLock<String>);

impl super::Fleet<'_> {
    /// The install's Warrior HQ key: made once (the first process to ask; every `tracker
    /// serve` asks as it starts, so a full Redis later only needs to read it), then kept.
    pub async fn hq_key(self) -> StoreResult<String> {
        if let Some(k) = self.slice::<HqKey>().0.get() {
            return Ok(k.clone());
        }
        let client = self.pool.next();
        let known: Option<String> = client.get(self.keys.hq_secret()).await?;
        if let Some(key) = known {
            let _ = self.slice::<HqKey>().0.set(key.clone());
            return Ok(key);
        }
        let fresh = format!("{:032x}", rand::random::<u128>());
        let _: Option<String> = client
            .set(
                self.keys.hq_secret(),
                fresh.as_str(),
                None,
                Some(SetOptions::NX),
                false,
            )
            .await?;
        let key: Option<String> = client.get(self.keys.hq_secret()).await?;
        let key = key.unwrap_or(fresh);
        let _ = self.slice::<HqKey>().0.set(key.clone());
        Ok(key)
    }

    /// A new warrior id, unguessable (see the module).
    pub async fn register_warrior(self) -> StoreResult<u64> {
        let key = self.hq_key().await?;
        Ok(registered_id(&key, rand::random::<u64>()))
    }

    /// The id an update from network `net` with user agent `ua` is recorded under: `sent` if it
    /// is one this tracker handed out (or derived for that very network and user agent), else
    /// the one derived for them.
    pub async fn hq_id_for(self, sent: Option<u64>, net: &str, ua: &str) -> StoreResult<u64> {
        let key = self.hq_key().await?;
        let derived = derived_id(&key, net, ua);
        let Some(id) = sent else {
            return Ok(derived);
        };
        if id & NEW_STYLE != 0 {
            let ours = if id & DERIVED != 0 {
                id == derived
            } else {
                id < NEW_STYLE << 1 && registered_id(&key, id >> MAC_BITS) == id
            };
            return Ok(if ours { id } else { derived });
        }
        // An id of an earlier version: sequential, up to the last it handed out.
        let issued: Option<u64> = self.pool.next().get(self.keys.hq_seq()).await?;
        Ok(if id > 0 && id <= issued.unwrap_or(0) {
            id
        } else {
            derived
        })
    }

    /// Records `record` (its id, as [`crate::store::fleet::Fleet::hq_id_for`] chose it; what it runs, when), sent from
    /// network `net`, unless the fleet or the network is full: two pipelined round trips. Silent
    /// instances are forgotten here only when the fleet is full (and by every [`crate::store::fleet::Fleet::registered`]
    /// read), which keeps the update cheap and the memory within [`MAX_WARRIORS`] records.
    pub async fn update_warrior(
        self,
        record: &WarriorRecord,
        net: &str,
        now_ms: u64,
    ) -> StoreResult<Result<(), FleetRefusal>> {
        let client = self.pool.next();
        let id = record.id.to_string();
        let net_key = self.keys.hq_network(net);
        let silent_before = now_ms.saturating_sub(FLEET_TTL_MS) as f64;
        let pipe = client.pipeline();
        let _: () = pipe.zscore(self.keys.hq_seen(), &id).await?;
        let _: () = pipe.zcard(self.keys.hq_seen()).await?;
        let _: () = pipe
            .zremrangebyscore(&net_key, f64::NEG_INFINITY, silent_before)
            .await?;
        let _: () = pipe.zscore(&net_key, &id).await?;
        let _: () = pipe.zcard(&net_key).await?;
        let (known, count, _, in_net, net_count): (Option<f64>, u64, u64, Option<f64>, u64) =
            pipe.all().await?;
        if in_net.is_none() && net_count >= MAX_WARRIORS_PER_NETWORK {
            return Ok(Err(FleetRefusal::NetworkFull));
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
        let seen = (now_ms as f64, id.as_str());
        let _: () = pipe
            .zadd(self.keys.hq_seen(), None, None, false, false, seen)
            .await?;
        let _: () = pipe.zadd(&net_key, None, None, false, false, seen).await?;
        let _: () = pipe.pexpire(&net_key, FLEET_TTL_MS as i64, None).await?;
        let _: Vec<Value> = pipe.all().await?;
        Ok(Ok(()))
    }

    /// The instances heard from in the last [`FLEET_TTL_MS`].
    pub async fn registered(self, now_ms: u64) -> StoreResult<Vec<WarriorRecord>> {
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
    pub async fn fleet_stats(self, now_ms: u64) -> StoreResult<FleetStats> {
        let fleet = self.registered(now_ms).await?;
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
        Ok(stats.capped())
    }

    /// Removes the instances whose last update is older than [`FLEET_TTL_MS`]. Two processes
    /// doing it at once remove the same ones: harmless.
    async fn forget_silent_warriors(self, now_ms: u64) -> StoreResult<()> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_checked_by_their_hash_and_derived_ids_by_who_sends_them() {
        let key = "k";
        let ids: Vec<u64> = (0..1000u64).map(|r| registered_id(key, r * 7919)).collect();
        for id in &ids {
            assert!(*id < 1 << 53, "JSON-safe");
            assert_eq!(registered_id(key, id >> MAC_BITS), *id, "checks");
            assert_ne!(registered_id("other", id >> MAC_BITS), *id, "another key");
        }
        // A guess (a neighbour of a real id) fails the check.
        let guess = ids[0] + 1;
        assert_ne!(registered_id(key, guess >> MAC_BITS), guess);
        let a = derived_id(key, "192.0.2.1", "ArchiveTeam Warrior/0.10.3 Warrior");
        assert_eq!(
            a,
            derived_id(key, "192.0.2.1", "ArchiveTeam Warrior/0.10.3 Warrior")
        );
        assert_ne!(
            a,
            derived_id(key, "192.0.2.2", "ArchiveTeam Warrior/0.10.3 Warrior")
        );
        assert!(a & DERIVED != 0 && a < 1 << 53);
    }
}
