//! The public view of the fleet: Warrior HQ's instances counted per selected project and per
//! whole degree of position (`GET /api/stats.json`, and the home page's world map).

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// `GET /api/stats.json`: the Warrior HQ instances heard from in the last 15 minutes.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct FleetStats {
    /// Warriors heard from.
    pub warriors: u64,
    /// Warriors per selected project (`auto` for those that let HQ choose, `""` for none yet).
    pub projects: BTreeMap<String, u64>,
    /// Where they are, rounded to whole degrees: `[latitude, longitude, warriors]`.
    pub positions: Vec<(i32, i32, u64)>,
}

/// The most selected projects [`FleetStats`] lists apart (the most selected); the others are
/// counted together under [`OTHER_SELECTED`]. A warrior names any slug it likes: a flood of
/// made-up names stays one line of the page.
pub const MAX_SELECTED: usize = 100;

/// The key the selections past [`MAX_SELECTED`] are counted under (not a possible slug).
pub const OTHER_SELECTED: &str = "(other)";

/// The most distinct positions [`FleetStats`] lists (the most populated; the whole degrees of
/// the globe are ~65,000).
pub const MAX_PLACES: usize = 10_000;

impl FleetStats {
    /// These figures with at most [`MAX_SELECTED`] projects (plus [`OTHER_SELECTED`]) and
    /// [`MAX_PLACES`] positions, the most populated kept; `warriors` unchanged.
    pub fn capped(mut self) -> Self {
        if self.projects.len() > MAX_SELECTED {
            let mut all: Vec<(String, u64)> =
                std::mem::take(&mut self.projects).into_iter().collect();
            all.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
            let other: u64 = all[MAX_SELECTED..].iter().map(|p| p.1).sum();
            all.truncate(MAX_SELECTED);
            self.projects = all.into_iter().collect();
            *self.projects.entry(OTHER_SELECTED.to_string()).or_default() += other;
        }
        if self.positions.len() > MAX_PLACES {
            self.positions
                .sort_by(|a, b| b.2.cmp(&a.2).then_with(|| (a.0, a.1).cmp(&(b.0, b.1))));
            self.positions.truncate(MAX_PLACES);
            self.positions.sort_unstable();
        }
        self
    }

    /// Warriors that said where they are.
    pub fn placed(&self) -> u64 {
        self.positions.iter().map(|p| p.2).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flood_of_names_and_places_is_capped_and_still_counted() {
        let mut stats = FleetStats {
            warriors: 1_000 + 70_000,
            ..Default::default()
        };
        for i in 0..1_000u64 {
            stats.projects.insert(format!("made-up-{i:04}"), 1);
        }
        stats.projects.insert("real".into(), 70_000);
        stats.positions = (0..20_000i32)
            .map(|i| (i / 360 - 60, i % 360 - 180, 1))
            .collect();
        stats.positions[7].2 = 500;
        let capped = stats.capped();
        assert_eq!(capped.projects.len(), MAX_SELECTED + 1);
        assert_eq!(capped.projects["real"], 70_000, "the most selected is kept");
        assert_eq!(
            capped.projects.values().sum::<u64>(),
            71_000,
            "none uncounted"
        );
        assert_eq!(capped.positions.len(), MAX_PLACES);
        assert!(
            capped.positions.iter().any(|p| p.2 == 500),
            "the busiest place is kept"
        );
    }
}
