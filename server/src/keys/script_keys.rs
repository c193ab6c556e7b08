//! The keys each script of a project takes, in the order of its header's `KEYS[i]` lines: one
//! method per script, used by its wrapper and by the tests that call the script directly. A
//! test (`store::scripts`) checks each list against its script's header, name by name.

use super::project::ProjectKeys;

impl ProjectKeys {
    /// `claim.lua`.
    pub fn claim_keys(&self) -> Vec<String> {
        vec![
            self.meta(),
            self.out(),
            self.claims(),
            self.attempts(),
            self.failed(),
            self.dl_claims(),
            self.blocked("ip"),
            self.blocked("dl"),
            self.ratelimit(),
            self.timeline(),
            self.stats(),
            self.decay(),
        ]
    }

    /// `done.lua`.
    pub fn done_keys(&self) -> Vec<String> {
        vec![
            self.meta(),
            self.out(),
            self.claims(),
            self.done(),
            self.failed(),
            self.attempts(),
            self.dl_claims(),
            self.stats(),
            self.domain_bytes(),
            self.timeline(),
            self.blocked("ip"),
            self.log(),
            self.chart(),
            self.decay(),
        ]
    }

    /// `fold.lua`, for a run of entries of calendar month `month` (`YYYY-MM`, its unique
    /// contributors).
    pub fn fold_keys(&self, month: &str) -> Vec<String> {
        vec![
            self.stats(),
            self.dl_items(),
            self.dl_bytes(),
            self.dl_version(),
            self.dl_seen(),
            self.seq(),
            self.history(),
            self.events(),
            self.log(),
            self.monthly_contributors(month),
            self.tally(),
        ]
    }

    /// `fold_base.lua`: what a fold run's events are made from.
    pub fn fold_base_keys(&self) -> Vec<String> {
        vec![
            self.stats(),
            self.dl_items(),
            self.dl_bytes(),
            self.seq(),
            self.meta(),
            self.out(),
            self.failed(),
        ]
    }

    /// `release.lua`: a released item waits in `queue` again.
    pub fn release_keys(&self, queue: &str) -> Vec<String> {
        vec![
            self.out(),
            self.claims(),
            self.dl_claims(),
            self.timeline(),
            self.queue(queue),
            self.attempts(),
        ]
    }

    /// `release_items.lua`.
    pub fn release_items_keys(&self) -> Vec<String> {
        vec![
            self.out(),
            self.claims(),
            self.dl_claims(),
            self.timeline(),
            self.attempts(),
        ]
    }

    /// `add_items.lua`.
    pub fn add_items_keys(&self) -> Vec<String> {
        vec![
            self.meta(),
            self.out(),
            self.done(),
            self.failed(),
            self.stats(),
            self.qseq(),
            self.offload(),
        ]
    }

    /// `backfeed.lua`.
    pub fn backfeed_keys(&self) -> Vec<String> {
        vec![
            self.meta(),
            self.out(),
            self.done(),
            self.failed(),
            self.bloom(),
            self.qseq(),
            self.stats(),
            self.offload(),
        ]
    }

    /// `item_status.lua`.
    pub fn item_status_keys(&self) -> Vec<String> {
        vec![
            self.meta(),
            self.out(),
            self.claims(),
            self.done(),
            self.failed(),
            self.timeline(),
            self.decay(),
        ]
    }

    /// `snapshot.lua`.
    pub fn snapshot_keys(&self) -> Vec<String> {
        vec![
            self.meta(),
            self.stats(),
            self.out(),
            self.dl_items(),
            self.dl_bytes(),
            self.domain_bytes(),
            self.seq(),
            self.history(),
            self.failed(),
            self.dl_seen(),
            self.dl_version(),
        ]
    }

    /// `recount.lua`.
    pub fn recount_keys(&self) -> Vec<String> {
        vec![
            self.meta(),
            self.out(),
            self.done(),
            self.failed(),
            self.stats(),
        ]
    }

    /// `places.lua` (the check's reads).
    pub fn places_keys(&self) -> Vec<String> {
        vec![
            self.out(),
            self.done(),
            self.failed(),
            self.claims(),
            self.stats(),
            self.dl_items(),
            self.dl_claims(),
        ]
    }

    /// `import.lua` (`tracker migrate`).
    pub fn import_keys(&self) -> Vec<String> {
        vec![
            self.meta(),
            self.out(),
            self.claims(),
            self.done(),
            self.failed(),
            self.dl_claims(),
            self.stats(),
            self.dl_items(),
        ]
    }

    /// `clear_queue.lua`.
    pub fn clear_queue_keys(&self) -> Vec<String> {
        vec![self.meta(), self.stats(), self.decay()]
    }

    /// `move_items.lua` and `shuffle.lua`.
    pub fn queue_order_keys(&self) -> Vec<String> {
        vec![self.qseq(), self.meta()]
    }

    /// `resolve_failed.lua`.
    pub fn resolve_failed_keys(&self) -> Vec<String> {
        vec![
            self.failed(),
            self.attempts(),
            self.timeline(),
            self.stats(),
        ]
    }

    /// `retire_shards.lua`.
    pub fn retire_shards_keys(&self) -> Vec<String> {
        vec![self.meta(), self.segs()]
    }

    /// `offload_commit.lua`, moving items out of `from` (the done set or a queue part's key).
    pub fn offload_commit_keys(&self, from: String) -> Vec<String> {
        vec![
            self.offload_lease(),
            self.segs(),
            self.offload(),
            self.stats(),
            self.done(),
            self.timeline(),
            from,
        ]
    }

    /// `refill.lua`, bringing items back into queue part `part`.
    pub fn refill_keys(&self, part: &str) -> Vec<String> {
        vec![
            self.offload_lease(),
            self.segs(),
            self.segs_restored(),
            self.offload(),
            self.stats(),
            self.queue(part),
            self.segs_gone(),
        ]
    }
}
