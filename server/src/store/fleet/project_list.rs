//! The Warrior HQ project list (`projects.json`) with its last versions, and pages of a
//! project's completion log.

use super::StoreResult;
use fred::prelude::*;
use serde::{Deserialize, Serialize};

/// How many earlier project lists are kept.
pub const VERSIONS: i64 = 20;

/// An earlier project list.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ListVersion {
    /// Replaced at (ms).
    pub t: u64,
    /// Who saved it.
    pub who: String,
    /// The JSON document.
    pub json: String,
}

impl super::Fleet<'_> {
    /// The current project list (JSON), if one was saved.
    pub async fn warrior_projects(self) -> StoreResult<Option<String>> {
        Ok(self.pool.next().get(self.keys.warrior_projects()).await?)
    }

    /// Saves a project list, keeping the current one as a version.
    pub async fn save_warrior_projects(
        self,
        json: &str,
        who: &str,
        now_ms: u64,
    ) -> StoreResult<()> {
        let client = self.pool.next();
        let versions = self.keys.warrior_projects_versions();
        let entry = ListVersion {
            t: now_ms,
            who: who.into(),
            json: json.into(),
        };
        let _: () = client
            .lpush(&versions, serde_json::to_string(&entry).unwrap_or_default())
            .await?;
        let _: () = client.ltrim(&versions, 0, VERSIONS - 1).await?;
        let _: () = client
            .set(self.keys.warrior_projects(), json, None, None, false)
            .await?;
        self.projects().settings_changed().await?;
        Ok(())
    }

    /// The saved versions, newest (the current one) first.
    pub async fn warrior_projects_versions(self) -> StoreResult<Vec<ListVersion>> {
        let raw: Vec<String> = self
            .pool
            .next()
            .lrange(self.keys.warrior_projects_versions(), 0, VERSIONS - 1)
            .await?;
        Ok(raw
            .iter()
            .filter_map(|r| serde_json::from_str(r).ok())
            .collect())
    }

    /// Up to `count` completion log entries with ids from `start` to `end` (stream ids or
    /// `-`/`+`), oldest first: (id, field/value pairs).
    pub async fn log_page(
        self,
        slug: &str,
        start: &str,
        end: &str,
        count: u64,
    ) -> StoreResult<Vec<(String, Vec<(String, String)>)>> {
        let reply: Value = self
            .pool
            .next()
            .custom(
                fred::cmd!("XRANGE"),
                vec![
                    self.keys.project(slug).log(),
                    start.to_string(),
                    end.to_string(),
                    "COUNT".into(),
                    count.to_string(),
                ],
            )
            .await?;
        let text = |v: &Value| v.as_string().unwrap_or_default();
        let Value::Array(entries) = reply else {
            return Ok(vec![]);
        };
        Ok(entries
            .into_iter()
            .filter_map(|e| match e {
                Value::Array(mut parts) if parts.len() == 2 => {
                    let fields = match parts.pop() {
                        Some(Value::Array(f)) => f
                            .chunks(2)
                            .filter(|c| c.len() == 2)
                            .map(|c| (text(&c[0]), text(&c[1])))
                            .collect(),
                        _ => vec![],
                    };
                    Some((text(&parts[0]), fields))
                }
                _ => None,
            })
            .collect())
    }

    /// The id of the completion log entry at `index` (0: the oldest), if there is one.
    pub async fn log_entry_at(self, slug: &str, index: u64) -> StoreResult<Option<String>> {
        let page = self.log_page(slug, "-", "+", index + 1).await?;
        Ok((page.len() as u64 == index + 1)
            .then(|| page.last().map(|(id, _)| id.clone()))
            .flatten())
    }

    /// The id of the last completion log entry at or before `end`, if any (`XREVRANGE`).
    pub async fn log_last_id(self, slug: &str, end: &str) -> StoreResult<Option<String>> {
        let reply: Value = self
            .pool
            .next()
            .custom(
                fred::cmd!("XREVRANGE"),
                vec![
                    self.keys.project(slug).log(),
                    end.to_string(),
                    "-".into(),
                    "COUNT".into(),
                    "1".into(),
                ],
            )
            .await?;
        let Value::Array(entries) = reply else {
            return Ok(None);
        };
        Ok(entries.first().and_then(|e| match e {
            Value::Array(pair) => pair.first().and_then(|id| id.as_string()),
            _ => None,
        }))
    }

    /// Removes the completion log entries up to and including stream id `last` (`ms-seq`);
    /// how many went. Entries added later (higher ids) stay.
    pub async fn trim_log_through(self, slug: &str, last: &str) -> StoreResult<u64> {
        let (ms, seq) = last.split_once('-').unwrap_or((last, "0"));
        let threshold = format!("{ms}-{}", seq.parse::<u64>().unwrap_or(0).saturating_add(1));
        let n: u64 = self
            .pool
            .next()
            .custom(
                fred::cmd!("XTRIM"),
                vec![self.keys.project(slug).log(), "MINID".into(), threshold],
            )
            .await?;
        Ok(n)
    }
}
