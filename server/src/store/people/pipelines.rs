//! Pipeline tokens (after mnbot's pipelines): a name, tags and a match-only flag, found by the
//! SHA-256 of their secret (the secret itself is never stored), and which projects may serve
//! which pipeline ([`may_serve`], which `claim.lua` applies atomically with each claim).
//!
//! A process keeps what it looked up for at most [`PIPELINE_TTL`]. A revocation bumps the
//! settings version, so the revoking process forgets at once and the others within the settings
//! version's check (half a second while they serve); the TTL bounds the rest.

use super::{projects::meta::valid_part_name, tokens::token_hash, StoreResult};
use fred::prelude::*;
use serde::{Deserialize, Serialize};
use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

pub use app::model::admin::{CreatedPipeline, Pipeline};

/// The most pipelines one install holds.
pub const MAX_PIPELINES: u64 = 10_000;

/// The most tags of a pipeline, or of a project.
pub const MAX_TAGS: usize = 16;

/// How long a process trusts a secret it looked up (or found unknown).
pub const PIPELINE_TTL: Duration = Duration::from_secs(5);

/// The most lookups a process keeps; past it the cache starts over, so a flood of made-up
/// secrets costs Redis reads, never memory.
const CACHE_CAP: usize = 10_000;

/// Secrets looked up by this process: the SHA-256 of a secret -> when, and what it named.
#[derive(Default)]
pub struct PipelineCache(Mutex<Lookups>);

impl std::ops::Deref for PipelineCache {
    type Target = Mutex<Lookups>;
    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

/// What [`PipelineCache`] guards.
pub type Lookups = HashMap<String, (Instant, Option<Arc<Pipeline>>)>;

/// What `ns:pipelines` holds per name.
#[derive(Serialize, Deserialize)]
struct Listed {
    hash: String,
    #[serde(flatten)]
    pipeline: Pipeline,
}

/// Whether `name` may name a pipeline: `[A-Za-z0-9_.-]{1,64}`.
pub fn valid_pipeline_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(&b))
}

/// Why `tags` (of a pipeline or a project) cannot be saved, if they cannot: at most
/// [`MAX_TAGS`], each `[a-z0-9_-]{1,32}`, none twice.
pub fn tags_problem(tags: &[String]) -> Option<String> {
    if tags.len() > MAX_TAGS {
        return Some(format!("at most {MAX_TAGS} tags"));
    }
    for (i, tag) in tags.iter().enumerate() {
        if !valid_part_name(tag) {
            return Some(format!("tag {tag:?} must be [a-z0-9_-]{{1,32}}"));
        }
        if tags[..i].contains(tag) {
            return Some(format!("tag {tag:?} is listed twice"));
        }
    }
    None
}

/// Whether a project (`require_token`, `tags`) serves claims of `pipeline` (`None`: a claim
/// without a token). Without a token: unless the project requires one. With one: a project with
/// tags serves only pipelines carrying one of them, and a match-only pipeline is served only by
/// projects naming one of its tags. `claim.lua` decides the same way, in the claim's own step.
pub fn may_serve(
    project_require_token: bool,
    project_tags: &[String],
    pipeline: Option<&Pipeline>,
) -> bool {
    let Some(p) = pipeline else {
        return !project_require_token;
    };
    let shares = p.tags.iter().any(|t| project_tags.contains(t));
    // Sharing a tag always serves; without one, only where the project names no tags and the
    // pipeline is not match-only.
    shares || (project_tags.is_empty() && !p.match_only)
}

impl super::People<'_> {
    /// Stores pipeline `p` under the SHA-256 `hash` of its secret; `false` when its name is
    /// taken, now or by a revoked pipeline (nothing stored then).
    pub async fn create_pipeline(self, p: &Pipeline, hash: &str) -> StoreResult<bool> {
        let client = self.pool.next();
        // A revoked pipeline's name stays its own: claims made under it (their records name
        // it) must not pass to a new pipeline of that name.
        let revoked: bool = client
            .hexists(self.keys.revoked_pipelines(), p.name.as_str())
            .await?;
        if revoked {
            return Ok(false);
        }
        let listed = Listed {
            hash: hash.into(),
            pipeline: p.clone(),
        };
        let listed = serde_json::to_string(&listed).unwrap_or_default();
        // The name first: a pipeline whose secret works is always listed, so it can be revoked.
        let created: bool = client
            .hsetnx(self.keys.pipelines(), p.name.as_str(), listed)
            .await?;
        if !created {
            return Ok(false);
        }
        let record = serde_json::to_string(p).unwrap_or_default();
        let _: () = client
            .set(self.keys.pipeline(hash), record, None, None, false)
            .await?;
        self.forget_pipeline_lookup(hash);
        Ok(true)
    }

    /// Every pipeline, by name (never their secrets).
    pub async fn pipelines(self) -> StoreResult<Vec<Pipeline>> {
        let raw: HashMap<String, String> = self.pool.next().hgetall(self.keys.pipelines()).await?;
        let mut out: Vec<Pipeline> = raw
            .values()
            .filter_map(|v| serde_json::from_str::<Listed>(v).ok())
            .map(|l| l.pipeline)
            .collect();
        out.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(out)
    }

    /// How many pipelines there are.
    pub async fn pipeline_count(self) -> StoreResult<u64> {
        Ok(self.pool.next().hlen(self.keys.pipelines()).await?)
    }

    /// Revokes pipeline `name`; whether it existed. Its secret stops working at once in this
    /// process, and within [`PIPELINE_TTL`] at most in the others (see the module).
    pub async fn revoke_pipeline(self, name: &str) -> StoreResult<bool> {
        let client = self.pool.next();
        let raw: Option<String> = client.hget(self.keys.pipelines(), name).await?;
        let Some(raw) = raw else {
            return Ok(false);
        };
        // The secret's key goes first: once it is gone the secret no longer works.
        if let Ok(l) = serde_json::from_str::<Listed>(&raw) {
            let _: () = client.del(self.keys.pipeline(&l.hash)).await?;
        }
        let _: () = client
            .hset(
                self.keys.revoked_pipelines(),
                (name, super::now_ms().to_string()),
            )
            .await?;
        let _: () = client.hdel(self.keys.pipelines(), name).await?;
        self.projects().settings_changed().await?;
        Ok(true)
    }

    /// The pipeline whose secret is `secret`, if any (cached, see [`PIPELINE_TTL`]).
    pub async fn pipeline_by_secret(self, secret: &str) -> StoreResult<Option<Arc<Pipeline>>> {
        self.projects().check_settings_version().await?;
        let hash = token_hash(secret);
        if let Some((at, found)) = self.with_pipeline_cache(|cache| cache.get(&hash).cloned()) {
            if at.elapsed() < PIPELINE_TTL {
                return Ok(found);
            }
        }
        let raw: Option<String> = self.pool.next().get(self.keys.pipeline(&hash)).await?;
        let found = raw
            .and_then(|r| serde_json::from_str::<Pipeline>(&r).ok())
            .map(Arc::new);
        self.with_pipeline_cache(|cache| {
            if cache.len() >= CACHE_CAP {
                cache.clear();
            }
            cache.insert(hash, (Instant::now(), found.clone()))
        });
        Ok(found)
    }

    fn with_pipeline_cache<R>(self, f: impl FnOnce(&mut Lookups) -> R) -> R {
        f(&mut self
            .slice::<PipelineCache>()
            .lock()
            .unwrap_or_else(|e| e.into_inner()))
    }

    /// Drops what this process knows of the secret hashing to `hash`.
    fn forget_pipeline_lookup(self, hash: &str) {
        self.with_pipeline_cache(|cache| cache.remove(hash));
    }

    /// Drops every lookup of this process (the settings version moved).
    pub(in crate::store) fn forget_cached_pipelines(self) {
        self.with_pipeline_cache(|cache| cache.clear());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pipeline(tags: &[&str], match_only: bool) -> Pipeline {
        Pipeline {
            name: "p".into(),
            tags: tags.iter().map(|t| t.to_string()).collect(),
            match_only,
            t: 0,
        }
    }

    #[test]
    fn projects_serve_pipelines_by_token_and_tags() {
        let tags = |t: &[&str]| t.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        // Without a token: unless the project requires one, whatever its tags.
        assert!(may_serve(false, &[], None));
        assert!(may_serve(false, &tags(&["a"]), None));
        assert!(!may_serve(true, &[], None));
        // Any pipeline, where the project names no tags.
        assert!(may_serve(true, &[], Some(&pipeline(&[], false))));
        assert!(may_serve(false, &[], Some(&pipeline(&["a"], false))));
        // A project with tags: only pipelines carrying one.
        assert!(may_serve(
            true,
            &tags(&["a", "b"]),
            Some(&pipeline(&["b"], false))
        ));
        assert!(!may_serve(
            false,
            &tags(&["a"]),
            Some(&pipeline(&[], false))
        ));
        assert!(!may_serve(
            false,
            &tags(&["a"]),
            Some(&pipeline(&["c"], false))
        ));
        // A match-only pipeline: only projects naming one of its tags.
        assert!(!may_serve(false, &[], Some(&pipeline(&["a"], true))));
        assert!(may_serve(
            false,
            &tags(&["a"]),
            Some(&pipeline(&["a"], true))
        ));
        assert!(!may_serve(
            false,
            &tags(&["b"]),
            Some(&pipeline(&["a"], true))
        ));
    }

    #[test]
    fn names_and_tags_are_checked() {
        assert!(valid_pipeline_name("grab-01.east_2"));
        for bad in ["", "a b", "é", "a/b", &"x".repeat(65)] {
            assert!(!valid_pipeline_name(bad), "{bad:?}");
        }
        let t = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(tags_problem(&t(&["a", "b-c", "d_1"])), None);
        assert!(tags_problem(&t(&["A"])).is_some());
        assert!(tags_problem(&t(&["a", "a"])).is_some());
        assert!(tags_problem(&t(&[""])).is_some());
        let many: Vec<String> = (0..17).map(|i| format!("t{i}")).collect();
        assert!(tags_problem(&many).is_some());
        assert_eq!(tags_problem(&many[..16]), None);
    }
}
