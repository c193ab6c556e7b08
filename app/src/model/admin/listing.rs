//! How a project is offered to Warriors (its entry in the generated `projects.json`), its
//! lifecycle as recorded, and the choice of `auto_project`.

use crate::model::lifecycle::Transition;
use serde::{Deserialize, Serialize};

/// A project's Warrior listing: the fields of its `projects.json` entry that are not settings
/// already (name, title, description and state are). `GET`/`PUT /admin/api/SLUG/listing`. A
/// listed project needs its repository; URLs and the host are trimmed of spaces at either end.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct Listing {
    /// Offered to Warriors at all (a project also needs a repository to be listed).
    #[serde(default = "yes")]
    pub listed: bool,
    /// The pipeline's git repository (required by the Warrior when listed): an `https://` URL
    /// of a host, at most 1024 bytes, without spaces, control characters or quotes.
    #[serde(default)]
    #[cfg_attr(
        feature = "ssr",
        schema(
            max_length = 1024,
            pattern = r#"^\s*(https://[A-Za-z0-9:\[\]][A-Za-z0-9.:\[\]-]*([/?#][^\s"'`\\\x00-\x1f\x7f]*)?)?\s*$"#
        )
    )]
    pub repository: String,
    /// A logo URL, as the repository's (but `http://` too), or empty.
    #[serde(default)]
    #[cfg_attr(
        feature = "ssr",
        schema(
            max_length = 1024,
            pattern = r#"^\s*(https?://[A-Za-z0-9:\[\]][A-Za-z0-9.:\[\]-]*([/?#][^\s"'`\\\x00-\x1f\x7f]*)?)?\s*$"#
        )
    )]
    pub logo: String,
    /// `%Y-%m-%dT%H:%M:%SZ`, or empty.
    #[serde(default)]
    #[cfg_attr(
        feature = "ssr",
        schema(pattern = "^\\s*([0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z)?\\s*$")
    )]
    pub deadline: String,
    /// The site's host name shown by the Warrior, or empty: at most 253 characters.
    #[serde(default)]
    #[cfg_attr(feature = "ssr", schema(pattern = "^\\s*[A-Za-z0-9.:-]{0,253}\\s*$"))]
    pub host: String,
    /// HTML of the project's marker on the Warrior's map (sanitised when saved), at most
    /// 4096 bytes.
    #[serde(default)]
    #[cfg_attr(feature = "ssr", schema(max_length = 4096))]
    pub marker_html: String,
    /// The marker's position, `[lat, lng]`: latitude -90 to 90, longitude -180 to 180.
    #[serde(default)]
    pub lat_lng: Option<[f64; 2]>,
    /// Its share of "auto" Warriors, 0 to 1000: today's Warrior picks among the projects of
    /// Warrior HQ's `auto_projects_config` by weight (0: not among them). A global admin's to
    /// set.
    #[serde(default)]
    #[cfg_attr(feature = "ssr", schema(maximum = 1000))]
    pub weight: u32,
    /// The repository a global admin approved for the fleet (`None`: a listing saved before
    /// approvals, taken as approved). Warriors are given only an approved repository: a
    /// project admin's new repository, or a first listing, waits for a global admin, whose save
    /// approves what it saves (meanwhile the one approved before is served). Set by the
    /// tracker, never taken from a caller.
    #[serde(default)]
    pub approved: Option<String>,
}

impl Listing {
    /// The repository Warriors are given: the approved one (while a change waits, the one
    /// approved before), or `None` when the project is not offered (not listed, or nothing
    /// approved).
    pub fn served_repository(&self) -> Option<&str> {
        if !self.listed {
            return None;
        }
        let r = match &self.approved {
            Some(a) => a.as_str(),
            None => self.repository.as_str(),
        };
        (!r.is_empty()).then_some(r)
    }

    /// Whether Warriors are offered this project.
    pub fn offered(&self) -> bool {
        self.served_repository().is_some()
    }

    /// Whether a change of the repository waits for a global admin's approval.
    pub fn pending(&self) -> bool {
        self.approved
            .as_ref()
            .is_some_and(|a| *a != self.repository)
    }
}

fn yes() -> bool {
    true
}

impl Default for Listing {
    fn default() -> Self {
        Listing {
            listed: true,
            repository: String::new(),
            logo: String::new(),
            deadline: String::new(),
            host: String::new(),
            marker_html: String::new(),
            lat_lng: None,
            weight: 0,
            approved: None,
        }
    }
}

/// `GET /admin/api/SLUG/listing` (and the answer of a `PUT`): the listing, the project's state
/// now, its recorded state changes (newest first), and its `projects.json` entry as served
/// (`null` when it is not listed).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct ProjectListing {
    /// The listing.
    pub listing: Listing,
    /// The lifecycle state now.
    pub state: String,
    /// Recorded state changes, newest first.
    pub transitions: Vec<Transition>,
    /// The entry Warriors get, or `null`.
    pub entry: serde_json::Value,
}

/// One project `auto_project` may go to, in the order of the choice.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct AutoCandidate {
    /// Slug.
    pub slug: String,
    /// Niceness (lower first).
    pub priority: i64,
    /// Lifecycle state.
    pub state: String,
    /// Items waiting.
    pub todo: u64,
    /// Its weight among "auto" Warriors (0: none).
    #[serde(default)]
    pub weight: u32,
}

/// `GET /admin/api/warrior/auto` (and the answer of a `PUT`): the project "auto" Warriors run
/// now, the pin if an admin set one, and the listed projects in the order of the choice.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct AutoProject {
    /// What `projects.json` names as `auto_project` (for Warriors without a pipeline token).
    pub chosen: Option<String>,
    /// The project an admin pinned, if any.
    pub pinned: Option<String>,
    /// Listed projects, best first: active ones with work by niceness, then the others.
    pub candidates: Vec<AutoCandidate>,
    /// Today's Warriors' weighted choice (`auto_projects_config`): each project and its weight,
    /// in the list's order; empty when no weighted project hands out work.
    #[serde(default)]
    pub weights: Vec<(String, u32)>,
}
