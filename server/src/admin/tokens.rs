//! API tokens of the logged-in account, for scripts (`Authorization: Bearer SECRET`): listed,
//! created (the secret shown once, stored as its SHA-256) and revoked. Managing tokens needs a
//! session, so a leaked token cannot mint more, and making one needs the password again, so a
//! session left open cannot either; each token expires ([`TOKEN_DAYS_DEFAULT`] days unless
//! asked, at most [`TOKEN_DAYS_MAX`]) and dies with a change of its account's password; read-only accounts make none (they change
//! nothing, tokens included), and a token of an account made read-only later only reads.

use super::auth::Caller;
use crate::{
    state::AppState,
    store::{now_ms, token_hash, ApiToken, Role, TOKEN_DAYS_DEFAULT, TOKEN_DAYS_MAX},
    web::{ApiError, ApiResult},
};
use app::model::admin::CreatedToken;
pub use app::model::admin::NewToken;
use axum::{
    extract::{ConnectInfo, Path, State},
    http::{HeaderMap, StatusCode},
    Json,
};
use std::net::SocketAddr;

/// Tokens one account may hold.
const MAX_TOKENS: usize = 20;

/// 403 for calls made with a token (an account's or the admin token).
fn needs_session(caller: &Caller) -> ApiResult<()> {
    caller.must_use_session()
}

/// `GET /admin/api/tokens`: the caller's tokens (never their secrets).
#[utoipa::path(
    get,
    path = "/tokens",
    tag = "admin",
    responses((status = 200, body = [ApiToken])),
)]
pub async fn list_tokens(
    State(state): State<AppState>,
    caller: Caller,
) -> ApiResult<Json<Vec<ApiToken>>> {
    needs_session(&caller)?;
    Ok(Json(
        state.store.people().tokens(&caller.name, now_ms()).await?,
    ))
}

/// `POST /admin/api/tokens`: a new token for the caller, acting with the caller's role.
#[utoipa::path(
    post,
    path = "/tokens",
    tag = "admin",
    responses((status = 201, body = CreatedToken)),
)]
pub async fn create_token(
    State(state): State<AppState>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    caller: Caller,
    Json(req): Json<NewToken>,
) -> ApiResult<(StatusCode, Json<CreatedToken>)> {
    needs_session(&caller)?;
    if caller.role == Role::ReadOnly {
        return Err(ApiError::forbidden("Read-only account."));
    }
    let name = req.name.trim();
    if name.is_empty() || name.chars().count() > 64 {
        return Err(ApiError::bad_request(
            "A token's name is 1 to 64 characters.",
        ));
    }
    let days = req.days.unwrap_or(TOKEN_DAYS_DEFAULT);
    if !(1..=TOKEN_DAYS_MAX).contains(&days) {
        return Err(ApiError::bad_request(format!(
            "A token lasts 1 to {TOKEN_DAYS_MAX} days."
        )));
    }
    let store = &state.store;
    let now = now_ms();
    if store.people().tokens(&caller.name, now).await?.len() >= MAX_TOKENS {
        return Err(ApiError::bad_request(format!(
            "At most {MAX_TOKENS} tokens per account: revoke one first."
        )));
    }
    // A session left open (or stolen) does not make lasting access: the password is asked
    // again, and counted like a login.
    let check = super::login::password_check(&state, peer, &headers);
    if check.run(&caller.name, req.password).await?.is_none() {
        return Err(ApiError::forbidden("Enter your password to make a token."));
    }
    let token = ApiToken {
        id: crate::store::random_token(8).to_lowercase(),
        name: name.to_string(),
        t: now,
        expires: now + u64::from(days) * 86_400_000,
    };
    let secret = format!("trk_{}", crate::store::random_token(40));
    store
        .people()
        .create_token(&caller.name, &token, &token_hash(&secret))
        .await?;
    caller
        .record(
            &state,
            "token.create",
            "",
            1,
            format!("{} {:?}", token.id, token.name),
        )
        .await?;
    Ok((StatusCode::CREATED, Json(CreatedToken { token, secret })))
}

/// `DELETE /admin/api/tokens/ID`: revokes one of the caller's tokens.
#[utoipa::path(
    delete,
    path = "/tokens/{id}",
    tag = "admin",
    params(("id" = String, Path, description = "The token's id")),
)]
pub async fn revoke_token(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<StatusCode> {
    needs_session(&caller)?;
    if !state.store.people().revoke_token(&caller.name, &id).await? {
        return Err(ApiError::not_found("No such token."));
    }
    caller.record(&state, "token.revoke", "", 1, id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// `GET /admin/api/users/NAME/tokens` (global admins, from a session): an account's tokens
/// (never their secrets), so that one can be revoked.
#[utoipa::path(
    get,
    path = "/users/{name}/tokens",
    tag = "admin",
    params(("name" = String, Path, description = "The account's name")),
    responses((status = 200, body = [ApiToken])),
)]
pub async fn list_account_tokens(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
) -> ApiResult<Json<Vec<ApiToken>>> {
    caller.must_be_global()?;
    needs_session(&caller)?;
    let name = name.to_lowercase();
    if state.store.people().account(&name).await?.is_none() {
        return Err(ApiError::not_found("No such account."));
    }
    Ok(Json(state.store.people().tokens(&name, now_ms()).await?))
}

/// `DELETE /admin/api/users/NAME/tokens/ID` (global admins, from a session): revokes a token of
/// any account, as when it has leaked.
#[utoipa::path(
    delete,
    path = "/users/{name}/tokens/{id}",
    tag = "admin",
    params(
        ("name" = String, Path, description = "The account's name"),
        ("id" = String, Path, description = "The token's id"),
    ),
)]
pub async fn revoke_account_token(
    State(state): State<AppState>,
    caller: Caller,
    Path((name, id)): Path<(String, String)>,
) -> ApiResult<StatusCode> {
    caller.must_be_global()?;
    needs_session(&caller)?;
    let name = name.to_lowercase();
    if !state.store.people().revoke_token(&name, &id).await? {
        return Err(ApiError::not_found("No such token."));
    }
    caller
        .record(&state, "token.revoke", "", 1, format!("{name} {id}"))
        .await?;
    Ok(StatusCode::NO_CONTENT)
}
