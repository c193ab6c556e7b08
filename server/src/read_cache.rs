//! Public reads served from a cache: the public JSON's answers and the data the public pages are
//! rendered from are computed at most once per [`FRESH_FOR`] per address and process, and
//! concurrent misses of one address share one computation. So a flood of page or JSON reads
//! costs Redis one read a second per address, whatever the number of callers. The cache is
//! bounded in bytes; a page is still rendered per request (each carries its own CSP nonce).

use crate::store;
use app::model::DownloaderRow;
use axum::{
    body::{Body, Bytes},
    extract::{Request, State},
    http::{HeaderMap, Method, StatusCode},
    middleware::Next,
    response::{IntoResponse, Response},
};
use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

/// How long a computed answer is served to everyone.
pub const FRESH_FOR: Duration = Duration::from_secs(1);
/// The most bytes of answers the cache holds.
const CAPACITY: u64 = 64 * 1024 * 1024;
/// The largest answer served (none of the public JSON comes near it; beyond, 503).
const LARGEST: usize = 16 * 1024 * 1024;

/// An answer as computed once: what every caller of its address gets within [`FRESH_FOR`].
#[derive(Clone)]
struct Answer {
    status: StatusCode,
    headers: HeaderMap,
    body: Bytes,
}

/// The cached answers and page data; cheap to clone.
#[derive(Clone)]
pub struct ReadCache {
    answers: moka::future::Cache<String, Option<Arc<Answer>>>,
    pages: moka::future::Cache<String, Arc<app::data::PageData>>,
}

impl Default for ReadCache {
    fn default() -> Self {
        Self {
            answers: moka::future::Cache::builder()
                .time_to_live(FRESH_FOR)
                .max_capacity(CAPACITY)
                .weigher(|k: &String, v: &Option<Arc<Answer>>| {
                    let body = v.as_ref().map_or(0, |a| a.body.len());
                    (k.len() + body).try_into().unwrap_or(u32::MAX)
                })
                .build(),
            pages: moka::future::Cache::builder()
                .time_to_live(FRESH_FOR)
                .max_capacity(10_000)
                .build(),
        }
    }
}

impl ReadCache {
    /// Drops every cached answer and page: settings changed (here or in another process).
    pub fn forget_all(&self) {
        self.answers.invalidate_all();
        self.pages.invalidate_all();
    }

    /// Whether an answer for `uri` asked with `Host: host` is cached now.
    pub fn holds_answer(&self, host: &str, uri: &str) -> bool {
        self.answers.contains_key(&format!("{host}\0{uri}"))
    }

    /// The data of the public page at `path`, read at most once per [`FRESH_FOR`].
    pub async fn page(&self, store: &crate::store::Store, path: &str) -> Arc<app::data::PageData> {
        self.pages
            .get_with(path.to_string(), async move {
                Arc::new(app::data::load_page(store, path).await)
            })
            .await
    }
}

/// Middleware of the admin panel: after a change (a POST, PUT, PATCH or DELETE that succeeded,
/// but logging in or out, which change nothing a reader sees), every cached read is dropped, so
/// what an admin changes (the Warrior project list, a project's settings) shows at once. A HEAD
/// or an OPTIONS, which anyone may send, changes nothing and drops nothing.
pub async fn forget_after_change(
    State(cache): State<ReadCache>,
    req: Request,
    next: Next,
) -> Response {
    let writes = matches!(
        *req.method(),
        Method::POST | Method::PUT | Method::PATCH | Method::DELETE
    );
    let session_only = matches!(
        req.uri().path(),
        "/admin/api/login" | "/admin/api/logout" | "/admin/api/session"
    );
    let change = writes && !session_only;
    let resp = next.run(req).await;
    // Only a change that was made: a refused call (anonymous, forbidden, invalid) changed
    // nothing and must not cost every reader a fresh computation.
    if change && resp.status().is_success() {
        cache.forget_all();
    }
    resp
}

/// Middleware of the public JSON: a GET is answered from the cache, computed by the handler on
/// a miss (once for all concurrent misses). `/healthz` is always asked afresh, and so is a
/// request that carries credentials (`Authorization`: a pipeline's view of `/projects.json`),
/// whose answer is its own; any other read is the same with or without one. Answers are keyed by
/// path, the query's known fields ([`QUERY_FIELDS`]) and `Host` (the links in them follow it),
/// so one caller's header never reaches another's answer; the request goes on with only those
/// fields, so a query of random fields is the cached answer, not a fresh computation.
pub async fn serve_cached(
    State(cache): State<ReadCache>,
    mut req: Request,
    next: Next,
) -> Response {
    // A pipeline's view, and a script load of JSONP by the tracker's own page (refused by the
    // handler), are each answered afresh.
    let personal = req.uri().path() == "/projects.json"
        && (req
            .headers()
            .contains_key(axum::http::header::AUTHORIZATION)
            || crate::fetch_meta::script_of_own_page(req.headers()));
    if req.method() != Method::GET || req.uri().path() == "/healthz" || personal {
        return next.run(req).await;
    }
    keep_known_query(&mut req);
    let key = cache_key(&req);
    let answer = cache
        .answers
        .get_with(key, async {
            let resp = next.run(req).await;
            let (parts, body) = resp.into_parts();
            match axum::body::to_bytes(body, LARGEST).await {
                Ok(body) => Some(Arc::new(Answer {
                    status: parts.status,
                    headers: parts.headers,
                    body,
                })),
                Err(_) => None,
            }
        })
        .await;
    match answer {
        Some(a) => {
            let mut resp = Response::new(Body::from(a.body.clone()));
            *resp.status_mut() = a.status;
            *resp.headers_mut() = a.headers.clone();
            resp
        }
        None => (
            StatusCode::SERVICE_UNAVAILABLE,
            [(axum::http::header::RETRY_AFTER, "1")],
            "The answer is larger than the tracker serves.\n",
        )
            .into_response(),
    }
}

/// The query fields the public reads take (`downloaders.json`'s page, search and sort; the
/// windows; `tracker-stats.json`'s minutes; JSONP's callback): any other is dropped before the
/// read, and from its cache key.
pub const QUERY_FIELDS: [&str; 9] = [
    "offset", "limit", "q", "name", "sort", "dir", "window", "minutes", "callback",
];

/// `req`'s query with only [`QUERY_FIELDS`], each once (the first), in the order sent.
fn keep_known_query(req: &mut Request) {
    let Some(query) = req.uri().query() else {
        return;
    };
    let mut seen = std::collections::HashSet::new();
    let kept: Vec<&str> = query
        .split('&')
        .filter(|pair| {
            let field = pair.split('=').next().unwrap_or_default();
            QUERY_FIELDS.contains(&field) && seen.insert(field)
        })
        .collect();
    let path = req.uri().path();
    let uri = if kept.is_empty() {
        path.to_string()
    } else {
        format!("{path}?{}", kept.join("&"))
    };
    if let Ok(uri) = uri.parse() {
        *req.uri_mut() = uri;
    }
}

/// The cache key of a public read: what its answer depends on.
fn cache_key(req: &Request) -> String {
    let host = req
        .headers()
        .get(axum::http::header::HOST)
        .map(|h| String::from_utf8_lossy(h.as_bytes()).into_owned())
        .unwrap_or_default();
    format!("{host}\0{}", req.uri())
}
/// How long one read of a project's downloaders serves every page asked for.
const DOWNLOADERS_FRESH_FOR: Duration = Duration::from_secs(2);

/// One read of every downloader: when, the server time it is as of, the rows.
type Read = (Instant, u64, Arc<Vec<DownloaderRow>>);

/// Recent reads of every downloader, by project and window, shared by the pages asked for
/// within [`DOWNLOADERS_FRESH_FOR`].
#[derive(Clone, Default)]
pub struct DownloaderCache {
    reads: Arc<Mutex<HashMap<(String, u64), Read>>>,
}

impl DownloaderCache {
    /// Every downloader of `slug` with its sums over `window` minutes, and the read's time.
    pub async fn rows(
        &self,
        store: &store::Store,
        slug: &str,
        window: u64,
    ) -> store::StoreResult<(u64, Arc<Vec<DownloaderRow>>)> {
        let key = (slug.to_string(), window);
        if let Some((at, now, rows)) = self.lock().get(&key) {
            if at.elapsed() < DOWNLOADERS_FRESH_FOR {
                return Ok((*now, rows.clone()));
            }
        }
        let now = store::now_ms();
        let (mut rows, sums) = tokio::try_join!(
            store.figures().all_downloaders(slug),
            store.figures().downloader_window(slug, now, window)
        )?;
        store::set_window_sums(&mut rows, &sums);
        let rows = Arc::new(rows);
        let mut reads = self.lock();
        reads.retain(|_, (at, _, _)| at.elapsed() < DOWNLOADERS_FRESH_FOR);
        reads.insert(key, (Instant::now(), now, rows.clone()));
        Ok((now, rows))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<(String, u64), Read>> {
        self.reads.lock().unwrap_or_else(|e| e.into_inner())
    }
}
