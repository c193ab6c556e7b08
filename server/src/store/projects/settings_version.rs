//! The settings version, after ArchiveBot's `settings_age`: every change of what processes
//! cache or obey (a project's settings, a project made or destroyed, a block, an upload target,
//! the warrior project list, a pipeline revoked) bumps one counter and publishes the new value.
//! Each process drops its cached settings (and pipeline lookups) when it hears a newer version,
//! and one that missed the message (its subscription was down) finds the version on its next
//! read: cached settings are used only after a check of the counter, made at most every
//! [`CHECK_EVERY`] by one caller at a time.

use super::{Store, StoreResult};
use fred::prelude::*;
use std::sync::atomic::{AtomicU64, Ordering};
use tokio::sync::watch;

/// Longest time a process goes without reading the settings version while it serves requests.
pub const CHECK_EVERY: std::time::Duration = std::time::Duration::from_millis(500);

/// What this process knows of the settings version; shared by every clone of a store.
pub struct SettingsVersion {
    /// The newest version seen; sent to whoever reacts to changes (the read cache, the hub).
    seen: watch::Sender<u64>,
    /// When (ms since the epoch) the version should next be read.
    next_check_ms: AtomicU64,
}

impl Default for SettingsVersion {
    fn default() -> Self {
        Self {
            seen: watch::Sender::new(0),
            next_check_ms: AtomicU64::new(0),
        }
    }
}

impl SettingsVersion {
    /// The newest version seen.
    pub fn seen(&self) -> u64 {
        *self.seen.borrow()
    }
}

impl super::Projects<'_> {
    /// Records a change of settings: bumps the version, publishes it, and drops this process's
    /// caches at once. Called after the change is written, so a process that reads the new
    /// version reads the new settings.
    pub async fn settings_changed(self) -> StoreResult<u64> {
        let client = self.pool.next();
        let version: u64 = client.incr(self.keys.settings_version()).await?;
        self.adopt_settings_version(version);
        // A lost message costs only its delay: the others read the counter within CHECK_EVERY.
        if let Err(e) = client
            .publish::<(), _, _>(self.keys.settings_channel(), version)
            .await
        {
            tracing::warn!(error = %e, version, "could not publish a settings change; other processes see it within a second");
        }
        Ok(version)
    }

    /// Takes `version` (published, or read): if it is newer than what this process has seen,
    /// drops the cached settings and tells the watchers of [`crate::store::projects::Projects::settings_versions`];
    /// whether it was newer.
    pub fn adopt_settings_version(self, version: u64) -> bool {
        let newer = self
            .slice::<SettingsVersion>()
            .seen
            .send_if_modified(|seen| {
                let newer = version > *seen;
                if newer {
                    *seen = version;
                }
                newer
            });
        if newer {
            self.forget_cached_settings();
        }
        newer
    }

    /// Every version this process adopts, for what it caches outside the store.
    pub fn settings_versions(self) -> watch::Receiver<u64> {
        self.slice::<SettingsVersion>().seen.subscribe()
    }

    /// Reads the settings version if it is due ([`CHECK_EVERY`]); one concurrent caller reads,
    /// the others go on with what is cached.
    pub(in crate::store) async fn check_settings_version(self) -> StoreResult<()> {
        let now = super::now_ms();
        let due = self
            .slice::<SettingsVersion>()
            .next_check_ms
            .load(Ordering::Relaxed);
        let next = now + CHECK_EVERY.as_millis() as u64;
        if now < due
            || self
                .slice::<SettingsVersion>()
                .next_check_ms
                .compare_exchange(due, next, Ordering::Relaxed, Ordering::Relaxed)
                .is_err()
        {
            return Ok(());
        }
        let version: Option<u64> = match self.pool.next().get(self.keys.settings_version()).await {
            Ok(v) => v,
            Err(e) => {
                // Read again on the next call rather than trust the cache for another interval.
                self.slice::<SettingsVersion>()
                    .next_check_ms
                    .store(0, Ordering::Relaxed);
                return Err(e.into());
            }
        };
        if self.adopt_settings_version(version.unwrap_or(0)) {
            tracing::debug!(
                version,
                "settings changed without a message reaching this process"
            );
        }
        Ok(())
    }

    /// Drops every cached setting of this process.
    pub(in crate::store) fn forget_cached_settings(self) {
        self.slice::<super::meta::SettingsCache>()
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
        *self
            .slice::<super::blocks::GlobalBlocksCache>()
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = None;
        self.people().forget_cached_pipelines();
    }

    /// Follows published settings versions until `stop` is cancelled (the server stops): a task
    /// per process. After a reconnect (messages may have been missed) the counter is read again.
    pub async fn follow_settings(
        self,
        stop: tokio_util::sync::CancellationToken,
    ) -> Result<(), fred::error::Error> {
        let subscriber = self.subscriber()?;
        subscriber.init().await?;
        subscriber.subscribe(self.keys.settings_channel()).await?;
        drop(subscriber.manage_subscriptions());
        let (mut messages, mut reconnects) = (subscriber.message_rx(), subscriber.reconnect_rx());
        let store = Store::clone(&self);
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    () = stop.cancelled() => break,
                    msg = messages.recv() => match msg {
                        Ok(msg) => {
                            if let Some(v) = msg.value.as_u64() {
                                store.projects().adopt_settings_version(v);
                            }
                        }
                        Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {
                            store.slice::<SettingsVersion>().next_check_ms.store(0, Ordering::Relaxed);
                        }
                        Err(_) => break,
                    },
                    r = reconnects.recv() => match r {
                        Ok(_) => store.slice::<SettingsVersion>().next_check_ms.store(0, Ordering::Relaxed),
                        Err(_) => break,
                    },
                }
            }
            let _ = subscriber.quit().await;
        });
        Ok(())
    }
}
