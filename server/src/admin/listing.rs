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

/// The longest URL of a listing (repository, logo).
pub const MAX_URL: usize = 1024;
/// The longest marker HTML of a listing.
pub const MAX_MARKER: usize = 4096;

/// `listing` with its HTML sanitised, or why it cannot be saved.
pub fn check_listing(mut listing: Listing) -> Result<Listing, String> {
    for (name, url) in [
        ("repository", &mut listing.repository),
        ("logo", &mut listing.logo),
    ] {
        *url = url.trim().to_string();
        if url.len() > MAX_URL {
            return Err(format!("{name} is at most {MAX_URL} bytes"));
        }
        if !url.is_empty()
            && (!url.contains("://") || url.chars().any(|c| c.is_whitespace() || c.is_control()))
        {
            return Err(format!("{name} must be a URL without spaces"));
        }
    }
    listing.deadline = listing.deadline.trim().to_string();
    if !listing.deadline.is_empty() && !super::project_list::valid_deadline(&listing.deadline) {
        return Err("deadline must be like 2013-04-30T23:59:59Z".into());
    }
    listing.host = listing.host.trim().to_string();
    let host_ok = listing.host.len() <= 253
        && listing
            .host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b".-:".contains(&b));
    if !host_ok {
        return Err("host is a host name (at most 253 characters)".into());
    }
    if listing.marker_html.len() > MAX_MARKER {
        return Err(format!("marker_html is at most {MAX_MARKER} bytes"));
    }
    listing.marker_html = ammonia::clean(&listing.marker_html);
    if let Some([lat, lng]) = listing.lat_lng {
        if !(lat.is_finite() && lng.is_finite() && lat.abs() <= 90.0 && lng.abs() <= 180.0) {
            return Err("lat_lng is [latitude -90..90, longitude -180..180]".into());
        }
    }
    if listing.listed && listing.repository.is_empty() {
        return Err("a listed project needs its repository (the Warrior runs it)".into());
    }
    Ok(listing)
}

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
        listing: state.store.listing(slug).await?,
        state: project.map(|p| p.state.clone()).unwrap_or_default(),
        transitions: state.store.transitions(slug).await?,
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
    state.store.save_listing(&slug, &listing).await?;
    let detail = if listing.listed {
        format!("listed, {}", listing.repository)
    } else {
        "not listed".into()
    };
    caller
        .record(&state, "listing.save", &slug, 1, detail)
        .await?;
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
    auto_of(&state, &headers).await.map(Json)
}

async fn auto_of(state: &AppState, headers: &HeaderMap) -> ApiResult<AutoProject> {
    let generated = project_list::generate(&state.store, &state.config.base_url(headers)).await?;
    let chosen = generated.choose(None);
    project_list::record_auto(&state.store, &generated, chosen.as_deref()).await?;
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
    state.store.set_auto_pin(pin.as_deref()).await?;
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
    auto_of(&state, &headers).await.map(Json)
}
