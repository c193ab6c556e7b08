//! The Redis store: the connection pool, the Lua scripts, and typed operations on projects
//! and items. Nothing else in the process talks to Redis directly.
//!
//! | module | what it is for |
//! |---|---|
//! | [`scripts`] | the Lua scripts (`lua/`) as one Redis Functions library, their shared helpers, typed replies, reload |
//! | `add` | adding to queues: known items skipped (Redis and disk), waiting for the offloader past a queue's mark |
//! | `items` | claiming, reporting done, releasing |
//! | `item_status` | where an item is: state, claim, decay score, timeline |
//! | `projects` | creation, settings, the event history |
//! | `admin_items` | the panel's bulk operations: claims by downloader, release, move, clear, failed |
//! | `blocks` | blocks (per project and global), the rescue-me limiter, upload targets |
//! | `bloom` | the backfeed de-duplication filter (a scalable Bloom filter in Redis) |
//! | `snapshot` | the leaderboard: one atomic read of counts, downloaders, recent completions |
//! | [`search`], [`search_act`] | item search, a page at a time, and bulk actions on a search's results |
//! | [`stats`] | charts, versions, per-minute counters, unique contributors |
//! | [`tally`] | the lifetime counters: whole minutes of the per-minute counters tallied once |
//! | [`contributors`] | unique contributors per month, per project and across all projects |
//! | `backend` | the pages' data ([`app::backend::Backend`]) read from the above |
//! | `accounts` | admin accounts, the setup token, login attempt counters, the audit log |
//! | `tokens` | per-account API tokens (only their SHA-256 stored) |
//! | `pipelines` | pipeline tokens (only their SHA-256 stored), and which projects serve which |
//! | `project_list` | the Warrior HQ project list and pages of the completion log |
//! | `hq` | Warrior HQ's instances: registered warriors and what they run, for 15 minutes |
//! | `listing` | projects' Warrior listings, recorded lifecycle changes, `auto_project` and its pin |
//! | `api_fleet` | the downloaders seen on the warrior API: flushed by each process, read for the Fleet page and the pages' counts |
//! | `settings_version` | the settings version every process follows |
//! | `shuffle` | scoring the queues of projects from before random order |
//! | `check` | `tracker check`: the invariant, every item in exactly one state |
//! | `migrate` | `tracker migrate`'s writes: claims, done items and figures of the universal tracker |
//! | [`fold`] | the per-downloader figures folded from the completion log, off the done path |
//! | [`fed`] | what each backfeed key fed, per project |
//! | [`dictionary`] | per project, the zstd dictionaries the grab scripts fetch |
//! | `helpers` | what every part may use: a string's JSON text, a sorted set's page, a claim order's queue parts |
//! | [`redis_info`] | Redis's figures of its commands, and this process's failed Redis calls, for `/metrics` |
//! | [`offload`] | items on disk: the segment registry, lookups, moving items between Redis and disk |
//!
//! Key names come from [`crate::keys`].

mod accounts;
mod add;
mod admin_items;
mod api_fleet;
mod backend;
mod blocks;
mod bloom;
mod check;
mod helpers;
pub use helpers::queue_parts;
pub mod contributors;
pub mod dictionary;
pub mod fed;
pub mod fold;
mod guarded;
mod hq;
mod item_status;
mod items;
mod listing;
mod migrate;
pub mod offload;
mod pipelines;
mod project_list;
mod projects;
pub mod redis_info;
pub mod scripts;
pub mod search;
pub mod search_act;
mod settings_version;
mod shuffle;
mod snapshot;
pub mod stats;
pub mod tally;
mod tokens;

pub use accounts::{
    new_session_gen, user_name_problem, valid_user_name, Account, Actor, AuditEntry, Role,
    CLI_ACTOR, DEVICE_DAYS, MAX_DEVICES, RESERVED_USER_NAMES,
};
pub use admin_items::{ClaimFilter, ClaimGroup, DestroyedMark, FailedItem};
pub use api_fleet::{seesaw_version, FleetFlush, SeenClient, MAX_FLEET_CLIENTS};
pub use blocks::{BlockEntry, BlockKind};
pub use bloom::{
    estimated_fp, geometry as bloom_geometry, hash_key as bloom_hash, spot_in as bloom_spot,
    BackfeedRecord, BloomLayer,
};
pub use hq::{FleetRefusal, WarriorRecord, FLEET_TTL_MS, MAX_WARRIORS, MAX_WARRIORS_PER_NETWORK};
pub use item_status::ItemStatus;
pub use items::{
    ClaimOutcome, ClaimRequest, DoneOutcome, DoneReport, NotReleased, ReleaseRefusal, Released,
    Releaser, DISK_LOOKUPS_BURST, DISK_LOOKUPS_PER_S,
};
pub use migrate::{ImportedFigures, OldClaim, OldDownloader};
pub use offload::{DiskHit, OnDisk, SegmentEntry};
pub use pipelines::{
    may_serve, tags_problem, valid_pipeline_name, CreatedPipeline, Pipeline, MAX_PIPELINES,
    MAX_TAGS, PIPELINE_TTL,
};
pub use projects::{valid_part_name, valid_slug, NewProject, PatternLimit, Patterns, Settings};
pub use scripts::Refusal;
pub use settings_version::SettingsVersion;
pub use snapshot::{set_window_sums, QueueSizes, PAGE_DOWNLOADERS, PAGE_RECENT};
pub use stats::tracker_stats;
pub use tokens::{random_token, token_hash, ApiToken, TOKEN_DAYS_DEFAULT, TOKEN_DAYS_MAX};

/// The reason given to every caller (and page) while Redis cannot be reached.
pub const RECONNECTING: &str = "The tracker is reconnecting to its database; retry shortly.";
pub use project_list::ListVersion;

use crate::keys::Keys;
use fred::prelude::*;
use scripts::Scripts;

/// Store failures; client mistakes are reported by the API layer before calling the store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// Redis failed or is unreachable.
    #[error("redis: {0}")]
    Redis(fred::error::Error),
    /// Redis cannot answer now: the connection is down or reconnecting, a command outlived its
    /// timeout, or a cluster is failing over (`CLUSTERDOWN`, `TRYAGAIN`, `LOADING`, ...). The
    /// caller may retry shortly; a command that timed out may or may not have run.
    #[error("redis unavailable: {0}")]
    Unavailable(String),
    /// Redis refused a write: its memory is at `maxmemory`. Nothing was changed (every
    /// writing script is refused before it starts); writes succeed again once memory frees.
    #[error("redis is full (used memory > maxmemory): writes are refused until memory frees or maxmemory is raised")]
    Full,
    /// A script answered something its wrapper does not expect.
    #[error("unexpected reply from script {script}: {detail}")]
    Reply {
        /// The script.
        script: &'static str,
        /// What was wrong.
        detail: String,
    },
    /// The project does not exist.
    #[error("no such project")]
    NoProject,
    /// The project exists already.
    #[error("project exists")]
    ProjectExists,
    /// A project of that slug was destroyed and its files are still being deleted.
    #[error("a destroyed project of that slug still has files on disk")]
    BeingRemoved,
    /// A segment file on disk could not be read or written (see [`offload`]).
    #[error("offload files: {0}")]
    Disk(String),
    /// A script refused the request (see [`Refusal`] for the codes); nothing was changed,
    /// except where the refusal says otherwise.
    #[error("refused: {0}")]
    Refused(Refusal),
}

impl StoreError {
    /// The kind of a failure, as `/metrics` labels it: `full` (Redis at `maxmemory`),
    /// `unavailable`, or `other`.
    pub fn kind(&self) -> &'static str {
        match self {
            StoreError::Full => "full",
            StoreError::Unavailable(_) => "unavailable",
            _ => "other",
        }
    }
}

/// Every failed Redis call of the tracker becomes a `StoreError` here, and is counted
/// ([`redis_info::REDIS_ERRORS`], for `/metrics`).
impl From<fred::error::Error> for StoreError {
    fn from(e: fred::error::Error) -> Self {
        let e = if is_oom(e.details()) {
            Self::Full
        } else if e.details().starts_with("NOPROJECT") {
            // A script's refusal to write into a project whose `meta` is gone (_lib must_exist).
            Self::NoProject
        } else if is_unavailable(&e) {
            Self::Unavailable(e.to_string())
        } else {
            Self::Redis(e)
        };
        redis_info::REDIS_ERRORS.count(&e);
        e
    }
}

/// Whether a Redis error reply is the refusal of a write past `maxmemory`
/// (`OOM command not allowed when used memory > 'maxmemory'.`).
pub fn is_oom(reply: &str) -> bool {
    reply.starts_with("OOM ")
}

/// Whether a Redis error means "not now" rather than "wrong": no connection, a timeout, or a
/// server (or cluster slot) that is starting, failing over or read-only for a moment.
pub fn is_unavailable(e: &fred::error::Error) -> bool {
    use fred::error::ErrorKind;
    const TRANSIENT: [&str; 6] = [
        "CLUSTERDOWN",
        "TRYAGAIN",
        "LOADING",
        "MASTERDOWN",
        "READONLY",
        "BUSY",
    ];
    matches!(
        e.kind(),
        ErrorKind::IO
            | ErrorKind::Timeout
            | ErrorKind::Canceled
            | ErrorKind::Backpressure
            | ErrorKind::Routing
            | ErrorKind::Cluster
    ) || TRANSIENT
        .iter()
        .any(|t| e.details().trim_start().starts_with(t))
        // fred's answer to a command issued while it holds no connection (Redis has just
        // died and the reconnection is pending): kind `Unknown`, and the command was never sent.
        || (*e.kind() == ErrorKind::Unknown && e.details().starts_with("Failed to route command"))
}

/// How long any one Redis command may take in the server before it fails as
/// [`StoreError::Unavailable`]. Long enough for the slowest legitimate command of a big
/// project (a page of a claim list, a bulk move); short enough that nothing waits on a hung
/// Redis for ever. Warrior calls give up much sooner (`TRACKER_REDIS_DEADLINE`).
pub const COMMAND_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// Result of store operations.
pub type StoreResult<T> = Result<T, StoreError>;

/// The Redis store; cheap to clone.
#[derive(Clone)]
pub struct Store {
    pool: Pool,
    /// Kept to connect the subscriber; shared, as every handler clones the store.
    config: std::sync::Arc<Config>,
    keys: Keys,
    scripts: std::sync::Arc<Scripts>,
    settings_cache: std::sync::Arc<projects::SettingsCache>,
    global_blocks: std::sync::Arc<blocks::GlobalBlocksCache>,
    pipeline_cache: std::sync::Arc<pipelines::PipelineCache>,
    settings_version: std::sync::Arc<SettingsVersion>,
    /// Contributors noted for the global monthly count, until the next flush.
    pending_contributors: std::sync::Arc<contributors::Pending>,
    /// Projects with completion log entries to fold, until the next fold.
    pending_folds: std::sync::Arc<fold::Pending>,
    /// How long an API downloader may be silent before it is forgotten (ms).
    fleet_silence_ms: u64,
    /// The offload directory and the segment files open, per project.
    disk: std::sync::Arc<offload::DiskCache>,
    /// The install's Warrior HQ key, once read ([`hq`]).
    hq_key: std::sync::Arc<std::sync::OnceLock<String>>,
}

impl Store {
    /// Connects a pool of `size` connections to `url` (see [`crate::redis_url`]), with
    /// [`COMMAND_TIMEOUT`]; segment files live under `offload_dir` (`TRACKER_OFFLOAD_DIR`).
    pub async fn connect(
        url: &str,
        namespace: &str,
        size: usize,
        offload_dir: std::path::PathBuf,
    ) -> StoreResult<Self> {
        Self::connect_with(url, namespace, size, COMMAND_TIMEOUT, offload_dir).await
    }

    /// [`Store::connect`] with a command timeout of `timeout` (the CLI's `check` of a big
    /// project reads for longer than a server should wait).
    ///
    /// A command in flight when its connection drops is not sent again (fred would by
    /// default): a script that may have run is not run twice, its caller gets
    /// [`StoreError::Unavailable`] and retries.
    pub async fn connect_with(
        url: &str,
        namespace: &str,
        size: usize,
        timeout: std::time::Duration,
        offload_dir: std::path::PathBuf,
    ) -> StoreResult<Self> {
        let config = if let Some(path) = url.strip_prefix("redis+unix://") {
            Config {
                server: ServerConfig::new_unix_socket(path),
                ..Config::default()
            }
        } else {
            Config::from_url(url)?
        };
        let pool = Builder::from_config(config.clone())
            .with_connection_config(|c| {
                c.connection_timeout = std::time::Duration::from_secs(2);
                c.internal_command_timeout = std::time::Duration::from_secs(2);
                c.max_command_attempts = 1;
            })
            .with_performance_config(|p| p.default_command_timeout = timeout)
            .set_policy(ReconnectPolicy::new_exponential(0, 100, 2_000, 2))
            .build_pool(size)?;
        pool.init().await?;
        Ok(Self {
            pool,
            config: config.into(),
            keys: Keys::new(namespace),
            scripts: std::sync::Arc::new(Scripts::new()),
            settings_cache: Default::default(),
            global_blocks: Default::default(),
            pipeline_cache: Default::default(),
            settings_version: Default::default(),
            pending_contributors: Default::default(),
            pending_folds: Default::default(),
            fleet_silence_ms: crate::config::DEFAULT_FLEET_SILENCE_MS,
            disk: std::sync::Arc::new(offload::DiskCache::new(offload_dir)),
            hq_key: Default::default(),
        })
    }

    /// The key names of this install.
    pub fn keys(&self) -> &Keys {
        &self.keys
    }

    /// A client of the pool, for commands outside the typed operations (health, pub/sub setup).
    pub fn client(&self) -> &Client {
        self.pool.next()
    }

    /// The Redis round trip, in seconds.
    pub async fn ping(&self) -> StoreResult<f64> {
        let start = std::time::Instant::now();
        let _: String = self.pool.next().ping(None).await?;
        Ok(start.elapsed().as_secs_f64())
    }

    /// Closes the connections.
    pub async fn quit(&self) {
        let _ = self.pool.quit().await;
    }

    /// A new pub/sub client on the same server. Its message channel holds
    /// [`SUBSCRIBER_BACKLOG`] messages, so a busy moment of the hub does not lose events (fred's
    /// default of 32 is 32 ms of completions at 1,000 a second).
    pub fn subscriber(&self) -> Result<fred::clients::SubscriberClient, fred::error::Error> {
        Builder::from_config((*self.config).clone())
            .with_performance_config(|p| p.broadcast_channel_capacity = SUBSCRIBER_BACKLOG)
            .set_policy(ReconnectPolicy::new_exponential(0, 100, 2_000, 2))
            .build_subscriber_client()
    }

    /// A client on a connection of its own, for probing whether Redis answers: pings on the
    /// pool would wait behind the scripts queued there.
    pub async fn probe_client(&self) -> StoreResult<Client> {
        let client = Builder::from_config((*self.config).clone())
            .with_connection_config(|c| {
                c.connection_timeout = std::time::Duration::from_secs(1);
                c.max_command_attempts = 1;
            })
            .set_policy(ReconnectPolicy::new_exponential(0, 100, 1_000, 2))
            .build()?;
        client.init().await?;
        Ok(client)
    }

    /// The connection pool, for the session store.
    pub fn pool(&self) -> &Pool {
        &self.pool
    }

    /// The scripts, for tests that call them all.
    pub fn scripts(&self) -> &Scripts {
        &self.scripts
    }
}

/// Published messages the pub/sub client buffers for the hub before it must resync watchers.
pub const SUBSCRIBER_BACKLOG: usize = 16 * 1024;

/// Milliseconds since the epoch, the clock passed to every script.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use fred::error::{Error, ErrorKind};

    #[test]
    fn a_command_with_no_connection_to_route_it_to_is_unavailable_not_an_internal_error() {
        // What fred 10 answers while Redis is being reconnected (`router/commands.rs`).
        let e = Error::new(ErrorKind::Unknown, "Failed to route command.");
        assert!(super::is_unavailable(&e));
        assert!(!super::is_unavailable(&Error::new(
            ErrorKind::Unknown,
            "ERR something else"
        )));
    }
}
