//! Projects in the panel: the overview, upload targets, the backfeed key, creating and
//! destroying projects (settings are in [`super::settings`]).

use super::auth::Caller;
use crate::openapi::ProjectPath;
use crate::{ops::settings::MAX_BACKFEED_KEYS, store::fed::key_id};
use crate::{
    ops::{self, projects::TargetAction},
    state::AppState,
    store::now_ms,
    web::{known_project, ApiError, ApiResult},
};
use app::model::admin::{
    BackfeedKey, BackfeedKeyChange, Destroyed, Overview, ProjectRow, UploadTargets,
};
pub use app::model::admin::{CreateProject, TargetChange};
use axum::{
    body::Bytes,
    extract::{Path, Query, State},
    http::StatusCode,
    Json,
};
use serde::Deserialize;

/// `GET /admin/api/overview`: every project the caller may see, with its numbers.
#[utoipa::path(
    get,
    path = "/overview",
    tag = "admin",
    responses((status = 200, body = Overview)),
)]
pub async fn show_overview(
    State(state): State<AppState>,
    caller: Caller,
) -> ApiResult<Json<Overview>> {
    let store = &state.store;
    let mut projects = Vec::new();
    let now = now_ms();
    for summary in store.figures().list_projects(now).await? {
        if caller.may_view(&summary.slug).is_err() {
            continue;
        }
        let Some((board, queues)) = store.figures().snapshot(&summary.slug, 0, 0).await? else {
            continue;
        };
        let extras = store.people().project_extras(&summary.slug).await?;
        let minutes = store.figures().minutes(&summary.slug, now, 10).await?;
        let items = crate::store::stats::sum(&minutes, crate::keys::Counter::DoneItems);
        projects.push(ProjectRow {
            slug: summary.slug.clone(),
            title: board.title,
            state: board.state,
            priority: extras
                .get("priority")
                .and_then(|p| p.parse().ok())
                .unwrap_or(0),
            queues: queues.into_iter().collect(),
            claimed: board.counts.out,
            done: board.counts.done,
            failed: board.counts.failed,
            items_per_minute: items as f64 / 10.0,
        });
    }
    // Niceness: lower first.
    projects.sort_by(|a, b| a.priority.cmp(&b.priority).then(a.slug.cmp(&b.slug)));
    Ok(Json(Overview {
        projects,
        redis_memory: store.queue().redis_memory().await?,
        version: env!("CARGO_PKG_VERSION").to_string(),
    }))
}

/// `POST /admin/api/projects` (global admins): creates a project.
#[utoipa::path(post, path = "/projects", tag = "admin")]
pub async fn create_project(
    State(state): State<AppState>,
    caller: Caller,
    Json(req): Json<CreateProject>,
) -> ApiResult<StatusCode> {
    caller.must_be_global()?;
    ops::projects::create(
        &state.store,
        &caller.actor(),
        &req.slug,
        &req.title,
        req.domains,
    )
    .await?;
    Ok(StatusCode::CREATED)
}

/// Query of `DELETE /admin/api/SLUG`.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct Confirm {
    /// Must repeat the slug.
    #[serde(default)]
    pub confirm: String,
}

/// `DELETE /admin/api/SLUG?confirm=SLUG` (global admins): removes the project and every item,
/// and takes it off its project admins' lists; its segment files and log archives are deleted.
#[utoipa::path(
    delete,
    path = "/{slug}",
    tag = "admin",
    params(ProjectPath, Confirm),
    responses((status = 200, body = Destroyed)),
)]
pub async fn destroy_project(
    State(state): State<AppState>,
    caller: Caller,
    Path(slug): Path<String>,
    Query(q): Query<Confirm>,
) -> ApiResult<Json<Destroyed>> {
    caller.must_be_global()?;
    known_project(&state, &slug).await?;
    if q.confirm != slug {
        return Err(ApiError::bad_request("Type the project's slug to confirm."));
    }
    let (keys, mark) = state.store.queue().destroy_project(&slug).await?;
    // Its segments and log archives go with it (else a new project of the slug would inherit
    // them); if this fails, the offloader's sweep finishes it, and the slug stays reserved
    // until then.
    match crate::store::offload::offloader::purge_files(
        &state.store.offload().storage_shared(),
        &state.config.archive_dir,
        &slug,
        &mark.tag,
    )
    .await
    {
        Ok(()) => state.store.queue().forget_destroyed(&slug, &mark).await?,
        Err(e) => {
            tracing::warn!(slug, error = %e, "deleting a destroyed project's files; the offloader tries again")
        }
    }
    // A project made later under the same slug must not inherit these admins.
    let unlisted = super::settings::set_project_admins(&state, &slug, &[]).await?;
    caller
        .record(
            &state,
            "project.destroy",
            &slug,
            keys,
            format!("admins removed: {}", unlisted.join(",")),
        )
        .await?;
    Ok(Json(Destroyed { keys }))
}

/// `POST /admin/api/SLUG/backfeed-key` ([`BackfeedKeyChange`]): `{}` replaces every key with
/// one new random key (the old ones stop working); `add` adds one (a project fed by several
/// grab scripts has a key for each, up to [`MAX_BACKFEED_KEYS`]); `rotate` replaces the key of
/// `id` alone and `revoke` removes it. Answers the keys now; audited with the key's id.
#[utoipa::path(
    post,
    path = "/{slug}/backfeed-key",
    tag = "admin",
    params(ProjectPath),
    request_body(content = BackfeedKeyChange, content_type = "application/json", description = "`{}` rotates every key; `{\"action\": \"add\"}` adds one; `rotate` or `revoke` with an `id` changes one"),
    responses((status = 200, body = BackfeedKey)),
)]
pub async fn rotate_backfeed_key(
    State(state): State<AppState>,
    caller: Caller,
    Path(slug): Path<String>,
    body: Bytes,
) -> ApiResult<Json<BackfeedKey>> {
    caller.may_change(&slug)?;
    let change: BackfeedKeyChange = match body.iter().all(u8::is_ascii_whitespace) {
        true => BackfeedKeyChange::default(),
        false => serde_json::from_slice(&body).map_err(|e| {
            ApiError::bad_request(format!(
                "The body is {{}} or {{\"action\": \"add\" | \"rotate\" | \"revoke\", \"id\": ID}}: {e}"
            ))
        })?,
    };
    let mut settings = (*known_project(&state, &slug).await?).clone();
    let mut keys: Vec<String> = settings
        .backfeed_key
        .split(',')
        .filter(|k| !k.is_empty())
        .map(String::from)
        .collect();
    let position = |keys: &[String]| -> ApiResult<usize> {
        let id = change.id.as_deref().unwrap_or_default();
        keys.iter()
            .position(|k| key_id(k) == id)
            .ok_or_else(|| ApiError::not_found("No backfeed key of this project has that id."))
    };
    let fresh = crate::store::random_token(24);
    let (action, id, gone) = match change.action.as_deref() {
        None => {
            let gone: Vec<String> = keys.iter().map(|k| key_id(k)).collect();
            keys = vec![fresh.clone()];
            ("backfeed_key.rotate", String::new(), gone)
        }
        Some("add") => {
            if keys.len() >= MAX_BACKFEED_KEYS {
                return Err(ApiError::bad_request(format!(
                    "A project has at most {MAX_BACKFEED_KEYS} backfeed keys: revoke one first."
                )));
            }
            keys.push(fresh.clone());
            ("backfeed_key.add", key_id(&fresh), Vec::new())
        }
        Some("rotate") => {
            let i = position(&keys)?;
            let old = std::mem::replace(&mut keys[i], fresh.clone());
            ("backfeed_key.rotate", key_id(&old), vec![key_id(&old)])
        }
        Some("revoke") => {
            let i = position(&keys)?;
            let old = keys.remove(i);
            ("backfeed_key.revoke", key_id(&old), vec![key_id(&old)])
        }
        Some(_) => {
            return Err(ApiError::bad_request(
                "action is add, rotate or revoke (none: replace every key).",
            ))
        }
    };
    settings.backfeed_key = keys.join(",");
    state
        .store
        .projects()
        .save_settings(&slug, &settings)
        .await?;
    state.store.queue().forget_fed(&slug, &gone).await?;
    caller.record(&state, action, &slug, 0, id).await?;
    Ok(Json(BackfeedKey {
        backfeed_key: settings.backfeed_key,
    }))
}

/// `POST /admin/api/SLUG/targets`: adds, activates, deactivates or removes an upload target.
#[utoipa::path(post, path = "/{slug}/targets", tag = "admin", params(ProjectPath))]
pub async fn change_target(
    State(state): State<AppState>,
    caller: Caller,
    Path(slug): Path<String>,
    Json(req): Json<TargetChange>,
) -> ApiResult<Json<UploadTargets>> {
    caller.may_change(&slug)?;
    let action = TargetAction::parse(&req.action)?;
    let targets =
        ops::projects::change_target(&state.store, &caller.actor(), &slug, &req.target, action)
            .await?;
    Ok(Json(targets))
}
