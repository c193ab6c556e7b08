//! The store's slice of projects: creation, settings and their cache, the settings version
//! every process follows, Warrior listings and lifecycle, plain writes into a project,
//! dictionaries, blocks and upload targets, reached through [`Projects`] (`store.projects()`).

pub mod blocks;
pub mod dictionary;
pub mod guarded;
pub mod listing;
pub mod meta;
pub mod settings_version;

use super::redis_core::*;
use super::scripts;

super::redis_core::handle!(
    Projects,
    projects,
    "The store's projects slice: a view of the store whose methods are its operations."
);
