//! The folder: the figures slice's background task in each process, that folds the completion log into the
//! per-downloader figures ([`crate::store::figures::Figures::fold`]) and tallies the lifetime counters
//! ([`crate::store::figures::Figures::tally`]), off the done path. The store does the work; this decides when.

use super::{
    fold::{FOLD_EVERY, SWEEP_EVERY},
    now_ms,
    tally::TALLY_EVERY,
    Store,
};
use std::collections::HashMap;

/// Folds, until `closing` is cancelled, the projects `store` notes at most every
/// [`FOLD_EVERY`], and every project with entries waiting every [`SWEEP_EVERY`].
pub fn spawn(store: Store, closing: tokio_util::sync::CancellationToken) {
    tokio::spawn(async move {
        let mut sweep = tokio::time::interval(SWEEP_EVERY);
        sweep.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut tallied: Option<tokio::time::Instant> = None;
        loop {
            let all = tokio::select! {
                _ = sweep.tick() => true,
                () = store.figures().fold_noted() => false,
                () = closing.cancelled() => return,
            };
            let started = tokio::time::Instant::now();
            let mut slugs: HashMap<String, Option<u64>> = store
                .figures()
                .noted_folds()
                .into_iter()
                .map(|(s, n)| (s, Some(n)))
                .collect();
            if all {
                match store.projects().project_slugs().await {
                    Ok(every) => {
                        for slug in every {
                            slugs.entry(slug).or_insert(None);
                        }
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "listing the projects to fold; tried again soon")
                    }
                }
            }
            let tally = all && tallied.is_none_or(|t| t.elapsed() >= TALLY_EVERY);
            if tally {
                tallied = Some(started);
            }
            for (slug, noted) in slugs {
                if tally {
                    if let Err(e) = store.figures().tally(&slug, now_ms()).await {
                        tracing::warn!(project = %slug, error = %e, "tallying the lifetime counters; tried again soon");
                    }
                }
                match store.figures().fold(&slug).await {
                    Ok(_) => {
                        if let Some(n) = noted {
                            store.figures().folded(&slug, n);
                        }
                    }
                    // What was not folded waits in the log; the next fold takes it.
                    Err(e) => {
                        tracing::warn!(project = %slug, error = %e, "folding the completion log; tried again soon")
                    }
                }
            }
            tokio::select! {
                () = tokio::time::sleep_until(started + FOLD_EVERY) => {}
                () = closing.cancelled() => return,
            }
        }
    });
}
