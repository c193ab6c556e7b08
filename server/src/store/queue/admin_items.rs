//! Bulk item operations of the admin panel: claims grouped by downloader, release by filter,
//! moving and clearing queues, failed items. Every change is a Lua script; filters are matched
//! here and the scripts re-check each item, so a dry run and the real run agree on a quiet project.

use super::{helpers::zscan_page, StoreResult};
use crate::keys::{QUEUES, TODO};
use fred::prelude::*;
use regex::Regex;
use std::collections::{BTreeMap, BTreeSet, HashMap};

pub use app::model::admin::{ClaimGroup, FailedItem};

/// How many items one bulk script call carries.
const BULK: usize = 1000;

/// Which claims an admin release takes back; every set field must match.
#[derive(Clone, Debug, Default)]
pub struct ClaimFilter {
    /// Claimed at or before this time (ms).
    pub before_ms: Option<u64>,
    /// The claimant.
    pub downloader: Option<String>,
    /// One item.
    pub item: Option<String>,
    /// Item names matching this expression.
    pub regex: Option<Regex>,
}

/// One claim as read: item, claim time (ms), record.
struct Claim {
    item: String,
    t: u64,
    d: String,
    ip: String,
}

impl super::Queue<'_> {
    async fn read_claims(self, slug: &str) -> StoreResult<Vec<Claim>> {
        let k = self.keys.project(slug);
        let client = self.pool.next();
        let out: Vec<(String, f64)> = client
            .zrange(k.out(), 0, -1, None, false, None, true)
            .await?;
        let records: HashMap<String, String> = client.hgetall(k.claims()).await?;
        Ok(out
            .into_iter()
            .map(|(item, t)| {
                let rec = records
                    .get(&item)
                    .and_then(|r| serde_json::from_str::<serde_json::Value>(r).ok())
                    .unwrap_or_default();
                Claim {
                    t: t as u64,
                    d: rec["d"].as_str().unwrap_or_default().to_string(),
                    ip: rec["ip"].as_str().unwrap_or_default().to_string(),
                    item,
                }
            })
            .collect())
    }

    /// The claims of a project grouped by downloader, most items first.
    pub async fn claim_groups(self, slug: &str) -> StoreResult<Vec<ClaimGroup>> {
        let mut groups: BTreeMap<String, (ClaimGroup, BTreeSet<String>)> = BTreeMap::new();
        for c in self.read_claims(slug).await? {
            let (g, ips) = groups.entry(c.d.clone()).or_default();
            g.count += 1;
            g.oldest = if g.oldest == 0 {
                c.t
            } else {
                g.oldest.min(c.t)
            };
            ips.insert(c.ip);
        }
        let k = self.keys.project(slug);
        let mut out = Vec::with_capacity(groups.len());
        for (d, (mut g, ips)) in groups {
            let done: Option<f64> = self.pool.next().zscore(k.dl_items(), d.as_str()).await?;
            g.done = done.unwrap_or(0.0) as u64;
            g.downloader = d;
            g.ips = ips.into_iter().filter(|i| !i.is_empty()).collect();
            out.push(g);
        }
        out.sort_by(|a, b| b.count.cmp(&a.count).then(a.downloader.cmp(&b.downloader)));
        Ok(out)
    }

    /// Releases the claims matching `filter` back to `todo` (dry run: counts them); how many.
    pub async fn release_matching(
        self,
        slug: &str,
        filter: &ClaimFilter,
        who: &str,
        now_ms: u64,
        dry_run: bool,
    ) -> StoreResult<u64> {
        let matching: Vec<Claim> = self
            .read_claims(slug)
            .await?
            .into_iter()
            .filter(|c| filter.before_ms.is_none_or(|b| c.t <= b))
            .filter(|c| filter.downloader.as_ref().is_none_or(|d| &c.d == d))
            .filter(|c| filter.item.as_ref().is_none_or(|i| &c.item == i))
            .filter(|c| filter.regex.as_ref().is_none_or(|r| r.is_match(&c.item)))
            .collect();
        if dry_run {
            return Ok(matching.len() as u64);
        }
        let k = self.keys.project(slug);
        let patterns = self.projects().patterns(slug).await?;
        let keys = k.release_items_keys();
        let mut released = 0;
        for chunk in matching.chunks(BULK) {
            let mut args = vec![
                Value::from(k.prefix()),
                Value::from(now_ms as i64),
                Value::from(who),
            ];
            for c in chunk {
                args.push(Value::from(c.item.as_str()));
                args.push(Value::from(c.t as i64));
                args.push(Value::from(format!("{TODO}{}", patterns.part_of(&c.item))));
            }
            let n: u64 = self
                .scripts
                .run(
                    self.pool.next(),
                    &self.scripts.release_items,
                    keys.clone(),
                    args,
                )
                .await?;
            released += n;
        }
        Ok(released)
    }

    /// The parts (key suffixes) of queue `queue`, as the claim order lists them.
    async fn queue_parts(self, slug: &str, queue: &str) -> StoreResult<Vec<String>> {
        let order: Option<String> = self
            .pool
            .next()
            .hget(self.keys.project(slug).meta(), "queues")
            .await?;
        let order = order.unwrap_or_else(|| QUEUES.join(","));
        Ok(order
            .split(',')
            .map(|g| g.split(' ').filter(|p| !p.is_empty()).collect::<Vec<_>>())
            .find(|parts| parts.first() == Some(&queue))
            .map(|parts| parts.into_iter().map(String::from).collect())
            .unwrap_or_else(|| vec![queue.to_string()]))
    }

    /// Moves the items of queue `from` (those matching `regex`, or all) to queue `to`, each
    /// into the part its pattern limit says (dry run: counts them); how many.
    pub async fn move_items(
        self,
        slug: &str,
        from: &str,
        to: &str,
        regex: Option<&Regex>,
        dry_run: bool,
    ) -> StoreResult<u64> {
        let k = self.keys.project(slug);
        let patterns = self.projects().patterns(slug).await?;
        let client = self.pool.next();
        let mut total = 0;
        for part in self.queue_parts(slug, from).await? {
            let key = k.key(&part);
            if dry_run && regex.is_none() {
                let n: u64 = client.zcard(&key).await?;
                total += n;
                continue;
            }
            let mut cursor = "0".to_string();
            loop {
                let (next, page) = zscan_page(client, &key, &cursor).await?;
                let items: Vec<&String> = page
                    .iter()
                    .filter(|item| regex.is_none_or(|r| r.is_match(item)))
                    .collect();
                if dry_run {
                    total += items.len() as u64;
                } else {
                    for chunk in items.chunks(BULK) {
                        let mut args = vec![Value::from(k.prefix())];
                        for item in chunk {
                            args.push(Value::from(part.as_str()));
                            args.push(Value::from(format!("{to}{}", patterns.part_of(item))));
                            args.push(Value::from(item.as_str()));
                        }
                        let n: u64 = self
                            .scripts
                            .run(client, &self.scripts.move_items, k.queue_order_keys(), args)
                            .await?;
                        total += n;
                    }
                }
                cursor = next;
                if cursor == "0" {
                    break;
                }
            }
        }
        Ok(total)
    }

    /// Drops every item waiting in `queue` (dry run: counts them); how many.
    pub async fn clear_queue(self, slug: &str, queue: &str, dry_run: bool) -> StoreResult<u64> {
        let k = self.keys.project(slug);
        let args = vec![
            Value::from(k.prefix()),
            Value::from(queue),
            Value::from(if dry_run { "1" } else { "0" }),
        ];
        self.scripts
            .run(
                self.pool.next(),
                &self.scripts.clear_queue,
                k.clear_queue_keys(),
                args,
            )
            .await
    }

    /// Up to `limit` failed items (unordered) and how many there are.
    pub async fn failed_items(
        self,
        slug: &str,
        limit: usize,
    ) -> StoreResult<(Vec<FailedItem>, u64)> {
        let k = self.keys.project(slug);
        let client = self.pool.next();
        let total: u64 = client.hlen(k.failed()).await?;
        let reply: (String, Vec<String>) = client
            .custom(
                fred::cmd!("HSCAN"),
                vec![k.failed(), "0".into(), "COUNT".into(), limit.to_string()],
            )
            .await?;
        let items = reply
            .1
            .chunks(2)
            .filter(|c| c.len() == 2)
            .take(limit)
            .map(|c| {
                let v: serde_json::Value = serde_json::from_str(&c[1]).unwrap_or_default();
                FailedItem {
                    item: c[0].clone(),
                    reason: v["reason"].as_str().unwrap_or_default().to_string(),
                    t: v["t"].as_u64().unwrap_or(0),
                }
            })
            .collect();
        Ok((items, total))
    }

    /// Requeues (`requeue`) or drops failed items: the listed ones, or all when `items` is
    /// `None` (dry run: counts them); how many.
    pub async fn resolve_failed(
        self,
        slug: &str,
        items: Option<&[String]>,
        requeue: bool,
        who: &str,
        now_ms: u64,
        dry_run: bool,
    ) -> StoreResult<u64> {
        let k = self.keys.project(slug);
        let client = self.pool.next();
        let items: Vec<String> = match items {
            Some(list) => {
                let mut known = Vec::new();
                for item in list {
                    let exists: bool = client.hexists(k.failed(), item.as_str()).await?;
                    if exists {
                        known.push(item.clone());
                    }
                }
                known
            }
            None => client.hkeys(k.failed()).await?,
        };
        if dry_run {
            return Ok(items.len() as u64);
        }
        let patterns = self.projects().patterns(slug).await?;
        let keys = k.resolve_failed_keys();
        let mut total = 0;
        for chunk in items.chunks(BULK) {
            let mut args = vec![
                Value::from(k.prefix()),
                Value::from(now_ms as i64),
                Value::from(who),
                Value::from(if requeue { "requeue" } else { "drop" }),
            ];
            for item in chunk {
                args.push(Value::from(item.as_str()));
                args.push(Value::from(format!("{TODO}{}", patterns.part_of(item))));
            }
            let n: u64 = self
                .scripts
                .run(client, &self.scripts.resolve_failed, keys.clone(), args)
                .await?;
            total += n;
        }
        Ok(total)
    }

    /// Removes every key of project `slug` and unlists it; how many keys went. The slug is
    /// first marked destroyed ([`crate::keys::Keys::destroyed`]): only such a mark lets the
    /// project's files on disk be deleted ([`crate::store::queue::Queue::forget_destroyed`] once they are).
    ///
    /// Its `meta` goes before the sweep: every script that writes a project's keys, and every
    /// other write to them ([`crate::store::projects::Projects::write_in_project`]), is refused once `meta` is gone. A
    /// write made before is in Redis when the sweep starts, and a full `SCAN` returns every key
    /// that exists from its start to its end; so no key is left behind by a process that has
    /// not heard of the destroy yet.
    pub async fn destroy_project(self, slug: &str) -> StoreResult<(u64, DestroyedMark)> {
        let k = self.keys.project(slug);
        let client = self.pool.next();
        // The mark names the tag this project's files carry: its purge deletes those and no
        // file of a project made again under the slug later ([`crate::store::projects::Projects::files_tag`]).
        let tag = self.projects().files_tag(slug).await?;
        let mark = DestroyedMark::new(super::now_ms(), &tag);
        let _: () = client
            .hset(self.keys.destroyed(), (slug, mark.value.as_str()))
            .await?;
        let _: () = client.srem(self.keys.projects(), slug).await?;
        let mut removed: u64 = client.del(k.meta()).await?;
        let pattern = format!("{}*", escape_glob(k.prefix()));
        let mut cursor = "0".to_string();
        loop {
            let (next, page): (String, Vec<String>) = client
                .scan_page(cursor, pattern.as_str(), Some(1000), None)
                .await?;
            if !page.is_empty() {
                let n: u64 = client.unlink(page).await?;
                removed += n;
            }
            if next == "0" {
                break;
            }
            cursor = next;
        }
        self.forget_settings(slug);
        self.projects().settings_changed().await?;
        Ok((removed, mark))
    }

    /// The destroyed projects whose files may still be on disk, with their marks.
    pub async fn destroyed_projects(self) -> StoreResult<Vec<(String, DestroyedMark)>> {
        let marks: HashMap<String, String> =
            self.pool.next().hgetall(self.keys.destroyed()).await?;
        let legacy = self.keys.segment_tag();
        Ok(marks
            .into_iter()
            .map(|(slug, value)| (slug, DestroyedMark::read(value, &legacy)))
            .collect())
    }

    /// The mark of `slug` if it is marked destroyed (its files may still be on disk).
    pub async fn destroyed_mark(self, slug: &str) -> StoreResult<Option<DestroyedMark>> {
        let value: Option<String> = self.pool.next().hget(self.keys.destroyed(), slug).await?;
        Ok(value.map(|v| DestroyedMark::read(v, &self.keys.segment_tag())))
    }

    /// Clears the destroyed mark of `slug`, the files it names being gone; not a mark a later
    /// destroy of the slug (a project made again) wrote meanwhile, whose files are not.
    pub async fn forget_destroyed(self, slug: &str, mark: &DestroyedMark) -> StoreResult<()> {
        let _: i64 = self
            .scripts
            .run(
                self.pool.next(),
                &self.scripts.delete_if,
                vec![self.keys.destroyed()],
                vec![Value::from(mark.value.as_str()), Value::from(slug)],
            )
            .await?;
        Ok(())
    }

    /// Drops the cached settings of `slug`.
    fn forget_settings(self, slug: &str) {
        self.slice::<super::projects::meta::SettingsCache>()
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(slug);
    }

    /// Redis memory in use, human readable (`INFO memory`).
    pub async fn redis_memory(self) -> StoreResult<String> {
        let info = self.memory_info().await?;
        Ok(info
            .lines()
            .find_map(|l| l.strip_prefix("used_memory_human:"))
            .unwrap_or("?")
            .trim()
            .to_string())
    }

    /// Redis's `used_memory` and `maxmemory` in bytes (0: no cap).
    pub async fn redis_memory_bytes(self) -> StoreResult<(u64, u64)> {
        let info = self.memory_info().await?;
        let field = |name: &str| {
            info.lines()
                .find_map(|l| l.strip_prefix(name))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0)
        };
        Ok((field("used_memory:"), field("maxmemory:")))
    }

    /// `INFO memory`.
    async fn memory_info(self) -> StoreResult<String> {
        let info: String = self
            .pool
            .next()
            .info(Some(fred::types::InfoKind::Memory))
            .await?;
        Ok(info)
    }
}

/// `s` with glob metacharacters escaped, for `SCAN MATCH`.
fn escape_glob(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// A destroyed project's mark ([`crate::keys::Keys::destroyed`]): when, and the tag its files
/// carry (`MS TAG`; a mark written before marks named a tag is `MS`, and its files carry the
/// namespace's tag).
#[derive(Clone, Debug, PartialEq)]
pub struct DestroyedMark {
    /// The mark as stored.
    pub value: String,
    /// The tag that the destroyed project's files carry ([`crate::store::projects::Projects::files_tag`]).
    pub tag: String,
}

impl DestroyedMark {
    fn new(ms: u64, tag: &str) -> Self {
        Self {
            value: format!("{ms} {tag}"),
            tag: tag.to_string(),
        }
    }

    fn read(value: String, namespace_tag: &str) -> Self {
        let tag = value
            .split_once(' ')
            .map(|(_, t)| t.to_string())
            .unwrap_or_else(|| namespace_tag.to_string());
        Self { value, tag }
    }
}
