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
//! check       `Store::check` (and `tracker check`, run by the caller) finds nothing
//! ```

use super::{item_index, item_name, warrior::Ledger};
use fred::prelude::*;
use server::store::Store;
use std::collections::{HashMap, HashSet};

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
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "proof: {} items done, {} credited downloaders, {} (item, warrior) OKs, {} items told OK to two warriors, {} late reports of which {} credited to the late sender",
            self.done, self.downloaders, self.told_ok, self.told_twice, self.late, self.late_credited
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
pub async fn verify(
    store: &Store,
    slug: &str,
    n: usize,
    ledgers: &[Ledger],
) -> (Verdict, Vec<String>) {
    let mut v = Verdict::default();
    let mut problems = Vec::new();
    match prove(store, slug, n, ledgers, &mut v, &mut problems).await {
        Ok(()) => {}
        Err(e) => problems.push(format!("the proof could not read redis: {e}")),
    }
    (v, problems)
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
    v.done = client.scard(k.done()).await.map_err(f)?;
    if v.done != n as u64 {
        problems.push(format!("the done set holds {} items, not {n}", v.done));
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
    problems.sort();
    problems.dedup();
    v.downloaders = credited.len();

    let check = store.check(slug).await.map_err(e)?;
    problems.extend(check.into_iter().map(|p| format!("check: {p}")));
    Ok(())
}
