//! Pipeline tokens: issuing one (its secret shown once, only its SHA-256 stored), listing and
//! revoking them; audited as `pipeline.create` and `pipeline.revoke`.

use super::{invalid, Actor, OpsError, OpsResult};
use crate::store::{
    now_ms, tags_problem, token_hash, valid_pipeline_name, CreatedPipeline, Pipeline, Store,
    MAX_PIPELINES,
};

/// What a new pipeline is given.
#[derive(Clone, Debug, Default)]
pub struct NewPipeline {
    /// `[A-Za-z0-9_.-]{1,64}` (trimmed).
    pub name: String,
    /// Its tags (each trimmed; empty ones dropped).
    pub tags: Vec<String>,
    /// Served only by projects naming one of its tags.
    pub match_only: bool,
}

/// The prefix of every pipeline secret (tells it apart from an account's API token, `trk_`).
pub const SECRET_PREFIX: &str = "trp_";

/// Issues a pipeline, audited as `pipeline.create`: its secret is in the answer and nowhere
/// else.
pub async fn create(store: &Store, actor: &Actor, new: NewPipeline) -> OpsResult<CreatedPipeline> {
    let name = new.name.trim().to_string();
    if !valid_pipeline_name(&name) {
        return Err(invalid(
            "A pipeline's name is 1 to 64 of A-Z, a-z, 0-9, '_', '.' and '-'.",
        ));
    }
    let tags: Vec<String> = new
        .tags
        .iter()
        .map(|t| t.trim().to_string())
        .filter(|t| !t.is_empty())
        .collect();
    if let Some(problem) = tags_problem(&tags) {
        return Err(invalid(problem));
    }
    if new.match_only && tags.is_empty() {
        return Err(invalid(
            "A match-only pipeline needs a tag: no project would serve it.",
        ));
    }
    if store.people().pipeline_count().await? >= MAX_PIPELINES {
        return Err(invalid(format!(
            "At most {MAX_PIPELINES} pipelines: revoke one first."
        )));
    }
    let pipeline = Pipeline {
        name,
        tags,
        match_only: new.match_only,
        t: now_ms(),
    };
    let secret = format!("{SECRET_PREFIX}{}", crate::store::random_token(40));
    if !store
        .people()
        .create_pipeline(&pipeline, &token_hash(&secret))
        .await?
    {
        return Err(OpsError::Conflict(format!(
            "A pipeline named {:?} exists, or was revoked (a revoked name is never given again: claims made under it keep it).",
            pipeline.name
        )));
    }
    let detail = format!(
        "{} tags={}{}",
        pipeline.name,
        pipeline.tags.join(","),
        if pipeline.match_only {
            " match-only"
        } else {
            ""
        }
    );
    actor
        .record(store, "pipeline.create", "", 1, detail)
        .await?;
    Ok(CreatedPipeline { pipeline, secret })
}

/// Revokes pipeline `name`, audited as `pipeline.revoke`; [`OpsError::NotFound`] if there is
/// none. Its claims stay its own: they are done or released by an admin, or reclaimed.
pub async fn revoke(store: &Store, actor: &Actor, name: &str) -> OpsResult<()> {
    if !store.people().revoke_pipeline(name).await? {
        return Err(OpsError::NotFound(format!("No pipeline named {name:?}.")));
    }
    actor
        .record(store, "pipeline.revoke", "", 1, name.to_string())
        .await?;
    Ok(())
}
