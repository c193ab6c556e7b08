//! The admin API's request bodies: the server decodes them and the panel builds them, so both
//! sides share one definition of every field (a field the panel misnames fails to compile).

use super::Role;
use serde::{Deserialize, Serialize};

/// Body of `POST /admin/api/login`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct Credentials {
    /// Account name (any case).
    pub username: String,
    /// Password.
    pub password: String,
}

/// Body of `POST /admin/api/setup`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct Setup {
    /// The token of the setup link.
    pub token: String,
    /// The first global admin's name: 1 to 32 of a-z, 0-9, `.`, `_`, `-` (any case).
    #[cfg_attr(feature = "ssr", schema(min_length = 1, max_length = 32))]
    pub username: String,
    /// Its password: 10 to 1024 characters, hard to guess (zxcvbn score 3 or more).
    #[cfg_attr(feature = "ssr", schema(min_length = 10, max_length = 1024))]
    pub password: String,
}

/// Body of `POST /admin/api/pipelines`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct PipelineRequest {
    /// `[A-Za-z0-9_.-]{1,64}`.
    #[cfg_attr(feature = "ssr", schema(pattern = "^[A-Za-z0-9_.-]{1,64}$"))]
    pub name: String,
    /// Up to 16 tags, `[a-z0-9_-]{1,32}` each.
    #[serde(default)]
    pub tags: Vec<String>,
    /// Served only by projects naming one of its tags.
    #[serde(default)]
    pub match_only: bool,
}

/// Body of `POST /admin/api/tokens`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct NewToken {
    /// What the token is for, e.g. `ingest script`: 1 to 64 characters.
    #[cfg_attr(feature = "ssr", schema(min_length = 1, max_length = 64))]
    pub name: String,
    /// The account's password, entered again: a session left open does not make tokens.
    #[serde(default)]
    pub password: String,
    /// Days it lasts (1 to [`super::TOKEN_DAYS_MAX`]; none: [`super::TOKEN_DAYS_DEFAULT`]).
    #[serde(default)]
    #[cfg_attr(feature = "ssr", schema(minimum = 1, maximum = 365))]
    pub days: Option<u32>,
}

/// Body of `POST /admin/api/password`: the logged-in account changes its own password.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct PasswordChange {
    /// The password now.
    pub current: String,
    /// The new one: 10 to 1024 characters, hard to guess (zxcvbn score 3 or more).
    #[cfg_attr(feature = "ssr", schema(min_length = 10, max_length = 1024))]
    pub new: String,
}

/// Body of `POST /admin/api/SLUG/release`: which claims to release (all set fields must
/// match; at least one must be set).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct Release {
    /// Claimed at or before this time (ms since the epoch).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before_ms: Option<u64>,
    /// Claimed more than this many seconds ago.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub older_than_s: Option<u64>,
    /// Held by this downloader.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub downloader: Option<String>,
    /// This item.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub item: Option<String>,
    /// Items matching this expression.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub regex: Option<String>,
    /// Only count.
    #[serde(default)]
    pub dry_run: bool,
}

/// Body of `POST /admin/api/SLUG/failed`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct ResolveFailed {
    /// `requeue` or `drop`.
    #[cfg_attr(feature = "ssr", schema(pattern = "^(requeue|drop)$"))]
    pub action: String,
    /// These items (default: every failed item).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub items: Option<Vec<String>>,
    /// Only count.
    #[serde(default)]
    pub dry_run: bool,
}

/// Body of `POST /admin/api/SLUG/move`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct MoveItems {
    /// Source queue: `todo`, `todo:backfeed`, `todo:secondary` or `todo:redo`.
    #[cfg_attr(
        feature = "ssr",
        schema(pattern = "^todo(:backfeed|:secondary|:redo)?$")
    )]
    pub from: String,
    /// Destination queue, another of those.
    #[cfg_attr(
        feature = "ssr",
        schema(pattern = "^todo(:backfeed|:secondary|:redo)?$")
    )]
    pub to: String,
    /// Only items matching this expression (default: all).
    #[serde(default)]
    pub regex: String,
    /// Only count.
    #[serde(default)]
    pub dry_run: bool,
}

/// Body of `POST /admin/api/SLUG/clear`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct ClearQueue {
    /// The queue to empty: `todo`, `todo:backfeed`, `todo:secondary` or `todo:redo`.
    #[cfg_attr(
        feature = "ssr",
        schema(pattern = "^todo(:backfeed|:secondary|:redo)?$")
    )]
    pub queue: String,
    /// Only count.
    #[serde(default)]
    pub dry_run: bool,
}

/// Body of `POST /admin/api/projects`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct CreateProject {
    /// 1 to 64 of `[a-z0-9-]`, starting with a letter or digit, and not a reserved path
    /// (`admin`, `api`, ...).
    #[cfg_attr(feature = "ssr", schema(pattern = "^[a-z0-9][a-z0-9-]{0,63}$"))]
    pub slug: String,
    /// Title (default: the slug): at most 200 bytes.
    #[serde(default)]
    #[cfg_attr(feature = "ssr", schema(max_length = 200))]
    pub title: String,
    /// Byte domains (default: `data`): each 1 to 64 bytes, without `,`, `"` or `\`.
    #[serde(default)]
    pub domains: Vec<String>,
}

/// Body of `POST /admin/api/SLUG/targets`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct TargetChange {
    /// e.g. `rsync://host/module/:downloader/`: 1 to 1024 bytes, no whitespace.
    #[cfg_attr(feature = "ssr", schema(pattern = "^\\S{1,1024}$"))]
    pub target: String,
    /// `activate`, `deactivate` or `remove` (adding is activating a new one).
    #[cfg_attr(feature = "ssr", schema(pattern = "^(activate|deactivate|remove)$"))]
    pub action: String,
}

/// Body of `POST /admin/api/users` and `PUT /admin/api/users/NAME`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct UserChange {
    /// Name (creating only): 1 to 32 of a-z, 0-9, `.`, `_`, `-` (any case).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    #[cfg_attr(feature = "ssr", schema(max_length = 32))]
    pub name: String,
    /// New password (required when creating): 10 to 1024 characters, hard to guess (zxcvbn
    /// score 3 or more).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "ssr", schema(min_length = 10, max_length = 1024))]
    pub password: Option<String>,
    /// Role.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<Role>,
    /// Projects of a `project` account.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub projects: Option<Vec<String>>,
}

/// Body of `POST /admin/api/blocks` and `/unblock`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct BlockChange {
    /// `ip` or `dl`.
    #[cfg_attr(feature = "ssr", schema(pattern = "^(ip|dl)$"))]
    pub kind: String,
    /// The IP or name.
    pub value: String,
    /// A project (default: the global lists).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project: Option<String>,
    /// Why (kept to its first 500 characters).
    #[serde(default)]
    pub reason: String,
    /// Hours until it lifts (default: never).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hours: Option<u64>,
}

/// Body of `PUT /admin/api/warrior/projects`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct SaveList {
    /// The new document.
    pub json: String,
    /// Only validate and answer the sanitised document (the preview).
    #[serde(default)]
    pub dry_run: bool,
}

/// Body of `POST /admin/api/warrior/restore`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct Restore {
    /// Index in the versions (0 = current; 20 are kept).
    #[cfg_attr(feature = "ssr", schema(maximum = 19))]
    pub index: usize,
}

/// Body of `PUT /admin/api/warrior/auto`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct Pin {
    /// The project to pin, or `null` to let the tracker choose.
    pub pin: Option<String>,
}

/// Body of `POST /admin/api/SLUG/log/archive`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct ArchiveLog {
    /// Archive the entries up to this time (ms, inclusive).
    pub to: u64,
    /// Only count.
    #[serde(default)]
    pub dry_run: bool,
}
