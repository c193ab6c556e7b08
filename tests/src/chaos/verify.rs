//! The proof after a chaos run: what the tracker holds against what the warriors were told.
//!
//! ```text
//! counts      todo 0, out 0, failed 0, done N; the done set holds exactly the N items
//! credit      each item's timeline ends in one `done` line naming its downloader; per
//!             downloader, those items number its `dl:items` total, and the totals sum to N
//! OKs         every item credited to a downloader is one that downloader was told OK for
//!             (a duplicate report, say a late one after a reclaim, is told OK and not
//!             credited); every item told OK is done (no acknowledged loss); every item was
//!             told OK to someone
//! disk        an item not in Redis's done set is looked up in the registered segments (every
//!             file opened, the item found with its timeline), and the items found there number
//!             the project's `disk_done`
//! counters    `done_items` is N; the completion log (archive files, then Redis) names every
//!             item exactly once and no entry twice; per downloader its entries' items and
//!             bytes are its `dl:items` and `dl:bytes`; per domain its bytes are the
//!             `domain_bytes`; all bytes sum to `done_bytes`, `dl:bytes` and `domain_bytes` alike
//! check       `Store::check` (and `tracker check`, run by the caller) finds nothing
//! ```

use super::{item_index, item_name, warrior::Ledger};
use fred::prelude::*;
use server::store::Store;
use std::collections::{HashMap, HashSet};

mod log;
use log::log_entries;

/// Items per Redis read.
const CHUNK: usize = 5000;
/// Items named in one complaint, at most.
const NAMED: usize = 10;

/// What the proof counted.
#[derive(Debug, Default)]
pub struct Verdict {
    /// Items in the done set.
    pub done: u64,
    /// Items told OK, counted once per warrior told (a warrior told OK twice for an item
    /// counts it once).
    pub told_ok: u64,
    /// Items told OK to more than one warrior.
    pub told_twice: u64,
    /// Downloaders credited with items.
    pub downloaders: usize,
    /// Items reported late and credited to their late sender (the others were duplicates of
    /// a report made after the reclaim).
    pub late_credited: u64,
    /// Items reported late.
    pub late: u64,
    /// Done items found in segment files (offloaded) rather than in Redis.
    pub on_disk: u64,
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "proof: {} items done ({} of them read back from segment files), {} credited downloaders, {} (item, warrior) OKs, {} items told OK to two warriors, {} late reports of which {} credited to the late sender",
            self.done, self.on_disk, self.downloaders, self.told_ok, self.told_twice, self.late, self.late_credited
        )
    }
}

/// "N items ...: a, b, c" with at most [`NAMED`] names.
fn some(what: &str, items: &[String]) -> String {
    let shown: Vec<&str> = items.iter().take(NAMED).map(String::as_str).collect();
    format!("{} items {what}: {}", items.len(), shown.join(", "))
}

/// The downloader of the `done` line that ends an item's timeline ("time event who version").
fn done_by(timeline: &str) -> Option<&str> {
    let last = timeline.lines().last()?;
    let mut f = last.split(' ');
    let (_, event, who) = (f.next()?, f.next()?, f.next()?);
    (event == "done").then_some(who)
}

/// Proves what project `slug` of `n` items holds after a run whose warriors were told what
/// `ledgers` say: the figures, and every violation found.
/// The completion log archives of the project are read from `archives` (the project's own
/// archive directory), if given.
pub async fn verify(
    store: &Store,
    slug: &str,
    n: usize,
    ledgers: &[Ledger],
    archives: Option<&server::store::offload::offloader::archive::Archives>,
) -> (Verdict, Vec<String>) {
    let mut v = Verdict::default();
    let mut problems = Vec::new();
    // The completion log entries the processes left unfolded (killed, or not yet), folded:
    // each exactly once, as the per-downloader totals below must show.
    match store.figures().fold(slug).await {
        Ok(_) => match store.figures().unfolded(slug).await {
            Ok((0, 0)) => {}
            Ok(left) => problems.push(format!("log entries left unfolded: {left:?}")),
            Err(e) => problems.push(format!("the fold's count could not be read: {e}")),
        },
        Err(e) => problems.push(format!("the completion log could not be folded: {e}")),
    }
    match prove(store, slug, n, ledgers, &mut v, &mut problems).await {
        Ok(()) => {}
        Err(e) => problems.push(format!("the proof could not read redis: {e}")),
    }
    match counters(store, slug, n, archives, &mut problems).await {
        Ok(()) => {}
        Err(e) => problems.push(format!("the counters' proof could not read: {e}")),
    }
    problems.sort();
    problems.dedup();
    (v, problems)
}

/// The proof of the counters: items and bytes, per downloader, per domain and in all, against
/// the completion log.
async fn counters(
    store: &Store,
    slug: &str,
    n: usize,
    archives: Option<&server::store::offload::offloader::archive::Archives>,
    problems: &mut Vec<String>,
) -> Result<(), String> {
    let f = |e: fred::error::Error| e.to_string();
    let k = store.keys().project(slug);
    let client = store.client();
    let stats: HashMap<String, String> = client.hgetall(k.stats()).await.map_err(f)?;
    let stat = |name: &str| -> u64 { stats.get(name).and_then(|v| v.parse().ok()).unwrap_or(0) };
    if stat("done_items") != n as u64 {
        problems.push(format!(
            "done_items is {}, not {n}: items counted {}",
            stat("done_items"),
            if stat("done_items") > n as u64 {
                "twice"
            } else {
                "not at all"
            }
        ));
    }
    let entries = log_entries(store, slug, archives).await?;
    let mut ids = HashSet::new();
    let mut twice_logged = Vec::new();
    let mut logged: HashMap<&str, u32> = HashMap::new();
    let (mut dl_items, mut dl_bytes, mut dom_bytes) = (
        HashMap::<&str, u64>::new(),
        HashMap::<&str, u64>::new(),
        HashMap::<&str, u64>::new(),
    );
    let mut total = 0u64;
    for e in &entries {
        if !ids.insert(e.id.as_str()) {
            twice_logged.push(e.id.clone());
        }
        for item in &e.items {
            *logged.entry(item.as_str()).or_default() += 1;
        }
        *dl_items.entry(e.who.as_str()).or_default() += e.items.len() as u64;
        for (d, b) in &e.bytes {
            *dl_bytes.entry(e.who.as_str()).or_default() += b;
            *dom_bytes.entry(d.as_str()).or_default() += b;
            total += b;
        }
    }
    if !twice_logged.is_empty() {
        problems.push(some("log entries archived or kept twice", &twice_logged));
    }
    let twice: Vec<String> = logged
        .iter()
        .filter(|(_, &c)| c > 1)
        .map(|(i, _)| i.to_string())
        .collect();
    if !twice.is_empty() {
        problems.push(some("counted in two completion log entries", &twice));
    }
    let unlogged: Vec<String> = (0..n)
        .map(item_name)
        .filter(|i| !logged.contains_key(i.as_str()))
        .collect();
    if !unlogged.is_empty() {
        problems.push(some("in no completion log entry", &unlogged));
    }
    if stat("done_bytes") != total {
        problems.push(format!(
            "done_bytes is {}, the completion log's bytes sum to {total}",
            stat("done_bytes")
        ));
    }
    let zset = |key: String| async move {
        let all: Vec<(String, f64)> = client
            .zrange(key, 0, -1, None, false, None, true)
            .await
            .map_err(f)?;
        Ok::<HashMap<String, u64>, String>(all.into_iter().map(|(w, s)| (w, s as u64)).collect())
    };
    let totals_items = zset(k.dl_items()).await?;
    let totals_bytes = zset(k.dl_bytes()).await?;
    let domains: HashMap<String, u64> = {
        let raw: HashMap<String, String> = client.hgetall(k.domain_bytes()).await.map_err(f)?;
        raw.into_iter()
            .map(|(d, b)| (d, b.parse().unwrap_or(0)))
            .collect()
    };
    for (name, ours, theirs) in [
        ("dl:items", &dl_items, &totals_items),
        ("dl:bytes", &dl_bytes, &totals_bytes),
        ("domain_bytes", &dom_bytes, &domains),
    ] {
        let keys: HashSet<&str> = ours
            .keys()
            .copied()
            .chain(theirs.keys().map(String::as_str))
            .collect();
        for key in keys {
            let (log, counted) = (
                ours.get(key).copied().unwrap_or(0),
                theirs.get(key).copied().unwrap_or(0),
            );
            if log != counted {
                problems.push(format!(
                    "{key}: {name} says {counted}, its completion log entries {log}"
                ));
            }
        }
    }
    for (name, sum) in [
        ("dl:bytes", totals_bytes.values().sum::<u64>()),
        ("domain_bytes", domains.values().sum::<u64>()),
    ] {
        if sum != stat("done_bytes") {
            problems.push(format!(
                "{name} sums to {sum}, done_bytes is {}",
                stat("done_bytes")
            ));
        }
    }
    Ok(())
}

async fn prove(
    store: &Store,
    slug: &str,
    n: usize,
    ledgers: &[Ledger],
    v: &mut Verdict,
    problems: &mut Vec<String>,
) -> Result<(), String> {
    let e = |e: server::store::StoreError| e.to_string();
    let f = |e: fred::error::Error| e.to_string();
    let k = store.keys().project(slug);
    let client = store.client();

    let board = store
        .figures()
        .leaderboard(slug, 0, 0)
        .await
        .map_err(e)?
        .ok_or("no project")?;
    let c = board.counts;
    if (c.todo, c.out, c.failed, c.done) != (0, 0, 0, n as u64) {
        problems.push(format!(
            "counts are todo {}, out {}, failed {}, done {}; expected 0, 0, 0, {n}",
            c.todo, c.out, c.failed, c.done
        ));
    }
    let disk_done: Option<u64> = client.hget(k.stats(), "disk_done").await.map_err(f)?;
    v.done = client.scard(k.done()).await.map_err(f)?;
    v.done += disk_done.unwrap_or(0);
    if v.done != n as u64 {
        problems.push(format!(
            "the done set and the segments hold {} items, not {n}",
            v.done
        ));
    }

    // What each warrior was told OK for, as item indexes.
    let mut ok_by: HashMap<&str, HashSet<usize>> = HashMap::new();
    let mut told = vec![0u8; n];
    let mut strange = Vec::new();
    for l in ledgers {
        let set = ok_by.entry(l.name.as_str()).or_default();
        for item in &l.ok {
            match item_index(item).filter(|&i| i < n) {
                Some(i) => {
                    if set.insert(i) {
                        told[i] = told[i].saturating_add(1);
                    }
                }
                None => strange.push(item.clone()),
            }
        }
        v.late += l.late.len() as u64;
    }
    if !strange.is_empty() {
        problems.push(some("told OK that the run never added", &strange));
    }
    v.told_ok = told.iter().map(|&t| t as u64).sum();
    v.told_twice = told.iter().filter(|&&t| t > 1).count() as u64;
    let never_told: Vec<String> = (0..n).filter(|&i| told[i] == 0).map(item_name).collect();
    if !never_told.is_empty() {
        problems.push(some("never told OK to any warrior", &never_told));
    }

    // Every item in the done set, and credited once, to a warrior told OK for it.
    let mut credited: HashMap<String, u64> = HashMap::new();
    let (mut missing, mut lost, mut uncredited, mut stolen) = (vec![], vec![], vec![], vec![]);
    let late: HashSet<(&str, &str)> = ledgers
        .iter()
        .flat_map(|l| l.late.iter().map(|i| (l.name.as_str(), i.as_str())))
        .collect();
    for start in (0..n).step_by(CHUNK) {
        let names: Vec<String> = (start..n.min(start + CHUNK)).map(item_name).collect();
        let member: Value = client
            .smismember(k.done(), names.clone())
            .await
            .map_err(f)?;
        let member: Vec<i64> = match member {
            Value::Array(a) => a.into_iter().map(|x| x.as_i64().unwrap_or(0)).collect(),
            one => vec![one.as_i64().unwrap_or(0)],
        };
        let lines: Value = client.hmget(k.timeline(), names.clone()).await.map_err(f)?;
        let lines: Vec<Option<String>> = match lines {
            Value::Array(a) => a.into_iter().map(|x| x.as_string()).collect(),
            one => vec![one.as_string()],
        };
        // Items not in Redis's done set: on disk, in a registered segment, with their timeline.
        let off: Vec<String> = names
            .iter()
            .enumerate()
            .filter(|(j, _)| member.get(*j) != Some(&1))
            .map(|(_, n)| n.clone())
            .collect();
        let on_disk = if off.is_empty() {
            HashMap::new()
        } else {
            store.offload().find_on_disk(slug, &off).await.map_err(e)?.1
        };
        let mut member = member;
        let mut lines = lines;
        for (j, name) in names.iter().enumerate() {
            if let Some(server::store::DiskHit::Done { timeline, .. }) = on_disk.get(name) {
                if let Some(m) = member.get_mut(j) {
                    *m = 1;
                }
                if let Some(l) = lines.get_mut(j) {
                    *l = Some(timeline.clone());
                }
                v.on_disk += 1;
            }
        }
        for (j, name) in names.into_iter().enumerate() {
            let i = start + j;
            if member.get(j) != Some(&1) {
                if told[i] > 0 {
                    lost.push(name.clone());
                }
                missing.push(name);
                continue;
            }
            let Some(who) = lines.get(j).cloned().flatten() else {
                uncredited.push(name);
                continue;
            };
            let Some(who) = done_by(&who) else {
                uncredited.push(name);
                continue;
            };
            if !ok_by.get(who).is_some_and(|s| s.contains(&i)) {
                stolen.push(format!("{name} (credited to {who})"));
            }
            if late.contains(&(who, name.as_str())) {
                v.late_credited += 1;
            }
            *credited.entry(who.to_string()).or_default() += 1;
        }
    }
    if !missing.is_empty() {
        problems.push(some("not in the done set", &missing));
    }
    if !lost.is_empty() {
        problems.push(some("LOST: told OK but not done", &lost));
    }
    if !uncredited.is_empty() {
        problems.push(some("done without a done line naming who", &uncredited));
    }
    if !stolen.is_empty() {
        problems.push(some(
            "credited to a downloader that was never told OK for them",
            &stolen,
        ));
    }

    // The per-downloader totals: each the number of items credited to it, summing to N.
    let totals: Vec<(String, f64)> = client
        .zrange(k.dl_items(), 0, -1, None, false, None, true)
        .await
        .map_err(f)?;
    let sum: f64 = totals.iter().map(|(_, t)| t).sum();
    if sum as u64 != n as u64 {
        problems.push(format!(
            "the downloaders' totals sum to {sum}, not {n}: {}",
            if (sum as u64) > n as u64 {
                "items counted twice"
            } else {
                "items not counted"
            }
        ));
    }
    let totals: HashMap<String, u64> = totals.into_iter().map(|(w, t)| (w, t as u64)).collect();
    for who in totals.keys().chain(credited.keys()) {
        let (total, mine) = (
            totals.get(who).copied().unwrap_or(0),
            credited.get(who).copied().unwrap_or(0),
        );
        if total != mine {
            problems.push(format!(
                "{who}: dl:items says {total}, {mine} items name it in their done line"
            ));
        }
        let told = ok_by.get(who.as_str()).map_or(0, |s| s.len() as u64);
        if total > told {
            problems.push(format!(
                "{who} is credited with {total} items but was told OK for {told}"
            ));
        }
    }
    if v.on_disk != disk_done.unwrap_or(0) {
        problems.push(format!(
            "{} done items found in the segments, disk_done says {}",
            v.on_disk,
            disk_done.unwrap_or(0)
        ));
    }
    problems.sort();
    problems.dedup();
    v.downloaders = credited.len();

    let check = store.upkeep().check(slug).await.map_err(e)?;
    problems.extend(check.into_iter().map(|p| format!("check: {p}")));
    Ok(())
}
