//! Where an item is: its state, claim or queue part, decay score and timeline.

use super::{StoreError, StoreResult};
use app::model::admin::TimelineEntry;
use fred::prelude::*;
use serde::Deserialize;

/// Where an item is, as `item_status.lua` answers it.
#[derive(Deserialize)]
struct Whereabouts {
    state: Place,
    detail: String,
    timeline: String,
    decay: String,
}

/// The states `item_status.lua` names.
#[derive(Deserialize, PartialEq)]
#[serde(rename_all = "lowercase")]
enum Place {
    Out,
    Done,
    Failed,
    Queued,
    Unknown,
}

impl Place {
    fn name(&self) -> Option<&'static str> {
        match self {
            Place::Out => Some("out"),
            Place::Done => Some("done"),
            Place::Failed => Some("failed"),
            Place::Queued => Some("todo"),
            Place::Unknown => None,
        }
    }
}

/// Where an item is (`GET /SLUG/items/ITEM.json`).
#[derive(Clone, Debug, PartialEq)]
pub struct ItemStatus {
    /// `todo`, `out`, `done`, `failed`, or `None` when unknown.
    pub state: Option<String>,
    /// The claimant, when out.
    pub downloader: Option<String>,
    /// The queue part, claim record or failure reason (JSON or name).
    pub detail: String,
    /// The last transitions, JSON array of `{t, e, d, v}` ([`TimelineEntry`]; `decayed` lines
    /// add the `score`).
    pub timeline: String,
    /// The decay score, when below 1.
    pub score: Option<f64>,
    /// How many reclaims decayed it.
    pub reclaims: u64,
}

/// The stored timeline (lines `time event who version`, `-` for none) as a JSON array of
/// [`TimelineEntry`]: `{"t": ms, "e": event, "d": who, "v": version}`, with `"score"` on
/// `decayed` lines.
fn timeline_json(stored: &str) -> String {
    serde_json::to_string(&TimelineEntry::parse_all(stored)).unwrap_or_else(|_| "[]".into())
}

/// The score and reclaims of a stored decay entry `score reclaims` (`None` for none).
fn decay_of(raw: &str) -> (Option<f64>, u64) {
    let mut f = raw.split(' ');
    let score = f.next().and_then(|s| s.parse::<f64>().ok());
    let reclaims = f.next().and_then(|r| r.parse().ok()).unwrap_or(0);
    (score, reclaims)
}

/// The status of an item found on disk.
fn on_disk_status(hit: &super::offload::DiskHit) -> ItemStatus {
    let (state, detail, timeline) = match hit {
        super::offload::DiskHit::Done { id, timeline } => {
            ("done", format!("on disk, segment {id}"), timeline.as_str())
        }
        super::offload::DiskHit::Discarded => (
            "done",
            "discarded: only a filter of its name is left (it may, rarely, be a new name)"
                .to_string(),
            "",
        ),
        super::offload::DiskHit::Queued { part, .. } => ("todo", part.clone(), ""),
    };
    ItemStatus {
        state: Some(state.into()),
        downloader: None,
        detail,
        timeline: timeline_json(timeline),
        score: None,
        reclaims: 0,
    }
}

impl super::Queue<'_> {
    /// Where `item` is: in Redis, else on disk (offloaded). Not on disk either is no proof of
    /// unknown: a Redis restarted without its last second of writes can undo an offload's
    /// commit between the two reads, so Redis is asked again.
    pub async fn item_status(self, slug: &str, item: &str) -> StoreResult<ItemStatus> {
        let mut found = self.whereabouts(slug, item).await?;
        if found.state == Place::Unknown {
            let (_, on_disk) = self
                .offload()
                .find_on_disk(slug, &[item.to_string()])
                .await?;
            if let Some(hit) = on_disk.get(item) {
                return Ok(on_disk_status(hit));
            }
            found = self.whereabouts(slug, item).await?;
        }
        let Whereabouts {
            state,
            detail,
            timeline,
            decay,
        } = found;
        let downloader = (state == Place::Out)
            .then(|| serde_json::from_str::<serde_json::Value>(&detail).ok())
            .flatten()
            .and_then(|c| c["d"].as_str().map(String::from));
        Ok(ItemStatus {
            state: state.name().map(String::from),
            downloader,
            detail,
            timeline: timeline_json(&timeline),
            score: decay_of(&decay).0,
            reclaims: decay_of(&decay).1,
        })
    }

    /// Where `item` is in Redis (`item_status.lua`).
    async fn whereabouts(self, slug: &str, item: &str) -> StoreResult<Whereabouts> {
        let k = self.keys.project(slug);
        let keys = k.item_status_keys();
        let args = vec![Value::from(k.prefix()), Value::from(item)];
        self.scripts
            .call(self.pool.next(), &self.scripts.item_status, keys, args)
            .await?
            .map_err(StoreError::Refused)
    }
}
