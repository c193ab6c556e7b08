//! The Redis store: a small Redis core and the features as slices over it. Nothing else in the
//! process talks to Redis directly.
//!
//! The core ([`Store`], `redis_core`) is the connection pool, the install's key names
//! ([`crate::keys`]), the Lua scripts ([`scripts`]: one Redis Functions library), the errors
//! (`error`, `refusal`) and each slice's own state (its caches and pending notes, by type:
//! [`Store::slice`]). It imports nothing from the slices. A slice is reached through a handle
//! of its own, `store.queue()`, `store.projects()`, ...: a view of the store whose methods are
//! that slice's operations. A slice uses those below it; nothing below imports one above.
//!
//! | slice | handle | what it is for |
//! |---|---|---|
//! | [`upkeep`] | [`upkeep::Upkeep`] | `tracker check` (every item in exactly one state), recounts, `tracker migrate`'s writes |
//! | [`queue`] | [`queue::Queue`] | the queue engine: adding (`add`), claiming, reporting done and releasing (`items`), where an item is (`item_status`), the panel's bulk operations (`admin_items`), the backfeed filter (`bloom`), what each backfeed key fed (`fed`), search and its bulk actions, scoring old queues (`shuffle`) |
//! | [`people`] | [`people::People`] | admin accounts, logins and the audit log (`accounts`), API tokens (`tokens`), pipelines (`pipelines`) |
//! | [`projects`] | [`projects::Projects`] | creation, settings and their cache (`meta`), the settings version every process follows, Warrior listings and lifecycle (`listing`), plain writes (`guarded`), zstd dictionaries, blocks and upload targets (`blocks`) |
//! | [`figures`] | [`figures::Figures`] | the fold of the completion log (`fold`), the lifetime tally (`tally`), unique contributors, charts and stats (`stats`), the leaderboard snapshot (`snapshot`) |
//! | [`offload`] | [`offload::Offload`] | items on disk: the segment registry, lookups, moving items between Redis and disk |
//! | [`fleet`] | [`fleet::Fleet`] | Warrior HQ's instances (`hq`), the warrior API's downloaders (`api_fleet`), the HQ project list and pages of the completion log (`project_list`) |
//!
//! Beside them: [`redis_info`] (Redis's figures of its commands and this process's failed Redis
//! calls, for `/metrics`), `helpers` (a string's JSON text, a sorted set's page, a claim order's
//! queue parts), and `backend`, the pages' data ([`app::backend::Backend`]) read from the slices.

mod backend;
mod error;
pub mod figures;
pub mod fleet;
mod helpers;
pub mod offload;
pub mod people;
pub mod projects;
pub mod queue;
mod redis_core;
pub mod redis_info;
mod refusal;
pub mod scripts;
pub mod upkeep;
pub use helpers::queue_parts;

// The slices' modules that other parts of the server name by path.
pub use figures::{contributors, fold, stats, tally};
pub use projects::dictionary;
pub use queue::{fed, search, search_act};

pub use figures::snapshot::{set_window_sums, QueueSizes, PAGE_DOWNLOADERS, PAGE_RECENT};
pub use figures::stats::tracker_stats;
pub use fleet::api_fleet::{seesaw_version, FleetFlush, SeenClient, MAX_FLEET_CLIENTS};
pub use fleet::hq::{
    FleetRefusal, WarriorRecord, FLEET_TTL_MS, MAX_WARRIORS, MAX_WARRIORS_PER_NETWORK,
};
pub use offload::{DiskHit, OnDisk, SegmentEntry};
pub use people::accounts::{
    new_session_gen, user_name_problem, valid_user_name, Account, Actor, AuditEntry, Role,
    CLI_ACTOR, DEVICE_DAYS, MAX_DEVICES, RESERVED_USER_NAMES,
};
pub use people::pipelines::{
    may_serve, tags_problem, valid_pipeline_name, CreatedPipeline, Pipeline, MAX_PIPELINES,
    MAX_TAGS, PIPELINE_TTL,
};
pub use people::tokens::{random_token, token_hash, ApiToken, TOKEN_DAYS_DEFAULT, TOKEN_DAYS_MAX};
pub use projects::blocks::{BlockEntry, BlockKind};
pub use projects::meta::{
    valid_part_name, valid_slug, NewProject, PatternLimit, Patterns, Settings,
};
pub use projects::settings_version::SettingsVersion;
pub use queue::admin_items::{ClaimFilter, ClaimGroup, DestroyedMark, FailedItem};
pub use queue::bloom::{
    estimated_fp, geometry as bloom_geometry, hash_key as bloom_hash, spot_in as bloom_spot,
    BackfeedRecord, BloomLayer,
};
pub use queue::item_status::ItemStatus;
pub use queue::items::{
    ClaimOutcome, ClaimRequest, DoneOutcome, DoneReport, DISK_LOOKUPS_BURST, DISK_LOOKUPS_PER_S,
};
pub use queue::release::{NotReleased, ReleaseRefusal, Released, Releaser};
pub use scripts::Refusal;
pub use upkeep::migrate::{ImportedFigures, OldClaim, OldDownloader};

pub use fleet::project_list::ListVersion;
pub use redis_core::{
    is_oom, is_unavailable, now_ms, Store, StoreError, StoreResult, COMMAND_TIMEOUT, RECONNECTING,
    SUBSCRIBER_BACKLOG,
};
