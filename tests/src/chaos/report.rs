//! What a chaos run did and found, and how it is printed.

use super::verify;
use std::{collections::BTreeMap, time::Duration};

/// One Redis kill: how long the restarted server took to load its append-only file (PING
/// answered), and to be followed by every process (`/healthz` 200 on all), from its restart.
#[derive(Clone, Copy, Debug)]
pub struct RedisRecovery {
    /// Restart to PING answered.
    pub loaded: Duration,
    /// Restart to every process healthy.
    pub followed: Duration,
}

/// What a run did and found.
#[derive(Debug, Default)]
pub struct Report {
    /// The configuration's figures, as printed.
    pub setup: String,
    /// Length of the chaos phase.
    pub chaos: Duration,
    /// Length of the drain.
    pub drain: Duration,
    /// Items done when the chaos phase ended.
    pub done_after_chaos: u64,
    /// How long the run waited after the drain for the first done items to reach a segment:
    /// zero when they had already. A process killed while it held the offload lease leaves the
    /// lease to run out (`LEASE_MS`) before another process offloads.
    pub offload_wait: Duration,
    /// Recovery of each process kill: restart to `/healthz` 200.
    pub process_kills: Vec<Duration>,
    /// Each Redis kill.
    pub redis_kills: Vec<RedisRecovery>,
    /// Each Redis pause (SIGSTOP to SIGCONT), and how long every process then took to answer
    /// `/healthz` 200 again.
    pub redis_pauses: Vec<(Duration, Duration)>,
    /// Kills of the object server (runs with an object store).
    pub object_kills: usize,
    /// Pauses of the object server.
    pub object_pauses: usize,
    /// Replies other than 200 (and transport errors) the warriors met, by kind.
    pub errors: BTreeMap<String, u64>,
    /// Counters of the warriors: claims answered 200, items in them, done reports answered OK,
    /// items dropped, items reported late (and how many of them after a reclaim).
    pub counters: BTreeMap<&'static str, u64>,
    /// The proof's figures (see [`verify::Verdict`]).
    pub verdict: verify::Verdict,
    /// Everything that went wrong; empty when the run proves what it should.
    pub violations: Vec<String>,
}

impl Report {
    /// Items done per second over chaos and drain.
    pub fn items_per_second(&self) -> f64 {
        self.verdict.done as f64 / (self.chaos + self.drain).as_secs_f64().max(1e-9)
    }
}

/// `median / max` of `d`, in seconds.
fn spread(d: impl Iterator<Item = Duration>) -> String {
    let mut v: Vec<Duration> = d.collect();
    if v.is_empty() {
        return "-".into();
    }
    v.sort();
    format!(
        "median {:.2} s, max {:.2} s",
        v[v.len() / 2].as_secs_f64(),
        v[v.len() - 1].as_secs_f64()
    )
}

impl std::fmt::Display for Report {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "# chaos: {}", self.setup)?;
        writeln!(
            f,
            "#   chaos {:.0} s ({} items done by its end), drain {:.1} s: {:.0} items/s overall; waited {:.1} s after the drain for done items on disk",
            self.chaos.as_secs_f64(),
            self.done_after_chaos,
            self.drain.as_secs_f64(),
            self.items_per_second(),
            self.offload_wait.as_secs_f64()
        )?;
        writeln!(
            f,
            "#   process kills: {}, back (restart to /healthz 200): {}",
            self.process_kills.len(),
            spread(self.process_kills.iter().copied())
        )?;
        writeln!(
            f,
            "#   redis kills: {}, AOF loaded (restart to PING): {}; followed (restart to /healthz 200 on every process): {}",
            self.redis_kills.len(),
            spread(self.redis_kills.iter().map(|r| r.loaded)),
            spread(self.redis_kills.iter().map(|r| r.followed))
        )?;
        writeln!(
            f,
            "#   redis pauses: {} (SIGSTOP for {}), every process healthy after SIGCONT: {}",
            self.redis_pauses.len(),
            spread(self.redis_pauses.iter().map(|p| p.0)),
            spread(self.redis_pauses.iter().map(|p| p.1))
        )?;
        if self.object_kills + self.object_pauses > 0 {
            writeln!(
                f,
                "#   object server: {} kills, {} pauses",
                self.object_kills, self.object_pauses
            )?;
        }
        let counters: Vec<String> = self
            .counters
            .iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect();
        writeln!(f, "#   warriors: {}", counters.join(", "))?;
        let errors: Vec<String> = self
            .errors
            .iter()
            .map(|(k, v)| format!("{k}: {v}"))
            .collect();
        writeln!(f, "#   errors seen by warriors: {}", errors.join(", "))?;
        writeln!(f, "#   {}", self.verdict)?;
        if self.violations.is_empty() {
            writeln!(
                f,
                "#   loss: none; every item done exactly once; tracker check clean"
            )
        } else {
            writeln!(f, "#   VIOLATIONS ({}):", self.violations.len())?;
            for v in self.violations.iter().take(50) {
                writeln!(f, "#     {v}")?;
            }
            Ok(())
        }
    }
}
