//! The warrior API (PROTOCOL.md): request, multi-item request, done, done+request, release,
//! and item status.

use super::pipeline::CallerPipeline;
use crate::openapi::ProjectPath;
use crate::web::{known_project, request_ip, user_agent, within_deadline, ApiError, ApiResult};
use crate::{
    limits::{valid_downloader, Limits},
    state::AppState,
    store::{ClaimOutcome, ClaimRequest, DoneOutcome, DoneReport, Refusal, StoreError},
};
use axum::{
    body::Bytes,
    extract::{Path, State},
    http::StatusCode,
    response::{IntoResponse, Response},
    Json,
};

/// Keys never sent as extra item fields: seesaw copies every key into its item.
const RESERVED_FIELDS: [&str; 7] = [
    "item_name",
    "items",
    "queues",
    "data_dir",
    "item_dir",
    "warc_file_base",
    "item",
];

mod items;
mod wire;
pub use items::*;
use wire::wants_text;
pub use wire::{parse, ClaimAnswers, DoneBody, ReleaseBody, RequestBody};

/// Who calls: IP (see [`request_ip`]) and user agent, extracted from the request.
pub struct Caller {
    ip: String,
    user_agent: String,
}

impl axum::extract::FromRequestParts<AppState> for Caller {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        Ok(Caller {
            ip: request_ip(&parts.extensions, &parts.headers, state.config.trust_proxy),
            user_agent: state
                .config
                .limits
                .cut_user_agent(&user_agent(&parts.headers)),
        })
    }
}

async fn serve_claim(
    state: &AppState,
    slug: &str,
    caller: &Caller,
    pipeline: &CallerPipeline,
    req: RequestBody,
    n: usize,
) -> ApiResult<Response> {
    let limits = &state.config.limits;
    let version = req.version.unwrap_or_default();
    limits
        .check_downloader(&req.downloader)
        .and_then(|()| limits.check_version(&version))
        .map_err(ApiError::bad_request)?;
    let settings = known_project(state, slug).await?;
    let name_ok = valid_downloader(&req.downloader);
    let (who, seen_version) = (req.downloader.clone(), version.clone());
    let request = ClaimRequest {
        globally_blocked: state
            .store
            .projects()
            .globally_blocked(&caller.ip, &req.downloader)
            .await?,
        downloader: req.downloader,
        ip: caller.ip.clone(),
        user_agent: caller.user_agent.clone(),
        version,
        n,
        name_ok,
        pipeline: pipeline.0.clone(),
    };
    let outcome = match state.batcher.claim(slug, request).await {
        Err(StoreError::NoProject) => return Err(ApiError::no_project()),
        other => other?,
    };
    // The fleet counts callers the claim's checks let through (not a blocked address, not a
    // paused project, not an old script): a refused caller cannot fill it.
    let passed = matches!(
        outcome,
        ClaimOutcome::Items(..)
            | ClaimOutcome::Refused(
                Refusal::NothingToGive | Refusal::Budget | Refusal::RateLimited { .. }
            )
    );
    if name_ok && passed {
        state
            .fleet
            .saw(slug, &who, &caller.ip, &caller.user_agent, &seen_version, 0);
    }
    let (items, queues) =
        match outcome {
            ClaimOutcome::Items(items, queues) => (items, queues),
            ClaimOutcome::Refused(Refusal::OldVersion) => {
                let status = StatusCode::from_u16(455).unwrap_or(StatusCode::BAD_REQUEST);
                return Err(ApiError::Client(
                    status,
                    "Your script version is too old; please update.".into(),
                ));
            }
            ClaimOutcome::Refused(Refusal::BadName) => {
                return Err(ApiError::bad_request("Invalid downloader name."))
            }
            ClaimOutcome::Refused(Refusal::Blocked) => return Err(ApiError::forbidden("Blocked.")),
            ClaimOutcome::Refused(Refusal::TokenRequired) => return Err(ApiError::forbidden(
                "This project hands out items to pipelines only: put your pipeline token in the \
                 tracker URL (/SLUG/token=SECRET/) or send Authorization: Bearer SECRET.",
            )),
            ClaimOutcome::Refused(Refusal::NotForPipeline) => {
                return Err(ApiError::forbidden(
                    "This project does not serve your pipeline: their tags do not match.",
                ))
            }
            ClaimOutcome::Refused(Refusal::NotActive) => {
                return Err(ApiError::not_found("The project is not handing out items."))
            }
            ClaimOutcome::Refused(Refusal::Budget) => {
                return Err(ApiError::not_found("You hold your maximum of claims."))
            }
            ClaimOutcome::Refused(Refusal::RateLimited { wait_ms }) => {
                return Err(ApiError::RateLimited(wait_ms.div_ceil(1000).max(1)))
            }
            ClaimOutcome::Refused(Refusal::NothingToGive) => {
                return Err(ApiError::not_found("No item available."))
            }
            ClaimOutcome::Refused(other) => return Err(StoreError::Refused(other).into()),
        };
    let name = items.join("\0");
    if wants_text(&req.api_version) {
        return Ok(name.into_response());
    }
    let mut body = serde_json::Map::new();
    for (k, v) in &settings.extra {
        if !RESERVED_FIELDS.contains(&k.as_str()) {
            body.insert(k.clone(), serde_json::Value::String(v.clone()));
        }
    }
    body.insert("item_name".into(), serde_json::Value::String(name));
    // Today's seesaw hands `[{"item", "queue"}, ...]` to a grab script's `item_filter`.
    body.insert("items".into(), items.into());
    body.insert("queues".into(), queues.into());
    Ok(Json(body).into_response())
}

/// `POST /SLUG/request`: claims one item.
// The warrior calls' spans (address, pipeline) are made only when tracing asks for debug: at the
// default level no event is logged inside them (the batcher logs from its own task).
#[tracing::instrument(level = "debug", skip(state, caller, pipeline, body), fields(ip = %caller.ip, pipeline = pipeline.name()))]
#[utoipa::path(
    post,
    path = "/{slug}/request",
    tag = "warrior",
    params(ProjectPath),
    request_body(content = RequestBody, content_type = "application/json", description = "Read from the raw body, whatever its content type"),
    responses(ClaimAnswers),
)]
pub async fn claim_items(
    State(state): State<AppState>,
    Path(slug): Path<String>,
    caller: Caller,
    pipeline: CallerPipeline,
    body: Bytes,
) -> ApiResult<Response> {
    let req: RequestBody = parse(&body)?;
    let claim = serve_claim(&state, &slug, &caller, &pipeline, req, 1);
    within_deadline(&state, claim).await
}

/// N of a `multi=N` path segment, within the limit; 404 with the expected form otherwise.
fn multi_size(state: &AppState, multi: &str) -> ApiResult<usize> {
    let max = state.config.limits.multi;
    multi
        .strip_prefix("multi=")
        .and_then(|n| n.parse::<usize>().ok())
        .filter(|n| (1..=max).contains(n))
        .ok_or_else(|| {
            ApiError::not_found(format!(
                "Expected /SLUG/multi=N/request (or multi=N//request) with N in 1..={max}."
            ))
        })
}

async fn claim_n(
    state: AppState,
    slug: String,
    multi: String,
    caller: Caller,
    pipeline: CallerPipeline,
    body: Bytes,
) -> ApiResult<Response> {
    let n = multi_size(&state, &multi)?;
    let req: RequestBody = parse(&body)?;
    let claim = serve_claim(&state, &slug, &caller, &pipeline, req, n);
    within_deadline(&state, claim).await
}

/// `POST /SLUG/multi=N//request`: claims up to N items, NUL-joined (seesaw 0.10.3 joins the
/// tracker URL `.../SLUG/multi=N/` and `/request`).
#[tracing::instrument(level = "debug", skip(state, caller, pipeline, body), fields(ip = %caller.ip, pipeline = pipeline.name()))]
#[utoipa::path(
    post,
    path = "/{slug}/{multi}//request",
    tag = "warrior",
    params(ProjectPath, ("multi" = String, Path, description = "`multi=N`: how many items one call claims (seesaw's `--multi-item`)")),
    request_body(content = RequestBody, content_type = "application/json"),
    responses(ClaimAnswers),
)]
pub async fn claim_multi(
    State(state): State<AppState>,
    Path((slug, multi)): Path<(String, String)>,
    caller: Caller,
    pipeline: CallerPipeline,
    body: Bytes,
) -> ApiResult<Response> {
    claim_n(state, slug, multi, caller, pipeline, body).await
}

/// `POST /SLUG/multi=N/request`: the same claim as today's seesaw sends it (it strips the
/// tracker URL's trailing slash before joining `/request`).
#[tracing::instrument(level = "debug", skip(state, caller, pipeline, body), fields(ip = %caller.ip, pipeline = pipeline.name()))]
#[utoipa::path(
    post,
    path = "/{slug}/{multi}/request",
    tag = "warrior",
    params(ProjectPath, ("multi" = String, Path, description = "`multi=N`: how many items one call claims")),
    request_body(content = RequestBody, content_type = "application/json"),
    responses(ClaimAnswers),
)]
pub async fn claim_multi_today(
    State(state): State<AppState>,
    Path((slug, multi)): Path<(String, String)>,
    caller: Caller,
    pipeline: CallerPipeline,
    body: Bytes,
) -> ApiResult<Response> {
    claim_n(state, slug, multi, caller, pipeline, body).await
}

fn done_report(
    limits: &Limits,
    req: &DoneBody,
    caller: &Caller,
    pipeline: &CallerPipeline,
) -> ApiResult<DoneReport> {
    let version = req.version.clone().unwrap_or_default();
    let checked = limits
        .check_downloader(&req.downloader)
        .and_then(|()| limits.check_version(&version))
        .and_then(|()| limits.split_items(&req.item))
        .and_then(|items| Ok((items, limits.check_bytes(&req.bytes)?)))
        .and_then(|(items, bytes)| Ok((items, bytes, limits.id_text(req.id.as_ref())?)));
    let (items, bytes, id) = checked.map_err(ApiError::bad_request)?;
    if !valid_downloader(&req.downloader) {
        return Err(ApiError::bad_request("Invalid downloader name."));
    }
    Ok(DoneReport {
        downloader: req.downloader.clone(),
        version,
        user_agent: caller.user_agent.clone(),
        ip: caller.ip.clone(),
        id,
        bytes,
        items,
        pipeline: pipeline.name().to_string(),
    })
}

async fn record_done(state: &AppState, slug: &str, report: DoneReport) -> ApiResult<()> {
    let settings = known_project(state, slug).await?;
    // A globally blocked address or name changes nothing (blocks in the project are checked
    // by done.lua, in the report's own step). The global blocks are cached in the process.
    if !settings.ignore_global_blocks
        && state
            .store
            .projects()
            .globally_blocked(&report.ip, &report.downloader)
            .await?
    {
        return Err(ApiError::forbidden(
            "You are blocked on this tracker; nothing recorded.",
        ));
    }
    // Who reported, for the fleet (the report itself, items and all, goes to the batch).
    let who = [
        &report.downloader,
        &report.ip,
        &report.user_agent,
        &report.version,
    ]
    .map(|s| s.clone());
    let outcome = state.batcher.done(slug, report).await?;
    // Only a recorded report marks its caller (a refused one, blocked or unknown, does not).
    if let DoneOutcome::Recorded { counted, .. } = outcome {
        let [downloader, ip, user_agent, version] = &who;
        state
            .fleet
            .saw(slug, downloader, ip, user_agent, version, counted);
    }
    match outcome {
        DoneOutcome::Recorded { .. } => Ok(()),
        DoneOutcome::Refused(Refusal::UnknownItem { item }) => {
            Err(ApiError::not_found(format!("Unknown item: {item}")))
        }
        DoneOutcome::Refused(Refusal::NeverHandedOut { item }) => Err(ApiError::not_found(
            format!("Item {item} was never handed out; it stays in its queue."),
        )),
        DoneOutcome::Refused(Refusal::OtherPipeline { item }) => Err(ApiError::forbidden(format!(
            "Item {item} is claimed by another pipeline; only it may report it."
        ))),
        DoneOutcome::Refused(Refusal::Invalid) => Err(ApiError::bad_request(
            "bytes must be integers from 0 to 2^50 and items non-empty.",
        )),
        DoneOutcome::Refused(Refusal::Overflow) => Err(ApiError::Client(
            StatusCode::PAYLOAD_TOO_LARGE,
            "The project's byte total would pass 2^53; nothing recorded.".into(),
        )),
        DoneOutcome::Refused(Refusal::RateLimited { wait_ms }) => {
            Err(ApiError::RateLimited(wait_ms.div_ceil(1000).max(1)))
        }
        DoneOutcome::Refused(Refusal::Blocked) => Err(ApiError::forbidden(
            "Your IP is blocked in this project; nothing recorded.",
        )),
        DoneOutcome::Refused(Refusal::DomainMismatch) => Err(ApiError::forbidden(
            "The byte domains do not match this project's; your IP is blocked for a while.",
        )),
        DoneOutcome::Refused(other) => Err(StoreError::Refused(other).into()),
    }
}

/// `POST /SLUG/done`: records completed items; `OK`.
#[tracing::instrument(level = "debug", skip(state, caller, pipeline, body), fields(ip = %caller.ip, pipeline = pipeline.name()))]
#[utoipa::path(
    post,
    path = "/{slug}/done",
    tag = "warrior",
    params(ProjectPath),
    request_body(content = DoneBody, content_type = "application/json"),
    responses(
        (status = 200, description = "`OK` (a repeated done too; it is not counted twice)", body = String, content_type = "text/plain"),
        (status = 400, description = "Invalid JSON, names, bytes or items (a plain-text reason); nothing changed"),
        (status = 404, description = "An item the downloader does not hold and the project has not done"),
    ),
)]
pub async fn report_done(
    State(state): State<AppState>,
    Path(slug): Path<String>,
    caller: Caller,
    pipeline: CallerPipeline,
    body: Bytes,
) -> ApiResult<Response> {
    take_done(&state, &slug, &caller, &pipeline, &body).await?;
    Ok("OK\n".into_response())
}

/// Parses the done report `body` and records it (within the Redis deadline); the report.
async fn take_done(
    state: &AppState,
    slug: &str,
    caller: &Caller,
    pipeline: &CallerPipeline,
    body: &Bytes,
) -> ApiResult<DoneBody> {
    let req: DoneBody = parse(body)?;
    let report = done_report(&state.config.limits, &req, caller, pipeline)?;
    within_deadline(state, record_done(state, slug, report)).await?;
    Ok(req)
}

/// `POST /SLUG/done+request`: a done, then a request for the same downloader.
#[tracing::instrument(level = "debug", skip(state, caller, pipeline, body), fields(ip = %caller.ip, pipeline = pipeline.name()))]
#[utoipa::path(
    post,
    path = "/{slug}/done+request",
    tag = "warrior",
    params(ProjectPath),
    request_body(content = DoneBody, content_type = "application/json", description = "A done body; the claim that follows is the same downloader's"),
    responses(ClaimAnswers),
)]
pub async fn report_done_and_claim(
    State(state): State<AppState>,
    Path(slug): Path<String>,
    caller: Caller,
    pipeline: CallerPipeline,
    body: Bytes,
) -> ApiResult<Response> {
    done_then_claim(state, slug, 1, caller, pipeline, body).await
}

async fn done_then_claim(
    state: AppState,
    slug: String,
    n: usize,
    caller: Caller,
    pipeline: CallerPipeline,
    body: Bytes,
) -> ApiResult<Response> {
    let req = take_done(&state, &slug, &caller, &pipeline, &body).await?;
    let next = RequestBody {
        downloader: req.downloader,
        api_version: req.api_version,
        version: req.version,
    };
    let claim = serve_claim(&state, &slug, &caller, &pipeline, next, n);
    within_deadline(&state, claim).await
}

/// `POST /SLUG/multi=N//done+request`: a done, then a claim of up to N items.
#[tracing::instrument(level = "debug", skip(state, caller, pipeline, body), fields(ip = %caller.ip, pipeline = pipeline.name()))]
#[utoipa::path(
    post,
    path = "/{slug}/{multi}//done+request",
    tag = "warrior",
    params(ProjectPath, ("multi" = String, Path, description = "`multi=N`: how many items the claim takes")),
    request_body(content = DoneBody, content_type = "application/json"),
    responses(ClaimAnswers),
)]
pub async fn report_done_and_claim_multi(
    State(state): State<AppState>,
    Path((slug, multi)): Path<(String, String)>,
    caller: Caller,
    pipeline: CallerPipeline,
    body: Bytes,
) -> ApiResult<Response> {
    let n = multi_size(&state, &multi)?;
    done_then_claim(state, slug, n, caller, pipeline, body).await
}

/// `POST /SLUG/multi=N/done+request`: the same, with the tracker URL's trailing slash stripped
/// (today's seesaw).
#[tracing::instrument(level = "debug", skip(state, caller, pipeline, body), fields(ip = %caller.ip, pipeline = pipeline.name()))]
#[utoipa::path(
    post,
    path = "/{slug}/{multi}/done+request",
    tag = "warrior",
    params(ProjectPath, ("multi" = String, Path, description = "`multi=N`: how many items the claim takes")),
    request_body(content = DoneBody, content_type = "application/json"),
    responses(ClaimAnswers),
)]
pub async fn report_done_and_claim_multi_today(
    State(state): State<AppState>,
    Path((slug, multi)): Path<(String, String)>,
    caller: Caller,
    pipeline: CallerPipeline,
    body: Bytes,
) -> ApiResult<Response> {
    let n = multi_size(&state, &multi)?;
    done_then_claim(state, slug, n, caller, pipeline, body).await
}
