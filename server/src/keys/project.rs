//! The names of one project's keys (see the table in [`super`]).

use super::QUEUES;

/// The keys of one project; every name carries the project's hash tag.
#[derive(Clone, Debug)]
pub struct ProjectKeys {
    pub(super) prefix: String,
}

/// Stems of the keys the scripts derive from a project's prefix and a value (a minute, a day, a
/// downloader), spelled here once: [`DERIVED`] gives them to Lua through the generated prelude
/// (table `K`), and the methods below to Rust.
pub const DL_CHART: &str = "dlc:";
/// See [`DL_CHART`].
pub const DL_CHART_LAST: &str = "dlc_last";
/// See [`DL_CHART`].
pub const DL_MINUTE: &str = "dw:";
/// See [`DL_CHART`].
pub const DL_HOUR: &str = "dwh:";
/// See [`DL_CHART`].
pub const MINUTE_STATS: &str = "st:";
/// See [`DL_CHART`]; `dl:` or `ip:` and the day follow.
pub const UNIQUES: &str = "u:";
/// See [`DL_CHART`].
pub const BLOOM_LAYER: &str = "filter:";

/// The derived stems by their Lua name (`K.<name>` in the scripts).
pub const DERIVED: [(&str, &str); 8] = [
    ("dl_chart", DL_CHART),
    ("dl_chart_last", DL_CHART_LAST),
    ("dl_minute", DL_MINUTE),
    ("dl_hour", DL_HOUR),
    ("minute_stats", MINUTE_STATS),
    ("uniques_dl", "u:dl:"),
    ("uniques_ip", "u:ip:"),
    ("bloom_layer", BLOOM_LAYER),
];

impl ProjectKeys {
    /// The prefix of every key of the project, `ns:{SLUG}:`, for keys scripts derive.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }
    /// `prefix` + `name`, e.g. `t:{proj}:todo`.
    pub fn key(&self, name: &str) -> String {
        format!("{}{}", self.prefix, name)
    }
    /// The project's settings hash.
    pub fn meta(&self) -> String {
        self.key("meta")
    }
    /// The project's zstd dictionaries: `cur` (the id served now), `seq`, `n:<id>` (JSON
    /// {sha256, bytes, t}) and `b:<id>` (the bytes as uploaded), the last few kept.
    pub fn dictionaries(&self) -> String {
        self.key("dict")
    }
    /// The queue called `name` (one of [`QUEUES`]).
    pub fn queue(&self, name: &str) -> String {
        self.key(name)
    }
    /// All queues, in claim order.
    pub fn queues(&self) -> Vec<String> {
        QUEUES.iter().map(|q| self.key(q)).collect()
    }
    /// Claimed items by claim time.
    pub fn out(&self) -> String {
        self.key("out")
    }
    /// Claim records.
    pub fn claims(&self) -> String {
        self.key("claims")
    }
    /// Completed items.
    pub fn done(&self) -> String {
        self.key("done")
    }
    /// Failed items with their reason.
    pub fn failed(&self) -> String {
        self.key("failed")
    }
    /// Times claimed per item.
    pub fn attempts(&self) -> String {
        self.key("attempts")
    }
    /// Decay scores (below 1) and reclaim counts per item.
    pub fn decay(&self) -> String {
        self.key("decay")
    }
    /// Items held per downloader.
    pub fn dl_claims(&self) -> String {
        self.key("dl:claims")
    }
    /// Project blocks of `kind` (`ip` or `dl`).
    pub fn blocked(&self, kind: &str) -> String {
        self.key(&format!("blocked:{kind}"))
    }
    /// GCRA limiter states.
    pub fn ratelimit(&self) -> String {
        self.key("ratelimit")
    }
    /// Item timelines.
    pub fn timeline(&self) -> String {
        self.key("timeline")
    }
    /// The completion log stream.
    pub fn log(&self) -> String {
        self.key("log")
    }
    /// The lifetime counters: per-minute counter code -> total of the minutes tallied, and
    /// `minute`, the last minute tallied (`tally.lua`).
    pub fn tally(&self) -> String {
        self.key("tally")
    }
    /// The cumulative items/bytes chart.
    pub fn chart(&self) -> String {
        self.key("chart")
    }
    /// The cumulative bytes chart of one downloader.
    pub fn dl_chart(&self, downloader: &str) -> String {
        self.key(&format!("{DL_CHART}{downloader}"))
    }
    /// Each downloader's minute of its last report (the chart's last point, not in its list).
    pub fn dl_chart_last(&self) -> String {
        self.key(DL_CHART_LAST)
    }
    /// Items and bytes per downloader done in minute `minute` (minutes since the epoch).
    pub fn dl_minute(&self, minute: u64) -> String {
        self.key(&format!("{DL_MINUTE}{minute}"))
    }
    /// Items and bytes per downloader done in hour `hour` (hours since the epoch).
    pub fn dl_hour(&self, hour: u64) -> String {
        self.key(&format!("{DL_HOUR}{hour}"))
    }
    /// Per-minute counters of day `day` (days since the epoch).
    pub fn minute_stats(&self, day: u64) -> String {
        self.key(&format!("{MINUTE_STATS}{day}"))
    }
    /// Unique `kind` (`dl` or `ip`) of day `day`.
    pub fn uniques(&self, kind: &str, day: u64) -> String {
        self.key(&format!("{UNIQUES}{kind}:{day}"))
    }
    /// Unique downloaders of calendar month `month` (`YYYY-MM`).
    pub fn monthly_contributors(&self, month: &str) -> String {
        self.key(&format!("u:month:{month}"))
    }
    /// The queue sequence counter.
    pub fn qseq(&self) -> String {
        self.key("qseq")
    }
    /// Upload targets.
    pub fn targets(&self) -> String {
        self.key("targets")
    }
    /// Recent `uploaded` reports.
    pub fn uploads(&self) -> String {
        self.key("uploads")
    }
    /// Backfeed filter layer metadata.
    pub fn bloom(&self) -> String {
        self.key("filter")
    }
    /// Layer `i` of the backfeed filter.
    pub fn bloom_layer(&self, i: usize) -> String {
        self.key(&format!("{BLOOM_LAYER}{i}"))
    }
    /// What each backfeed key fed: `<key id>:records`, `:added`, `:last` (ms).
    pub fn fed(&self) -> String {
        self.key("fed")
    }
    /// Project counters.
    pub fn stats(&self) -> String {
        self.key("stats")
    }
    /// Items done per downloader.
    pub fn dl_items(&self) -> String {
        self.key("dl:items")
    }
    /// Bytes done per downloader.
    pub fn dl_bytes(&self) -> String {
        self.key("dl:bytes")
    }
    /// Last script version per downloader.
    pub fn dl_version(&self) -> String {
        self.key("dl:version")
    }
    /// Last completion time per downloader.
    pub fn dl_seen(&self) -> String {
        self.key("dl:seen")
    }
    /// Bytes per domain.
    pub fn domain_bytes(&self) -> String {
        self.key("domain_bytes")
    }
    /// The event sequence counter.
    pub fn seq(&self) -> String {
        self.key("seq")
    }
    /// The capped event history.
    pub fn history(&self) -> String {
        self.key("history")
    }
    /// The pub/sub channel of completion events.
    pub fn events(&self) -> String {
        self.key("events")
    }
    /// Panel-only project fields (description, priority, listing).
    pub fn admin(&self) -> String {
        self.key("admin")
    }
    /// The lifecycle state last recorded.
    pub fn status(&self) -> String {
        self.key("status")
    }
    /// Segments on disk: id -> registry entry (see [`crate::store::SegmentEntry`]).
    pub fn segs(&self) -> String {
        self.key("segs")
    }
    /// Records of each queue segment back in Redis.
    pub fn segs_restored(&self) -> String {
        self.key("segs:restored")
    }
    /// Segments that left the registry when brought back: id -> when (ms, Redis's clock). Their
    /// files stay a minute more (see [`crate::store::offload::offloader::sweep`]).
    pub fn segs_gone(&self) -> String {
        self.key("segs:gone")
    }
    /// The offloader's state: `gen` (bumped at every change of the segments), `run` (last run,
    /// ms), `error` (its last failure), `log_files`, `log_bytes`.
    pub fn offload(&self) -> String {
        self.key("offload")
    }
    /// The token of the process allowed to offload (expires unless renewed).
    pub fn offload_lease(&self) -> String {
        self.key("offload:lease")
    }
    /// Recorded lifecycle changes, newest first.
    pub fn lifecycle(&self) -> String {
        self.key("lifecycle")
    }
}
