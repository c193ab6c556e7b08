//! One item in the admin API: where it is, its decay score, and its last transitions.

use serde::{Deserialize, Serialize};

/// One transition of an item's timeline (the stored line `time event who version`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct TimelineEntry {
    /// When, ms since the epoch.
    pub t: u64,
    /// What: `claimed`, `reclaimed`, `released`, `done`, `failed`, `requeued`, `decayed`, ...
    pub e: String,
    /// Who (empty: nobody, the tracker itself).
    pub d: String,
    /// The claimant's script version (may be empty).
    pub v: String,
    /// The item's score after this transition: on `decayed` lines (stored as `decayed:SCORE`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub score: Option<f64>,
}

impl TimelineEntry {
    /// The entry of one stored line `time event who version` (`-` for none), or `None` for a
    /// line that does not parse.
    pub fn parse(line: &str) -> Option<Self> {
        let mut f = line.splitn(4, ' ');
        let t: u64 = f.next()?.parse().ok()?;
        let mut field = || {
            f.next()
                .filter(|s| *s != "-")
                .unwrap_or_default()
                .to_string()
        };
        let (mut e, d, v) = (field(), field(), field());
        let mut score = None;
        if let Some((event, value)) = e.split_once(':') {
            if let Ok(s) = value.parse::<f64>() {
                score = Some(s);
                e = event.to_string();
            }
        }
        Some(Self { t, e, d, v, score })
    }

    /// Every entry of a stored timeline, oldest first; lines that do not parse are skipped.
    pub fn parse_all(stored: &str) -> Vec<Self> {
        stored.lines().filter_map(Self::parse).collect()
    }
}

/// `GET /admin/api/SLUG/item?name=ITEM`: where an item is and its last transitions.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct ItemInfo {
    /// The item.
    pub item: String,
    /// `todo`, `out`, `done` or `failed`; `None` when the project does not know it.
    pub state: Option<String>,
    /// The queue part it waits in, its claim record, or why it failed (JSON).
    pub detail: String,
    /// Its claimant, when out.
    pub downloader: Option<String>,
    /// Its decay score, when below 1 (decay on and reclaimed at least once; see the project's
    /// `decay_factor`).
    pub score: Option<f64>,
    /// How many times decay took it back from an expired claim.
    pub reclaims: u64,
    /// Its last transitions, oldest first (a current claim's own line last).
    pub timeline: Vec<TimelineEntry>,
}
