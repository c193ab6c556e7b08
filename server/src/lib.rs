//! The tracker process.
//!
//! | module | what it is for |
//! |---|---|
//! | [`admin`] | the admin panel's JSON API: accounts, sessions, CSRF, bulk actions |
//! | [`config`] | settings from the environment and flags |
//! | [`embedded_redis`] | the private `redis-server` started when `REDIS_URL` is unset |
//! | [`keys`] | every Redis key name |
//! | [`store`] | the Redis store: Lua scripts and typed operations |
//! | [`batcher`] | coalesces concurrent claims and dones into single script calls |
//! | [`hub`] | one pub/sub subscription folded into shared frames for the live websocket and feed |
//! | [`api`] | HTTP handlers: warrior API, public JSON, live websocket |
//! | [`routes`] | the route table, grouped by caller |
//! | [`cli`] | the `tracker` command line |

pub mod admin;
pub mod api;
pub mod batcher;
pub mod cli;
pub mod config;
pub mod embedded_redis;
pub mod hub;
pub mod keys;
pub mod routes;
pub mod store;

pub use routes::router;

use app::{
    backend::Backend,
    model::{Leaderboard, ProjectSummary},
};
use axum::extract::FromRef;
use leptos::prelude::LeptosOptions;
use std::net::SocketAddr;
use store::{Store, PAGE_RECENT};

/// Shared state of the handlers; cheap to clone.
#[derive(Clone)]
pub struct AppState {
    /// The Redis store.
    pub store: Store,
    /// The live fan-out.
    pub hub: hub::Hub,
    /// Leptos settings (site root, output name).
    pub leptos: LeptosOptions,
    /// Batches claims and dones.
    pub batcher: batcher::Batcher,
    /// Take the client IP from `X-Forwarded-For` (behind a trusted proxy).
    pub trust_proxy: bool,
    /// The API token of scripts acting as admin (`Authorization: Bearer ...`).
    pub admin_token: Option<String>,
    /// Mark the admin session cookie `Secure` (served over HTTPS).
    pub secure_cookies: bool,
}

impl FromRef<AppState> for LeptosOptions {
    fn from_ref(state: &AppState) -> Self {
        state.leptos.clone()
    }
}

impl AppState {
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
        let batcher = batcher::Batcher::new(store.clone());
        Ok(Self {
            store,
            hub,
            leptos,
            batcher,
            trust_proxy: false,
            admin_token: None,
            secure_cookies: false,
        })
    }
}

/// Serves the app on `listener` until `shutdown` resolves.
pub async fn serve(
    listener: tokio::net::TcpListener,
    state: AppState,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let app = router(state).into_make_service_with_connect_info::<SocketAddr>();
    axum::serve(listener, app)
        .with_graceful_shutdown(shutdown)
        .await
}

#[async_trait::async_trait]
impl Backend for Store {
    async fn projects(&self) -> Result<Vec<ProjectSummary>, String> {
        self.list_projects().await.map_err(|e| {
            tracing::error!(error = %e, "listing projects");
            "The tracker could not read its data.".to_string()
        })
    }

    async fn leaderboard(&self, slug: &str) -> Result<Option<Leaderboard>, String> {
        if !store::valid_slug(slug) {
            return Ok(None);
        }
        Store::leaderboard(self, slug, -1, PAGE_RECENT)
            .await
            .map_err(|e| {
                tracing::error!(error = %e, slug, "reading leaderboard");
                "The tracker could not read its data.".to_string()
            })
    }
}
