//! The store's slice of people: admin accounts and logins, API tokens, pipelines, reached
//! through [`People`] (`store.people()`).

pub mod accounts;
pub mod pipelines;
pub mod tokens;

use super::projects;
use super::redis_core::*;
use super::scripts;

super::redis_core::handle!(
    People,
    people,
    "The store's people slice: a view of the store whose methods are its operations."
);
