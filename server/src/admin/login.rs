//! Logging in and out, and the first-run setup; the limits that keep password guessing slow.
//!
//! A login attempt is counted before its password is checked, atomically with the check of the
//! limits (`login_attempt.lua`), so parallel guesses cannot pass them; a login that succeeds,
//! or whose password was never checked, is taken back (`login_undo.lua`). Counts are kept per
//! name *and* network, and per network: a flood of guesses at one name from one place locks
//! out that place, never the account's owner elsewhere. Password checks (argon2, deliberately
//! slow) run a few at a time; a login that waits too long for one is told to retry.

use super::auth::{info, session_error, AdminSession, Caller, CSRF, GEN, USER};
use crate::{
    state::AppState,
    store::{valid_user_name, Role},
    web::{client_ip, constant_time_eq, ApiError, ApiResult},
};
pub use app::model::admin::{Credentials, Setup};
use axum::{
    extract::{ConnectInfo, State},
    http::{HeaderMap, StatusCode},
    Json,
};
use std::{net::SocketAddr, time::Duration};
use tower_sessions::Session;

/// Login attempts of one name from one network (an IPv4 address, an IPv6 /64) per window.
pub const MAX_ATTEMPTS_PER_NAME_AND_NET: u64 = 5;
/// Login attempts from one network per window, whatever the names.
pub const MAX_ATTEMPTS_PER_NET: u64 = 20;
/// The window attempts are counted in (seconds), from the first.
pub const ATTEMPT_WINDOW_S: u64 = 15 * 60;
/// How long a login waits for a password check before it is answered 429.
pub const PASSWORD_CHECK_WAIT: Duration = Duration::from_secs(2);

/// `POST /admin/api/login`: counts the attempt (429 past a limit), checks the password, and
/// starts a session with a new id and CSRF token.
#[tracing::instrument(skip_all)]
#[utoipa::path(
    post,
    path = "/login",
    tag = "admin",
    responses((status = 200, body = AdminSession)),
)]
pub async fn log_in(
    State(state): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    session: Session,
    Json(creds): Json<Credentials>,
) -> ApiResult<Json<AdminSession>> {
    let wrong = || ApiError::Client(StatusCode::UNAUTHORIZED, "Wrong name or password.".into());
    let name = creds.username.trim().to_lowercase();
    // No account has such a name, and no password is checked for it.
    if !valid_user_name(&name) {
        return Err(wrong());
    }
    let ip = client_ip(peer, &headers, state.config.trust_proxy);
    let net = crate::web::network(&ip);
    let store = &state.store;
    let limits = (MAX_ATTEMPTS_PER_NAME_AND_NET, MAX_ATTEMPTS_PER_NET);
    if let Some(wait) = store
        .login_attempt(&name, &net, limits, ATTEMPT_WINDOW_S)
        .await?
    {
        tracing::warn!(user = %name, %ip, "admin login throttled");
        return Err(ApiError::RateLimited(wait));
    }
    let checked = tokio::time::timeout(
        PASSWORD_CHECK_WAIT,
        state.password_checks.clone().acquire_owned(),
    )
    .await;
    let Ok(Ok(permit)) = checked else {
        store.login_undo(&name, &net, false).await?;
        tracing::warn!(user = %name, %ip, "admin login: no password check free");
        return Err(ApiError::RateLimited(PASSWORD_CHECK_WAIT.as_secs().max(1)));
    };
    let account = store.account(&name).await?;
    let hash = account.as_ref().map(|a| a.hash.clone());
    let password = creds.password;
    let ok = verify_password(password.clone(), hash).await;
    drop(permit);
    let Some(mut account) = account.filter(|_| ok) else {
        tracing::warn!(user = %name, %ip, "failed admin login");
        return Err(wrong());
    };
    if is_bcrypt(&account.hash) {
        // An account migrated from the universal tracker: its password, just checked, is
        // hashed with argon2 from now on (the session generation kept: no session ends).
        let rehashed =
            tokio::task::spawn_blocking(move || crate::ops::accounts::hash_password_now(&password))
                .await;
        if let Ok(Some(hash)) = rehashed {
            account.hash = hash;
            store.save_account(&account).await?;
        }
    }
    store.login_undo(&name, &net, true).await?;
    start_session(&session, &account.name, account.gen).await?;
    let caller = Caller {
        name: account.name.clone(),
        role: account.role,
        projects: account.projects.clone(),
        token: None,
    };
    caller.record(&state, "login", "", 0, ip).await?;
    Ok(Json(info(&state, &session).await?))
}

/// Logs account `name` (session generation `gen`) in on `session`: a new session id (no
/// fixation) and a new CSRF token.
async fn start_session(session: &Session, name: &str, gen: u64) -> ApiResult<()> {
    session.cycle_id().await.map_err(session_error)?;
    session.set_expiry(Some(tower_sessions::Expiry::OnInactivity(
        super::SESSION_IDLE,
    )));
    session.insert(USER, name).await.map_err(session_error)?;
    session.insert(GEN, gen).await.map_err(session_error)?;
    session
        .insert(CSRF, crate::store::random_token(32))
        .await
        .map_err(session_error)?;
    Ok(())
}

/// `POST /admin/api/logout`: ends the session.
#[utoipa::path(post, path = "/logout", tag = "admin")]
pub async fn log_out(session: Session) -> ApiResult<StatusCode> {
    session.flush().await.map_err(session_error)?;
    Ok(StatusCode::NO_CONTENT)
}

/// `POST /admin/api/setup`: with the one-time token, creates the first global admin and logs
/// it in. Refused once any account exists.
#[utoipa::path(
    post,
    path = "/setup",
    tag = "admin",
    responses((status = 200, body = AdminSession)),
)]
pub async fn set_up(
    State(state): State<AppState>,
    session: Session,
    Json(req): Json<Setup>,
) -> ApiResult<Json<AdminSession>> {
    let store = &state.store;
    if store.account_count().await? > 0 {
        return Err(ApiError::forbidden("Setup is done: log in."));
    }
    let expected = store.setup_token().await?.unwrap_or_default();
    if expected.is_empty() || !constant_time_eq(req.token.as_bytes(), expected.as_bytes()) {
        return Err(ApiError::forbidden("Wrong or expired setup token."));
    }
    let account =
        crate::ops::accounts::new_account(&req.username, req.password, Role::Global, vec![])
            .await?;
    if !store.create_account(&account).await? {
        return Err(ApiError::Client(
            StatusCode::CONFLICT,
            "That name is taken.".into(),
        ));
    }
    start_session(&session, &account.name, account.gen).await?;
    let caller = Caller {
        name: account.name.clone(),
        role: Role::Global,
        projects: vec![],
        token: None,
    };
    caller
        .record(&state, "setup", "", 1, account.name.clone())
        .await?;
    Ok(Json(info(&state, &session).await?))
}

/// Whether `hash` is a bcrypt hash (`$2a$`, `$2b$`, `$2y$`): an account migrated from the
/// universal tracker that has not logged in here yet.
fn is_bcrypt(hash: &str) -> bool {
    ["$2a$", "$2b$", "$2y$"].iter().any(|p| hash.starts_with(p))
}

/// Whether `password` matches `hash` (argon2, or bcrypt for a migrated account); without a
/// hash, spends the same time and says no.
async fn verify_password(password: String, hash: Option<String>) -> bool {
    use argon2::{password_hash::PasswordHash, Argon2, PasswordVerifier};
    static DUMMY: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    tokio::task::spawn_blocking(move || {
        if let Some(h) = hash.as_deref().filter(|h| is_bcrypt(h)) {
            return bcrypt::verify(&password, h).unwrap_or(false);
        }
        let known = hash.is_some();
        let hash = hash.or_else(|| {
            DUMMY
                .get_or_init(|| crate::ops::accounts::hash_password_now("dummy password"))
                .clone()
        });
        let Some(parsed) = hash.as_deref().and_then(|h| PasswordHash::new(h).ok()) else {
            return false;
        };
        let ok = Argon2::default()
            .verify_password(password.as_bytes(), &parsed)
            .is_ok();
        ok && known
    })
    .await
    .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use crate::web::network;

    #[test]
    fn ipv6_addresses_count_by_their_64_and_mapped_ipv4_as_ipv4() {
        assert_eq!(network("192.0.2.7"), "192.0.2.7");
        assert_eq!(network("2001:db8:1:2:3:4:5:6"), "2001:db8:1:2::/64");
        assert_eq!(network("2001:db8:1:2::9"), "2001:db8:1:2::/64");
        assert_eq!(network("::ffff:192.0.2.7"), "192.0.2.7");
    }
}
