//! The panel's item search: a page of results (`GET /admin/api/SLUG/search`) and the body of a
//! bulk action on a search's results (`POST /admin/api/SLUG/search/act`).

use serde::{Deserialize, Serialize};

/// One item a search found.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct FoundItem {
    /// Its name.
    pub item: String,
    /// Its state: a queue part's (or personal queue's) name, `claimed`, `done` or `failed`.
    pub state: String,
    /// Who holds it (claimed only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claimant: Option<String>,
    /// When it was claimed, ms (claimed only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claimed_at: Option<u64>,
}

/// One page of a search.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct FoundPage {
    /// The items found.
    pub items: Vec<FoundItem>,
    /// Where the next page starts; `None` after the last.
    pub cursor: Option<String>,
    /// Members the page looked at.
    pub scanned: u64,
}

/// A search as the panel, the admin API (`GET /admin/api/SLUG/search`, query parameters) and
/// `tracker items search` give it: every field text, empty when not set.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema, utoipa::IntoParams))]
#[cfg_attr(feature = "ssr", into_params(parameter_in = Query))]
#[serde(default)]
pub struct SearchParams {
    /// `queued`, a queue part's name, `todo:d` (every personal queue), `claimed`, `done` or
    /// `failed`.
    pub state: String,
    /// A glob on the name (`*`, `?`, `[...]`).
    #[serde(rename = "match")]
    pub glob: String,
    /// A regular expression on the name.
    pub regex: String,
    /// Claimed by this downloader.
    pub claimant: String,
    /// Claimed at least this long ago: `90s`, `15m`, `2h`, `1d 6h`.
    pub older_than: String,
    /// The most items a page holds (default 100, at most 1,000).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit: Option<usize>,
    /// The cursor the page before gave.
    pub cursor: String,
}

/// Body of `POST /admin/api/SLUG/search/act`: the search (its state is required: it says what
/// the action takes; its limit and cursor are not read) and what to do with every item it finds.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
#[serde(default)]
pub struct SearchAct {
    /// The search.
    #[serde(flatten)]
    pub search: SearchParams,
    /// `release` (claimed), `requeue` or `drop` (failed), `move` (queued).
    pub action: String,
    /// The queue `move` takes the items to.
    pub to: String,
    /// Only count.
    pub dry_run: bool,
}
