//! This process's script calls for `GET /metrics` (`admin::metrics`), per process:
//! - [`ScriptMetrics`]: how many requests each batched claim or done call served; recorded by
//!   the [`crate::batcher`];
//! - [`ScriptCalls`]: every Lua script call, by script (each is one Redis round trip; the
//!   batched claim and done calls among them): its time and its failures by kind (Redis full,
//!   Redis unavailable, anything else); recorded by `store::scripts::Scripts::run`.

use prometheus_client::{
    encoding::EncodeLabelSet,
    metrics::{
        counter::Counter,
        family::Family,
        histogram::{exponential_buckets, Histogram},
    },
    registry::Registry,
};

/// One label, `op`: the operation a series counts (also the object store's, `storage_metrics`).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(crate) struct OpLabels {
    pub(crate) op: &'static str,
}

fn size_histogram() -> Histogram {
    // 1 to 128 requests (the batcher's most).
    Histogram::new(exponential_buckets(1.0, 2.0, 8))
}

fn duration_histogram() -> Histogram {
    // 0.1 ms to about 3 s.
    Histogram::new(exponential_buckets(0.0001, 2.0, 16))
}

/// This process's batch sizes.
pub struct ScriptMetrics {
    sizes: Family<OpLabels, Histogram, fn() -> Histogram>,
}

impl Default for ScriptMetrics {
    fn default() -> Self {
        Self {
            sizes: Family::new_with_constructor(size_histogram),
        }
    }
}

impl ScriptMetrics {
    /// Adds these figures to `registry` (`script_batch_size`).
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "script_batch_size",
            "Requests one batched claim or done script call served, in this process",
            self.sizes.clone(),
        );
    }

    /// Records one call of `op` (`claim` or `done`) serving `size` requests (its time and
    /// failure are recorded where every script call is, [`ScriptCalls`]).
    pub fn record(&self, op: &'static str, size: usize) {
        self.sizes
            .get_or_create(&OpLabels { op })
            .observe(size as f64);
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ScriptLabels {
    script: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ScriptErrorLabels {
    script: &'static str,
    kind: &'static str,
}

/// This process's Lua script calls, by script: their time and their failures.
pub struct ScriptCalls {
    durations: Family<ScriptLabels, Histogram, fn() -> Histogram>,
    errors: Family<ScriptErrorLabels, Counter>,
}

impl Default for ScriptCalls {
    fn default() -> Self {
        Self {
            durations: Family::new_with_constructor(duration_histogram),
            errors: Family::default(),
        }
    }
}

impl ScriptCalls {
    /// Adds these figures to `registry` (`redis_script_duration_seconds`,
    /// `redis_script_errors_total`).
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "redis_script_duration_seconds",
            "Time of a Lua script call by script (one Redis round trip, Redis's answer included), in this process",
            self.durations.clone(),
        );
        registry.register(
            "redis_script_errors",
            "Lua script calls that failed, by script and kind (full, unavailable, other), in this process",
            self.errors.clone(),
        );
    }

    /// Records one call of `script` that took `seconds`, and the kind of its failure if it
    /// failed (`full`, `unavailable`, `other`: `StoreError::kind`).
    pub fn record(&self, script: &'static str, seconds: f64, error: Option<&'static str>) {
        self.durations
            .get_or_create(&ScriptLabels { script })
            .observe(seconds);
        if let Some(kind) = error {
            self.errors
                .get_or_create(&ScriptErrorLabels { script, kind })
                .inc();
        }
    }
}
