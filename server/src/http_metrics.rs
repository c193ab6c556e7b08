//! This process's HTTP figures for `GET /metrics` (`admin::metrics`): requests by route group and
//! status, and their time to the response's head, counted by each route group's gate (`crate::gate`).
//! Per process: each counts its own since it started (sum them across processes).

use axum::http::StatusCode;
use prometheus_client::{
    encoding::{EncodeLabelSet, EncodeLabelValue, LabelValueEncoder},
    metrics::{
        counter::Counter,
        family::Family,
        histogram::{exponential_buckets, Histogram},
    },
    registry::Registry,
};
use std::fmt::Write;

/// A route group's name, as a label value.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
pub struct Group(pub &'static str);

impl EncodeLabelValue for Group {
    fn encode(&self, w: &mut LabelValueEncoder) -> std::fmt::Result {
        w.write_str(self.0)
    }
}

/// An HTTP status code, as a label value.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
struct Status(u16);

impl EncodeLabelValue for Status {
    fn encode(&self, w: &mut LabelValueEncoder) -> std::fmt::Result {
        write!(w, "{}", self.0)
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    group: Group,
    status: Status,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct GroupLabels {
    group: Group,
}

fn latency_histogram() -> Histogram {
    // 1 ms to about 16 s.
    Histogram::new(exponential_buckets(0.001, 2.0, 15))
}

/// This process's HTTP figures.
pub struct HttpMetrics {
    requests: Family<RequestLabels, Counter>,
    latency: Family<GroupLabels, Histogram, fn() -> Histogram>,
}

impl Default for HttpMetrics {
    fn default() -> Self {
        Self {
            requests: Family::default(),
            latency: Family::new_with_constructor(latency_histogram),
        }
    }
}

impl HttpMetrics {
    /// Adds these figures to `registry` (`http_requests_total`, `http_request_duration_seconds`).
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "http_requests",
            "HTTP requests this process answered, by route group and status",
            self.requests.clone(),
        );
        registry.register(
            "http_request_duration_seconds",
            "Time to the response's head, by route group, in this process",
            self.latency.clone(),
        );
    }

    /// Counts one answered request of route group `group`.
    pub fn record(&self, group: Group, status: StatusCode, seconds: f64) {
        self.requests
            .get_or_create(&RequestLabels {
                group,
                status: Status(status.as_u16()),
            })
            .inc();
        self.latency
            .get_or_create(&GroupLabels { group })
            .observe(seconds);
    }
}
