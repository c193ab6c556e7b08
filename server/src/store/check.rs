//! `tracker check`: verifies a project's central invariant. Big keys (queues, claimed, done,
//! failed, claim records, decay scores) are read a page at a time with `SCAN`-family commands, so
//! no reply holds a key whole (a whole read of millions of members outlasted the client's
//! timeout and held Redis meanwhile); what it finds is still held in this process's memory, so a
//! project of hundreds of millions of items wants a machine to match.

use super::{scripts::Refusal, Store, StoreError, StoreResult};
use crate::keys::{ProjectKeys, PERSONAL, QUEUES};
use fred::prelude::*;
use std::collections::{HashMap, HashSet};

/// Members asked for per `SSCAN`/`ZSCAN`/`HSCAN` call.
const SCAN_PAGE: &str = "10000";

/// Every member of a set (`SSCAN`) or sorted set (`ZSCAN`), or every field of a hash
/// (`HSCAN`), with its value for the last two, read a page at a time. A scan may return a
/// member twice while the key changes: each is kept once (the last value read).
async fn scan_all(
    client: &Client,
    command: &'static str,
    key: &str,
) -> StoreResult<Vec<(String, String)>> {
    let mut seen: HashSet<String> = HashSet::new();
    let mut out = Vec::new();
    let mut cursor = "0".to_string();
    loop {
        let args = vec![key.to_string(), cursor, "COUNT".into(), SCAN_PAGE.into()];
        let (next, page): (String, Vec<String>) = client.custom(fred::cmd!(command), args).await?;
        let mut page = page.into_iter();
        while let Some(member) = page.next() {
            let value = match command {
                "SSCAN" => String::new(),
                _ => page.next().unwrap_or_default(),
            };
            if seen.insert(member.clone()) {
                out.push((member, value));
            }
        }
        if next == "0" {
            return Ok(out);
        }
        cursor = next;
    }
}

/// The members of a set or sorted set, or the fields of a hash, read as [`scan_all`] reads
/// them.
async fn scan_names(client: &Client, command: &'static str, key: &str) -> StoreResult<Vec<String>> {
    Ok(scan_all(client, command, key)
        .await?
        .into_iter()
        .map(|(m, _)| m)
        .collect())
}

/// The keys of the queue parts in claim order `order` (meta `queues`; `None`: the default), in
/// that order. Personal queues are not in it (see [`Store::personal_queues`]).
pub(super) fn queue_part_keys(k: &ProjectKeys, order: Option<&str>) -> Vec<String> {
    queue_parts(order).iter().map(|p| k.key(p)).collect()
}

/// The names of the queue parts (not personal queues) in claim order `order`.
pub fn queue_parts(order: Option<&str>) -> Vec<String> {
    let default = QUEUES.join(",");
    order
        .unwrap_or(&default)
        .split([',', ' '])
        .filter(|p| !p.is_empty())
        .map(String::from)
        .collect()
}

/// The violation, if any, of the count of items project `slug` knows (`None`: not kept) against
/// the `in_state` distinct items found in a state.
fn count_problem(slug: &str, known: Option<i64>, in_state: usize) -> Option<String> {
    let in_state = in_state as i64;
    let Some(known) = known else {
        // Not verified is not clean: a monitor reading exit codes must not take it for "no loss".
        return Some(format!(
            "item count not kept yet (a project from before it was): \
             `tracker check --recount {slug}` starts it from the {in_state} items in a state now"
        ));
    };
    match known.cmp(&in_state) {
        std::cmp::Ordering::Equal => None,
        std::cmp::Ordering::Greater => Some(format!(
            "project knows {known} items but {in_state} are in a state: {} lost",
            known - in_state
        )),
        std::cmp::Ordering::Less => Some(format!(
            "project knows {known} items but {in_state} are in a state: {} it never counted",
            in_state - known
        )),
    }
}

/// Decay scores (`item -> "score reclaims"`) that break the rules: kept only below 1, after
/// at least one reclaim, for items waiting or claimed (`places`: where each item is).
fn decay_problems(
    decay: &HashMap<String, String>,
    places: &HashMap<String, Vec<String>>,
) -> Vec<String> {
    let mut problems = Vec::new();
    for (item, raw) in decay {
        let at = places.get(item).map(Vec::as_slice).unwrap_or_default();
        if at.is_empty() || at.iter().any(|p| p == "done" || p == "failed") {
            let state = if at.is_empty() {
                "in no state".to_string()
            } else {
                at.join(", ")
            };
            problems.push(format!("item {item:?} has a decay score but is {state}"));
        }
        let readable = raw.split_once(' ').is_some_and(|(s, r)| {
            s.parse::<f64>().is_ok_and(|s| s > 0.0 && s < 1.0)
                && r.parse::<u64>().is_ok_and(|r| r >= 1)
        });
        if !readable {
            problems.push(format!(
                "item {item:?} has a decay score {raw:?}, not \"SCORE RECLAIMS\" below 1"
            ));
        }
    }
    problems
}

impl Store {
    /// Sets the count of items project `slug` knows to the number in a state now
    /// (`recount.lua`): for a project from before the count was kept, or after a reported loss
    /// is accepted. The count before (`None`: not kept) and after; `None` for no project.
    /// Like [`Store::check`], meant for a quiet moment.
    pub async fn recount(&self, slug: &str) -> StoreResult<Option<(Option<i64>, i64)>> {
        let k = self.keys.project(slug);
        let keys = vec![k.meta(), k.out(), k.done(), k.failed(), k.stats()];
        let mut personal = self.personal_queues(slug).await?;
        // A personal queue made between the scan and the script would be missed: scan again
        // after, and count again if one appeared (a few tries; they are made by hand).
        let mut tries = 0;
        loop {
            tries += 1;
            let mut args = vec![Value::from(k.prefix())];
            args.extend(
                personal
                    .iter()
                    .filter_map(|key| key.strip_prefix(k.prefix()))
                    .map(Value::from),
            );
            /// What `recount.lua` answers.
            #[derive(serde::Deserialize)]
            struct Recounted {
                before: Option<i64>,
                now: i64,
            }
            let counts = match self
                .scripts
                .call::<Recounted>(self.pool.next(), &self.scripts.recount, keys.clone(), args)
                .await?
            {
                Ok(counts) => counts,
                Err(Refusal::NoProject) => return Ok(None),
                Err(refusal) => return Err(StoreError::Refused(refusal)),
            };
            let again = self.personal_queues(slug).await?;
            if tries >= 3 || again.iter().all(|q| personal.contains(q)) {
                return Ok(Some((counts.before, counts.now)));
            }
            personal = again;
        }
    }

    /// The names of the personal queues (`todo:d:<downloader>`) of a project, as key names.
    pub(super) async fn personal_queues(&self, slug: &str) -> StoreResult<Vec<String>> {
        let k = self.keys.project(slug);
        let pattern = format!("{}{PERSONAL}*", k.prefix());
        let (mut cursor, mut keys) = ("0".to_string(), Vec::new());
        loop {
            let (next, page): (String, Vec<String>) = self
                .pool
                .next()
                .scan_page(cursor, pattern.as_str(), Some(1000), None)
                .await?;
            keys.extend(page);
            if next == "0" {
                return Ok(keys);
            }
            cursor = next;
        }
    }

    /// Every violation of the invariant in project `slug` (empty when it holds): every item in
    /// exactly one of the queues, the claimed set, done or failed, in Redis or in a registered
    /// segment on disk (each segment whole, as its entry says); as many items in a state as
    /// the project knows (added minus dropped: nothing lost); claim records matching the
    /// claimed set; decay scores only for items waiting or claimed; counters matching what
    /// they count.
    pub async fn check(&self, slug: &str) -> StoreResult<Vec<String>> {
        let k = self.keys.project(slug);
        let client = self.pool.next();
        let meta: HashMap<String, String> = client.hgetall(k.meta()).await?;
        if !meta.contains_key("title") {
            return Ok(vec![format!("no project {slug}")]);
        }
        let mut places: HashMap<String, Vec<String>> = HashMap::new();
        let mut queue_keys = queue_part_keys(&k, meta.get("queues").map(String::as_str));
        let personal = self.personal_queues(slug).await?;
        let mut personal_total = 0;
        for key in &personal {
            let n: u64 = client.zcard(key).await?;
            personal_total += n;
        }
        queue_keys.extend(personal);
        for key in &queue_keys {
            for item in scan_names(client, "ZSCAN", key).await? {
                places.entry(item).or_default().push(key.clone());
            }
        }
        let out = scan_names(client, "ZSCAN", &k.out()).await?;
        let done = scan_names(client, "SSCAN", &k.done()).await?;
        let failed = scan_names(client, "HSCAN", &k.failed()).await?;
        for (list, name) in [(&out, "out"), (&done, "done"), (&failed, "failed")] {
            for item in list.iter() {
                places
                    .entry(item.clone())
                    .or_default()
                    .push(name.to_string());
            }
        }
        // On disk: done and queue segments by name (a queue segment's first `restored` records
        // are back in Redis), discard segments by count.
        let disk = self.on_disk(slug).await?;
        let restored = self.restored_counts(slug).await?;
        let (mut disk_done, mut disk_todo, mut discarded) = (0i64, 0i64, 0usize);
        let mut problems: Vec<String> = Vec::new();
        for seg in &disk.segments {
            if seg.file.records() != seg.entry.count {
                problems.push(format!(
                    "segment {} holds {} records, its entry says {}",
                    seg.id,
                    seg.file.records(),
                    seg.entry.count
                ));
            }
            match seg.entry.kind.as_str() {
                "discard" => {
                    discarded += seg.entry.count as usize;
                    disk_done += seg.entry.count as i64;
                }
                kind => {
                    let skip = if kind == "queue" {
                        restored.get(&seg.id).copied().unwrap_or(0)
                    } else {
                        0
                    };
                    let (file, place) = (seg.file.clone(), format!("disk {kind} {}", seg.id));
                    let records = tokio::task::spawn_blocking(move || file.all())
                        .await
                        .map_err(|e| StoreError::Disk(e.to_string()))?
                        .map_err(|e| StoreError::Disk(e.to_string()))?;
                    let n = records.len().saturating_sub(skip as usize) as i64;
                    if kind == "queue" {
                        disk_todo += n;
                    } else {
                        disk_done += n;
                    }
                    for (item, _) in records.into_iter().skip(skip as usize) {
                        places.entry(item).or_default().push(place.clone());
                    }
                }
            }
        }
        problems.extend(
            places.iter().filter(|(_, p)| p.len() > 1).map(|(item, p)| {
                format!("item {item:?} is in {} places: {}", p.len(), p.join(", "))
            }),
        );
        let decay: HashMap<String, String> = scan_all(client, "HSCAN", &k.decay())
            .await?
            .into_iter()
            .collect();
        problems.extend(decay_problems(&decay, &places));

        let claims: HashMap<String, String> = scan_all(client, "HSCAN", &k.claims())
            .await?
            .into_iter()
            .collect();
        let mut held: HashMap<String, i64> = HashMap::new();
        for item in &out {
            match claims
                .get(item)
                .and_then(|c| serde_json::from_str::<serde_json::Value>(c).ok())
            {
                Some(c) => {
                    *held
                        .entry(c["d"].as_str().unwrap_or_default().to_string())
                        .or_default() += 1
                }
                None => problems.push(format!("claimed item {item:?} has no claim record")),
            }
        }
        if claims.len() != out.len() {
            problems.push(format!(
                "{} claim records for {} claimed items",
                claims.len(),
                out.len()
            ));
        }
        let counted: HashMap<String, i64> = client.hgetall(k.dl_claims()).await?;
        for (who, n) in counted.iter().filter(|(_, n)| **n != 0) {
            if held.get(who) != Some(n) {
                problems.push(format!(
                    "dl:claims says {who} holds {n}, claims say {}",
                    held.get(who).unwrap_or(&0)
                ));
            }
        }
        for (who, n) in &held {
            if counted.get(who) != Some(n) {
                problems.push(format!(
                    "{who} holds {n} claims, dl:claims says {}",
                    counted.get(who).unwrap_or(&0)
                ));
            }
        }

        let stats: HashMap<String, i64> = client.hgetall(k.stats()).await?;
        let done_items = stats.get("done_items").copied().unwrap_or(0);
        if done_items != done.len() as i64 + disk_done {
            problems.push(format!(
                "stats.done_items is {done_items}, done holds {} and the disk {disk_done}",
                done.len()
            ));
        }
        for (field, found) in [("disk_done", disk_done), ("disk_todo", disk_todo)] {
            let kept = stats.get(field).copied().unwrap_or(0);
            if kept != found {
                problems.push(format!(
                    "stats.{field} is {kept}, the segments hold {found}"
                ));
            }
        }
        let per_downloader: Vec<(String, f64)> = client
            .zrange(k.dl_items(), 0, -1, None, false, None, true)
            .await?;
        let sum: f64 = per_downloader.iter().map(|(_, n)| n).sum();
        if sum as i64 != done_items {
            problems.push(format!(
                "downloaders' items sum to {sum}, stats.done_items is {done_items}"
            ));
        }
        let pq = stats.get("pq").copied().unwrap_or(0);
        if pq != personal_total as i64 {
            problems.push(format!(
                "stats.pq is {pq}, personal queues hold {personal_total}"
            ));
        }
        // Loss: the items found in a state (each once, so that an item both lost and
        // duplicated elsewhere still shows) against the count the scripts keep.
        if let Some(problem) =
            count_problem(slug, stats.get("known").copied(), places.len() + discarded)
        {
            problems.push(problem);
        }
        problems.sort();
        Ok(problems)
    }
}
