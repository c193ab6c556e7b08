//! The store's slice of Warrior HQ and the fleet: registered warriors, the API's downloaders,
//! the HQ project list and pages of the completion log, reached through [`Fleet`]
//! (`store.fleet()`).

pub mod api_fleet;
pub mod hq;
pub mod project_list;

use super::redis_core::*;

super::redis_core::handle!(
    Fleet,
    fleet,
    "The store's fleet slice: a view of the store whose methods are its operations."
);
