//! Reads of a project's capped event history (`ns:{SLUG}:history`, newest first): the catch-up
//! of a resuming watcher and the recent completions of `recent.json`.

use crate::store::{Store, StoreResult};
use app::model::DoneEvent;
use fred::prelude::*;

/// The events after `since`, oldest first and consecutive; `None` when the history no longer
/// reaches back to `since + 1`, or `since` is ahead of the project (a viewer of an older
/// database): then only a snapshot is right.
pub async fn events_after(
    store: &Store,
    slug: &str,
    since: u64,
) -> StoreResult<Option<Vec<DoneEvent>>> {
    store.figures().fold_for_read(slug).await;
    let keys = store.keys().project(slug);
    // The counter first: every event it counts is already in the history read after it.
    let current: u64 = store
        .client()
        .get::<Option<u64>, _>(keys.seq())
        .await?
        .unwrap_or(0);
    if since > current {
        return Ok(None);
    }
    if since == current {
        return Ok(Some(Vec::new()));
    }
    let raw: Vec<String> = store.client().lrange(keys.history(), 0, -1).await?;
    let mut events: Vec<DoneEvent> = raw
        .iter()
        .rev()
        .filter_map(|e| serde_json::from_str::<DoneEvent>(e).ok())
        .filter(|e| e.seq > since)
        .collect();
    events.sort_by_key(|e| e.seq);
    events.dedup_by_key(|e| e.seq);
    let consecutive = events
        .iter()
        .zip(since + 1..)
        .all(|(e, want)| e.seq == want);
    let reaches = events.last().is_some_and(|e| e.seq >= current);
    Ok((consecutive && reaches).then_some(events))
}

/// The `n` most recent events, newest first.
pub async fn recent(store: &Store, slug: &str, n: usize) -> StoreResult<Vec<DoneEvent>> {
    if n == 0 {
        return Ok(Vec::new());
    }
    store.figures().fold_for_read(slug).await;
    let raw: Vec<String> = store
        .client()
        .lrange(store.keys().project(slug).history(), 0, n as i64 - 1)
        .await?;
    Ok(raw
        .iter()
        .filter_map(|e| serde_json::from_str(e).ok())
        .collect())
}
