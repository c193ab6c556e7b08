//! Who is calling: a session of an account, or the API token; roles; login with throttling,
//! logout, and the first-run setup.

use crate::{
    api::{client_ip, constant_time_eq, is_admin, ApiError, ApiResult},
    store::{now_ms, token_hash, valid_user_name, Account, AuditEntry, Role},
    AppState,
};
use axum::{
    extract::{ConnectInfo, FromRequestParts, State},
    http::{request::Parts, HeaderMap, StatusCode},
    Json,
};
use serde::{Deserialize, Serialize};
use std::net::SocketAddr;
use tower_sessions::Session;

/// Failed logins from one IP before it must wait.
pub const MAX_FAILURES_PER_IP: u64 = 20;
/// Failed logins of one name before it must wait.
pub const MAX_FAILURES_PER_USER: u64 = 5;
/// The window failures are counted in (seconds).
const FAILURE_WINDOW_S: i64 = 15 * 60;

/// Session field: the account name.
const USER: &str = "user";
/// Session field: the CSRF token.
pub const CSRF: &str = "csrf";

/// The name audit entries give to callers using `TRACKER_ADMIN_TOKEN`.
pub const TOKEN_CALLER: &str = "api-token";

/// An authenticated admin: an account with a session, or a script with the API token.
#[derive(Clone, Debug)]
pub struct Caller {
    /// Account name (or [`TOKEN_CALLER`]).
    pub name: String,
    /// What it may do.
    pub role: Role,
    /// Projects of a `Project` account.
    pub projects: Vec<String>,
    /// The id of the account's API token the call came with (none: a session).
    pub token: Option<String>,
}

impl Caller {
    /// 403 unless the caller may see project `slug`.
    pub fn may_view(&self, slug: &str) -> ApiResult<()> {
        match self.role {
            Role::Global | Role::ReadOnly => Ok(()),
            Role::Project if self.projects.iter().any(|p| p == slug) => Ok(()),
            Role::Project => Err(ApiError::forbidden("Not one of your projects.")),
        }
    }

    /// 403 unless the caller may change project `slug`.
    pub fn may_change(&self, slug: &str) -> ApiResult<()> {
        match self.role {
            Role::ReadOnly => Err(ApiError::forbidden("Read-only account.")),
            _ => self.may_view(slug),
        }
    }

    /// 403 unless the caller is a global admin.
    pub fn must_be_global(&self) -> ApiResult<()> {
        match self.role {
            Role::Global => Ok(()),
            Role::ReadOnly => Err(ApiError::forbidden("Read-only account.")),
            Role::Project => Err(ApiError::forbidden("Only global admins may do this.")),
        }
    }

    /// Records an action in the audit log.
    pub async fn record(
        &self,
        state: &AppState,
        action: &str,
        project: &str,
        count: u64,
        detail: impl Into<String>,
    ) -> ApiResult<()> {
        let mut detail = detail.into();
        if let Some(id) = &self.token {
            detail = format!("{detail} [token {id}]").trim_start().to_string();
        }
        let entry = AuditEntry {
            t: now_ms(),
            who: self.name.clone(),
            action: action.into(),
            project: project.into(),
            count,
            detail,
        };
        state.store.audit(&entry).await?;
        Ok(())
    }
}

impl FromRequestParts<AppState> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> ApiResult<Self> {
        if is_admin(&parts.headers, state.admin_token.as_deref()) {
            return Ok(Caller {
                name: TOKEN_CALLER.into(),
                role: Role::Global,
                projects: vec![],
                token: None,
            });
        }
        // A bearer token is the whole credential: a wrong one never falls back to the session.
        if let Some(secret) = bearer(&parts.headers) {
            let revoked = || {
                ApiError::Client(
                    StatusCode::UNAUTHORIZED,
                    "Unknown or revoked API token.".into(),
                )
            };
            let (user, id) = state
                .store
                .token_owner(&token_hash(secret))
                .await?
                .ok_or_else(revoked)?;
            let account = state.store.account(&user).await?.ok_or_else(revoked)?;
            return Ok(Caller {
                name: account.name,
                role: account.role,
                projects: account.projects,
                token: Some(id),
            });
        }
        let session = parts.extensions.get::<Session>().cloned();
        let name = match session {
            Some(s) => s.get::<String>(USER).await.map_err(session_error)?,
            None => None,
        };
        let unauthorized = || ApiError::Client(StatusCode::UNAUTHORIZED, "Log in first.".into());
        let name = name.ok_or_else(unauthorized)?;
        // Read on every request, so a changed role or a deleted account takes effect at once.
        let account = state.store.account(&name).await?.ok_or_else(unauthorized)?;
        Ok(Caller {
            name: account.name,
            role: account.role,
            projects: account.projects,
            token: None,
        })
    }
}

/// The secret of an `Authorization: Bearer SECRET` header, if the request has one.
pub fn bearer(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(axum::http::header::AUTHORIZATION)?
        .to_str()
        .ok()?
        .strip_prefix("Bearer ")
        .map(str::trim)
        .filter(|s| !s.is_empty())
}

/// A session store failure: logged, answered with a generic 500.
pub fn session_error(e: tower_sessions::session::Error) -> ApiError {
    ApiError::Internal(crate::store::StoreError::Reply {
        script: "session",
        detail: e.to_string(),
    })
}

/// What the panel knows about its visitor.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct SessionInfo {
    /// Account name, when logged in.
    pub user: Option<String>,
    /// Its role.
    pub role: Option<Role>,
    /// Its projects (role `project`).
    pub projects: Vec<String>,
    /// The token to send as `X-CSRF-Token` with every POST, PUT and DELETE.
    pub csrf: String,
    /// Whether no account exists yet (the setup link is pending).
    pub setup_pending: bool,
}

/// The session's CSRF token, created on first use.
pub async fn csrf_token(session: &Session) -> ApiResult<String> {
    if let Some(t) = session.get::<String>(CSRF).await.map_err(session_error)? {
        return Ok(t);
    }
    let token = super::random_token(32);
    // A visitor who never logs in holds a Redis key only briefly.
    session.set_expiry(Some(tower_sessions::Expiry::OnInactivity(
        tower_sessions::cookie::time::Duration::minutes(30),
    )));
    session.insert(CSRF, &token).await.map_err(session_error)?;
    Ok(token)
}

async fn info(state: &AppState, session: &Session) -> ApiResult<SessionInfo> {
    let user = session.get::<String>(USER).await.map_err(session_error)?;
    let account = match &user {
        Some(name) => state.store.account(name).await?,
        None => None,
    };
    Ok(SessionInfo {
        user: account.as_ref().map(|a| a.name.clone()),
        role: account.as_ref().map(|a| a.role),
        projects: account.map(|a| a.projects).unwrap_or_default(),
        csrf: csrf_token(session).await?,
        setup_pending: state.store.account_count().await? == 0,
    })
}

/// `GET /admin/api/session`: who is logged in, and the CSRF token.
pub async fn show_session(
    State(state): State<AppState>,
    session: Session,
) -> ApiResult<Json<SessionInfo>> {
    Ok(Json(info(&state, &session).await?))
}

/// Body of `POST /admin/api/login`.
#[derive(Debug, Deserialize)]
pub struct Credentials {
    /// Account name (any case).
    pub username: String,
    /// Password.
    pub password: String,
}

/// `POST /admin/api/login`: checks the password (throttled per IP and per name), renews the
/// session id and the CSRF token.
pub async fn log_in(
    State(state): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    session: Session,
    Json(creds): Json<Credentials>,
) -> ApiResult<Json<SessionInfo>> {
    let name = creds.username.trim().to_lowercase();
    let ip = client_ip(peer, &headers, state.trust_proxy);
    let store = &state.store;
    for (kind, value, max) in [
        ("ip", &ip, MAX_FAILURES_PER_IP),
        ("user", &name, MAX_FAILURES_PER_USER),
    ] {
        let (n, ttl) = store.login_failures(kind, value).await?;
        if n >= max {
            return Err(ApiError::RateLimited(ttl));
        }
    }
    let account = store.account(&name).await?;
    let hash = account.as_ref().map(|a| a.hash.clone());
    let ok = verify_password(creds.password, hash).await;
    let Some(account) = account.filter(|_| ok) else {
        store.add_login_failure("ip", &ip, FAILURE_WINDOW_S).await?;
        store
            .add_login_failure("user", &name, FAILURE_WINDOW_S)
            .await?;
        tracing::warn!(user = %name, %ip, "failed admin login");
        return Err(ApiError::Client(
            StatusCode::UNAUTHORIZED,
            "Wrong name or password.".into(),
        ));
    };
    store.clear_login_failures("user", &name).await?;
    start_session(&session, &account.name).await?;
    let caller = Caller {
        name: account.name.clone(),
        role: account.role,
        projects: account.projects.clone(),
        token: None,
    };
    caller.record(&state, "login", "", 0, ip).await?;
    Ok(Json(info(&state, &session).await?))
}

/// Logs `name` in on `session`: a new session id (no fixation) and a new CSRF token.
async fn start_session(session: &Session, name: &str) -> ApiResult<()> {
    session.cycle_id().await.map_err(session_error)?;
    session.set_expiry(Some(tower_sessions::Expiry::OnInactivity(
        super::SESSION_IDLE,
    )));
    session.insert(USER, name).await.map_err(session_error)?;
    session
        .insert(CSRF, super::random_token(32))
        .await
        .map_err(session_error)?;
    Ok(())
}

/// `POST /admin/api/logout`: ends the session.
pub async fn log_out(session: Session) -> ApiResult<StatusCode> {
    session.flush().await.map_err(session_error)?;
    Ok(StatusCode::NO_CONTENT)
}

/// Body of `POST /admin/api/setup`.
#[derive(Debug, Deserialize)]
pub struct Setup {
    /// The token of the setup link.
    pub token: String,
    /// The first global admin's name.
    pub username: String,
    /// Its password.
    pub password: String,
}

/// `POST /admin/api/setup`: with the one-time token, creates the first global admin and logs
/// it in. Refused once any account exists.
pub async fn set_up(
    State(state): State<AppState>,
    session: Session,
    Json(req): Json<Setup>,
) -> ApiResult<Json<SessionInfo>> {
    let store = &state.store;
    if store.account_count().await? > 0 {
        return Err(ApiError::forbidden("Setup is done: log in."));
    }
    let expected = store.setup_token().await?.unwrap_or_default();
    if expected.is_empty() || !constant_time_eq(req.token.as_bytes(), expected.as_bytes()) {
        return Err(ApiError::forbidden("Wrong or expired setup token."));
    }
    let account = new_account(&req.username, req.password, Role::Global, vec![]).await?;
    if !store.create_account(&account).await? {
        return Err(ApiError::Client(
            StatusCode::CONFLICT,
            "That name is taken.".into(),
        ));
    }
    start_session(&session, &account.name).await?;
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

/// Checks a new account's name and password and hashes the password.
pub async fn new_account(
    name: &str,
    password: String,
    role: Role,
    projects: Vec<String>,
) -> ApiResult<Account> {
    let name = name.trim().to_lowercase();
    if !valid_user_name(&name) {
        return Err(ApiError::bad_request(
            "Names are 1 to 32 of a-z, 0-9, '.', '_', '-'.",
        ));
    }
    Ok(Account {
        name,
        hash: hash_password(password).await?,
        role,
        projects,
        t: now_ms(),
    })
}

/// Shortest password accepted.
pub const MIN_PASSWORD: usize = 10;

/// The argon2id PHC string of `password` (hashed off the async workers).
pub async fn hash_password(password: String) -> ApiResult<String> {
    if password.chars().count() < MIN_PASSWORD || password.len() > 1024 {
        return Err(ApiError::bad_request(format!(
            "Passwords are {MIN_PASSWORD} to 1024 characters."
        )));
    }
    tokio::task::spawn_blocking(move || hash_password_now(&password))
        .await
        .ok()
        .flatten()
        .ok_or_else(|| ApiError::bad_request("The password could not be hashed."))
}

/// The argon2id PHC string of `password`, synchronously (the CLI).
pub fn hash_password_now(password: &str) -> Option<String> {
    use argon2::{
        password_hash::{rand_core::OsRng, PasswordHasher, SaltString},
        Argon2,
    };
    let salt = SaltString::generate(&mut OsRng);
    Argon2::default()
        .hash_password(password.as_bytes(), &salt)
        .ok()
        .map(|h| h.to_string())
}

/// Whether `password` matches `hash`; without a hash, spends the same time and says no.
async fn verify_password(password: String, hash: Option<String>) -> bool {
    use argon2::{password_hash::PasswordHash, Argon2, PasswordVerifier};
    static DUMMY: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    tokio::task::spawn_blocking(move || {
        let known = hash.is_some();
        let hash = hash.or_else(|| {
            DUMMY
                .get_or_init(|| hash_password_now("dummy password"))
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
