//! What each backfeed key of a project fed (`ns:{SLUG}:fed`): a project fed by several grab
//! scripts has a key for each, and the panel shows which fed how many records. A statistic,
//! written after the records are queued: a crash in between loses a count, never an item.

use super::{projects::guarded::command, StoreResult};
use app::model::admin::BackfeedKeyUse;
use fred::prelude::*;
use sha2::{Digest, Sha256};
use std::collections::HashMap;

/// A backfeed key's id: the first 8 hex digits of its SHA-256 (names it without showing it).
pub fn key_id(secret: &str) -> String {
    let digest = Sha256::digest(secret.as_bytes());
    digest[..4].iter().map(|b| format!("{b:02x}")).collect()
}

impl super::Queue<'_> {
    /// Counts `records` (of which `added` new) fed under the key `id` of `slug` at `now_ms`.
    pub async fn count_fed(
        self,
        slug: &str,
        id: &str,
        records: u64,
        added: u64,
        now_ms: u64,
    ) -> StoreResult<()> {
        let key = self.keys.project(slug).fed();
        let (records, added, now) = (records.to_string(), added.to_string(), now_ms.to_string());
        let commands = vec![
            command(["HINCRBY", &key, &format!("{id}:records"), &records]),
            command(["HINCRBY", &key, &format!("{id}:added"), &added]),
            command(["HSET", &key, &format!("{id}:last"), &now]),
        ];
        self.projects().write_in_project(slug, commands).await?;
        Ok(())
    }

    /// The keys of `keys` (comma-separated, as in the settings) with what each fed; secrets
    /// left out when `hide`.
    pub async fn fed_by_keys(
        self,
        slug: &str,
        keys: &str,
        hide: bool,
    ) -> StoreResult<Vec<BackfeedKeyUse>> {
        let fed: HashMap<String, u64> = self
            .pool
            .next()
            .hgetall(self.keys.project(slug).fed())
            .await?;
        let get = |id: &str, what: &str| fed.get(&format!("{id}:{what}")).copied().unwrap_or(0);
        Ok(keys
            .split(',')
            .filter(|k| !k.is_empty())
            .map(|k| {
                let id = key_id(k);
                BackfeedKeyUse {
                    records: get(&id, "records"),
                    added: get(&id, "added"),
                    last: get(&id, "last"),
                    key: if hide { String::new() } else { k.to_string() },
                    id,
                }
            })
            .collect())
    }

    /// Forgets what the keys `ids` of `slug` fed (they were revoked or rotated), in one call.
    pub async fn forget_fed(self, slug: &str, ids: &[String]) -> StoreResult<()> {
        if ids.is_empty() {
            return Ok(());
        }
        let fields: Vec<String> = ids
            .iter()
            .flat_map(|id| ["records", "added", "last"].map(|w| format!("{id}:{w}")))
            .collect();
        let _: () = self
            .pool
            .next()
            .hdel(self.keys.project(slug).fed(), fields)
            .await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_key_id_is_short_stable_and_tells_keys_apart() {
        let a = super::key_id("s3cret");
        assert_eq!(a.len(), 8);
        assert_eq!(a, super::key_id("s3cret"));
        assert_ne!(a, super::key_id("s3cres"));
    }
}
