//! The search's walk of a project's segments on disk: the ones its state asks for, in id
//! order, a block at a time, each name matched here (the glob as Redis's `MATCH` reads it, the
//! regular expression). A segment gone since the page before (refilled into Redis) is passed
//! over: the search goes on at the next id. Discard segments keep no names and are not walked.

use super::super::{StoreError, StoreResult};
use super::{Found, SearchPage, SearchQuery, PAGE_BUDGET};
use crate::segment::Segment;
use std::sync::Arc;
use std::time::Instant;

/// The start of the state of an item found on disk: `disk:done`, `disk:PART`.
pub const DISK_STATE: &str = "disk:";

/// One segment to walk.
struct DiskWalk {
    id: String,
    state: String,
    file: Arc<Segment>,
}

impl super::super::Queue<'_> {
    /// Fills `page` (up to `limit` items, within the page's time budget from `started`) from
    /// the segments `q` asks for, from `from` (segment id, block) or the first; sets its cursor.
    pub(super) async fn search_disk(
        self,
        slug: &str,
        q: &SearchQuery,
        from: Option<(&str, usize)>,
        limit: usize,
        started: Instant,
        page: &mut SearchPage,
    ) -> StoreResult<()> {
        let walks = self.disk_walks(slug, q).await?;
        let (mut at, mut block) = match from {
            None => (0, 0),
            Some((id, block)) => {
                let at = walks.partition_point(|w| w.id.as_str() < id);
                let same = walks.get(at).is_some_and(|w| w.id == id);
                (at, if same { block } else { 0 })
            }
        };
        let glob = match q.glob.as_deref() {
            Some(g) => Some(glob_regex(g).ok_or_else(|| {
                StoreError::Disk(format!("the glob {g:?} is too big to match on disk"))
            })?),
            None => None,
        };
        while at < walks.len() && page.items.len() < limit && started.elapsed() < PAGE_BUDGET {
            let w = &walks[at];
            let file = w.file.clone();
            let names = tokio::task::spawn_blocking(move || file.block_names(block))
                .await
                .map_err(|e| StoreError::Disk(e.to_string()))?
                .map_err(|e| StoreError::Disk(format!("segment {}: {e}", w.id)))?;
            page.scanned += names.len() as u64;
            let matches = |n: &String| {
                glob.as_ref().is_none_or(|g| g.is_match(n))
                    && q.regex.as_ref().is_none_or(|r| r.is_match(n))
            };
            page.items
                .extend(names.into_iter().filter(matches).map(|item| Found {
                    item,
                    state: w.state.clone(),
                    claimant: None,
                    claimed_at: None,
                }));
            block += 1;
            if block >= w.file.block_count() {
                at += 1;
                block = 0;
            }
        }
        page.cursor = walks.get(at).map(|w| format!("disk:{}:{block}", w.id));
        Ok(())
    }

    /// The segments a search of `q` walks, in id order: done segments for `done`, queue
    /// segments for `queued` or their part, both for `disk` or no state; none for claimed or
    /// failed items.
    async fn disk_walks(self, slug: &str, q: &SearchQuery) -> StoreResult<Vec<DiskWalk>> {
        if q.claimant.is_some() || q.older_than_ms.is_some() {
            return Ok(vec![]);
        }
        let wanted = |kind: &str, part: &str| match q.state.as_deref() {
            None | Some("disk") => kind == "done" || kind == "queue",
            Some("done") => kind == "done",
            Some("queued") => kind == "queue",
            Some(state) => kind == "queue" && part == state,
        };
        let disk = self.offload().on_disk(slug).await?;
        let mut walks: Vec<DiskWalk> = disk
            .segments
            .iter()
            .filter(|s| wanted(&s.entry.kind, &s.entry.part) && s.file.block_count() > 0)
            .map(|s| DiskWalk {
                id: s.id.clone(),
                state: match s.entry.kind.as_str() {
                    "done" => format!("{DISK_STATE}done"),
                    _ => format!("{DISK_STATE}{}", s.entry.part),
                },
                file: s.file.clone(),
            })
            .collect();
        walks.sort_by(|a, b| a.id.cmp(&b.id));
        Ok(walks)
    }
}

/// A glob as Redis's `MATCH` reads it (`*`, `?`, `[abc]`, `[^a-z]`, `\` before a literal) as
/// a regular expression over the whole name; none if it compiles past 1 MiB.
fn glob_regex(glob: &str) -> Option<regex::Regex> {
    let lit = |c: char| regex::escape(c.encode_utf8(&mut [0; 4]));
    let mut re = String::from("^");
    let mut chars = glob.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '*' => re.push_str(".*"),
            '?' => re.push('.'),
            '\\' => re.push_str(&chars.next().map(lit).unwrap_or_else(|| lit('\\'))),
            '[' => {
                let negated = chars.next_if_eq(&'^').is_some();
                let mut class = String::new();
                while let Some(n) = chars.next() {
                    match n {
                        ']' => break,
                        '\\' => class.push_str(&chars.next().map(lit).unwrap_or_default()),
                        '-' => class.push('-'),
                        other => class.push_str(&lit(other)),
                    }
                }
                re.push_str(&match (class.is_empty(), negated) {
                    (true, false) => "[^\\s\\S]".to_string(),
                    (true, true) => "[\\s\\S]".to_string(),
                    (false, n) => format!("[{}{class}]", if n { "^" } else { "" }),
                });
            }
            other => re.push_str(&lit(other)),
        }
    }
    re.push('$');
    regex::RegexBuilder::new(&re)
        .dot_matches_new_line(true)
        .size_limit(1 << 20)
        .build()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::glob_regex;

    #[test]
    fn globs_match_as_redis_matches_them() {
        let m = |g: &str, name: &str| glob_regex(g).unwrap().is_match(name);
        assert!(m("item-*", "item-12") && !m("item-*", "xitem-12"));
        assert!(m("a?c", "abc") && !m("a?c", "ac"));
        assert!(m("[ab]x", "bx") && !m("[ab]x", "cx"));
        assert!(m("[^a]x", "bx") && !m("[^a]x", "ax"));
        assert!(m("[a-c]1", "b1") && !m("[a-c]1", "d1"));
        assert!(m("a\\*", "a*") && !m("a\\*", "ab"));
        assert!(m("1.5+(x)", "1.5+(x)") && !m("1.5", "105"));
    }
}
