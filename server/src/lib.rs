//! The tracker process. [`start`] builds it from a [`Config`] (the same way for `tracker serve`
//! and the tests), [`Running::serve`] serves it.
//!
//! | module | what it is for |
//! |---|---|
//! | [`config`] | every setting: the environment and flags, read into one [`Config`] |
//! | [`start`] | the one start-up path: connect, build the [`App`], the start-up tasks, serve |
//! | [`routes`] | the route table, grouped by caller |
//! | [`api`] | HTTP handlers: warrior API, public JSON, pages, live websocket and feed, backfeed |
//! | [`admin`] | the admin panel's JSON API: accounts, sessions, CSRF, bulk actions |
//! | [`cli`] | the `tracker` command line |
//! | [`limits`] | every limit on what clients send and hold, and the checks of warrior input |
//! | [`store`] | the Redis store: Lua scripts and typed operations (and the pages' data) |
//! | [`keys`] | every Redis key name |
//! | [`batcher`] | coalesces concurrent claims and dones into single script calls |
//! | [`fleet`] | the warrior API's callers gathered in the process, flushed every 2 s |
//! | [`hub`] | one pub/sub subscription folded into shared frames for the live websocket and feed |
//! | [`websocket`] | the server side of RFC 6455: a message framed once, written to every viewer as it is |
//! | [`viewers`] | live viewers admitted under the caps, in all and per IP |
//! | [`throttle`] | per-address rate limits kept in the process: the public reads |
//! | [`read_cache`] | public reads computed at most once a second, one computation for concurrent misses |
//! | [`redis_watch`] | whether Redis answers now, probed on a connection of its own |
//! | [`embedded_redis`] | the private `redis-server` started when `REDIS_URL` is unset |
//! | [`precompress`] | the bundles' brotli and gzip copies served from `/pkg` |
//! | [`ops`] | the use cases the panel and the command line share, each audited |
//! | [`listing`] | the generated Warrior HQ list, `auto_project`, recorded lifecycle changes |
//! | [`offloader`] | moves done items, long queues' tails and the completion log to disk, under a lease |
//! | [`segment`] | the segment files those items live in: sorted, compressed, with a filter |

pub mod admin;
pub mod api;
pub mod batcher;
pub mod cli;
pub mod config;
pub mod embedded_redis;
pub mod fleet;
pub mod hub;
pub mod keys;
pub mod limits;
pub mod listing;
pub mod offloader;
pub mod ops;
pub mod precompress;
pub mod read_cache;
pub mod redis_watch;
pub mod routes;
pub mod segment;
pub mod start;
pub mod store;
pub mod throttle;
pub mod viewers;
pub mod web;
pub mod websocket;

pub use config::Config;
pub use routes::router;
pub use start::{start, Running, StartupReport};

use axum::extract::FromRef;
use leptos::prelude::LeptosOptions;
use std::sync::Arc;
use store::Store;

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
    pub downloaders: api::downloaders::DownloaderCache,
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
    /// Slots for the admin logins' password checks, [`admin::login::PASSWORD_CHECKS`] at once.
    pub password_checks: Arc<tokio::sync::Semaphore>,
    /// The warrior API's callers seen since the last flush.
    pub fleet: Arc<fleet::ApiFleet>,
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
        let mut store = Store::connect(&config.redis_url, &config.namespace, 8).await?;
        store.set_fleet_silence(config.fleet_silence);
        let hub = hub::Hub::start(&store).await?;
        let leptos = LeptosOptions::builder()
            .output_name("tracker")
            .site_root(config.site_root.to_string_lossy().into_owned())
            .site_pkg_dir("pkg")
            .env(leptos::config::Env::PROD)
            .build();
        // Settings changed by any process reach this one at once (or within a second).
        let closing = tokio_util::sync::CancellationToken::new();
        store.follow_settings(closing.clone()).await?;
        // This month's contributors across all projects, written every few seconds.
        store::contributors::spawn_flusher(store.clone(), closing.clone());
        let read_cache = read_cache::ReadCache::default();
        let (mut versions, cache) = (store.settings_versions(), read_cache.clone());
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
        let (mut changes, watchers) = (redis.subscribe(), hub.clone());
        tokio::spawn(async move {
            while changes.changed().await.is_ok() {
                watchers.resync_all();
            }
        });
        listing::start_refreshing(
            store.clone(),
            closing.clone(),
            web::base_url(config, &Default::default()),
        );
        store.set_offload_dir(config.offload_dir.clone());
        // Warrior HQ's key, made now if it is not yet: later it is only read.
        if let Err(e) = store.hq_key().await {
            tracing::warn!(error = %e, "reading Warrior HQ's key; tried again at the first update");
        }
        if config.offloader {
            offloader::Offloader::new(
                store.clone(),
                config.offload_dir.clone(),
                config.archive_dir.clone(),
            )
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
            password_checks: Arc::new(tokio::sync::Semaphore::new(admin::login::PASSWORD_CHECKS)),
            fleet,
        })
    }
}
