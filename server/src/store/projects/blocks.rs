//! Blocks (per project and global), the rescue-me limiter, upload targets and upload reports.

use super::{
    scripts::{Accepted, Refusal},
    StoreError, StoreResult,
};
use fred::prelude::*;
use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

pub use app::model::admin::BlockEntry;

/// What the block lists hold: `ip` or downloader names (`dl`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlockKind {
    /// An IP address.
    Ip,
    /// A downloader name.
    Downloader,
}

impl BlockKind {
    fn key(self) -> &'static str {
        match self {
            BlockKind::Ip => "ip",
            BlockKind::Downloader => "dl",
        }
    }
}

/// How long this process reuses the global block list it read.
/// Reuse of the global block lists, unless the settings version changes first.
const GLOBAL_BLOCKS_TTL: Duration = Duration::from_secs(10);

/// The global block lists as last read.
#[derive(Default)]
pub struct GlobalBlocksCache(Mutex<Option<(Instant, Arc<GlobalBlocks>)>>);

impl std::ops::Deref for GlobalBlocksCache {
    type Target = Mutex<Option<(Instant, Arc<GlobalBlocks>)>>;
    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

/// The global block lists.
#[derive(Default)]
pub struct GlobalBlocks {
    ips: HashMap<String, BlockEntry>,
    names: HashMap<String, BlockEntry>,
}

fn parse_entries(raw: HashMap<String, String>) -> HashMap<String, BlockEntry> {
    raw.into_iter()
        .map(|(k, v)| (k, serde_json::from_str(&v).unwrap_or_default()))
        .collect()
}

impl super::Projects<'_> {
    /// Counts a rescue-me post from network `net` (an IPv4 address or IPv6 /64) at `now_ms`,
    /// unless `per_minute` posts a minute (as many at once) were counted already: then the
    /// seconds until one may go (at least 1).
    pub async fn rescue_attempt(
        self,
        net: &str,
        per_minute: u64,
        now_ms: u64,
    ) -> StoreResult<Option<u64>> {
        let reply = self
            .scripts
            .call::<Accepted>(
                self.pool.next(),
                &self.scripts.rescue_attempt,
                vec![self.keys.rescue_limiter(net)],
                vec![
                    Value::from(now_ms as i64),
                    Value::from(per_minute.max(1) as i64),
                ],
            )
            .await?;
        match reply {
            Ok(Accepted {}) => Ok(None),
            Err(Refusal::RateLimited { wait_ms }) => Ok(Some(wait_ms.div_ceil(1000).max(1))),
            Err(refusal) => Err(StoreError::Refused(refusal)),
        }
    }

    /// Blocks `value` in project `slug`, or globally when `slug` is `None`.
    pub async fn block(
        self,
        slug: Option<&str>,
        kind: BlockKind,
        value: &str,
        entry: &BlockEntry,
    ) -> StoreResult<()> {
        let key = match slug {
            Some(slug) => self.keys.project(slug).blocked(kind.key()),
            None => self.keys.global_blocked(kind.key()),
        };
        let json = serde_json::to_string(entry).unwrap_or_default();
        let _: () = self.pool.next().hset(key, (value, json)).await?;
        self.settings_changed().await?;
        Ok(())
    }

    /// Lifts a block; whether there was one.
    pub async fn unblock(
        self,
        slug: Option<&str>,
        kind: BlockKind,
        value: &str,
    ) -> StoreResult<bool> {
        let key = match slug {
            Some(slug) => self.keys.project(slug).blocked(kind.key()),
            None => self.keys.global_blocked(kind.key()),
        };
        let n: u64 = self.pool.next().hdel(key, value).await?;
        self.settings_changed().await?;
        Ok(n > 0)
    }

    /// The entries of a block list.
    pub async fn blocks(
        self,
        slug: Option<&str>,
        kind: BlockKind,
    ) -> StoreResult<HashMap<String, BlockEntry>> {
        let key = match slug {
            Some(slug) => self.keys.project(slug).blocked(kind.key()),
            None => self.keys.global_blocked(kind.key()),
        };
        Ok(parse_entries(self.pool.next().hgetall(key).await?))
    }

    /// Whether `ip` or `downloader` is on the global block list (read at most once a second).
    pub async fn globally_blocked(self, ip: &str, downloader: &str) -> StoreResult<bool> {
        self.check_settings_version().await?;
        let cached = self
            .slice::<GlobalBlocksCache>()
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let lists = match cached {
            Some((at, lists)) if at.elapsed() < GLOBAL_BLOCKS_TTL => lists,
            _ => {
                let client = self.pool.next();
                let ips: HashMap<String, String> =
                    client.hgetall(self.keys.global_blocked("ip")).await?;
                let names: HashMap<String, String> =
                    client.hgetall(self.keys.global_blocked("dl")).await?;
                let lists = Arc::new(GlobalBlocks {
                    ips: parse_entries(ips),
                    names: parse_entries(names),
                });
                *self
                    .slice::<GlobalBlocksCache>()
                    .lock()
                    .unwrap_or_else(|e| e.into_inner()) = Some((Instant::now(), lists.clone()));
                lists
            }
        };
        let now = super::now_ms();
        let hit =
            |m: &HashMap<String, BlockEntry>, k: &str| m.get(k).is_some_and(|e| e.active(now));
        Ok(hit(&lists.ips, ip) || hit(&lists.names, downloader))
    }

    /// Adds (or re-activates) an upload target; `active` false deactivates it.
    pub async fn set_upload_target(
        self,
        slug: &str,
        target: &str,
        active: bool,
    ) -> StoreResult<()> {
        let _: () = self
            .pool
            .next()
            .hset(
                self.keys.project(slug).targets(),
                (target, if active { "1" } else { "0" }),
            )
            .await?;
        self.settings_changed().await?;
        Ok(())
    }

    /// Removes an upload target.
    pub async fn remove_upload_target(self, slug: &str, target: &str) -> StoreResult<()> {
        let _: () = self
            .pool
            .next()
            .hdel(self.keys.project(slug).targets(), target)
            .await?;
        self.settings_changed().await?;
        Ok(())
    }

    /// Upload targets with whether each is active.
    pub async fn upload_targets(self, slug: &str) -> StoreResult<Vec<(String, bool)>> {
        let all: HashMap<String, String> = self
            .pool
            .next()
            .hgetall(self.keys.project(slug).targets())
            .await?;
        let mut v: Vec<(String, bool)> = all.into_iter().map(|(t, a)| (t, a == "1")).collect();
        v.sort();
        Ok(v)
    }

    /// Records an `uploaded` report (the last 1,000 are kept).
    pub async fn record_upload(self, slug: &str, report: &serde_json::Value) -> StoreResult<()> {
        let key = self.keys.project(slug).uploads();
        let push = super::guarded::command(["LPUSH", &key, &report.to_string()]);
        let trim = super::guarded::command(["LTRIM", &key, "0", "999"]);
        self.write_in_project(slug, vec![push, trim]).await?;
        Ok(())
    }
}
