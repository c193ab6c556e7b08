//! The admin JSON API's replies (`/admin/api/...`): the server builds them and the panel reads
//! them, so both sides share one definition of every shape.
//!
//! | module | what |
//! |---|---|
//! | here | the session and roles, bulk-action counts, the overview, accounts, audit, blocks, tokens |
//! | [`project`] (re-exported) | one project: queues, settings, claims, failed items, log archives |
//! | [`requests`] (re-exported) | the admin API's request bodies, decoded by the server, built by the panel |
//! | [`setting_codec`] (re-exported) | one codec per setting: name, type, default, label, how the `meta` hash holds it |
//! | [`item`] (re-exported) | one item: where it is, its decay score, its timeline |
//! | [`warrior`] (re-exported) | the Warrior HQ project list and its versions |
//! | [`listing`] (re-exported) | a project's Warrior listing and lifecycle, `auto_project` |
//! | [`fleet`] (re-exported) | the fleet: API downloaders and Warrior HQ instances, with totals |
//! | [`pipeline`] (re-exported) | pipeline tokens: as listed, and as created with their secret |

/// The queues items wait in, in the order claims take them: the server's keys and scripts and
/// the panel's queue pickers.
pub const QUEUES: [&str; 4] = ["todo", "todo:backfeed", "todo:secondary", "todo:redo"];

/// The header that carries a session's CSRF token on every changing call of the admin API.
pub const CSRF_HEADER: &str = "x-csrf-token";

/// The admin session's cookie.
pub const SESSION_COOKIE: &str = "tracker_admin";

mod fleet;
mod item;
mod listing;
mod pipeline;
mod project;
mod requests;
mod search;
mod setting_codec;
mod warrior;

#[cfg(test)]
mod tests;

pub use fleet::{
    fleet_matches, version_order, FleetClient, FleetProjectTotal, FleetSort, FleetVersionTotal,
    FleetView, FleetWarrior,
};
pub use item::{ItemInfo, TimelineEntry};
pub use listing::{AutoCandidate, AutoProject, Listing, ProjectListing};
pub use pipeline::{CreatedPipeline, Pipeline};
pub use project::{
    ArchiveFile, Archived, BackfeedKey, BackfeedKeyChange, BackfeedKeyUse, ClaimGroup, Destroyed,
    DictionaryInfo, FailedItem, FailedList, OffloadState, PatternLimit, ProjectSettings, Queues,
    Settings, UploadTargets, DONE_POLICIES, SUGGESTED_DECAY_FACTOR,
};
pub use requests::{
    ArchiveLog, BlockChange, ClearQueue, CreateProject, Credentials, MoveItems, NewToken,
    PasswordChange, Pin, PipelineRequest, Release, ResolveFailed, Restore, SaveList, Setup,
    TargetChange, UserChange,
};
pub use search::{FoundItem, FoundPage, SearchAct, SearchParams};
pub use setting_codec::{
    decode_meta, default_settings, pattern_limit_value, setting_field, Kind, SettingField,
    DERIVED_FIELDS, SETTING_FIELDS,
};
pub use warrior::{
    RestoredList, SavedList, WarriorEntry, WarriorList, WarriorPreview, WarriorVersion,
};

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What an account may do.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Everything, on every project, and the accounts.
    Global,
    /// Everything on the projects listed in the account.
    Project,
    /// Sees everything, changes nothing.
    ReadOnly,
}

impl Role {
    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Global => "global",
            Role::Project => "project",
            Role::ReadOnly => "read_only",
        }
    }

    /// Parses a stored name.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "global" => Some(Role::Global),
            "project" => Some(Role::Project),
            "read_only" | "readonly" | "read-only" => Some(Role::ReadOnly),
            _ => None,
        }
    }

    /// The name people read, e.g. `read-only`.
    pub fn label(self) -> &'static str {
        match self {
            Role::ReadOnly => "read-only",
            other => other.as_str(),
        }
    }
}

/// `GET /admin/api/session` (and the answer of login and setup): what the panel knows about
/// its visitor.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct AdminSession {
    /// Account name, when logged in.
    pub user: Option<String>,
    /// Its role.
    pub role: Option<Role>,
    /// Its projects (role `project`).
    pub projects: Vec<String>,
    /// The token to send as `X-CSRF-Token` with every POST, PUT and DELETE; empty until
    /// logged in (logging in and the setup need none, only a same-origin `Origin`).
    pub csrf: String,
    /// Whether no account exists yet (the setup link is pending).
    pub setup_pending: bool,
}

impl AdminSession {
    /// Whether an account is logged in.
    pub fn logged_in(&self) -> bool {
        self.user.is_some()
    }

    /// Whether the account is a global admin's.
    pub fn is_global(&self) -> bool {
        self.role == Some(Role::Global)
    }

    /// Whether the account changes things at all (not read-only).
    pub fn is_actor(&self) -> bool {
        matches!(self.role, Some(Role::Global | Role::Project))
    }

    /// Whether the account may change project `slug`.
    pub fn may_change(&self, slug: &str) -> bool {
        match self.role {
            Some(Role::Global) => true,
            Some(Role::Project) => self.projects.iter().any(|p| p == slug),
            _ => false,
        }
    }

    /// The role as people read it (empty for a visitor).
    pub fn role_label(&self) -> &'static str {
        self.role.map_or("", Role::label)
    }
}

/// The answer of every bulk action (adding, moving, clearing, releasing, failed items,
/// archiving): how many items it affected.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct Affected {
    /// Items affected (or, in a dry run, that would be).
    pub count: u64,
    /// Whether nothing was changed.
    pub dry_run: bool,
}

/// One project on the overview.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct ProjectRow {
    /// Slug.
    pub slug: String,
    /// Title.
    pub title: String,
    /// The lifecycle state ([`crate::model::lifecycle::derive`]).
    pub state: String,
    /// Niceness: lower runs first (the overview's order and `auto_project`'s choice).
    pub priority: i64,
    /// Items waiting, per queue part.
    pub queues: BTreeMap<String, u64>,
    /// Items claimed.
    pub claimed: u64,
    /// Items done.
    pub done: u64,
    /// Items failed.
    pub failed: u64,
    /// Items done in the last 10 minutes, per minute.
    pub items_per_minute: f64,
}

impl ProjectRow {
    /// Items waiting in all queue parts together.
    pub fn waiting(&self) -> u64 {
        self.queues.values().sum()
    }
}

/// `GET /admin/api/overview`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct Overview {
    /// The projects the caller may see, by priority then slug.
    pub projects: Vec<ProjectRow>,
    /// Redis `used_memory_human`.
    pub redis_memory: String,
    /// This server's version.
    pub version: String,
}

/// An admin account as listed (`GET /admin/api/users`) and as created or changed: never its
/// password hash.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct AccountInfo {
    /// Lowercase name.
    pub name: String,
    /// What it may do.
    pub role: Role,
    /// The projects a `Project` account administers.
    pub projects: Vec<String>,
    /// Created (ms).
    pub t: u64,
}

/// One audit log entry (`GET /admin/api/audit` lists the newest first).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct AuditEntry {
    /// When (ms).
    pub t: u64,
    /// Who (account name, or `api-token`, or `cli`).
    pub who: String,
    /// What, e.g. `items.add`, `claims.release`.
    pub action: String,
    /// The project, if any.
    #[serde(default)]
    pub project: String,
    /// Items (or entries) affected.
    #[serde(default)]
    pub count: u64,
    /// Parameters, short.
    #[serde(default)]
    pub detail: String,
}

/// The audit actions that change what the Warrior fleet runs (a project's listing and its
/// approval, the `auto_project` pin, the list's own document, a project's priority); the
/// Warrior list page shows them (`GET /admin/api/audit?action=` these, comma-separated).
pub const FLEET_ACTIONS: [&str; 4] = [
    "listing",
    "auto_project",
    "warrior_projects",
    "settings.priority",
];

/// One block-list entry (stored as this JSON too).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct BlockEntry {
    /// Why.
    #[serde(default)]
    pub reason: String,
    /// Who (an admin's name, or `auto`).
    #[serde(default)]
    pub by: String,
    /// When (ms).
    #[serde(default)]
    pub t: u64,
    /// Until when (ms); 0 = for good.
    #[serde(default)]
    pub expires: u64,
}

impl BlockEntry {
    /// Whether the block holds at `now_ms`.
    pub fn active(&self, now_ms: u64) -> bool {
        self.expires == 0 || self.expires > now_ms
    }

    /// Whether the tracker made it (too many bad requests), not an admin.
    pub fn is_automatic(&self) -> bool {
        self.by == "auto"
    }
}

/// One block as listed by `GET /admin/api/blocks`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct BlockRow {
    /// `ip` or `dl`.
    pub kind: String,
    /// The IP or name.
    pub value: String,
    /// Reason, who, when, expiry.
    #[serde(flatten)]
    pub entry: BlockEntry,
    /// Whether it still holds.
    pub active: bool,
}

/// One API token as listed (never its secret).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct ApiToken {
    /// Short public id (names the token in lists and the audit log).
    pub id: String,
    /// What the owner called it.
    pub name: String,
    /// Created (ms).
    pub t: u64,
    /// When it stops working (ms); a token made before tokens expired has
    /// [`TOKEN_DAYS_MAX`] from its creation.
    #[serde(default)]
    pub expires: u64,
}

/// Days a new token lasts unless asked otherwise.
pub const TOKEN_DAYS_DEFAULT: u32 = 90;
/// The most days a token may last.
pub const TOKEN_DAYS_MAX: u32 = 365;

/// Answer of `POST /admin/api/tokens`: the only time the secret is shown.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct CreatedToken {
    /// The token as listed.
    #[serde(flatten)]
    pub token: ApiToken,
    /// The secret to send as `Authorization: Bearer SECRET`.
    pub secret: String,
}
