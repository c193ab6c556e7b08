//! The store's slice of the figures: the fold of the completion log, the lifetime tally, unique
//! contributors, charts and stats, the leaderboard snapshot, reached through [`Figures`]
//! (`store.figures()`).

pub mod contributors;
pub mod fold;
pub mod folder;
pub mod snapshot;
pub mod stats;
pub mod tally;

use super::redis_core::*;
use super::{helpers, scripts};

super::redis_core::handle!(
    Figures,
    figures,
    "The store's figures slice: a view of the store whose methods are its operations."
);
