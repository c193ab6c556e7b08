//! The use cases the admin panel and the `tracker` command line share: each checks its input
//! once, acts on the store, and writes its own audit entry under the [`Actor`] that asked. The
//! front doors only parse their input, check who may do what, call one of these, and format
//! the answer.
//!
//! | module | what it is for |
//! |---|---|
//! | [`projects`] | creating a project, recounting its items, upload targets |
//! | [`settings`] | the checks every saved setting passes, `KEY=VALUE` changes, saving |
//! | [`blocks`] | blocking and unblocking IPs and downloader names |
//! | [`items`] | adding items from a byte stream (plain, gzip or zstd) |
//! | [`lines`] | the one reader of item lines under [`items`] |
//! | [`accounts`] | creating accounts, changing them, password hashes |
//! | [`pipelines`] | issuing, listing and revoking pipeline tokens |

pub mod accounts;
pub mod blocks;
pub mod items;
pub mod lines;
pub mod pipelines;
pub mod projects;
pub mod settings;

pub use settings::validate_settings;

use crate::store::{now_ms, valid_slug, AuditEntry, Settings, Store, StoreError, StoreResult};
use std::sync::Arc;

/// The audit name of actions taken with the `tracker` command line.
pub const CLI_ACTOR: &str = "cli";

/// Who does an action, as the audit log names them.
#[derive(Clone, Debug)]
pub struct Actor {
    /// An account name, `api-token`, or [`CLI_ACTOR`].
    pub name: String,
    /// The id of the account's API token the action came with, if any.
    pub token: Option<String>,
}

impl Actor {
    /// The `tracker` command line.
    pub fn cli() -> Self {
        Actor {
            name: CLI_ACTOR.into(),
            token: None,
        }
    }

    /// Records an action in the audit log (with `[token ID]` when it came with a token).
    pub async fn record(
        &self,
        store: &Store,
        action: &str,
        project: &str,
        count: u64,
        detail: impl Into<String>,
    ) -> StoreResult<()> {
        let mut detail = detail.into();
        if let Some(id) = &self.token {
            detail = format!("{detail} [token {id}]").trim_start().to_string();
        }
        store
            .audit(&AuditEntry {
                t: now_ms(),
                who: self.name.clone(),
                action: action.into(),
                project: project.into(),
                count,
                detail,
            })
            .await
    }
}

/// Why an operation was refused, or failed. The panel answers the first four with a 4xx, the
/// command line prints them.
#[derive(Debug, thiserror::Error)]
pub enum OpsError {
    /// The input is invalid; the reason says why.
    #[error("{0}")]
    Invalid(String),
    /// No project has this slug.
    #[error("no such project {0:?}")]
    NoProject(String),
    /// The thing to change is not there (an account, a block).
    #[error("{0}")]
    NotFound(String),
    /// The thing to create exists.
    #[error("{0}")]
    Conflict(String),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The result of an operation.
pub type OpsResult<T> = Result<T, OpsError>;

/// An [`OpsError::Invalid`] with `reason`.
pub fn invalid(reason: impl Into<String>) -> OpsError {
    OpsError::Invalid(reason.into())
}

/// The settings of project `slug`, or [`OpsError::NoProject`].
pub async fn project(store: &Store, slug: &str) -> OpsResult<Arc<Settings>> {
    if !valid_slug(slug) {
        return Err(OpsError::NoProject(slug.into()));
    }
    store
        .project(slug)
        .await?
        .ok_or_else(|| OpsError::NoProject(slug.into()))
}
