//! Logging in and out, and the first-run setup; the limits that keep password guessing slow.
//!
//! A login attempt is counted before its password is checked, atomically with the check of the
//! limits (`login_attempt.lua`, `login_name.lua`), so parallel guesses cannot pass them; a login
//! that succeeds, or whose password was never checked, is taken back (`login_undo.lua`). Counts
//! are kept per name *and* network, per network, and per name from every network. The last
//! skips the browsers the account logged in from before (a device cookie, remembered per
//! account): guesses from many addresses at one name are slowed as from one, and still cannot
//! lock the owner out of a browser it used (an operator also has `tracker admin unlock NAME`).
//! Password checks (argon2, deliberately slow) run a few at a time; a login that waits too long
//! for one is told to retry. The same counted check guards making a token and changing one's
//! own password.

use super::auth::{info, session_error, AdminSession, Caller, CSRF, GEN, USER};
use crate::{
    state::AppState,
    store::{now_ms, token_hash, valid_user_name, Account, Role},
    web::{client_ip, constant_time_eq, ApiError, ApiResult},
};
pub use app::model::admin::{Credentials, PasswordChange, Setup};
use axum::{
    extract::{ConnectInfo, State},
    http::{header, HeaderMap, HeaderValue, StatusCode},
    response::{IntoResponse, Response},
    Json,
};
use std::{net::SocketAddr, time::Duration};
use tower_sessions::{
    cookie::{Cookie, SameSite},
    Session,
};

/// Login attempts of one name from one network (an IPv4 address, an IPv6 /64) per window.
pub const MAX_ATTEMPTS_PER_NAME_AND_NET: u64 = 5;
/// Login attempts from one network per window, whatever the names.
pub const MAX_ATTEMPTS_PER_NET: u64 = 20;
/// Login attempts of one name from every network per window, but from the browsers the account
/// logged in from before (their device cookie): guesses spread over many addresses are slowed
/// as much as from one, and cannot lock the owner out of a browser it used.
pub const MAX_ATTEMPTS_PER_NAME: u64 = 10;
/// The window attempts are counted in (seconds), from the first.
pub const ATTEMPT_WINDOW_S: u64 = 15 * 60;
/// How long a login waits for a password check before it is answered 429.
pub const PASSWORD_CHECK_WAIT: Duration = Duration::from_secs(2);
/// The cookie naming a browser that logged in to an account before ([`MAX_ATTEMPTS_PER_NAME`]).
pub const DEVICE_COOKIE: &str = "tracker_device";

/// The device cookie a request carries, if any.
fn device_cookie(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(Cookie::split_parse)
        .filter_map(Result::ok)
        .find(|c| c.name() == DEVICE_COOKIE)
        .map(|c| c.value().to_string())
        .filter(|v| !v.is_empty() && v.len() <= 64)
}

/// A password check of account `name` from the caller's network, counted against the login
/// limits like a login (429 past one): the account when the password is right. Used by the
/// login, and again where a logged-in account must show it still knows its password (making a
/// token, changing the password).
pub struct PasswordCheck<'a> {
    /// The tracker.
    pub state: &'a AppState,
    /// The caller's address.
    pub ip: String,
    /// The caller's device cookie, if any.
    pub device: Option<String>,
}

impl PasswordCheck<'_> {
    /// Checks `password` of `name` (lowercase): `Ok(None)` when wrong (or no such account),
    /// 429 when a limit is reached or no check comes free in time.
    pub async fn run(&self, name: &str, password: String) -> ApiResult<Option<Account>> {
        let store = &self.state.store;
        let net = crate::web::network(&self.ip);
        let known = match &self.device {
            Some(d) => store.people().known_device(name, &token_hash(d)).await?,
            None => false,
        };
        let window = ATTEMPT_WINDOW_S;
        if !known {
            if let Some(wait) = store
                .people()
                .login_name(name, false, MAX_ATTEMPTS_PER_NAME, window)
                .await?
            {
                tracing::warn!(user = %name, ip = %self.ip, "admin login throttled (account)");
                return Err(ApiError::RateLimited(wait));
            }
        }
        // Takes the name's count back: the attempt was no wrong guess.
        let undo_name = || async {
            if !known {
                store
                    .people()
                    .login_name(name, true, MAX_ATTEMPTS_PER_NAME, window)
                    .await?;
            }
            ApiResult::Ok(())
        };
        let limits = (MAX_ATTEMPTS_PER_NAME_AND_NET, MAX_ATTEMPTS_PER_NET);
        if let Some(wait) = store
            .people()
            .login_attempt(name, &net, limits, window)
            .await?
        {
            undo_name().await?;
            tracing::warn!(user = %name, ip = %self.ip, "admin login throttled");
            return Err(ApiError::RateLimited(wait));
        }
        let checked = tokio::time::timeout(
            PASSWORD_CHECK_WAIT,
            self.state.password_checks.clone().acquire_owned(),
        )
        .await;
        let Ok(Ok(permit)) = checked else {
            store.people().login_undo(name, &net, false).await?;
            undo_name().await?;
            tracing::warn!(user = %name, ip = %self.ip, "admin login: no password check free");
            return Err(ApiError::RateLimited(PASSWORD_CHECK_WAIT.as_secs().max(1)));
        };
        let account = store.people().account(name).await?;
        let hash = account.as_ref().map(|a| a.hash.clone());
        let ok = verify_password(password, hash).await;
        drop(permit);
        let Some(account) = account.filter(|_| ok) else {
            tracing::warn!(user = %name, ip = %self.ip, "wrong admin password");
            return Ok(None);
        };
        store.people().login_undo(name, &net, true).await?;
        undo_name().await?;
        Ok(Some(account))
    }
}

/// `POST /admin/api/login`: counts the attempt (429 past a limit), checks the password, and
/// starts a session with a new id and CSRF token; the browser gets (or keeps) a device cookie.
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
) -> ApiResult<Response> {
    let wrong = || ApiError::Client(StatusCode::UNAUTHORIZED, "Wrong name or password.".into());
    let name = creds.username.trim().to_lowercase();
    // No account has such a name, and no password is checked for it.
    if !valid_user_name(&name) {
        return Err(wrong());
    }
    let check = password_check(&state, peer, &headers);
    let ip = check.ip.clone();
    let password = creds.password;
    let Some(mut account) = check.run(&name, password.clone()).await? else {
        return Err(wrong());
    };
    let store = &state.store;
    if is_bcrypt(&account.hash) {
        // An account migrated from the universal tracker: its password, just checked, is
        // hashed with argon2 from now on (the session generation kept: no session ends).
        let rehashed =
            tokio::task::spawn_blocking(move || crate::ops::accounts::hash_password_now(&password))
                .await;
        if let Ok(Some(hash)) = rehashed {
            account.hash = hash;
            store.people().save_account(&account).await?;
        }
    }
    start_session(&session, &account.name, account.gen).await?;
    let caller = Caller {
        name: account.name.clone(),
        role: account.role,
        projects: account.projects.clone(),
        token: None,
    };
    caller.record(&state, "login", "", 0, ip).await?;
    let device = check
        .device
        .filter(|d| d.len() >= 32)
        .unwrap_or_else(|| crate::store::random_token(40));
    store
        .people()
        .remember_device(&account.name, &token_hash(&device), now_ms())
        .await?;
    let cookie = Cookie::build((DEVICE_COOKIE, device))
        .path("/admin/api")
        .http_only(true)
        .secure(state.config.secure_cookies)
        .same_site(SameSite::Strict)
        .max_age(tower_sessions::cookie::time::Duration::days(
            crate::store::DEVICE_DAYS as i64,
        ))
        .build();
    let mut resp = Json(info(&state, &session).await?).into_response();
    if let Ok(v) = HeaderValue::from_str(&cookie.to_string()) {
        resp.headers_mut().append(header::SET_COOKIE, v);
    }
    Ok(resp)
}

/// `POST /admin/api/password`: the logged-in account changes its own password, giving the one
/// it has now (counted like a login). Its other sessions end, its API tokens are revoked, and
/// this session goes on under the new password.
#[utoipa::path(
    post,
    path = "/password",
    tag = "admin",
    request_body = PasswordChange,
)]
pub async fn change_password(
    State(state): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    session: Session,
    caller: Caller,
    Json(req): Json<PasswordChange>,
) -> ApiResult<Json<AdminSession>> {
    caller.must_use_session()?;
    let check = password_check(&state, peer, &headers);
    if check.run(&caller.name, req.current).await?.is_none() {
        return Err(ApiError::forbidden("That is not your password now."));
    }
    let change = crate::ops::accounts::AccountChange {
        password: Some(req.new),
        ..Default::default()
    };
    let account =
        crate::ops::accounts::update(&state.store, &caller.actor(), &caller.name, change).await?;
    start_session(&session, &account.name, account.gen).await?;
    Ok(Json(info(&state, &session).await?))
}

/// The password check of the caller of a request (see [`PasswordCheck`]).
pub fn password_check<'a>(
    state: &'a AppState,
    peer: SocketAddr,
    headers: &HeaderMap,
) -> PasswordCheck<'a> {
    PasswordCheck {
        state,
        ip: client_ip(peer, headers, state.config.trust_proxy),
        device: device_cookie(headers),
    }
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
    if store.people().account_count().await? > 0 {
        return Err(ApiError::forbidden("Setup is done: log in."));
    }
    let expected = store.people().setup_token().await?.unwrap_or_default();
    if expected.is_empty() || !constant_time_eq(req.token.as_bytes(), expected.as_bytes()) {
        return Err(ApiError::forbidden("Wrong or expired setup token."));
    }
    let account =
        crate::ops::accounts::new_account(&req.username, req.password, Role::Global, vec![])
            .await?;
    if !store.people().create_account(&account).await? {
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
