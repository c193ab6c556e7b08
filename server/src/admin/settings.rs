//! A project's settings in the panel: shown and saved (checked and audited by
//! [`crate::ops::settings`], as the CLI's), the description sanitised, and who administers the
//! project.

use super::auth::Caller;
use crate::openapi::ProjectPath;
use crate::{
    ops,
    state::AppState,
    store::Role,
    web::{known_project, ApiError, ApiResult},
};
use app::model::admin::ProjectSettings;
use axum::{
    extract::{Path, State},
    Json,
};

/// `GET /admin/api/SLUG/settings`.
#[utoipa::path(
    get,
    path = "/{slug}/settings",
    tag = "admin",
    params(ProjectPath),
    responses((status = 200, body = ProjectSettings)),
)]
pub async fn show_settings(
    State(state): State<AppState>,
    caller: Caller,
    Path(slug): Path<String>,
) -> ApiResult<Json<ProjectSettings>> {
    caller.may_view(&slug)?;
    let mut settings = (*known_project(&state, &slug).await?).clone();
    // Read-only accounts see everything but secrets: whoever holds the backfeed key may queue
    // items.
    let secrets_hidden = caller.role == Role::ReadOnly;
    let backfeed_keys = state
        .store
        .queue()
        .fed_by_keys(&slug, &settings.backfeed_key, secrets_hidden)
        .await?;
    if secrets_hidden {
        settings.backfeed_key.clear();
    }
    let extras = state.store.people().project_extras(&slug).await?;
    let admins = project_admins(&state, &slug).await?;
    Ok(Json(ProjectSettings {
        settings,
        description: extras.get("description").cloned().unwrap_or_default(),
        priority: Some(
            extras
                .get("priority")
                .and_then(|p| p.parse().ok())
                .unwrap_or(0),
        ),
        targets: state.store.projects().upload_targets(&slug).await?,
        admins: Some(admins),
        secrets_hidden,
        backfeed_keys,
    }))
}

/// The project-admin accounts of `slug`, by name.
async fn project_admins(state: &AppState, slug: &str) -> ApiResult<Vec<String>> {
    Ok(state
        .store
        .people()
        .accounts()
        .await?
        .into_iter()
        .filter(|a| a.role == Role::Project && a.projects.iter().any(|p| p == slug))
        .map(|a| a.name)
        .collect())
}

/// `wanted` as sorted lowercase names, each a project-admin account, or why not.
/// Account names as stored: trimmed, lowercase, sorted, each once.
fn normalised_names(wanted: &[String]) -> Vec<String> {
    let mut names: Vec<String> = wanted
        .iter()
        .map(|n| n.trim().to_lowercase())
        .filter(|n| !n.is_empty())
        .collect();
    names.sort();
    names.dedup();
    names
}

async fn check_admins(state: &AppState, wanted: &[String]) -> ApiResult<Vec<String>> {
    let names = normalised_names(wanted);
    for name in &names {
        match state.store.people().account(name).await? {
            None => return Err(ApiError::bad_request(format!("No account {name:?}."))),
            Some(a) if a.role != Role::Project => {
                return Err(ApiError::bad_request(format!(
                    "{name} is not a project-admin account (roles are set on the Accounts page)."
                )))
            }
            Some(_) => {}
        }
    }
    Ok(names)
}

/// Makes `wanted` (checked names) exactly the project-admin accounts of `slug`; the names of
/// the accounts changed.
pub(super) async fn set_project_admins(
    state: &AppState,
    slug: &str,
    wanted: &[String],
) -> ApiResult<Vec<String>> {
    let mut changed = Vec::new();
    for mut a in state.store.people().accounts().await? {
        if a.role != Role::Project {
            continue;
        }
        let has = a.projects.iter().any(|p| p == slug);
        let wants = wanted.contains(&a.name);
        if has == wants {
            continue;
        }
        if wants {
            a.projects.push(slug.to_string());
        } else {
            a.projects.retain(|p| p != slug);
        }
        state.store.people().save_account(&a).await?;
        changed.push(a.name);
    }
    Ok(changed)
}

/// Description HTML with everything but harmless markup removed.
pub fn sanitise_html(html: &str) -> String {
    ammonia::clean(html)
}

/// The bound of a project's `priority` (either way).
pub const PRIORITY_RANGE: i64 = 1_000_000;

/// `PUT /admin/api/SLUG/settings`: checks (as `tracker project set` does) and saves.
#[utoipa::path(
    put,
    path = "/{slug}/settings",
    tag = "admin",
    params(ProjectPath),
    responses((status = 200, body = ProjectSettings)),
)]
pub async fn save_settings(
    State(state): State<AppState>,
    caller: Caller,
    Path(slug): Path<String>,
    Json(req): Json<ProjectSettings>,
) -> ApiResult<Json<ProjectSettings>> {
    caller.may_change(&slug)?;
    let before = known_project(&state, &slug).await?;
    let settings = ops::settings::check(req.settings)?;
    // Checked before anything is saved: a bad account name changes nothing.
    // A change of the list is a global admin's, checked before the names are looked up: a
    // project admin learns nothing of other accounts from the answer.
    let admins = match req.admins {
        Some(wanted) => {
            let mut current = project_admins(&state, &slug).await?;
            current.sort();
            if current == normalised_names(&wanted) {
                None
            } else {
                caller.must_be_global()?;
                Some(check_admins(&state, &wanted).await?)
            }
        }
        None => None,
    };
    let description = sanitise_html(&req.description);
    let store = &state.store;
    let extras = store.people().project_extras(&slug).await?;
    let old_priority: i64 = extras
        .get("priority")
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    // The priority orders projects for every "auto" warrior: bounded, and set by global admins
    // only (a project admin may send it back unchanged).
    let priority = match req.priority {
        Some(p) if p == old_priority => None,
        Some(p) if !(-PRIORITY_RANGE..=PRIORITY_RANGE).contains(&p) => {
            return Err(ApiError::bad_request(format!(
                "priority is from -{PRIORITY_RANGE} to {PRIORITY_RANGE}."
            )))
        }
        Some(p) => {
            caller.must_be_global()?;
            Some(p)
        }
        None => None,
    };
    ops::settings::save(store, &caller.actor(), &slug, &before, &settings).await?;
    if extras.get("description").map_or("", String::as_str) != description {
        store
            .people()
            .set_project_extra(&slug, "description", &description)
            .await?;
        caller
            .record(
                &state,
                "settings.description",
                &slug,
                description.len() as u64,
                "",
            )
            .await?;
    }
    if let Some(priority) = priority {
        store
            .people()
            .set_project_extra(&slug, "priority", &priority.to_string())
            .await?;
        caller
            .record(
                &state,
                "settings.priority",
                &slug,
                0,
                format!("{old_priority} -> {priority}"),
            )
            .await?;
    }
    if let Some(wanted) = admins {
        let changed = set_project_admins(&state, &slug, &wanted).await?;
        caller
            .record(
                &state,
                "settings.admins",
                &slug,
                changed.len() as u64,
                wanted.join(","),
            )
            .await?;
    }
    show_settings(State(state), caller, Path(slug)).await
}
