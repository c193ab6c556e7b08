//! Scoring the queues of projects made before random order lived in the scores.
//!
//! Queues are sorted sets served lowest score first; a project not in FIFO order gets a
//! shuffled score per item when it is queued (`_lib.lua`, `queue_scorer`). Projects created
//! before that (meta `shuffled` unset) still draw at random in `claim.lua`, one call more per
//! batch; [`crate::store::queue::Queue::shuffle_queues`] scores their waiting items and marks them, and the tracker
//! runs it on every project when it starts.

use super::{
    helpers::{queue_part_keys, zscan_page},
    StoreResult,
};
use fred::prelude::*;

impl super::Queue<'_> {
    /// Scores the waiting items of project `slug` for random order if it predates that (see the
    /// module), then marks it; how many items were scored. Nothing for a project already marked,
    /// or none. Safe while the project is in use: each page is one script call that only changes
    /// scores, and claims draw at random until the mark is set.
    pub async fn shuffle_queues(self, slug: &str) -> StoreResult<u64> {
        let k = self.keys.project(slug);
        let client = self.pool.next();
        let (title, order, shuffled): (Option<String>, Option<String>, Option<String>) = client
            .hmget(k.meta(), vec!["title", "queues", "shuffled"])
            .await?;
        if title.is_none() || shuffled.as_deref() == Some("1") {
            return Ok(0);
        }
        let mut parts = queue_part_keys(&k, order.as_deref());
        parts.extend(self.upkeep().personal_queues(slug).await?);
        let mut scored = 0;
        for key in parts {
            let mut cursor = "0".to_string();
            loop {
                let (next, items) = zscan_page(client, &key, &cursor).await?;
                if !items.is_empty() {
                    let mut args = Vec::with_capacity(items.len() + 1);
                    args.push(Value::from(key.as_str()));
                    args.extend(items.into_iter().map(Value::from));
                    let n: u64 = self
                        .scripts
                        .run(client, &self.scripts.shuffle, k.queue_order_keys(), args)
                        .await?;
                    scored += n;
                }
                cursor = next;
                if cursor == "0" {
                    break;
                }
            }
        }
        let _: () = client
            .hset(
                k.meta(),
                [
                    ("shuffled", "1".to_string()),
                    super::projects::meta::settings_stamp(),
                ],
            )
            .await?;
        Ok(scored)
    }

    /// [`crate::store::queue::Queue::shuffle_queues`] for every project: the slugs it scored items of, with how many.
    pub async fn shuffle_all_queues(self) -> StoreResult<Vec<(String, u64)>> {
        let slugs: Vec<String> = self.pool.next().smembers(self.keys.projects()).await?;
        let mut scored = Vec::new();
        for slug in slugs {
            let n = self.shuffle_queues(&slug).await?;
            if n > 0 {
                scored.push((slug, n));
            }
        }
        Ok(scored)
    }
}
