//! The scripts' JSON replies: refusals, and the serde helpers for what Lua's cjson writes.

use serde::{
    de::{DeserializeOwned, Error as _},
    Deserialize, Deserializer,
};

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

/// A JSON reply: a refusal (an object with `err`), or the script's result `T` (an array, or an
/// object without `err`). Told apart by the `err` field, not by trying each in turn, so that no
/// result is ever read as a refusal.
#[derive(Debug)]
pub enum Reply<T> {
    /// `{"err": code, ...}`.
    Refused(Refusal),
    /// Anything else.
    Ok(T),
}

impl<T> Reply<T> {
    /// The result, or the refusal as the error.
    pub fn into_result(self) -> Result<T, Refusal> {
        match self {
            Reply::Ok(t) => Ok(t),
            Reply::Refused(r) => Err(r),
        }
    }
}

impl<'de, T: DeserializeOwned> Deserialize<'de> for Reply<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Either<T>(std::marker::PhantomData<T>);
        impl<'de, T: DeserializeOwned> serde::de::Visitor<'de> for Either<T> {
            type Value = Reply<T>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON array or object")
            }
            // An array is never a refusal: read in one pass (the items of a claim).
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, seq: A) -> Result<Reply<T>, A::Error> {
                T::deserialize(serde::de::value::SeqAccessDeserializer::new(seq)).map(Reply::Ok)
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<Reply<T>, A::Error> {
                let value = serde_json::Value::deserialize(
                    serde::de::value::MapAccessDeserializer::new(map),
                )?;
                if value.get("err").is_some() {
                    Refusal::deserialize(value)
                        .map(Reply::Refused)
                        .map_err(A::Error::custom)
                } else {
                    T::deserialize(value)
                        .map(Reply::Ok)
                        .map_err(A::Error::custom)
                }
            }
        }
        d.deserialize_any(Either(std::marker::PhantomData))
    }
}

/// The replies of a batch script, one per request in order (a Lua sequence, see [`lua_list`]).
#[derive(Debug, Deserialize)]
#[serde(transparent)]
pub struct Batch<T: DeserializeOwned>(#[serde(deserialize_with = "lua_list")] pub Vec<T>);

/// A list as cjson writes a Lua sequence: a JSON array, or `{}` when empty (cjson cannot tell
/// an empty sequence from an empty table). Read in one pass, without buffering (the claim and
/// done replies of a batch go through it).
pub fn lua_list<'de, D: Deserializer<'de>, T: DeserializeOwned>(d: D) -> Result<Vec<T>, D::Error> {
    struct List<T>(std::marker::PhantomData<T>);
    impl<'de, T: DeserializeOwned> serde::de::Visitor<'de> for List<T> {
        type Value = Vec<T>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("an array, or {} for an empty one")
        }
        fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<T>, A::Error> {
            let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0));
            while let Some(x) = seq.next_element()? {
                out.push(x);
            }
            Ok(out)
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Vec<T>, A::Error> {
            match map.next_key::<serde::de::IgnoredAny>()? {
                None => Ok(Vec::new()),
                Some(_) => Err(A::Error::custom(
                    "expected an array, got a non-empty object",
                )),
            }
        }
    }
    d.deserialize_any(List(std::marker::PhantomData))
}

/// A count as the scripts pass Redis's numbers on: a JSON number, or the decimal string Redis
/// gave (sorted-set scores, hash fields) for numbers cjson could not print exactly (past
/// 10^14). Negative or unreadable counts are 0, as the pages treat them.
pub fn lua_count<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Count {
        Int(u64),
        Float(f64),
        Text(String),
    }
    Ok(match Count::deserialize(d)? {
        Count::Int(n) => n,
        Count::Float(f) => f.max(0.0) as u64,
        Count::Text(s) => s
            .parse::<u64>()
            .ok()
            .or_else(|| s.parse::<f64>().ok().map(|f| f.max(0.0) as u64))
            .unwrap_or(0),
    })
}

/// A number Redis keeps as text, in a JSON list or map (see [`lua_count`]).
#[derive(Debug, Deserialize)]
pub struct Count(#[serde(deserialize_with = "lua_count")] pub u64);

/// The result `{}` of a script that answers only "done" or a refusal (release, login_attempt,
/// rescue_attempt).
#[derive(Debug, Deserialize)]
pub struct Accepted {}
