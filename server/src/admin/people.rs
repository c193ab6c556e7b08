//! Accounts (global admins only), block lists, and the audit log.

use super::auth::Caller;
use crate::{
    ops::{accounts, blocks},
    state::AppState,
    store::{now_ms, Account, AuditEntry, BlockKind, Role},
    web::{known_project, ApiError, ApiResult},
};
use app::model::admin::{AccountInfo, BlockRow};
pub use app::model::admin::{BlockChange, UserChange};
use axum::{
    extract::{Path, Query, State},
    http::StatusCode,
    Json,
};
use serde::Deserialize;

/// `GET /admin/api/users` (global admins).
#[utoipa::path(
    get,
    path = "/users",
    tag = "admin",
    responses((status = 200, body = [AccountInfo])),
)]
pub async fn list_users(
    State(state): State<AppState>,
    caller: Caller,
) -> ApiResult<Json<Vec<AccountInfo>>> {
    caller.must_be_global()?;
    caller.must_use_session()?;
    let accounts = state.store.people().accounts().await?;
    Ok(Json(accounts.iter().map(Account::info).collect()))
}

/// `POST /admin/api/users` (global admins): creates an account.
#[utoipa::path(
    post,
    path = "/users",
    tag = "admin",
    responses((status = 201, body = AccountInfo)),
)]
pub async fn create_user(
    State(state): State<AppState>,
    caller: Caller,
    Json(req): Json<UserChange>,
) -> ApiResult<(StatusCode, Json<AccountInfo>)> {
    caller.must_be_global()?;
    caller.must_use_session()?;
    let password = req
        .password
        .ok_or_else(|| ApiError::bad_request("A new account needs a password."))?;
    let role = req.role.unwrap_or(Role::ReadOnly);
    let projects = req.projects.unwrap_or_default();
    let account = accounts::create(
        &state.store,
        &caller.actor(),
        &req.name,
        password,
        role,
        projects,
    )
    .await?;
    Ok((StatusCode::CREATED, Json(account.info())))
}

/// `PUT /admin/api/users/NAME` (global admins): sets role, projects or password.
#[utoipa::path(
    put,
    path = "/users/{name}",
    tag = "admin",
    params(("name" = String, Path, description = "The account's name")),
    responses((status = 200, body = AccountInfo)),
)]
pub async fn update_user(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
    Json(req): Json<UserChange>,
) -> ApiResult<Json<AccountInfo>> {
    caller.must_be_global()?;
    caller.must_use_session()?;
    let change = accounts::AccountChange {
        role: req.role,
        projects: req.projects,
        password: req.password,
    };
    let account = accounts::update(&state.store, &caller.actor(), &name, change).await?;
    Ok(Json(account.info()))
}

/// `DELETE /admin/api/users/NAME` (global admins): deletes an account, never the last global
/// admin.
#[utoipa::path(
    delete,
    path = "/users/{name}",
    tag = "admin",
    params(("name" = String, Path, description = "The account's name")),
)]
pub async fn delete_user(
    State(state): State<AppState>,
    caller: Caller,
    Path(name): Path<String>,
) -> ApiResult<StatusCode> {
    caller.must_be_global()?;
    caller.must_use_session()?;
    let name = name.to_lowercase();
    let account = state
        .store
        .people()
        .account(&name)
        .await?
        .ok_or_else(|| ApiError::not_found("No such account."))?;
    if account.role == Role::Global && accounts::last_global(&state.store, &name).await? {
        return Err(ApiError::bad_request(
            "The last global admin cannot be deleted.",
        ));
    }
    state.store.people().delete_account(&name).await?;
    let tokens = state.store.people().revoke_all_tokens(&name).await?;
    caller
        .record(
            &state,
            "user.delete",
            "",
            1,
            format!("{name} ({tokens} tokens revoked)"),
        )
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Query of `GET /admin/api/blocks`.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct BlocksQuery {
    /// A project's lists (default: the global ones).
    #[serde(default)]
    pub project: Option<String>,
}

/// Checks the caller may see (`change`: change) the lists of `project` (global: any admin may
/// see, global admins change).
async fn block_scope(
    state: &AppState,
    caller: &Caller,
    project: &Option<String>,
    change: bool,
) -> ApiResult<()> {
    match project {
        Some(slug) => {
            known_project(state, slug).await?;
            if change {
                caller.may_change(slug)
            } else {
                caller.may_view(slug)
            }
        }
        None if change => caller.must_be_global(),
        None => Ok(()),
    }
}

/// `GET /admin/api/blocks[?project=SLUG]`: a block list, automatic blocks with their expiry.
#[utoipa::path(
    get,
    path = "/blocks",
    tag = "admin",
    params(BlocksQuery),
    responses((status = 200, body = [BlockRow])),
)]
pub async fn list_blocks(
    State(state): State<AppState>,
    caller: Caller,
    Query(q): Query<BlocksQuery>,
) -> ApiResult<Json<Vec<BlockRow>>> {
    block_scope(&state, &caller, &q.project, false).await?;
    let now = now_ms();
    let mut rows = Vec::new();
    for (kind, name) in [(BlockKind::Ip, "ip"), (BlockKind::Downloader, "dl")] {
        for (value, entry) in state
            .store
            .projects()
            .blocks(q.project.as_deref(), kind)
            .await?
        {
            rows.push(BlockRow {
                kind: name.into(),
                value,
                active: entry.active(now),
                entry,
            });
        }
    }
    rows.sort_by_key(|r| std::cmp::Reverse(r.entry.t));
    Ok(Json(rows))
}

/// `POST /admin/api/blocks`: blocks an IP or a name.
#[utoipa::path(post, path = "/blocks", tag = "admin")]
pub async fn add_block(
    State(state): State<AppState>,
    caller: Caller,
    Json(req): Json<BlockChange>,
) -> ApiResult<StatusCode> {
    block_scope(&state, &caller, &req.project, true).await?;
    let kind = blocks::parse_kind(&req.kind)?;
    let how = blocks::NewBlock {
        project: req.project,
        reason: req.reason,
        hours: req.hours,
    };
    blocks::block(&state.store, &caller.actor(), kind, &req.value, how).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// `POST /admin/api/unblock`: lifts a block.
#[utoipa::path(post, path = "/unblock", tag = "admin")]
pub async fn remove_block(
    State(state): State<AppState>,
    caller: Caller,
    Json(req): Json<BlockChange>,
) -> ApiResult<StatusCode> {
    block_scope(&state, &caller, &req.project, true).await?;
    let kind = blocks::parse_kind(&req.kind)?;
    blocks::unblock(
        &state.store,
        &caller.actor(),
        req.project.as_deref(),
        kind,
        &req.value,
    )
    .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Query of `GET /admin/api/audit`: every set field must match.
#[derive(Debug, Default, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AuditQuery {
    /// Account name.
    #[serde(default)]
    pub who: Option<String>,
    /// Action, or its prefix before `.` (`items` matches `items.add`); several separated by
    /// commas match any of them.
    #[serde(default)]
    pub action: Option<String>,
    /// Project.
    #[serde(default)]
    pub project: Option<String>,
    /// At most this many (default 200, at most 5000).
    #[serde(default)]
    pub limit: Option<usize>,
}

/// `GET /admin/api/audit`: the newest entries, filtered. Project admins see their projects'
/// and their own.
#[utoipa::path(
    get,
    path = "/audit",
    tag = "admin",
    params(AuditQuery),
    responses((status = 200, body = [AuditEntry])),
)]
pub async fn list_audit(
    State(state): State<AppState>,
    caller: Caller,
    Query(q): Query<AuditQuery>,
) -> ApiResult<Json<Vec<AuditEntry>>> {
    if let Some(p) = &q.project {
        caller.may_view(p)?;
    }
    let limit = q.limit.unwrap_or(200).min(5000);
    let who = q.who.map(|w| w.to_lowercase()).filter(|w| !w.is_empty());
    let actions: Vec<String> = q
        .action
        .unwrap_or_default()
        .split(',')
        .map(|a| a.trim().to_string())
        .filter(|a| !a.is_empty())
        .take(20)
        .collect();
    let project = q.project.filter(|p| !p.is_empty());
    let entries = state
        .store
        .people()
        .audit_log(limit, |e| {
            who.as_ref().is_none_or(|w| &e.who == w)
                && (actions.is_empty()
                    || actions
                        .iter()
                        .any(|a| &e.action == a || e.action.split('.').next() == Some(a.as_str())))
                && project.as_ref().is_none_or(|p| &e.project == p)
                && (caller.role != Role::Project
                    || caller.projects.contains(&e.project)
                    || e.who == caller.name)
        })
        .await?;
    Ok(Json(entries))
}
