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
//! | [`listing`] | a project's Warrior listing: checks, `KEY=VALUE` changes, saving |
//! | [`accounts`] | creating accounts, changing them, password hashes |
//! | [`pipelines`] | issuing, listing and revoking pipeline tokens |

pub mod accounts;
pub mod blocks;
pub mod items;
pub mod lines;
pub mod listing;
pub mod pipelines;
pub mod projects;
pub mod settings;

pub use settings::validate_settings;

use crate::store::{valid_slug, Settings, Store, StoreError};
use std::sync::Arc;

pub use crate::store::{Actor, CLI_ACTOR};

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
        .projects()
        .project(slug)
        .await?
        .ok_or_else(|| OpsError::NoProject(slug.into()))
}
