//! Adding items from a byte stream: the panel's upload and `tracker items add` alike.

use super::{
    invalid,
    lines::{read_items, LineError},
    Actor, OpsError, OpsResult,
};
use crate::{keys::QUEUES, limits::valid_downloader, store::Store};
use std::io::Read;

/// Whether items may be added to `queue`: one of [`QUEUES`], or a downloader's personal queue
/// `todo:d:NAME`.
pub fn check_queue(queue: &str) -> OpsResult<()> {
    let personal = queue
        .strip_prefix(crate::keys::PERSONAL)
        .is_some_and(valid_downloader);
    if QUEUES.contains(&queue) || personal {
        Ok(())
    } else {
        Err(invalid(format!(
            "queue is one of {QUEUES:?} or todo:d:DOWNLOADER, not {queue:?}"
        )))
    }
}

/// Where and how [`add`] adds.
pub struct Adding<'a> {
    /// The queue ([`check_queue`]).
    pub queue: &'a str,
    /// Only count.
    pub dry_run: bool,
    /// The longest item, in bytes (the configured `TRACKER_MAX_ITEM`): a longer line is a bad
    /// line.
    pub max_item: usize,
}

/// Adds the items of `source` (one a line, plain, gzip or zstd; see [`super::lines`]) to
/// `how.queue` of project `slug`, streamed in batches; with `how.dry_run`, only counts them.
/// Items the project knows in any state are skipped. Returns how many were new (a dry run may count a
/// line repeated far apart twice). A bad line refuses the rest of the stream: what was added
/// before it stays, and is audited as partial. `progress` hears the running count after each
/// batch.
pub async fn add(
    store: &Store,
    actor: &Actor,
    slug: &str,
    how: Adding<'_>,
    source: impl Read + Send + 'static,
    progress: &(dyn Fn(u64) + Sync),
) -> OpsResult<u64> {
    let Adding {
        queue,
        dry_run,
        max_item,
    } = how;
    super::project(store, slug).await?;
    check_queue(queue)?;
    let (tx, mut rx) = tokio::sync::mpsc::channel::<Vec<String>>(2);
    let reading = tokio::task::spawn_blocking(move || {
        read_items(source, max_item, |b| tx.blocking_send(b).is_ok())
    });
    let mut count = 0;
    while let Some(items) = rx.recv().await {
        count += if dry_run {
            store.count_new_items(slug, queue, &items).await?
        } else {
            store.add_items(slug, queue, &items).await?
        };
        progress(count);
    }
    let read = reading.await.unwrap_or_else(|e| {
        Err(LineError::Read {
            line: 0,
            detail: e.to_string(),
        })
    });
    let detail = format!("queue={queue}");
    match read {
        Ok(()) => {
            if !dry_run {
                actor
                    .record(store, "items.add", slug, count, detail)
                    .await?;
            }
            Ok(count)
        }
        Err(reason) => {
            if !dry_run && count > 0 {
                let detail = format!("{detail} (partial)");
                actor
                    .record(store, "items.add", slug, count, detail)
                    .await?;
            }
            Err(OpsError::Invalid(format!(
                "{reason} ({count} items added before)"
            )))
        }
    }
}
