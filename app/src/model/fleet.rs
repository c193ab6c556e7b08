//! The public view of the fleet: Warrior HQ's instances counted per selected project and per
//! whole degree of position (`GET /api/stats.json`, and the home page's world map).

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// `GET /api/stats.json`: the Warrior HQ instances heard from in the last 15 minutes.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FleetStats {
    /// Warriors heard from.
    pub warriors: u64,
    /// Warriors per selected project (`auto` for those that let HQ choose, `""` for none yet).
    pub projects: BTreeMap<String, u64>,
    /// Where they are, rounded to whole degrees: `[latitude, longitude, warriors]`.
    pub positions: Vec<(i32, i32, u64)>,
}

impl FleetStats {
    /// Warriors that said where they are.
    pub fn placed(&self) -> u64 {
        self.positions.iter().map(|p| p.2).sum()
    }
}
