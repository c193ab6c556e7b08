//! `GET /metrics`: the tracker's figures in the Prometheus text format (OpenMetrics 1.0, which
//! Prometheus scrapes), encoded by `prometheus-client`. Open to an admin token or any account's
//! API token (a read-only account's is the metrics token), or to everyone when
//! `TRACKER_METRICS_PUBLIC` is set. A project account's token sees the series of its own
//! projects only (the process's figures are the install's).
//!
//! Per project (label `project`), read from Redis at each scrape, so they survive a restart and
//! every process answers the same:
//! - `tracker_items{project,state}`: items by state: each queue part in Redis (`todo`,
//!   `todo:backfeed`, ..., `personal` for all personal queues), `on_disk_todo` (waiting in
//!   segment files: the queues' total is the parts and this), `claimed`, `done` (all of them),
//!   `on_disk_done` (of those, in segment files), `failed`;
//! - `tracker_done_items_total`, `tracker_done_bytes_total`: counted completions, since the
//!   project began;
//! - `tracker_project_state{project,state}`: 1 for its lifecycle state (`active`, `draining`,
//!   `finished`, `paused`, `aborted`);
//! - `tracker_warriors{project}`: downloaders that called for it within the fleet silence;
//! - `tracker_recent_events{project,event}`: events of the last 10 minutes from the per-minute
//!   counters (`requests`, `served`, `claimed`, `reclaimed`, `failed`, `done_items`, `backfed`,
//!   `backfeed_dups`), and `tracker_recent_round_trip_seconds{project}` their mean claim-to-done
//!   time; gauges (the counters behind them are kept 35 days, not forever);
//! - the lifetime counters, tallied from those per-minute counters ([`crate::store::tally`]):
//!   `tracker_events_total{project,event}`, `tracker_refusals_total{project,reason}`,
//!   `tracker_backfeed_records_total{project,result}` and the histogram
//!   `tracker_round_trip_seconds{project}`.
//!
//! Process-wide: `tracker_redis_memory_bytes` and `tracker_redis_maxmemory_bytes` (Redis's
//! `used_memory` and `maxmemory`, 0: none); Redis's own figures of each command, counting all
//! its clients (`tracker_redis_commands_total`, `tracker_redis_command_seconds_total`,
//! `tracker_redis_command_failures_total{command,kind}`, `tracker_redis_command_latency_seconds
//! {command,quantile}`: [`redis`]); and per process `tracker_redis_errors_total{kind}` (every
//! failed Redis call), `tracker_redis_ping_seconds` (the health probe's round trip),
//! `tracker_http_requests_total{group,status}` and `tracker_http_request_duration_seconds
//! {group}` (to the response's head), by route group (`warrior`, `live`, `admin`, `hq`,
//! `public`, `metrics`), and `tracker_storage_calls_total{op}`, `tracker_storage_errors_total
//! {op}` and `tracker_storage_call_seconds{op}` (the object store's calls, failures and
//! latency: [`crate::storage_metrics`]): each process counts its own since it started, so sum them across
//! processes. No label holds a downloader or an item, so the series grow with projects and
//! queue parts only.

mod redis;

use crate::{
    admin::auth::Caller,
    state::AppState,
    web::{ApiError, ApiResult},
};
use axum::{
    extract::State,
    http::{header, HeaderValue},
    response::{IntoResponse, Response},
};
use prometheus_client::{
    encoding::{text::encode, EncodeLabelSet, EncodeMetric, MetricEncoder, NoLabelSet},
    metrics::{counter::Counter, family::Family, gauge::Gauge, MetricType, TypedMetric},
    registry::Registry,
};
use std::sync::{atomic::AtomicU64, Mutex};

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ProjectLabels {
    project: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ProjectStateLabels {
    project: String,
    state: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ProjectEventLabels {
    project: String,
    event: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ProjectReasonLabels {
    project: String,
    reason: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ProjectResultLabels {
    project: String,
    result: String,
}

/// A histogram's figures: its sum, its count, and its buckets (upper bound, count in that
/// bucket alone).
type HistogramFigures = (f64, u64, Vec<(f64, u64)>);

/// A histogram whose buckets were counted elsewhere (the per-minute counters, tallied): set
/// whole at each scrape.
#[derive(Debug, Default)]
struct CountedHistogram(Mutex<HistogramFigures>);

impl CountedHistogram {
    fn set(&self, sum: f64, buckets: Vec<(f64, u64)>) {
        let count = buckets.iter().map(|(_, n)| n).sum();
        if let Ok(mut h) = self.0.lock() {
            *h = (sum, count, buckets);
        }
    }
}

impl TypedMetric for CountedHistogram {
    const TYPE: MetricType = MetricType::Histogram;
}

impl EncodeMetric for CountedHistogram {
    fn encode(&self, mut encoder: MetricEncoder) -> Result<(), std::fmt::Error> {
        let (sum, count, buckets) = self.0.lock().map(|h| h.clone()).unwrap_or_default();
        encoder.encode_histogram::<NoLabelSet>(sum, count, &buckets, None)
    }

    fn metric_type(&self) -> MetricType {
        Self::TYPE
    }
}

/// `GET /metrics`: see the module.
#[utoipa::path(get, path = "/metrics", tag = "metrics")]
pub async fn get_metrics(
    State(state): State<AppState>,
    caller: Result<Caller, ApiError>,
) -> ApiResult<Response> {
    // A project admin's token sees its projects' series only; the process's own figures
    // (requests, Redis) are the install's, the same for every caller.
    let only = match caller {
        Ok(c) if c.role == app::model::admin::Role::Project && !state.config.metrics_public => {
            Some(c.projects)
        }
        Ok(_) => None,
        Err(_) if state.config.metrics_public => None,
        Err(e) => return Err(e),
    };
    let text = render(&state, only.as_deref()).await?;
    let mut response = text.into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/openmetrics-text; version=1.0.0; charset=utf-8"),
    );
    Ok(response)
}

/// The events of the per-minute counters exported as `tracker_recent_events`.
const RECENT_EVENTS: [crate::keys::Counter; 8] = {
    use crate::keys::Counter as C;
    [
        C::Requests,
        C::Served,
        C::Claimed,
        C::Reclaimed,
        C::Failed,
        C::DoneItems,
        C::Backfed,
        C::BackfeedDuplicates,
    ]
};

/// The minutes `tracker_recent_events` covers.
const RECENT_MINUTES: u64 = 10;

/// Every figure, read now; of the projects in `only` when it is given.
async fn render(state: &AppState, only: Option<&[String]>) -> ApiResult<String> {
    let store = &state.store;
    let now = crate::store::now_ms();
    let items = Family::<ProjectStateLabels, Gauge>::default();
    let done_items = Family::<ProjectLabels, Counter>::default();
    let done_bytes = Family::<ProjectLabels, Counter>::default();
    let lifecycle = Family::<ProjectStateLabels, Gauge>::default();
    let warriors = Family::<ProjectLabels, Gauge>::default();
    let recent = Family::<ProjectEventLabels, Gauge>::default();
    let round_trip = Family::<ProjectLabels, Gauge<f64, AtomicU64>>::default();
    let unfolded = Family::<ProjectLabels, Gauge>::default();
    let lifetime = Lifetime::default();
    let offload = Offload::default();
    let mut slugs = store.projects().project_slugs().await?;
    if let Some(only) = only {
        slugs.retain(|s| only.contains(s));
    }
    slugs.sort();
    for slug in slugs {
        let Some((board, parts)) = store.figures().snapshot(&slug, 0, 0).await? else {
            continue;
        };
        let project = || ProjectLabels {
            project: slug.clone(),
        };
        let by_state = |state: &str| ProjectStateLabels {
            project: slug.clone(),
            state: state.to_string(),
        };
        let set = |state: &str, n: u64| {
            items.get_or_create(&by_state(state)).set(n as i64);
        };
        for (part, n) in &parts {
            set(part, *n);
        }
        set("claimed", board.counts.out);
        set("done", board.counts.done);
        set("failed", board.counts.failed);
        let disk = store.offload().offload_summary(&slug).await?;
        set("on_disk_done", disk.done_on_disk);
        set("on_disk_todo", disk.todo_on_disk);
        offload.set(&slug, &disk);
        done_items
            .get_or_create(&project())
            .inc_by(board.counts.done);
        done_bytes
            .get_or_create(&project())
            .inc_by(board.total_bytes);
        lifecycle.get_or_create(&by_state(&board.state)).set(1);
        let at_work = store.fleet().warriors_at_work(&slug, now).await?;
        warriors.get_or_create(&project()).set(at_work as i64);
        let minutes = store.figures().minutes(&slug, now, RECENT_MINUTES).await?;
        for c in RECENT_EVENTS {
            recent
                .get_or_create(&ProjectEventLabels {
                    project: slug.clone(),
                    event: c.lua_name().to_string(),
                })
                .set(crate::store::stats::sum(&minutes, c) as i64);
        }
        let trips = crate::store::stats::sum(&minutes, crate::keys::Counter::RoundTrips);
        let ms = crate::store::stats::sum(&minutes, crate::keys::Counter::RoundTripMs);
        let mean = crate::store::stats::ratio(ms, trips).unwrap_or(0.0) / 1000.0;
        round_trip.get_or_create(&project()).set(mean);
        let (entries, _) = store.figures().unfolded(&slug).await?;
        unfolded.get_or_create(&project()).set(entries as i64);
        let mut totals = store.figures().lifetime(&slug, now).await?;
        if totals.is_none() {
            // A project no process tallied yet (new, or the tally far behind): tallied now.
            store.figures().tally(&slug, now).await?;
            totals = store.figures().lifetime(&slug, now).await?;
        }
        if let Some(totals) = totals {
            lifetime.set(&slug, &totals);
        }
    }
    let (used, max) = store.queue().redis_memory_bytes().await?;
    let used_gauge = Gauge::<i64>::default();
    used_gauge.set(used as i64);
    let max_gauge = Gauge::<i64>::default();
    max_gauge.set(max as i64);

    let mut registry = <Registry>::with_prefix("tracker");
    registry.register("items", "Items by state: queue parts in Redis, on_disk_todo, claimed, done, on_disk_done (of done), failed", items);
    registry.register(
        "done_items",
        "Completions counted, since the project began",
        done_items,
    );
    registry.register(
        "done_bytes",
        "Bytes of counted completions, since the project began",
        done_bytes,
    );
    registry.register(
        "project_state",
        "1 for the project's lifecycle state",
        lifecycle,
    );
    registry.register(
        "warriors",
        "Downloaders calling for the project now",
        warriors,
    );
    registry.register(
        "recent_events",
        "Events of the last 10 minutes, from the per-minute counters",
        recent,
    );
    registry.register(
        "recent_round_trip_seconds",
        "Mean claim-to-done time of the last 10 minutes' completions",
        round_trip,
    );
    registry.register(
        "fold_pending_entries",
        "Completion log entries not folded into the per-downloader figures and events yet",
        unfolded,
    );
    lifetime.register(&mut registry);
    offload.register(&mut registry);
    registry.register("redis_memory_bytes", "Redis's used_memory", used_gauge);
    registry.register(
        "redis_maxmemory_bytes",
        "Redis's maxmemory (0: none)",
        max_gauge,
    );
    redis::register(&mut registry, &store.redis_commands().await?);
    state.redis.register(&mut registry);
    state.http_metrics.register(&mut registry);
    state.batcher.metrics.register(&mut registry);
    state.store.scripts().calls.register(&mut registry);
    crate::storage_metrics::STORAGE_CALLS.register(&mut registry);
    let viewers = Gauge::<i64>::default();
    viewers.set(state.viewers.count() as i64);
    registry.register(
        "viewers",
        "Live viewers (websockets and event streams) connected to this process",
        viewers,
    );
    let mut out = String::new();
    // Writing to a String does not fail, nor do these labels.
    if encode(&mut out, &registry).is_err() {
        tracing::error!("the metrics could not be encoded");
    }
    Ok(out)
}

/// The lifetime counters of every project (`store::tally`): counted since the project's
/// first tally (which takes in the 35 days of per-minute counters kept before it).
#[derive(Default)]
struct Lifetime {
    events: Family<ProjectEventLabels, Counter>,
    refusals: Family<ProjectReasonLabels, Counter>,
    backfeed: Family<ProjectResultLabels, Counter>,
    round_trip: Family<ProjectLabels, CountedHistogram>,
}

/// The events of `tracker_events_total`, by their label.
const LIFETIME_EVENTS: [(crate::keys::Counter, &str); 7] = {
    use crate::keys::Counter as C;
    [
        (C::Requests, "claim_requests"),
        (C::Served, "claim_requests_served"),
        (C::Claimed, "claimed_items"),
        (C::Reclaimed, "reclaimed_items"),
        (C::Released, "released_items"),
        (C::Failed, "failed_items"),
        (C::DuplicateDones, "duplicate_done_items"),
    ]
};

impl Lifetime {
    fn set(&self, slug: &str, totals: &std::collections::BTreeMap<crate::keys::Counter, u64>) {
        use crate::keys::Counter as C;
        let total = |c: C| totals.get(&c).copied().unwrap_or(0);
        for (c, event) in LIFETIME_EVENTS {
            self.events
                .get_or_create(&ProjectEventLabels {
                    project: slug.to_string(),
                    event: event.to_string(),
                })
                .inc_by(total(c));
        }
        for (c, reason) in C::REFUSALS {
            self.refusals
                .get_or_create(&ProjectReasonLabels {
                    project: slug.to_string(),
                    reason: reason.to_string(),
                })
                .inc_by(total(c));
        }
        for (c, result) in [(C::Backfed, "added"), (C::BackfeedDuplicates, "duplicate")] {
            self.backfeed
                .get_or_create(&ProjectResultLabels {
                    project: slug.to_string(),
                    result: result.to_string(),
                })
                .inc_by(total(c));
        }
        let buckets = C::ROUND_TRIPS
            .iter()
            .map(|(c, le)| (*le, total(*c)))
            .collect();
        self.round_trip
            .get_or_create(&ProjectLabels {
                project: slug.to_string(),
            })
            .set(total(C::RoundTripMs) as f64 / 1000.0, buckets);
    }

    fn register(self, registry: &mut Registry) {
        registry.register(
            "events",
            "Claim requests, items claimed, reclaimed, released, failed and reported done again, since the project's first tally",
            self.events,
        );
        registry.register(
            "refusals",
            "Claim requests refused, by reason, since the project's first tally",
            self.refusals,
        );
        registry.register(
            "backfeed_records",
            "Backfeed records added to the queue or dropped as duplicates, since the project's first tally",
            self.backfeed,
        );
        registry.register(
            "round_trip_seconds",
            "Claim-to-done time of completed claims, since the project's first tally",
            self.round_trip,
        );
    }
}

/// The offloader's progress per project, from its segment registry and its last round.
#[derive(Default)]
struct Offload {
    segments: Family<ProjectLabels, Gauge>,
    bytes: Family<ProjectLabels, Gauge>,
    discarded: Family<ProjectLabels, Gauge>,
    log_files: Family<ProjectLabels, Gauge>,
    last_run: Family<ProjectLabels, Gauge>,
    last_error: Family<ProjectLabels, Gauge>,
    failing: Family<ProjectLabels, Gauge>,
    log_entries: Family<ProjectLabels, Gauge>,
    log_lost: Family<ProjectLabels, Counter>,
}

impl Offload {
    fn set(&self, slug: &str, disk: &app::model::admin::OffloadState) {
        let project = ProjectLabels {
            project: slug.to_string(),
        };
        let secs = |ms: Option<u64>| ms.map_or(0, |ms| (ms / 1000) as i64);
        self.segments
            .get_or_create(&project)
            .set(disk.segments as i64);
        self.bytes.get_or_create(&project).set(disk.bytes as i64);
        self.discarded
            .get_or_create(&project)
            .set(disk.discarded as i64);
        self.log_files
            .get_or_create(&project)
            .set(disk.log_files as i64);
        self.last_run
            .get_or_create(&project)
            .set(secs(disk.last_run));
        self.last_error
            .get_or_create(&project)
            .set(secs(disk.error_t));
        self.failing
            .get_or_create(&project)
            .set(i64::from(disk.failing));
        self.log_entries
            .get_or_create(&project)
            .set(disk.log_entries as i64);
        self.log_lost.get_or_create(&project).inc_by(disk.log_lost);
    }

    fn register(self, registry: &mut Registry) {
        registry.register(
            "offload_segments",
            "Segment files of the project on disk (done items and waiting queue items)",
            self.segments,
        );
        registry.register(
            "offload_segment_bytes",
            "Bytes of the project's segment files",
            self.bytes,
        );
        registry.register(
            "offload_discarded_items",
            "Done items discarded to a filter of their names (done_policy discard)",
            self.discarded,
        );
        registry.register(
            "offload_log_archive_files",
            "Completion log archive files of the project",
            self.log_files,
        );
        registry.register(
            "offload_last_run_timestamp_seconds",
            "When the offloader last ran a round for the project (0: never)",
            self.last_run,
        );
        registry.register(
            "offload_last_error_timestamp_seconds",
            "When the offloader last failed for the project (0: not since it started)",
            self.last_error,
        );
        registry.register(
            "offload_failing",
            "1 while the offloader's rounds for the project fail (an archive directory that cannot be written, a full disk): alert on it",
            self.failing,
        );
        registry.register(
            "log_entries",
            "Completion log entries of the project in Redis (they leave it once archived; it grows while archiving fails)",
            self.log_entries,
        );
        registry.register(
            "log_entries_lost",
            "Completion log entries dropped unarchived: archiving failed while the log passed TRACKER_LOG_BUDGET",
            self.log_lost,
        );
    }
}
