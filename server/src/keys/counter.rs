//! The per-minute counters' codes, spelled here for Rust and (through the scripts' prelude) Lua.

/// A per-minute counter of a project (`st:<day>` fields `"<minute of day>:<code>"`), counted
/// by the claim, done and backfeed scripts and read by `store::stats`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Counter {
    /// Claim requests.
    Requests,
    /// Claim requests that got items.
    Served,
    /// Items claimed.
    Claimed,
    /// Items reclaimed from another claim.
    Reclaimed,
    /// Claim requests served with at least one reclaimed item.
    ServedReclaimed,
    /// Items moved to `failed` (claimed too often).
    Failed,
    /// Items done (counted by the fold, from the completion log, in its entries' minute).
    DoneItems,
    /// Bytes done (by the fold).
    DoneBytes,
    /// Milliseconds from claim to done, summed over the items that had a claim (by the fold).
    RoundTripMs,
    /// Items whose round trip is in [`Counter::RoundTripMs`].
    RoundTrips,
    /// Records queued by backfeed.
    Backfed,
    /// Backfeed records that were duplicates.
    BackfeedDuplicates,
    /// Items reported done again (already done: not counted).
    DuplicateDones,
    /// Claimed items given back (by their claimant, or by an admin).
    Released,
    /// Claim requests refused: the client's version is missing or too old.
    RefusedOldVersion,
    /// ... the downloader's name is not allowed.
    RefusedBadName,
    /// ... the IP or downloader is blocked.
    RefusedBlocked,
    /// ... the project asks for a pipeline token and none came.
    RefusedTokenRequired,
    /// ... the pipeline's tags do not match the project's.
    RefusedNotForPipeline,
    /// ... the project does not serve (paused, finished, aborted).
    RefusedNotActive,
    /// ... the downloader holds its most claims.
    RefusedBudget,
    /// ... the project's rate limit.
    RefusedRateLimited,
    /// ... nothing to give.
    RefusedNothingToGive,
    /// Completions of a claim, by round trip (claim to done; counted by the fold, from the
    /// completion log's claim times): at most 10 s.
    RoundTrip10s,
    /// ... over the bucket before, at most 1 minute.
    RoundTrip1m,
    /// ... at most 5 minutes.
    RoundTrip5m,
    /// ... at most 15 minutes.
    RoundTrip15m,
    /// ... at most an hour.
    RoundTrip1h,
    /// ... at most 4 hours.
    RoundTrip4h,
    /// ... at most 12 hours.
    RoundTrip12h,
    /// ... at most a day.
    RoundTrip1d,
    /// ... at most 3 days.
    RoundTrip3d,
    /// ... over 3 days.
    RoundTripLonger,
}

impl Counter {
    /// Every counter.
    pub const ALL: [Counter; 33] = [
        Counter::Requests,
        Counter::Served,
        Counter::Claimed,
        Counter::Reclaimed,
        Counter::ServedReclaimed,
        Counter::Failed,
        Counter::DoneItems,
        Counter::DoneBytes,
        Counter::RoundTripMs,
        Counter::RoundTrips,
        Counter::Backfed,
        Counter::BackfeedDuplicates,
        Counter::DuplicateDones,
        Counter::Released,
        Counter::RefusedOldVersion,
        Counter::RefusedBadName,
        Counter::RefusedBlocked,
        Counter::RefusedTokenRequired,
        Counter::RefusedNotForPipeline,
        Counter::RefusedNotActive,
        Counter::RefusedBudget,
        Counter::RefusedRateLimited,
        Counter::RefusedNothingToGive,
        Counter::RoundTrip10s,
        Counter::RoundTrip1m,
        Counter::RoundTrip5m,
        Counter::RoundTrip15m,
        Counter::RoundTrip1h,
        Counter::RoundTrip4h,
        Counter::RoundTrip12h,
        Counter::RoundTrip1d,
        Counter::RoundTrip3d,
        Counter::RoundTripLonger,
    ];

    /// The refusal counters, with the reason each counts (the claim script's `err`, the
    /// label of `tracker_refusals_total`).
    pub const REFUSALS: [(Counter, &'static str); 9] = [
        (Counter::RefusedOldVersion, "old_version"),
        (Counter::RefusedBadName, "bad_name"),
        (Counter::RefusedBlocked, "blocked"),
        (Counter::RefusedTokenRequired, "token_required"),
        (Counter::RefusedNotForPipeline, "not_for_pipeline"),
        (Counter::RefusedNotActive, "not_active"),
        (Counter::RefusedBudget, "budget"),
        (Counter::RefusedRateLimited, "rate_limited"),
        (Counter::RefusedNothingToGive, "nothing_to_give"),
    ];

    /// The round-trip counters, each with its upper bound in seconds (the last one's is
    /// infinite): the buckets of `tracker_round_trip_seconds`, counted by the fold.
    pub const ROUND_TRIPS: [(Counter, f64); 10] = [
        (Counter::RoundTrip10s, 10.0),
        (Counter::RoundTrip1m, 60.0),
        (Counter::RoundTrip5m, 300.0),
        (Counter::RoundTrip15m, 900.0),
        (Counter::RoundTrip1h, 3600.0),
        (Counter::RoundTrip4h, 14_400.0),
        (Counter::RoundTrip12h, 43_200.0),
        (Counter::RoundTrip1d, 86_400.0),
        (Counter::RoundTrip3d, 259_200.0),
        (Counter::RoundTripLonger, f64::INFINITY),
    ];

    /// The code stored in the field name (short: there is a field per counter and minute).
    pub const fn code(self) -> &'static str {
        match self {
            Counter::Requests => "rq",
            Counter::Served => "ok",
            Counter::Claimed => "cl",
            Counter::Reclaimed => "rc",
            Counter::ServedReclaimed => "rs",
            Counter::Failed => "f",
            Counter::DoneItems => "i",
            Counter::DoneBytes => "b",
            Counter::RoundTripMs => "rt",
            Counter::RoundTrips => "rn",
            Counter::Backfed => "bf",
            Counter::BackfeedDuplicates => "bd",
            Counter::DuplicateDones => "dd",
            Counter::Released => "rl",
            Counter::RefusedOldVersion => "xv",
            Counter::RefusedBadName => "xn",
            Counter::RefusedBlocked => "xb",
            Counter::RefusedTokenRequired => "xt",
            Counter::RefusedNotForPipeline => "xp",
            Counter::RefusedNotActive => "xa",
            Counter::RefusedBudget => "xg",
            Counter::RefusedRateLimited => "xr",
            Counter::RefusedNothingToGive => "x0",
            Counter::RoundTrip10s => "h0",
            Counter::RoundTrip1m => "h1",
            Counter::RoundTrip5m => "h2",
            Counter::RoundTrip15m => "h3",
            Counter::RoundTrip1h => "h4",
            Counter::RoundTrip4h => "h5",
            Counter::RoundTrip12h => "h6",
            Counter::RoundTrip1d => "h7",
            Counter::RoundTrip3d => "h8",
            Counter::RoundTripLonger => "h9",
        }
    }

    /// The name the scripts use for it, `ST.<name>` (see `store::scripts::prelude`).
    pub const fn lua_name(self) -> &'static str {
        match self {
            Counter::Requests => "requests",
            Counter::Served => "served",
            Counter::Claimed => "claimed",
            Counter::Reclaimed => "reclaimed",
            Counter::ServedReclaimed => "served_reclaimed",
            Counter::Failed => "failed",
            Counter::DoneItems => "done_items",
            Counter::DoneBytes => "done_bytes",
            Counter::RoundTripMs => "round_trip_ms",
            Counter::RoundTrips => "round_trips",
            Counter::Backfed => "backfed",
            Counter::BackfeedDuplicates => "backfeed_dups",
            Counter::DuplicateDones => "duplicate_dones",
            Counter::Released => "released",
            Counter::RefusedOldVersion => "refused_old_version",
            Counter::RefusedBadName => "refused_bad_name",
            Counter::RefusedBlocked => "refused_blocked",
            Counter::RefusedTokenRequired => "refused_token_required",
            Counter::RefusedNotForPipeline => "refused_not_for_pipeline",
            Counter::RefusedNotActive => "refused_not_active",
            Counter::RefusedBudget => "refused_budget",
            Counter::RefusedRateLimited => "refused_rate_limited",
            Counter::RefusedNothingToGive => "refused_nothing_to_give",
            Counter::RoundTrip10s => "rt_10s",
            Counter::RoundTrip1m => "rt_1m",
            Counter::RoundTrip5m => "rt_5m",
            Counter::RoundTrip15m => "rt_15m",
            Counter::RoundTrip1h => "rt_1h",
            Counter::RoundTrip4h => "rt_4h",
            Counter::RoundTrip12h => "rt_12h",
            Counter::RoundTrip1d => "rt_1d",
            Counter::RoundTrip3d => "rt_3d",
            Counter::RoundTripLonger => "rt_longer",
        }
    }
}
