//! The store's slice of the queue engine: adding, claiming, reporting done, releasing, where an
//! item is, the panel's bulk operations, the backfeed filter, search and its actions, what each
//! backfeed key fed, scoring old queues, reached through [`Queue`] (`store.queue()`).

pub mod add;
pub mod admin_items;
pub mod bloom;
pub mod fed;
pub mod item_status;
pub mod items;
pub mod release;
pub mod search;
pub mod search_act;
pub mod shuffle;

use super::redis_core::*;
use super::{figures, offload, people, projects};
use super::{helpers, scripts};

super::redis_core::handle!(
    Queue,
    queue,
    "The store's queue slice: a view of the store whose methods are its operations."
);
