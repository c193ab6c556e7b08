//! Items given back: a claim released to `todo` by its claimant, its pipeline or an admin.

use super::{scripts::Refusal, StoreError, StoreResult};
use crate::keys::TODO;
use fred::prelude::*;
use serde::Deserialize;

impl super::Queue<'_> {
    /// Gives a claimed item back to `todo` for a caller without a pipeline (see
    /// [`crate::store::queue::Queue::release_as`]).
    pub async fn release(
        self,
        slug: &str,
        item: &str,
        who: &str,
        ip: &str,
        admin: bool,
        now_ms: u64,
    ) -> StoreResult<bool> {
        self.release_as(slug, item, who, ip, admin, "", now_ms)
            .await
    }

    /// Gives a claimed item back to `todo`: `Ok(true)` released, `Ok(false)` not claimed,
    /// `Err(Refused(NotClaimant))` when `who` at `ip` is neither its claimant at the IP it
    /// claimed from nor an admin, `Err(Refused(OtherPipeline))` when a pipeline claimed it and
    /// `pipeline` (empty: none) is not that one (admins excepted).
    #[allow(clippy::too_many_arguments)]
    pub async fn release_as(
        self,
        slug: &str,
        item: &str,
        who: &str,
        ip: &str,
        admin: bool,
        pipeline: &str,
        now_ms: u64,
    ) -> StoreResult<bool> {
        let caller = Releaser {
            who,
            ip,
            admin,
            pipeline,
        };
        let answer = self
            .release_items_as(slug, &[item.to_string()], &caller, now_ms)
            .await?;
        if !answer.released.is_empty() {
            return Ok(true);
        }
        match answer.refused.into_iter().next().map(|r| r.err) {
            None | Some(ReleaseRefusal::NotClaimed) => Ok(false),
            Some(ReleaseRefusal::NotClaimant) => Err(StoreError::Refused(Refusal::NotClaimant)),
            Some(ReleaseRefusal::OtherPipeline) => {
                Err(StoreError::Refused(Refusal::OtherPipeline {
                    item: item.into(),
                }))
            }
        }
    }

    /// Gives claimed items back to `todo` in one step, each only if `caller` may (its
    /// claimant at the IP it claimed from, with the pipeline it claimed with, or an admin);
    /// the others are left as they are and answered with why.
    pub async fn release_items_as(
        self,
        slug: &str,
        items: &[String],
        caller: &Releaser<'_>,
        now_ms: u64,
    ) -> StoreResult<Released> {
        if items.is_empty() {
            return Ok(Released::default());
        }
        let k = self.keys.project(slug);
        let keys = k.release_keys(TODO);
        let mut args = Vec::with_capacity(6 + items.len());
        args.extend([
            Value::from(now_ms as i64),
            Value::from(caller.who),
            Value::from(if caller.admin { "1" } else { "0" }),
            Value::from(caller.ip),
            Value::from(caller.pipeline),
            Value::from(k.prefix()),
        ]);
        args.extend(items.iter().map(|i| Value::from(i.as_str())));
        match self
            .scripts
            .call::<Released>(self.pool.next(), &self.scripts.release, keys, args)
            .await?
        {
            Ok(released) => Ok(released),
            Err(refusal) => Err(StoreError::Refused(refusal)),
        }
    }
}
/// Who releases items ([`crate::store::queue::Queue::release_items_as`]).
#[derive(Clone, Copy, Debug)]
pub struct Releaser<'a> {
    /// The downloader's name (or the admin's).
    pub who: &'a str,
    /// The address it calls from.
    pub ip: &'a str,
    /// An admin releases any claim.
    pub admin: bool,
    /// Its pipeline's name ('' for none).
    pub pipeline: &'a str,
}

/// Why `release.lua` left an item as it was.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReleaseRefusal {
    /// The item is not claimed.
    NotClaimed,
    /// The caller is not its claimant, or calls from another address.
    NotClaimant,
    /// A pipeline claimed it, and the caller is not that pipeline.
    OtherPipeline,
}

/// What a release did: the items released, and the others with why, in the order given.
#[derive(Debug, Default, Deserialize)]
pub struct Released {
    /// Back in `todo`.
    #[serde(default)]
    pub released: Vec<String>,
    /// Left as they were.
    #[serde(default)]
    pub refused: Vec<NotReleased>,
}

/// An item a release left as it was, and why.
#[derive(Debug, Deserialize)]
pub struct NotReleased {
    /// The item.
    pub item: String,
    /// Why.
    pub err: ReleaseRefusal,
}
