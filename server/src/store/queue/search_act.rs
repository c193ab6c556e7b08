//! Bulk actions on a search's results (the panel's search section): every item a search finds
//! (all its pages, up to [`ACT_MAX`]) released, requeued or dropped from `failed`, or moved to
//! another queue. Each item goes through the same script as the action's own bulk form, which
//! acts only on an item still where the search found it (a claim still the one found, a failed
//! item still failed, a queued item still in its part); a dry run counts what the search finds.

use super::{
    search::{Found, SearchQuery},
    StoreResult,
};
use crate::keys::{PERSONAL, TODO};
use fred::prelude::*;

/// The most items one action takes: a search finding more is refused (narrow it).
pub const ACT_MAX: usize = 100_000;
/// Items per script call.
const CHUNK: usize = 500;

/// What to do with the items found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SearchAction {
    /// Claimed items back to their queue (`todo`), if still the claim found.
    Release,
    /// Failed items back to `todo`.
    Requeue,
    /// Failed items dropped.
    Drop,
    /// Queued items to queue `to` (each into the part its pattern limit says).
    Move { to: String },
}

/// What an action found and did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Acted {
    /// Items the search found.
    pub found: u64,
    /// Items the action changed (0 on a dry run).
    pub changed: u64,
    /// More than [`ACT_MAX`] found: nothing was done.
    pub too_many: bool,
}

impl super::Queue<'_> {
    /// Runs `action` on every item `q` finds in project `slug` (its cursor and limit ignored);
    /// on a dry run, only counts them.
    pub async fn act_on_search(
        self,
        slug: &str,
        q: &SearchQuery,
        action: &SearchAction,
        who: &str,
        now_ms: u64,
        dry_run: bool,
    ) -> StoreResult<Acted> {
        let mut q = q.clone();
        q.limit = super::search::MAX_LIMIT;
        q.cursor = None;
        let mut found = Vec::new();
        loop {
            let page = self.search_items(slug, &q, now_ms).await?;
            // Items on disk are not acted on: their state changes only in Redis.
            let in_redis = |f: &Found| !f.state.starts_with(super::search::DISK_STATE);
            found.extend(page.items.into_iter().filter(in_redis));
            if found.len() > ACT_MAX {
                return Ok(Acted {
                    found: found.len() as u64,
                    changed: 0,
                    too_many: true,
                });
            }
            match page.cursor {
                Some(c) => q.cursor = super::search::parse_cursor(&c).unwrap_or(None),
                None => break,
            }
            if q.cursor.is_none() {
                break;
            }
        }
        // A scan may find an item twice.
        found.sort_by(|a, b| a.item.cmp(&b.item));
        found.dedup_by(|a, b| a.item == b.item);
        let mut acted = Acted {
            found: found.len() as u64,
            ..Default::default()
        };
        if dry_run || found.is_empty() {
            return Ok(acted);
        }
        let k = self.keys.project(slug);
        let patterns = self.projects().patterns(slug).await?;
        let client = self.pool.next();
        for chunk in found.chunks(CHUNK) {
            let n: u64 = match action {
                SearchAction::Release => {
                    let mut args = vec![
                        Value::from(k.prefix()),
                        Value::from(now_ms as i64),
                        Value::from(who),
                    ];
                    for f in chunk.iter().filter(|f| f.state == "claimed") {
                        let Some(t) = f.claimed_at else { continue };
                        args.push(Value::from(f.item.as_str()));
                        args.push(Value::from(t as i64));
                        args.push(Value::from(format!("{TODO}{}", patterns.part_of(&f.item))));
                    }
                    if args.len() == 3 {
                        continue;
                    }
                    let keys = k.release_items_keys();
                    self.scripts
                        .run(client, &self.scripts.release_items, keys, args)
                        .await?
                }
                SearchAction::Requeue | SearchAction::Drop => {
                    let items: Vec<String> = chunk
                        .iter()
                        .filter(|f| f.state == "failed")
                        .map(|f| f.item.clone())
                        .collect();
                    let requeue = *action == SearchAction::Requeue;
                    self.resolve_failed(slug, Some(&items), requeue, who, now_ms, false)
                        .await?
                }
                SearchAction::Move { to } => {
                    let mut args = vec![Value::from(k.prefix())];
                    for f in chunk {
                        // Only queue parts: a personal queue's items are counted apart.
                        let queued = !["claimed", "done", "failed"].contains(&f.state.as_str())
                            && !f.state.starts_with(PERSONAL);
                        if !queued {
                            continue;
                        }
                        let dest = format!("{to}{}", patterns.part_of(&f.item));
                        if dest == f.state {
                            continue;
                        }
                        args.push(Value::from(f.state.as_str()));
                        args.push(Value::from(dest));
                        args.push(Value::from(f.item.as_str()));
                    }
                    if args.len() == 1 {
                        continue;
                    }
                    self.scripts
                        .run(client, &self.scripts.move_items, k.queue_order_keys(), args)
                        .await?
                }
            };
            acted.changed += n;
        }
        Ok(acted)
    }
}
