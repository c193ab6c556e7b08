//! Pipeline tokens in the admin API (`/admin/api/pipelines`): what a pipeline is, as listed and
//! as created (its secret shown that once).

use serde::{Deserialize, Serialize};

/// A pipeline: a client (a grab script, a fleet of them) that claims with its own token. Never
/// carries the secret; only the secret's SHA-256 is stored.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct Pipeline {
    /// `[A-Za-z0-9_.-]{1,64}`, unique; names the pipeline in claim records and the audit log.
    pub name: String,
    /// Up to 16 tags, each `[a-z0-9_-]{1,32}`: a project restricted to tags serves only
    /// pipelines carrying one of them.
    #[serde(default)]
    pub tags: Vec<String>,
    /// Served only by projects that name one of its tags.
    #[serde(default)]
    pub match_only: bool,
    /// Created (ms).
    #[serde(default)]
    pub t: u64,
}

/// Answer of `POST /admin/api/pipelines`: the only time the secret is shown.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(utoipa::ToSchema))]
pub struct CreatedPipeline {
    /// The pipeline as listed.
    #[serde(flatten)]
    pub pipeline: Pipeline,
    /// The secret, sent inside the tracker URL (`/SLUG/token=SECRET/`) or as
    /// `Authorization: Bearer SECRET`.
    pub secret: String,
}
