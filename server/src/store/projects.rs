//! Projects: creation, settings, listing, and the leaderboard snapshot.

use super::{Store, StoreError, StoreResult};
use crate::keys::{ProjectKeys, HISTORY_LEN};
use app::model::{Counts, DoneEvent, DownloaderRow, Leaderboard, ProjectSummary, RECENT_LEN};
use fred::prelude::*;
use std::collections::{BTreeMap, HashMap};

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

/// A project's settings as the warrior API needs them.
#[derive(Clone, Debug)]
pub struct ProjectInfo {
    /// Slug.
    pub slug: String,
    /// Title.
    pub title: String,
    /// `active`, `paused`, ...
    pub state: String,
    /// Byte domains.
    pub domains: Vec<String>,
}

/// Whether `slug` is a valid project slug.
pub fn valid_slug(slug: &str) -> bool {
    (1..=64).contains(&slug.len())
        && slug
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

impl Store {
    /// Creates a project; fails if it exists.
    pub async fn create_project(&self, p: &NewProject) -> StoreResult<()> {
        let k = self.keys.project(&p.slug);
        let client = self.pool.next();
        let created: bool = client.hsetnx(k.meta(), "title", p.title.as_str()).await?;
        if !created {
            return Err(StoreError::ProjectExists);
        }
        let fields = [
            ("state", "active".to_string()),
            ("domains", p.domains.join(",")),
        ];
        let _: () = client.hset(k.meta(), fields.to_vec()).await?;
        // Global key, written after the project's own keys: a listed project is complete.
        let _: () = client.sadd(self.keys.projects(), p.slug.as_str()).await?;
        Ok(())
    }

    /// A project's settings, or `None`.
    pub async fn project(&self, slug: &str) -> StoreResult<Option<ProjectInfo>> {
        let meta: HashMap<String, String> = self
            .pool
            .next()
            .hgetall(self.keys.project(slug).meta())
            .await?;
        let Some(title) = meta.get("title") else {
            return Ok(None);
        };
        Ok(Some(ProjectInfo {
            slug: slug.to_string(),
            title: title.clone(),
            state: meta
                .get("state")
                .cloned()
                .unwrap_or_else(|| "active".into()),
            domains: meta
                .get("domains")
                .map(|d| {
                    d.split(',')
                        .filter(|s| !s.is_empty())
                        .map(String::from)
                        .collect()
                })
                .unwrap_or_default(),
        }))
    }

    /// Every project with its counts, by slug.
    pub async fn list_projects(&self) -> StoreResult<Vec<ProjectSummary>> {
        let mut slugs: Vec<String> = self.pool.next().smembers(self.keys.projects()).await?;
        slugs.sort();
        let mut out = Vec::with_capacity(slugs.len());
        for slug in slugs {
            if let Some(b) = self.leaderboard(&slug, 0, 0).await? {
                out.push(ProjectSummary {
                    slug,
                    title: b.title,
                    counts: b.counts,
                });
            }
        }
        Ok(out)
    }

    /// The leaderboard of `slug` with the top `downloaders` (all when `None`) and `recent`
    /// completions, read atomically; `None` when there is no such project.
    pub async fn leaderboard(
        &self,
        slug: &str,
        downloaders: i64,
        recent: usize,
    ) -> StoreResult<Option<Leaderboard>> {
        let k = self.keys.project(slug);
        let keys = snapshot_keys(&k);
        let args = vec![
            Value::from(downloaders),
            Value::from(recent.min(HISTORY_LEN) as i64),
        ];
        let reply: Value = self
            .scripts
            .run(self.pool.next(), &self.scripts.snapshot, keys, args)
            .await?;
        parse_snapshot(slug, reply)
    }
}

fn snapshot_keys(k: &ProjectKeys) -> Vec<String> {
    let mut keys = vec![
        k.meta(),
        k.stats(),
        k.out(),
        k.dl_items(),
        k.dl_bytes(),
        k.domain_bytes(),
        k.seq(),
        k.history(),
    ];
    keys.extend(k.queues());
    keys
}

fn bad(detail: impl Into<String>) -> StoreError {
    StoreError::Reply {
        script: "snapshot",
        detail: detail.into(),
    }
}

fn num(v: &Value) -> u64 {
    match v {
        Value::Integer(i) => (*i).max(0) as u64,
        Value::Double(d) => d.max(0.0) as u64,
        other => other
            .as_str()
            .and_then(|s| s.parse::<f64>().ok())
            .map(|f| f.max(0.0) as u64)
            .unwrap_or(0),
    }
}

fn text(v: &Value) -> String {
    v.as_str().map(|s| s.to_string()).unwrap_or_default()
}

fn parse_snapshot(slug: &str, reply: Value) -> StoreResult<Option<Leaderboard>> {
    let parts = match reply {
        Value::Integer(-1) => return Ok(None),
        Value::Array(parts) if parts.len() == 9 => parts,
        other => return Err(bad(format!("{other:?}"))),
    };
    let list = |v: &Value| match v {
        Value::Array(a) => Ok(a.clone()),
        other => Err(bad(format!("expected array, got {other:?}"))),
    };
    let domain_bytes: BTreeMap<String, u64> = list(&parts[6])?
        .chunks(2)
        .filter(|c| c.len() == 2)
        .map(|c| (text(&c[0]), num(&c[1])))
        .collect();
    let downloaders = list(&parts[7])?
        .chunks(3)
        .filter(|c| c.len() == 3)
        .map(|c| DownloaderRow {
            name: text(&c[0]),
            items: num(&c[1]),
            bytes: num(&c[2]),
        })
        .collect();
    let recent = list(&parts[8])?
        .iter()
        .filter_map(|v| serde_json::from_str::<DoneEvent>(v.as_str()?.as_ref()).ok())
        .collect();
    Ok(Some(Leaderboard {
        slug: slug.to_string(),
        title: text(&parts[0]),
        seq: num(&parts[1]),
        counts: Counts {
            todo: num(&parts[2]),
            out: num(&parts[3]),
            done: num(&parts[4]),
        },
        total_bytes: num(&parts[5]),
        domain_bytes,
        downloaders,
        recent,
    }))
}

/// The leaderboard page's default: every downloader, the recent completions it shows.
pub const PAGE_RECENT: usize = RECENT_LEN;
