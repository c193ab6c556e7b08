//! Who is calling: a session of an account, or an API token; roles; what the panel knows of
//! its visitor. Logging in is [`super::login`]; accounts and passwords are [`crate::ops::accounts`].

use crate::{
    ops::Actor,
    state::AppState,
    store::{token_hash, Account, Role},
    web::{bearer, is_admin, ApiError, ApiResult},
};
pub use app::model::admin::AdminSession;
use axum::{
    extract::{FromRequestParts, State},
    http::{request::Parts, StatusCode},
    Json,
};
use tower_sessions::Session;

/// Session field: the account name. A visitor who has not logged in has no session at all.
pub const USER: &str = "user";
/// Session field: the account's session generation at login ([`Account::gen`]).
pub const GEN: &str = "gen";
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

    /// 403 for a call made with an API token or the admin token: accounts and tokens are
    /// managed from a logged-in session only, so that a leaked token cannot make itself lasting
    /// access (an account of its own, more tokens, a password it knows).
    pub fn must_use_session(&self) -> ApiResult<()> {
        if self.token.is_some() || self.name == TOKEN_CALLER {
            return Err(ApiError::forbidden(
                "Accounts and tokens are managed from a logged-in session, not with a token.",
            ));
        }
        Ok(())
    }

    /// 403 unless the caller is a global admin.
    pub fn must_be_global(&self) -> ApiResult<()> {
        match self.role {
            Role::Global => Ok(()),
            Role::ReadOnly => Err(ApiError::forbidden("Read-only account.")),
            Role::Project => Err(ApiError::forbidden("Only global admins may do this.")),
        }
    }

    /// The caller as the audit log names it.
    pub fn actor(&self) -> Actor {
        Actor {
            name: self.name.clone(),
            token: self.token.clone(),
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
        self.actor()
            .record(&state.store, action, project, count, detail)
            .await?;
        Ok(())
    }
}

impl FromRequestParts<AppState> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> ApiResult<Self> {
        if is_admin(&parts.headers, state.config.admin_token.as_deref()) {
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
                    "Unknown, expired or revoked API token.".into(),
                )
            };
            let (user, id) = state
                .store
                .people()
                .token_owner(&token_hash(secret), crate::store::now_ms())
                .await?
                .ok_or_else(revoked)?;
            let account = state
                .store
                .people()
                .account(&user)
                .await?
                .ok_or_else(revoked)?;
            return Ok(Caller {
                name: account.name,
                role: account.role,
                projects: account.projects,
                token: Some(id),
            });
        }
        let unauthorized = || ApiError::Client(StatusCode::UNAUTHORIZED, "Log in first.".into());
        let session = parts.extensions.get::<Session>().ok_or_else(unauthorized)?;
        let account = session_account(state, session)
            .await?
            .ok_or_else(unauthorized)?;
        Ok(Caller {
            name: account.name,
            role: account.role,
            projects: account.projects,
            token: None,
        })
    }
}

/// A session store failure: logged, answered with a generic 500 (503 when Redis is full; the
/// store's error reaches us only as text).
pub fn session_error(e: tower_sessions::session::Error) -> ApiError {
    let detail = e.to_string();
    if detail.contains("OOM command not allowed") {
        return ApiError::Internal(crate::store::StoreError::Full);
    }
    ApiError::Internal(crate::store::StoreError::Reply {
        script: "session",
        detail,
    })
}

/// The account logged in on `session`, read on every request so that a changed role takes
/// effect at once. A session whose account is gone, or whose password was set since it logged
/// in, is deleted.
pub async fn session_account(state: &AppState, session: &Session) -> ApiResult<Option<Account>> {
    let Some(name) = session.get::<String>(USER).await.map_err(session_error)? else {
        return Ok(None);
    };
    let gen = session
        .get::<u64>(GEN)
        .await
        .map_err(session_error)?
        .unwrap_or(0);
    match state.store.people().account(&name).await? {
        Some(account) if account.gen == gen => Ok(Some(account)),
        _ => {
            session.flush().await.map_err(session_error)?;
            Ok(None)
        }
    }
}

/// What the panel knows about the visitor of `session`. Reading it stores nothing: only a
/// login makes a session (and its CSRF token).
pub(super) async fn info(state: &AppState, session: &Session) -> ApiResult<AdminSession> {
    let account = session_account(state, session).await?;
    let csrf = match account {
        Some(_) => session
            .get::<String>(CSRF)
            .await
            .map_err(session_error)?
            .unwrap_or_default(),
        None => String::new(),
    };
    Ok(AdminSession {
        user: account.as_ref().map(|a| a.name.clone()),
        role: account.as_ref().map(|a| a.role),
        projects: account.map(|a| a.projects).unwrap_or_default(),
        csrf,
        setup_pending: state.store.people().account_count().await? == 0,
    })
}

/// `GET /admin/api/session`: who is logged in, and the CSRF token.
#[utoipa::path(
    get,
    path = "/session",
    tag = "admin",
    responses((status = 200, body = AdminSession)),
)]
pub async fn show_session(
    State(state): State<AppState>,
    session: Session,
) -> ApiResult<Json<AdminSession>> {
    Ok(Json(info(&state, &session).await?))
}
