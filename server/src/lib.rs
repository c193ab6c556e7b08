//! The tracker process.
//!
//! | module | what it is for |
//! |---|---|
//! | [`admin`] | the admin panel's JSON API: accounts, sessions, CSRF, bulk actions |
//! | [`config`] | settings from the environment and flags |
//! | [`embedded_redis`] | the private `redis-server` started when `REDIS_URL` is unset |
//! | [`keys`] | every Redis key name |
//! | [`limits`] | every limit on what clients send and hold, and the checks of warrior input |
//! | [`store`] | the Redis store: Lua scripts and typed operations |
//! | [`redis_watch`] | whether Redis answers now, probed on a connection of its own |
//! | [`batcher`] | coalesces concurrent claims and dones into single script calls |
//! | [`hub`] | one pub/sub subscription folded into shared frames for the live websocket and feed |
//! | [`api`] | HTTP handlers: warrior API, public JSON, live websocket |
//! | [`throttle`] | per-address rate limits kept in the process: the public reads |
//! | [`viewers`] | live viewers admitted under the caps, in all and per IP |
//! | [`websocket`] | the server side of RFC 6455: a message framed once, written to every viewer as it is |
//! | [`read_cache`] | public reads computed at most once a second, one computation for concurrent misses |
//! | [`routes`] | the route table, grouped by caller |
//! | [`ops`] | the use cases the panel and the command line share, each audited |
//! | [`cli`] | the `tracker` command line |

pub mod admin;
pub mod api;
pub mod batcher;
pub mod cli;
pub mod config;
pub mod embedded_redis;
pub mod hub;
pub mod keys;
pub mod limits;
pub mod ops;
pub mod precompress;
pub mod read_cache;
pub mod redis_watch;
pub mod routes;
pub mod store;
pub mod throttle;
pub mod viewers;
pub mod websocket;

pub use routes::router;

use app::{
    backend::Backend,
    model::{ChartData, Leaderboard, ProjectSummary},
};
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

/// What the handlers share, set up by [`App::new`] and adjusted before [`serve`] shares it.
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
    /// Take the client IP from `X-Forwarded-For` (behind a trusted proxy).
    pub trust_proxy: bool,
    /// The API token of scripts acting as admin (`Authorization: Bearer ...`).
    pub admin_token: Option<String>,
    /// Mark the admin session cookie `Secure` (served over HTTPS).
    pub secure_cookies: bool,
    /// Recent reads of every downloader, for `downloaders.json`.
    pub downloaders: api::downloaders::DownloaderCache,
    /// Where completion log archives are written (a directory per project).
    pub archive_dir: std::path::PathBuf,
    /// What clients may send and hold.
    pub limits: limits::Limits,
    /// Slots for rendering public pages: all cores but one, so a flood of page views leaves a
    /// core to the warriors (a page waits for a slot, or gets 503).
    pub page_renders: Arc<tokio::sync::Semaphore>,
    /// The public reads of the last second.
    pub read_cache: read_cache::ReadCache,
    /// Each address's allowance of public reads.
    pub read_throttle: throttle::Throttle,
    /// The live viewers watching now.
    pub viewers: viewers::Viewers,
    /// Cancelled when the server stops: live streams end at once instead of holding it up.
    pub closing: tokio_util::sync::CancellationToken,
    /// Slots for the admin logins' password checks, [`admin::login::PASSWORD_CHECKS`] at once.
    pub password_checks: Arc<tokio::sync::Semaphore>,
}

impl FromRef<AppState> for LeptosOptions {
    fn from_ref(state: &AppState) -> Self {
        state.leptos.clone()
    }
}

impl App {
    /// Connects to Redis at `redis_url` and starts the hub.
    pub async fn new(
        redis_url: &str,
        namespace: &str,
        site_root: &str,
    ) -> Result<Self, store::StoreError> {
        let store = Store::connect(redis_url, namespace, 8).await?;
        let hub = hub::Hub::start(&store).await?;
        let leptos = LeptosOptions::builder()
            .output_name("tracker")
            .site_root(site_root)
            .site_pkg_dir("pkg")
            .env(leptos::config::Env::PROD)
            .build();
        // Settings changed by any process reach this one at once (or within a second).
        let closing = tokio_util::sync::CancellationToken::new();
        store.follow_settings(closing.clone()).await?;
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
        let batcher = batcher::Batcher::new(store.clone());
        Ok(Self {
            store,
            hub,
            leptos,
            batcher,
            redis,
            trust_proxy: false,
            admin_token: None,
            secure_cookies: false,
            downloaders: Default::default(),
            archive_dir: "data/archive".into(),
            limits: Default::default(),
            viewers: Default::default(),
            read_cache,
            read_throttle: Default::default(),
            page_renders: Arc::new(tokio::sync::Semaphore::new(
                std::thread::available_parallelism()
                    .map_or(1, |n| n.get().saturating_sub(1))
                    .max(1),
            )),
            closing,
            password_checks: Arc::new(tokio::sync::Semaphore::new(admin::login::PASSWORD_CHECKS)),
        })
    }
}

/// How long the server waits, once told to stop, for requests under way to be answered.
const DRAIN: std::time::Duration = std::time::Duration::from_secs(8);

/// Serves the app on `listener` until `shutdown` resolves, then ends the live streams, lets the
/// requests under way finish (at most [`DRAIN`]) and returns.
///
/// Each connection must send its request headers within the header timeout, and at most
/// [`limits::Limits::max_connections`] are open at once: one beyond gets a 503 and is closed.
pub async fn serve(
    listener: tokio::net::TcpListener,
    state: impl Into<AppState>,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    use hyper_util::{
        rt::{TokioExecutor, TokioIo, TokioTimer},
        server::{conn::auto, graceful::GracefulShutdown},
    };
    let state: AppState = state.into();
    let closing = state.closing.clone();
    let limits = state.limits.clone();
    let app = router(state);
    let open = Arc::new(tokio::sync::Semaphore::new(limits.max_connections()));
    let mut http = auto::Builder::new(TokioExecutor::new());
    http.http1()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout());
    let graceful = GracefulShutdown::new();
    tokio::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(conn) => conn,
                Err(e) => {
                    // Out of file descriptors, say: wait a moment rather than spin.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let Ok(permit) = open.clone().try_acquire_owned() else {
            tokio::spawn(refuse_connection(stream));
            continue;
        };
        let _ = stream.set_nodelay(true);
        let app = app.clone();
        let service = hyper::service::service_fn(move |mut req: hyper::Request<_>| {
            req.extensions_mut()
                .insert(axum::extract::ConnectInfo(peer));
            tower::ServiceExt::oneshot(app.clone(), req.map(axum::body::Body::new))
        });
        let conn = http
            .serve_connection_with_upgrades(TokioIo::new(stream), service)
            .into_owned();
        let conn = graceful.watch(conn);
        tokio::spawn(async move {
            let _ = conn.await;
            drop(permit);
        });
    }
    drop(listener);
    closing.cancel();
    if tokio::time::timeout(DRAIN, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!("requests still under way after {DRAIN:?}; stopping anyway");
    }
    Ok(())
}

/// Answers a connection over the cap with a 503 and closes it.
async fn refuse_connection(mut stream: tokio::net::TcpStream) {
    use tokio::io::AsyncWriteExt;
    const REASON: &str = "The tracker has too many open connections; retry later.\n";
    let busy = format!(
        "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 5\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{REASON}",
        REASON.len()
    );
    let _ = tokio::time::timeout(std::time::Duration::from_secs(2), async {
        stream.write_all(busy.as_bytes()).await?;
        stream.shutdown().await
    })
    .await;
}

/// How many downloaders the page's cumulative-bytes chart offers.
const CHART_DOWNLOADERS: i64 = 10;

fn read_failed(e: store::StoreError, what: &str, slug: &str) -> String {
    if matches!(e, store::StoreError::Unavailable(_)) {
        tracing::warn!(error = %e, slug, what, "reading page data");
        return api::RECONNECTING.to_string();
    }
    tracing::error!(error = %e, slug, what, "reading page data");
    "The tracker could not read its data.".to_string()
}

#[async_trait::async_trait]
impl Backend for Store {
    async fn projects(&self) -> Result<Vec<ProjectSummary>, String> {
        self.list_projects(store::now_ms())
            .await
            .map_err(|e| read_failed(e, "projects", ""))
    }

    async fn leaderboard(&self, slug: &str, window: u64) -> Result<Option<Leaderboard>, String> {
        if !store::valid_slug(slug) {
            return Ok(None);
        }
        self.board_page(slug, store::now_ms(), window.clamp(1, 1440))
            .await
            .map_err(|e| read_failed(e, "leaderboard", slug))
    }

    async fn downloader_window(
        &self,
        slug: &str,
        window: u64,
    ) -> Result<Vec<(String, u64, u64)>, String> {
        if !store::valid_slug(slug) {
            return Ok(vec![]);
        }
        let (sums, top) = tokio::try_join!(
            Store::downloader_window(self, slug, store::now_ms(), window.clamp(1, 1440)),
            self.top_downloader_names(slug, store::PAGE_DOWNLOADERS),
        )
        .map_err(|e| read_failed(e, "downloader window", slug))?;
        // Only the rows the page holds: with thousands of downloaders the rest would be waste.
        Ok(top
            .into_iter()
            .filter_map(|d| sums.get(&d).map(|&(i, b)| (d, i, b)))
            .collect())
    }

    async fn tracker_figures(&self, slug: &str) -> Result<app::model::TrackerStats, String> {
        if !store::valid_slug(slug) {
            return Ok(Default::default());
        }
        Store::tracker_figures(self, slug, store::now_ms())
            .await
            .map_err(|e| read_failed(e, "tracker statistics", slug))
    }

    async fn charts(&self, slug: &str) -> Result<Option<ChartData>, String> {
        if !store::valid_slug(slug) || self.project(slug).await.ok().flatten().is_none() {
            return Ok(None);
        }
        let charts = Store::charts(self, slug, CHART_DOWNLOADERS)
            .await
            .map_err(|e| read_failed(e, "charts", slug))?;
        // Minute points for the last day; older ones hourly (exact: the series are cumulative).
        let cut = store::now_ms() / 1000 - 86_400;
        let thin = |s: Vec<(u64, u64)>| {
            let at = s.partition_point(|p| p.0 < cut);
            let mut out = app::model::downsample(&s[..at], 3600);
            out.extend_from_slice(&s[at..]);
            out
        };
        let mut downloaders: Vec<(String, Vec<(u64, u64)>)> = charts
            .downloaders
            .into_iter()
            .map(|(d, s)| (d, thin(s)))
            .collect();
        downloaders.sort_by_key(|(_, s)| std::cmp::Reverse(s.last().map_or(0, |p| p.1)));
        Ok(Some(ChartData {
            items: thin(charts.items),
            bytes: thin(charts.bytes),
            downloaders,
        }))
    }
}
