//! The lifetime counters (`/metrics`' `_total` series): the per-minute counters (`st:<day>`,
//! kept 35 days) tallied into one hash per project, each whole minute exactly once, by
//! `tally.lua`; read with the minutes not tallied yet by `lifetime.lua`, so a counter only
//! grows, survives restarts and is the same from every process. Nothing is added on the claim
//! and done path: the folder (`folder`) tallies every project every
//! [`TALLY_EVERY`].

use super::StoreResult;
use crate::keys::Counter;
use fred::prelude::*;
use std::{collections::BTreeMap, time::Duration};

/// How often the folder tallies every project.
pub const TALLY_EVERY: Duration = Duration::from_secs(30);
/// Minutes a minute is left before it is tallied: a counter written that late (a batch held up,
/// a process's clock behind the others') still counts; one written later counts in the
/// per-minute figures but not in the lifetime ones.
pub const GRACE_MINUTES: u64 = 2;
/// Minutes of counters read by one `tally.lua` call, at most (about 1 ms of Redis).
const BUDGET_MINUTES: u64 = 240;
/// Calls of `tally.lua` per project per tally, at most (35 days of counters is 210).
const CALLS_MAX: usize = 300;
/// Minutes after the tally a reader adds up, at most; further behind, it reads nothing.
const BEHIND_MAX: u64 = 120;
/// How far back the first tally of a project starts: every minute still kept.
const KEPT_MINUTES: u64 = 35 * 1440;

fn codes() -> impl Iterator<Item = Value> {
    Counter::ALL.iter().map(|c| Value::from(c.code()))
}

impl super::Figures<'_> {
    /// Tallies the whole minutes of project `slug` up to [`GRACE_MINUTES`] before `now_ms`;
    /// the last minute tallied.
    pub async fn tally(self, slug: &str, now_ms: u64) -> StoreResult<u64> {
        let k = self.keys.project(slug);
        let upto = (now_ms / 60_000).saturating_sub(GRACE_MINUTES);
        let client = self.pool.next();
        let mut last = 0;
        for _ in 0..CALLS_MAX {
            let mut args: Vec<Value> = vec![
                k.prefix().into(),
                (upto as i64).into(),
                (BUDGET_MINUTES as i64).into(),
                (upto.saturating_sub(KEPT_MINUTES) as i64).into(),
            ];
            args.extend(codes());
            last = self
                .scripts
                .run(client, &self.scripts.tally, vec![k.tally()], args)
                .await?;
            if last >= upto {
                break;
            }
        }
        Ok(last)
    }

    /// The lifetime counters of project `slug` at `now_ms` (counter -> total since the tally
    /// began: 35 days before the first tally), or `None` before its first tally or while the
    /// tally is far behind.
    pub async fn lifetime(
        self,
        slug: &str,
        now_ms: u64,
    ) -> StoreResult<Option<BTreeMap<Counter, u64>>> {
        // The done counters come from the fold: what this process recorded is folded first.
        self.fold_for_read(slug).await;
        let k = self.keys.project(slug);
        // The minute after now too: a process whose clock is ahead writes there.
        let upto = now_ms / 60_000 + 1;
        let mut args: Vec<Value> = vec![
            k.prefix().into(),
            (upto as i64).into(),
            (BEHIND_MAX as i64).into(),
        ];
        args.extend(codes());
        let totals: Vec<String> = self
            .scripts
            .run(
                self.pool.next(),
                &self.scripts.lifetime,
                vec![k.tally()],
                args,
            )
            .await?;
        if totals.len() != Counter::ALL.len() {
            return Ok(None);
        }
        Ok(Some(
            Counter::ALL
                .iter()
                .zip(totals)
                .map(|(c, v)| (*c, v.parse().unwrap_or(0)))
                .collect(),
        ))
    }
}
