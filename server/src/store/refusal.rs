//! What a script answers when it refuses a request: [`Refusal`], one stable code per reason.

use serde::Deserialize;

/// Why a script refused a request (or, in a batch, one of its requests): the reply
/// `{"err": code, ...}`. Each variant is a stable `code`, spelled in the scripts that return it.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, thiserror::Error)]
#[serde(tag = "err", rename_all = "snake_case")]
pub enum Refusal {
    /// `no_project`: the project does not exist (claim, backfeed, snapshot, recount).
    #[error("no such project")]
    NoProject,
    /// `old_version`: the claimant's script version is missing or below the minimum (claim).
    #[error("script version missing or too old")]
    OldVersion,
    /// `bad_name`: invalid downloader name (claim).
    #[error("invalid downloader name")]
    BadName,
    /// `blocked`: the claimant's IP or name is blocked (claim), or the reporter's IP is
    /// blocked in the project (done; nothing changed).
    #[error("blocked")]
    Blocked,
    /// `not_active`: the project is paused or finished (claim).
    #[error("the project is not handing out items")]
    NotActive,
    /// `budget`: the downloader holds its maximum of claims (claim).
    #[error("the downloader holds its maximum of claims")]
    Budget,
    /// `rate_limited`: a limit holds the request back for `wait_ms` more ms (claim, login
    /// attempts, rescue-me posts).
    #[error("rate limited for {wait_ms} ms")]
    RateLimited {
        /// How long until a request may pass (ms, at least 1).
        wait_ms: u64,
    },
    /// `nothing_to_give`: no item is available (claim).
    #[error("no item available")]
    NothingToGive,
    /// `token_required`: the project requires a pipeline token and the claim has none (claim).
    #[error("the project requires a pipeline token")]
    TokenRequired,
    /// `not_for_pipeline`: the project does not serve the claim's pipeline: it has tags and the
    /// pipeline carries none of them, or the pipeline is match-only and the project names none
    /// of its tags (claim).
    #[error("the project does not serve this pipeline")]
    NotForPipeline,
    /// `invalid`: a field of a done report does not parse (bytes out of range, an empty item
    /// or downloader); nothing changed (done).
    #[error("a field of the report does not parse")]
    Invalid,
    /// `unknown_item`: a reported item the project does not know; nothing changed (done).
    #[error("unknown item {item}")]
    UnknownItem {
        /// The first unknown item.
        item: String,
    },
    /// `never_handed_out`: a reported item waiting in a queue that was never claimed; nothing
    /// changed (done).
    #[error("item {item} was never handed out")]
    NeverHandedOut {
        /// The first such item.
        item: String,
    },
    /// `overflow`: the report would carry the project's byte total to 2^53; nothing changed
    /// (done).
    #[error("the byte total would pass 2^53")]
    Overflow,
    /// `domain_mismatch`: the report's byte domains differ from the project's; the reporter's
    /// IP is blocked and the items it holds released; others' claims stay (done).
    #[error("byte domains differ from the project's")]
    DomainMismatch,
    /// `not_claimed`: the item is not claimed (release).
    #[error("the item is not claimed")]
    NotClaimed,
    /// `not_claimant`: the caller is not the claimant, or calls from another IP (release).
    #[error("not the claimant")]
    NotClaimant,
    /// `other_pipeline`: the item is claimed by a pipeline and the caller is another one, or
    /// none; nothing changed (done, release).
    #[error("item {item} belongs to another pipeline")]
    OtherPipeline {
        /// The first such item.
        item: String,
    },
    /// `filter_changed`: the backfeed filter's layers changed since the tracker read them (a
    /// layer may have been added); read it again (backfeed).
    #[error("the backfeed filter changed")]
    FilterChanged,
    /// `lease`: the caller does not hold the project's offload lease; nothing changed
    /// (offload_commit, refill).
    #[error("the offload lease is held by another process")]
    Lease,
    /// `stale`: an item (or a segment, by id) is no longer where the caller read it; nothing
    /// changed, read again (offload_commit, refill).
    #[error("{item} moved since it was read")]
    Stale {
        /// The first such item, or the segment id.
        item: String,
    },
}

impl Refusal {
    /// The stable code of the refusal, as the scripts spell it.
    pub fn code(&self) -> &'static str {
        match self {
            Refusal::NoProject => "no_project",
            Refusal::OldVersion => "old_version",
            Refusal::BadName => "bad_name",
            Refusal::Blocked => "blocked",
            Refusal::NotActive => "not_active",
            Refusal::Budget => "budget",
            Refusal::RateLimited { .. } => "rate_limited",
            Refusal::NothingToGive => "nothing_to_give",
            Refusal::TokenRequired => "token_required",
            Refusal::NotForPipeline => "not_for_pipeline",
            Refusal::Invalid => "invalid",
            Refusal::UnknownItem { .. } => "unknown_item",
            Refusal::NeverHandedOut { .. } => "never_handed_out",
            Refusal::Overflow => "overflow",
            Refusal::DomainMismatch => "domain_mismatch",
            Refusal::NotClaimed => "not_claimed",
            Refusal::NotClaimant => "not_claimant",
            Refusal::OtherPipeline { .. } => "other_pipeline",
            Refusal::FilterChanged => "filter_changed",
            Refusal::Lease => "lease",
            Refusal::Stale { .. } => "stale",
        }
    }
}
