//! One project in the admin API: its queues, settings, claims, failed items and log archives.

use super::Affected;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// `GET /admin/api/SLUG/queues`: the size of every queue part, and the other states.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct Queues {
    /// Items waiting, per queue part.
    pub queues: BTreeMap<String, u64>,
    /// Items claimed.
    pub claimed: u64,
    /// Items done.
    pub done: u64,
    /// Items failed.
    pub failed: u64,
}

/// Items matching `pattern` share their own rate limit (and their own queue parts `Q#name`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct PatternLimit {
    /// `[a-z0-9_-]{1,32}`, names the queue parts and the limiter.
    #[cfg_attr(feature = "ssr", schema(pattern = "^[a-z0-9_-]{1,32}$"))]
    pub name: String,
    /// A regular expression matched against item names.
    pub pattern: String,
    /// Items per second (above 0).
    #[cfg_attr(feature = "ssr", schema(exclusive_minimum = 0))]
    pub rate: f64,
    /// Items that may go at once.
    pub burst: f64,
}

/// A project's settings (the `meta` hash), as the CLI and the panel edit them. Besides each
/// field's own range, rules between fields: `queue_high` is 0 or at least twice
/// `segment_items`; `decay_threshold` matters only while `decay_factor` is above 0; a pattern
/// limit's or backfeed shard's name is `[a-z0-9_-]{1,32}`, unique in its list.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct Settings {
    /// Title: 1 to 200 bytes.
    #[cfg_attr(feature = "ssr", schema(min_length = 1, max_length = 200))]
    pub title: String,
    /// A message shown on the pages (empty: none).
    #[serde(default)]
    pub banner: String,
    /// What the operator set: `active`, `paused` or `aborted` (`draining` and `finished` are
    /// derived, see [`crate::model::lifecycle`]).
    #[cfg_attr(feature = "ssr", schema(pattern = "^(active|paused|aborted)$"))]
    pub state: String,
    /// Byte domains a done must report.
    pub domains: Vec<String>,
    /// Lowest script version served (empty: any).
    pub min_version: String,
    /// Items per second for the whole project (0: unlimited).
    #[cfg_attr(feature = "ssr", schema(minimum = 0))]
    pub rate: f64,
    /// Items that may go at once under the rate limit.
    #[cfg_attr(feature = "ssr", schema(minimum = 0))]
    pub burst: f64,
    /// Cap on the claimed set; when reached, claims are served reclaims (0: none).
    pub claims_limit: u64,
    /// Items one downloader may hold (0: any).
    pub dl_max_claims: u64,
    /// Seconds after which a claim may be reclaimed, times its claim count (0: never).
    pub reclaim_ttl: u64,
    /// Claims after which an item fails (0: never).
    pub max_attempts: u64,
    /// Score decay, an alternative to `max_attempts`: each reclaim multiplies the item's score
    /// (1 at first) by this factor and moves it back in its queue (0: off; else in (0, 1)).
    #[serde(default)]
    #[cfg_attr(feature = "ssr", schema(minimum = 0, exclusive_maximum = 1))]
    pub decay_factor: f64,
    /// An item whose score falls below this fails instead of waiting again (in (0, 1)).
    #[serde(default = "default_decay_threshold")]
    #[cfg_attr(feature = "ssr", schema(exclusive_minimum = 0, exclusive_maximum = 1))]
    pub decay_threshold: f64,
    /// Serve queues first in, first out instead of at random.
    pub fifo: bool,
    /// Ignore the global block list.
    pub ignore_global_blocks: bool,
    /// Seconds an automatic block lasts.
    pub auto_block_ttl: u64,
    /// Items the public rescue form accepts (regular expression; empty: form closed).
    pub item_pattern: String,
    /// The secret of `/backfeed/legacy/SLUG-SECRET` (empty: backfeed closed).
    pub backfeed_key: String,
    /// The shards a backfeed call may name (`shard=NAME` queues into `todo:backfeed:NAME`);
    /// any other is refused. A project saved before this setting existed declares the shards
    /// its claim order already has.
    #[serde(default)]
    pub backfeed_shards: Vec<String>,
    /// The shard names a backfeed call may make beyond `backfeed_shards` (a regular
    /// expression the whole name must match; empty: any name of 1-64 of `[A-Za-z0-9_.:-]`,
    /// which names must be in any case).
    #[serde(default)]
    pub shard_pattern: String,
    /// Records the backfeed filter holds at its target false-positive rate before growing.
    #[cfg_attr(feature = "ssr", schema(minimum = 1))]
    pub bloom_capacity: u64,
    /// Static string fields sent with every claim (api_version 2).
    pub extra: BTreeMap<String, String>,
    /// Pattern limits.
    pub pattern_limits: Vec<PatternLimit>,
    /// Claims need a pipeline token (in the URL, `/SLUG/token=SECRET/`, or as a bearer token).
    #[serde(default)]
    pub require_token: bool,
    /// Pipeline tags (up to 16, each `[a-z0-9_-]{1,32}`): when any, a claim with a token is
    /// served only if its pipeline carries one of them; match-only pipelines are served only by
    /// projects naming one of their tags. Claims without a token are governed by
    /// `require_token` alone.
    #[serde(default)]
    pub tags: Vec<String>,
    /// What becomes of done items: `keep` (in Redis), `offload` (to segment files on disk, with
    /// their timelines; still answered exactly) or `discard` (only a filter of their names
    /// stays, on disk).
    #[serde(default = "default_done_policy")]
    #[cfg_attr(feature = "ssr", schema(pattern = "^(keep|offload|discard)$"))]
    pub done_policy: String,
    /// Done items kept in Redis before the others go to disk (`offload`, `discard`).
    #[serde(default = "default_offload_keep")]
    pub offload_keep: u64,
    /// Items a queue part keeps in Redis; past it, its last items wait on disk (0: no mark;
    /// else from twice `segment_items` to 1,000,000,000).
    #[serde(default = "default_queue_high")]
    #[cfg_attr(feature = "ssr", schema(maximum = 1000000000))]
    pub queue_high: u64,
    /// Items per segment file: 1,000 to 100,000.
    #[serde(default = "default_segment_items")]
    #[cfg_attr(feature = "ssr", schema(minimum = 1000, maximum = 100000))]
    pub segment_items: u64,
    /// Completion log entries kept in Redis; older ones (and any older than a day) go to the
    /// archive directory.
    #[serde(default = "default_log_keep")]
    #[cfg_attr(feature = "ssr", schema(minimum = 1000))]
    pub log_keep: u64,
}

/// `GET /admin/api/SLUG/offload` (and `offload` in `/SLUG/tracker-stats.json`): what of a
/// project is on disk rather than in Redis, and how the offloader fares.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct OffloadState {
    /// The project's `done_policy`.
    pub done_policy: String,
    /// Done items in segment files, names and timelines kept.
    pub done_on_disk: u64,
    /// Done items discarded: only a filter of their names is left.
    pub discarded: u64,
    /// Items waiting in queue segments on disk.
    pub todo_on_disk: u64,
    /// Segment files.
    pub segments: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Completion log archive files, and their bytes.
    pub log_files: u64,
    /// See `log_files`.
    pub log_bytes: u64,
    /// The offloader's last round for this project (ms), if any.
    pub last_run: Option<u64>,
    /// Its last failure (empty: none since it started), and when (ms).
    pub error: String,
    /// See `error`.
    pub error_t: Option<u64>,
    /// Whether a process holds the offload lease now.
    pub leased: bool,
    /// Whether the offloader's last round for this project failed (`error` says how).
    #[serde(default)]
    pub failing: bool,
    /// Completion log entries in Redis now (they leave it once archived).
    #[serde(default)]
    pub log_entries: u64,
    /// Log entries dropped unarchived: archiving failed while the log passed its budget.
    #[serde(default)]
    pub log_lost: u64,
    /// The most log entries kept in Redis while archiving fails (`TRACKER_LOG_BUDGET`; 0 in
    /// the public figures).
    #[serde(default)]
    pub log_budget: u64,
}

/// The done policies.
pub const DONE_POLICIES: [&str; 3] = ["keep", "offload", "discard"];
// Serde's defaults, for a settings document that lacks the field: the codec's.
fn default_done_policy() -> String {
    super::default_settings().done_policy
}
fn default_offload_keep() -> u64 {
    super::default_settings().offload_keep
}
fn default_queue_high() -> u64 {
    super::default_settings().queue_high
}
fn default_segment_items() -> u64 {
    super::default_settings().segment_items
}
fn default_log_keep() -> u64 {
    super::default_settings().log_keep
}
fn default_decay_threshold() -> f64 {
    super::default_settings().decay_threshold
}

/// The decay factor the panel suggests when decay is switched on.
pub const SUGGESTED_DECAY_FACTOR: f64 = 0.8;

/// Upload targets of a project, each with whether it is active (`[["rsync://…", true]]`):
/// part of [`ProjectSettings`] and the answer of `POST /admin/api/SLUG/targets`.
pub type UploadTargets = Vec<(String, bool)>;

/// `GET`/`PUT /admin/api/SLUG/settings`: settings as the panel shows and saves them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct ProjectSettings {
    /// The settings the CLI also edits.
    pub settings: Settings,
    /// Description (HTML; sanitised when saved).
    #[serde(default)]
    pub description: String,
    /// Overview order (higher first); unchanged when absent.
    #[serde(default)]
    pub priority: Option<i64>,
    /// Upload targets (read-only here; see `/targets`).
    #[serde(default)]
    #[cfg_attr(feature = "ssr", schema(value_type = Vec<Vec<serde_json::Value>>))]
    pub targets: UploadTargets,
    /// The project-admin accounts administering the project; unchanged when absent. Only
    /// global admins may change it.
    #[serde(default)]
    pub admins: Option<Vec<String>>,
    /// Whether secrets (the backfeed key) were left out: the caller is read-only.
    #[serde(default)]
    pub secrets_hidden: bool,
    /// Each backfeed key, in the order of `backfeed_key`, with what it fed.
    #[serde(default)]
    pub backfeed_keys: Vec<BackfeedKeyUse>,
}

/// One of a project's backfeed keys and what it fed (a project fed by several grab scripts has
/// a key for each).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct BackfeedKeyUse {
    /// The key's id: the first 8 hex digits of its SHA-256 (shown to read-only accounts too).
    pub id: String,
    /// The secret (empty when hidden from the caller).
    pub key: String,
    /// Records it sent that were queued or found known (rejected ones not counted).
    pub records: u64,
    /// Of those, the ones queued as new.
    pub added: u64,
    /// When it last fed (ms; 0: never).
    pub last: u64,
}

/// Body of `POST /admin/api/SLUG/backfeed-key`: `{}` replaces every key with one new key;
/// `{"action": "add"}` adds a key; `{"action": "rotate" | "revoke", "id": ID}` replaces or
/// removes the key of that id alone.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct BackfeedKeyChange {
    /// `add`, `rotate` or `revoke`; absent: replace them all.
    #[serde(default)]
    pub action: Option<String>,
    /// The [`BackfeedKeyUse::id`] to rotate or revoke.
    #[serde(default)]
    pub id: Option<String>,
}

/// Answer of `POST /admin/api/SLUG/backfeed-key`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct BackfeedKey {
    /// The project's keys now, comma-separated (each the secret of
    /// `/backfeed/legacy/SLUG-SECRET`).
    pub backfeed_key: String,
}

/// Answer of `DELETE /admin/api/SLUG`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct Destroyed {
    /// Redis keys removed.
    pub keys: u64,
}

/// The claims of one downloader (`GET /admin/api/SLUG/claims` lists them).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct ClaimGroup {
    /// Downloader name.
    pub downloader: String,
    /// Items held.
    pub count: u64,
    /// Oldest claim time (ms).
    pub oldest: u64,
    /// The IPs of its claims.
    pub ips: Vec<String>,
    /// Items it has done.
    pub done: u64,
}

/// A failed item.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct FailedItem {
    /// The item.
    pub item: String,
    /// Why it failed.
    pub reason: String,
    /// When (ms).
    pub t: u64,
}

/// `GET /admin/api/SLUG/failed`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct FailedList {
    /// Up to 1000 failed items.
    pub items: Vec<FailedItem>,
    /// How many there are.
    pub total: u64,
}

/// One archive file of a project's completion log (`GET /admin/api/SLUG/archives`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct ArchiveFile {
    /// File name, `SLUG-FIRSTMS-LASTMS.ndjson.gz`.
    pub name: String,
    /// Size in bytes.
    pub bytes: u64,
}

/// Answer of `POST /admin/api/SLUG/log/archive`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct Archived {
    /// Entries archived (dry run: that would be).
    #[serde(flatten)]
    pub affected: Affected,
    /// The file written.
    pub file: Option<String>,
}

/// What is known of one zstd dictionary of a project (`GET /dictionary?project=SLUG` serves
/// the current one; `GET`/`PUT /admin/api/SLUG/dictionary`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct DictionaryInfo {
    /// Its id, in the project.
    pub id: u64,
    /// SHA-256 of its bytes as served (lowercase hex): the grab scripts check it.
    pub sha256: String,
    /// Its size as served.
    pub bytes: u64,
    /// When it was set (ms).
    pub t: u64,
}
