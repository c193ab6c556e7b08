//! The fold: the per-downloader figures made from the completion log, off the done path.
//!
//! `done.lua` moves a report's items and writes one log entry per counted report; it no longer
//! touches the per-downloader totals, rate windows, charts, versions, unique contributors or
//! events. Those are folded from the log in runs ([`crate::store::figures::Figures::fold`]): the entries after the last
//! folded one (stats `folded`) are read and summed per downloader here, in the tracker, and
//! `fold.lua` writes the sums, the events, and moves `folded` on in one step, refusing a run
//! whose start another process has folded meanwhile. So each entry is folded exactly once,
//! whichever process folds it and whenever a process dies.
//!
//! Every process folds the projects it recorded dones for, at most every [`FOLD_EVERY`]
//! (`folder`), and every project with entries waiting every [`SWEEP_EVERY`] (entries a
//! killed process left). The leaderboard and the live events trail the dones by that much; the
//! project's own totals (`done_items`, `done_bytes`) do not trail. `tracker check` counts the
//! items of entries not folded yet (stats `journal_items`) with the per-downloader totals.

use super::{StoreError, StoreResult};
use crate::keys::{HISTORY_LEN, HISTORY_RUN_TAIL, LOG_LEN};
use fred::prelude::*;
use run::{next_id, read_run, stream_id, Base};
use std::{collections::HashMap, sync::Mutex, time::Duration};

/// How often a process folds a project it recorded dones for, at most.
pub const FOLD_EVERY: Duration = Duration::from_millis(200);
/// How often a process folds every project with entries waiting.
pub const SWEEP_EVERY: Duration = Duration::from_secs(2);
/// Log entries read and folded per run, at most.
pub const RUN_MAX: usize = 2_000;
/// Runs per project per fold, at most (the rest waits for the next fold).
const RUNS_MAX: usize = 50;

/// Projects this process recorded dones for and has not folded since, each with a count of
/// the notes (a project noted again while it is folded stays noted).
#[derive(Default)]
pub struct Pending {
    slugs: Mutex<HashMap<String, u64>>,
    wake: tokio::sync::Notify,
}

impl Pending {
    /// Notes that `slug` has log entries to fold.
    pub(in crate::store) fn note(&self, slug: &str) {
        let mut slugs = self.slugs.lock().unwrap_or_else(|e| e.into_inner());
        match slugs.get_mut(slug) {
            Some(n) => *n += 1,
            None => {
                slugs.insert(slug.to_string(), 1);
            }
        }
        drop(slugs);
        self.wake.notify_one();
    }

    /// How many times `slug` was noted, if it is.
    fn noted_count(&self, slug: &str) -> Option<u64> {
        self.lock().get(slug).copied()
    }

    /// The projects noted, with their counts.
    fn noted(&self) -> Vec<(String, u64)> {
        self.lock().iter().map(|(s, n)| (s.clone(), *n)).collect()
    }

    /// Forgets `slug` if it was not noted again since its count was `n`.
    fn folded(&self, slug: &str, n: u64) {
        let mut slugs = self.lock();
        if slugs.get(slug) == Some(&n) {
            slugs.remove(slug);
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, u64>> {
        self.slugs.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// What one run did.
enum Run {
    /// Nothing waits.
    Nothing,
    /// Another process folded the run's start first: nothing written.
    Stale,
    /// `entries` folded; `rest`: more waited than the run took.
    Folded { entries: usize, rest: bool },
}

impl super::Figures<'_> {
    /// Notes that `slug` has completion log entries to fold (this process folds it soon).
    pub(in crate::store) fn note_fold(self, slug: &str) {
        self.slice::<Pending>().note(slug);
    }

    /// The projects this process recorded dones for and has not folded since, each with the
    /// count of its notes (for [`crate::store::figures::Figures::folded`]).
    pub fn noted_folds(self) -> Vec<(String, u64)> {
        self.slice::<Pending>().noted()
    }

    /// Returns once a done is noted ([`crate::store::figures::Figures::noted_folds`]) after the call.
    pub async fn fold_noted(self) {
        self.slice::<Pending>().wake.notified().await
    }

    /// Forgets the note of `slug`, folded, unless it was noted again since its count was `n`.
    pub fn folded(self, slug: &str, n: u64) {
        self.slice::<Pending>().folded(slug, n)
    }

    /// Folds `slug` first if this process recorded dones for it that it has not folded yet,
    /// so that a page read after a done shows it; the note is then cleared, so the other reads
    /// of the same page (and the folder) do not fold again. A fold that fails is logged and left to the
    /// folder: the read goes on with the figures as they are.
    pub async fn fold_for_read(self, slug: &str) {
        let Some(n) = self.slice::<Pending>().noted_count(slug) else {
            return;
        };
        match self.fold(slug).await {
            // Folded through what was there: the reads after it need not fold again.
            Ok(_) => self.slice::<Pending>().folded(slug, n),
            Err(e) => {
                tracing::warn!(project = %slug, error = %e, "folding the completion log before a read")
            }
        }
    }

    /// The completion log entries of `slug` not folded yet, and their items.
    pub async fn unfolded(self, slug: &str) -> StoreResult<(u64, u64)> {
        let k = self.keys.project(slug);
        let v: Vec<Option<i64>> = self
            .pool
            .next()
            .hmget(k.stats(), vec!["journal", "journal_items"])
            .await?;
        let n = |i: usize| v.get(i).copied().flatten().unwrap_or(0).max(0) as u64;
        Ok((n(0), n(1)))
    }

    /// Folds what waits of `slug`, then the id of the last log entry folded: entries after it
    /// must stay in Redis until they are folded. `None` for a log without a fold cursor (its
    /// entries were all counted as they were made).
    pub async fn fold_through(self, slug: &str) -> StoreResult<Option<String>> {
        self.fold(slug).await?;
        let id: Option<String> = self
            .pool
            .next()
            .hget(self.keys.project(slug).stats(), "folded")
            .await?;
        Ok(id)
    }

    /// Folds the completion log entries of `slug` not folded yet, in runs of up to
    /// [`RUN_MAX`] (at most [`RUNS_MAX`] runs), through the last entry there was when it
    /// started on its last page: entries added meanwhile wait for the next fold rather than
    /// being chased in runs of a few. How many entries this call folded.
    pub async fn fold(self, slug: &str) -> StoreResult<u64> {
        let mut folded = 0;
        for _ in 0..RUNS_MAX {
            match self.fold_run(slug).await? {
                Run::Folded { entries, rest } => {
                    folded += entries as u64;
                    if !rest {
                        break;
                    }
                }
                Run::Stale => continue,
                Run::Nothing => break,
            }
        }
        Ok(folded)
    }

    /// One run.
    async fn fold_run(self, slug: &str) -> StoreResult<Run> {
        let k = self.keys.project(slug);
        let client = self.pool.next();
        let head: Vec<Option<String>> = client
            .hmget(k.stats(), vec!["folded", "journal", "counts_from"])
            .await?;
        let counts_from = head.get(2).cloned().flatten();
        let (Some(from), waiting) = (
            head.first().cloned().flatten(),
            head.get(1)
                .cloned()
                .flatten()
                .and_then(|s| s.parse::<i64>().ok())
                .unwrap_or(0),
        ) else {
            return Ok(Run::Nothing);
        };
        if waiting <= 0 {
            return Ok(Run::Nothing);
        }
        let page = self
            .fleet()
            .log_page(slug, &format!("({from}"), "+", RUN_MAX as u64)
            .await?;
        let read = page.len();
        let Some(run) = read_run(page, counts_from.as_deref().and_then(stream_id)) else {
            return Ok(Run::Nothing);
        };
        // More waited than this run took: a full page, or a run cut at a new minute.
        let rest = read == RUN_MAX || run.entries < read;
        // What the events are made from; fold.lua refuses the run if it moved meanwhile.
        let base: Base = self
            .scripts
            .call(
                client,
                &self.scripts.fold_base,
                k.fold_base_keys(),
                std::iter::once(k.prefix().into())
                    .chain(run.whos.iter().map(|(who, _)| Value::from(who.as_str())))
                    .collect(),
            )
            .await?
            .map_err(StoreError::Refused)?;
        let events = run.events(&base);
        let mut args: Vec<Value> = vec![
            k.prefix().into(),
            from.into(),
            run.to.as_str().into(),
            next_id(&run.to).into(),
            (run.entries as i64).into(),
            (run.items as i64).into(),
            (run.minute as i64).into(),
            (HISTORY_LEN as i64).into(),
            (LOG_LEN as i64).into(),
            counts_from.unwrap_or_default().into(),
            base.seq.0.to_string().into(),
            (run.whos.len() as i64).into(),
        ];
        for (d, (who, s)) in run.whos.iter().enumerate() {
            args.push(who.as_str().into());
            args.push((s.items as i64).into());
            args.push(s.bytes.to_string().into());
            args.push(s.version.as_str().into());
            args.push((s.seen as i64).into());
            args.push(base.item(d).to_string().into());
            args.push(base.byte(d).to_string().into());
        }
        args.push((run.ips.len() as i64).into());
        args.extend(run.ips.iter().map(|ip| Value::from(ip.as_str())));
        args.push((events.len() as i64).into());
        let joined = events.join(",");
        // Only the run's last events join the history (HISTORY_RUN_TAIL); all are published.
        let tail = events.len().min(HISTORY_RUN_TAIL);
        let skip = events.len() - tail;
        args.push((tail as i64).into());
        args.extend(events.into_iter().skip(skip).map(Value::from));
        args.push(joined.into());
        let counters: Vec<(&str, u64)> = run.counters().filter(|(_, n)| *n > 0).collect();
        args.push((counters.len() as i64).into());
        for (code, n) in counters {
            args.push(code.into());
            args.push(n.to_string().into());
        }
        let answer: String = self
            .scripts
            .run(client, &self.scripts.fold, k.fold_keys(&run.month), args)
            .await?;
        Ok(if answer == "folded" {
            Run::Folded {
                entries: run.entries,
                rest,
            }
        } else {
            Run::Stale
        })
    }
}

mod run;
#[cfg(test)]
mod tests;
