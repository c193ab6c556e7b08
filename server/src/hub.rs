//! The live hub: one Redis subscription per process, fanned out to every websocket watching a
//! project. A frame is serialised once and shared by all its watchers.

use crate::{keys::Keys, store::Store};
use axum::extract::ws::Utf8Bytes;
use fred::prelude::*;
use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
};
use tokio::sync::broadcast;

/// How many frames a slow watcher may fall behind before it is sent a fresh snapshot instead.
const WATCHER_BUFFER: usize = 256;

/// Sent to every watcher when the subscription was interrupted: events may have been missed,
/// so each watcher sends its viewer a fresh snapshot.
pub const RESYNC: &str = "";

/// The per-process fan-out of project events; cheap to clone.
#[derive(Clone, Default)]
pub struct Hub {
    projects: Arc<Mutex<HashMap<String, broadcast::Sender<Utf8Bytes>>>>,
    subscriber: Option<fred::clients::SubscriberClient>,
}

impl Hub {
    /// Subscribes to every project's events and starts forwarding them.
    pub async fn start(store: &Store) -> Result<Self, fred::error::Error> {
        let subscriber = store.subscriber()?;
        let hub = Hub {
            subscriber: Some(subscriber.clone()),
            ..Hub::default()
        };
        subscriber.init().await?;
        subscriber.psubscribe(store.keys().events_pattern()).await?;
        // Resubscribes after a reconnect; the task lives as long as the client.
        drop(subscriber.manage_subscriptions());

        let mut messages = subscriber.message_rx();
        let mut reconnects = subscriber.reconnect_rx();
        let keys = store.keys().clone();
        let forward = hub.clone();
        tokio::spawn(async move {
            loop {
                match messages.recv().await {
                    Ok(msg) => forward.publish(&keys, &msg),
                    Err(broadcast::error::RecvError::Lagged(n)) => {
                        tracing::warn!(missed = n, "hub fell behind redis; resyncing watchers");
                        forward.resync_all();
                    }
                    Err(broadcast::error::RecvError::Closed) => break,
                }
            }
        });
        let resync = hub.clone();
        tokio::spawn(async move {
            while reconnects.recv().await.is_ok() {
                resync.resync_all();
            }
        });
        Ok(hub)
    }

    /// Closes the subscription.
    pub async fn stop(&self) {
        if let Some(s) = &self.subscriber {
            let _ = s.quit().await;
        }
    }

    /// A receiver of `slug`'s frames: JSON [`app::model::LiveMessage`]s, or [`RESYNC`].
    pub fn watch(&self, slug: &str) -> broadcast::Receiver<Utf8Bytes> {
        let mut projects = self.projects.lock().unwrap_or_else(|e| e.into_inner());
        projects.retain(|_, tx| tx.receiver_count() > 0);
        projects
            .entry(slug.to_string())
            .or_insert_with(|| broadcast::channel(WATCHER_BUFFER).0)
            .subscribe()
    }

    fn publish(&self, keys: &Keys, msg: &fred::types::Message) {
        let Some(slug) = keys.slug_of_events_channel(&msg.channel) else {
            return;
        };
        let Some(event) = msg.value.as_str() else {
            return;
        };
        let projects = self.projects.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(tx) = projects.get(slug) {
            let frame = format!(r#"{{"type":"events","events":[{event}]}}"#);
            let _ = tx.send(frame.into());
        }
    }

    fn resync_all(&self) {
        let projects = self.projects.lock().unwrap_or_else(|e| e.into_inner());
        for tx in projects.values() {
            let _ = tx.send(RESYNC.into());
        }
    }
}
