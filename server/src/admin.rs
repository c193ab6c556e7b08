//! The admin panel's server side: accounts and sessions, CSRF, and the JSON API under
//! `/admin/api` that the panel pages and scripts both use (its routes: [`crate::routes`]; the
//! use cases it shares with the command line: [`crate::ops`]).
//!
//! | module | what it is for |
//! |---|---|
//! | [`auth`] | who is calling: sessions, the API token, roles; new accounts, password hashes |
//! | [`login`] | login (counted before the password is checked), logout, first-run setup |
//! | [`csrf`] | the CSRF and Origin guard of every state-changing request |
//! | [`projects`] | overview, upload targets, backfeed key, creating and destroying projects |
//! | [`settings`] | a project's settings, description and admins |
//! | [`items`] | queues, adding items (streamed), moving, clearing; one item with its decay score and timeline |
//! | [`claims`] | claims by downloader, release by filter, failed items |
//! | [`people`] | accounts, block lists, the audit log |
//! | [`logs`] | the completion log as streamed NDJSON |
//! | [`archive`] | archiving the completion log to gzip NDJSON files, listed and downloadable |
//! | [`tokens`] | per-account API tokens for scripts |
//! | [`pipelines`] | pipeline tokens for warrior clients (global admins) |
//! | [`project_list`] | the Warrior HQ project list (`projects.json`) and its versions |
//! | [`listing`] | a project's Warrior listing and lifecycle, the `auto_project` pin |
//! | [`fleet`] | the fleet: API downloaders and Warrior HQ instances, with addresses and totals |
//! | [`metrics`] | `GET /metrics`: per-project figures from Redis and this process's HTTP figures, in the Prometheus text format |

pub mod archive;
pub mod auth;
pub mod claims;
pub mod csrf;
pub mod dictionary;
pub mod fleet;
pub mod items;
pub mod listing;
pub mod login;
pub mod logs;
pub mod metrics;
pub mod people;
pub mod pipelines;
pub mod project_list;
pub mod projects;
pub mod settings;
pub mod tokens;

use crate::{ops::OpsError, store::Store, web::ApiError};
use tower_sessions::{cookie::SameSite, Expiry, SessionManagerLayer};
use tower_sessions_redis_store::RedisStore;

/// A refused or failed operation as the panel answers it.
impl From<OpsError> for ApiError {
    fn from(e: OpsError) -> Self {
        match e {
            OpsError::Invalid(reason) => ApiError::bad_request(reason),
            OpsError::NoProject(_) => ApiError::no_project(),
            OpsError::NotFound(reason) => ApiError::not_found(reason),
            OpsError::Conflict(reason) => {
                ApiError::Client(axum::http::StatusCode::CONFLICT, reason)
            }
            OpsError::Store(e) => ApiError::Internal(e),
        }
    }
}

/// The session cookie's name (shared with the panel's model).
pub use app::model::admin::SESSION_COOKIE;

/// How long an idle session lasts.
pub const SESSION_IDLE: tower_sessions::cookie::time::Duration =
    tower_sessions::cookie::time::Duration::hours(12);

/// Sessions in Redis: HttpOnly, SameSite=Lax, `Secure` when asked, expiring when idle.
pub fn session_layer(
    store: &Store,
    secure: bool,
) -> SessionManagerLayer<RedisStore<fred::prelude::Pool>> {
    SessionManagerLayer::new(RedisStore::new(store.pool().clone()))
        .with_name(SESSION_COOKIE)
        .with_http_only(true)
        .with_same_site(SameSite::Lax)
        .with_secure(secure)
        .with_path("/")
        .with_expiry(Expiry::OnInactivity(SESSION_IDLE))
}

/// While no account exists: a fresh setup token (stored, replacing an older one) for the
/// one-time link `/admin/setup?token=...` printed at start. `None` once an account exists.
pub async fn prepare_setup(store: &Store) -> Result<Option<String>, crate::store::StoreError> {
    if store.people().account_count().await? > 0 {
        return Ok(None);
    }
    let token = crate::store::random_token(32);
    store.people().set_setup_token(&token).await?;
    Ok(Some(token))
}
