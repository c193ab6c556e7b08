//! The per-minute counters' codes, spelled here for Rust and (through the scripts' prelude) Lua.

/// A per-minute counter of a project (`st:<day>` fields `"<minute of day>:<code>"`), counted
/// by the claim, done and backfeed scripts and read by `store::stats`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
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
    /// Items done.
    DoneItems,
    /// Bytes done.
    DoneBytes,
    /// Milliseconds from claim to done, summed over the items that had a claim.
    RoundTripMs,
    /// Items whose round trip is in [`Counter::RoundTripMs`].
    RoundTrips,
    /// Records queued by backfeed.
    Backfed,
    /// Backfeed records that were duplicates.
    BackfeedDuplicates,
}

impl Counter {
    /// Every counter.
    pub const ALL: [Counter; 12] = [
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
        }
    }
}
