//! Item search: the items of a project by state, name (a glob Redis matches, or a regular
//! expression matched here), claimant and claim age, a page at a time. A page walks the states'
//! keys with incremental scans (`ZSCAN`, `SSCAN`, `HSCAN`), never a whole-key read, and ends when
//! it holds `limit` items, when its time budget ([`PAGE_BUDGET`]) is spent, or when every key is
//! walked; its cursor says where the next page starts. Personal queues are walked when the
//! project counts items in them (stats `pq`; finding their keys is a scan of the key space).
//! Then the segments on disk that the state asks for ([`disk`]), a block at a time. Their items
//! are found with the state `disk:done` or `disk:PART`. [`super::search_act`] acts on every item
//! a search finds in Redis.
//!
//! A scan's guarantees are Redis's: an item that stays in its state for the whole search is
//! found once at least; one that moves meanwhile may be found twice or not at all.

mod disk;

pub use disk::DISK_STATE;

use super::{helpers::queue_part_keys, StoreResult};
use crate::keys::PERSONAL;
use fred::prelude::*;
use std::time::{Duration, Instant};

/// The longest a page spends scanning.
pub const PAGE_BUDGET: Duration = Duration::from_millis(50);
/// The most items a page holds.
pub const MAX_LIMIT: usize = 1000;

/// What to look for.
#[derive(Clone, Debug, Default)]
pub struct SearchQuery {
    /// `queued` (every queue part and personal queue), a queue part's name, `claimed`, `done`
    /// or `failed`; `None`: every state.
    pub state: Option<String>,
    /// A glob on the item's name, as Redis's `MATCH` reads it (`*`, `?`, `[...]`).
    pub glob: Option<String>,
    /// A regular expression the name must match.
    pub regex: Option<regex::Regex>,
    /// Claimed by this downloader (claimed items only).
    pub claimant: Option<String>,
    /// Claimed at least this long ago, ms (claimed items only).
    pub older_than_ms: Option<u64>,
    /// The most items to return (1 to [`MAX_LIMIT`]).
    pub limit: usize,
    /// Where to go on: the cursor of the page before, read by [`parse_cursor`].
    pub cursor: Option<SearchCursor>,
}

/// Where a search goes on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SearchCursor {
    /// The Redis walk at this index, at this scan cursor (`AT:SCAN`).
    Redis(usize, String),
    /// The segment of this id (or the next one in id order, if it is gone), at this block
    /// (`disk:ID:BLOCK`).
    Disk(String, usize),
}

/// One item found, and one page of a search: the panel reads the same types.
pub use app::model::admin::{FoundItem as Found, FoundPage as SearchPage};

/// A state to walk: its name and key and the scan that walks it.
struct Walk {
    state: String,
    key: String,
    cmd: &'static str,
}

impl super::Queue<'_> {
    /// One page of the items of `slug` that `q` describes (see the module).
    pub async fn search_items(
        self,
        slug: &str,
        q: &SearchQuery,
        now_ms: u64,
    ) -> StoreResult<SearchPage> {
        let walks = self.walks(slug, q).await?;
        let (mut at, mut cursor) = match &q.cursor {
            None => (0, "0".to_string()),
            Some(SearchCursor::Redis(at, scan)) => (*at, scan.clone()),
            Some(SearchCursor::Disk(..)) => (walks.len(), "0".to_string()),
        };
        let limit = q.limit.clamp(1, MAX_LIMIT);
        let client = self.pool.next();
        let claims = self.keys.project(slug).claims();
        let started = Instant::now();
        let mut page = SearchPage::default();
        while at < walks.len() {
            let w = &walks[at];
            // Asked for about as many as are still wanted, so a page goes little past its limit.
            let count = (limit - page.items.len().min(limit))
                .clamp(10, 1000)
                .to_string();
            let mut args = vec![w.key.clone(), cursor.clone()];
            if let Some(glob) = &q.glob {
                args.extend(["MATCH".to_string(), glob.clone()]);
            }
            args.extend(["COUNT".to_string(), count]);
            let (next, flat): (String, Vec<String>) =
                client.custom(fred::cmd!(w.cmd), args).await?;
            // ZSCAN and HSCAN answer member/value pairs, SSCAN members.
            let pairs: Vec<(String, Option<String>)> = if w.cmd == "SSCAN" {
                flat.into_iter().map(|m| (m, None)).collect()
            } else {
                let mut it = flat.into_iter();
                std::iter::from_fn(|| Some((it.next()?, it.next()))).collect()
            };
            page.scanned += pairs.len() as u64;
            let named: Vec<(String, Option<String>)> = pairs
                .into_iter()
                .filter(|(m, _)| q.regex.as_ref().is_none_or(|r| r.is_match(m)))
                .collect();
            if w.state == "claimed" {
                let names: Vec<&str> = named.iter().map(|(m, _)| m.as_str()).collect();
                let records: Vec<Option<String>> = if names.is_empty() {
                    vec![]
                } else {
                    client.hmget(&claims, names).await?
                };
                for ((item, score), record) in named.into_iter().zip(records) {
                    let at_ms = score.and_then(|s| s.parse::<f64>().ok()).map(|s| s as u64);
                    let who = record
                        .and_then(|r| serde_json::from_str::<serde_json::Value>(&r).ok())
                        .and_then(|v| v.get("d").and_then(|d| d.as_str()).map(String::from));
                    if q.claimant.as_ref().is_some_and(|c| who.as_ref() != Some(c)) {
                        continue;
                    }
                    if q.older_than_ms
                        .is_some_and(|age| at_ms.is_none_or(|t| now_ms.saturating_sub(t) < age))
                    {
                        continue;
                    }
                    page.items.push(Found {
                        item,
                        state: w.state.clone(),
                        claimant: who,
                        claimed_at: at_ms,
                    });
                }
            } else {
                page.items.extend(named.into_iter().map(|(item, _)| Found {
                    item,
                    state: w.state.clone(),
                    claimant: None,
                    claimed_at: None,
                }));
            }
            if next == "0" {
                at += 1;
                cursor = "0".into();
            } else {
                cursor = next;
            }
            if page.items.len() >= limit || started.elapsed() >= PAGE_BUDGET {
                break;
            }
        }
        if at < walks.len() {
            page.cursor = Some(format!("{at}:{cursor}"));
            return Ok(page);
        }
        let from = match &q.cursor {
            Some(SearchCursor::Disk(id, block)) => Some((id.as_str(), *block)),
            _ => None,
        };
        self.search_disk(slug, q, from, limit, started, &mut page)
            .await?;
        Ok(page)
    }

    /// The keys a search of `q` walks, in order: queue parts, personal queues, claimed, done,
    /// failed (a claimant or an age: claimed only).
    async fn walks(self, slug: &str, q: &SearchQuery) -> StoreResult<Vec<Walk>> {
        let k = self.keys.project(slug);
        let client = self.pool.next();
        let order: Option<String> = client.hget(k.meta(), "queues").await?;
        // Personal queues are found by a scan of the key space: only when some hold items.
        let personal: Option<i64> = client.hget(k.stats(), "pq").await?;
        let claimed_only = q.claimant.is_some() || q.older_than_ms.is_some();
        let want = |state: &str, queued: bool| match q.state.as_deref() {
            None => !claimed_only || state == "claimed",
            Some("queued") => queued && !claimed_only,
            Some(s) => s == state && (!claimed_only || state == "claimed"),
        };
        let mut walks = Vec::new();
        let prefix = k.prefix().to_string();
        let mut queues = queue_part_keys(&k, order.as_deref());
        if personal.unwrap_or(0) > 0 {
            queues.extend(self.upkeep().personal_queues(slug).await?);
        }
        for key in queues {
            let state = key.strip_prefix(&prefix).unwrap_or(&key).to_string();
            let personal = state.starts_with(PERSONAL);
            let queued_match = want(&state, true)
                || (personal && q.state.as_deref() == Some(PERSONAL.trim_end_matches(':')));
            if queued_match {
                walks.push(Walk {
                    state,
                    key,
                    cmd: "ZSCAN",
                });
            }
        }
        for (state, key, cmd) in [
            ("claimed", k.out(), "ZSCAN"),
            ("done", k.done(), "SSCAN"),
            ("failed", k.failed(), "HSCAN"),
        ] {
            if want(state, false) {
                walks.push(Walk {
                    state: state.into(),
                    key,
                    cmd,
                });
            }
        }
        Ok(walks)
    }
}

/// A cursor `AT:SCAN` or `disk:ID:BLOCK` as a page gave it (empty: the start), or why it is
/// not one.
pub fn parse_cursor(raw: &str) -> Result<Option<SearchCursor>, String> {
    if raw.is_empty() {
        return Ok(None);
    }
    let bad = || format!("cursor {raw:?} is not one a search gave");
    if let Some(rest) = raw.strip_prefix("disk:") {
        let (id, block) = rest.rsplit_once(':').ok_or_else(bad)?;
        let id_ok = (1..=100).contains(&id.len())
            && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-');
        let block = block.parse::<usize>().map_err(|_| bad())?;
        if !id_ok {
            return Err(bad());
        }
        return Ok(Some(SearchCursor::Disk(id.to_string(), block)));
    }
    let (at, scan) = raw.split_once(':').ok_or_else(bad)?;
    let at = at.parse::<usize>().map_err(|_| bad())?;
    if scan.is_empty() || !scan.bytes().all(|b| b.is_ascii_digit()) || scan.len() > 20 {
        return Err(bad());
    }
    Ok(Some(SearchCursor::Redis(at, scan.to_string())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_are_read_back_or_refused() {
        assert_eq!(parse_cursor("").unwrap(), None);
        assert_eq!(
            parse_cursor("3:1234").unwrap(),
            Some(SearchCursor::Redis(3, "1234".into()))
        );
        assert_eq!(
            parse_cursor("disk:done-1700000000000-00ff:7").unwrap(),
            Some(SearchCursor::Disk("done-1700000000000-00ff".into(), 7))
        );
        for bad in [
            "x",
            "1:",
            ":5",
            "1:a",
            "1:2:3",
            "-1:0",
            "disk:",
            "disk:a b:1",
            "disk:x:-1",
        ] {
            assert!(parse_cursor(bad).is_err(), "{bad}");
        }
    }
}
