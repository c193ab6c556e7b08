//! The hub's Redis subscriptions: one shard channel per project, kept in line with the project
//! list.
//!
//! Completions are published with `SPUBLISH` on the project's channel (`ns:{SLUG}:events`), so
//! on a Redis Cluster a message travels only within the project's shard, where `PUBLISH` would
//! copy it to every node. Sharded pub/sub has no pattern subscription: the hub subscribes to
//! each project's channel by name, at start, every [`SYNC_INTERVAL`] (a project created or
//! destroyed through another process), when told to ([`Hub::sync_projects`]), and before a
//! watcher of a project it does not follow yet starts ([`Hub::ensure_subscribed`]). After a
//! reconnection it subscribes again to every channel followed, then resyncs the watchers.

use super::Hub;
use crate::store::{Store, StoreResult};
use fred::prelude::*;
use std::{collections::BTreeSet, time::Duration};

/// How often the hub compares its subscriptions with the project list: the fallback for a
/// project created or destroyed by another process whose news it missed.
pub const SYNC_INTERVAL: Duration = Duration::from_secs(5);

/// The pause before subscribing again when it failed after a reconnection.
const RESUBSCRIBE_RETRY: Duration = Duration::from_secs(1);

/// What one [`Hub::sync_projects`] changed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SyncOutcome {
    /// Channels subscribed to.
    pub added: usize,
    /// Channels left.
    pub removed: usize,
}

impl Hub {
    /// Subscribes to the event channel of every project not followed yet, and leaves those of
    /// projects gone (unless someone still watches them). Idempotent; when nothing changed it
    /// costs one read of the project list. Calls are serialised: fred sends `SSUBSCRIBE` one
    /// at a time, one channel (one slot) per call, as a cluster requires.
    pub async fn sync_projects(&self, store: &Store) -> StoreResult<SyncOutcome> {
        let Some(subscriber) = &self.subscriber else {
            return Ok(SyncOutcome::default());
        };
        let _one_at_a_time = self.syncing.lock().await;
        let keys = store.keys();
        let wanted: BTreeSet<String> = store
            .projects()
            .project_slugs()
            .await?
            .iter()
            .map(|slug| keys.project(slug).events())
            .collect();
        let followed = subscriber.tracked_shard_channels();
        let watched = self.watched();
        let mut outcome = SyncOutcome::default();
        for channel in wanted.iter().filter(|c| !followed.contains(c.as_str())) {
            subscriber.ssubscribe(channel.as_str()).await?;
            outcome.added += 1;
        }
        for channel in followed.iter().filter(|c| !wanted.contains(&***c)) {
            let slug = keys.slug_of_events_channel(channel);
            if slug.is_some_and(|s| watched.contains(s)) {
                continue;
            }
            subscriber.sunsubscribe(channel.to_string()).await?;
            outcome.removed += 1;
        }
        Ok(outcome)
    }

    /// Subscribes to `slug`'s event channel unless the hub follows it already; awaited before a
    /// watcher reads its snapshot, so that a project created since the last sync loses no
    /// event between the two.
    pub async fn ensure_subscribed(&self, store: &Store, slug: &str) -> StoreResult<()> {
        let Some(subscriber) = &self.subscriber else {
            return Ok(());
        };
        let channel = store.keys().project(slug).events();
        if subscriber
            .tracked_shard_channels()
            .contains(channel.as_str())
        {
            return Ok(());
        }
        let _one_at_a_time = self.syncing.lock().await;
        if !subscriber
            .tracked_shard_channels()
            .contains(channel.as_str())
        {
            subscriber.ssubscribe(channel).await?;
        }
        Ok(())
    }

    /// Whether the hub follows `slug`'s event channel.
    pub fn follows(&self, store: &Store, slug: &str) -> bool {
        let channel = store.keys().project(slug).events();
        self.subscriber
            .as_ref()
            .is_some_and(|s| s.tracked_shard_channels().contains(channel.as_str()))
    }

    /// After each reconnection (on a cluster, of each node), subscribes to every channel
    /// followed again, then has every watcher start over from a snapshot, as events may have
    /// been missed meanwhile; until the client closes. What fred's `manage_subscriptions` does,
    /// but under the hub's lock, as `SSUBSCRIBE` calls must not overlap, and with the watchers
    /// told only once the subscriptions are back, so that their snapshots miss nothing after.
    pub(super) fn resubscribe_after_reconnects(&self) {
        let Some(subscriber) = self.subscriber.clone() else {
            return;
        };
        let mut reconnects = subscriber.reconnect_rx();
        let hub = self.clone();
        tokio::spawn(async move {
            loop {
                match reconnects.recv().await {
                    // Lagged: several reconnections at once; one resubscription covers them.
                    Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
                }
                loop {
                    let done = {
                        let _one_at_a_time = hub.syncing.lock().await;
                        subscriber.resubscribe_all().await
                    };
                    let Err(e) = done else { break };
                    tracing::warn!(error = %e, "subscribing again after a reconnection; retrying");
                    tokio::select! {
                        () = hub.stopped.cancelled() => return,
                        () = tokio::time::sleep(RESUBSCRIBE_RETRY) => {}
                    }
                }
                hub.resync_all();
            }
        });
    }

    /// Runs [`Hub::sync_projects`] every [`SYNC_INTERVAL`] until the hub stops.
    pub(super) fn keep_in_sync(&self, store: Store) {
        let hub = self.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(SYNC_INTERVAL);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            // The first tick is immediate; `start` has just synced.
            tick.tick().await;
            loop {
                tokio::select! {
                    () = hub.stopped.cancelled() => return,
                    _ = tick.tick() => {}
                }
                match hub.sync_projects(&store).await {
                    Ok(SyncOutcome {
                        added: 0,
                        removed: 0,
                    }) => {}
                    Ok(o) => tracing::info!(
                        added = o.added,
                        removed = o.removed,
                        "project event channels followed anew"
                    ),
                    Err(e) => tracing::warn!(error = %e, "syncing the project event channels"),
                }
            }
        });
    }
}
