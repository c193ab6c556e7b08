//! The admin panel's server side: accounts and sessions, CSRF, and the JSON API under
//! `/admin/api` that the panel pages and scripts both use.
//!
//! | module | what it is for |
//! |---|---|
//! | [`auth`] | who is calling: sessions, the API token, roles; new accounts, password hashes |
//! | [`login`] | login (counted before the password is checked), logout, first-run setup |
//! | [`csrf`] | the CSRF and Origin guard of every state-changing request |
//! | [`projects`] | overview, upload targets, backfeed key, creating and destroying projects |
//! | [`settings`] | a project's settings, description and admins |
//! | [`items`] | queues, adding items (streamed), moving, clearing |
//! | [`claims`] | claims by downloader, release by filter, failed items |
//! | [`people`] | accounts, block lists, the audit log |
//! | [`logs`] | the completion log as streamed NDJSON |
//! | [`archive`] | archiving the completion log to gzip NDJSON files, listed and downloadable |
//! | [`tokens`] | per-account API tokens for scripts |
//! | [`warrior`] | the Warrior HQ project list (`projects.json`) and its versions |

pub mod archive;
pub mod auth;
pub mod claims;
pub mod csrf;
pub mod items;
pub mod login;
pub mod logs;
pub mod people;
pub mod projects;
pub mod settings;
pub mod tokens;
pub mod warrior;

use crate::{ops::OpsError, store::Store, web::ApiError, AppState};
use axum::{
    extract::DefaultBodyLimit,
    middleware,
    routing::{delete, get, post, put},
    Router,
};
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

/// The session cookie's name.
pub const SESSION_COOKIE: &str = "tracker_admin";

/// How long an idle session lasts.
pub const SESSION_IDLE: tower_sessions::cookie::time::Duration =
    tower_sessions::cookie::time::Duration::hours(12);

/// The admin JSON API, with its session and CSRF layers.
pub fn router(state: &AppState) -> Router<AppState> {
    // A visitor who has not logged in has no session, so no CSRF token: these need only a
    // same-origin `Origin` (a cross-site page cannot send JSON here without CORS either).
    let visitors = Router::new()
        .route("/session", get(auth::show_session))
        .route("/login", post(login::log_in))
        .route("/setup", post(login::set_up))
        .layer(middleware::from_fn(csrf::same_origin_guard));
    let api = Router::new()
        .route("/logout", post(login::log_out))
        .route("/overview", get(projects::show_overview))
        .route("/projects", post(projects::create_project))
        .route("/blocks", get(people::list_blocks).post(people::add_block))
        .route("/unblock", post(people::remove_block))
        .route("/users", get(people::list_users).post(people::create_user))
        .route(
            "/users/{name}",
            put(people::update_user).delete(people::delete_user),
        )
        .route("/audit", get(people::list_audit))
        .route(
            "/tokens",
            get(tokens::list_tokens).post(tokens::create_token),
        )
        .route("/tokens/{id}", delete(tokens::revoke_token))
        .route(
            "/warrior/projects",
            get(warrior::show_list).put(warrior::save_list),
        )
        .route("/warrior/restore", post(warrior::restore_list))
        .route("/{slug}/log", get(logs::download_log))
        .route("/{slug}/log/archive", post(archive::archive_log))
        .route("/{slug}/archives", get(archive::list_archives))
        .route("/{slug}/archives/{name}", get(archive::download_archive))
        .route("/{slug}", delete(projects::destroy_project))
        .route(
            "/{slug}/settings",
            get(settings::show_settings).put(settings::save_settings),
        )
        .route("/{slug}/backfeed-key", post(projects::rotate_backfeed_key))
        .route("/{slug}/targets", post(projects::change_target))
        .route("/{slug}/queues", get(items::show_queues))
        .route(
            "/{slug}/items",
            post(items::add_items).layer(DefaultBodyLimit::disable()),
        )
        .route("/{slug}/move", post(items::move_items))
        .route("/{slug}/clear", post(items::clear_queue))
        .route("/{slug}/claims", get(claims::list_claims))
        .route("/{slug}/release", post(claims::release_claims))
        .route(
            "/{slug}/failed",
            get(claims::list_failed).post(claims::resolve_failed),
        )
        .layer(middleware::from_fn(csrf::guard))
        .merge(visitors);
    Router::new()
        .nest("/admin/api", api)
        .layer(session_layer(&state.store, state.secure_cookies))
}

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
    if store.account_count().await? > 0 {
        return Ok(None);
    }
    let token = random_token(32);
    store.set_setup_token(&token).await?;
    Ok(Some(token))
}

/// `n` random letters and digits.
pub fn random_token(n: usize) -> String {
    use rand::{distr::Alphanumeric, Rng};
    rand::rng()
        .sample_iter(Alphanumeric)
        .take(n)
        .map(char::from)
        .collect()
}
