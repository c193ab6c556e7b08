//! `tracker check`: verifies a project's central invariant in bounded memory, while the project
//! serves. Big keys (queues, claimed, done, failed, claim records, decay scores) are read a page
//! at a time with `SCAN`-family commands and each page is looked up where it must not also be;
//! segments on disk are streamed and looked up in each other's indexes. What a page finds is
//! looked at again in one atomic step (`places.lua`) before it is reported, and the counts come
//! from one atomic step too.

mod disk;
mod look;
mod problems;
use problems::{count_problem, decay_problems, gap_text, tally_problems};

use super::{helpers::queue_parts, scripts::Refusal, StoreError, StoreResult};
use crate::keys::PERSONAL;
use disk::{blocking, DiskIndex};
use fred::prelude::*;
use look::{Counts, Look};
use std::{
    collections::{BTreeSet, HashMap},
    sync::Arc,
};

/// Members asked for per `SSCAN`/`ZSCAN`/`HSCAN` call.
const SCAN_PAGE: &str = "10000";
/// Items per look of `places.lua` (Lua's `unpack` takes a few thousand at most).
const PLACES_CHUNK: usize = 1000;
/// Claimed sets up to this size are tallied in one atomic look (`places.lua`'s `claims`, about
/// 2 µs a claim of Redis's time); bigger ones a page at a time, read again while they disagree.
const ATOMIC_CLAIMS: i64 = 200_000;

/// What `places.lua` answers in its `claims` mode.
#[derive(serde::Deserialize)]
struct ClaimTally {
    held: HashMap<String, i64>,
    counted: HashMap<String, i64>,
    missing: Vec<String>,
}

/// A key's members (`SSCAN`, `ZSCAN`) or fields (`HSCAN`), with their scores or values, a
/// page at a time. A scan may return a member twice while the key changes.
struct Scan<'a> {
    client: &'a Client,
    command: &'static str,
    key: String,
    cursor: Option<String>,
}

impl<'a> Scan<'a> {
    fn new(client: &'a Client, command: &'static str, key: &str) -> Self {
        Self {
            client,
            command,
            key: key.to_string(),
            cursor: Some("0".into()),
        }
    }

    /// The next page, or `None` after the last.
    async fn next_page(&mut self) -> StoreResult<Option<Vec<(String, String)>>> {
        let Some(cursor) = self.cursor.take() else {
            return Ok(None);
        };
        let args = vec![self.key.clone(), cursor, "COUNT".into(), SCAN_PAGE.into()];
        let (next, page): (String, Vec<String>) =
            self.client.custom(fred::cmd!(self.command), args).await?;
        let mut members = page.into_iter();
        let mut out = Vec::new();
        while let Some(member) = members.next() {
            let value = match self.command {
                "SSCAN" => String::new(),
                _ => members.next().unwrap_or_default(),
            };
            out.push((member, value));
        }
        self.cursor = (next != "0").then_some(next);
        Ok(Some(out))
    }
}

/// The type of a state's key.
#[derive(Clone, Copy)]
enum Kind {
    Zset,
    Set,
    Hash,
}

impl Kind {
    fn scan(self) -> &'static str {
        match self {
            Kind::Zset => "ZSCAN",
            Kind::Set => "SSCAN",
            Kind::Hash => "HSCAN",
        }
    }
}

/// Which of `names` the key of a state holds, in their order (one variadic call per
/// [`PLACES_CHUNK`]).
async fn present(
    client: &Client,
    kind: Kind,
    key: &str,
    names: &[String],
) -> StoreResult<Vec<bool>> {
    let mut out = Vec::with_capacity(names.len());
    for chunk in names.chunks(PLACES_CHUNK) {
        let command = match kind {
            Kind::Zset => "ZMSCORE",
            Kind::Set => "SMISMEMBER",
            Kind::Hash => "HMGET",
        };
        let mut args = vec![key.to_string()];
        args.extend(chunk.iter().cloned());
        let replies: Vec<Value> = client.custom(fred::cmd!(command), args).await?;
        out.extend(replies.into_iter().map(|v| match kind {
            Kind::Set => v.as_i64() == Some(1),
            _ => !v.is_null(),
        }));
    }
    Ok(out)
}

impl super::Upkeep<'_> {
    /// Sets the count of items project `slug` knows to the number in a state now
    /// (`recount.lua`): for a project from before the count was kept, or after a reported loss
    /// is accepted. The count before (`None`: not kept) and after; `None` for no project.
    /// Like [`crate::store::upkeep::Upkeep::check`], meant for a quiet moment.
    pub async fn recount(self, slug: &str) -> StoreResult<Option<(Option<i64>, i64)>> {
        let k = self.keys.project(slug);
        let keys = k.recount_keys();
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
    pub(in crate::store) async fn personal_queues(self, slug: &str) -> StoreResult<Vec<String>> {
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
    ///
    /// In bounded memory, while the project serves: every big key is read a page at a time
    /// and each page is looked up in the states after it (in Redis with variadic lookups, on
    /// disk in the segments' indexes), so nothing holds every name. What a page finds in two
    /// places is looked at again in one atomic step (`places.lua`) before it is reported, and
    /// the counts come from one atomic step too, so items moving while the check runs are
    /// not reported. Counts that disagree, which the offloader moving items between Redis and
    /// disk meanwhile could cause, are read again before they are reported.
    pub async fn check(self, slug: &str) -> StoreResult<Vec<String>> {
        self.check_with(slug, &|_, _| {}).await
    }

    /// [`crate::store::upkeep::Upkeep::check`], telling `progress(members scanned, members in all)` after each page
    /// of the Redis states it scans for items in two places (the longest part of a big check).
    pub async fn check_with(
        self,
        slug: &str,
        progress: &(dyn Fn(u64, u64) + Send + Sync),
    ) -> StoreResult<Vec<String>> {
        let k = self.keys.project(slug);
        let client = self.pool.next();
        let meta: HashMap<String, String> = client.hgetall(k.meta()).await?;
        if !meta.contains_key("title") {
            return Ok(vec![format!("no project {slug}")]);
        }
        let mut parts = queue_parts(meta.get("queues").map(String::as_str));
        let personal = self.personal_queues(slug).await?;
        let personal_parts: Vec<String> = personal
            .iter()
            .filter_map(|key| key.strip_prefix(k.prefix()).map(String::from))
            .collect();
        parts.extend(personal_parts.iter().cloned());
        let look = Look {
            store: &self,
            k: &k,
            parts: &parts,
        };
        let mut problems: Vec<String> = Vec::new();
        let disk = self.offload().on_disk(slug).await?;
        let restored = self.offload().restored_counts(slug).await?;
        let segs = Arc::new(DiskIndex::open(&disk, &restored).await?);
        for seg in &disk.segments {
            if seg.file.records() != seg.entry.count {
                problems.push(format!(
                    "segment {} holds {} records, its entry says {}",
                    seg.id,
                    seg.file.records(),
                    seg.entry.count
                ));
            }
        }

        // Items in two places: each Redis state a page at a time against the states after it
        // and the disk, then each segment against the segments after it.
        let mut candidates: BTreeSet<String> = BTreeSet::new();
        let states = look.states();
        let mut total = 0u64;
        for (_, key, kind) in &states {
            let n: u64 = match kind {
                Kind::Zset => client.zcard(key).await?,
                Kind::Set => client.scard(key).await?,
                Kind::Hash => client.hlen(key).await?,
            };
            total += n;
        }
        let mut scanned = 0u64;
        for (i, (_, key, kind)) in states.iter().enumerate() {
            let mut scan = Scan::new(client, kind.scan(), key);
            while let Some(page) = scan.next_page().await? {
                let names: Vec<String> = page.into_iter().map(|(m, _)| m).collect();
                scanned += names.len() as u64;
                progress(scanned, total.max(scanned));
                for (_, later, later_kind) in &states[i + 1..] {
                    let held = present(client, *later_kind, later, &names).await?;
                    candidates.extend(
                        names
                            .iter()
                            .zip(held)
                            .filter(|(_, h)| *h)
                            .map(|(n, _)| n.clone()),
                    );
                }
                let on_disk = segs.clone();
                let found = blocking(move || on_disk.held_anywhere(&names)).await?;
                candidates.extend(found);
            }
        }
        let on_disk = segs.clone();
        candidates.extend(blocking(move || on_disk.held_twice()).await?);

        let mut extra = 0usize;
        let names: Vec<String> = candidates.into_iter().collect();
        for chunk in names.chunks(PLACES_CHUNK) {
            let places = look.places(chunk, &segs).await?;
            for (item, at) in chunk.iter().zip(places) {
                if at.places.len() > 1 {
                    extra += at.places.len() - 1;
                    problems.push(format!(
                        "item {item:?} is in {} places: {}",
                        at.places.len(),
                        at.places.join(", ")
                    ));
                }
            }
        }

        // Decay scores, a page at a time.
        let mut scan = Scan::new(client, "HSCAN", &k.decay());
        while let Some(page) = scan.next_page().await? {
            let decay: HashMap<String, String> = page.into_iter().collect();
            let items: Vec<String> = decay.keys().cloned().collect();
            let mut places: HashMap<String, Vec<String>> = HashMap::new();
            for chunk in items.chunks(PLACES_CHUNK) {
                for (item, at) in chunk.iter().zip(look.places(chunk, &segs).await?) {
                    places.insert(item.clone(), at.places);
                }
            }
            problems.extend(decay_problems(&decay, &places));
        }

        // Claims: each claimed item's record and who holds it, against `dl:claims`: in one
        // atomic look up to ATOMIC_CLAIMS; beyond, a page at a time, read again (a few times)
        // while they disagree, as claims made and ended meanwhile would.
        let claimed: i64 = client.zcard(k.out()).await?;
        if claimed <= ATOMIC_CLAIMS {
            let tally: ClaimTally = look.ask("claims").await?;
            problems.extend(
                tally
                    .missing
                    .iter()
                    .map(|item| format!("claimed item {item:?} has no claim record")),
            );
            problems.extend(tally_problems(&tally.held, &tally.counted));
        } else {
            let mut claim_problems = Vec::new();
            for _ in 0..3 {
                claim_problems = look.claim_problems(&segs).await?;
                if claim_problems.is_empty() {
                    break;
                }
            }
            problems.extend(claim_problems);
        }

        // Counts, from one atomic look; read again while they disagree.
        let mut count_problems = Vec::new();
        for attempt in 0..3 {
            let (disk_done, disk_todo, disk_items) = if attempt == 0 {
                segs.counts()
            } else {
                let disk = self.offload().on_disk(slug).await?;
                let restored = self.offload().restored_counts(slug).await?;
                DiskIndex::open(&disk, &restored).await?.counts()
            };
            let c: Counts = look.ask("count").await?;
            count_problems = Vec::new();
            let done_items = c.done_items;
            if done_items != c.done + disk_done + c.done_gap {
                count_problems.push(format!(
                    "stats.done_items is {done_items}, done holds {} and the disk {disk_done}{}",
                    c.done,
                    gap_text(
                        c.done_gap,
                        "counted done by the tracker it was migrated from"
                    )
                ));
            }
            for (field, kept, found) in [
                ("disk_done", c.disk_done, disk_done),
                ("disk_todo", c.disk_todo, disk_todo),
            ] {
                if kept != found {
                    count_problems.push(format!(
                        "stats.{field} is {kept}, the segments hold {found}"
                    ));
                }
            }
            if c.dl_items + c.dl_gap != done_items {
                count_problems.push(format!(
                    "downloaders' items sum to {}, stats.done_items is {done_items}{}",
                    c.dl_items,
                    gap_text(
                        c.dl_gap,
                        "not credited to anyone by the tracker it was migrated from"
                    )
                ));
            }
            let personal_total: i64 = c.parts[parts.len() - personal_parts.len()..].iter().sum();
            if c.pq != personal_total {
                count_problems.push(format!(
                    "stats.pq is {}, personal queues hold {personal_total}",
                    c.pq
                ));
            }
            if c.claims != c.out {
                count_problems.push(format!(
                    "{} claim records for {} claimed items",
                    c.claims, c.out
                ));
            }
            // Loss: the items found in a state, each once (an item both lost and duplicated
            // elsewhere still shows), against the count the scripts keep.
            let in_state = c.parts.iter().sum::<i64>() + c.out + c.done + c.failed + disk_items;
            let in_state = (in_state as usize).saturating_sub(extra);
            count_problems.extend(count_problem(slug, c.known, in_state));
            if count_problems.is_empty() {
                break;
            }
        }
        problems.extend(count_problems);
        problems.sort();
        Ok(problems)
    }
}
