//! The store's slice of upkeep: `tracker check` (every item in exactly one state), recounts,
//! and `tracker migrate`'s writes, reached through [`Upkeep`] (`store.upkeep()`).

pub mod check;
pub mod migrate;

use super::redis_core::*;
use super::{helpers, scripts};
use super::{offload, queue};

super::redis_core::handle!(
    Upkeep,
    upkeep,
    "The store's upkeep slice: a view of the store whose methods are its operations."
);
