//! A run of the completion log, read and summed in the tracker: the arguments of `fold.lua`.

use super::super::helpers::json_text;
use super::super::scripts::{lua_list, Count};
use serde::Deserialize;
use std::{
    collections::{BTreeSet, HashMap},
    fmt::Write,
};

/// One downloader's sums over a run.
#[derive(Default)]
pub(super) struct Sums {
    pub(super) items: u64,
    pub(super) bytes: u64,
    pub(super) version: String,
    pub(super) seen: u64,
}

/// A run of log entries read and summed: the arguments of `fold.lua`.
pub(super) struct Sum {
    pub(super) to: String,
    pub(super) entries: usize,
    pub(super) items: u64,
    pub(super) minute: u64,
    pub(super) month: String,
    pub(super) whos: Vec<(String, Sums)>,
    pub(super) ips: Vec<String>,
    /// Per entry: its event text (unclosed, without figures), its downloader's index, and
    /// that downloader's items and bytes in the run up to it.
    pub(super) events: Vec<(String, usize, u64, u64)>,
    /// The run's items and bytes (every domain) that count in the per-minute counters.
    pub(super) done_items: u64,
    pub(super) bytes: u64,
    /// Completed claims by round trip: counts in the buckets of
    /// [`crate::keys::Counter::ROUND_TRIPS`], added to the run's minute's counters.
    pub(super) round_trips: [u64; 10],
    /// The completed claims' round trips summed (ms), and their number.
    pub(super) round_trip_ms: u64,
    pub(super) round_trip_n: u64,
}

/// What a run's events are made from, as `fold_base.lua` read it: the event sequence number,
/// the project's counts, and the run's downloaders' totals before it (in the run's order).
#[derive(Deserialize)]
pub(super) struct Base {
    pub(super) seq: Count,
    todo: u64,
    out: u64,
    done: Count,
    failed: u64,
    #[serde(deserialize_with = "lua_list")]
    items: Vec<Count>,
    #[serde(deserialize_with = "lua_list")]
    bytes: Vec<Count>,
}

impl Base {
    /// The items of the run's `d`-th downloader before the run.
    pub(super) fn item(&self, d: usize) -> u64 {
        self.items.get(d).map_or(0, |c| c.0)
    }

    /// The bytes of the run's `d`-th downloader before the run.
    pub(super) fn byte(&self, d: usize) -> u64 {
        self.bytes.get(d).map_or(0, |c| c.0)
    }
}

/// One log entry's fields, as the log holds them.
#[derive(Default)]
pub(super) struct Entry {
    t: u64,
    who: String,
    ip: String,
    ua: String,
    version: String,
    items: String,
    count: u64,
    bytes: String,
    total: u64,
    /// The claim times of its items (ms; 0 unknown).
    claimed: Vec<u64>,
}

impl Entry {
    fn read(fields: Vec<(String, String)>) -> Self {
        let mut e = Entry::default();
        for (k, v) in fields {
            match k.as_str() {
                "t" => e.t = v.parse().unwrap_or(0),
                "d" => e.who = v,
                "ip" => e.ip = v,
                "ua" => e.ua = v,
                "v" => e.version = v,
                "items" => {
                    e.count = serde_json::from_str::<Vec<serde::de::IgnoredAny>>(&v)
                        .map_or(0, |l| l.len() as u64);
                    e.items = v;
                }
                "claimed" => e.claimed = serde_json::from_str(&v).unwrap_or_default(),
                "bytes" => {
                    e.total = serde_json::from_str::<HashMap<String, u64>>(&v)
                        .map_or(0, |m| m.values().sum());
                    e.bytes = v;
                }
                _ => {}
            }
        }
        e
    }

    /// The entry's event, without its closing brace and the figures `fold.lua` adds.
    fn event(&self) -> String {
        let or_empty = |s: &str, empty: &'static str| {
            if s.is_empty() {
                empty.to_string()
            } else {
                s.to_string()
            }
        };
        format!(
            r#"{{"time":{},"downloader":{},"items":{},"bytes":{},"domain_bytes":{},"version":{},"user_agent":{}"#,
            self.t,
            json_text(&self.who),
            or_empty(&self.items, "[]"),
            self.total,
            or_empty(&self.bytes, "{}"),
            json_text(&self.version),
            json_text(&self.ua),
        )
    }
}

/// A stream id's two numbers, in the order the stream keeps them.
pub(super) fn stream_id(id: &str) -> Option<(u64, u64)> {
    let (ms, seq) = id.split_once('-').unwrap_or((id, "0"));
    Some((ms.parse().ok()?, seq.parse().ok()?))
}

/// The stream id right after `id` (`ms-seq`).
pub(super) fn next_id(id: &str) -> String {
    let (ms, seq) = id.split_once('-').unwrap_or((id, "0"));
    match seq.parse::<u64>() {
        Ok(s) if s < u64::MAX => format!("{ms}-{}", s + 1),
        _ => format!("{}-0", ms.parse::<u64>().unwrap_or(0).saturating_add(1)),
    }
}

impl Sum {
    /// The run's events, whole: each entry's, numbered on from `base`'s sequence number, with
    /// its downloader's totals after it and the project's counts.
    pub(super) fn events(&self, base: &Base) -> Vec<String> {
        let counts = format!(
            r#","counts":{{"todo":{},"out":{},"done":{},"failed":{}}}}}"#,
            base.todo, base.out, base.done.0, base.failed
        );
        let mut seq = base.seq.0;
        self.events
            .iter()
            .map(|(text, who, items, bytes)| {
                seq += 1;
                let mut e = String::with_capacity(text.len() + counts.len() + 64);
                e.push_str(text);
                let _ = write!(
                    e,
                    r#","seq":{seq},"dl_items":{},"dl_bytes":{}"#,
                    base.item(*who) + items,
                    base.byte(*who) + bytes
                );
                e.push_str(&counts);
                e
            })
            .collect()
    }

    /// The run's per-minute counters, by code: its done items, bytes and round trips.
    pub(super) fn counters(&self) -> impl Iterator<Item = (&'static str, u64)> + '_ {
        use crate::keys::Counter;
        [
            (Counter::DoneItems, self.done_items),
            (Counter::DoneBytes, self.bytes),
            (Counter::RoundTripMs, self.round_trip_ms),
            (Counter::RoundTrips, self.round_trip_n),
        ]
        .into_iter()
        .chain(
            Counter::ROUND_TRIPS
                .iter()
                .zip(self.round_trips)
                .map(|((c, _), n)| (*c, n)),
        )
        .map(|(c, n)| (c.code(), n))
    }
}

/// A run's event texts in all, at most (bytes; a run's first entry is taken whatever its size):
/// the events travel twice in `fold.lua`'s arguments (each, and joined for the message).
pub(super) const RUN_EVENT_BYTES: usize = 4 << 20;

/// The run that starts `page` (log entries after the last folded, oldest first): the entries
/// of the first one's minute, up to [`RUN_EVENT_BYTES`] of events. Its per-minute done
/// counters are of the entries from `counts_from` on (the done scripts before it counted their
/// own; none without it).
pub(super) fn read_run(
    page: Vec<(String, Vec<(String, String)>)>,
    counts_from: Option<(u64, u64)>,
) -> Option<Sum> {
    let mut run: Option<Sum> = None;
    let mut index: HashMap<String, usize> = HashMap::new();
    let mut ips: BTreeSet<String> = BTreeSet::new();
    let mut event_bytes = 0;
    for (id, fields) in page {
        let e = Entry::read(fields);
        let minute = e.t / 60_000;
        let r = run.get_or_insert_with(|| Sum {
            to: String::new(),
            entries: 0,
            items: 0,
            minute,
            month: app::model::month_name(e.t),
            whos: vec![],
            ips: vec![],
            events: vec![],
            done_items: 0,
            bytes: 0,
            round_trips: [0; 10],
            round_trip_ms: 0,
            round_trip_n: 0,
        });
        let event = e.event();
        event_bytes += event.len();
        if minute != r.minute || (r.entries > 0 && event_bytes > RUN_EVENT_BYTES) {
            break;
        }
        let counts = counts_from.is_some_and(|from| stream_id(&id).is_some_and(|id| id >= from));
        r.to = id;
        r.entries += 1;
        r.items += e.count;
        if counts {
            r.done_items += e.count;
            r.bytes += e.total;
        }
        let at = *index.entry(e.who.clone()).or_insert_with(|| {
            r.whos.push((e.who.clone(), Sums::default()));
            r.whos.len() - 1
        });
        let s = &mut r.whos[at].1;
        s.items += e.count;
        s.bytes += e.total;
        s.version.clone_from(&e.version);
        s.seen = s.seen.max(e.t);
        let (items, bytes) = (s.items, s.bytes);
        if !e.ip.is_empty() {
            ips.insert(e.ip.clone());
        }
        r.events.push((event, at, items, bytes));
        for t0 in e.claimed.iter().filter(|t0| counts && **t0 > 0) {
            let ms = e.t.saturating_sub(*t0);
            r.round_trips[round_trip_bucket(ms)] += 1;
            r.round_trip_ms += ms;
            r.round_trip_n += 1;
        }
    }
    run.map(|mut r| {
        r.ips = ips.into_iter().collect();
        r
    })
}

/// The bucket of [`crate::keys::Counter::ROUND_TRIPS`] a round trip of `ms` falls in.
pub(super) fn round_trip_bucket(ms: u64) -> usize {
    let secs = ms as f64 / 1000.0;
    crate::keys::Counter::ROUND_TRIPS
        .iter()
        .position(|(_, le)| secs <= *le)
        .unwrap_or(crate::keys::Counter::ROUND_TRIPS.len() - 1)
}
