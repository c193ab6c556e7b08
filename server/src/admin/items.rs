//! Queues in the panel: sizes, adding items (a streamed body: plain, gzip or zstd, one item a
//! line), moving items between queues, clearing a queue; one item's whereabouts and timeline.
//! Every bulk action has a dry run.

use super::auth::Caller;
use crate::openapi::ProjectPath;
use crate::{
    keys::QUEUES,
    ops,
    state::AppState,
    web::{known_project, ApiError, ApiResult},
};
pub use app::model::admin::Affected;
pub use app::model::admin::{ClearQueue, MoveItems};
use app::model::admin::{ItemInfo, Queues, TimelineEntry};
use axum::{
    body::Body,
    extract::{Path, Query, State},
    Json,
};
use futures::TryStreamExt;
use serde::Deserialize;

/// `GET /admin/api/SLUG/queues`: the size of every queue part, and the other states.
#[utoipa::path(
    get,
    path = "/{slug}/queues",
    tag = "admin",
    params(ProjectPath),
    responses((status = 200, body = Queues)),
)]
pub async fn show_queues(
    State(state): State<AppState>,
    caller: Caller,
    Path(slug): Path<String>,
) -> ApiResult<Json<Queues>> {
    caller.may_view(&slug)?;
    known_project(&state, &slug).await?;
    let (board, queues) = state
        .store
        .figures()
        .snapshot(&slug, 0, 0)
        .await?
        .ok_or_else(ApiError::no_project)?;
    Ok(Json(Queues {
        queues: queues.into_iter().collect(),
        claimed: board.counts.out,
        done: board.counts.done,
        failed: board.counts.failed,
    }))
}

/// Query of `GET /admin/api/SLUG/item`.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ItemQuery {
    /// The item.
    pub name: String,
}

/// `GET /admin/api/SLUG/item?name=ITEM`: where the item is, its decay score and its timeline.
/// A name that is empty or longer than an item may be is 400.
#[utoipa::path(
    get,
    path = "/{slug}/item",
    tag = "admin",
    params(ProjectPath, ItemQuery),
    responses((status = 200, body = ItemInfo)),
)]
pub async fn show_item(
    State(state): State<AppState>,
    caller: Caller,
    Path(slug): Path<String>,
    Query(q): Query<ItemQuery>,
) -> ApiResult<Json<ItemInfo>> {
    caller.may_view(&slug)?;
    known_project(&state, &slug).await?;
    let max = state.config.limits.item;
    if q.name.is_empty() || q.name.len() > max {
        return Err(ApiError::bad_request(format!(
            "An item name is 1 to {max} bytes."
        )));
    }
    let status = state.store.queue().item_status(&slug, &q.name).await?;
    Ok(Json(ItemInfo {
        item: q.name,
        state: status.state,
        detail: status.detail,
        downloader: status.downloader,
        score: status.score,
        reclaims: status.reclaims,
        timeline: serde_json::from_str::<Vec<TimelineEntry>>(&status.timeline).unwrap_or_default(),
    }))
}

/// Query of `POST /admin/api/SLUG/items`.
#[derive(Debug, Deserialize)]
pub struct AddQuery {
    /// One of the queues (default `todo`).
    #[serde(default = "default_queue")]
    pub queue: String,
    /// `1`: only count the items the body holds.
    #[serde(default)]
    pub dry_run: Option<String>,
}

fn default_queue() -> String {
    crate::keys::TODO.into()
}

fn is_dry(flag: &Option<String>) -> bool {
    matches!(flag.as_deref(), Some("1" | "true" | "yes"))
}

/// `POST /admin/api/SLUG/items?queue=Q[&dry_run=1]`: adds the items of the body, one a line
/// (plain, gzip or zstd), as [`ops::items::add`] does. The answer counts new items (dry run:
/// the items that would be new).
#[utoipa::path(
    post,
    path = "/{slug}/items",
    tag = "admin",
    params(
        ProjectPath,
        ("queue" = Option<String>, Query, description = "The queue: `todo` (default), `todo:backfeed`, `todo:secondary` or `todo:redo`"),
        ("dry_run" = Option<bool>, Query, description = "Count the new items only"),
    ),
    request_body(content = String, content_type = "text/plain", description = "Items, one a line; plain, gzip or zstd (by `Content-Encoding` or magic bytes), streamed"),
    responses((status = 200, body = Affected)),
)]
pub async fn add_items(
    State(state): State<AppState>,
    caller: Caller,
    Path(slug): Path<String>,
    Query(q): Query<AddQuery>,
    body: Body,
) -> ApiResult<Json<Affected>> {
    caller.may_change(&slug)?;
    let dry_run = is_dry(&q.dry_run);
    let stream = body.into_data_stream().map_err(std::io::Error::other);
    let reader = tokio_util::io::SyncIoBridge::new(tokio_util::io::StreamReader::new(stream));
    let actor = caller.actor();
    let count = ops::items::add(
        &state.store,
        &actor,
        &slug,
        ops::items::Adding {
            queue: &q.queue,
            dry_run,
            max_item: state.config.limits.item,
        },
        reader,
        &|_| {},
    )
    .await?;
    Ok(Json(Affected { count, dry_run }))
}

/// `POST /admin/api/SLUG/move`: moves waiting items between queues.
#[utoipa::path(
    post,
    path = "/{slug}/move",
    tag = "admin",
    params(ProjectPath),
    responses((status = 200, body = Affected)),
)]
pub async fn move_items(
    State(state): State<AppState>,
    caller: Caller,
    Path(slug): Path<String>,
    Json(req): Json<MoveItems>,
) -> ApiResult<Json<Affected>> {
    caller.may_change(&slug)?;
    known_project(&state, &slug).await?;
    for q in [&req.from, &req.to] {
        if !QUEUES.contains(&q.as_str()) {
            return Err(ApiError::bad_request(format!("queues are {QUEUES:?}")));
        }
    }
    if req.from == req.to {
        return Err(ApiError::bad_request("from and to are the same queue."));
    }
    let regex = parse_regex(&req.regex)?;
    let count = state
        .store
        .queue()
        .move_items(&slug, &req.from, &req.to, regex.as_ref(), req.dry_run)
        .await?;
    if !req.dry_run {
        let detail = format!("{} -> {} regex={:?}", req.from, req.to, req.regex);
        caller
            .record(&state, "items.move", &slug, count, detail)
            .await?;
    }
    Ok(Json(Affected {
        count,
        dry_run: req.dry_run,
    }))
}

/// An optional regular expression from a request (empty: none), or a 400.
pub fn parse_regex(raw: &str) -> ApiResult<Option<regex::Regex>> {
    Ok(ops::items::user_regex(raw)?)
}

/// `POST /admin/api/SLUG/clear`: drops every item waiting in a queue.
#[utoipa::path(
    post,
    path = "/{slug}/clear",
    tag = "admin",
    params(ProjectPath),
    responses((status = 200, body = Affected)),
)]
pub async fn clear_queue(
    State(state): State<AppState>,
    caller: Caller,
    Path(slug): Path<String>,
    Json(req): Json<ClearQueue>,
) -> ApiResult<Json<Affected>> {
    caller.may_change(&slug)?;
    known_project(&state, &slug).await?;
    if !QUEUES.contains(&req.queue.as_str()) {
        return Err(ApiError::bad_request(format!("queue is one of {QUEUES:?}")));
    }
    let count = state
        .store
        .queue()
        .clear_queue(&slug, &req.queue, req.dry_run)
        .await?;
    if !req.dry_run {
        caller
            .record(&state, "queue.clear", &slug, count, req.queue)
            .await?;
    }
    Ok(Json(Affected {
        count,
        dry_run: req.dry_run,
    }))
}

/// `GET /admin/api/SLUG/search?state=&match=&regex=&claimant=&older_than=&limit=&cursor=`: a
/// page of the project's items found by state, name, claimant and claim age
/// ([`crate::store::search`]); a bad field is 400 with its reason.
#[utoipa::path(
    get,
    path = "/{slug}/search",
    tag = "admin",
    params(ProjectPath, app::model::admin::SearchParams),
    responses((status = 200, body = crate::store::search::SearchPage)),
)]
pub async fn search_items(
    State(state): State<AppState>,
    caller: Caller,
    Path(slug): Path<String>,
    Query(p): Query<ops::items::SearchParams>,
) -> ApiResult<Json<crate::store::search::SearchPage>> {
    caller.may_view(&slug)?;
    known_project(&state, &slug).await?;
    let q = ops::items::search_query(&p)?;
    let page = state
        .store
        .queue()
        .search_items(&slug, &q, crate::store::now_ms())
        .await?;
    Ok(Json(page))
}

/// `POST /admin/api/SLUG/search/act` ([`app::model::admin::SearchAct`]): releases, requeues,
/// drops or moves every item a search finds (at most [`crate::store::search_act::ACT_MAX`]);
/// a dry run counts them. The state must be the one the action takes: `claimed` for `release`,
/// `failed` for `requeue` and `drop`, `queued` or a queue part for `move`. Recorded in the audit
/// log with the search.
#[utoipa::path(
    post,
    path = "/{slug}/search/act",
    tag = "admin",
    params(ProjectPath),
    responses((status = 200, body = Affected)),
)]
pub async fn act_on_search(
    State(state): State<AppState>,
    caller: Caller,
    Path(slug): Path<String>,
    Json(req): Json<app::model::admin::SearchAct>,
) -> ApiResult<Json<Affected>> {
    use crate::store::search_act::{SearchAction, ACT_MAX};
    caller.may_change(&slug)?;
    known_project(&state, &slug).await?;
    let q = ops::items::search_query(&req.search)?;
    let queued = req.search.state == "queued"
        || (QUEUES
            .iter()
            .any(|q| req.search.state == *q || req.search.state.starts_with(&format!("{q}#"))));
    let action = match (req.action.as_str(), req.search.state.as_str()) {
        ("release", "claimed") => SearchAction::Release,
        ("requeue", "failed") => SearchAction::Requeue,
        ("drop", "failed") => SearchAction::Drop,
        ("move", _) if queued => {
            if !QUEUES.contains(&req.to.as_str()) {
                return Err(ApiError::bad_request(format!("to is one of {QUEUES:?}")));
            }
            SearchAction::Move { to: req.to.clone() }
        }
        ("release" | "requeue" | "drop" | "move", _) => return Err(ApiError::bad_request(
            "release takes state claimed; requeue and drop, failed; move, queued or a queue part",
        )),
        _ => {
            return Err(ApiError::bad_request(
                "action is release, requeue, drop or move",
            ))
        }
    };
    let now = crate::store::now_ms();
    let acted = state
        .store
        .queue()
        .act_on_search(&slug, &q, &action, &caller.name, now, req.dry_run)
        .await?;
    if acted.too_many {
        return Err(ApiError::bad_request(format!(
            "the search finds more than {ACT_MAX} items: narrow it"
        )));
    }
    let count = if req.dry_run {
        acted.found
    } else {
        acted.changed
    };
    if !req.dry_run {
        let detail = format!(
            "{} state={:?} match={:?} regex={:?} claimant={:?} older_than={:?} to={:?} found={}",
            req.action,
            req.search.state,
            req.search.glob,
            req.search.regex,
            req.search.claimant,
            req.search.older_than,
            req.to,
            acted.found
        );
        caller
            .record(&state, "items.search_act", &slug, count, detail)
            .await?;
    }
    Ok(Json(Affected {
        count,
        dry_run: req.dry_run,
    }))
}
