//! This process's calls to an object store (`TRACKER_STORAGE=s3://...`), for `GET /metrics`
//! (`admin::metrics`), by operation (`head`, `get`, `get_range`, `put`, `put_new`, `list`,
//! `delete`): how many, how many failed (after the client's retries), and how long each took,
//! as a histogram. A local directory's reads and writes are not counted here (its series stay 0).

use crate::script_metrics::OpLabels;
use prometheus_client::{
    metrics::{
        counter::Counter,
        family::Family,
        histogram::{exponential_buckets, Histogram},
    },
    registry::Registry,
};
use std::{sync::LazyLock, time::Duration};

/// This process's object store calls.
pub static STORAGE_CALLS: LazyLock<StorageCalls> = LazyLock::new(StorageCalls::default);

/// The operations, as `op` names them.
const OPS: [&str; 7] = [
    "head",
    "get",
    "get_range",
    "put",
    "put_new",
    "list",
    "delete",
];

fn latency_histogram() -> Histogram {
    // 1 ms to about 8 s: a ranged read on a near store takes milliseconds; a stalled one,
    // the client's timeout with its retries (above the last bucket).
    Histogram::new(exponential_buckets(0.001, 2.0, 14))
}

/// Object store calls by operation: count, failures, and their time.
pub struct StorageCalls {
    calls: Family<OpLabels, Counter>,
    errors: Family<OpLabels, Counter>,
    seconds: Family<OpLabels, Histogram, fn() -> Histogram>,
}

impl Default for StorageCalls {
    fn default() -> Self {
        let calls = Self {
            calls: Family::default(),
            errors: Family::default(),
            seconds: Family::new_with_constructor(latency_histogram),
        };
        // Every operation's series from the start, at 0 (0 with a local directory).
        for op in OPS {
            let labels = OpLabels { op };
            drop(calls.calls.get_or_create(&labels));
            drop(calls.errors.get_or_create(&labels));
            drop(calls.seconds.get_or_create(&labels));
        }
        calls
    }
}

impl StorageCalls {
    /// Records one call of `op` that took `took`, and whether it failed.
    pub fn record(&self, op: &'static str, took: Duration, failed: bool) {
        let labels = OpLabels { op };
        self.calls.get_or_create(&labels).inc();
        if failed {
            self.errors.get_or_create(&labels).inc();
        }
        self.seconds
            .get_or_create(&labels)
            .observe(took.as_secs_f64());
    }

    /// Adds these figures to `registry` (`storage_calls`, `storage_errors`,
    /// `storage_call_seconds`).
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "storage_calls",
            "Calls of this process to the object store of TRACKER_STORAGE, by operation (head, get, get_range, put, put_new, list, delete)",
            self.calls.clone(),
        );
        registry.register(
            "storage_errors",
            "Calls of this process to the object store that failed (after the client's retries), by operation",
            self.errors.clone(),
        );
        registry.register(
            "storage_call_seconds",
            "Time of one call of this process to the object store (its retries included), by operation",
            self.seconds.clone(),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_are_counted_by_operation_with_their_failures_and_time() {
        let calls = StorageCalls::default();
        calls.record("get_range", Duration::from_millis(3), false);
        calls.record("get_range", Duration::from_millis(40), true);
        calls.record("put", Duration::from_millis(2), false);
        let mut registry = Registry::with_prefix("tracker");
        calls.register(&mut registry);
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
        for line in [
            "tracker_storage_calls_total{op=\"get_range\"} 2",
            "tracker_storage_calls_total{op=\"put\"} 1",
            "tracker_storage_errors_total{op=\"get_range\"} 1",
            "tracker_storage_call_seconds_count{op=\"get_range\"} 2",
            "tracker_storage_call_seconds_bucket{le=\"0.004\",op=\"get_range\"} 1",
            "tracker_storage_call_seconds_bucket{le=\"0.064\",op=\"get_range\"} 2",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} not in\n{text}");
        }
        // Every operation is there from the start, at 0: an alert's series exist before the
        // first failure (and with a local directory).
        for op in OPS {
            let line = format!("tracker_storage_errors_total{{op=\"{op}\"}} ");
            assert!(text.contains(&line), "{line} not in\n{text}");
        }
        assert!(text.contains("tracker_storage_errors_total{op=\"put\"} 0"));
    }
}
