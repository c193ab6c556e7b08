//! Items: adding to queues, claiming, and reporting done.

use super::{Store, StoreError, StoreResult};
use crate::keys::HISTORY_LEN;
use fred::prelude::*;

/// Who claims, as recorded with the claim.
#[derive(Clone, Debug, Default)]
pub struct Claim {
    /// Downloader name (validated).
    pub downloader: String,
    /// Client IP.
    pub ip: String,
    /// User agent.
    pub user_agent: String,
    /// Script version, empty when not sent.
    pub version: String,
}

/// A done call, validated.
#[derive(Clone, Debug, Default)]
pub struct DoneReport {
    /// Downloader name.
    pub downloader: String,
    /// Script version.
    pub version: String,
    /// User agent.
    pub user_agent: String,
    /// Bytes per domain.
    pub bytes: Vec<(String, u64)>,
    /// The items (one, or a subset of a claimed batch).
    pub items: Vec<String>,
}

/// What a done did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DoneOutcome {
    /// Items newly counted and duplicates ignored; `seq` of the event (0 when none).
    Recorded {
        /// Items newly done.
        counted: u64,
        /// Items that were done already.
        duplicates: u64,
        /// The event's sequence number.
        seq: u64,
    },
    /// An item the project does not know; nothing changed.
    UnknownItem(String),
}

/// How many items one `add_items` call carries.
const ADD_BATCH: usize = 1000;

impl Store {
    /// Adds items to `queue` (one of [`crate::keys::QUEUES`]); returns how many were new.
    pub async fn add_items(&self, slug: &str, queue: &str, items: &[String]) -> StoreResult<u64> {
        let k = self.keys.project(slug);
        let mut keys = vec![k.queue(queue), k.out(), k.done(), k.failed()];
        keys.extend(k.queues());
        let mut added = 0;
        for chunk in items.chunks(ADD_BATCH) {
            let args = chunk.iter().map(|s| Value::from(s.as_str())).collect();
            let n: u64 = self
                .scripts
                .run(
                    self.pool.next(),
                    &self.scripts.add_items,
                    keys.clone(),
                    args,
                )
                .await?;
            added += n;
        }
        Ok(added)
    }

    /// Claims up to `n` items for `who`; an empty vector when there is nothing to give.
    pub async fn claim(
        &self,
        slug: &str,
        who: &Claim,
        n: usize,
        now_ms: u64,
    ) -> StoreResult<Vec<String>> {
        let k = self.keys.project(slug);
        let mut keys = vec![k.meta(), k.out(), k.claims()];
        keys.extend(k.queues());
        let args = vec![
            Value::from(now_ms as i64),
            Value::from(who.downloader.as_str()),
            Value::from(who.ip.as_str()),
            Value::from(who.user_agent.as_str()),
            Value::from(who.version.as_str()),
            Value::from(n as i64),
        ];
        let reply: Value = self
            .scripts
            .run(self.pool.next(), &self.scripts.claim, keys, args)
            .await?;
        match reply {
            Value::Array(items) => Ok(items.iter().filter_map(|v| v.as_string()).collect()),
            Value::Integer(-1) => Err(StoreError::NoProject),
            Value::Integer(-2) => Ok(Vec::new()),
            other => Err(StoreError::Reply {
                script: "claim",
                detail: format!("{other:?}"),
            }),
        }
    }

    /// Records a done; see [`DoneOutcome`].
    pub async fn done(
        &self,
        slug: &str,
        report: &DoneReport,
        now_ms: u64,
    ) -> StoreResult<DoneOutcome> {
        let k = self.keys.project(slug);
        let mut keys = vec![
            k.out(),
            k.claims(),
            k.done(),
            k.stats(),
            k.dl_items(),
            k.dl_bytes(),
            k.dl_version(),
            k.dl_seen(),
            k.domain_bytes(),
            k.seq(),
            k.history(),
            k.events(),
        ];
        keys.extend(k.queues());
        let mut args = Vec::with_capacity(6 + 2 * report.bytes.len() + report.items.len());
        args.push(Value::from(now_ms as i64));
        args.push(Value::from(report.downloader.as_str()));
        args.push(Value::from(report.version.as_str()));
        args.push(Value::from(report.user_agent.as_str()));
        args.push(Value::from(HISTORY_LEN as i64));
        args.push(Value::from(report.bytes.len() as i64));
        for (domain, bytes) in &report.bytes {
            args.push(Value::from(domain.as_str()));
            args.push(Value::from(bytes.to_string()));
        }
        args.extend(report.items.iter().map(|s| Value::from(s.as_str())));
        let reply: Vec<Value> = self
            .scripts
            .run(self.pool.next(), &self.scripts.done, keys, args)
            .await?;
        match reply.as_slice() {
            [Value::Integer(-1), item] => Ok(DoneOutcome::UnknownItem(
                item.as_string().unwrap_or_default(),
            )),
            [a, b, c] => Ok(DoneOutcome::Recorded {
                counted: a.as_u64().unwrap_or(0),
                duplicates: b.as_u64().unwrap_or(0),
                seq: c.as_u64().unwrap_or(0),
            }),
            other => Err(StoreError::Reply {
                script: "done",
                detail: format!("{other:?}"),
            }),
        }
    }
}
