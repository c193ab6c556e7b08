//! Unique contributors per calendar month (UTC), per project and across all projects.
//!
//! A project's months are counted by the fold of its completion log (`fold.lua`) (`u:month:<YYYY-MM>`, in the project's
//! slot). The count across all projects is a global key (`ns:u:month:<YYYY-MM>`), which no
//! project script may touch on a Redis Cluster: [`crate::store::queue::Queue::done_batch`] notes the downloaders
//! whose dones counted, and each process writes what it noted with one `PFADD` per month every
//! [`FLUSH_EVERY`] ([`spawn_flusher`]), sooner once [`FLUSH_AT`] names wait, and once more when
//! the server stops. So the front page's figure trails the dones by those few seconds; names
//! noted by a process killed outright before its next flush are not counted there (the
//! project's own months are).

use super::{Store, StoreResult};
use app::model::{months_back, Contributors, MonthCount, MONTHS_SHOWN};
use fred::prelude::*;
use std::{
    collections::{BTreeMap, BTreeSet},
    sync::Mutex,
    time::Duration,
};

/// How often a process writes the contributors it noted.
pub const FLUSH_EVERY: Duration = Duration::from_secs(5);
/// Names waiting that make a process write them at once rather than at the next tick.
pub const FLUSH_AT: usize = 10_000;
/// The most names a process keeps waiting (while Redis refuses the writes); names beyond are
/// not counted in the global figure, so memory stays bounded (some 10 MB).
pub const MAX_PENDING: usize = 100_000;
/// How long a month's count is kept, days (the pages show [`MONTHS_SHOWN`] months).
pub const MONTH_TTL_DAYS: i64 = 400;

/// Downloader names noted per month, waiting to be written.
#[derive(Default)]
pub struct Pending {
    names: Mutex<(BTreeMap<String, BTreeSet<String>>, usize)>,
    wake: tokio::sync::Notify,
}

impl Pending {
    /// Notes `names` as contributors of `month`; beyond [`MAX_PENDING`] waiting, new names are
    /// dropped.
    pub(in crate::store) fn note<'a>(&self, month: &str, names: impl IntoIterator<Item = &'a str>) {
        let mut guard = self.names.lock().unwrap_or_else(|e| e.into_inner());
        let (by_month, count) = &mut *guard;
        let mut dropped = 0;
        for name in names {
            if *count >= MAX_PENDING {
                dropped += 1;
                continue;
            }
            if by_month
                .entry(month.to_string())
                .or_default()
                .insert(name.to_string())
            {
                *count += 1;
            }
        }
        let full = *count >= FLUSH_AT;
        drop(guard);
        if dropped > 0 {
            tracing::warn!(
                dropped,
                "too many contributors waiting to be counted; some are left out of the monthly figure"
            );
        }
        if full {
            self.wake.notify_one();
        }
    }

    fn take(&self) -> BTreeMap<String, BTreeSet<String>> {
        let mut guard = self.names.lock().unwrap_or_else(|e| e.into_inner());
        guard.1 = 0;
        std::mem::take(&mut guard.0)
    }
}

impl super::Figures<'_> {
    /// Notes `names` as contributors of `month`, for the next flush of the global monthly count.
    pub fn note_contributors<'a>(self, month: &str, names: impl IntoIterator<Item = &'a str>) {
        self.slice::<Pending>().note(month, names);
    }

    /// Writes the contributors noted since the last flush: one `PFADD` per month (a month's key
    /// expires [`MONTH_TTL_DAYS`] after its creation). Names of a month whose write failed wait
    /// for the next flush. How many names were written.
    pub async fn flush_contributors(self) -> StoreResult<usize> {
        let mut written = 0;
        let mut failed = None;
        for (month, names) in self.slice::<Pending>().take() {
            if failed.is_some() {
                self.slice::<Pending>()
                    .note(&month, names.iter().map(String::as_str));
                continue;
            }
            let key = self.keys.monthly_contributors(&month);
            let client = self.pool.next();
            let added: StoreResult<i64> = client
                .pfadd(&key, names.iter().map(String::as_str).collect::<Vec<_>>())
                .await
                .map_err(Into::into);
            match added {
                Ok(_) => {
                    written += names.len();
                    // Written; an expiry that fails now is set by a later flush of the month.
                    let ttl = Some(fred::types::ExpireOptions::NX);
                    let expired: StoreResult<bool> = client
                        .expire(&key, MONTH_TTL_DAYS * 86_400, ttl)
                        .await
                        .map_err(Into::into);
                    failed = expired.err();
                }
                Err(e) => {
                    self.slice::<Pending>()
                        .note(&month, names.iter().map(String::as_str));
                    failed = Some(e);
                }
            }
        }
        failed.map_or(Ok(written), Err)
    }

    /// Unique contributors of all projects together in the [`MONTHS_SHOWN`] months up to the
    /// one holding `now_ms` (as written by the processes' last flushes).
    pub async fn contributors(self, now_ms: u64) -> StoreResult<Contributors> {
        let keys = months_back(now_ms, MONTHS_SHOWN)
            .into_iter()
            .map(|m| (self.keys.monthly_contributors(&m), m));
        Ok(Contributors {
            months: self.count_months(keys).await?,
        })
    }

    /// Unique contributors of project `slug` in the [`MONTHS_SHOWN`] months up to the one
    /// holding `now_ms`, this month first.
    pub async fn project_months(self, slug: &str, now_ms: u64) -> StoreResult<Vec<MonthCount>> {
        let k = self.keys.project(slug);
        let keys = months_back(now_ms, MONTHS_SHOWN)
            .into_iter()
            .map(|m| (k.monthly_contributors(&m), m));
        self.count_months(keys).await
    }

    /// `PFCOUNT` of each `(key, month)`, concurrently (the global keys live in different
    /// cluster slots, so one call could not count them all).
    async fn count_months(
        self,
        keys: impl Iterator<Item = (String, String)>,
    ) -> StoreResult<Vec<MonthCount>> {
        let client = self.pool.next();
        let reads = keys.map(|(key, month)| async move {
            let contributors: u64 = client.pfcount(key).await?;
            Ok::<_, super::StoreError>(MonthCount {
                month,
                contributors,
            })
        });
        futures::future::try_join_all(reads).await
    }
}

/// Writes the contributors `store` notes every [`FLUSH_EVERY`] (or as soon as [`FLUSH_AT`]
/// wait) until `closing` is cancelled; the server flushes once more after its last requests.
pub fn spawn_flusher(store: Store, closing: tokio_util::sync::CancellationToken) {
    let pending = store.slice::<Pending>();
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(FLUSH_EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = tick.tick() => {}
                () = pending.wake.notified() => {}
                () = closing.cancelled() => return,
            }
            if let Err(e) = store.figures().flush_contributors().await {
                tracing::warn!(error = %e, "writing this month's contributors; retried at the next flush");
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pending_names_are_kept_once_per_month_and_bounded() {
        let p = Pending::default();
        p.note("2024-01", ["a", "b", "a"]);
        p.note("2024-02", ["a"]);
        let taken = p.take();
        assert_eq!(taken["2024-01"].len(), 2);
        assert_eq!(taken["2024-02"].len(), 1);
        assert!(p.take().is_empty(), "taken once");
        let many: Vec<String> = (0..MAX_PENDING + 10).map(|i| format!("d{i}")).collect();
        p.note("2024-03", many.iter().map(String::as_str));
        assert_eq!(p.take()["2024-03"].len(), MAX_PENDING);
    }
}
