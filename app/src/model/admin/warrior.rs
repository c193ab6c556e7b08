//! The Warrior HQ project list (`projects.json`) in the admin API: the list with its versions,
//! the answers of saving and restoring, and the fields a Warrior shows (the panel's preview).

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

/// One saved version of the list.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct WarriorVersion {
    /// Saved at (ms).
    pub t: u64,
    /// Who saved it.
    pub who: String,
}

/// `GET /admin/api/warrior/projects`: the list and its versions, newest first (the first is
/// the current list).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct WarriorList {
    /// The current document, as text.
    pub json: String,
    /// Who saved which version when.
    pub versions: Vec<WarriorVersion>,
}

/// Answer of `PUT /admin/api/warrior/projects`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct SavedList {
    /// The document as sanitised (free JSON: a Warrior list may carry any field).
    pub json: Value,
    /// Whether it was only checked, not saved.
    pub dry_run: bool,
}

/// Answer of `POST /admin/api/warrior/restore`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct RestoredList {
    /// The document now current, as text.
    pub json: String,
}

/// What a Warrior shows of a project list: read leniently (a field of another type reads as
/// absent), since the list is free JSON the server only checks in part.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct WarriorPreview {
    /// A message over the list (sanitised HTML).
    #[serde(default, deserialize_with = "text")]
    pub broadcast_message: String,
    /// The Warrior's own part.
    #[serde(default)]
    pub warrior: WarriorPart,
    /// The projects offered.
    #[serde(default)]
    pub projects: Vec<WarriorEntry>,
}

/// The `warrior` object of a project list.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct WarriorPart {
    /// The seesaw version Warriors must run.
    #[serde(default, deserialize_with = "text")]
    pub seesaw_version: String,
}

/// One project of the list as a Warrior shows it.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct WarriorEntry {
    /// Its name (required by the server).
    #[serde(default, deserialize_with = "text")]
    pub name: String,
    /// Its title, if any.
    #[serde(default, deserialize_with = "some_text")]
    pub title: Option<String>,
    /// Its description (sanitised HTML).
    #[serde(default, deserialize_with = "text")]
    pub description: String,
    /// Its deadline, e.g. `2013-04-30T23:59:59Z`.
    #[serde(default, deserialize_with = "some_text")]
    pub deadline: Option<String>,
    /// Its repository (required by the server).
    #[serde(default, deserialize_with = "text")]
    pub repository: String,
}

impl WarriorEntry {
    /// The title, or the name when it has none.
    pub fn heading(&self) -> &str {
        self.title.as_deref().unwrap_or(&self.name)
    }
}

/// A string field, empty when it is anything else.
fn text<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    Ok(some_text(d)?.unwrap_or_default())
}

/// A string field, `None` when it is anything else.
fn some_text<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Ok(match Value::deserialize(d)? {
        Value::String(s) => Some(s),
        _ => None,
    })
}
