//! The [`App`] every handler shares ([`AppState`]), built once from a [`Config`], and the
//! background loops it starts as it is built:
//!
//! | loop | what it does |
//! |---|---|
//! | the hub ([`hub::Hub::start`]) | one pub/sub subscription folded into the live frames |
//! | the settings follower ([`crate::store::projects::Projects::follow_settings`]) | drops cached settings when any process changes them |
//! | the contributors' flusher ([`store::contributors::spawn_flusher`]) | this month's contributors across all projects, every few seconds |
//! | the folder ([`store::figures::folder`]) | the per-downloader figures and the events, from the completion log, every 200 ms |
//! | the settings watcher (here) | on a settings change: forgets the cached reads, follows new projects' live channels |
//! | the Redis probe ([`redis_watch::RedisWatch::start_probing`]) | whether Redis answers, every 250 ms |
//! | the Redis check ([`redis_watch::RedisWatch::start_checking`]) | how Redis is set (eviction, version), every minute |
//! | the resync on reconnect (here) | a fresh snapshot to every live viewer when Redis answers again |
//! | the Warrior HQ project list ([`project_list::start_refreshing`]) | the generated project list, kept current |
//! | the offloader ([`store::offload::offloader::Offloader::spawn`], unless disabled) | moves done items, long queues' tails and the completion log to disk |
//! | the fleet's flusher ([`fleet::ApiFleet::start_flushing`]) | the warrior API's callers, written every 2 s |
//!
//! [`crate::start`] runs the start-up tasks before it serves.

use crate::{
    batcher,
    config::{self, Config},
    fleet, hub, project_list, read_cache, redis_watch,
    store::{self, Store},
    throttle, viewers,
};
use axum::extract::FromRef;
use leptos::prelude::LeptosOptions;
use std::sync::Arc;

/// Shared state of the handlers: one `Arc` of an [`App`], which it derefs to. Every request
/// clones it (axum's `State`), so it is one reference count, not a copy of each part.
#[derive(Clone)]
pub struct AppState(Arc<App>);

impl std::ops::Deref for AppState {
    type Target = App;

    fn deref(&self) -> &App {
        &self.0
    }
}

impl From<App> for AppState {
    fn from(app: App) -> Self {
        Self(Arc::new(app))
    }
}

/// What the handlers share, built once by [`App::new`] from a [`Config`] and never changed.
pub struct App {
    /// The Redis store.
    pub store: Store,
    /// The live fan-out.
    pub hub: hub::Hub,
    /// Leptos settings (site root, output name).
    pub leptos: LeptosOptions,
    /// Batches claims and dones.
    pub batcher: batcher::Batcher,
    /// Whether Redis answers now.
    pub redis: redis_watch::RedisWatch,
    /// The settings it was built from ([`start`]): client addresses, the admin token, cookies,
    /// the archive directory, and what clients may send and hold.
    pub config: Config,
    /// Recent reads of every downloader, for `downloaders.json`.
    pub downloaders: read_cache::DownloaderCache,
    /// Slots for rendering public pages: all cores but one, so a flood of page views leaves a
    /// core to the warriors (a page waits for a slot, or gets 503).
    pub page_renders: Arc<tokio::sync::Semaphore>,
    /// The public reads of the last second.
    pub read_cache: read_cache::ReadCache,
    /// Each address's allowance of public reads.
    pub read_throttle: throttle::Throttle,
    /// Each network's allowance of Warrior HQ registrations and updates.
    pub hq_throttle: Arc<throttle::Throttle>,
    /// The live viewers watching now.
    pub viewers: viewers::Viewers,
    /// Cancelled when the server stops: live streams end at once instead of holding it up.
    pub closing: tokio_util::sync::CancellationToken,
    /// Slots for the admin logins' password checks, [`crate::limits::PASSWORD_CHECKS`] at once.
    pub password_checks: Arc<tokio::sync::Semaphore>,
    /// The warrior API's callers seen since the last flush.
    pub fleet: Arc<fleet::ApiFleet>,
    /// This process's HTTP requests by route group, for `/metrics`.
    pub http_metrics: Arc<crate::http_metrics::HttpMetrics>,
}

impl FromRef<AppState> for LeptosOptions {
    fn from_ref(state: &AppState) -> Self {
        state.leptos.clone()
    }
}

impl App {
    /// Connects to the Redis of `config` and starts the hub, the settings follower and the
    /// Redis probe.
    pub async fn new(config: &Config) -> Result<Self, store::StoreError> {
        if let Some(why) =
            config::offload_dir_conflict(&config.offload_dir, &[("archive", &config.archive_dir)])
        {
            return Err(store::StoreError::Disk(why));
        }
        let store = Store::connect(
            &config.redis_url,
            &config.namespace,
            8,
            config.offload_dir.clone(),
        )
        .await?;
        let storage = crate::storage::Storage::open(
            config.storage.as_deref(),
            &config.offload_dir,
            tokio::runtime::Handle::current(),
        )
        .map_err(store::StoreError::Disk)?;
        let store = store.with_storage(storage);
        store.fleet().set_fleet_silence(config.fleet_silence);
        let hub = hub::Hub::start(&store).await?;
        let leptos = LeptosOptions::builder()
            .output_name("tracker")
            .site_root(config.site_root.to_string_lossy().into_owned())
            .site_pkg_dir("pkg")
            .env(leptos::config::Env::PROD)
            .build();
        // Settings changed by any process reach this one at once (or within a second).
        let closing = tokio_util::sync::CancellationToken::new();
        store.projects().follow_settings(closing.clone()).await?;
        // This month's contributors across all projects, written every few seconds.
        store::contributors::spawn_flusher(store.clone(), closing.clone());
        // The per-downloader figures and the events, folded from the completion log.
        store::figures::folder::spawn(store.clone(), closing.clone());
        let read_cache = read_cache::ReadCache::default();
        let (mut versions, cache) = (store.projects().settings_versions(), read_cache.clone());
        let (projects, watched) = (store.clone(), hub.clone());
        tokio::spawn(async move {
            while versions.changed().await.is_ok() {
                cache.forget_all();
                // A project made or destroyed anywhere: its live channel followed at once.
                if let Err(e) = watched.sync_projects(&projects).await {
                    tracing::warn!(error = %e, "following the projects' live channels; retried within seconds");
                }
            }
        });
        let redis = redis_watch::RedisWatch::default();
        redis.start_probing(&store);
        redis.start_checking(&store, config.redis_check);
        let (mut changes, watchers) = (redis.subscribe(), hub.clone());
        tokio::spawn(async move {
            while changes.changed().await.is_ok() {
                watchers.resync_all();
            }
        });
        project_list::start_refreshing(
            store.clone(),
            closing.clone(),
            config.base_url(&Default::default()),
        );
        // Warrior HQ's key, made now if it is not yet: later it is only read.
        if let Err(e) = store.fleet().hq_key().await {
            tracing::warn!(error = %e, "reading Warrior HQ's key; tried again at the first update");
        }
        if config.offloader {
            store::offload::offloader::Offloader::new(store.clone(), config.archive_dir.clone())
                .with_log_budget(config.limits.log_budget)
                .spawn(closing.clone());
        }
        let batcher = batcher::Batcher::new(store.clone(), config.batch_workers);
        let fleet = Arc::new(fleet::ApiFleet::default());
        let up = redis.clone();
        fleet.start_flushing(store.clone(), move || up.is_up(), closing.clone());
        Ok(Self {
            store,
            hub,
            leptos,
            batcher,
            redis,
            config: config.clone(),
            downloaders: Default::default(),
            viewers: Default::default(),
            read_cache,
            read_throttle: Default::default(),
            hq_throttle: Default::default(),
            page_renders: Arc::new(tokio::sync::Semaphore::new(
                std::thread::available_parallelism()
                    .map_or(1, |n| n.get().saturating_sub(1))
                    .max(1),
            )),
            closing,
            password_checks: Arc::new(tokio::sync::Semaphore::new(crate::limits::PASSWORD_CHECKS)),
            fleet,
            http_metrics: Default::default(),
        })
    }
}
