//! The one start-up path: [`start`] builds the process from a [`Config`] exactly as `tracker
//! serve` and the tests both use it, runs the start-up tasks, and [`Running::serve`] serves it.
//!
//! The start-up tasks:
//! - the one-time setup link, made while no admin account exists ([`Running::setup_link`]);
//! - the bundles' brotli and gzip copies in the site's `pkg/`, remade when missing or older
//!   than their bundle ([`crate::precompress`]; in the background);
//! - the queues of projects made before random order lived in the scores, scored
//!   ([`crate::store::queue::Queue::shuffle_all_queues`](crate::store::Store::shuffle_all_queues); in the background).
//!
//! The background tasks' outcome is [`Running::startup`]: the server logs it, tests wait on it.

use crate::{
    config::Config,
    state::{App, AppState},
    store::StoreError,
};
use std::{net::SocketAddr, path::PathBuf, sync::Arc, time::Duration};

/// A built process, listening, not serving yet.
pub struct Running {
    /// Where it listens (the port picked when the config asked for port 0).
    pub addr: SocketAddr,
    /// What the handlers share.
    pub state: AppState,
    /// The one-time link that creates the first admin account, while none exists.
    pub setup_link: Option<String>,
    /// The background start-up tasks, with what they did (for a caller to take and wait on;
    /// they run whether taken or not).
    pub startup: Option<tokio::task::JoinHandle<StartupReport>>,
    listener: tokio::net::TcpListener,
}

/// What the background start-up tasks did.
#[derive(Debug)]
pub struct StartupReport {
    /// The compressed copies of the bundles written (or why that failed).
    pub compressed: Result<Vec<PathBuf>, String>,
    /// The projects whose queues were scored for random order, with how many items (or why
    /// that failed; it is tried again at the next start).
    pub scored: Result<Vec<(String, u64)>, String>,
}

/// Why the process could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// Redis refused the set-up (not merely unreachable: that is waited for).
    #[error("redis: {0}")]
    Store(#[from] StoreError),
    /// Redis is set so that the tracker must not run on it (older than 7, or evicting keys).
    #[error("{0}")]
    Redis(String),
    /// The listening address could not be bound.
    #[error("listen on {addr}: {error}")]
    Listen {
        /// The address.
        addr: SocketAddr,
        /// What the system said.
        error: std::io::Error,
    },
}

/// Builds the process of `config`: waits for its Redis (a Redis not up yet, or restarting, is
/// waited for with the wait logged), builds the [`App`], binds the address, makes the setup
/// link if no account exists, and starts the background start-up tasks.
pub async fn start(config: Config) -> Result<Running, StartError> {
    let app = connect(&config).await?;
    check_redis(&app.store).await?;
    let listener = tokio::net::TcpListener::bind(config.listen)
        .await
        .map_err(|error| StartError::Listen {
            addr: config.listen,
            error,
        })?;
    let addr = listener.local_addr().map_err(|error| StartError::Listen {
        addr: config.listen,
        error,
    })?;
    let pkg_dir = config.site_root.join(&*app.leptos.site_pkg_dir);
    for bundle in [&*app.leptos.output_name, app::ADMIN_BUNDLE] {
        let js = pkg_dir.join(format!("{bundle}.js"));
        if !js.exists() {
            tracing::warn!(missing = %js.display(), "a Wasm bundle is missing: its pages will not come alive (`make build` builds both)");
        }
    }
    let setup_link = crate::admin::prepare_setup(&app.store)
        .await?
        .map(|token| config.setup_link(addr, &token));
    let startup = Some(tokio::spawn(startup_tasks(app.store.clone(), pkg_dir)));
    tracing::info!(%addr, site_root = %config.site_root.display(), "tracker listening");
    Ok(Running {
        addr,
        state: app.into(),
        setup_link,
        startup,
        listener,
    })
}

impl Running {
    /// Serves until `shutdown` resolves, then ends the live streams, lets the requests under
    /// way finish (at most [`DRAIN`]) and returns.
    pub async fn serve(
        self,
        shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    ) -> std::io::Result<()> {
        serve(self.listener, self.state, shutdown).await
    }
}

/// Refuses a Redis older than 7, or one that evicts keys when full (`REDIS_URL`'s; the private
/// one is set to `noeviction`); warns of one that keeps no append-only file, or keeps hashes
/// compact past [`crate::embedded_redis::HASH_LISTPACK_ENTRIES`] fields (docs/limits-and-security.md, "Redis").
async fn check_redis(store: &crate::store::Store) -> Result<(), StartError> {
    let setup = store.redis_setup().await?;
    if let Some(problem) = setup.problems().into_iter().next() {
        return Err(StartError::Redis(problem));
    }
    for node in &setup.without_aof {
        tracing::warn!(%node, "redis keeps no append-only file (appendonly no): if it restarts, it loses every change since its last snapshot, items and dones included (docs/operators.md, \"Durability\")");
    }
    for (node, entries) in &setup.big_listpacks {
        tracing::warn!(%node, entries, "redis keeps hashes compact up to {entries} fields: set `hash-max-listpack-entries 64` on it, the per-downloader hashes cost it less (docs/limits-and-security.md, \"Redis\")");
    }
    Ok(())
}

/// The app of `config`, once Redis answers.
async fn connect(config: &Config) -> Result<App, StoreError> {
    let mut wait = Duration::from_millis(100);
    let started = std::time::Instant::now();
    loop {
        match App::new(config).await {
            Err(StoreError::Unavailable(e)) => {
                tracing::warn!(error = %e, waited_s = started.elapsed().as_secs(), "waiting for redis");
                tokio::time::sleep(wait).await;
                wait = (wait * 2).min(Duration::from_secs(5));
            }
            other => return other,
        }
    }
}

/// The background start-up tasks (see the module), logged as they end.
async fn startup_tasks(store: crate::store::Store, pkg_dir: PathBuf) -> StartupReport {
    let dir = pkg_dir.clone();
    let compressed = tokio::task::spawn_blocking(move || crate::precompress::refresh(&dir))
        .await
        .map_err(|e| e.to_string())
        .and_then(|r| r.map_err(|e| e.to_string()));
    match &compressed {
        Ok(written) if !written.is_empty() => {
            tracing::info!(copies = written.len(), dir = %pkg_dir.display(), "compressed the bundles")
        }
        Ok(_) => {}
        Err(e) => {
            tracing::warn!(error = %e, dir = %pkg_dir.display(), "could not compress the bundles; they go out gzip-compressed per request")
        }
    }
    let scored = store
        .queue()
        .shuffle_all_queues()
        .await
        .map_err(|e| e.to_string());
    match &scored {
        Ok(scored) => {
            for (slug, items) in scored {
                tracing::info!(%slug, items, "scored the waiting items for random order");
            }
        }
        Err(e) => {
            tracing::warn!(error = %e, "could not score the queues of older projects; they keep drawing at random (tried again at the next start)")
        }
    }
    StartupReport { compressed, scored }
}

/// How long the server waits, once told to stop, for requests under way to be answered.
const DRAIN: std::time::Duration = std::time::Duration::from_secs(8);

/// Serves the app on `listener` until `shutdown` resolves, then ends the live streams, lets the
/// requests under way finish (at most [`DRAIN`]) and returns.
///
/// Each connection must send its request headers within the header timeout, and at most
/// [`limits::Limits::max_connections`] are open at once: one beyond gets a 503 and is closed.
async fn serve(
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
    let store = state.store.clone();
    let limits = state.config.limits.clone();
    let app = crate::routes::router(state);
    let open = Arc::new(tokio::sync::Semaphore::new(limits.max_connections()));
    let mut http = auto::Builder::new(TokioExecutor::new());
    // Header names in title case (`Content-Type`): a client that matches a raw answer with
    // one expression (the grab scripts' clock check of `/now`) sees them as nginx writes them.
    http.http1()
        .title_case_headers(true)
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
    // The contributors noted since the last flush, the drained requests' included.
    if let Err(e) = store.figures().flush_contributors().await {
        tracing::warn!(error = %e, "writing this month's contributors at exit");
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
