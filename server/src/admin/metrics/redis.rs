//! The Redis figures of `GET /metrics`: Redis's own view of every command (all its clients),
//! and this process's failed calls.

use crate::store::redis_info::{RedisCommands, REDIS_ERRORS};
use prometheus_client::{
    encoding::EncodeLabelSet,
    metrics::{counter::Counter, family::Family, gauge::Gauge},
    registry::Registry,
};
use std::sync::atomic::AtomicU64;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CommandLabels {
    command: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CommandKindLabels {
    command: String,
    kind: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CommandQuantileLabels {
    command: String,
    quantile: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KindLabels {
    kind: &'static str,
}

/// Redis's percentile names (`p50`, `p99.9`) as a quantile (`0.5`, `0.999`).
fn quantile(p: &str) -> Option<String> {
    let percent: f64 = p.strip_prefix('p')?.parse().ok()?;
    // Six places and no trailing zeros: `0.999`, not `0.9990000000000001`.
    let q = format!("{:.6}", percent / 100.0);
    Some(q.trim_end_matches('0').trim_end_matches('.').to_string())
}

/// Adds to `registry` `redis_commands_total`, `redis_command_seconds_total`,
/// `redis_command_failures_total` and `redis_command_latency_seconds` from `commands`, and
/// this process's `redis_errors_total`.
pub(super) fn register(registry: &mut Registry, commands: &RedisCommands) {
    let calls = Family::<CommandLabels, Counter>::default();
    let seconds = Family::<CommandLabels, Counter<f64, AtomicU64>>::default();
    let failures = Family::<CommandKindLabels, Counter>::default();
    let latency = Family::<CommandQuantileLabels, Gauge<f64, AtomicU64>>::default();
    for (name, s) in &commands.commands {
        let command = || CommandLabels {
            command: name.clone(),
        };
        calls.get_or_create(&command()).inc_by(s.calls);
        seconds
            .get_or_create(&command())
            .inc_by(s.usec as f64 / 1e6);
        for (kind, n) in [("failed", s.failed), ("rejected", s.rejected)] {
            failures
                .get_or_create(&CommandKindLabels {
                    command: name.clone(),
                    kind,
                })
                .inc_by(n);
        }
    }
    for (name, ps) in &commands.latency {
        for (p, usec) in ps {
            let Some(quantile) = quantile(p) else {
                continue;
            };
            latency
                .get_or_create(&CommandQuantileLabels {
                    command: name.clone(),
                    quantile,
                })
                .set(usec / 1e6);
        }
    }
    registry.register(
        "redis_commands",
        "Calls of each Redis command, by every client of that Redis and inside its scripts, since it started (INFO commandstats; a cluster's primaries added up)",
        calls,
    );
    registry.register(
        "redis_command_seconds",
        "Time inside Redis of each command, since it started (INFO commandstats)",
        seconds,
    );
    registry.register(
        "redis_command_failures",
        "Calls of each Redis command that answered an error (failed) or were refused before running (rejected), since it started",
        failures,
    );
    registry.register(
        "redis_command_latency_seconds",
        "Latency percentiles of each Redis command inside Redis (INFO latencystats, Redis 7; a cluster's highest)",
        latency,
    );
    let errors = Family::<KindLabels, Counter>::default();
    for (kind, n) in REDIS_ERRORS.read() {
        errors.get_or_create(&KindLabels { kind }).inc_by(n);
    }
    registry.register(
        "redis_errors",
        "Failed Redis calls of this process (every call, scripts included), by kind: full (maxmemory), unavailable (no connection, timeout), other",
        errors,
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_become_quantiles() {
        assert_eq!(quantile("p50").as_deref(), Some("0.5"));
        assert_eq!(quantile("p99.9").as_deref(), Some("0.999"));
        assert_eq!(quantile("p100").as_deref(), Some("1"));
        assert_eq!(quantile("x"), None);
    }
}
