//! A project's Warrior listing and lifecycle in the panel, and the `auto_project` pin
//! ([`crate::project_list`] builds the list).

use super::auth::Caller;
use crate::openapi::ProjectPath;
use crate::{
    project_list,
    state::AppState,
    store::valid_slug,
    web::{known_project, ApiError, ApiResult},
};
pub use app::model::admin::Pin;
use app::model::admin::{AutoProject, Listing, ProjectListing};
use axum::{
    extract::{Path, State},
    http::HeaderMap,
    Json,
};

pub use crate::ops::listing::{check_listing, MAX_MARKER, MAX_URL};

/// `GET /admin/api/SLUG/listing`.
#[utoipa::path(
    get,
    path = "/{slug}/listing",
    tag = "admin",
    params(ProjectPath),
    responses((status = 200, body = ProjectListing)),
)]
pub async fn show_listing(
    State(state): State<AppState>,
    caller: Caller,
    headers: HeaderMap,
    Path(slug): Path<String>,
) -> ApiResult<Json<ProjectListing>> {
    caller.may_view(&slug)?;
    known_project(&state, &slug).await?;
    listing_of(&state, &headers, &slug).await.map(Json)
}

async fn listing_of(
    state: &AppState,
    headers: &HeaderMap,
    slug: &str,
) -> ApiResult<ProjectListing> {
    let generated = project_list::generate(&state.store, &state.config.base_url(headers)).await?;
    let project = generated.projects.iter().find(|p| p.slug == slug);
    Ok(ProjectListing {
        listing: state.store.projects().listing(slug).await?,
        state: project.map(|p| p.state.clone()).unwrap_or_default(),
        transitions: state.store.projects().transitions(slug).await?,
        entry: project
            .and_then(|p| p.entry.clone())
            .unwrap_or(serde_json::Value::Null),
    })
}

/// `PUT /admin/api/SLUG/listing`: checks, sanitises, saves and audits a listing.
#[utoipa::path(
    put,
    path = "/{slug}/listing",
    tag = "admin",
    params(ProjectPath),
    responses((status = 200, body = ProjectListing)),
)]
pub async fn save_listing(
    State(state): State<AppState>,
    caller: Caller,
    headers: HeaderMap,
    Path(slug): Path<String>,
    Json(listing): Json<Listing>,
) -> ApiResult<Json<ProjectListing>> {
    caller.may_change(&slug)?;
    known_project(&state, &slug).await?;
    let listing = check_listing(listing).map_err(ApiError::bad_request)?;
    let before = state.store.projects().listing(&slug).await?;
    if listing.weight != before.weight {
        // Which projects "auto" Warriors run is the whole fleet's: a global admin's to set.
        caller.must_be_global().map_err(|_| {
            ApiError::forbidden(
                "Only a global admin changes a project's weight among auto Warriors; save \
                 the listing with its weight as it was.",
            )
        })?;
    }
    // What the fleet runs is a global admin's to approve: a global admin's save approves the
    // repository it saves; another's change of `listed` or `repository` waits for one.
    let mut listing = listing;
    let global = caller.must_be_global().is_ok();
    listing.approved = if global {
        Some(listing.repository.clone())
    } else if listing.listed == before.listed && listing.repository == before.repository {
        before.approved.clone()
    } else {
        // What was approved before: a listing saved before approvals that was offered had its
        // repository approved by being offered.
        Some(match &before.approved {
            Some(a) => a.clone(),
            None if before.offered() => before.repository.clone(),
            None => String::new(),
        })
    };
    crate::ops::listing::save(&state.store, &caller.actor(), &slug, &before, &listing).await?;
    listing_of(&state, &headers, &slug).await.map(Json)
}

/// `GET /admin/api/warrior/auto`: the project "auto" Warriors run, the pin, the candidates.
#[utoipa::path(
    get,
    path = "/warrior/auto",
    tag = "admin",
    responses((status = 200, body = AutoProject)),
)]
pub async fn show_auto(
    State(state): State<AppState>,
    _caller: Caller,
    headers: HeaderMap,
) -> ApiResult<Json<AutoProject>> {
    auto_of(&state, &headers, false).await.map(Json)
}

/// What "auto" Warriors run now; recorded (and audited when it changed) only after a change
/// of the pin: a read writes nothing (the list's refresher records what changes by itself).
async fn auto_of(state: &AppState, headers: &HeaderMap, record: bool) -> ApiResult<AutoProject> {
    let generated = project_list::generate(&state.store, &state.config.base_url(headers)).await?;
    let chosen = generated.choose(None);
    if record {
        project_list::record_auto(&state.store, &generated, chosen.as_deref()).await?;
    }
    Ok(generated.auto_project(chosen))
}

/// `PUT /admin/api/warrior/auto` (global admins): pins `auto_project` to a project, or unpins
/// it; audited, and the new choice recorded at once.
#[utoipa::path(
    put,
    path = "/warrior/auto",
    tag = "admin",
    responses((status = 200, body = AutoProject)),
)]
pub async fn pin_auto(
    State(state): State<AppState>,
    caller: Caller,
    headers: HeaderMap,
    Json(req): Json<Pin>,
) -> ApiResult<Json<AutoProject>> {
    caller.must_be_global()?;
    let pin = req
        .pin
        .map(|p| p.trim().to_string())
        .filter(|p| !p.is_empty());
    if let Some(p) = &pin {
        if !valid_slug(p) {
            return Err(ApiError::bad_request("pin is a project's slug."));
        }
        known_project(&state, p).await?;
    }
    state.store.projects().set_auto_pin(pin.as_deref()).await?;
    let detail = pin
        .as_deref()
        .map_or("unpinned".into(), |p| format!("pinned to {p}"));
    caller
        .record(
            &state,
            "auto_project.pin",
            pin.as_deref().unwrap_or(""),
            1,
            detail,
        )
        .await?;
    auto_of(&state, &headers, true).await.map(Json)
}
