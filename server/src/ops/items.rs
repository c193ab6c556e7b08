//! Adding items from a byte stream: the panel's upload and `tracker items add` alike.

use super::{
    invalid,
    lines::{read_items, LineError},
    Actor, OpsError, OpsResult,
};
use crate::{keys::QUEUES, limits::valid_downloader, store::Store};
use std::io::Read;

/// Whether items may be added to `queue`: one of [`QUEUES`], or a downloader's personal queue
/// `todo:d:NAME`.
pub fn check_queue(queue: &str) -> OpsResult<()> {
    let personal = queue
        .strip_prefix(crate::keys::PERSONAL)
        .is_some_and(valid_downloader);
    if QUEUES.contains(&queue) || personal {
        Ok(())
    } else {
        Err(invalid(format!(
            "queue is one of {QUEUES:?} or todo:d:DOWNLOADER, not {queue:?}"
        )))
    }
}

/// Where and how [`add`] adds.
pub struct Adding<'a> {
    /// The queue ([`check_queue`]).
    pub queue: &'a str,
    /// Only count.
    pub dry_run: bool,
    /// The longest item, in bytes (the configured `TRACKER_MAX_ITEM`): a longer line is a bad
    /// line.
    pub max_item: usize,
}

/// Adds the items of `source` (one a line, plain, gzip or zstd; see [`super::lines`]) to
/// `how.queue` of project `slug`, streamed in batches; with `how.dry_run`, only counts them.
/// Items the project knows in any state are skipped. Returns how many were new (a dry run may count a
/// line repeated far apart twice). A bad line refuses the rest of the stream: what was added
/// before it stays, and is audited as partial. `progress` hears the running count after each
/// batch.
pub async fn add(
    store: &Store,
    actor: &Actor,
    slug: &str,
    how: Adding<'_>,
    source: impl Read + Send + 'static,
    progress: &(dyn Fn(u64) + Sync),
) -> OpsResult<u64> {
    let Adding {
        queue,
        dry_run,
        max_item,
    } = how;
    super::project(store, slug).await?;
    check_queue(queue)?;
    let (tx, mut rx) = tokio::sync::mpsc::channel::<Vec<String>>(2);
    let reading = tokio::task::spawn_blocking(move || {
        read_items(source, max_item, |b| tx.blocking_send(b).is_ok())
    });
    let mut count = 0;
    while let Some(items) = rx.recv().await {
        count += if dry_run {
            store.queue().count_new_items(slug, queue, &items).await?
        } else {
            store.queue().add_items(slug, queue, &items).await?
        };
        progress(count);
    }
    let read = reading.await.unwrap_or_else(|e| {
        Err(LineError::Read {
            line: 0,
            detail: e.to_string(),
        })
    });
    let detail = format!("queue={queue}");
    match read {
        Ok(()) => {
            if !dry_run {
                actor
                    .record(store, "items.add", slug, count, detail)
                    .await?;
            }
            Ok(count)
        }
        Err(reason) => {
            if !dry_run && count > 0 {
                let detail = format!("{detail} (partial)");
                actor
                    .record(store, "items.add", slug, count, detail)
                    .await?;
            }
            Err(OpsError::Invalid(format!(
                "{reason} ({count} items added before)"
            )))
        }
    }
}

/// A search as the panel, the admin API and `tracker items search` give it (the panel's type).
pub use app::model::admin::SearchParams;

/// A regular expression from a user (empty: none), compiled within 1 MiB, or why it is not one:
/// the panel's moves, releases and searches and the CLI's alike.
pub fn user_regex(raw: &str) -> OpsResult<Option<regex::Regex>> {
    if raw.is_empty() {
        return Ok(None);
    }
    regex::RegexBuilder::new(raw)
        .size_limit(1 << 20)
        .build()
        .map(Some)
        .map_err(|e| invalid(format!("regex: {e}")))
}

/// The longest glob or regular expression a search takes, in bytes.
pub const MAX_PATTERN: usize = 1024;

/// The search `p` describes, or why it is not one.
pub fn search_query(p: &SearchParams) -> OpsResult<crate::store::search::SearchQuery> {
    use crate::store::search::{parse_cursor, SearchQuery, MAX_LIMIT};
    let states = ["queued", "todo:d", "claimed", "done", "failed", "disk"];
    if !p.state.is_empty() && !states.contains(&p.state.as_str()) {
        check_queue(&p.state).map_err(|_| {
            invalid(format!(
                "state is one of {states:?}, a queue part or todo:d:DOWNLOADER, not {:?}",
                p.state
            ))
        })?;
    }
    if !p.glob.is_empty() && !p.regex.is_empty() {
        return Err(invalid("give match or regex, not both"));
    }
    if p.glob.len() > MAX_PATTERN || p.regex.len() > MAX_PATTERN {
        return Err(invalid(format!(
            "match and regex are at most {MAX_PATTERN} bytes"
        )));
    }
    let regex = user_regex(&p.regex)?;
    let older_than_ms = (!p.older_than.is_empty())
        .then(|| {
            humantime::parse_duration(&p.older_than)
                .map(|d| d.as_millis().min(u64::MAX as u128) as u64)
                .map_err(|e| invalid(format!("older_than {:?}: {e}", p.older_than)))
        })
        .transpose()?;
    let limit = p.limit.unwrap_or(100);
    if limit == 0 || limit > MAX_LIMIT {
        return Err(invalid(format!("limit is 1 to {MAX_LIMIT}")));
    }
    let claimed_only = !p.claimant.is_empty() || older_than_ms.is_some();
    if claimed_only && !p.state.is_empty() && p.state != "claimed" {
        return Err(invalid("claimant and older_than find claimed items only"));
    }
    Ok(SearchQuery {
        state: (!p.state.is_empty()).then(|| p.state.clone()),
        glob: (!p.glob.is_empty()).then(|| p.glob.clone()),
        regex,
        claimant: (!p.claimant.is_empty()).then(|| p.claimant.clone()),
        older_than_ms,
        limit,
        cursor: parse_cursor(&p.cursor).map_err(invalid)?,
    })
}

#[cfg(test)]
mod search_tests {
    use super::*;

    #[test]
    fn searches_are_read_or_refused_with_a_reason() {
        let ok = |p: SearchParams| search_query(&p).unwrap();
        let q = ok(SearchParams {
            state: "claimed".into(),
            claimant: "ann".into(),
            older_than: "1h 30m".into(),
            cursor: "4:17".into(),
            ..Default::default()
        });
        assert_eq!(q.older_than_ms, Some(5_400_000));
        assert_eq!(
            q.cursor,
            Some(crate::store::search::SearchCursor::Redis(4, "17".into()))
        );
        assert_eq!(q.limit, 100);
        assert!(ok(SearchParams {
            state: "todo:backfeed".into(),
            ..Default::default()
        })
        .state
        .is_some());
        for bad in [
            SearchParams {
                state: "nowhere".into(),
                ..Default::default()
            },
            SearchParams {
                glob: "a*".into(),
                regex: "a".into(),
                ..Default::default()
            },
            SearchParams {
                regex: "(".into(),
                ..Default::default()
            },
            SearchParams {
                older_than: "soon".into(),
                ..Default::default()
            },
            SearchParams {
                limit: Some(0),
                ..Default::default()
            },
            SearchParams {
                limit: Some(1001),
                ..Default::default()
            },
            SearchParams {
                state: "done".into(),
                claimant: "ann".into(),
                ..Default::default()
            },
            SearchParams {
                cursor: "x".into(),
                ..Default::default()
            },
            SearchParams {
                glob: "*".repeat(1025),
                ..Default::default()
            },
        ] {
            let e = search_query(&bad).unwrap_err().to_string();
            assert!(!e.is_empty(), "{bad:?}");
        }
    }
}
