//! Projects: creation, settings, and the event history.

use super::{StoreError, StoreResult};
use crate::keys::QUEUES;
use fred::prelude::*;
use regex::Regex;
use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use app::model::admin::SETTING_FIELDS;
pub use app::model::admin::{PatternLimit, Settings};

/// What `tracker project create` sets.
#[derive(Clone, Debug)]
pub struct NewProject {
    /// `[a-z0-9-]{1,64}`.
    pub slug: String,
    /// Shown on the pages.
    pub title: String,
    /// The byte domains a done reports, e.g. `["data"]`.
    pub domains: Vec<String>,
}

/// The settings of a new project titled `title`: the codec's defaults, one byte domain `data`.
fn defaults(title: &str) -> Settings {
    Settings {
        title: title.to_string(),
        domains: vec!["data".into()],
        ..app::model::admin::default_settings()
    }
}

/// The claim order of `s` written to `meta.queues`: groups by `,`, parts by ` `.
fn queue_order(s: &Settings, shards: &[String]) -> String {
    QUEUES
        .iter()
        .map(|q| {
            let mut parts = vec![q.to_string()];
            if *q == "todo:backfeed" {
                parts.extend(shards.iter().cloned());
            }
            parts.extend(s.pattern_limits.iter().map(|p| format!("{q}#{}", p.name)));
            parts.join(" ")
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// A project's compiled patterns: its pattern limits (which queue part an item goes to), and
/// the shard names a backfeed call may make.
#[derive(Default)]
pub struct Patterns {
    limits: Vec<(String, Regex)>,
    shard: Option<Regex>,
}

impl Patterns {
    /// Whether a backfeed call may make a shard named `name` (already a valid shard name):
    /// it matches the project's `shard_pattern` whole, or the project has none.
    pub fn shard_allowed(&self, name: &str) -> bool {
        self.shard.as_ref().is_none_or(|re| re.is_match(name))
    }

    /// `"#name"` of the first pattern `item` matches, or `""`.
    pub fn part_of(&self, item: &str) -> String {
        self.limits
            .iter()
            .find(|(_, re)| re.is_match(item))
            .map(|(n, _)| format!("#{n}"))
            .unwrap_or_default()
    }
}

/// Whether `slug` is a valid project slug.
pub fn valid_slug(slug: &str) -> bool {
    (1..=64).contains(&slug.len())
        && slug
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !RESERVED_SLUGS.contains(&slug)
}

/// Names a project cannot take: the first path segment of a site route (`/admin/`, `/api/...`,
/// `/board/...`), or a fixed segment of the admin API that would shadow `/admin/api/SLUG`.
const RESERVED_SLUGS: &[&str] = &[
    "admin",
    "api",
    "pkg",
    "now",
    "healthz",
    "backfeed",
    "session",
    "login",
    "logout",
    "setup",
    "overview",
    "projects",
    "blocks",
    "unblock",
    "users",
    "audit",
    "warrior",
    "tokens",
    "board",
    "pipelines",
    "fleet",
    "dictionary",
];

/// Whether `name` may name a pattern limit or shard.
pub fn valid_part_name(name: &str) -> bool {
    (1..=32).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
}

/// The backfeed shards a claim order (`meta.queues`) holds, by name.
fn shards_in(queues: Option<&String>) -> Vec<String> {
    queues
        .map(|q| {
            q.split([',', ' '])
                .filter_map(|p| p.strip_prefix("todo:backfeed:"))
                .map(String::from)
                .collect()
        })
        .unwrap_or_default()
}

/// How long settings read from Redis are reused by this process, unless the settings version
/// changes first (`settings_version`): a safety net for writes made behind the tracker's back.
const SETTINGS_TTL: Duration = Duration::from_secs(10);

/// A project's settings as this process read them, and when.
type Cached = (Instant, Arc<Settings>, Arc<Patterns>);

/// Settings cached per project for [`SETTINGS_TTL`]: this slice's state.
#[derive(Default)]
pub struct SettingsCache(Mutex<HashMap<String, Cached>>);

impl std::ops::Deref for SettingsCache {
    type Target = Mutex<HashMap<String, Cached>>;
    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl super::Projects<'_> {
    /// The tag that ends the names of the files (segments) of project `slug` and names its
    /// log archives' directory: the namespace's ([`crate::keys::Keys::segment_tag`]) and the
    /// project's incarnation, drawn when it was made. A project destroyed and made again under
    /// the same slug, or one of another install sharing the directories, never meets these
    /// files. A project made before projects had an incarnation has the namespace's tag alone.
    pub async fn files_tag(self, slug: &str) -> StoreResult<String> {
        let incarnation: Option<String> = self
            .pool
            .next()
            .hget(self.keys.project(slug).meta(), "incarnation")
            .await?;
        let ns = self.keys.segment_tag();
        Ok(match incarnation {
            Some(i) if valid_part_name(&i) => format!("{ns}-{i}"),
            _ => ns,
        })
    }

    /// Creates a project; fails if it exists.
    pub async fn create_project(self, p: &NewProject) -> StoreResult<()> {
        let k = self.keys.project(&p.slug);
        let client = self.pool.next();
        // A destroyed project's files must be gone first: a new one would inherit them.
        let removing: bool = client
            .hexists(self.keys.destroyed(), p.slug.as_str())
            .await?;
        if removing {
            return Err(StoreError::BeingRemoved);
        }
        let created: bool = client.hsetnx(k.meta(), "title", p.title.as_str()).await?;
        if !created {
            return Err(StoreError::ProjectExists);
        }
        // It knows no items yet; from here on the scripts that add or drop items keep the count
        // (`tracker check` compares it with the items in a state). Set at once, before anything
        // could add to it: a script only counts where a count exists.
        let _: () = client.hset(k.stats(), ("known", 0)).await?;
        // Its queues are scored for random order from the start (claim.lua, `shuffled`); its
        // files carry a tag of its own ([`crate::store::projects::Projects::files_tag`]).
        let incarnation = format!("i{:016x}", rand::random::<u64>());
        let _: () = client
            .hset(
                k.meta(),
                [
                    ("shuffled", "1".to_string()),
                    ("incarnation", incarnation),
                    settings_stamp(),
                ],
            )
            .await?;
        let mut settings = defaults(&p.title);
        settings.domains = p.domains.clone();
        self.save_settings(&p.slug, &settings).await?;
        // Global key, written after the project's own keys: a listed project is complete.
        let _: () = client.sadd(self.keys.projects(), p.slug.as_str()).await?;
        self.settings_changed().await?;
        Ok(())
    }

    /// Writes a project's settings (the caller validated them), with a new stamp.
    pub async fn save_settings(self, slug: &str, s: &Settings) -> StoreResult<()> {
        let k = self.keys.project(slug);
        let client = self.pool.next();
        let meta: HashMap<String, String> = client.hgetall(k.meta()).await?;
        // Shards stay in the claim order once made (items may wait there); declared ones join.
        let mut shards = shards_in(meta.get("queues"));
        for shard in &s.backfeed_shards {
            if !shards.contains(shard) {
                shards.push(shard.clone());
            }
        }
        let shards: Vec<String> = shards
            .iter()
            .map(|s| format!("todo:backfeed:{s}"))
            .collect();
        let mut fields: Vec<(String, String)> = SETTING_FIELDS
            .iter()
            .map(|f| (f.name.to_string(), f.encode(s)))
            .collect();
        fields.push(("queues".into(), queue_order(s, &shards)));
        let (stamp, value) = settings_stamp();
        fields.push((stamp.into(), value));
        for p in &s.pattern_limits {
            fields.push((
                format!("pl:{}", p.name),
                app::model::admin::pattern_limit_value(p),
            ));
        }
        let _: () = client.hset(k.meta(), fields).await?;
        self.settings_changed().await?;
        Ok(())
    }

    /// The backfeed shards in the claim order of `slug` now (read afresh).
    pub async fn backfeed_shards(self, slug: &str) -> StoreResult<Vec<String>> {
        let queues: Option<String> = self
            .pool
            .next()
            .hget(self.keys.project(slug).meta(), "queues")
            .await?;
        Ok(shards_in(queues.as_ref()))
    }

    /// Forgets the backfeed shard queues of `slug` that hold nothing (in Redis or on disk) and
    /// that `declared` does not name; the queue parts retired. A later backfeed of a retired
    /// name makes its queue again.
    pub async fn retire_empty_shards(
        self,
        slug: &str,
        declared: &[String],
    ) -> StoreResult<Vec<String>> {
        #[derive(serde::Deserialize)]
        struct Retired {
            #[serde(deserialize_with = "super::scripts::lua_list")]
            retired: Vec<String>,
        }
        let k = self.keys.project(slug);
        let mut args = vec![Value::from(k.prefix())];
        args.extend(declared.iter().map(|d| Value::from(d.as_str())));
        let reply: Retired = self
            .scripts
            .call(
                self.pool.next(),
                &self.scripts.retire_shards,
                k.retire_shards_keys(),
                args,
            )
            .await?
            .map_err(StoreError::Refused)?;
        Ok(reply.retired)
    }

    /// The slugs of every project, unordered (the hub subscribes to their event channels).
    pub async fn project_slugs(self) -> StoreResult<Vec<String>> {
        Ok(self.pool.next().smembers(self.keys.projects()).await?)
    }

    /// A project's settings, or `None` (cached for a second).
    pub async fn project(self, slug: &str) -> StoreResult<Option<Arc<Settings>>> {
        Ok(self.cached_settings(slug).await?.map(|(s, _)| s))
    }

    /// A project's compiled pattern limits (none for an unknown project).
    pub async fn patterns(self, slug: &str) -> StoreResult<Arc<Patterns>> {
        Ok(self
            .cached_settings(slug)
            .await?
            .map(|(_, p)| p)
            .unwrap_or_default())
    }

    pub(in crate::store) async fn cached_settings(
        self,
        slug: &str,
    ) -> StoreResult<Option<(Arc<Settings>, Arc<Patterns>)>> {
        self.check_settings_version().await?;
        if let Some((at, s, p)) = self
            .slice::<SettingsCache>()
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(slug)
        {
            if at.elapsed() < SETTINGS_TTL {
                return Ok(Some((s.clone(), p.clone())));
            }
        }
        let meta: HashMap<String, String> = self
            .pool
            .next()
            .hgetall(self.keys.project(slug).meta())
            .await?;
        let Some(title) = meta.get("title") else {
            return Ok(None);
        };
        // The codec decodes each field; the state is one an operator sets (a derived one
        // stored by an old build reads as what it derives from), and a project saved before
        // `backfeed_shards` existed declares the shards its claim order has.
        let fields: std::collections::BTreeMap<&str, &str> =
            meta.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        let mut settings = app::model::admin::decode_meta(&fields);
        settings.title = title.clone();
        settings.state = app::model::lifecycle::settable(&settings.state).to_string();
        if !meta.contains_key("backfeed_shards") {
            settings.backfeed_shards = shards_in(meta.get("queues"));
        }
        let patterns = Patterns {
            limits: settings
                .pattern_limits
                .iter()
                .filter_map(|p| Some((p.name.clone(), Regex::new(&p.pattern).ok()?)))
                .collect(),
            // Anchored whole: `periodic\d+` admits `periodic2026330`, not `xperiodic1`.
            shard: (!settings.shard_pattern.is_empty())
                .then(|| Regex::new(&format!("^(?:{})$", settings.shard_pattern)).ok())
                .flatten(),
        };
        let entry = (Arc::new(settings), Arc::new(patterns));
        self.slice::<SettingsCache>()
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(
                slug.to_string(),
                (Instant::now(), entry.0.clone(), entry.1.clone()),
            );
        Ok(Some(entry))
    }
}

/// A new value of `meta`'s `stamp`, the field written in the same command as any change of
/// the settings or the fields that follow from them: the scripts keep the settings they read
/// (`_lib.lua`, `project_settings`) only while the stamp is the one they read them with.
pub(crate) fn settings_stamp() -> (&'static str, String) {
    ("stamp", format!("{:016x}", rand::random::<u64>()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_that_would_shadow_a_route_are_refused() {
        assert!(valid_slug("warrior-project-2"));
        for taken in ["admin", "api", "pkg", "users", "audit", "login"] {
            assert!(!valid_slug(taken), "{taken}");
        }
        assert!(!valid_slug("Caps") && !valid_slug("") && !valid_slug("a/b"));
    }
}
