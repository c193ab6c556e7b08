//! A project's states as `tracker check` looks at them: the Redis states in order, and the
//! atomic looks of `places.lua` (counts, places of items, the claims tally).

use super::super::{Store, StoreError, StoreResult};
use super::{disk::blocking, disk::DiskIndex, tally_problems, Kind, Scan, PLACES_CHUNK};
use crate::keys::ProjectKeys;
use fred::prelude::*;
use std::{collections::HashMap, sync::Arc};

/// What `places.lua` counts, in one atomic look.
#[derive(serde::Deserialize)]
pub(super) struct Counts {
    pub(super) parts: Vec<i64>,
    pub(super) out: i64,
    pub(super) done: i64,
    pub(super) failed: i64,
    pub(super) claims: i64,
    pub(super) known: Option<i64>,
    pub(super) done_items: i64,
    pub(super) disk_done: i64,
    pub(super) disk_todo: i64,
    pub(super) pq: i64,
    pub(super) dl_items: i64,
    /// Items a migrated project's old tracker counted done but no longer listed.
    #[serde(default)]
    pub(super) done_gap: i64,
    /// Items done less the downloaders' items, as the old tracker's counts had them.
    #[serde(default)]
    pub(super) dl_gap: i64,
}

/// Where one item is, in Redis and on disk, and whether it has a claim record.
pub(super) struct Places {
    pub(super) places: Vec<String>,
    pub(super) record: bool,
}

/// A project's states as the check looks at them.
pub(super) struct Look<'a> {
    pub(super) store: &'a Store,
    pub(super) k: &'a ProjectKeys,
    /// Queue parts, then personal queues, without the prefix.
    pub(super) parts: &'a [String],
}

impl Look<'_> {
    /// Every Redis state in order: (what the problems call it, key, kind).
    pub(super) fn states(&self) -> Vec<(String, String, Kind)> {
        let mut states: Vec<(String, String, Kind)> = self
            .parts
            .iter()
            .map(|p| (self.k.key(p), self.k.key(p), Kind::Zset))
            .collect();
        states.push(("out".into(), self.k.out(), Kind::Zset));
        states.push(("done".into(), self.k.done(), Kind::Set));
        states.push(("failed".into(), self.k.failed(), Kind::Hash));
        states
    }

    pub(super) fn keys(&self) -> Vec<String> {
        self.k.places_keys()
    }

    pub(super) fn args(&self, mode: &str) -> Vec<Value> {
        let mut args = vec![
            Value::from(self.k.prefix()),
            Value::from(mode),
            Value::from(self.parts.len() as i64),
        ];
        args.extend(self.parts.iter().map(|p| Value::from(p.as_str())));
        args
    }

    /// `places.lua`'s answer in `mode` (`count` or `claims`).
    pub(super) async fn ask<T: serde::de::DeserializeOwned>(&self, mode: &str) -> StoreResult<T> {
        let s = &self.store.scripts;
        s.call::<T>(
            self.store.pool.next(),
            &s.places,
            self.keys(),
            self.args(mode),
        )
        .await?
        .map_err(StoreError::Refused)
    }

    /// Where each of `items` (at most [`PLACES_CHUNK`]) is: Redis in one atomic look, then disk.
    pub(super) async fn places(
        &self,
        items: &[String],
        disk: &Arc<DiskIndex>,
    ) -> StoreResult<Vec<Places>> {
        let mut args = self.args("places");
        args.extend(items.iter().map(|i| Value::from(i.as_str())));
        let s = &self.store.scripts;
        let raw = s
            .call::<Vec<String>>(self.store.pool.next(), &s.places, self.keys(), args)
            .await?
            .map_err(StoreError::Refused)?;
        let states = self.states();
        let names = items.to_vec();
        let on_disk = disk.clone();
        let disk_places = blocking(move || {
            names
                .iter()
                .map(|n| on_disk.places(n))
                .collect::<std::io::Result<Vec<_>>>()
        })
        .await?;
        Ok(raw
            .into_iter()
            .zip(disk_places)
            .map(|(held, disk)| {
                let (held, record) = match held.strip_suffix("|c") {
                    Some(h) => (h.to_string(), true),
                    None => (held, false),
                };
                let mut places: Vec<String> = held
                    .split(',')
                    .filter_map(|i| i.parse::<usize>().ok())
                    .filter_map(|i| states.get(i.wrapping_sub(1)).map(|s| s.0.clone()))
                    .collect();
                places.extend(disk);
                Places { places, record }
            })
            .collect())
    }

    /// Claimed items without a claim record, and who holds how many against `dl:claims`.
    pub(super) async fn claim_problems(&self, disk: &Arc<DiskIndex>) -> StoreResult<Vec<String>> {
        let client = self.store.pool.next();
        let mut problems = Vec::new();
        let mut held: HashMap<String, i64> = HashMap::new();
        let mut scan = Scan::new(client, "ZSCAN", &self.k.out());
        while let Some(page) = scan.next_page().await? {
            let names: Vec<String> = page.into_iter().map(|(m, _)| m).collect();
            for chunk in names.chunks(PLACES_CHUNK) {
                let records: Vec<Option<String>> =
                    client.hmget(self.k.claims(), chunk.to_vec()).await?;
                let mut missing = Vec::new();
                for (item, record) in chunk.iter().zip(records) {
                    // A member the scan returns twice (while the key changes under it) counts
                    // twice: the caller reads again while the counts disagree.
                    match record.and_then(|c| serde_json::from_str::<serde_json::Value>(&c).ok()) {
                        Some(c) => {
                            *held
                                .entry(c["d"].as_str().unwrap_or_default().to_string())
                                .or_default() += 1
                        }
                        None => missing.push(item.clone()),
                    }
                }
                // Still claimed, still without a record, in one atomic look?
                for (item, at) in missing.iter().zip(self.places(&missing, disk).await?) {
                    if at.places.iter().any(|p| p == "out") && !at.record {
                        problems.push(format!("claimed item {item:?} has no claim record"));
                    }
                }
            }
        }
        let counted: HashMap<String, i64> = client.hgetall(self.k.dl_claims()).await?;
        problems.extend(tally_problems(&held, &counted));
        Ok(problems)
    }
}
